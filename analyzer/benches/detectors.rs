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

use reveal_analyzer::detect::iforest::IForestParams;
use reveal_analyzer::detect::pca::PcaParams;
use reveal_analyzer::detect::synthetic::{generate, Synthetic, SyntheticSpec};
use reveal_analyzer::detect::zscore::ZScoreParams;
use reveal_analyzer::detect::{DetectError, Detector, Fit};
use reveal_analyzer::eval::roc_auc;

fn timed_fit<P: Fit>(p: &P, data: &Synthetic) -> (Box<dyn Detector>, f64) {
    let start = Instant::now();
    let m: Result<P::Model, DetectError> = p.fit(data.features.view());
    let secs = start.elapsed().as_secs_f64();
    (Box::new(m.expect("fit")), secs)
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
    println!("| scenario | config | detector | ROC-AUC | fit (s) | score (µs/window) | flagged / anomalous |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
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
        let configs: [(&str, Vec<(Box<dyn Detector>, f64)>); 2] = [
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
        ];
        let anomalous = data.labels.iter().filter(|&&l| l).count();
        for (config, models) in &configs {
            for (m, fit_s) in models {
                let start = Instant::now();
                let scores: Vec<f64> = data
                    .features
                    .rows()
                    .into_iter()
                    .map(|r| m.score(r))
                    .collect();
                let per_window_us = start.elapsed().as_secs_f64() * 1e6 / scores.len() as f64;
                let auc = roc_auc(&scores, &data.labels).expect("both classes present");
                let hits = scores
                    .iter()
                    .zip(&data.labels)
                    .filter(|(s, &l)| l && **s > m.threshold())
                    .count();
                println!(
                    "| ({key}) {what} | {config} | {} | {auc:.3} | {fit_s:.3} | {per_window_us:.1} | {hits} / {anomalous} |",
                    m.name()
                );
            }
        }
    }
}
