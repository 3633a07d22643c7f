//! The online fit at the widths the analyzer meets: what `core::fit::fit` (the default
//! detector set, trimmed, with out-of-sample bars and held bars) costs on a trailing
//! baseline of 1,800 windows (30 minutes at a 1 s stride), and, beside it, one plain fit of
//! each detector, so the table says what trimming and calibration multiply.
//!
//! Widths (feature columns): 646 (this 2-CPU VM with the default metric set), 2,524 (the
//! same with the pruned set, `deploy/analyzer-pruned.yml`) and 21,250 (the 96-CPU big host of
//! docs/benchmarks.md with the default set). The features are `core::detect::synthetic`'s
//! (channels × mean, standard deviation, slope), 1% of windows anomalous.
//!
//! Run: `cargo bench -p reveal-analyzer --bench fit`
//! Environment: `REVEAL_BENCH_WIDTHS=646,2524` to choose widths; `REVEAL_BENCH_SEED`.

use std::time::Instant;

use reveal_analyzer::core::detect::synthetic::{generate, SyntheticSpec};
use reveal_analyzer::core::detect::{DetectorsConfig, Fit};
use reveal_analyzer::core::fit::fit;

/// CPU time of the whole process (every thread), in seconds.
fn process_cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse().ok())
        .collect();
    let tick = 100.0; // USER_HZ on Linux
    f.iter().sum::<f64>() / tick
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, f64, f64) {
    let (start, cpu) = (Instant::now(), process_cpu_s());
    let v = f();
    (v, start.elapsed().as_secs_f64(), process_cpu_s() - cpu)
}

fn main() {
    let seed: u64 = std::env::var("REVEAL_BENCH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let widths: Vec<usize> = std::env::var("REVEAL_BENCH_WIDTHS")
        .ok()
        .map(|s| s.split(',').filter_map(|w| w.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![646, 2524, 21250]);
    println!("| feature columns | what | wall (s) | CPU (s) |");
    println!("| --- | --- | --- | --- |");
    for width in widths {
        let spec = SyntheticSpec {
            windows: 1800,
            channels: width.div_ceil(3),
            samples_per_window: 30,
            groups: 10,
            anomaly_fraction: 0.01,
            shifted: 10,
            shift: 3.0,
            seed,
        };
        let (data, gen_s, _) = timed(|| generate(&spec));
        eprintln!("{width} columns: generated in {gen_s:.1} s");
        let x = data.features.view();
        let cols = x.ncols();
        let set = DetectorsConfig::default().seed(seed);
        let (_, w, c) = timed(|| set.zscore.fit(x).expect("zscore"));
        println!("| {cols} | z-score, one plain fit | {w:.2} | {c:.2} |");
        let (_, w, c) = timed(|| set.pca.fit(x).expect("pca"));
        println!("| {cols} | PCA, one plain fit | {w:.2} | {c:.2} |");
        let (_, w, c) = timed(|| set.iforest.fit(x).expect("iforest"));
        println!("| {cols} | forest, one plain fit | {w:.2} | {c:.2} |");
        let (fitted, w, c) = timed(|| fit(x, seed, 0).expect("fit"));
        assert_eq!(fitted.detectors.len(), 3, "{:?}", fitted.not_fitted);
        println!("| {cols} | **the online fit** (three detectors, trimmed, calibrated) | **{w:.2}** | **{c:.2}** |");
        // The bars to the last digit: a change that only speeds the fit up leaves them as
        // they were (compare the lines of two builds).
        for d in &fitted.detectors {
            eprintln!(
                "{cols} columns, {}: threshold {:e}, held bar {:?}",
                d.model.name(),
                d.threshold,
                d.held
            );
        }
    }
}
