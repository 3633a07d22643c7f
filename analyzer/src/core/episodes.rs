//! Episodes: consecutive flagged windows of a host merged into one incident (DESIGN step 6),
//! so one fault is one finding, not one per overlapping window: offline by
//! [`merge_episodes`] over a run's [`FlaggedWindow`]s, online by the [`tracker`] one window at
//! a time (its open episodes are [`OpenEpisode`]s, which the checkpoint keeps).

pub mod recurring;
pub mod tracker;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::core::features::Feature;
use crate::core::matrix::Subsystem;

/// Quiet windows that close an episode by default: at a 1 s stride an alert resolves
/// 5 s after the last flagged window, and a lull of up to 4 windows inside one fault
/// does not split it into several episodes (the offline `analyze` merges with the same gap).
pub const DEFAULT_CLOSE_AFTER: u32 = 5;

/// One metric–feature pair behind a flagged window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    pub channel: String,
    pub subsystem: Subsystem,
    pub feature: Feature,
    /// tsfresh's feature name, `value__variance`.
    pub feature_name: String,
    /// Detectors that named this pair.
    pub detectors: Vec<String>,
    /// Largest share of a detector's score (0–1).
    pub contribution: f64,
    /// Standardized deviation from the baseline (positive: above).
    pub z: f64,
    /// The feature in this window, and its median over the run's windows.
    pub value: f64,
    pub baseline: f64,
    pub claim: String,
}

/// A window at least one detector flagged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlaggedWindow {
    pub host: String,
    pub window: usize,
    pub start_ms: i64,
    pub end_ms: i64,
    /// Flagging detectors.
    pub detectors: Vec<String>,
    pub agreement: u32,
    pub severity: &'static str,
    /// Every detector's score divided by its threshold (above 1 flags).
    pub scores: BTreeMap<String, f64>,
    /// Share of the evidence per subsystem, largest first.
    pub subsystems: Vec<(Subsystem, f64)>,
    pub evidence: Vec<Evidence>,
}

/// An episode that was open when the checkpoint was written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenEpisode {
    /// Stable id (`host@start`), also the key of its alert.
    pub id: String,
    pub instance: String,
    pub start_ms: i64,
    /// End of the last flagged window.
    pub last_flagged_ms: i64,
    pub peak_agreement: u32,
    /// The heaviest subsystem.
    pub subsystem: String,
    /// Subsystems alerted on, one alert each (fixed for the episode's life: the subsystem is
    /// an alert label).
    #[serde(default)]
    pub subsystems: Vec<String>,
    /// The strongest claim per alerted subsystem (the alert's summary).
    #[serde(default)]
    pub claims: std::collections::BTreeMap<String, String>,
    /// The remediation hint of each alerted subsystem's claim, where there is one.
    #[serde(default)]
    pub hints: std::collections::BTreeMap<String, String>,
    pub severity: String,
    pub summary: String,
    pub description: String,
    pub detectors: String,
    /// How the episode recurs, when it comes back at a steady interval
    /// ([`recurring`]): the host's routine, alerted as `info`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recurring: Option<recurring::Recurrence>,
}

/// One incident on one host.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Episode {
    pub host: String,
    /// First and last flagged window ids.
    pub first_window: usize,
    pub last_window: usize,
    /// Start of the first window, end of the last.
    pub start_ms: i64,
    pub end_ms: i64,
    /// Flagged windows in the episode.
    pub windows: usize,
    pub peak_agreement: u32,
    pub severity: &'static str,
    /// Detectors that flagged any of its windows.
    pub detectors: Vec<String>,
    /// Share of the evidence per subsystem over all its windows, largest first.
    pub subsystems: Vec<(Subsystem, f64)>,
    /// The strongest metric–feature pairs over all its windows.
    pub top_evidence: Vec<TopEvidence>,
    /// The claim of the strongest pair.
    pub summary: String,
}

/// A metric–feature pair summed over an episode's windows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopEvidence {
    pub channel: String,
    pub subsystem: Subsystem,
    pub feature: Feature,
    pub feature_name: String,
    /// Windows that named the pair.
    pub windows: usize,
    /// Sum of its contributions over those windows.
    pub weight: f64,
    /// The deviation of the window where it was largest.
    pub peak_z: f64,
    pub claim: String,
}

/// Evidence pairs kept per episode.
const TOP_EVIDENCE: usize = 5;

/// Merges flagged windows (of one host, in window order) whose ids are at most `gap` apart.
pub fn merge_episodes(flagged: &[FlaggedWindow], gap: usize) -> Vec<Episode> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=flagged.len() {
        let split = i == flagged.len()
            || flagged[i].host != flagged[i - 1].host
            || flagged[i].window > flagged[i - 1].window + gap.max(1);
        if split && start < i {
            out.push(episode(&flagged[start..i]));
            start = i;
        }
    }
    out
}

