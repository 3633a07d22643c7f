//! Scoring one window with a fitted detector set: the one scoring step of both the offline
//! `analyze` and the live service. Each detector's score is compared with its bar and, held
//! over the last windows, with its held bar ([`crate::core::hold`]); the window's relative
//! score per detector is the larger of the two ratios, so above 1 means flagged.

use ndarray::ArrayView1;

use crate::core::detect::relative;
use crate::core::fit::Fitted;
use crate::core::hold::Hold;

/// One window's scores.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowScores {
    /// Per detector, in the fitted order: its name and its score relative to its bars
    /// (`reveal_anomaly_score`); above 1, the detector flags the window.
    pub scores: Vec<(&'static str, f64)>,
    /// Indices into [`Fitted::detectors`] of the detectors that flag the window.
    pub flagging: Vec<usize>,
}

impl WindowScores {
    /// How many detectors flag the window.
    pub fn agreement(&self) -> u32 {
        self.flagging.len() as u32
    }
}

/// Scores one host's windows in time order, keeping what the held bars need.
#[derive(Debug, Clone)]
pub struct Scorer {
    stride_ms: i64,
    hold: Hold,
    hold_len: usize,
}

impl Scorer {
    /// For windows `stride_ms` apart.
    pub fn new(stride_ms: i64) -> Scorer {
        Scorer {
            stride_ms,
            hold: Hold::new(0, stride_ms),
            hold_len: 0,
        }
    }

    /// Scores the window ending at `end_ms` (features `x`, as many as the models take) with
    /// `f`. Windows must come in time order; one that does not follow the last by one stride
    /// starts the held scores afresh.
    pub fn score(&mut self, f: &Fitted, end_ms: i64, x: ArrayView1<f64>) -> WindowScores {
        if f.hold != self.hold_len {
            self.hold = Hold::new(f.hold, self.stride_ms);
            self.hold_len = f.hold;
        }
        let raw: Vec<f64> = f.detectors.iter().map(|c| c.model.score(x)).collect();
        let held_relative: Vec<f64> = f
            .detectors
            .iter()
            .zip(&raw)
            .map(|(c, &s)| c.held.map_or(0.0, |h| finite_relative(s, h)))
            .collect();
        let held = self.hold.push(end_ms, &held_relative);
        let mut scores = Vec::with_capacity(raw.len());
        let mut flagging = Vec::new();
        for (i, (c, &s)) in f.detectors.iter().zip(&raw).enumerate() {
            let now = finite_relative(s, c.threshold);
            let held = held.as_ref().map_or(0.0, |h| h[i]);
            let r = now.max(held);
            if r > 1.0 {
                flagging.push(i);
            }
            scores.push((c.model.name(), r));
        }
        WindowScores { scores, flagging }
    }
}

/// `score / bar` ([`relative`]), 0 for a score that is not a number.
fn finite_relative(score: f64, bar: f64) -> f64 {
    if score.is_finite() {
        relative(score, bar)
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::detect::DetectorsConfig;
    use crate::core::fit::{fit_with, Baseline};
    use ndarray::Array2;

    /// A quiet baseline of 600 windows of 12 features, with a large blip every 60 windows
    /// (3 windows each, the way 3 s windows see a 100 ms spike), in one of 6 features in turn:
    /// ordinary, short, and larger than anything that holds.
    fn blippy(n: usize) -> Array2<f64> {
        let mut s: u64 = 5;
        let mut noise = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        Array2::from_shape_fn((n, 12), |(i, j)| {
            let blip = j < 6 && i % 60 < 3 && (i / 60) % 6 == j;
            noise() + if blip { 12.0 } else { 0.0 }
        })
    }

    #[test]
    fn a_moderate_shift_that_holds_is_flagged_where_one_window_of_it_is_not() {
        let base = blippy(600);
        let f = fit_with(
            base.view(),
            &DetectorsConfig::default(),
            1,
            0,
            Baseline::WholeRun,
        )
        .expect("fitted");
        assert!(f.detectors.iter().all(|c| c.held.is_some()));
        // Four other features up by 2 (far less than a blip), held for 10 windows.
        let mut shifted = base.row(20).to_owned();
        for j in 6..10 {
            shifted[j] += 2.0;
        }
        let z = f
            .detectors
            .iter()
            .position(|c| c.model.name() == "zscore")
            .unwrap();
        let mut sc = Scorer::new(1000);
        let verdicts: Vec<WindowScores> = (1..=10)
            .map(|k| sc.score(&f, k * 1000, shifted.view()))
            .collect();
        assert!(
            !verdicts[0].flagging.contains(&z),
            "one window of it is within the blips: {:?}",
            verdicts[0]
        );
        assert!(
            verdicts[9].flagging.contains(&z),
            "held for 10 windows, it is beyond what the baseline held: {:?}",
            verdicts[9]
        );
        // Off (the paper's configuration): never flagged by holding.
        let off = DetectorsConfig {
            hold: 0,
            ..DetectorsConfig::default()
        };
        let f = fit_with(base.view(), &off, 1, 0, Baseline::WholeRun).expect("fitted");
        assert!(f.detectors.iter().all(|c| c.held.is_none()));
        let mut sc = Scorer::new(1000);
        let last = (1..=10)
            .map(|k| sc.score(&f, k * 1000, shifted.view()))
            .last()
            .unwrap();
        assert!(!last.flagging.contains(&z), "{last:?}");
        // The baseline's own windows, scored in order: the held bar adds at most 1% of them
        // to what the instant bar flags.
        let flagged = |config: &DetectorsConfig| {
            let f = fit_with(base.view(), config, 1, 0, Baseline::WholeRun).unwrap();
            let mut sc = Scorer::new(1000);
            (0..base.nrows())
                .filter(|&i| {
                    sc.score(&f, i as i64 * 1000, base.row(i))
                        .flagging
                        .contains(&z)
                })
                .count()
        };
        let (with, without) = (flagged(&DetectorsConfig::default()), flagged(&off));
        assert!(
            with <= without + 6,
            "{with} of 600 with holds, {without} without"
        );
    }

    #[test]
    fn a_short_baseline_sets_no_held_bar() {
        let f = fit_with(
            blippy(300).view(),
            &DetectorsConfig::default(),
            1,
            0,
            Baseline::Trailing,
        )
        .unwrap();
        assert!(f.detectors.iter().all(|c| c.held.is_none()));
    }
}
