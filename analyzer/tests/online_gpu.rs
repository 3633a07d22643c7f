//! The online analyzer on a real GPU host: 7.8 minutes of an NVIDIA H200 machine (16 CPUs)
//! running a steady GPU job, with its power capped at the lowest limit for 20 s and then its
//! SM clock locked at half its maximum for 20 s (`tests/fixtures/gpu/README.md`,
//! `scripts/gpu_case.sh`). The engine, with the deploy defaults, learns the first five minutes
//! of the job and scores the rest as `reveal-analyzer run` would. What must hold:
//! - the power cap opens an episode within 10 s of its start, on the gpu subsystem, with the
//!   remediation hint that names power caps, closed within 30 s of the cap's end;
//! - the clock lock is flagged by at least one detector in most windows wholly inside it
//!   (the deploy defaults do not alert on it: docs/evaluation/history.md, the GPU case);
//! - no other episode opens: in particular none on the job's busy thread, which the scheduler
//!   moved from one CPU to another 6 s after the cap ended (the metric set reads per-CPU time
//!   as the busiest and the quietest CPU, so a move is no change).
//!
//! `cargo nextest run -p reveal-analyzer --test online_gpu --no-capture` prints the episodes.

use prometheus_client::registry::Registry;
use reveal_analyzer::config::AnalysisConfig;
use reveal_analyzer::core::episodes::tracker::Event;
use reveal_analyzer::core::episodes::OpenEpisode;
use reveal_analyzer::online::{Engine, EngineParams, Outcome, WindowScore};
use reveal_analyzer::outputs::metrics::SelfMetrics;

mod support;
use support::trace::{fixture_dir, load};

const SECOND: i64 = 1000;

#[test]
fn a_gpu_power_cap_is_alerted_on_the_gpu_and_a_moved_thread_is_not() {
    let dir = fixture_dir("gpu");
    let (m, faults) = load(&dir);
    assert_eq!(faults.len(), 2, "faults.json");
    let (cap, lock) = (&faults[0], &faults[1]);
    assert_eq!(
        (cap.name.as_str(), lock.name.as_str()),
        ("gpu_power_cap", "gpu_clock_lock")
    );
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("faults.json")).unwrap()).unwrap();
    let params = EngineParams::from_config(&AnalysisConfig::default());
    let stride = params.window.stride_ms;
    let at = |key: &str| run[key].as_i64().unwrap().div_euclid(stride) * stride;
    let (learn_from, from) = (at("learn_from_ms"), at("score_from_ms"));
    let until = m.time_ms(m.n_steps() - 1).div_euclid(stride) * stride;
    let metrics = SelfMetrics::new(&mut Registry::default());
    let mut engine = Engine::new(params.clone());
    engine.learn(&m, learn_from, from, &[], &metrics);
    engine.refit_all(&metrics);

    // (opened at, closed at, the episode as last extended)
    let mut episodes: Vec<(i64, Option<i64>, OpenEpisode)> = Vec::new();
    let mut scored: Vec<WindowScore> = Vec::new();
    let chunk = 30 * stride;
    let mut after = from;
    while after < until {
        for o in engine.process(&m, after, (after + chunk).min(until), &metrics) {
            let Outcome::Scored(w) = o else { continue };
            match w.event.as_deref() {
                Some(Event::Opened(ep)) => episodes.push((w.end_ms, None, ep.clone())),
                Some(Event::Extended(ep)) => {
                    if let Some(last) = episodes.last_mut() {
                        last.2 = ep.clone();
                    }
                }
                Some(Event::Closed(_)) => {
                    if let Some(last) = episodes.last_mut() {
                        last.1 = Some(w.end_ms);
                    }
                }
                None => {}
            }
            scored.push(w);
        }
        after += chunk;
    }
    let rel = |t: i64| (t - cap.start_ms) as f64 / 1000.0;
    for (opened, closed, ep) in &episodes {
        eprintln!(
            "episode opened {:+.1} s from the cap's start, closed {}, [{}]: {} | hints {:?}",
            rel(*opened),
            closed.map_or("never".into(), |c| format!("{:+.1} s", rel(c))),
            ep.subsystems.join(","),
            ep.summary,
            ep.hints
        );
    }

    let mut failures = Vec::new();
    match episodes.first() {
        Some((opened, closed, ep)) if *opened <= cap.start_ms + 10 * SECOND => {
            if ep.subsystems.first().map(String::as_str) != Some("gpu") {
                failures.push(format!(
                    "power cap: episode on {:?}, want gpu",
                    ep.subsystems
                ));
            }
            let hint = ep.hints.get("gpu").cloned().unwrap_or_default();
            if !hint.contains("power caps") {
                failures.push(format!("power cap: gpu hint {hint:?} names no power cap"));
            }
            if closed.is_none_or(|c| c - cap.end_ms > 30 * SECOND) {
                failures.push(format!(
                    "power cap: closed {:?} s after its end, want ≤ 30",
                    closed.map(|c| (c - cap.end_ms) as f64 / 1000.0)
                ));
            }
        }
        other => failures.push(format!(
            "power cap: no episode open within 10 s of its start (first: {:?})",
            other.map(|(o, _, ep)| (rel(*o), ep.subsystems.clone()))
        )),
    }
    // Nothing else opens: not on the moved thread, not away from the faults.
    for (opened, _, ep) in episodes.iter().skip(1) {
        let during_lock = *opened >= lock.start_ms && *opened <= lock.end_ms + 10 * SECOND;
        if !(during_lock && ep.subsystems.first().map(String::as_str) == Some("gpu")) {
            failures.push(format!(
                "an episode opened {:+.1} s from the cap's start on {:?}: {}",
                rel(*opened),
                ep.subsystems,
                ep.summary
            ));
        }
    }
    // The clock lock is seen: one detector flags most windows wholly inside it.
    let window = params.window.window_ms + SECOND;
    let inside: Vec<&WindowScore> = scored
        .iter()
        .filter(|w| w.end_ms >= lock.start_ms + window && w.end_ms <= lock.end_ms)
        .collect();
    let seen = inside.iter().filter(|w| w.agreement >= 1).count();
    eprintln!(
        "clock lock: {seen} of {} windows inside flagged by a detector",
        inside.len()
    );
    if inside.is_empty() || seen * 4 < inside.len() * 3 {
        failures.push(format!(
            "clock lock: {seen} of {} windows inside flagged by a detector, want 3 in 4",
            inside.len()
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
