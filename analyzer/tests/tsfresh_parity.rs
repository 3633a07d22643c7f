//! Every feature of every fixture series against tsfresh's value, from the committed
//! `tests/fixtures/tsfresh_reference.json` (regenerate with
//! `analyzer/reference/tsfresh/gen_reference.py`; this test needs no Python).
//!
//! Agreement: `|ours − tsfresh| ≤ 1e-9 · max(|ours|, |tsfresh|, scale)`, where `scale` is
//! the natural size of the feature for that series (its largest magnitude for location
//! features, its range for spread features, 1 for dimensionless ones), so a value that is
//! zero up to rounding (the skewness of a symmetric series, the slope of a flat one) is
//! compared at the precision of the data rather than relative to 1e-17. NaN (JSON null)
//! must be NaN on both sides: that is tsfresh's behaviour for undefined features.
//! Where tsfresh's own value is rounding noise (entries under `tsfresh_unstable`, see
//! `src/features.rs`), the reference holds the well-defined value and the raw one beside it.

use reveal_analyzer::core::features::{adf, Adf, Feature, Stats};
use serde_json::Value;

const ALL: [Feature; 15] = [
    Feature::Mean,
    Feature::Variance,
    Feature::StandardDeviation,
    Feature::Minimum,
    Feature::Maximum,
    Feature::Skewness,
    Feature::Kurtosis,
    Feature::LinearTrendSlope,
    Feature::LinearTrendIntercept,
    Feature::LinearTrendRvalue,
    Feature::AutocorrelationLag1,
    Feature::MeanAbsChange,
    Feature::AdfTeststat,
    Feature::AdfPvalue,
    Feature::SumValues,
];

fn ours(f: Feature, s: &Stats, adf: f64) -> f64 {
    match f {
        Feature::Mean => s.mean,
        Feature::Variance => s.variance,
        Feature::StandardDeviation => s.standard_deviation,
        Feature::Minimum => s.minimum,
        Feature::Maximum => s.maximum,
        Feature::Skewness => s.skewness,
        Feature::Kurtosis => s.kurtosis,
        Feature::LinearTrendSlope => s.slope,
        Feature::LinearTrendIntercept => s.intercept,
        Feature::LinearTrendRvalue => s.rvalue,
        Feature::AutocorrelationLag1 => s.autocorrelation_lag_1,
        Feature::MeanAbsChange => s.mean_abs_change,
        Feature::AdfTeststat => adf,
        Feature::AdfPvalue => adf::pvalue(adf),
        Feature::SumValues => s.sum_values,
    }
}

/// The natural size of feature `f` on series `x`.
fn scale(f: Feature, x: &[f64]) -> f64 {
    let n = x.len().max(1) as f64;
    let big = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let lo = x.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let range = (hi - lo).max(0.0);
    match f {
        Feature::Mean | Feature::Minimum | Feature::Maximum | Feature::LinearTrendIntercept => big,
        Feature::SumValues => big * n,
        Feature::Variance => range * range,
        Feature::StandardDeviation | Feature::MeanAbsChange => range,
        Feature::LinearTrendSlope => range / n,
        Feature::Skewness
        | Feature::Kurtosis
        | Feature::LinearTrendRvalue
        | Feature::AutocorrelationLag1
        | Feature::AdfTeststat
        | Feature::AdfPvalue => 1.0,
    }
}

#[test]
fn every_feature_matches_tsfresh() {
    let text = include_str!("fixtures/tsfresh_reference.json");
    let doc: Value = serde_json::from_str(text).expect("reference JSON parses");
    let series = doc["series"].as_array().expect("series list");
    assert!(series.len() >= 15, "fixture set shrank");
    let mut adf = Adf::new();
    let mut checked = 0;
    let mut failures = Vec::new();
    let mut worst = (0.0f64, String::new());
    for s in series {
        let name = s["name"].as_str().unwrap();
        // Gaps (null) are dropped, as the analyzer drops non-finite samples of a window.
        let x: Vec<f64> = s["values"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_f64)
            .collect();
        let stats = Stats::of(&x);
        let t = adf.teststat(&x);
        for f in ALL {
            let key = f.tsfresh_name();
            let want = &s["features"][&key];
            assert!(!want.is_string(), "{name}: {key} missing");
            let got = ours(f, &stats, t);
            checked += 1;
            let ok = match want.as_f64() {
                None => got.is_nan(),
                Some(w) => {
                    let tol = 1e-9 * got.abs().max(w.abs()).max(scale(f, &x));
                    let used = if tol > 0.0 {
                        (got - w).abs() / tol
                    } else {
                        0.0
                    };
                    if used > worst.0 {
                        worst = (used, format!("{name}: {key}"));
                    }
                    (got - w).abs() <= tol || got == w
                }
            };
            if !ok {
                failures.push(format!("{name}: {key}: ours {got:e}, tsfresh {want}"));
            }
        }
    }
    // Visible with --nocapture: how much of the tolerance the closest call used.
    println!("worst: {:.3e} of the tolerance ({})", worst.0, worst.1);
    assert!(
        failures.is_empty(),
        "{} of {checked} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(checked, series.len() * ALL.len());
}
