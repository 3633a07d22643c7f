//! Offline analysis of a recording (`reveal-analyzer analyze`), paper §4.2–§4.4 and
//! DESIGN "Pipeline per host" steps 1–6: windows → features → detectors (fitted on the
//! whole run) → agreement → attribution → claims → episodes; and step 8, regime changes
//! ([`regimes`]): a persistent, stable shift is reported once, and the windows that straddle
//! it are not anomalies.
//!
//! Bad input never becomes a finding: windows with too few samples are skipped and
//! counted; static channels are left out of detection; NaN features are "at baseline" for
//! the detectors and never named as evidence; a detector score that is not finite does not
//! flag; a host with too few windows for a baseline gets a note instead of findings.
//!
//! ```
//! use reveal_analyzer::core::pipeline::{analyze, AnalyzeParams};
//! use reveal_analyzer::ingest::{csv::parse_csv, SourceOptions};
//!
//! // 20 s of one channel at 100 ms: too short to fit a baseline, which the result says.
//! let mut text = String::from("timestamp,reveal_cpu_busy_ratio\n");
//! for i in 0..200 {
//!     text.push_str(&format!("{}.{},{}\n", 1000 + i / 10, i % 10, 0.5 + 0.01 * (i % 7) as f64));
//! }
//! let hosts = parse_csv(&text, &SourceOptions::default()).unwrap();
//! let result = analyze(&hosts, &AnalyzeParams::default());
//! assert_eq!(result[0].summary.windows_scored, 18);
//! assert!(result[0].flagged.is_empty());
//! assert!(result[0].notes[0].contains("needed to fit a baseline"));
//! ```

mod claims;
pub mod regimes;

use std::collections::BTreeMap;

use ndarray::{Array2, Axis};
use serde::Serialize;

use crate::core::attribution;
use crate::core::detect::{Detector, DetectorsConfig};
use crate::core::episodes::tracker::severity;
use crate::core::episodes::{merge_episodes, Episode};
pub use crate::core::episodes::{Evidence, FlaggedWindow};
use crate::core::families::{fold, FamilyParams, Folded};
use crate::core::features::{least_change, single, Extractor, FeatureConfig, FeatureMatrix};
use crate::core::fit::{fit_with, Baseline};
use crate::core::matrix::{HostMatrix, Kind, Subsystem};
use crate::core::regime::RegimeParams;
use crate::core::score::Scorer;
use crate::core::stats::column_medians;
use crate::core::window::{plan_windows, SkipReason, WindowConfig};
pub use claims::claim;
pub use regimes::RegimeReport;

/// Settings of an offline analysis; every default is the DESIGN's.
#[derive(Debug, Clone)]
pub struct AnalyzeParams {
    pub window: WindowConfig,
    /// Which features; the ADF test takes the form `detectors` scores (`DetectorsConfig::features`).
    pub features: FeatureConfig,
    /// Seed of the randomized detectors (PCA solver, Isolation Forest).
    pub seed: u64,
    /// Evidence pairs kept per detector and window.
    pub top_k: usize,
    /// Windows needed to fit a baseline.
    pub min_windows: usize,
    /// Flagged windows at most this many ids apart join one episode.
    pub episode_gap: usize,
    /// Detector parameters; `None`: the defaults (docs/detection.md).
    pub detectors: Option<DetectorsConfig>,
    /// Regime-change test (step 8); `None` leaves it out.
    pub regime: Option<RegimeParams>,
    /// Device families ([`crate::core::families`]): per-device channels folded.
    pub families: FamilyParams,
}

impl Default for AnalyzeParams {
    fn default() -> Self {
        AnalyzeParams {
            window: WindowConfig::default(),
            features: FeatureConfig::default(),
            seed: 42,
            top_k: 5,
            min_windows: 30,
            episode_gap: crate::core::episodes::DEFAULT_CLOSE_AFTER as usize,
            detectors: None,
            regime: Some(RegimeParams::default()),
            families: FamilyParams::default(),
        }
    }
}

