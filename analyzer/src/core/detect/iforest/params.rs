use ndarray::{Array1, ArrayView2};
use serde::{Deserialize, Serialize};

use super::IForestModel;
use crate::core::detect::residual::Standardizer;
use crate::core::detect::scale::Scaling;
use crate::core::detect::{check_percentile, DetectError, Fit, ParamError};

/// What the trees split on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForestInput {
    /// Every feature, as scikit-learn does (the splits are invariant to
    /// per-feature scaling, so this is the raw matrix). With thousands of
    /// features and a handful that move, a random split almost never picks
    /// one of them, and the forest scores near chance.
    Features,
    /// Each window's `m` largest robust |z| in descending order: the forest
    /// then isolates windows whose tail of deviations is unusual, whichever
    /// features carry it. Attribution maps a rank back to that window's feature.
    /// Each coordinate is raised to its baseline median (one-sided: a
    /// window calmer than usual is not isolated).
    TopZ { m: usize },
    /// Each window's evidence that its `j` largest deviations moved, for
    /// j = 1..=`m`: Σᵢ≤ⱼ z₍ᵢ₎², the sum of the `j` largest squared robust z
    /// (see [`IForestParams::default`] for why). Attribution shares a split
    /// on coordinate j among those j features by their squares. One-sided
    /// as `TopZ`.
    TopZEvidence { m: usize },
    /// The default: one coordinate per channel, its largest |z| over the channel's features
    /// (channels from [`IForestParams::column_groups`]; without them, one per feature), raised
    /// to its baseline median as `TopZ` is (one-sided). Tens of channels rather than
    /// thousands of features, so a tree's random splits do pick the channels that moved, and
    /// the forest isolates unusual *combinations* of busy channels (both CPUs busy where one
    /// at a time is the routine) that a per-feature score does not see.
    Channels,
}

/// Parameters of the Isolation Forest detector.
///
/// | parameter | [`IForestParams::default`] | [`IForestParams::literal`] |
/// | --- | --- | --- |
/// | `n_trees` | 100 | 100 |
/// | `max_samples` | 256 | 256 |
/// | `scaling` | `Residual { max_rank: 64 }` | `Standard` (no effect on splits) |
/// | `input` | `TopZEvidence { m: 5 }` | `Features` |
/// | `threshold_percentile` | 99 | 99 |
/// | `seed` | 0 | 0 |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IForestParams {
    pub n_trees: usize,
    /// Subsample per tree (ψ); capped at the number of windows.
    pub max_samples: usize,
    /// Standardization before the trees; with `Features` input only `Residual`
    /// changes anything (splits are invariant to per-feature scaling).
    pub scaling: Scaling,
    pub input: ForestInput,
    pub threshold_percentile: f64,
    pub seed: u64,
    /// Least scale per column (see `Scaler::fit_floored`); set by the online analyzer from
    /// what each column measures, never read from a configuration file.
    #[serde(skip)]
    pub column_floors: Option<crate::core::detect::scale::Floors>,
    /// Channel of each column, for `ForestInput::Channels`; set by the analyzer from its
    /// layout, never read from a configuration file.
    #[serde(skip)]
    pub column_groups: Option<std::sync::Arc<[usize]>>,
}

impl Default for IForestParams {
    /// The default of the analyzer (`docs/detection.md`): bulk-scaled features, one
    /// coordinate per channel ([`ForestInput::Channels`]), scikit-learn's forest otherwise.
    fn default() -> Self {
        IForestParams {
            scaling: Scaling::Bulk,
            input: ForestInput::Channels,
            ..IForestParams::literal()
        }
    }
}

impl IForestParams {
    /// The paper's configuration (scikit-learn's defaults, 1% contamination).
    pub fn literal() -> Self {
        IForestParams {
            n_trees: 100,
            max_samples: 256,
            scaling: Scaling::Standard,
            input: ForestInput::Features,
            threshold_percentile: 99.0,
            seed: 0,
            column_floors: None,
            column_groups: None,
        }
    }

    pub fn n_trees(mut self, n: usize) -> Self {
        self.n_trees = n;
        self
    }
    pub fn max_samples(mut self, n: usize) -> Self {
        self.max_samples = n;
        self
    }
    pub fn scaling(mut self, scaling: Scaling) -> Self {
        self.scaling = scaling;
        self
    }
    pub fn input(mut self, input: ForestInput) -> Self {
        self.input = input;
        self
    }
    pub fn threshold_percentile(mut self, q: f64) -> Self {
        self.threshold_percentile = q;
        self
    }
    /// Seed of subsampling and splits; equal seeds give equal forests.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    pub fn check(&self) -> Result<(), ParamError> {
        check_percentile(self.threshold_percentile)?;
        let positive = |name, v: usize| {
            if v == 0 {
                Err(ParamError::OutOfRange {
                    name,
                    range: "[1, ∞)",
                    value: 0.0,
                })
            } else {
                Ok(())
            }
        };
        positive("n_trees", self.n_trees)?;
        positive("max_samples", self.max_samples)?;
        if let ForestInput::TopZ { m } | ForestInput::TopZEvidence { m } = self.input {
            positive("input.top_z.m", m)?;
        }
        if let Scaling::Residual { max_rank, .. } = self.scaling {
            positive("scaling.residual.max_rank", max_rank)?;
        }
        Ok(())
    }
}

impl Fit for IForestParams {
    type Model = IForestModel;

    fn fit(&self, x: ArrayView2<f64>) -> Result<IForestModel, DetectError> {
        Ok(self.fit_scored(x)?.0)
    }

    fn fit_scored(&self, x: ArrayView2<f64>) -> Result<(IForestModel, Array1<f64>), DetectError> {
        self.check()?;
        if x.nrows() < 2 {
            return Err(DetectError::TooFewWindows {
                rows: x.nrows(),
                min: 2,
            });
        }
        let std = Standardizer::fit(x, self.scaling, self.seed, self.column_floors.as_ref())?;
        Ok(IForestModel::fit(self, std, x))
    }
}

impl IForestParams {
    /// Fits with a standardization already fitted on `x` (shared between
    /// detectors of one set).
    pub(crate) fn fit_with(
        &self,
        x: ArrayView2<f64>,
        std: Standardizer,
    ) -> Result<IForestModel, DetectError> {
        self.check()?;
        Ok(IForestModel::fit(self, std, x).0)
    }
}
