//! Fitting the online detectors on a host's baseline windows, with thresholds calibrated on
//! windows the model did not see.
//!
//! A detector's own threshold is a percentile of its scores on the rows it was fitted on.
//! Scored online, new windows are out of sample, and some models (PCA with many features
//! and few windows) give every unseen window a higher score than any seen one: scored
//! against the in-sample threshold, a quiet host would be flagged all the time. So a quarter
//! of the baseline, in interleaved blocks of consecutive windows (windows overlap, so
//! neighbours are not independent), is held out; the threshold used online is the larger of
//! the detector's own and the same percentile of its scores on the held-out windows.

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

/// The detector set for a baseline of `rows` windows × `cols` features: the defaults, except
/// that the workload-residual standardization of the z-score and the forest needs a baseline
/// wide and long enough to tell the workload's components from the rest. With at most
/// `max_rank` components, a baseline with fewer than twice that many features, or fewer than
/// four windows per component, is explained entirely by them — every residual is then noise
/// and every score near zero. Such baselines (a narrow metric set, a short warm-up) are
/// scaled robustly per feature instead.
pub fn adapted(rows: usize, cols: usize) -> DetectorsConfig {
    let mut set = DetectorsConfig::default();
    for scaling in [&mut set.zscore.scaling, &mut set.iforest.scaling] {
        if let Scaling::Residual { max_rank } = *scaling {
            if cols < 2 * max_rank || rows < 4 * max_rank {
                *scaling = Scaling::Robust;
            }
        }
    }
    set
}

/// Indices of the held-out rows: every fourth block, blocks of `n / 20` windows (at least 1).
pub fn held_out(n: usize) -> Vec<bool> {
    let block = (n / 20).max(1);
    (0..n).map(|i| (i / block) % 4 == 3).collect()
}

fn rows(x: ArrayView2<f64>, keep: &[bool], want: bool) -> Array2<f64> {
    let idx: Vec<usize> = (0..x.nrows()).filter(|&i| keep[i] == want).collect();
    x.select(Axis(0), &idx)
}

/// Fits the detector set `set` (z-score, PCA, Isolation Forest) on `x`
/// (windows × features). A detector that cannot be fitted is left out and logged; `None`
/// when none could.
pub fn fit(x: ArrayView2<f64>, seed: u64, at_ms: i64) -> Option<Fitted> {
    fit_with(x, &DetectorsConfig::default(), seed, at_ms)
}

/// [`fit`] with explicit detector parameters.
pub fn fit_with(
    x: ArrayView2<f64>,
    set: &DetectorsConfig,
    seed: u64,
    at_ms: i64,
) -> Option<Fitted> {
    let hold = held_out(x.nrows());
    let (train, calib) = if hold.iter().any(|h| *h) && hold.iter().filter(|h| !**h).count() >= 2 {
        (rows(x, &hold, false), rows(x, &hold, true))
    } else {
        (x.to_owned(), Array2::zeros((0, x.ncols())))
    };
    let t = train.view();
    let set = set.clone().seed(seed);
    let detectors: Vec<Box<dyn Detector>> = match set.fit(t) {
        Ok(d) => d,
        Err(e) => {
            // One detector that cannot fit (too few windows for its subsample, say) must not
            // leave the host unwatched: fit the others alone.
            tracing::warn!(error = %e, "detector set not fitted together; fitting one by one");
            let mut d: Vec<Box<dyn Detector>> = Vec::new();
            match set.zscore.fit(t) {
                Ok(m) => d.push(Box::new(m)),
                Err(e) => tracing::warn!(error = %e, "zscore not fitted"),
            }
            match set.pca.fit(t) {
                Ok(m) => d.push(Box::new(m)),
                Err(e) => tracing::warn!(error = %e, "pca not fitted"),
            }
            match set.iforest.fit(t) {
                Ok(m) => d.push(Box::new(m)),
                Err(e) => tracing::warn!(error = %e, "iforest not fitted"),
            }
            d
        }
    };
    if detectors.is_empty() {
        return None;
    }
    let detectors = detectors
        .into_iter()
        .map(|d| {
            let held: Vec<f64> = d.score_many(calib.view()).to_vec();
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
        let narrow = adapted(1800, 48);
        assert_eq!(narrow.zscore.scaling, Scaling::Robust);
        assert_eq!(narrow.iforest.scaling, Scaling::Robust);
        let short = adapted(100, 2100);
        assert_eq!(short.zscore.scaling, Scaling::Robust);
        let wide = adapted(1800, 2100);
        assert_eq!(
            wide.zscore.scaling,
            DetectorsConfig::default().zscore.scaling
        );
        assert_eq!(wide.pca, DetectorsConfig::default().pca);
    }

    #[test]
    fn a_quarter_is_held_out_in_blocks() {
        let h = held_out(400);
        assert_eq!(h.iter().filter(|x| **x).count(), 100);
        assert!(h[60..80].iter().all(|x| *x) && !h[80]);
        assert_eq!(
            held_out(8),
            [false, false, false, true, false, false, false, true]
        );
        assert!(held_out(0).is_empty());
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
