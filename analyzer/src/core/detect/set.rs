//! The three detectors as one configuration: the paper's literal set, or the
//! default set built for thousands of features of which a handful move.

use ndarray::ArrayView2;
use serde::{Deserialize, Serialize};

use super::iforest::IForestParams;
use super::pca::PcaParams;
use super::residual::Standardizer;
use super::scale::{Floor, Floors};
use super::zscore::ZScoreParams;
use super::{DetectError, Detector, Fit};
use crate::core::features::{Feature, FeatureConfig};
use crate::core::matrix::Kind;

/// One event: the least scale of an event channel's features (its per-window sum and
/// maximum, in the channel's unit, which counts events per second or per step). Errors,
/// drops and retransmissions are zero on a healthy host; without a floor such a column is
/// constant in the baseline, left out of the model, and its first events go unseen.
pub const ONE_EVENT: f64 = 1.0;

/// The least scale of each column (see [`DetectorsConfig::for_columns`]): `kinds[j]` and
/// `least[j]` are column `j`'s channel kind and least meaningful change.
pub fn floors_for(kinds: &[Kind], least: &[f64]) -> Floors {
    kinds
        .iter()
        .enumerate()
        .map(|(j, &k)| {
            let least = least.get(j).copied().unwrap_or(0.0);
            if k == Kind::Event {
                Floor {
                    scale: least.max(ONE_EVENT),
                    keeps_constant: true,
                    one_move_is_new: false,
                }
            } else {
                Floor {
                    scale: least,
                    keeps_constant: false,
                    one_move_is_new: false,
                }
            }
        })
        .collect()
}

/// Parameters of the three detectors (YAML: `detectors: {zscore: …, pca: …, iforest: …}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DetectorsConfig {
    pub zscore: ZScoreParams,
    pub pca: PcaParams,
    pub iforest: IForestParams,
    /// Whether each detector's baseline is trimmed of its transients before the final fit
    /// (`core::fit::fit_with`); the paper's literal configuration does not trim.
    pub trim: bool,
    /// Consecutive windows over which a score that stays up is also compared with what the
    /// baseline *held* that long (`core::hold`); 0 or 1 turns it off, as in the paper.
    pub hold: usize,
    /// Whether the within-window variance is scored besides the standard deviation, as in the
    /// paper. Off by default: it says what the standard deviation says, squared, so a burst
    /// twice as large as any the baseline reached scores four times as far, and the bursty
    /// channels of a busy host (reads, system time) lead scores with their variance.
    pub variance: bool,
    /// Whether the bars are also at least the threshold percentile of the newest quarter of
    /// the baseline scored by a model fitted on the three quarters before it
    /// (`core::fit::FORWARD`): the windows a trailing model scores in service come after
    /// its baseline, and a host that drifts scores them higher than interleaved folds do.
    pub forward: bool,
    /// Whether the ADF test enters as its p-value rather than its statistic
    /// (`FeatureConfig::adf_pvalue`); the paper scores the statistic.
    pub adf_pvalue: bool,
}

impl Default for DetectorsConfig {
    fn default() -> Self {
        DetectorsConfig {
            zscore: ZScoreParams::default(),
            pca: PcaParams::default(),
            iforest: IForestParams::default(),
            trim: true,
            hold: crate::core::hold::DEFAULT_HOLD,
            variance: false,
            forward: false,
            adf_pvalue: true,
        }
    }
}

impl DetectorsConfig {
    /// The paper's configuration for all three (scikit-learn parity).
    pub fn literal() -> Self {
        DetectorsConfig {
            zscore: ZScoreParams::literal(),
            pca: PcaParams::literal(),
            iforest: IForestParams::literal(),
            trim: false,
            hold: 0,
            variance: true,
            forward: false,
            adf_pvalue: false,
        }
    }

    /// Sets every detector's least scale per column (see `Scaler::fit_floored`).
    pub fn column_floors(mut self, floors: Option<Floors>) -> Self {
        self.zscore.column_floors = floors.clone();
        self.pca.column_floors = floors.clone();
        self.iforest.column_floors = floors;
        self
    }

