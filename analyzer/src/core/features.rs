//! Per-channel, per-window features with tsfresh's names and definitions (paper §4.2).
//!
//! - **dynamic** channels: mean, variance, standard deviation, minimum, maximum, skewness,
//!   kurtosis, linear trend (slope, intercept, r-value), autocorrelation at lag 1, mean
//!   absolute change, and (optional, the expensive one) the augmented Dickey–Fuller statistic
//!   (or its p-value, which the default detectors score);
//! - **event** channels: sum of values (the events in the window) and maximum (the burst);
//! - **static** channels: mean only, kept for cross-host comparison and left out of
//!   single-host detection by [`FeatureMatrix::scored_columns`].
//!
//! Features are computed on a channel's *finite* samples in the window, in time order,
//! exactly as tsfresh computes them on the series with its NaN rows dropped (tsfresh itself
//! returns NaN for any gap). A channel with fewer than the window's minimum of samples gets
//! NaN for all its features in that window. `tests/tsfresh_parity.rs` checks every value
//! against tsfresh on committed fixtures; known, deliberate differences:
//! - a constant series has mean equal to its value and variance exactly 0, where numpy's
//!   rounded sum can be an ulp off and leave a variance of ~1e-34 (and then a meaningless
//!   r-value); only exactly summable constants are in the fixtures;
//! - ADF: where the level regressor is collinear with the lags, or the fit is perfect (a
//!   strictly alternating series), NaN: statsmodels returns an unidentified coefficient or
//!   a t-value of ~1e16 made of rounding noise there;
//! - ADF on series far from zero (1e12 ± 1): statsmodels' pseudo-inverse drops the level
//!   direction as rank-deficient and returns a meaningless value; ours is the value of the
//!   same test on the series shifted by its first sample (equal in exact arithmetic), and
//!   the reference file records both (`tsfresh_unstable`).
//!
//! ```
//! use reveal_analyzer::core::features::{Adf, Stats};
//!
//! let x = [1.0, 2.0, 4.0, 3.0, 5.0, 4.0, 6.0, 5.0];
//! let s = Stats::of(&x);
//! assert_eq!(s.mean, 3.75);
//! assert!(s.slope > 0.0 && s.rvalue > 0.8);
//! // Too short for the ADF lag search: NaN, as tsfresh returns.
//! assert!(Adf::new().teststat(&x[..3]).is_nan());
//! ```

pub mod adf;
pub mod calc;

use ndarray::Array2;
use serde::Serialize;

use crate::core::matrix::{Channel, HostMatrix, Kind, Subsystem};
use crate::core::window::{Window, WindowConfig, WindowPlan};
pub use adf::Adf;
pub use calc::Stats;

/// One tsfresh feature calculator (with its parameter, where it has one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Feature {
    Mean,
    Variance,
    StandardDeviation,
    Minimum,
    Maximum,
    Skewness,
    Kurtosis,
    LinearTrendSlope,
    LinearTrendIntercept,
    LinearTrendRvalue,
    AutocorrelationLag1,
    MeanAbsChange,
    AdfTeststat,
    /// The ADF test's p-value: the default detectors score it in place of the statistic
    /// ([`FeatureConfig::adf_pvalue`]).
    AdfPvalue,
    SumValues,
}

impl Feature {
    /// Dynamic-channel features without the ADF statistic, in column order.
    pub const DYNAMIC: [Feature; 12] = [
        Feature::Mean,
        Feature::Variance,
        Feature::StandardDeviation,
        Feature::Minimum,
        Feature::Maximum,
        Feature::Skewness,
        Feature::Kurtosis,
        Feature::LinearTrendSlope,
        Feature::LinearTrendIntercept,
        Feature::LinearTrendRvalue,
        Feature::AutocorrelationLag1,
        Feature::MeanAbsChange,
    ];
    pub const EVENT: [Feature; 2] = [Feature::SumValues, Feature::Maximum];
    pub const STATIC: [Feature; 1] = [Feature::Mean];

