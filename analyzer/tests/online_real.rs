//! The online analyzer on real telemetry: a recording of this project's 2-CPU test machine
//! (reveal-exporter scraped by Prometheus every 100 ms, the metric set of
//! `deploy/analyzer.yml` evaluated at the analyzer's step) with two real faults in it, a CPU
//! hog and a write burst. The fixture and how it was recorded: `tests/fixtures/real/README.md`
//! and `scripts/record_fault_trace.sh`.
//!
//! The engine runs as `reveal-analyzer run` would have run over that stretch (the way
//! `reveal-analyzer replay` replays one): a baseline learned from the first minute, then
//! every stride's new windows scored against the trailing baseline. What must hold:
//! - each fault is flagged by at least two detectors in at least half of the windows that lie
//!   wholly inside it, and the first such window ends within 5 s of the fault's start;
//! - the flagged windows of a fault are attributed to the subsystem it loads;
//! - in the quiet stretches, flags are as rare as the detectors' design makes them, and at
//!   most one run of them (one real transient of the host) would open an episode.
//!
//! A summary table (per stretch: windows, flagged, highest score / threshold per detector)
//! is printed on stderr: `cargo nextest run -p reveal-analyzer --test online_real --no-capture`.

use std::collections::BTreeMap;

use prometheus_client::registry::Registry;
use reveal_analyzer::config::{AnalysisConfig, EpisodeConfig};
use reveal_analyzer::core::matrix::HostMatrix;
use reveal_analyzer::core::window::WindowConfig;
use reveal_analyzer::online::{Engine, EngineParams, Outcome, WindowScore};
use reveal_analyzer::outputs::metrics::SelfMetrics;

mod support;
use support::trace::{fixture_dir, load, Fault};

const SECOND: i64 = 1000;
/// Windows at least this far from a fault (their data included) count as quiet.
const QUIET_MARGIN_MS: i64 = 10 * SECOND;
/// Each detector's threshold is the 99th percentile of its baseline scores (DESIGN,
/// "Detectors"): 1% of baseline-like windows exceed it per detector, so at most 3% of them
/// are flagged by any of the three (union bound), and fewer by two. Real telemetry drifts
/// between refits, so the bound asserted is the any-detector one.
const QUIET_FLAGGED_BOUND: f64 = 0.03;

/// Replays the recording through the online engine: learn (start + 10 s, start + 70 s], then
/// one stride at a time to the end.
fn replay(m: &HostMatrix) -> (Vec<WindowScore>, Vec<(i64, &'static str)>, WindowConfig) {
    let window = WindowConfig::default();
    let params = EngineParams {
        window,
        warmup_ms: 60 * SECOND,
        baseline_ms: 120 * SECOND,
        refit_ms: 300 * SECOND,
        detectors: None,
        ..EngineParams::from_config(&AnalysisConfig::default())
    };
    let metrics = SelfMetrics::new(&mut Registry::default());
    let mut engine = Engine::new(params);
    let stride = window.stride_ms;
    let learn_from = (m.start_ms + 10 * SECOND).div_euclid(stride) * stride;
    let from = learn_from + 60 * SECOND;
    let until = m.time_ms(m.n_steps() - 1).div_euclid(stride) * stride;
    engine.learn(m, learn_from, from, &[], &metrics);
    engine.refit_all(&metrics);
    let (mut scored, mut skipped) = (Vec::new(), Vec::new());
    let mut after = from;
    while after < until {
        for o in engine.process(m, after, after + stride, &metrics) {
            match o {
                Outcome::Scored(w) => scored.push(w),
                Outcome::Skipped { end_ms, reason } => skipped.push((end_ms, reason)),
            }
        }
        after += stride;
    }
    (scored, skipped, window)
}

/// Flagged as the episodes count it: by at least their default agreement.
fn flagged(w: &WindowScore) -> bool {
    w.agreement >= EpisodeConfig::default().min_agreement
}

/// The subsystem with the largest summed attribution share over `windows`.
fn top_subsystem<'a>(windows: impl Iterator<Item = &'a WindowScore>) -> Option<String> {
    let mut share: BTreeMap<&str, f64> = BTreeMap::new();
    for w in windows {
        for (s, v) in &w.subsystems {
            *share.entry(s).or_default() += v;
        }
    }
    share
        .into_iter()
        .filter(|(_, v)| *v > 0.0)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(s, _)| s.to_string())
}

