//! The paper's literal detectors against scikit-learn on a committed data set.
//!
//! `analyzer/reference/sklearn/gen_synthetic.py` wrote the matrix and
//! scikit-learn's ROC-AUCs; this test needs no Python. Exact scores cannot be
//! compared for the Isolation Forest (another random generator), so parity is
//! on ROC-AUC: within 0.01 of scikit-learn's, the forest's as a mean over seeds.

use std::path::PathBuf;

use ndarray::Array2;
use reveal_analyzer::core::detect::iforest::IForestParams;
use reveal_analyzer::core::detect::pca::{PcaModel, PcaParams};
use reveal_analyzer::core::detect::zscore::ZScoreParams;
use reveal_analyzer::core::detect::{Detector, Fit};
use reveal_analyzer::core::eval::roc_auc;
use serde_json::Value;

struct Fixture {
    x: Array2<f64>,
    labels: Vec<bool>,
    reference: Value,
}

fn fixture() -> Fixture {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sklearn");
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("synthetic.json")).unwrap())
            .unwrap();
    let rows = meta["rows"].as_u64().unwrap() as usize;
    let cols = meta["cols"].as_u64().unwrap() as usize;
    let bytes = std::fs::read(dir.join("synthetic.f32")).unwrap();
    assert_eq!(bytes.len(), rows * cols * 4, "matrix size");
    let values: Vec<f64> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64)
        .collect();
    let labels = meta["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64() == Some(1))
        .collect();
    Fixture {
        x: Array2::from_shape_vec((rows, cols), values).unwrap(),
        labels,
        reference: meta["reference_auc"].clone(),
    }
}

fn auc_of(d: &dyn Detector, f: &Fixture) -> f64 {
    let s = d.score_many(f.x.view());
    roc_auc(s.as_slice().unwrap(), &f.labels).unwrap()
}

fn reference(f: &Fixture, key: &str) -> f64 {
    f.reference[key].as_f64().unwrap()
}

#[test]
fn zscore_mean_abs_matches_scikit_learn() {
    let f = fixture();
    let m = ZScoreParams::literal().fit(f.x.view()).unwrap();
    let (ours, theirs) = (auc_of(&m, &f), reference(&f, "zscore_mean_abs"));
    println!("zscore: ours {ours:.4}, scikit-learn {theirs:.4}");
    assert!((ours - theirs).abs() <= 0.01);
}

#[test]
fn pca95_mahalanobis_matches_scikit_learn() {
    let f = fixture();
    let m: PcaModel = PcaParams::literal().fit(f.x.view()).unwrap();
    assert_eq!(
        m.n_components() as u64,
        f.reference["pca95_components"].as_u64().unwrap()
    );
    let (ours, theirs) = (auc_of(&m, &f), reference(&f, "pca95_mahalanobis"));
    println!("pca: ours {ours:.4}, scikit-learn {theirs:.4}");
    assert!((ours - theirs).abs() <= 0.01);
}

#[test]
fn iforest_matches_scikit_learn_on_average() {
    let f = fixture();
    let seeds = f.reference["iforest_seeds"].as_u64().unwrap();
    let mean = (0..seeds)
        .map(|s| {
            auc_of(
                &IForestParams::literal().seed(s).fit(f.x.view()).unwrap(),
                &f,
            )
        })
        .sum::<f64>()
        / seeds as f64;
    let theirs = reference(&f, "iforest_mean_over_seeds");
    println!("iforest: ours {mean:.4}, scikit-learn {theirs:.4} (mean of {seeds} seeds)");
    assert!((mean - theirs).abs() <= 0.01);
}
