//! The default detectors on the case the paper's configuration misses: a
//! handful of channels out of hundreds move, beyond their range or only off
//! their usual relation to the others. A smaller, seeded version of the
//! benchmark's scenarios (`benches/detectors.rs`), checking quality (ROC-AUC
//! bars of the analyzer issue, and that attribution names a moved channel),
//! not speed.

use reveal_analyzer::core::detect::synthetic::{generate, Synthetic, SyntheticSpec};
use reveal_analyzer::core::detect::{Detector, DetectorsConfig};
use reveal_analyzer::core::eval::roc_auc;

fn spec(shifted: usize, shift: f64) -> SyntheticSpec {
    SyntheticSpec {
        windows: 1000,
        channels: 200,
        samples_per_window: 30,
        groups: 10,
        anomaly_fraction: 0.02,
        shifted,
        shift,
        seed: 7,
    }
}

struct Outcome {
    name: &'static str,
    auc: f64,
    /// Anomalous windows whose top attribution is a feature of a shifted channel.
    named: f64,
}

fn evaluate(data: &Synthetic) -> (Vec<Outcome>, f64) {
    // Columns 3c, 3c + 1, 3c + 2 are channel c's features (see `synthetic`).
    let channels = (0..data.features.ncols()).map(|j| j / 3).collect();
    let detectors = DetectorsConfig::default()
        .column_groups(Some(channels))
        .fit(data.features.view())
        .unwrap();
    let mut relative_max = vec![0.0f64; data.labels.len()];
    let outcomes = detectors
        .iter()
        .map(|d| {
            let scores = d.score_many(data.features.view());
            for (m, s) in relative_max.iter_mut().zip(scores.iter()) {
                *m = m.max(s / d.threshold());
            }
            let auc = roc_auc(scores.as_slice().unwrap(), &data.labels).unwrap();
            (d, auc)
        })
        .map(|(d, auc)| Outcome {
            name: d.name(),
            auc,
            named: named_share(d.as_ref(), data),
        })
        .collect();
    let any = roc_auc(&relative_max, &data.labels).unwrap();
    (outcomes, any)
}

fn named_share(d: &dyn Detector, data: &Synthetic) -> f64 {
    let anomalous: Vec<usize> = (0..data.labels.len()).filter(|&i| data.labels[i]).collect();
    let hits = anomalous
        .iter()
        .filter(|&&i| {
            let top = d.attribute(data.features.row(i), 1);
            top.first()
                .is_some_and(|a| data.shifted[i].contains(&(a.feature / 3)))
        })
        .count();
    hits as f64 / anomalous.len() as f64
}

/// `bars` gives each detector's least ROC-AUC (by name); `any` applies to the three together
/// (a window ranked by its largest score/threshold). Attribution must name a moved channel
/// in most anomalous windows for each detector held to a bar of at least 0.7.
fn check(shifted: usize, shift: f64, bars: &[(&str, f64)], any_bar: f64) {
    let data = generate(&spec(shifted, shift));
    let (outcomes, any) = evaluate(&data);
    for o in &outcomes {
        println!(
            "{shifted} channels x {shift} sd: {} ROC-AUC {:.3}, top attribution on a shifted channel in {:.0}% of anomalous windows",
            o.name,
            o.auc,
            100.0 * o.named
        );
    }
    println!(
        "{shifted} channels x {shift} sd: any detector (max score/threshold) ROC-AUC {any:.3}"
    );
    for o in &outcomes {
        let bar = bars.iter().find(|(n, _)| *n == o.name).map_or(0.5, |b| b.1);
        assert!(o.auc >= bar, "{} ROC-AUC {:.3} below {bar}", o.name, o.auc);
        if bar >= 0.7 {
            assert!(o.named >= 0.6, "{}: {:.2}", o.name, o.named);
        }
    }
    assert!(any >= any_bar, "any detector: {any:.3}");
}

#[test]
fn ten_channels_shifted_by_three_sigma() {
    // Shifts beyond the channels' usual range: the z-score and PCA see them outright; the
    // forest, over 200 channel coordinates of which 10 move, less sharply (0.72 at seed 7).
    check(
        10,
        3.0,
        &[("zscore", 0.95), ("pca", 0.95), ("iforest", 0.7)],
        0.95,
    );
}

#[test]
fn three_channels_shifted_by_one_and_a_half_sigma() {
    // Shifts *within* the channels' usual range, off their relation to the workload: only a
    // model of how channels move together sees them, and that is PCA's part: 0.73 at seed 7.
    // (0.90 without the least residual scale of `Scaling::Bulk`, which keeps new windows
    // from scoring far above the baseline's own on a real host; the real host won.) The
    // z-score and the forest judge each feature or channel against its own range, so by
    // design they rank such windows about as normal ones (0.47 and 0.58): they are reported,
    // not held to a bar.
    check(
        3,
        1.5,
        &[("pca", 0.7), ("zscore", 0.0), ("iforest", 0.0)],
        0.7,
    );
}