    /// tsfresh's name after the kind prefix: `variance`, `linear_trend__attr_"slope"`.
    pub fn suffix(self) -> &'static str {
        match self {
            Feature::Mean => "mean",
            Feature::Variance => "variance",
            Feature::StandardDeviation => "standard_deviation",
            Feature::Minimum => "minimum",
            Feature::Maximum => "maximum",
            Feature::Skewness => "skewness",
            Feature::Kurtosis => "kurtosis",
            Feature::LinearTrendSlope => "linear_trend__attr_\"slope\"",
            Feature::LinearTrendIntercept => "linear_trend__attr_\"intercept\"",
            Feature::LinearTrendRvalue => "linear_trend__attr_\"rvalue\"",
            Feature::AutocorrelationLag1 => "autocorrelation__lag_1",
            Feature::MeanAbsChange => "mean_abs_change",
            Feature::AdfTeststat => "augmented_dickey_fuller__attr_\"teststat\"__autolag_\"AIC\"",
            Feature::AdfPvalue => "augmented_dickey_fuller__attr_\"pvalue\"__autolag_\"AIC\"",
            Feature::SumValues => "sum_values",
        }
    }

    /// Whether the feature says where the channel's level is (its mean, extremes, trend
    /// intercept, event count), so that its sign is the direction the channel moved; a spread
    /// or shape (standard deviation, kurtosis, autocorrelation) that rose says nothing of it.
    pub fn is_level(self) -> bool {
        matches!(
            self,
            Feature::Mean
                | Feature::Minimum
                | Feature::Maximum
                | Feature::LinearTrendIntercept
                | Feature::SumValues
        )
    }

    /// tsfresh's column name for a series of kind `value`: `value__variance`.
    pub fn tsfresh_name(self) -> String {
        format!("value__{}", self.suffix())
    }

    /// Plain-language meaning, for claims: "within-window variance".
    pub fn meaning(self) -> &'static str {
        match self {
            Feature::Mean => "mean level",
            Feature::Variance => "within-window variance",
            Feature::StandardDeviation => "standard deviation",
            Feature::Minimum => "minimum",
            Feature::Maximum => "maximum",
            Feature::Skewness => "skewness",
            Feature::Kurtosis => "kurtosis (burstiness)",
            Feature::LinearTrendSlope => "linear trend",
            Feature::LinearTrendIntercept => "trend intercept",
            Feature::LinearTrendRvalue => "trend strength (r)",
            Feature::AutocorrelationLag1 => "lag-1 autocorrelation",
            Feature::MeanAbsChange => "mean absolute change",
            Feature::AdfTeststat => "stationarity statistic (ADF)",
            Feature::AdfPvalue => "stationarity p-value (ADF)",
            Feature::SumValues => "event count",
        }
    }

    fn pick(self, s: &Stats, adf: f64) -> f64 {
        match self {
            Feature::Mean => s.mean,
            Feature::Variance => s.variance,
            Feature::StandardDeviation => s.standard_deviation,
            Feature::Minimum => s.minimum,
            Feature::Maximum => s.maximum,
            Feature::Skewness => s.skewness,
            Feature::Kurtosis => s.kurtosis,
            Feature::LinearTrendSlope => s.slope,
            Feature::LinearTrendIntercept => s.intercept,
            Feature::LinearTrendRvalue => s.rvalue,
            Feature::AutocorrelationLag1 => s.autocorrelation_lag_1,
            Feature::MeanAbsChange => s.mean_abs_change,
            Feature::AdfTeststat => adf,
            Feature::AdfPvalue => adf::pvalue(adf),
            Feature::SumValues => s.sum_values,
        }
    }
}

/// A feature at the precision the analysis keeps it: single precision (about 7 significant
/// digits, far finer than any bar), finite values beyond its range held at its largest. The
/// service's baseline holds each host's windows this way (half the memory of double
/// precision: a wide host's 1,500 features over 1,800 windows), and every window is scored at
/// it, live and in `analyze` alike, so both give the same scores and a feature steady through
/// the baseline is steady to the bit.
pub fn single(v: f64) -> f64 {
    if v.is_finite() {
        v.clamp(-f64::from(f32::MAX), f64::from(f32::MAX)) as f32 as f64
    } else {
        v
    }
}

