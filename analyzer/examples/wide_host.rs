//! A wide training node (96 CPUs, 8 GPUs, 8 NVMe, 4 IB ports, 2 NUMA nodes at 100 ms,
//! `tests/support/wide_host.rs`) with seven per-device faults, through `analyze`'s path and the
//! service's, with device families folded and without, side by side:
//!
//!     cargo run --release -p reveal-analyzer --example wide_host [-- --quiet-minutes 30]
//!
//! The recording: 30 minutes the service learns as its baseline, `--quiet-minutes` of the
//! same host with no fault (false episodes are counted there), then seven 20 s faults 150 s
//! apart. Prints, per path and setting: feature columns, fit and pass time, baseline memory
//! (the feature rows the service keeps; and, counted by the allocator, what the host holds
//! and the most its fit allocates), and per fault whether two detectors found it, the
//! subsystem was right, the device named, and (service) the alert's delay. A measurement;
//! `tests/wide_host.rs` asserts the families half of it on the same recording.

use std::time::Instant;

use prometheus_client::registry::Registry;
use reveal_analyzer::config::AnalysisConfig;
use reveal_analyzer::core::episodes::tracker::Event;
use reveal_analyzer::core::families::FamilyParams;
use reveal_analyzer::core::pipeline::AnalyzeParams;
use reveal_analyzer::online::analyze::analyze_host;
use reveal_analyzer::online::{Engine, EngineParams, Outcome};
use reveal_analyzer::outputs::metrics::SelfMetrics;

#[path = "../tests/support/wide_host.rs"]
mod wide_host;

#[path = "support/alloc_count.rs"]
mod alloc_count;
#[global_allocator]
static ALLOC: alloc_count::Counting = alloc_count::Counting;
use wide_host::{faults, host, judge, Flag};

const T0: i64 = 1_760_000_000_000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |k: &str, d: i64| {
        args.iter()
            .position(|a| a == k)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let learn_s = arg("--learn-minutes", 30) * 60;
    let quiet_s = arg("--quiet-minutes", 30) * 60;
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let fs = faults(T0, learn_s + quiet_s, 150, 20);
    let secs = learn_s + quiet_s + 7 * 150 + 30;
    let t = Instant::now();
    let m = host("big", T0, secs, &fs, 7);
    eprintln!(
        "recording: {} channels, {} steps ({secs} s), built in {:.1} s",
        m.n_channels(),
        m.n_steps(),
        t.elapsed().as_secs_f64()
    );
    for (label, families) in [
        ("families", FamilyParams::default()),
        ("per device", FamilyParams::off()),
    ] {
        if only.as_deref().is_some_and(|o| o != label) {
            continue;
        }
        // analyze
        if !args.iter().any(|a| a == "--live-only") {
            let t = Instant::now();
            let p = AnalyzeParams {
                families: families.clone(),
                ..AnalyzeParams::default()
            };
            let a = analyze_host(&m, &p);
            let took = t.elapsed().as_secs_f64();
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
            let quiet_end = T0 + (learn_s + quiet_s) * 1000;
            let false_eps = a
                .episodes
                .iter()
                .filter(|e| e.peak_agreement >= 2 && e.end_ms < quiet_end - 5000 && e.windows >= 4)
                .count();
            println!(
                "\n## analyze, {label}: {} model channels, {} feature columns, {took:.1} s in all; \
                 {false_eps} episodes (≥ 2 detectors, ≥ 4 windows) before the faults",
                a.summary.model_channels, a.summary.feature_columns
            );
            print_outcomes(&judge(&fs, &flags, &[]));
        }
        // the service
        let params = EngineParams {
            families,
            ..EngineParams::from_config(&AnalysisConfig::default())
        };
        let metrics = SelfMetrics::new(&mut Registry::default());
        let mut engine = Engine::new(params);
        let stride = 1000;
        let from = T0 + learn_s * 1000;
        let t = Instant::now();
        let live0 = alloc_count::live_mb();
        engine.learn(&m, T0, from, &[], &metrics);
        let learned = t.elapsed().as_secs_f64();
        let live_learned = alloc_count::live_mb();
        let t = Instant::now();
        alloc_count::mark();
        engine.refit_all(&metrics);
        let fit = t.elapsed().as_secs_f64();
        let (live_fitted, fit_peak) = (alloc_count::live_mb(), alloc_count::peak_mb());
        let status = engine.status();
        let until = T0 + (secs - 1) * 1000;
        let (mut flags, mut opened, mut pass_ms) = (Vec::new(), Vec::new(), Vec::new());
        let quiet_end = T0 + (learn_s + quiet_s) * 1000;
        let mut false_alerts = Vec::new();
        let mut after = from;
        while after < until {
            let t = Instant::now();
            let out = engine.process(&m, after, after + stride, &metrics);
            pass_ms.push(t.elapsed().as_secs_f64() * 1000.0);
            for o in out {
                if let Outcome::Scored(w) = o {
                    if let Some(Event::Opened(ep)) = w.event.as_deref() {
                        opened.push((w.end_ms, ep.subsystem.clone()));
                        if w.end_ms < quiet_end {
                            false_alerts.push(format!("{} {}", (w.end_ms - T0) / 1000, ep.summary));
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
            }
            after += stride;
        }
        pass_ms.sort_by(f64::total_cmp);
        let p50 = pass_ms.get(pass_ms.len() / 2).copied().unwrap_or(0.0);
        println!(
            "\n## service, {label}: {} feature columns, {} baseline windows ({:.0} MB of rows), \
             learn {learned:.1} s, fit {fit:.1} s, engine pass p50 {p50:.2} ms (features and \
             scoring; queries not included); {} alerts before the faults",
            status.feature_columns,
            status.baseline_windows,
            (status.feature_columns * status.baseline_windows * 8) as f64 / 1e6,
            false_alerts.len()
        );
        println!(
            "memory (allocated, not resident): the host's baseline {:.1} MB, with its models \
             {:.1} MB, the fit's peak {:.1} MB (all above what the recording holds)",
            live_learned - live0,
            live_fitted - live0,
            fit_peak - live0
        );
        for f in &false_alerts {
            println!("  false alert at +{f}");
        }
        print_outcomes(&judge(&fs, &flags, &opened));
    }
}

fn print_outcomes(o: &[wide_host::Outcome]) {
    println!("| fault | found (≥ 2 detectors) | subsystem | device named | alert after | claim |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let yn = |b: bool| if b { "yes" } else { "**no**" };
    for x in o {
        let claim: String = x.claim.chars().take(220).collect();
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            x.name,
            yn(x.found),
            yn(x.subsystem_right),
            yn(x.device_named),
            x.alert_s.map_or("-".to_string(), |s| format!("{s:.0} s")),
            claim
        );
    }
}
