//! Fitting the online detectors on a host's baseline windows, with thresholds calibrated on
//! windows the model did not see.
//!
//! A detector's own threshold is a percentile of its scores on the rows it was fitted on.
//! Scored online, new windows are out of sample, and some models (PCA with many features
//! and few windows, deviations measured against the baseline's own range) give unseen
//! windows higher scores than seen ones: scored against the in-sample threshold, a quiet host
//! would be flagged all the time. So the threshold is calibrated on out-of-sample scores of
//! every baseline window, cross-fitted over folds of interleaved blocks of consecutive
//! windows (windows overlap, so neighbours are not independent). A threshold calibrated on a
//! quarter of a short baseline alone is close to that quarter's maximum, and one new window
//! in a dozen would exceed it.

use ndarray::{Array2, ArrayView2, Axis};

use crate::detect::{percentile, Detector, DetectorsConfig, Fit};

/// The percentile the detectors flag above (1% contamination, DESIGN "Detectors").
const PERCENTILE: f64 = 99.0;

pub struct Fitted {
    /// Each detector with the threshold used online.
    pub detectors: Vec<(Box<dyn Detector>, f64)>,
    /// Width of the rows the models take.
    pub width: usize,
    pub at_ms: i64,
}

/// What a baseline holds, which decides how deviations from it are measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Baseline {
    /// A whole recording, anomalies included (offline analysis): deviations are linear in a
    /// robust scale, so the run's own faults stand out of it.
    WholeRun,
    /// The online analyzer's trailing history without its flagged windows: what it shows is
    /// normal, so deviations are measured against its own tails (`Scaling::RobustTails`,
    /// [`crate::detect::tail`]) and a heavy-tailed feature reaching a value the baseline
    /// already reached is not extreme.
    Trailing,
}

/// The detector set used when the configuration names none: the defaults
/// ([`DetectorsConfig::default`]), whatever the baseline's size or kind.
pub fn adapted(_rows: usize, _cols: usize, _baseline: Baseline) -> DetectorsConfig {
    DetectorsConfig::default()
}

/// Fold of each row for cross-fitting: blocks of `n / 20` consecutive windows (at least 1),
/// dealt to [`FOLDS`] folds in turn. Windows overlap, so a block's neighbours are not
/// independent of it; blocks keep most of a fold's windows away from the training rows.
pub fn folds(n: usize) -> Vec<usize> {
    let block = (n / 20).max(1);
    (0..n).map(|i| (i / block) % FOLDS).collect()
}

/// Folds of the cross-fitted calibration.
pub const FOLDS: usize = 4;

fn rows(x: ArrayView2<f64>, fold: &[usize], pick: impl Fn(usize) -> bool) -> Array2<f64> {
    let idx: Vec<usize> = (0..x.nrows()).filter(|&i| pick(fold[i])).collect();
    x.select(Axis(0), &idx)
}

/// Fits the detector set `set` (z-score, PCA, Isolation Forest) on `x`
/// (windows × features). A detector that cannot be fitted is left out and logged; `None`
/// when none could.
pub fn fit(x: ArrayView2<f64>, seed: u64, at_ms: i64) -> Option<Fitted> {
    fit_with(
        x,
        &DetectorsConfig::default(),
        seed,
        at_ms,
        Baseline::Trailing,
    )
}

/// Most of a baseline that trimming may drop, the share the bulk scaling already ignores
/// (`Scaling::Bulk`): a pattern in more windows than this is the host's routine, not a
/// transient, and stays (trimmed, every recurrence of it would be flagged).
pub const MAX_TRIMMED: f64 = 1.0 - crate::detect::scale::BULK_QUANTILE;

/// Rows of a baseline kept after trimming its transients: those whose score is at most
/// Tukey's far-out fence of the baseline's scores, q75 + 3 × (q75 − q25), and at least
/// `1 − MAX_TRIMMED` of the rows (the lowest-scoring ones when more lie beyond the fence).
pub fn trimmed_rows(scores: &[f64]) -> Vec<usize> {
    let n = scores.len();
    let (q25, q75) = (percentile(scores, 25.0), percentile(scores, 75.0));
    let fence = q75 + 3.0 * (q75 - q25);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let least = n - ((n as f64 * MAX_TRIMMED).floor() as usize).min(n);
    let within = order.iter().take_while(|&&i| scores[i] <= fence).count();
    let mut keep: Vec<usize> = order[..within.max(least)].to_vec();
    keep.sort_unstable();
    keep
}

/// One detector of `set`, by name, fitted on `t`.
fn fit_one(
    set: &DetectorsConfig,
    name: &str,
    t: ArrayView2<f64>,
) -> Result<Box<dyn Detector>, crate::detect::DetectError> {
    Ok(match name {
        "zscore" => Box::new(set.zscore.fit(t)?),
        "pca" => Box::new(set.pca.fit(t)?),
        _ => Box::new(set.iforest.fit(t)?),
    })
}

/// Names of the detectors, in the order they are reported.
pub const DETECTORS: [&str; 3] = ["zscore", "pca", "iforest"];

