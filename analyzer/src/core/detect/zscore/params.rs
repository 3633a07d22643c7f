use ndarray::{Array1, ArrayView2};
use serde::{Deserialize, Serialize};

use super::ZScoreModel;
use crate::core::detect::residual::Standardizer;
use crate::core::detect::scale::Scaling;
use crate::core::detect::{check_percentile, DetectError, Fit, ParamError};

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
/// | `scaling` | `Bulk` | `Standard` (mean, std) |
/// | `aggregate` | `TopK(5)` | `Mean` |
/// | `threshold_percentile` | 99 | 99 |
/// | `seed` | 0 | 0 (unused) |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ZScoreParams {
    pub scaling: Scaling,
    pub aggregate: Aggregate,
    pub threshold_percentile: f64,
    /// Seed of the randomized solver behind `Scaling::Residual`.
    pub seed: u64,
    /// Least scale per column (see `Scaler::fit_floored`); set by the online analyzer from
    /// what each column measures, never read from a configuration file.
    #[serde(skip)]
    pub column_floors: Option<crate::core::detect::scale::Floors>,
}

impl Default for ZScoreParams {
    /// Made for the case the paper's mean misses: a fault moves a handful of
    /// features out of thousands. Each feature is measured against the bulk
    /// of its own baseline (`Scaling::Bulk`), and the score is the mean of
    /// the five largest |z|. Five is "a handful"; it is not fitted to data.
    fn default() -> Self {
        ZScoreParams {
            scaling: Scaling::Bulk,
            aggregate: Aggregate::TopK(5),
            threshold_percentile: 99.0,
            seed: 0,
            column_floors: None,
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
            seed: 0,
            column_floors: None,
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

    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    pub fn check(&self) -> Result<(), ParamError> {
        check_percentile(self.threshold_percentile)?;
        let zero = |name| ParamError::OutOfRange {
            name,
            range: "[1, ∞)",
            value: 0.0,
        };
        if let Aggregate::TopK(0) = self.aggregate {
            return Err(zero("aggregate.top_k"));
        }
        if let Scaling::Residual { max_rank: 0, .. } = self.scaling {
            return Err(zero("scaling.residual.max_rank"));
        }
        Ok(())
    }
}

impl Fit for ZScoreParams {
    type Model = ZScoreModel;

    fn fit(&self, x: ArrayView2<f64>) -> Result<ZScoreModel, DetectError> {
        Ok(self.fit_scored(x)?.0)
    }

    fn fit_scored(&self, x: ArrayView2<f64>) -> Result<(ZScoreModel, Array1<f64>), DetectError> {
        self.check()?;
        if x.nrows() < 3 {
            return Err(DetectError::TooFewWindows {
                rows: x.nrows(),
                min: 3,
            });
        }
        let std = Standardizer::fit(x, self.scaling, self.seed, self.column_floors.as_ref())?;
        Ok(ZScoreModel::new(
            std,
            self.aggregate,
            x,
            self.threshold_percentile,
        ))
    }
}

impl ZScoreParams {
    /// Fits with a standardization already fitted on `x` (shared between
    /// detectors of one set).
    pub(crate) fn fit_with(
        &self,
        x: ArrayView2<f64>,
        std: Standardizer,
    ) -> Result<ZScoreModel, DetectError> {
        self.check()?;
        Ok(ZScoreModel::new(std, self.aggregate, x, self.threshold_percentile).0)
    }
}