    /// For a baseline that holds the windows it scores (`analyze`): a column kept from its
    /// first move that moved once only is scored from its least scale ([`Floor::one_move_is_new`]).
    pub fn whole_run(self) -> Self {
        let floors = self.zscore.column_floors.clone().map(|f| {
            f.iter()
                .map(|x| Floor {
                    one_move_is_new: x.keeps_constant,
                    ..*x
                })
                .collect::<Floors>()
        });
        match floors {
            Some(f) => self.column_floors(Some(f)),
            None => self,
        }
    }

    /// Sets the channel of each column (the forest's `Channels` input groups by it).
    pub fn column_groups(mut self, groups: Option<std::sync::Arc<[usize]>>) -> Self {
        self.iforest.column_groups = groups;
        self
    }

    /// Whether columns of `feature` are scored (see [`DetectorsConfig::variance`]).
    pub fn scores(&self, feature: Feature) -> bool {
        self.variance || feature != Feature::Variance
    }

    /// `base` with the ADF test in the form these detectors score
    /// ([`DetectorsConfig::adf_pvalue`]).
    pub fn features(&self, base: FeatureConfig) -> FeatureConfig {
        FeatureConfig {
            adf_pvalue: self.adf_pvalue,
            ..base
        }
    }

    /// Threshold percentile of detector `name` (`zscore`, `pca`, `iforest`).
    pub fn threshold_percentile(&self, name: &str) -> f64 {
        match name {
            "zscore" => self.zscore.threshold_percentile,
            "pca" => self.pca.threshold_percentile,
            _ => self.iforest.threshold_percentile,
        }
    }

    /// Sets what the detectors know of each column from its channel. `kinds[j]`,
    /// `channels[j]` and `least[j]` are column `j`'s channel kind, channel (any numbering) and
    /// least meaningful change (`crate::core::features::least_change`, 0 for none):
    /// - no column is scaled finer than its least change (see [`Floor`]);
    /// - an event channel's columns are never scaled finer than one event (`ONE_EVENT`), and
    ///   are kept when the baseline had none, so that the first event is seen;
    /// - columns of one channel share the forest's coordinate.
    pub fn for_columns(self, kinds: &[Kind], channels: &[usize], least: &[f64]) -> Self {
        let floors = floors_for(kinds, least);
        let any = floors.iter().any(|f| f.scale > 0.0);
        self.column_floors(any.then_some(floors))
            .column_groups(Some(channels.iter().copied().collect()))
    }

