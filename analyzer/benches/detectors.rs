//! Detector benchmark on the analyzer's real shape: 3,600 windows (an hour at
//! a 1 s stride) × 2,100 features (700 channels × mean, std, slope), 1% of
//! windows anomalous, in two scenarios:
//!   (a) 10 channels shifted by 3σ, (b) 3 channels shifted by 1.5σ.
//! For the paper's literal configuration and the default one, per detector:
//! ROC-AUC, fit time on the 3,600 windows, and mean time to score one window.
//!
//! Run: `cargo bench -p reveal-analyzer --bench detectors`
//! Environment: `REVEAL_BENCH_SEED` (default 1); `REVEAL_BENCH_EXPORT=DIR`
//! also writes each scenario's matrix for
//! `analyzer/reference/sklearn/bench_sklearn.py`, which times scikit-learn on it.

use std::time::Instant;

use reveal_analyzer::core::detect::iforest::{ForestInput, IForestParams};
use reveal_analyzer::core::detect::pca::PcaParams;
use reveal_analyzer::core::detect::synthetic::{generate, Synthetic, SyntheticSpec};
use reveal_analyzer::core::detect::zscore::ZScoreParams;
use reveal_analyzer::core::detect::{DetectError, Detector, DetectorsConfig, Fit};
use reveal_analyzer::core::eval::roc_auc;

/// Time this thread has spent on a CPU, in seconds (Linux schedstat), so
/// the table also reads right on a machine shared with other work.
fn thread_cpu_s() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |ns| ns / 1e9)
}

struct Timed {
    model: Box<dyn Detector>,
    wall_s: f64,
    cpu_s: f64,
}

fn timed_fit<P: Fit>(p: &P, data: &Synthetic) -> Timed {
    let (start, cpu) = (Instant::now(), thread_cpu_s());
    let m: Result<P::Model, DetectError> = p.fit(data.features.view());
    Timed {
        wall_s: start.elapsed().as_secs_f64(),
        cpu_s: thread_cpu_s() - cpu,
        model: Box::new(m.expect("fit")),
    }
}

fn export(dir: &str, name: &str, data: &Synthetic) {
    std::fs::create_dir_all(dir).expect("export dir");
    let (rows, cols) = data.features.dim();
    let mut bytes = Vec::with_capacity(rows * cols * 4);
    for v in data.features.iter() {
        bytes.extend_from_slice(&(*v as f32).to_le_bytes());
    }
    std::fs::write(format!("{dir}/{name}.f32"), bytes).expect("write matrix");
    let labels: Vec<u8> = data.labels.iter().map(|&l| l as u8).collect();
    let meta = serde_json::json!({"rows": rows, "cols": cols, "labels": labels});
    std::fs::write(format!("{dir}/{name}.json"), meta.to_string()).expect("write labels");
}

fn main() {
    let seed: u64 = std::env::var("REVEAL_BENCH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let scenarios = [
        ("a", "10 channels x 3 sd", 10, 3.0),
        ("b", "3 channels x 1.5 sd", 3, 1.5),
    ];
    println!(
        "| scenario | config | detector | ROC-AUC | fit wall (s) | fit CPU (s) | score CPU (µs/window) | flagged / anomalous |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for (key, what, shifted, shift) in scenarios {
        let start = Instant::now();
        let data = generate(&SyntheticSpec::hour(shifted, shift, seed));
        eprintln!(
            "scenario {key}: generated in {:.2} s",
            start.elapsed().as_secs_f64()
        );
        if let Ok(dir) = std::env::var("REVEAL_BENCH_EXPORT") {
            export(&dir, &format!("scenario_{key}"), &data);
        }
        let configs: [(&str, Vec<Timed>); 3] = [
            (
                "literal",
                vec![
                    timed_fit(&ZScoreParams::literal(), &data),
                    timed_fit(&PcaParams::literal(), &data),
                    timed_fit(&IForestParams::literal().seed(seed), &data),
                ],
            ),
            (
                "default",
                vec![
                    timed_fit(&ZScoreParams::default(), &data),
                    timed_fit(&PcaParams::default().seed(seed), &data),
                    timed_fit(&IForestParams::default().seed(seed), &data),
                ],
            ),
            // The forest's earlier default input, for comparison: the sorted
            // largest |z| rather than their cumulative squares.
            (
                "default, top-z forest input",
                vec![timed_fit(
                    &IForestParams::default()
                        .input(ForestInput::TopZ { m: 5 })
                        .seed(seed),
                    &data,
                )],
            ),
        ];
        let anomalous = data.labels.iter().filter(|&&l| l).count();
        for (config, models) in &configs {
            // The three together: a window ranked by its largest score/threshold.
            let mut combined = vec![0.0f64; data.labels.len()];
            for t in models {
                let m = &t.model;
                let cpu = thread_cpu_s();
                let scores: Vec<f64> = data
                    .features
                    .rows()
                    .into_iter()
                    .map(|r| m.score(r))
                    .collect();
                let per_window_us = (thread_cpu_s() - cpu) * 1e6 / scores.len() as f64;
                let auc = roc_auc(&scores, &data.labels).expect("both classes present");
                for (c, s) in combined.iter_mut().zip(&scores) {
                    *c = c.max(reveal_analyzer::core::detect::relative(*s, m.threshold()));
                }
                let hits = scores
                    .iter()
                    .zip(&data.labels)
                    .filter(|(s, &l)| l && **s > m.threshold())
                    .count();
                println!(
                    "| ({key}) {what} | {config} | {} | {auc:.3} | {:.3} | {:.3} | {per_window_us:.1} | {hits} / {anomalous} |",
                    m.name(),
                    t.wall_s,
                    t.cpu_s,
                );
            }
            if models.len() < 3 {
                continue;
            }
            let auc = roc_auc(&combined, &data.labels).expect("both classes present");
            let hits = combined
                .iter()
                .zip(&data.labels)
                .filter(|(c, &l)| l && **c > 1.0)
                .count();
            // The set's own fit shares the default standardization between
            // the z-score and the forest; the literal set is the sum.
            let (wall, cpu) = if *config == "default" {
                let (start, cpu) = (Instant::now(), thread_cpu_s());
                let set = DetectorsConfig::default()
                    .seed(seed)
                    .fit(data.features.view())
                    .expect("fit");
                drop(set);
                (start.elapsed().as_secs_f64(), thread_cpu_s() - cpu)
            } else {
                (
                    models.iter().map(|t| t.wall_s).sum(),
                    models.iter().map(|t| t.cpu_s).sum(),
                )
            };
            println!(
                "| ({key}) {what} | {config} | any of the three (set) | {auc:.3} | {wall:.3} | {cpu:.3} | | {hits} / {anomalous} |"
            );
        }
    }
}
