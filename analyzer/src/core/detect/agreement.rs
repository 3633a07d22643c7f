//! Cross-detector agreement: how many detectors flag a window is its
//! strength, and sets its severity (paper §4.3, DESIGN "Analyzer" step 4).

use ndarray::{ArrayView1, ArrayView2};
use serde::Serialize;

use super::{relative, Attribution, Detector};

/// Severity of a flagged window from its agreement count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// One detector flags the window.
    Info,
    /// Two detectors agree.
    Warning,
    /// Three (or more) detectors agree.
    Critical,
}

impl Severity {
    /// `None` when no detector flags.
    pub fn from_agreement(agreement: usize) -> Option<Severity> {
        match agreement {
            0 => None,
            1 => Some(Severity::Info),
            2 => Some(Severity::Warning),
            _ => Some(Severity::Critical),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

/// One detector's view of one window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DetectorOutcome {
    pub detector: &'static str,
    pub score: f64,
    pub threshold: f64,
    /// score / threshold: above 1 is flagged.
    pub relative: f64,
    pub flagged: bool,
}

/// All detectors' view of one window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Agreement {
    pub outcomes: Vec<DetectorOutcome>,
    /// Number of detectors that flag the window.
    pub agreement: usize,
    pub severity: Option<Severity>,
}

impl Agreement {
    fn from_scores(detectors: &[Box<dyn Detector>], scores: impl Iterator<Item = f64>) -> Self {
        let outcomes: Vec<DetectorOutcome> = detectors
            .iter()
            .zip(scores)
            .map(|(d, score)| {
                let threshold = d.threshold();
                DetectorOutcome {
                    detector: d.name(),
                    score,
                    threshold,
                    relative: relative(score, threshold),
                    flagged: score > threshold,
                }
            })
            .collect();
        let agreement = outcomes.iter().filter(|o| o.flagged).count();
        Agreement {
            outcomes,
            agreement,
            severity: Severity::from_agreement(agreement),
        }
    }

    /// Names of the detectors that flag the window.
    pub fn flagged_by(&self) -> Vec<&'static str> {
        self.outcomes
            .iter()
            .filter(|o| o.flagged)
            .map(|o| o.detector)
            .collect()
    }
}

/// Scores one window with every detector.
pub fn judge(detectors: &[Box<dyn Detector>], x: ArrayView1<f64>) -> Agreement {
    Agreement::from_scores(detectors, detectors.iter().map(|d| d.score(x)))
}

/// Scores every window (rows) with every detector, batched per detector.
pub fn judge_many(detectors: &[Box<dyn Detector>], x: ArrayView2<f64>) -> Vec<Agreement> {
    let scores: Vec<_> = detectors.iter().map(|d| d.score_many(x)).collect();
    (0..x.nrows())
        .map(|i| Agreement::from_scores(detectors, scores.iter().map(|s| s[i])))
        .collect()
}

/// Attributions of the detectors that flag the window, `top_k` each.
pub fn attribute_flagged(
    detectors: &[Box<dyn Detector>],
    agreement: &Agreement,
    x: ArrayView1<f64>,
    top_k: usize,
) -> Vec<(&'static str, Vec<Attribution>)> {
    detectors
        .iter()
        .zip(&agreement.outcomes)
        .filter(|(_, o)| o.flagged)
        .map(|(d, _)| (d.name(), d.attribute(x, top_k)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::detect::DetectorsConfig;
    use ndarray::Array2;

    #[test]
    fn severity_follows_agreement() {
        assert_eq!(Severity::from_agreement(0), None);
        assert_eq!(Severity::from_agreement(1), Some(Severity::Info));
        assert_eq!(Severity::from_agreement(2), Some(Severity::Warning));
        assert_eq!(Severity::from_agreement(3), Some(Severity::Critical));
    }

    #[test]
    fn an_obvious_outlier_is_critical_and_attributed() {
        let mut x =
            Array2::from_shape_fn((400, 6), |(i, j)| (((i * 37 + j * 11) % 29) as f64).sin());
        x[[3, 4]] = 50.0;
        let detectors = DetectorsConfig::default().fit(x.view()).unwrap();
        let all = judge_many(&detectors, x.view());
        let one = judge(&detectors, x.row(3));
        assert_eq!(all[3].agreement, one.agreement);
        for (a, b) in all[3].outcomes.iter().zip(&one.outcomes) {
            assert!((a.score - b.score).abs() <= 1e-9 * a.score.abs().max(1.0));
        }
        assert_eq!(one.severity, Some(Severity::Critical), "{one:?}");
        let attributions = attribute_flagged(&detectors, &one, x.row(3), 2);
        assert_eq!(attributions.len(), 3);
        assert!(
            attributions.iter().all(|(_, a)| a[0].feature == 4),
            "{attributions:?}"
        );
    }
}