/// One line of the summary table.
fn row(label: &str, ws: &[&WindowScore], skipped: usize, detectors: &[&str]) -> String {
    let n_flagged = ws.iter().filter(|w| flagged(w)).count();
    let any = ws.iter().filter(|w| w.agreement >= 1).count();
    let maxes: Vec<String> = detectors
        .iter()
        .map(|d| {
            let m = ws
                .iter()
                .flat_map(|w| w.scores.iter().filter(|(n, _)| n == d).map(|(_, s)| *s))
                .fold(f64::NAN, f64::max);
            format!("{m:>8.2}")
        })
        .collect();
    let top = top_subsystem(ws.iter().copied().filter(|w| flagged(w))).unwrap_or("-".into());
    format!(
        "{label:<34} {:>7} {:>7} {n_flagged:>7} {any:>7} {} {top:>8}",
        ws.len(),
        skipped,
        maxes.join(" ")
    )
}

#[test]
fn real_faults_are_flagged_and_quiet_stays_quiet() {
    let (m, faults) = load(&fixture_dir("real"));
    assert_eq!(faults.len(), 2, "faults.json: a CPU hog and a write burst");
    let (scored, skipped, w) = replay(&m);
    assert!(!scored.is_empty(), "no window was scored");
    // Rates look back 1 s and a window spans `window_ms`: a window ending `lag` or more after
    // a fault starts holds only the fault's data, and one ending up to `lag` after the fault
    // ends still holds some of it (the fault's row of the table).
    let lag = w.window_ms + SECOND;
    let fault_span = |f: &Fault| (f.start_ms, f.end_ms + lag);
    let quiet = |end: i64| {
        faults
            .iter()
            .all(|f| end < f.start_ms - QUIET_MARGIN_MS || end - lag > f.end_ms + QUIET_MARGIN_MS)
    };
    let in_span = |end: i64, (a, b): (i64, i64)| end > a && end <= b;

    // The table: the stretches in time order, then the quiet windows together.
    let mut detectors: Vec<&str> = Vec::new();
    for s in scored.iter().flat_map(|w| &w.scores) {
        if !detectors.contains(&s.0) {
            detectors.push(s.0);
        }
    }
    let mut stretches: Vec<(String, i64, i64)> = Vec::new();
    let mut t = i64::MIN;
    for f in &faults {
        let (a, b) = fault_span(f);
        stretches.push(("quiet before ".to_string() + &f.name, t, a));
        stretches.push((
            format!("{} ({} s)", f.name, (f.end_ms - f.start_ms) / SECOND),
            a,
            b,
        ));
        t = b;
    }
    stretches.push(("quiet after".to_string(), t, i64::MAX));
    let header = format!(
        "{:<34} {:>7} {:>7} {:>7} {:>7} {} {:>8}",
        "stretch (window ends)",
        "windows",
        "skipped",
        "agr>=2",
        "agr>=1",
        detectors
            .iter()
            .map(|d| format!("{:>8}", format!("max {d}")))
            .collect::<Vec<_>>()
            .join(" "),
        "top sub"
    );
    eprintln!("\n{header}\n{}", "-".repeat(header.len()));
    for (label, a, b) in &stretches {
        let ws: Vec<&WindowScore> = scored
            .iter()
            .filter(|x| in_span(x.end_ms, (*a, *b)))
            .collect();
        let sk = skipped.iter().filter(|x| in_span(x.0, (*a, *b))).count();
        eprintln!("{}", row(label, &ws, sk, &detectors));
    }
    let quiet_ws: Vec<&WindowScore> = scored.iter().filter(|x| quiet(x.end_ms)).collect();
    let quiet_skipped = skipped.iter().filter(|x| quiet(x.0)).count();
    eprintln!(
        "{}",
        row(
            "quiet (> 10 s from a fault)",
            &quiet_ws,
            quiet_skipped,
            &detectors
        )
    );

    let mut failures = Vec::new();
    for f in &faults {
        let span = fault_span(f);
        let inside: Vec<&WindowScore> = scored
            .iter()
            .filter(|x| x.end_ms >= f.start_ms + lag && x.end_ms <= f.end_ms)
            .collect();
        let n_inside = inside.iter().filter(|x| flagged(x)).count();
        let first = scored
            .iter()
            .find(|x| in_span(x.end_ms, span) && flagged(x))
            .map(|x| x.end_ms - f.start_ms);
        let top = top_subsystem(
            scored
                .iter()
                .filter(|x| in_span(x.end_ms, span) && flagged(x)),
        );
        eprintln!(
            "{}: {n_inside} of {} windows wholly inside flagged; first flagged window ends {} after the start; top subsystem {}",
            f.name,
            inside.len(),
            first.map_or("never".to_string(), |d| format!("{:.1} s", d as f64 / 1000.0)),
            top.as_deref().unwrap_or("-"),
        );
        if inside.is_empty() || n_inside * 2 < inside.len() {
            failures.push(format!(
                "{}: {n_inside} of {} inside windows flagged, want at least half",
                f.name,
                inside.len()
            ));
        }
        let late = match first {
            Some(d) => d > 5 * SECOND,
            None => true,
        };
        if late {
            failures.push(format!(
                "{}: first flagged window {first:?} ms after the start, want ≤ 5 s",
                f.name
            ));
        }
        let want: &[&str] = match f.name.as_str() {
            "cpu_hog" => &["cpu"],
            // A write burst is disk traffic, and on a small VM also CPU time in iowait.
            "write_burst" => &["storage", "cpu"],
            other => panic!("faults.json: unknown fault {other}"),
        };
        if !top.as_deref().is_some_and(|t| want.contains(&t)) {
            failures.push(format!(
                "{}: top subsystem {top:?}, want one of {want:?}",
                f.name
            ));
        }
    }

    let n_quiet = quiet_ws.len();
    let quiet_flagged = quiet_ws.iter().filter(|x| flagged(x)).count();
    let fraction = quiet_flagged as f64 / n_quiet.max(1) as f64;
    // False episodes: runs of quiet flagged windows, as the episode tracker forms them (two in
    // a row open one; a lull shorter than `close_after` windows does not end it). One real
    // transient of the host (a kernel write-back, say) is at most one such run.
    let close_after = EpisodeConfig::default().close_after as i64;
    let mut runs = 0;
    let mut run: Vec<i64> = Vec::new();
    let mut count_run = |run: &mut Vec<i64>| {
        let opens = run.windows(2).any(|p| p[1] - p[0] == w.stride_ms);
        if opens {
            runs += 1;
        }
        run.clear();
    };
    for x in quiet_ws.iter().filter(|x| flagged(x)) {
        if run
            .last()
            .is_some_and(|last| x.end_ms - last > close_after * w.stride_ms)
        {
            count_run(&mut run);
        }
        run.push(x.end_ms);
    }
    count_run(&mut run);
    let max_runs = 1;
    eprintln!(
        "quiet: {quiet_flagged} of {n_quiet} windows flagged ({:.2}%, bound {:.0}%); {runs} runs that would open an episode (bound {max_runs})",
        100.0 * fraction,
        100.0 * QUIET_FLAGGED_BOUND
    );
    // The first few, to show what the detectors saw in the quiet.
    let quiet_flags: Vec<&&WindowScore> = quiet_ws.iter().filter(|x| flagged(x)).collect();
    for x in quiet_flags.iter().take(12) {
        eprintln!(
            "  quiet window ending +{:.0} s flagged by {}: {}",
            (x.end_ms - m.start_ms) as f64 / 1000.0,
            x.detectors.join("+"),
            x.summary
        );
    }
    if quiet_flags.len() > 12 {
        eprintln!("  ... and {} more", quiet_flags.len() - 12);
    }
    assert!(n_quiet >= 60, "only {n_quiet} quiet windows scored");
    if fraction > QUIET_FLAGGED_BOUND {
        failures.push(format!(
            "quiet: {quiet_flagged} of {n_quiet} windows flagged, bound {QUIET_FLAGGED_BOUND}"
        ));
    }
    if runs > max_runs {
        failures.push(format!(
            "quiet: {runs} runs of flagged windows would open episodes, bound {max_runs}"
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