/// Counts of what the analysis saw on one host.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HostSummary {
    /// Grid step; counters are shown as increases per step.
    pub step_ms: i64,
    /// Channels of the recording, and of the host's model once device families are folded
    /// ([`crate::core::families`]).
    pub channels: usize,
    pub families: usize,
    pub model_channels: usize,
    pub dynamic: usize,
    pub event: usize,
    /// Left out of single-host detection.
    pub static_channels: usize,
    pub windows_total: usize,
    pub windows_scored: usize,
    pub skipped_no_data: usize,
    pub skipped_too_few_samples: usize,
    pub feature_columns: usize,
    /// Columns the detectors could not use (constant or mostly NaN in the baseline).
    pub columns_left_out: usize,
    /// Samples dropped as NaN or infinite.
    pub non_finite_samples: usize,
    pub detectors: Vec<String>,
}

/// The result for one host.
#[derive(Debug, Clone, Serialize)]
pub struct HostAnalysis {
    pub host: String,
    pub summary: HostSummary,
    /// Why the analysis is partial or empty, in plain words.
    pub notes: Vec<String>,
    pub flagged: Vec<FlaggedWindow>,
    pub episodes: Vec<Episode>,
    /// Persistent, stable shifts of the host's features, each reported once.
    pub regime_changes: Vec<RegimeReport>,
}

/// Analyzes every host on its own.
pub fn analyze(hosts: &[HostMatrix], p: &AnalyzeParams) -> Vec<HostAnalysis> {
    hosts.iter().map(|m| analyze_host(m, p)).collect()
}

pub fn analyze_host(raw: &HostMatrix, p: &AnalyzeParams) -> HostAnalysis {
    let folded = fold(raw, &p.families);
    let m = &folded.matrix;
    let mut out = HostAnalysis {
        host: m.host.clone(),
        summary: HostSummary {
            step_ms: m.step_ms,
            channels: raw.n_channels(),
            families: folded.families.len(),
            model_channels: m.n_channels(),
            non_finite_samples: m.non_finite_samples,
            ..HostSummary::default()
        },
        notes: Vec::new(),
        flagged: Vec::new(),
        episodes: Vec::new(),
        regime_changes: Vec::new(),
    };
    let s = &mut out.summary;
    for c in &raw.channels {
        match c.kind {
            Kind::Dynamic => s.dynamic += 1,
            Kind::Event => s.event += 1,
            Kind::Static => s.static_channels += 1,
        }
    }
    if s.dynamic + s.event == 0 {
        out.notes
            .push("no dynamic or event channels: nothing to detect on".to_string());
        return out;
    }
    let plan = match plan_windows(m, &p.window) {
        Ok(plan) => plan,
        Err(e) => {
            out.notes.push(e.to_string());
            return out;
        }
    };
    s.windows_scored = plan.windows.len();
    s.windows_total = plan.windows.len() + plan.skipped.len();
    for (_, why) in &plan.skipped {
        match why {
            SkipReason::NoData => s.skipped_no_data += 1,
            SkipReason::TooFewSamples { .. } => s.skipped_too_few_samples += 1,
        }
    }
    if s.windows_total == 0 {
        out.notes.push(format!(
            "the recording is shorter than one window ({} ms)",
            p.window.window_ms
        ));
        return out;
    }
    if plan.windows.len() < p.min_windows {
        out.notes.push(format!(
            "{} complete windows, {} needed to fit a baseline: no detection",
            plan.windows.len(),
            p.min_windows
        ));
        if let Some(hint) = step_hint(m, &p.window) {
            out.notes.push(hint);
        }
        return out;
    }
    let detectors = p.detectors.clone().unwrap_or_default();
    let fm = Extractor::new(detectors.features(p.features), p.window).extract(m, &plan);
    let scored: Vec<usize> = fm
        .scored_columns()
        .into_iter()
        .filter(|&c| detectors.scores(fm.columns[c].feature))
        .collect();
    out.summary.feature_columns = scored.len();
    // At the precision the service keeps (`single`): the same scores offline and live.
    let x = fm.values.select(Axis(1), &scored).mapv(single);
    let set = detectors.for_columns(
        &scored
            .iter()
            .map(|&c| fm.columns[c].kind)
            .collect::<Vec<_>>(),
        &scored
            .iter()
            .map(|&c| fm.columns[c].channel)
            .collect::<Vec<_>>(),
        &scored
            .iter()
            .map(|&c| {
                let col = &fm.columns[c];
                least_change(col.feature, &fm.channels[col.channel], &p.window)
            })
            .collect::<Vec<_>>(),
    );
    // The baseline is the whole recording, the windows scored among it: an event channel's
    // one excursion is the event, not the measure of its spread.
    let set = set.whole_run();
    let fitted = match fit_with(x.view(), &set, p.seed, 0, Baseline::WholeRun) {
        Ok(f) => f,
        Err(e) => {
            out.notes.push(format!("{e} on this host's windows"));
            return out;
        }
    };
    for (detector, why) in &fitted.not_fitted {
        out.notes.push(format!("{detector} was not fitted: {why}"));
    }
    let left_out = (0..scored.len())
        .filter(|&j| {
            fitted.detectors.iter().all(|c| {
                c.model
                    .columns()
                    .get(j)
                    .is_some_and(|c| c.reason().is_some())
            })
        })
        .count();
    out.summary.columns_left_out = left_out;
    if left_out > 0 {
        out.notes.push(format!(
            "{left_out} of {} feature columns are constant or mostly missing in the run and were not scored",
            scored.len()
        ));
    }
    out.summary.detectors = fitted
        .detectors
        .iter()
        .map(|c| c.model.name().to_string())
        .collect();
    let baseline = column_medians(&x);
    let mut scorer = Scorer::new(p.window.stride_ms);
    for (wi, w) in fm.windows.iter().enumerate() {
        let row = x.row(wi);
        let verdict = scorer.score(&fitted, w.end_ms, row);
        let scores: BTreeMap<String, f64> = verdict
            .scores
            .iter()
            .map(|(d, r)| (d.to_string(), *r))
            .collect();
        let flagging: Vec<&dyn Detector> = verdict
            .flagging
            .iter()
            .map(|&i| fitted.detectors[i].model.as_ref())
            .collect();
        if flagging.is_empty() {
            continue;
        }
        let mut evidence = evidence(&fm, &scored, &x, wi, &flagging, &baseline, p.top_k);
        for e in &mut evidence {
            name_device(&folded, e, w.start_ms, w.end_ms);
        }
        out.flagged.push(FlaggedWindow {
            host: m.host.clone(),
            window: w.id,
            start_ms: w.start_ms,
            end_ms: w.end_ms,
            detectors: flagging.iter().map(|d| d.name().to_string()).collect(),
            agreement: flagging.len() as u32,
            severity: severity(
                flagging.len() as u32,
                flagging
                    .iter()
                    .map(|d| scores.get(d.name()).copied().unwrap_or(0.0))
                    .fold(f64::INFINITY, f64::min),
            ),
            scores,
            subsystems: subsystem_shares(&evidence),
            evidence,
        });
    }
    if let Some(rp) = p.regime {
        let ends: Vec<i64> = fm.windows.iter().map(|w| w.end_ms).collect();
        let name = |j: usize| {
            scored.get(j).map_or_else(String::new, |&c| {
                let col = fm.columns[c];
                format!(
                    "{}__{}",
                    fm.channels[col.channel].name,
                    col.feature.suffix()
                )
            })
        };
        out.regime_changes = regimes::regime_changes(&m.host, &ends, &x, name, rp);
        let window_ms = p.window.window_ms;
        for r in &mut out.regime_changes {
            let before = out.flagged.len();
            out.flagged
                .retain(|w| !regimes::straddles(r, w.end_ms, window_ms));
            r.absorbed_windows = before - out.flagged.len();
        }
    }
    out.episodes = merge_episodes(&out.flagged, p.episode_gap);
    out
}

