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

use crate::detect::scale::Scaling;
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

/// The detector set for a baseline of `rows` windows × `cols` features: the defaults, except
/// that the workload-residual standardization of the z-score and the forest needs a baseline
/// wide and long enough to tell the workload's components from the rest. With at most
/// `max_rank` components, a baseline with fewer than twice that many features, or fewer than
/// four windows per component, is explained entirely by them — every residual is then noise
/// and every score near zero. Such baselines (a narrow metric set, a short warm-up) are
/// scaled per feature instead. A [`Baseline::Trailing`] baseline scales with its tails.
pub fn adapted(rows: usize, cols: usize, baseline: Baseline) -> DetectorsConfig {
    let tails = baseline == Baseline::Trailing;
    let robust = if tails {
        Scaling::RobustTails
    } else {
        Scaling::Robust
    };
    let mut set = DetectorsConfig::default();
    for scaling in [
        &mut set.zscore.scaling,
        &mut set.iforest.scaling,
        &mut set.pca.scaling,
    ] {
        *scaling = match *scaling {
            Scaling::Residual { max_rank, .. } if cols < 2 * max_rank || rows < 4 * max_rank => {
                robust
            }
            Scaling::Residual { max_rank, .. } => Scaling::Residual { max_rank, tails },
            Scaling::Robust => robust,
            other => other,
        };
    }
    set
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

/// Fits each detector of `set` on `t`, one by one when the set cannot be fitted together.
fn fit_set(set: &DetectorsConfig, t: ArrayView2<f64>, log: bool) -> Vec<Box<dyn Detector>> {
    match set.fit(t) {
        Ok(d) => d,
        Err(e) => {
            // One detector that cannot fit (too few windows for its subsample, say) must not
            // leave the host unwatched: fit the others alone.
            if log {
                tracing::warn!(error = %e, "detector set not fitted together; fitting one by one");
            }
            let mut d: Vec<Box<dyn Detector>> = Vec::new();
            let mut keep =
                |name: &str, r: Result<Box<dyn Detector>, crate::detect::DetectError>| match r {
                    Ok(m) => d.push(m),
                    Err(e) if log => tracing::warn!(error = %e, "{name} not fitted"),
                    Err(_) => {}
                };
            keep("zscore", set.zscore.fit(t).map(|m| Box::new(m) as _));
            keep("pca", set.pca.fit(t).map(|m| Box::new(m) as _));
            keep("iforest", set.iforest.fit(t).map(|m| Box::new(m) as _));
            d
        }
    }
}

/// [`fit`] with explicit detector parameters.
///
/// The models are fitted on every baseline window. On a [`Baseline::WholeRun`] the windows
/// scored are the ones fitted on, and each detector's own threshold (a percentile of its
/// baseline scores, DESIGN "Detectors") is used. On a [`Baseline::Trailing`] one the windows
/// scored are new, so the thresholds are cross-fitted: each of [`FOLDS`] folds is scored by
/// models fitted on the other folds, so every baseline window gets an out-of-sample score, as
/// a new window will; the threshold is the larger of the detector's own and the same
/// percentile of those scores.
pub fn fit_with(
    x: ArrayView2<f64>,
    set: &DetectorsConfig,
    seed: u64,
    at_ms: i64,
    baseline: Baseline,
) -> Option<Fitted> {
    let set = set.clone().seed(seed);
    let detectors = fit_set(&set, x, true);
    if detectors.is_empty() {
        return None;
    }
    let fold = folds(x.nrows());
    let mut held: Vec<Vec<f64>> = vec![Vec::new(); detectors.len()];
    let folds_used = if baseline == Baseline::Trailing {
        FOLDS
    } else {
        0
    };
    for f in 0..folds_used {
        let (train, calib) = (rows(x, &fold, |g| g != f), rows(x, &fold, |g| g == f));
        if calib.nrows() == 0 || train.nrows() < 2 {
            continue;
        }
        for m in fit_set(&set, train.view(), false) {
            if let Some(k) = detectors.iter().position(|d| d.name() == m.name()) {
                held[k].extend(m.score_many(calib.view()).iter().copied());
            }
        }
    }
    let detectors = detectors
        .into_iter()
        .zip(held)
        .map(|(d, held)| {
            let thr = d.threshold().max(percentile(&held, PERCENTILE));
            (d, thr)
        })
        .collect();
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
    fn residual_scaling_only_where_the_baseline_can_carry_it() {
        let narrow = adapted(1800, 48, Baseline::WholeRun);
        assert_eq!(narrow.zscore.scaling, Scaling::Robust);
        assert_eq!(narrow.iforest.scaling, Scaling::Robust);
        let short = adapted(100, 2100, Baseline::Trailing);
        assert_eq!(short.zscore.scaling, Scaling::RobustTails);
        assert_eq!(short.iforest.scaling, Scaling::RobustTails);
        let run = adapted(1800, 2100, Baseline::WholeRun);
        assert_eq!(run, DetectorsConfig::default());
        let wide = adapted(1800, 2100, Baseline::Trailing);
        let residual = Scaling::Residual {
            max_rank: 64,
            tails: true,
        };
        assert_eq!(wide.zscore.scaling, residual);
        assert_eq!(wide.iforest.scaling, residual);
        // PCA models the workload itself, and shares the z-score's workload model.
        assert_eq!(wide.pca.scaling, Scaling::RobustTails);
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
