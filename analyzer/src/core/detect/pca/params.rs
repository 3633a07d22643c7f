use ndarray::{Array1, ArrayView2};
use serde::{Deserialize, Serialize};

use super::PcaModel;
use crate::core::detect::scale::{Scaler, Scaling};
use crate::core::detect::{check_percentile, DetectError, Fit, ParamError};

/// How many principal components span the modelled subspace.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Components {
    /// The fewest components whose explained variance exceeds this fraction
    /// (scikit-learn's `PCA(n_components=0.95)` rule).
    Variance(f64),
    /// Components whose variance stands above the noise: above the
    /// Marchenko–Pastur edge σ²(1 + √(p/n))² of pure noise, with σ² the mean
    /// variance left beyond the first `max_rank` components. At most `max_rank`.
    Signal { max_rank: usize },
}

/// How the eigenvectors are computed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Solver {
    /// Eigen-decomposition of the full covariance (exact; O(p³)).
    Full,
    /// Randomized range finder with the given power iterations (Halko et
    /// al.); used for `Signal` components when there are many features.
    Randomized { power_iters: usize },
}

/// How a window's coordinates become a score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PcaScore {
    /// √Σ tₖ²/λₖ over the kept components: the paper's score.
    Mahalanobis,
    /// Mean of the `k` largest among the whitened component scores tₖ/√λₖ
    /// and the robustly standardized residuals of every feature.
    TopK(usize),
}

/// Parameters of the PCA detector.
///
/// | parameter | [`PcaParams::default`] | [`PcaParams::literal`] |
/// | --- | --- | --- |
/// | `scaling` | `Bulk` | `Standard` |
/// | `components` | `Signal { max_rank: 64 }` | `Variance(0.95)` |
/// | `solver` | `Randomized { power_iters: 2 }` | `Full` |
/// | `score` | `TopK(5)` | `Mahalanobis` |
/// | `threshold_percentile` | 99 | 99 |
/// | `seed` | 0 | 0 |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PcaParams {
    pub scaling: Scaling,
    pub components: Components,
    pub solver: Solver,
    pub score: PcaScore,
    pub threshold_percentile: f64,
    pub seed: u64,
    /// Least scale per column (see `Scaler::fit_floored`); set by the online analyzer from
    /// what each column measures, never read from a configuration file.
    #[serde(skip)]
    pub column_floors: Option<crate::core::detect::scale::Floors>,
}

impl Default for PcaParams {
    fn default() -> Self {
        PcaParams {
            scaling: Scaling::Bulk,
            components: Components::Signal { max_rank: 64 },
            solver: Solver::Randomized { power_iters: 2 },
            score: PcaScore::TopK(5),
            threshold_percentile: 99.0,
            seed: 0,
            column_floors: None,
        }
    }
}

impl PcaParams {
    /// The paper's configuration: standard scaling, 95% variance, Mahalanobis.
    pub fn literal() -> Self {
        PcaParams {
            scaling: Scaling::Standard,
            components: Components::Variance(0.95),
            solver: Solver::Full,
            score: PcaScore::Mahalanobis,
            threshold_percentile: 99.0,
            seed: 0,
            column_floors: None,
        }
    }

    pub fn scaling(mut self, v: Scaling) -> Self {
        self.scaling = v;
        self
    }
    pub fn components(mut self, v: Components) -> Self {
        self.components = v;
        self
    }
    pub fn solver(mut self, v: Solver) -> Self {
        self.solver = v;
        self
    }
    pub fn score(mut self, v: PcaScore) -> Self {
        self.score = v;
        self
    }
    pub fn threshold_percentile(mut self, q: f64) -> Self {
        self.threshold_percentile = q;
        self
    }
    /// Seed of the randomized solver's test matrix.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    pub fn check(&self) -> Result<(), ParamError> {
        check_percentile(self.threshold_percentile)?;
        match self.components {
            Components::Variance(f) if !(f > 0.0 && f <= 1.0) => {
                return Err(ParamError::OutOfRange {
                    name: "components.variance",
                    range: "(0, 1]",
                    value: f,
                })
            }
            Components::Signal { max_rank: 0 } => {
                return Err(ParamError::OutOfRange {
                    name: "components.signal.max_rank",
                    range: "[1, ∞)",
                    value: 0.0,
                })
            }
            _ => {}
        }
        if let Scaling::Residual { .. } = self.scaling {
            return Err(ParamError::Unsupported {
                name: "scaling",
                reason: "the PCA detector models the workload itself; use standard or robust",
            });
        }
        if let PcaScore::TopK(0) = self.score {
            return Err(ParamError::OutOfRange {
                name: "score.top_k",
                range: "[1, ∞)",
                value: 0.0,
            });
        }
        Ok(())
    }
}

impl PcaParams {
    /// Whether `w` holds exactly the components this configuration would fit
    /// (see `PcaModel::from_workload`).
    pub(crate) fn matches_workload(
        &self,
        w: &crate::core::detect::residual::WorkloadModel,
    ) -> bool {
        self.scaling == Scaling::Robust
            && self.column_floors == w.floors
            && self.components
                == (Components::Signal {
                    max_rank: w.max_rank,
                })
            && self.solver
                == (Solver::Randomized {
                    power_iters: crate::core::detect::residual::POWER_ITERS,
                })
            && matches!(self.score, PcaScore::TopK(_))
            && self.seed == w.seed
    }

    /// Fits on a shared workload model when it matches, alone otherwise.
    pub(crate) fn fit_sharing(
        &self,
        x: ArrayView2<f64>,
        w: Option<&crate::core::detect::residual::WorkloadModel>,
    ) -> Result<PcaModel, DetectError> {
        match w {
            Some(w) if self.matches_workload(w) => {
                self.check()?;
                Ok(PcaModel::from_workload(self, w, x))
            }
            _ => self.fit(x),
        }
    }
}

impl Fit for PcaParams {
    type Model = PcaModel;

    fn fit(&self, x: ArrayView2<f64>) -> Result<PcaModel, DetectError> {
        Ok(self.fit_scored(x)?.0)
    }

    fn fit_scored(&self, x: ArrayView2<f64>) -> Result<(PcaModel, Array1<f64>), DetectError> {
        self.check()?;
        if x.nrows() < 3 {
            return Err(DetectError::TooFewWindows {
                rows: x.nrows(),
                min: 3,
            });
        }
        let scaler = Scaler::fit_floored(x, self.scaling, self.column_floors.as_deref())?;
        Ok(PcaModel::fit(self, scaler, x))
    }
}