/// The least meaningful change of `feature` on `channel` (see `Channel::resolution`), over
/// windows of `window`. The extremes move in whole units; a statistic over the window resolves
/// finer, as one unit held for `k` of the window's `n` samples moves it: the mean and the
/// trend's intercept by k/n of it, the sum by k units, the mean absolute change by 1/(n − 1),
/// the standard deviation by about √(k/n) (the variance by the square of that). A gauge's
/// unit can last one sample (k = 1); a per-second rate's unit is one event, which fills a
/// second of samples (k = 1 s / step: ten at 100 ms), so twelve timer softirqs in one second
/// move a 3 s window's mean rate by 4, not by 120 least changes. The shape statistics have no
/// unit, and the trend's slope is per step: none.
pub fn least_change(feature: Feature, channel: &Channel, window: &WindowConfig) -> f64 {
    let resolution = channel.resolution;
    let samples = window.samples().max(2);
    let n = samples as f64;
    let k = if channel.per_second {
        (1000 / window.step_ms.max(1)).clamp(1, samples as i64) as f64
    } else {
        1.0
    };
    match feature {
        Feature::Minimum | Feature::Maximum => resolution,
        Feature::SumValues => resolution * k,
        Feature::Mean | Feature::LinearTrendIntercept => resolution * k / n,
        Feature::MeanAbsChange => resolution / (n - 1.0),
        Feature::StandardDeviation => resolution * (k.min(n / 2.0) / n).sqrt(),
        Feature::Variance => resolution * resolution * k.min(n / 2.0) / n,
        Feature::Skewness
        | Feature::Kurtosis
        | Feature::LinearTrendSlope
        | Feature::LinearTrendRvalue
        | Feature::AutocorrelationLag1
        | Feature::AdfTeststat
        | Feature::AdfPvalue => 0.0,
    }
}

/// Which features to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureConfig {
    /// Compute the ADF test for dynamic channels (about 10× the cost of the rest).
    pub adf: bool,
    /// With `adf`, the column holds the test's p-value instead of its statistic. The default
    /// detectors score the p-value (`DetectorsConfig::adf_pvalue`): the statistic of a
    /// quantized, near-idle rate runs to −50 or −500 when the regression fits almost
    /// exactly, scores as a huge deviation, and says no more than −5 does (stationary,
    /// p ≈ 0). The paper's detectors, and tsfresh parity, use the statistic.
    pub adf_pvalue: bool,
}

impl FeatureConfig {
    /// No ADF column: the cheap features only.
    pub const WITHOUT_ADF: FeatureConfig = FeatureConfig {
        adf: false,
        adf_pvalue: false,
    };
}

impl Default for FeatureConfig {
    fn default() -> Self {
        FeatureConfig {
            adf: true,
            adf_pvalue: false,
        }
    }
}

/// Metadata of one feature column.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Column {
    /// Row of the channel in the source matrix (and in [`FeatureMatrix::channels`]).
    pub channel: usize,
    pub feature: Feature,
    pub subsystem: Subsystem,
    pub kind: Kind,
}

/// Windows × feature columns of one host.
#[derive(Debug, Clone)]
pub struct FeatureMatrix {
    pub host: String,
    pub channels: Vec<Channel>,
    pub columns: Vec<Column>,
    pub windows: Vec<Window>,
    /// `values[[w, c]]`: column `c` in window `windows[w]`; NaN where the channel had too
    /// few samples or the feature is undefined (e.g. skewness of 2 samples).
    pub values: Array2<f64>,
}

impl FeatureMatrix {
    /// `channel__feature`, e.g. `reveal_cpu_busy_ratio{cpu="0"}__variance`.
    pub fn column_name(&self, c: usize) -> String {
        let col = &self.columns[c];
        format!(
            "{}__{}",
            self.channels[col.channel].name,
            col.feature.suffix()
        )
    }

    /// Columns single-host detectors score (dynamic and event channels).
    pub fn scored_columns(&self) -> Vec<usize> {
        (0..self.columns.len())
            .filter(|&c| self.columns[c].kind != Kind::Static)
            .collect()
    }
}