fn episode(ws: &[FlaggedWindow]) -> Episode {
    let first = &ws[0];
    let last = &ws[ws.len() - 1];
    let peak = ws.iter().map(|w| w.agreement).max().unwrap_or(0);
    let mut detectors: Vec<String> = ws.iter().flat_map(|w| w.detectors.clone()).collect();
    detectors.sort();
    detectors.dedup();
    let mut pairs: BTreeMap<(String, &'static str), (TopEvidence, f64)> = BTreeMap::new();
    for w in ws {
        for e in &w.evidence {
            let key = (e.channel.clone(), e.feature.suffix());
            let entry = pairs.entry(key).or_insert_with(|| (top(e), 0.0));
            entry.0.windows += 1;
            entry.0.weight += e.contribution;
            if e.z.abs() > entry.1 {
                entry.1 = e.z.abs();
                entry.0.peak_z = e.z;
                entry.0.claim = e.claim.clone();
            }
        }
    }
    let mut top_evidence: Vec<TopEvidence> = pairs.into_values().map(|(t, _)| t).collect();
    top_evidence.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    let mut share: BTreeMap<Subsystem, f64> = BTreeMap::new();
    for t in &top_evidence {
        *share.entry(t.subsystem).or_default() += t.weight;
    }
    let total: f64 = share.values().sum();
    let mut subsystems: Vec<(Subsystem, f64)> = share
        .into_iter()
        .map(|(s, v)| (s, if total > 0.0 { v / total } else { 0.0 }))
        .collect();
    subsystems.sort_by(|a, b| b.1.total_cmp(&a.1));
    top_evidence.truncate(TOP_EVIDENCE);
    Episode {
        host: first.host.clone(),
        first_window: first.window,
        last_window: last.window,
        start_ms: first.start_ms,
        end_ms: last.end_ms,
        windows: ws.len(),
        peak_agreement: peak,
        severity: ws
            .iter()
            .map(|w| w.severity)
            .max_by_key(|s| crate::core::episodes::tracker::rank(s))
            .unwrap_or("info"),
        detectors,
        subsystems,
        summary: top_evidence
            .first()
            .map(|t| t.claim.clone())
            .unwrap_or_default(),
        top_evidence,
    }
}

fn top(e: &Evidence) -> TopEvidence {
    TopEvidence {
        channel: e.channel.clone(),
        subsystem: e.subsystem,
        feature: e.feature,
        feature_name: e.feature_name.clone(),
        windows: 0,
        weight: 0.0,
        peak_z: e.z,
        claim: e.claim.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fw(
        window: usize,
        agreement: u32,
        channel: &str,
        sub: Subsystem,
        c: f64,
        z: f64,
    ) -> FlaggedWindow {
        FlaggedWindow {
            host: "h".into(),
            window,
            start_ms: window as i64 * 1000,
            end_ms: window as i64 * 1000 + 3000,
            detectors: ["zscore", "pca", "iforest"][..agreement as usize]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            agreement,
            severity: crate::core::episodes::tracker::severity(agreement, 1.5),
            scores: BTreeMap::new(),
            subsystems: vec![(sub, 1.0)],
            evidence: vec![Evidence {
                channel: channel.into(),
                subsystem: sub,
                feature: Feature::Mean,
                feature_name: Feature::Mean.tsfresh_name(),
                detectors: vec!["zscore".into()],
                contribution: c,
                z,
                value: 1.0,
                baseline: 0.0,
                claim: format!("{channel} z={z}"),
            }],
        }
    }

    #[test]
    fn consecutive_windows_merge_and_gaps_split() {
        let f = vec![
            fw(10, 1, "a", Subsystem::Cpu, 0.5, 3.0),
            fw(11, 3, "a", Subsystem::Cpu, 0.9, 8.0),
            fw(12, 2, "b", Subsystem::Network, 0.2, -4.0),
            fw(20, 1, "c", Subsystem::Storage, 0.7, 5.0),
        ];
        let e = merge_episodes(&f, 1);
        assert_eq!(e.len(), 2);
        assert_eq!(
            (e[0].first_window, e[0].last_window, e[0].windows),
            (10, 12, 3)
        );
        assert_eq!((e[0].start_ms, e[0].end_ms), (10_000, 15_000));
        assert_eq!(e[0].peak_agreement, 3);
        assert_eq!(e[0].severity, "critical");
        assert_eq!(e[0].detectors, ["iforest", "pca", "zscore"]);
        assert_eq!(e[0].subsystems[0].0, Subsystem::Cpu);
        assert_eq!(e[0].top_evidence[0].windows, 2);
        assert_eq!(e[0].top_evidence[0].peak_z, 8.0);
        assert_eq!(e[0].summary, "a z=8");
        assert_eq!(e[1].windows, 1);
        // With a gap of 8, window 20 joins the first episode.
        assert_eq!(merge_episodes(&f, 8).len(), 1);
        assert!(merge_episodes(&[], 1).is_empty());
    }
}