/// When most windows lack samples because the recording is sparser than the grid (a 1 s
/// scrape read on a 100 ms grid), says which step would fit.
fn step_hint(m: &HostMatrix, w: &WindowConfig) -> Option<String> {
    // Fill of each channel between its first and last sample (channels that appear late or
    // vanish early are not sparse), and the typical gap between its samples.
    let (mut cells, mut filled) = (0usize, 0usize);
    let mut gaps = Vec::new();
    for row in m.values.rows().into_iter().take(64) {
        let mut prev: Option<usize> = None;
        for (t, v) in row.iter().enumerate() {
            if v.is_finite() {
                if let Some(p) = prev {
                    cells += t - p;
                    gaps.push(t - p);
                }
                filled += 1;
                prev = Some(t);
            }
        }
    }
    if gaps.is_empty() || (filled as f64) >= w.min_fraction * (cells + 1) as f64 {
        return None;
    }
    gaps.sort_unstable();
    let interval = gaps[gaps.len() / 2] as i64 * m.step_ms;
    Some(format!(
        "only {:.0}% of the {} ms grid holds samples: the recording has one sample every \
         ~{interval} ms; analyze it with that step (--step)",
        100.0 * filled as f64 / (cells + 1) as f64,
        m.step_ms
    ))
}

/// The flagging detectors' top channels, each by its heaviest feature
/// ([`attribution::by_channel`]), merged per column, strongest first. A pair whose value in
/// this window is not finite, or whose attribution is not, is dropped.
fn evidence(
    fm: &FeatureMatrix,
    scored: &[usize],
    x: &Array2<f64>,
    wi: usize,
    flagging: &[&dyn Detector],
    baseline: &[f64],
    top_k: usize,
) -> Vec<Evidence> {
    let mut by_col: BTreeMap<usize, Evidence> = BTreeMap::new();
    for d in flagging {
        let channel_of = |j: usize| scored.get(j).map(|&c| fm.columns[c].channel);
        for a in attribution::by_channel(*d, x.row(wi), top_k, channel_of) {
            let j = a.feature;
            let value = x.get((wi, j)).copied().unwrap_or(f64::NAN);
            if !(value.is_finite() && a.z.is_finite() && a.contribution.is_finite()) {
                continue;
            }
            if a.contribution <= 0.0 {
                continue;
            }
            let Some(&c) = scored.get(j) else { continue };
            let col = fm.columns[c];
            let channel = &fm.channels[col.channel];
            let e = by_col.entry(j).or_insert_with(|| Evidence {
                channel: channel.name.clone(),
                subsystem: col.subsystem,
                feature: col.feature,
                feature_name: col.feature.tsfresh_name(),
                detectors: Vec::new(),
                contribution: 0.0,
                z: a.z,
                value,
                baseline: baseline[j],
                claim: String::new(),
            });
            e.detectors.push(d.name().to_string());
            e.contribution = e.contribution.max(a.contribution);
            // The z a claim states is the largest any flagging detector gives the feature,
            // as the service states it (`online::engine::verdict`).
            if a.z.abs() > e.z.abs() {
                e.z = a.z;
            }
        }
    }
    let mut ev: Vec<Evidence> = by_col.into_values().collect();
    for e in &mut ev {
        e.claim = claim(&e.channel, e.subsystem, e.feature, e.value, e.baseline, e.z);
    }
    ev.sort_by(|a, b| {
        (b.detectors.len(), b.contribution)
            .partial_cmp(&(a.detectors.len(), a.contribution))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    ev.truncate(top_k.max(1) * 2);
    ev
}

/// Evidence on a family channel names the device behind it: its channel becomes the device's,
/// and its claim says where the device stood against its siblings in the window.
fn name_device(folded: &Folded, e: &mut Evidence, start_ms: i64, end_ms: i64) {
    let named = |e: &Evidence, device: &str, sentence: &str| {
        claims::device_claim(
            device,
            e.subsystem,
            sentence,
            &e.channel,
            e.feature,
            e.value,
            e.baseline,
            e.z,
        )
    };
    if let Some((channel, sentence)) = folded.missing(&e.channel, start_ms, end_ms) {
        e.claim = named(e, &channel, &sentence);
        e.channel = channel;
        return;
    }
    let Some(view) = folded.siblings(&e.channel, start_ms, end_ms, e.z >= 0.0) else {
        return;
    };
    let metric = crate::core::claim::parse_channel(&view.channel)
        .0
        .to_string();
    let per_second = folded
        .members
        .channels
        .iter()
        .find(|c| c.name == view.channel)
        .is_some_and(|c| c.per_second);
    e.claim = named(e, &view.channel, &view.sentence(&metric, per_second));
    e.channel = view.channel;
}

/// Share of the evidence's contribution per subsystem, largest first; subsystems whose
/// evidence is all within its usual spread while another's is clear have none
/// ([`attribution::clear_subsystems`]).
pub fn subsystem_shares(ev: &[Evidence]) -> Vec<(Subsystem, f64)> {
    let clear = attribution::clear_subsystems(ev.iter().map(|e| (e.subsystem, e.z)));
    let mut share: BTreeMap<Subsystem, f64> = BTreeMap::new();
    for e in ev.iter().filter(|e| clear.contains(&e.subsystem)) {
        *share.entry(e.subsystem).or_default() += e.contribution;
    }
    let total: f64 = share.values().sum();
    let mut v: Vec<(Subsystem, f64)> = share
        .into_iter()
        .map(|(s, c)| (s, if total > 0.0 { c / total } else { 0.0 }))
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v
}

#[cfg(test)]
mod tests;
