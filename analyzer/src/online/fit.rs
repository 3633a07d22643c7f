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

use crate::detect::iforest::IForestParams;
use crate::detect::pca::PcaParams;
use crate::detect::zscore::ZScoreParams;
use crate::detect::{percentile, Detector, Fit};

/// The percentile the detectors flag above (1% contamination, DESIGN "Detectors").
const PERCENTILE: f64 = 99.0;

pub struct Fitted {
    /// Each detector with the threshold used online.
    pub detectors: Vec<(Box<dyn Detector>, f64)>,
    /// Width of the rows the models take.
    pub width: usize,
    pub at_ms: i64,
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

/// Fits zscore, PCA and Isolation Forest (the defaults of the detect module) on `x`
/// (windows × features). A detector that cannot be fitted is left out and logged; `None`
/// when none could.
pub fn fit(x: ArrayView2<f64>, seed: u64, at_ms: i64) -> Option<Fitted> {
    let hold = held_out(x.nrows());
    let (train, calib) = if hold.iter().any(|h| *h) && hold.iter().filter(|h| !**h).count() >= 2 {
        (rows(x, &hold, false), rows(x, &hold, true))
    } else {
        (x.to_owned(), Array2::zeros((0, x.ncols())))
    };
    let mut detectors: Vec<Box<dyn Detector>> = Vec::new();
    let t = train.view();
    match ZScoreParams::default().fit(t) {
        Ok(m) => detectors.push(Box::new(m)),
        Err(e) => tracing::warn!(error = %e, "zscore not fitted"),
    }
    match PcaParams::default().seed(seed).fit(t) {
        Ok(m) => detectors.push(Box::new(m)),
        Err(e) => tracing::warn!(error = %e, "pca not fitted"),
    }
    match IForestParams::default().seed(seed).fit(t) {
        Ok(m) => detectors.push(Box::new(m)),
        Err(e) => tracing::warn!(error = %e, "iforest not fitted"),
    }
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
