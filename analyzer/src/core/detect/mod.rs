//! Unsupervised detectors over a windows × features matrix (paper §4.3).
//!
//! Every detector follows the same shape: a *params* struct (builder methods,
//! documented defaults, `check()`), whose `fit` on a baseline matrix returns a
//! fitted *model* implementing [`Detector`]. A fitted model scores one window
//! (a row of features), knows its threshold (a percentile of its own baseline
//! scores), and explains a score by attributing it to feature columns.
//!
//! Two configurations ([`DetectorsConfig`]):
//! - [`DetectorsConfig::literal`], the paper's: standardized features; mean |z|;
//!   PCA keeping 95% of the variance with the Mahalanobis distance; an
//!   Isolation Forest on all features. Checked against scikit-learn
//!   (`tests/sklearn_parity.rs`). With thousands of features of which a handful
//!   move, the mean dilutes the move, 95% of the variance takes most of the
//!   components, and the forest's random splits almost never pick a moved
//!   feature: all three score near chance on that case (`benches/detectors.rs`).
//! - [`DetectorsConfig::default`], for that case (docs/detection.md): bulk
//!   scaling (each side of the median scaled by the baseline's bulk); the
//!   z-score as the mean of the five largest |z|, so a handful of moved
//!   features stay visible; PCA on the components above the noise edge,
//!   scored by the five largest of its whitened component scores and its
//!   features' standardized residuals; and a forest on one coordinate per
//!   channel. Each fits its own model.
//!
//! Input rules shared by all detectors:
//! - A column that is non-finite in more than half of the baseline rows, or
//!   (numerically) constant, is left out of the model; [`Detector::columns`]
//!   says which and why. Remaining non-finite cells are imputed with the
//!   column's baseline centre, so they contribute nothing to a score.
//! - Scores are finite for every row of the right width, including rows full
//!   of NaN or infinities.
//!
//! ```
//! use ndarray::Array2;
//! use reveal_analyzer::core::detect::{Detector, Fit, zscore::ZScoreParams};
//!
//! // 200 baseline windows × 3 features, deterministic and non-constant.
//! let x = Array2::from_shape_fn((200, 3), |(i, j)| ((i * 7 + j * 13) % 17) as f64);
//! let model = ZScoreParams::literal().fit(x.view()).unwrap();
//! let spike = ndarray::arr1(&[100.0, 8.0, 8.0]);
//! assert!(model.score(spike.view()) > model.threshold());
//! assert_eq!(model.attribute(spike.view(), 1)[0].feature, 0);
//! ```

pub mod error;
pub mod iforest;
pub(crate) mod linalg;
pub mod pca;
pub mod residual;
pub mod scale;
mod set;
pub mod synthetic;
pub mod zscore;

use ndarray::{Array1, ArrayView1, ArrayView2};
use serde::{Deserialize, Serialize};

pub use error::{DetectError, ParamError};
pub use set::{floors_for, DetectorsConfig};

/// One feature's part in a detector's score for one window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// Column index in the matrix the detector was fitted on.
    pub feature: usize,
    /// Non-negative share of this feature in the score; the shares of all
    /// features of one window sum to 1 (0 when the score has no support), so
    /// shares of different detectors can be ranked together.
    pub contribution: f64,
    /// Signed standardized deviation of the window's value from the baseline
    /// centre, in the detector's own scaling (positive: above baseline).
    pub z: f64,
}

/// Why a column takes part in a model or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ColumnStatus {
    /// The column is standardized and scored.
    Used,
    /// More than half of the baseline values were NaN or infinite.
    NonFinite { count: usize },
    /// The baseline spread is zero, or below floating-point noise of its magnitude.
    Constant,
}

impl ColumnStatus {
    /// A short reason for logs and reports; `None` for a used column.
    pub fn reason(&self) -> Option<String> {
        match self {
            ColumnStatus::Used => None,
            ColumnStatus::NonFinite { count } => {
                Some(format!("left out: {count} non-finite baseline values"))
            }
            ColumnStatus::Constant => Some("left out: constant in the baseline".to_string()),
        }
    }
}

/// A fitted detector. Higher scores are more anomalous.
///
/// Object safe, so a pipeline holds `Vec<Box<dyn Detector>>`, and `Send + Sync`,
/// so one fitted model scores windows from several threads.
pub trait Detector: Send + Sync + std::fmt::Debug {
    /// Short stable name: `zscore`, `pca`, `iforest`.
    fn name(&self) -> &'static str;

    /// Width of the rows the model scores (columns of the baseline matrix).
    fn n_features(&self) -> usize;