    /// Sets every detector's seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.zscore.seed = seed;
        self.pca.seed = seed;
        self.iforest.seed = seed;
        self
    }

    /// Fits z-score, PCA and Isolation Forest, in that order. When the
    /// z-score and the forest ask for the same standardization (the default),
    /// it is fitted once and shared, and so are its components with the PCA
    /// detector when that asks for the same ones (the default again).
    pub fn fit(&self, x: ArrayView2<f64>) -> Result<Vec<Box<dyn Detector>>, DetectError> {
        let (z, f) = (&self.zscore, &self.iforest);
        if z.scaling == f.scaling
            && z.seed == f.seed
            && z.column_floors == f.column_floors
            && x.nrows() >= 3
        {
            z.check()?;
            f.check()?;
            let std = Standardizer::fit(x, z.scaling, z.seed, z.column_floors.as_ref())?;
            let pca = self.pca.fit_sharing(x, std.workload())?;
            Ok(vec![
                Box::new(z.fit_with(x, std.clone())?),
                Box::new(pca),
                Box::new(f.fit_with(x, std)?),
            ])
        } else {
            Ok(vec![
                Box::new(z.fit(x)?),
                Box::new(self.pca.fit(x)?),
                Box::new(f.fit(x)?),
            ])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_round_trip_and_unknown_fields() {
        let c = DetectorsConfig::literal();
        let text = yaml_serde::to_string(&c).unwrap();
        let back: DetectorsConfig = yaml_serde::from_str(&text).unwrap();
        assert_eq!(back, c);
        let partial: DetectorsConfig = yaml_serde::from_str("zscore:\n  aggregate: max\n").unwrap();
        assert_eq!(partial.pca, PcaParams::default());
        assert!(yaml_serde::from_str::<DetectorsConfig>("zscore:\n  agregate: max\n").is_err());
    }

    #[test]
    fn the_default_scores_the_standard_deviation_and_the_paper_also_the_variance() {
        let (default, literal) = (DetectorsConfig::default(), DetectorsConfig::literal());
        assert!(!default.scores(Feature::Variance) && default.scores(Feature::StandardDeviation));
        assert!(literal.scores(Feature::Variance) && literal.scores(Feature::StandardDeviation));
        let on: DetectorsConfig = yaml_serde::from_str("variance: true\n").unwrap();
        assert!(on.scores(Feature::Variance));
    }

    #[test]
    fn the_default_scores_the_adf_p_value_and_the_paper_its_statistic() {
        let base = FeatureConfig::default();
        let (default, literal) = (DetectorsConfig::default(), DetectorsConfig::literal());
        assert!(default.features(base).adf_pvalue && default.features(base).adf);
        assert!(!literal.features(base).adf_pvalue);
        // Whether the test is computed at all stays the caller's (`analyze --no-adf`).
        assert!(!default.features(FeatureConfig::WITHOUT_ADF).adf);
        let off: DetectorsConfig = yaml_serde::from_str("adf_pvalue: false\n").unwrap();
        assert!(!off.features(base).adf_pvalue);
    }

    #[test]
    fn an_event_column_keeps_its_first_event_and_others_only_their_resolution() {
        let floors = floors_for(&[Kind::Event, Kind::Dynamic, Kind::Dynamic], &[0.0, 4096.0]);
        assert_eq!(
            floors[..],
            [
                Floor {
                    scale: ONE_EVENT,
                    keeps_constant: true,
                    one_move_is_new: false
                },
                Floor {
                    scale: 4096.0,
                    keeps_constant: false,
                    one_move_is_new: false
                },
                Floor::default(),
            ]
        );
    }

    #[test]
    fn default_detectors_are_three_models_not_one() {
        // The paper's severity counts independent evidence: no two default detectors may
        // return the same scores (they once shared one model and agreed to the last digit).
        let x = ndarray::Array2::from_shape_fn((300, 24), |(i, j)| {
            ((i * 13 + j * 7) % 19) as f64 + (j as f64).sin() * i as f64 * 0.01
        });
        let set = DetectorsConfig::default().fit(x.view()).unwrap();
        let scores: Vec<_> = set.iter().map(|d| d.score_many(x.view())).collect();
        for a in 0..scores.len() {
            for b in a + 1..scores.len() {
                let same = scores[a]
                    .iter()
                    .zip(scores[b].iter())
                    .filter(|(u, v)| (*u - *v).abs() <= 1e-12 * u.abs().max(1.0))
                    .count();
                assert!(
                    same < x.nrows() / 10,
                    "{} and {} give the same score in {same} of {} windows",
                    set[a].name(),
                    set[b].name(),
                    x.nrows()
                );
            }
        }
    }

    #[test]
    fn bad_input_never_scores_nan() {
        let mut x = ndarray::Array2::from_shape_fn((120, 7), |(i, j)| {
            ((i * 11 + j * 5) % 13) as f64 * (j + 1) as f64
        });
        x.column_mut(1).fill(3.0); // constant
        x.column_mut(2).fill(f64::NAN); // never measured
        for i in (0..120).step_by(7) {
            x[[i, 4]] = f64::INFINITY; // sporadic junk
        }
        let garbage = ndarray::arr1(&[
            -1e308,
            f64::INFINITY,
            f64::NAN,
            0.0,
            f64::NAN,
            1e308,
            1e-300,
        ]);
        for config in [DetectorsConfig::literal(), DetectorsConfig::default()] {
            for d in config.fit(x.view()).unwrap() {
                assert!(
                    d.score_many(x.view()).iter().all(|v| v.is_finite()),
                    "{}",
                    d.name()
                );
                assert!(d.score(garbage.view()).is_finite(), "{}", d.name());
                for a in d.attribute(garbage.view(), 5) {
                    assert!(
                        a.contribution.is_finite() && a.z.is_finite(),
                        "{}",
                        d.name()
                    );
                    assert!(a.feature != 1 && a.feature != 2);
                }
                assert!(d.columns()[2].reason().is_some());
            }
        }
    }

    #[test]
    fn empty_input_is_an_error() {
        let empty = ndarray::Array2::<f64>::zeros((0, 4));
        let narrow = ndarray::Array2::<f64>::zeros((50, 0));
        for config in [DetectorsConfig::literal(), DetectorsConfig::default()] {
            assert!(config.fit(empty.view()).is_err());
            assert!(matches!(
                config.fit(narrow.view()),
                Err(DetectError::NoUsableFeature { .. })
            ));
        }
    }
}
