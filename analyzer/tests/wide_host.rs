//! A wide training node (96 CPUs, 8 GPUs, 8 NVMe, 4 IB ports, 2 NUMA nodes at 100 ms; the
//! generator is `tests/support/wide_host.rs`) with seven per-device faults of 20 s: one GPU
//! throttled, interrupts on 4 of 96 CPUs, one slow disk among seven identical siblings, one
//! IB port's link errors with its traffic down, one NUMA node's remote accesses ×10, every CPU
//! saturated, one GPU off the bus for 20 s. Through `analyze`'s path and through the service's (a 30-minute baseline, then
//! one stride at a time), each fault must be found by two detectors, attributed to its
//! subsystem, and its device named; in the half hour before the faults, at most one episode.
//!
//! The same case with per-device channels and with families, and its cost, side by side:
//! `cargo run --release -p reveal-analyzer --example wide_host` (docs/EVALUATION.md).

use prometheus_client::registry::Registry;
use reveal_analyzer::config::AnalysisConfig;
use reveal_analyzer::core::episodes::tracker::Event;
use reveal_analyzer::core::pipeline::AnalyzeParams;
use reveal_analyzer::online::analyze::analyze_host;
use reveal_analyzer::online::{Engine, EngineParams, Outcome};
use reveal_analyzer::outputs::metrics::SelfMetrics;

mod support;
use support::wide_host::{faults, host, judge, Fault, Flag};

const T0: i64 = 1_760_000_000_000;
const LEARN_S: i64 = 30 * 60;
const QUIET_S: i64 = 30 * 60;

fn case() -> (reveal_analyzer::core::matrix::HostMatrix, Vec<Fault>) {
    let fs = faults(T0, LEARN_S + QUIET_S, 150, 20);
    let m = host("big", T0, LEARN_S + QUIET_S + 7 * 150 + 30, &fs, 7);
    (m, fs)
}

fn check(outcomes: &[support::wide_host::Outcome]) {
    for o in outcomes {
        eprintln!("{o:?}");
    }
    for o in outcomes {
        assert!(o.found, "{} not found by two detectors: {o:?}", o.name);
        assert!(o.subsystem_right, "{} attributed elsewhere: {o:?}", o.name);
        assert!(o.device_named, "{}: device not named: {o:?}", o.name);
    }
}

#[test]
fn analyze_finds_each_device_fault_and_names_the_device() {
    let (m, fs) = case();
    let a = analyze_host(&m, &AnalyzeParams::default());
    // Families fold the 562 channels into a model that does not grow with the device count.
    assert!(a.summary.families >= 10, "{:?}", a.summary);
    assert!(a.summary.model_channels < 120, "{:?}", a.summary);
    let flags: Vec<Flag> = a
        .flagged
        .iter()
        .map(|w| Flag {
            end_ms: w.end_ms,
            agreement: w.agreement,
            subsystems: w
                .subsystems
                .iter()
                .map(|(s, v)| (s.to_string(), *v))
                .collect(),
            claims: w
                .evidence
                .iter()
                .map(|e| e.claim.clone())
                .collect::<Vec<_>>()
                .join(" | "),
        })
        .collect();
    check(&judge(&fs, &flags, &[]));
    let quiet_end = T0 + (LEARN_S + QUIET_S) * 1000;
    let quiet: Vec<_> = a
        .episodes
        .iter()
        .filter(|e| e.peak_agreement >= 2 && e.windows >= 4 && e.end_ms < quiet_end - 5000)
        .collect();
    assert!(quiet.len() <= 1, "episodes with no fault: {quiet:#?}");
}

#[test]
fn the_service_alerts_on_each_device_fault_and_names_the_device() {
    let (m, fs) = case();
    let metrics = SelfMetrics::new(&mut Registry::default());
    let mut engine = Engine::new(EngineParams::from_config(&AnalysisConfig::default()));
    let from = T0 + LEARN_S * 1000;
    engine.learn(&m, T0, from, &[], &metrics);
    engine.refit_all(&metrics);
    let until = m.time_ms(m.n_steps() - 1).div_euclid(1000) * 1000;
    let quiet_end = T0 + (LEARN_S + QUIET_S) * 1000;
    let (mut flags, mut opened, mut false_alerts) = (Vec::new(), Vec::new(), Vec::new());
    // (pass end, device) of every device missing after each pass.
    let mut missing = Vec::new();
    let mut after = from;
    while after < until {
        let outcomes = engine.process(&m, after, after + 1000, &metrics);
        for (host, d) in engine.missing_devices() {
            assert_eq!(host, "big");
            missing.push((after + 1000, d.device.clone(), d.summary()));
        }
        for o in outcomes {
            let Outcome::Scored(w) = o else { continue };
            if let Some(Event::Opened(ep)) = w.event.as_deref() {
                opened.push((w.end_ms, ep.subsystem.clone()));
                if w.end_ms < quiet_end {
                    false_alerts.push(ep.summary.clone());
                }
            }
            if w.agreement >= 1 {
                flags.push(Flag {
                    end_ms: w.end_ms,
                    agreement: w.agreement,
                    subsystems: w.subsystems.clone(),
                    claims: w.description.clone(),
                });
            }
        }
        after += 1000;
    }
    let outcomes = judge(&fs, &flags, &opened);
    check(&outcomes);
    for o in &outcomes {
        let s = o.alert_s.unwrap_or(f64::INFINITY);
        assert!(
            s <= 10.0,
            "{}: no alert within 10 s ({:?})",
            o.name,
            o.alert_s
        );
    }
    assert!(
        false_alerts.len() <= 1,
        "alerts with no fault: {false_alerts:#?}"
    );
    // The GPU off the bus is missing by itself, within a window's length and a pass of its
    // start, until it is back; no other device is ever missing.
    let off = fs.iter().find(|f| f.name == "gpu7_off_the_bus").unwrap();
    for (at, device, summary) in &missing {
        assert_eq!(device, "gpu 7", "{summary} at {at}");
        assert!(
            *at > off.start_ms && *at <= off.end_ms + 1000,
            "{summary} at {at}"
        );
        assert!(summary.ends_with("7 of 8 devices report"), "{summary}");
    }
    let first = missing
        .first()
        .map(|(at, ..)| (at - off.start_ms) as f64 / 1000.0);
    eprintln!(
        "gpu 7 missing from {first:?} s after it left, {} passes",
        missing.len()
    );
    assert!(
        first.is_some_and(|s| s <= 5.0),
        "gpu 7 not missing within 5 s: {first:?}"
    );
    assert!(
        missing.len() as i64 >= (off.end_ms - off.start_ms) / 1000 - 5,
        "gpu 7 missing in too few passes: {}",
        missing.len()
    );
}
