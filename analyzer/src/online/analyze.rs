//! `reveal-analyzer analyze`: a recording replayed through the service's engine, fitted once on
//! the whole run ([`Engine::score_in_sample`]), between the offline report's first and last
//! steps ([`crate::core::pipeline::prepare`], [`crate::core::pipeline::conclude`]). A window
//! the service would flag is flagged here with the same detectors, scores and words; the
//! report adds each claim's value against the run's median.

use std::collections::BTreeMap;

use crate::core::episodes::tracker::severity;
use crate::core::matrix::{HostMatrix, Subsystem};
use crate::core::pipeline::{
    conclude, prepare, with_size, AnalyzeParams, Evidence, FlaggedWindow, HostAnalysis,
};
use crate::core::window::Window;
use crate::online::{Engine, EngineParams, WindowScore};

/// Analyzes every host on its own.
pub fn analyze(hosts: &[HostMatrix], p: &AnalyzeParams) -> Vec<HostAnalysis> {
    hosts.iter().map(|m| analyze_host(m, p)).collect()
}

pub fn analyze_host(raw: &HostMatrix, p: &AnalyzeParams) -> HostAnalysis {
    let prepared = match prepare(raw, p) {
        Ok(x) => x,
        Err(done) => return *done,
    };
    let mut out = prepared.out;
    let mut engine = Engine::new(EngineParams::in_sample(
        p.window,
        p.features,
        p.seed,
        p.detectors.clone(),
        p.families.clone(),
    ));
    let scored = match engine.score_in_sample(&prepared.folded, &prepared.plan) {
        Ok(s) => s,
        Err(e) => {
            out.notes.push(e);
            return out;
        }
    };
    out.summary.feature_columns = scored.columns.len();
    for (detector, why) in &scored.not_fitted {
        out.notes.push(format!("{detector} was not fitted: {why}"));
    }
    let left_out = scored.columns_left_out;
    out.summary.columns_left_out = left_out;
    if left_out > 0 {
        out.notes.push(format!(
            "{left_out} of {} feature columns are constant or mostly missing in the run and were not scored",
            scored.columns.len()
        ));
    }
    out.summary.detectors = scored.detectors.clone();
    let windows = &prepared.plan.windows;
    out.flagged = windows
        .iter()
        .zip(&scored.windows)
        .filter(|(_, s)| s.agreement >= 1)
        .map(|(w, s)| flagged_window(w, s))
        .collect();
    let ends: Vec<i64> = windows.iter().map(|w| w.end_ms).collect();
    conclude(&mut out, &ends, &scored.rows, &scored.columns, p);
    out
}

/// The report's record of a window the engine flagged: the service's words, with the value
/// against the baseline the report has at hand ([`with_size`]).
fn flagged_window(w: &Window, s: &WindowScore) -> FlaggedWindow {
    let scores: BTreeMap<String, f64> = s.scores.iter().map(|(d, r)| (d.to_string(), *r)).collect();
    let weakest = s
        .detectors
        .iter()
        .map(|d| scores.get(d).copied().unwrap_or(0.0))
        .fold(f64::INFINITY, f64::min);
    let mut subsystems: Vec<(Subsystem, f64)> = s
        .subsystems
        .iter()
        .filter(|(_, share)| *share > 0.0)
        .filter_map(|(name, share)| Subsystem::parse(name).map(|sub| (sub, *share)))
        .collect();
    subsystems.sort_by(|a, b| b.1.total_cmp(&a.1));
    FlaggedWindow {
        host: s.host.clone(),
        window: w.id,
        start_ms: w.start_ms,
        end_ms: w.end_ms,
        detectors: s.detectors.clone(),
        agreement: s.agreement,
        severity: severity(s.agreement, weakest),
        scores,
        subsystems,
        evidence: s
            .evidence
            .iter()
            .map(|e| Evidence {
                claim: with_size(&e.claim, e.value, e.baseline),
                ..e.clone()
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests;