/// The feature columns for a host's channels, in channel order.
pub fn columns_for(channels: &[Channel], cfg: &FeatureConfig) -> Vec<Column> {
    let mut out = Vec::new();
    for (i, ch) in channels.iter().enumerate() {
        let feats: &[Feature] = match ch.kind {
            Kind::Dynamic => &Feature::DYNAMIC,
            Kind::Event => &Feature::EVENT,
            Kind::Static => &Feature::STATIC,
        };
        let adf = (ch.kind == Kind::Dynamic && cfg.adf).then_some(if cfg.adf_pvalue {
            Feature::AdfPvalue
        } else {
            Feature::AdfTeststat
        });
        for &feature in feats.iter().chain(adf.iter()) {
            out.push(Column {
                channel: i,
                feature,
                subsystem: ch.subsystem,
                kind: ch.kind,
            });
        }
    }
    out
}

/// Computes features window by window with reused buffers: nothing is allocated per
/// channel or per window.
#[derive(Debug, Clone)]
pub struct Extractor {
    pub config: FeatureConfig,
    pub window: WindowConfig,
    buf: Vec<f64>,
    adf: Adf,
}

impl Extractor {
    pub fn new(config: FeatureConfig, window: WindowConfig) -> Self {
        Extractor {
            config,
            window,
            buf: Vec::with_capacity(window.samples()),
            adf: Adf::new(),
        }
    }

    /// Features of every planned window of `m`.
    pub fn extract(&mut self, m: &HostMatrix, plan: &WindowPlan) -> FeatureMatrix {
        let columns = columns_for(&m.channels, &self.config);
        let mut values = Array2::from_elem((plan.windows.len(), columns.len()), f64::NAN);
        for (w, row) in plan.windows.iter().zip(values.rows_mut()) {
            let row = row
                .into_slice()
                .expect("rows of a standard-layout array are contiguous");
            self.extract_window(m, w, &columns, row);
        }
        FeatureMatrix {
            host: m.host.clone(),
            channels: m.channels.clone(),
            columns,
            windows: plan.windows.clone(),
            values,
        }
    }

