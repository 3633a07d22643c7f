//! Feature extraction speed on the paper's shape: one window = 700 channels × 30 samples
//! (3 s at 100 ms), every channel dynamic (the most expensive kind), on one core.
//!
//! Run: `cargo bench -p reveal-analyzer --bench features`
//! Side by side with tsfresh and numpy on the same data:
//! `python3 analyzer/reference/tsfresh/bench_tsfresh.py` (it writes the data, runs this
//! bench on it through the variables below, and prints one table with the ratios).
//! Environment: `REVEAL_BENCH_DATA=FILE` reads windows from `FILE.f64` (little-endian
//! f64, window-major, channel, sample) and `FILE.json` (`{"windows", "channels",
//! "samples"}`); `REVEAL_BENCH_JSON=OUT` writes the results as JSON.

use std::time::Instant;

use ndarray::Array2;
use reveal_analyzer::core::features::{columns_for, Extractor, FeatureConfig};
use reveal_analyzer::core::matrix::{Channel, HostMatrix, Kind, MetricType, Subsystem};
use reveal_analyzer::core::window::{Window, WindowConfig};

const CHANNELS: usize = 700;
const SAMPLES: usize = 30;
const WINDOWS: usize = 40;

/// Deterministic data without an RNG crate: per channel a mix of random walk, noise,
/// sine and occasional spikes, so every branch (including ADF lag choice) varies.
fn synthetic(windows: usize) -> Vec<f64> {
    let mut s = 0x5eed_u64;
    let mut next = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let mut out = Vec::with_capacity(windows * CHANNELS * SAMPLES);
    for _ in 0..windows {
        for c in 0..CHANNELS {
            let mut level = 100.0 * next();
            for t in 0..SAMPLES {
                level += next();
                let v = match c % 4 {
                    0 => level,
                    1 => next(),
                    2 => (t as f64 * 0.6 + c as f64).sin() + 0.1 * next(),
                    _ => {
                        if next() > 0.45 {
                            10.0
                        } else {
                            0.1 * next()
                        }
                    }
                };
                out.push(v);
            }
        }
    }
    out
}

fn load(path: &str) -> (usize, Vec<f64>) {
    let meta: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{path}.json")).expect("read data json"),
    )
    .expect("data json");
    assert_eq!(meta["channels"], CHANNELS);
    assert_eq!(meta["samples"], SAMPLES);
    let windows = meta["windows"].as_u64().expect("windows") as usize;
    let bytes = std::fs::read(format!("{path}.f64")).expect("read data");
    let data: Vec<f64> = bytes
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect();
    assert_eq!(data.len(), windows * CHANNELS * SAMPLES);
    (windows, data)
}

/// One matrix holding the windows back to back: window `w` is steps `w·30 .. w·30+30`.
fn matrix(windows: usize, data: &[f64]) -> HostMatrix {
    let steps = windows * SAMPLES;
    let mut values = Array2::zeros((CHANNELS, steps));
    for w in 0..windows {
        for c in 0..CHANNELS {
            for t in 0..SAMPLES {
                values[[c, w * SAMPLES + t]] = data[(w * CHANNELS + c) * SAMPLES + t];
            }
        }
    }
    let channels = (0..CHANNELS)
        .map(|c| Channel {
            name: format!("reveal_cpu_bench{{c=\"{c}\"}}"),
            metric: "reveal_cpu_bench".into(),
            subsystem: Subsystem::Cpu,
            kind: Kind::Dynamic,
            metric_type: MetricType::Gauge,
            resolution: 0.0,
            per_second: false,
            max_rate: None,
        })
        .collect();
    HostMatrix {
        host: "bench".into(),
        start_ms: 0,
        step_ms: 100,
        channels,
        values,
        non_finite_samples: 0,
    }
}

/// Per-window times in ms over `rounds` passes over all windows.
fn time(m: &HostMatrix, windows: usize, adf: bool, rounds: usize) -> Vec<f64> {
    let cfg = FeatureConfig {
        adf,
        ..FeatureConfig::default()
    };
    let mut ex = Extractor::new(cfg, WindowConfig::default());
    let columns = columns_for(&m.channels, &cfg);
    let mut out = vec![0.0; columns.len()];
    let mut times = Vec::with_capacity(windows * rounds);
    let mut checksum = 0.0;
    for _ in 0..rounds {
        for w in 0..windows {
            let win = Window {
                id: w,
                first_step: w * SAMPLES,
                start_ms: m.time_ms(w * SAMPLES),
                end_ms: m.time_ms((w + 1) * SAMPLES),
            };
            let start = Instant::now();
            ex.extract_window(m, &win, &columns, &mut out);
            times.push(start.elapsed().as_secs_f64() * 1e3);
            checksum += out.iter().filter(|v| v.is_finite()).sum::<f64>();
        }
    }
    // Keeps the work observable so it cannot be optimized away.
    assert!(checksum.is_finite());
    times
}

fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    let (windows, data) = match std::env::var("REVEAL_BENCH_DATA") {
        Ok(path) => load(&path),
        Err(_) => (WINDOWS, synthetic(WINDOWS)),
    };
    let m = matrix(windows, &data);
    println!("feature extraction, {CHANNELS} channels x {SAMPLES} samples per window, one core, {windows} windows");
    println!("| features | columns | median ms/window | p90 ms/window | mean ms/window | bar |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let mut results = serde_json::Map::new();
    for (adf, label, bar, rounds) in [
        (false, "tsfresh set without ADF", 1.0, 25),
        (true, "tsfresh set with ADF", 15.0, 5),
    ] {
        // One warm-up pass (page faults, caches) before measuring.
        time(&m, windows.min(3), adf, 1);
        let mut t = time(&m, windows, adf, rounds);
        let mean = t.iter().sum::<f64>() / t.len() as f64;
        let median = quantile(&mut t, 0.5);
        let p90 = quantile(&mut t, 0.9);
        let cols = columns_for(
            &m.channels,
            &FeatureConfig {
                adf,
                ..FeatureConfig::default()
            },
        )
        .len();
        let ok = if median <= bar { "ok" } else { "MISSED" };
        println!("| {label} | {cols} | {median:.3} | {p90:.3} | {mean:.3} | <= {bar} ms {ok} |");
        results.insert(
            if adf { "rust_adf" } else { "rust_no_adf" }.to_string(),
            serde_json::json!({"median_ms": median, "p90_ms": p90, "mean_ms": mean, "columns": cols}),
        );
    }
    if let Ok(out) = std::env::var("REVEAL_BENCH_JSON") {
        std::fs::write(&out, serde_json::Value::Object(results).to_string()).expect("write json");
    }
}