/// [`fit`] with explicit detector parameters: each detector is fitted on its own, with its
/// own model, its own trimmed baseline and its own threshold (DESIGN "Detectors").
///
/// 1. **Trim** (when `set.trim`): fit on every baseline window, score them, and drop the
///    windows beyond the far-out fence of those scores ([`trimmed_rows`]); refit on the
///    rest. A burst that the baseline saw once does not set the bar for the next.
/// 2. **Threshold**: the configured percentile (99th) of the model's scores on its trimmed
///    baseline. On a [`Baseline::Trailing`] one the windows scored later are new, so the
///    threshold is cross-fitted: each of [`FOLDS`] folds is scored by a model fitted on the
///    other folds, so every baseline window gets an out-of-sample score, as a new window
///    will; the threshold is the larger of the in-sample and the out-of-sample percentile.
///
/// A detector that cannot be fitted is left out and logged; `None` when none could.
pub fn fit_with(
    x: ArrayView2<f64>,
    set: &DetectorsConfig,
    seed: u64,
    at_ms: i64,
    baseline: Baseline,
) -> Option<Fitted> {
    let set = set.clone().seed(seed);
    let mut detectors: Vec<(Box<dyn Detector>, f64)> = Vec::new();
    for name in DETECTORS {
        let first = match fit_one(&set, name, x) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, "{name} not fitted");
                continue;
            }
        };
        let (model, base) = if set.trim {
            let keep = trimmed_rows(&first.score_many(x).to_vec());
            if keep.len() < x.nrows() {
                let kept = x.select(Axis(0), &keep);
                match fit_one(&set, name, kept.view()) {
                    Ok(m) => (m, kept),
                    Err(_) => (first, x.to_owned()),
                }
            } else {
                (first, x.to_owned())
            }
        } else {
            (first, x.to_owned())
        };
        let mut held = Vec::new();
        if baseline == Baseline::Trailing {
            let fold = folds(base.nrows());
            for f in 0..FOLDS {
                let (train, calib) = (
                    rows(base.view(), &fold, |g| g != f),
                    rows(base.view(), &fold, |g| g == f),
                );
                if calib.nrows() == 0 || train.nrows() < 2 {
                    continue;
                }
                if let Ok(m) = fit_one(&set, name, train.view()) {
                    held.extend(m.score_many(calib.view()).iter().copied());
                }
            }
        }
        let thr = model.threshold().max(percentile(&held, PERCENTILE));
        detectors.push((model, thr));
    }
    if detectors.is_empty() {
        return None;
    }
    Some(Fitted {
        detectors,
        width: x.ncols(),
        at_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimming_drops_far_out_windows_but_never_the_bulk() {
        // 1000 ordinary scores, and a burst of 12 windows far above them.
        let mut scores: Vec<f64> = (0..1000).map(|i| 1.0 + (i % 10) as f64 * 0.1).collect();
        scores.extend(std::iter::repeat_n(50.0, 12));
        let keep = trimmed_rows(&scores);
        assert_eq!(keep.len(), 1000);
        assert!(keep.iter().all(|&i| i < 1000));
        // A routine pattern in 30% of the windows is inside the fence: the host's normal.
        let mut routine: Vec<f64> = vec![1.0; 700];
        routine.extend(std::iter::repeat_n(9.0, 300));
        assert_eq!(trimmed_rows(&routine).len(), 1000);
        // More than 2% beyond the fence (a recurring pattern): only the highest 2% goes.
        let mut many: Vec<f64> = vec![1.0; 950];
        many.extend((0..50).map(|i| 100.0 + i as f64));
        let keep = trimmed_rows(&many);
        assert_eq!(keep.len(), 980);
        assert!(keep[..950].iter().enumerate().all(|(i, &k)| i == k));
        assert_eq!(keep[979], 979);
        // Nothing beyond the fence: everything stays.
        assert_eq!(trimmed_rows(&[1.0, 2.0, 3.0, 4.0]).len(), 4);
    }

    #[test]
    fn folds_deal_blocks_in_turn() {
        let f = folds(400);
        assert_eq!(f.iter().filter(|x| **x == 3).count(), 100);
        assert!(f[60..80].iter().all(|x| *x == 3) && f[80] == 0);
        assert_eq!(folds(8), [0, 1, 2, 3, 0, 1, 2, 3]);
        assert!(folds(0).is_empty());
    }

    #[test]
    fn quiet_unseen_windows_stay_below_the_calibrated_thresholds() {
        // 300 baseline windows of 200 noisy features (more features than a quarter of the
        // windows), then 200 new windows from the same distribution.
        let mut s: u64 = 7;
        let mut noise = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        let base = Array2::from_shape_fn((300, 200), |_| noise());
        let f = fit(base.view(), 1, 0).expect("fitted");
        let fresh = Array2::from_shape_fn((200, 200), |_| noise());
        for (d, thr) in &f.detectors {
            let flagged = fresh
                .rows()
                .into_iter()
                .filter(|r| d.score(*r) > *thr)
                .count();
            // 1% contamination by design; allow sampling noise, not "everything".
            assert!(
                flagged <= 12,
                "{}: {flagged} of 200 quiet windows flagged",
                d.name()
            );
        }
        // And a window far off the baseline is flagged by every detector.
        let mut spike = fresh.row(0).to_owned();
        for j in 0..10 {
            spike[j] = 25.0;
        }
        for (d, thr) in &f.detectors {
            assert!(
                d.score(spike.view()) > *thr,
                "{} misses the spike",
                d.name()
            );
        }
    }
}