    /// Features of one window into `out` (one value per column of `columns`, which must be
    /// [`columns_for`] of `m`'s channels).
    pub fn extract_window(
        &mut self,
        m: &HostMatrix,
        w: &Window,
        columns: &[Column],
        out: &mut [f64],
    ) {
        let len = self.window.samples();
        let min = self.window.min_samples();
        let mut c = 0;
        while c < columns.len() {
            let ch = columns[c].channel;
            let end = c + columns[c..]
                .iter()
                .take_while(|col| col.channel == ch)
                .count();
            let row = m.values.row(ch);
            self.buf.clear();
            for t in w.first_step..(w.first_step + len).min(row.len()) {
                let v = row[t];
                if v.is_finite() {
                    self.buf.push(v);
                }
            }
            if self.buf.len() < min {
                out[c..end].fill(f64::NAN);
            } else {
                let stats = Stats::of(&self.buf);
                let adf = if columns[c..end]
                    .iter()
                    .any(|col| matches!(col.feature, Feature::AdfTeststat | Feature::AdfPvalue))
                {
                    self.adf.teststat(&self.buf)
                } else {
                    f64::NAN
                };
                for k in c..end {
                    out[k] = columns[k].feature.pick(&stats, adf);
                }
            }
            c = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::matrix::MetricType;
    use crate::core::window::plan_windows;

    fn ch(name: &str, kind: Kind) -> Channel {
        Channel {
            name: name.into(),
            metric: name.into(),
            subsystem: Subsystem::Cpu,
            kind,
            metric_type: MetricType::Gauge,
            resolution: 0.0,
            per_second: false,
            max_rate: None,
        }
    }

    #[test]
    fn one_event_of_a_per_second_rate_fills_a_second_of_samples() {
        // 3 s windows of 100 ms samples; one softirq a second.
        let window = WindowConfig::default();
        let mut gauge = ch("procs", Kind::Dynamic);
        gauge.resolution = 1.0;
        let rate = Channel {
            per_second: true,
            max_rate: None,
            ..gauge.clone()
        };
        let least = |f, c: &Channel| least_change(f, c, &window);
        assert!((least(Feature::Mean, &gauge) - 1.0 / 30.0).abs() < 1e-12);
        assert!((least(Feature::Mean, &rate) - 10.0 / 30.0).abs() < 1e-12);
        assert_eq!(least(Feature::SumValues, &rate), 10.0);
        assert_eq!(least(Feature::SumValues, &gauge), 1.0);
        // The extremes move by one unit either way.
        assert_eq!(least(Feature::Maximum, &rate), 1.0);
        assert_eq!(least(Feature::Maximum, &gauge), 1.0);
        assert!(
            least(Feature::StandardDeviation, &rate) > least(Feature::StandardDeviation, &gauge)
        );
        assert_eq!(least(Feature::Kurtosis, &rate), 0.0);
        // A step of a second or more: one sample holds the event.
        let coarse = WindowConfig {
            step_ms: 1000,
            window_ms: 30_000,
            ..window
        };
        assert!((least_change(Feature::Mean, &rate, &coarse) - 1.0 / 30.0).abs() < 1e-12);
    }

    #[test]
    fn names_follow_tsfresh() {
        assert_eq!(Feature::Variance.tsfresh_name(), "value__variance");
        assert_eq!(
            Feature::LinearTrendSlope.tsfresh_name(),
            "value__linear_trend__attr_\"slope\""
        );
        assert_eq!(
            Feature::AdfTeststat.tsfresh_name(),
            "value__augmented_dickey_fuller__attr_\"teststat\"__autolag_\"AIC\""
        );
        assert_eq!(
            Feature::AutocorrelationLag1.tsfresh_name(),
            "value__autocorrelation__lag_1"
        );
    }

    #[test]
    fn extracts_per_kind_and_skips_sparse_channels() {
        let n = 40;
        let mut values = Array2::from_elem((3, n), f64::NAN);
        for t in 0..n {
            values[[0, t]] = t as f64; // dynamic ramp
            values[[1, t]] = (t % 3) as f64; // events
            if t < 10 {
                values[[2, t]] = 7.0; // static, vanishes
            }
        }
        let m = HostMatrix {
            host: "h".into(),
            start_ms: 0,
            step_ms: 100,
            channels: vec![
                ch("d", Kind::Dynamic),
                ch("e", Kind::Event),
                ch("s", Kind::Static),
            ],
            values,
            non_finite_samples: 0,
        };
        let wc = WindowConfig::default();
        let plan = plan_windows(&m, &wc).unwrap();
        assert_eq!(plan.windows.len(), 2);
        let fm = Extractor::new(FeatureConfig::default(), wc).extract(&m, &plan);
        assert_eq!(fm.columns.len(), 13 + 2 + 1);
        assert_eq!(fm.scored_columns().len(), 15);
        assert_eq!(fm.column_name(13), "e__sum_values");
        // Window 1 covers steps 10..40: ramp 10..39.
        assert_eq!(fm.values[[1, 0]], 24.5);
        assert!((fm.values[[1, 7]] - 1.0).abs() < 1e-12, "slope");
        assert_eq!(fm.values[[1, 13]], 30.0, "ten of each 0,1,2");
        assert!(fm.values[[0, 15]].is_nan(), "10 of 30 samples are too few");
    }

    proptest::proptest! {
        /// Any series, any gaps, any length: no panic, and features are finite or NaN
        /// (never infinite) for values of any ordinary magnitude.
        #[test]
        fn any_window_gives_finite_or_nan(
            rows in proptest::collection::vec(
                proptest::collection::vec(
                    proptest::option::weighted(0.8, -1e9f64..1e9), 30..80),
                1..4),
        ) {
            let n = rows.iter().map(Vec::len).min().unwrap();
            let mut values = Array2::from_elem((rows.len(), n), f64::NAN);
            for (c, r) in rows.iter().enumerate() {
                for t in 0..n {
                    values[[c, t]] = r[t].unwrap_or(f64::NAN);
                }
            }
            let channels = (0..rows.len())
                .map(|i| ch(&format!("c{i}"), [Kind::Dynamic, Kind::Event, Kind::Static][i % 3]))
                .collect();
            let m = HostMatrix {
                host: "h".into(),
                start_ms: 0,
                step_ms: 100,
                channels,
                values,
                non_finite_samples: 0,
            };
            let wc = WindowConfig::default();
            let plan = plan_windows(&m, &wc).unwrap();
            let fm = Extractor::new(FeatureConfig::default(), wc).extract(&m, &plan);
            for v in fm.values.iter() {
                proptest::prop_assert!(!v.is_infinite(), "{v}");
            }
        }
    }
}