    /// Anomaly score of one window; finite for any row of width
    /// [`Detector::n_features`] (non-finite cells count as the baseline centre).
    ///
    /// # Panics
    /// On a row of another width, a caller bug: check once with
    /// [`Detector::check_width`] where widths come from data.
    fn score(&self, x: ArrayView1<f64>) -> f64;

    /// Scores of every row.
    fn score_many(&self, x: ArrayView2<f64>) -> Array1<f64> {
        x.rows().into_iter().map(|r| self.score(r)).collect()
    }

    /// Scores above this value are flagged: the configured percentile
    /// (default 99th, i.e. 1% contamination) of the baseline's scores.
    fn threshold(&self) -> f64;

    /// The `top_k` features that drive this window's score, largest share first.
    fn attribute(&self, x: ArrayView1<f64>, top_k: usize) -> Vec<Attribution>;

    /// Per column: used, or left out and why.
    fn columns(&self) -> &[ColumnStatus];

    /// Signed deviation of raw value `v` of column `column` from the baseline centre, in the
    /// scaling of the baseline's columns alone (positive: above); `None` where the model
    /// keeps no such scaling or leaves the column out. Says which way a channel's level
    /// moved when the evidence is its spread or shape.
    fn deviation(&self, _column: usize, _v: f64) -> Option<f64> {
        None
    }

    /// Whether the window is flagged.
    fn flags(&self, x: ArrayView1<f64>) -> bool {
        self.score(x) > self.threshold()
    }

    /// Score relative to the threshold (above 1 is anomalous), the quantity
    /// exported as `reveal_anomaly_score`.
    fn relative_score(&self, x: ArrayView1<f64>) -> f64 {
        relative(self.score(x), self.threshold())
    }

    /// `Ok` when `x` has the fitted width.
    fn check_width(&self, x: ArrayView1<f64>) -> Result<(), DetectError> {
        if x.len() == self.n_features() {
            Ok(())
        } else {
            Err(DetectError::WidthMismatch {
                expected: self.n_features(),
                got: x.len(),
            })
        }
    }
}

/// Params that fit into a [`Detector`] (linfa's `Fit`, without targets).
pub trait Fit {
    type Model: Detector + 'static;

    /// Fits on a baseline: rows are windows, columns features.
    fn fit(&self, x: ArrayView2<f64>) -> Result<Self::Model, DetectError>;

    /// [`Fit::fit`], and the model's scores of its own baseline `x` (what
    /// `score_many(x)` gives). A detector that scores its baseline while fitting (for its
    /// threshold) returns those scores rather than computing them twice.
    fn fit_scored(&self, x: ArrayView2<f64>) -> Result<(Self::Model, Array1<f64>), DetectError> {
        let model = self.fit(x)?;
        let scores = model.score_many(x);
        Ok((model, scores))
    }
}

/// `score / threshold`, guarded so that a zero threshold never yields NaN.
pub fn relative(score: f64, threshold: f64) -> f64 {
    if threshold > 0.0 {
        score / threshold
    } else if score > threshold {
        f64::MAX
    } else {
        0.0
    }
}

/// Rows a detector standardizes or scores at once where that takes matrices as wide as the
/// baseline: a fit's peak memory is its count of baseline-sized copies, and blocks of rows keep
/// these small (docs/benchmarks.md, "Memory per host").
pub(crate) const ROWS_AT_ONCE: usize = 256;

/// The `q`-th percentile (0–100), numpy's linear interpolation: see [`crate::core::stats`].
pub use crate::core::stats::percentile;

/// Checks a threshold percentile parameter.
pub(crate) fn check_percentile(q: f64) -> Result<(), ParamError> {
    if q.is_finite() && q > 0.0 && q < 100.0 {
        Ok(())
    } else {
        Err(ParamError::OutOfRange {
            name: "threshold_percentile",
            range: "(0, 100)",
            value: q,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_matches_numpy_linear() {
        // numpy.percentile([1, 2, 3, 4], 99) == 3.97
        assert!((percentile(&[4.0, 1.0, 3.0, 2.0], 99.0) - 3.97).abs() < 1e-12);
        assert_eq!(percentile(&[f64::NAN, 5.0], 50.0), 5.0);
        assert_eq!(percentile(&[], 99.0), 0.0);
    }

    #[test]
    fn detector_is_object_safe_send_sync() {
        fn assert_send_sync<T: Send + Sync + ?Sized>() {}
        assert_send_sync::<dyn Detector>();
        assert_send_sync::<Box<dyn Detector>>();
    }
}
