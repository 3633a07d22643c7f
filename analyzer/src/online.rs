//! The online analysis of `reveal-analyzer run`: what happens to each host's new windows
//! every stride, independent of where the data comes from and where findings go.

pub mod analyze;
pub mod engine;
pub mod group;
pub mod reports;

use serde::Serialize;

use crate::core::episodes::tracker;

pub use engine::{Engine, EngineParams, Status};

/// What became of one window.
// Most windows of a pass are scored (skipped ones are the exception), so boxing the scored
// variant would add an allocation per window to save space on the few skipped ones.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Not scored: `warmup`, `no_data`, `too_few_samples`.
    Skipped {
        end_ms: i64,
        reason: &'static str,
    },
    Scored(WindowScore),
}

impl Outcome {
    pub fn end_ms(&self) -> i64 {
        match self {
            Outcome::Skipped { end_ms, .. } => *end_ms,
            Outcome::Scored(w) => w.end_ms,
        }
    }
}

/// A scored window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowScore {
    pub host: String,
    pub end_ms: i64,
    /// (detector, score / threshold) for every fitted detector.
    pub scores: Vec<(&'static str, f64)>,
    /// Detectors that flagged it.
    pub detectors: Vec<String>,
    pub agreement: u32,
    /// Share of the flagging detectors' attribution per subsystem (all zero if unflagged).
    pub subsystems: Vec<(String, f64)>,
    /// The top claim and all claims, in plain language.
    pub summary: String,
    pub description: String,
    /// (subsystem, its strongest claim), strongest subsystem first.
    pub claims: Vec<(String, String)>,
    /// (subsystem, remediation hint of its strongest claim), where the hint table has one
    /// ([`crate::core::hints`]).
    pub hints: Vec<(String, String)>,
    /// The metric–feature pairs behind the claims and as many again, strongest first: the
    /// flagging detectors that cite each, its share, z, value and (offline) baseline.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<crate::core::episodes::Evidence>,
    /// What the window did to the host's episode: opened, extended or closed it.
    #[serde(skip)]
    pub event: Option<Box<tracker::Event>>,
}

impl WindowScore {
    pub fn verdict(&self) -> tracker::Verdict {
        tracker::Verdict {
            instance: self.host.clone(),
            end_ms: self.end_ms,
            agreement: self.agreement,
            detectors: self.detectors.clone(),
            strength: tracker::strength(&self.scores, &self.detectors),
            ratios: self.scores.iter().map(|(_, r)| *r).collect(),
            subsystems: self.subsystems.clone(),
            summary: self.summary.clone(),
            description: self.description.clone(),
            claims: self.claims.clone(),
            hints: self.hints.clone(),
        }
    }
}
