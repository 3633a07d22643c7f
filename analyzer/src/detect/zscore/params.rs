use ndarray::ArrayView2;
use serde::{Deserialize, Serialize};

use super::ZScoreModel;
use crate::detect::scale::{Scaler, Scaling};
use crate::detect::{check_percentile, DetectError, Fit, ParamError};

/// How per-feature |z| values become one window score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregate {
    /// Mean |z| over all used features: the paper's score. Dilutes a move of a
    /// few features among thousands.
    Mean,
    /// Mean of the `k` largest |z|: keeps a move of a handful of features
    /// visible, yet less noisy than the single largest.
    TopK(usize),
    /// The largest |z|.
    Max,
}

/// Parameters of the z-score detector.
///
/// | parameter | [`ZScoreParams::default`] | [`ZScoreParams::literal`] |
/// | --- | --- | --- |
/// | `scaling` | `Robust` (median, MAD) | `Standard` (mean, std) |
/// | `aggregate` | `TopK(5)` | `Mean` |
/// | `threshold_percentile` | 99 | 99 |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ZScoreParams {
    pub scaling: Scaling,
    pub aggregate: Aggregate,
    pub threshold_percentile: f64,
}

impl Default for ZScoreParams {
    /// Made for the case the paper's score misses: a fault moves a handful of
    /// features out of thousands. Five is "a handful"; it is not fitted to data.
    fn default() -> Self {
        ZScoreParams {
            scaling: Scaling::Robust,
            aggregate: Aggregate::TopK(5),
            threshold_percentile: 99.0,
        }
    }
}

impl ZScoreParams {
    /// The paper's configuration: standard scaling, mean |z|, 99th percentile.
    pub fn literal() -> Self {
        ZScoreParams {
            scaling: Scaling::Standard,
            aggregate: Aggregate::Mean,
            threshold_percentile: 99.0,
        }
    }

    pub fn scaling(mut self, scaling: Scaling) -> Self {
        self.scaling = scaling;
        self
    }

    pub fn aggregate(mut self, aggregate: Aggregate) -> Self {
        self.aggregate = aggregate;
        self
    }

    /// Percentile (0–100, exclusive) of baseline scores used as the threshold.
    pub fn threshold_percentile(mut self, q: f64) -> Self {
        self.threshold_percentile = q;
        self
    }

    pub fn check(&self) -> Result<(), ParamError> {
        check_percentile(self.threshold_percentile)?;
        if let Aggregate::TopK(k) = self.aggregate {
            if k == 0 {
                return Err(ParamError::OutOfRange {
                    name: "aggregate.top_k",
                    range: "[1, ∞)",
                    value: 0.0,
                });
            }
        }
        Ok(())
    }
}

impl Fit for ZScoreParams {
    type Model = ZScoreModel;

    fn fit(&self, x: ArrayView2<f64>) -> Result<ZScoreModel, DetectError> {
        self.check()?;
        if x.nrows() < 2 {
            return Err(DetectError::TooFewWindows {
                rows: x.nrows(),
                min: 2,
            });
        }
        let scaler = Scaler::fit(x, self.scaling)?;
        Ok(ZScoreModel::new(
            scaler,
            self.aggregate,
            x,
            self.threshold_percentile,
        ))
    }
}
