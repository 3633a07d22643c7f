//! Offline analysis of a recording (`reveal-analyzer analyze`), paper §4.2–§4.4 and
//! DESIGN "Pipeline per host" steps 1–6 and 8: what comes before and after the engine.
//! [`prepare`] counts the channels, lays the windows and says in plain words why a recording
//! cannot be analyzed; the service's engine then fits one model on the whole run and scores
//! every window with its own verdict and claims (`online::analyze`); [`conclude`]
//! reports regime changes ([`regimes`]: a persistent, stable shift is reported once, and the
//! windows that straddle it are not anomalies) and merges flagged windows into episodes.
//!
//! Bad input never becomes a finding: windows with too few samples are skipped and
//! counted; static channels are left out of detection; NaN features are "at baseline" for
//! the detectors and never named as evidence; a detector score that is not finite does not
//! flag; a host with too few windows for a baseline gets a note instead of findings.
//!
//! ```
//! use reveal_analyzer::core::pipeline::AnalyzeParams;
//! use reveal_analyzer::ingest::{csv::parse_csv, SourceOptions};
//! use reveal_analyzer::online::analyze::analyze;
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

use ndarray::Array2;
use serde::Serialize;

use crate::core::detect::DetectorsConfig;
use crate::core::episodes::{merge_episodes, Episode};
pub use crate::core::episodes::{Evidence, FlaggedWindow};
use crate::core::families::{fold, FamilyParams, Folded};
use crate::core::features::FeatureConfig;
use crate::core::matrix::{HostMatrix, Kind};
use crate::core::regime::RegimeParams;
use crate::core::window::{plan_windows, SkipReason, WindowConfig, WindowPlan};
pub use claims::with_size;
pub use regimes::RegimeReport;

/// Settings of an offline analysis; every default is the DESIGN's.
#[derive(Debug, Clone)]
pub struct AnalyzeParams {
    pub window: WindowConfig,
    /// Which features; the ADF test takes the form `detectors` scores (`DetectorsConfig::features`).
    pub features: FeatureConfig,
    /// Seed of the randomized detectors (PCA solver, Isolation Forest).
    pub seed: u64,
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

/// A recording ready for the engine: its folded matrix, its windows, and the report so far.
pub struct Prepared {
    pub folded: Folded,
    pub plan: WindowPlan,
    pub out: HostAnalysis,
}

/// Counts what the recording holds and lays its windows; `Err` is the finished report of a
/// recording that cannot be analyzed, its notes saying why.
pub fn prepare(raw: &HostMatrix, p: &AnalyzeParams) -> Result<Prepared, Box<HostAnalysis>> {
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
        return Err(Box::new(out));
    }
    let plan = match plan_windows(m, &p.window) {
        Ok(plan) => plan,
        Err(e) => {
            out.notes.push(e.to_string());
            return Err(Box::new(out));
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
        return Err(Box::new(out));
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
        return Err(Box::new(out));
    }
    Ok(Prepared { folded, plan, out })
}

/// Regime changes over the scored windows' feature `rows` (ends `ends`, columns named
/// `columns`), the flagged windows that straddle one absorbed into it, and the rest merged
/// into episodes.
pub fn conclude(
    out: &mut HostAnalysis,
    ends: &[i64],
    rows: &Array2<f64>,
    columns: &[String],
    p: &AnalyzeParams,
) {
    if let Some(rp) = p.regime {
        let name = |j: usize| columns.get(j).cloned().unwrap_or_default();
        out.regime_changes = regimes::regime_changes(&out.host, ends, rows, name, rp);
        let window_ms = p.window.window_ms;
        for r in &mut out.regime_changes {
            let before = out.flagged.len();
            out.flagged
                .retain(|w| !regimes::straddles(r, w.end_ms, window_ms));
            r.absorbed_windows = before - out.flagged.len();
        }
    }
    out.episodes = merge_episodes(&out.flagged, p.episode_gap);
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
