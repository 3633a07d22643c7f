//! The online analyzer on a busy host: 37 minutes of this project's test machine under a
//! background that is never idle (a TCP stream, a routine job keeping one CPU busy 8 s a
//! minute, routine buffered writes), with four real faults after 30 fault-free minutes
//! (`tests/fixtures/busy/README.md`). The engine, with the deploy defaults, learns the
//! fault-free stretch and scores the rest as `reveal-analyzer run` would; episodes are formed
//! as the service forms them. What must hold, for each fault:
//! - an episode is open within 10 s of its start, and names the subsystem the fault loads;
//! - it is closed within 30 s of the fault's end (a memory hog's free memory comes back over
//!   a minute: that aftermath is not the fault);
//! - every CPU saturated, twice the routine job's level, is flagged by two detectors in most
//!   of the windows that lie wholly inside it;
//!
//! and no episode opens in the fault-free stretches between the faults.
//!
//! `cargo nextest run -p reveal-analyzer --test online_busy --no-capture` prints the episodes.

use prometheus_client::registry::Registry;
use reveal_analyzer::config::AnalysisConfig;
use reveal_analyzer::core::episodes::tracker::Event;
use reveal_analyzer::online::{Engine, EngineParams, Outcome, WindowScore};
use reveal_analyzer::outputs::metrics::SelfMetrics;

mod support;
use support::trace::{fixture_dir, load};

const SECOND: i64 = 1000;

/// An episode as the service alerts on it.
#[derive(Debug)]
struct Ep {
    opened_ms: i64,
    closed_ms: Option<i64>,
    subsystems: Vec<String>,
}

#[test]
fn faults_on_a_busy_host_open_one_episode_each_that_ends_with_the_fault() {
    let (m, faults) = load(&fixture_dir("busy"));
    assert_eq!(faults.len(), 4, "faults.json");
    let config = AnalysisConfig::default();
    let params = EngineParams::from_config(&config);
    let stride = params.window.stride_ms;
    let metrics = SelfMetrics::new(&mut Registry::default());
    let mut engine = Engine::new(params.clone());
    let learn_from = (m.start_ms + 10 * SECOND).div_euclid(stride) * stride;
    let from = (faults[0].start_ms - 10 * SECOND).div_euclid(stride) * stride;
    let until = m.time_ms(m.n_steps() - 1).div_euclid(stride) * stride;
    engine.learn(&m, learn_from, from, &[], &metrics);
    engine.refit_all(&metrics);

    let mut episodes: Vec<Ep> = Vec::new();
    let mut scored: Vec<WindowScore> = Vec::new();
    // Chunks of 30 strides: the engine scores each window of a chunk as it would one by one.
    let chunk = 30 * stride;
    let mut after = from;
    while after < until {
        for o in engine.process(&m, after, (after + chunk).min(until), &metrics) {
            let Outcome::Scored(w) = o else { continue };
            match w.event.as_deref() {
                Some(Event::Opened(ep)) => episodes.push(Ep {
                    opened_ms: w.end_ms,
                    closed_ms: None,
                    subsystems: ep.subsystems.clone(),
                }),
                Some(Event::Extended(ep)) => {
                    if let Some(last) = episodes.last_mut() {
                        last.subsystems = ep.subsystems.clone();
                    }
                }
                Some(Event::Closed(_)) => {
                    if let Some(last) = episodes.last_mut() {
                        last.closed_ms = Some(w.end_ms);
                    }
                }
                None => {}
            }
            scored.push(w);
        }
        after += chunk;
    }
    for ep in &episodes {
        eprintln!(
            "episode opened {:+.0} s, closed {}, [{}]",
            (ep.opened_ms - faults[0].start_ms) as f64 / 1000.0,
            ep.closed_ms.map_or("never".into(), |c| format!(
                "{:+.0} s",
                (c - faults[0].start_ms) as f64 / 1000.0
            )),
            ep.subsystems.join(",")
        );
    }

    let mut failures = Vec::new();
    for f in &faults {
        let want: &[&str] = match f.name.as_str() {
            "cpu_saturation" => &["cpu"],
            "memory_hog" => &["memory"],
            "dirty_page_flood" => &["memory", "storage"],
            "storage_read_burst" => &["storage"],
            other => panic!("faults.json: unknown fault {other}"),
        };
        // Open within 10 s of the start (opened then, or already open then).
        let mine: Vec<&Ep> = episodes
            .iter()
            .filter(|ep| {
                ep.opened_ms <= f.start_ms + 10 * SECOND
                    && ep.closed_ms.is_none_or(|c| c > f.start_ms)
            })
            .collect();
        let Some(ep) = mine.first() else {
            failures.push(format!("{}: no episode open within 10 s", f.name));
            continue;
        };
        if !ep.subsystems.iter().any(|s| want.contains(&s.as_str())) {
            failures.push(format!(
                "{}: episode on {:?}, want one of {want:?}",
                f.name, ep.subsystems
            ));
        }
        match ep.closed_ms {
            Some(c) if c - f.end_ms <= 30 * SECOND => {}
            c => failures.push(format!(
                "{}: episode closed {:?} s after the fault's end, want ≤ 30",
                f.name,
                c.map(|c| (c - f.end_ms) as f64 / 1000.0)
            )),
        }
        if f.name == "cpu_saturation" {
            let window = params.window.window_ms + SECOND;
            let inside: Vec<&WindowScore> = scored
                .iter()
                .filter(|w| w.end_ms >= f.start_ms + window && w.end_ms <= f.end_ms)
                .collect();
            let flagged = inside
                .iter()
                .filter(|w| w.agreement >= params.episodes.min_agreement)
                .count();
            if inside.is_empty() || flagged * 4 < inside.len() * 3 {
                failures.push(format!(
                    "cpu_saturation: {flagged} of {} windows inside flagged, want 3 in 4",
                    inside.len()
                ));
            }
        }
    }
    // No episode opens away from the faults (from 10 s before one to 30 s after its end).
    for ep in &episodes {
        let near = faults.iter().any(|f| {
            ep.opened_ms >= f.start_ms - 10 * SECOND && ep.opened_ms <= f.end_ms + 30 * SECOND
        });
        if !near {
            failures.push(format!(
                "an episode opened {:.0} s after the first fault's start, away from every fault: {:?}",
                (ep.opened_ms - faults[0].start_ms) as f64 / 1000.0,
                ep.subsystems
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
