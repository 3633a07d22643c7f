//! The online loop's cross-host and regime stages (DESIGN pipeline steps 7 and 8), and the
//! alerts they raise.
//!
//! - **Cross-host**: every pass, the engine keeps each scored window's *full* feature row
//!   (static channels included, which single-host detection leaves out) as a [`FullRow`].
//!   [`GroupStage::observe`] lines the rows of all hosts up by window end, builds one
//!   [`crate::core::crosshost::GroupWindow`] per end with [`GroupBuilder`] (all hosts of the
//!   analyzer are one group) and runs the [`CrossHostTracker`]. Its scores become
//!   `reveal_host_deviation{instance,subsystem}` samples; each open finding is a
//!   `RevealHostDeviation` alert (key `deviation/<instance>/<subsystem>`, severity warning,
//!   summary its claim, description its evidence, startsAt when it became persistent),
//!   resolved at the window where the pair left the findings.
//! - **Regimes**: the engine runs a [`crate::core::regime::RegimeTracker`] per host; a change is a
//!   [`RegimeEvent`], sent as one `RevealRegimeChange` alert (severity info) that stays
//!   firing for [`REGIME_ALERT_HOLD_MS`] and then ends by itself.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::core::crosshost::{
    CrossHostParams, CrossHostTracker, GroupBuilder, HostDeviation, ParamError,
};
use crate::core::features::Feature;
use crate::core::matrix::Subsystem;
use crate::core::regime::RegimeChange;
use crate::outputs::alertmanager::Finding;

/// How long a `RevealRegimeChange` alert stays firing: it reports an event, not a state.
pub const REGIME_ALERT_HOLD_MS: i64 = 10 * 60 * 1000;

/// One feature column of a host's window, static channels included.
#[derive(Debug, Clone, PartialEq)]
pub struct FullCol {
    pub channel: String,
    pub feature: Feature,
    pub subsystem: Subsystem,
}

/// Every feature of one host's window (the columns are shared by the windows of one pass).
#[derive(Debug, Clone)]
pub struct FullRow {
    pub host: String,
    pub end_ms: i64,
    pub columns: Arc<[FullCol]>,
    pub values: Vec<f64>,
}

/// A regime change of one host, ready to be alerted.
#[derive(Debug, Clone, PartialEq)]
pub struct RegimeEvent {
    pub host: String,
    /// Subsystem of the most shifted feature.
    pub subsystem: Subsystem,
    pub change: RegimeChange,
    /// [`RegimeChange::describe`] with the features' names.
    pub summary: String,
    /// `channel__feature: before → after (zσ)` for each listed column.
    pub description: String,
}

/// What one pass of the group gives the outputs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroupOutput {
    /// `(instance, subsystem, window end, score)` for `reveal_host_deviation`.
    pub scores: Vec<(String, Subsystem, i64, f64)>,
    /// Findings open after the pass's last window: alerts to send or re-send.
    pub open: Vec<HostDeviation>,
    /// Pairs that left the findings, with the end of the window where they did.
    pub resolved: Vec<(String, Subsystem, i64)>,
}

/// The cross-host tracker of the analyzer's hosts and the findings it has open.
#[derive(Debug, Clone)]
pub struct GroupStage {
    tracker: CrossHostTracker,
    open: BTreeSet<(String, Subsystem)>,
}

impl GroupStage {
    pub fn new(params: CrossHostParams) -> Result<GroupStage, ParamError> {
        Ok(GroupStage {
            tracker: CrossHostTracker::new(params)?,
            open: BTreeSet::new(),
        })
    }

    /// Adds the rows of one pass (any hosts, any windows), window end by window end; ends
    /// with fewer than two hosts compare nothing and are passed over.
    pub fn observe(&mut self, rows: &[FullRow]) -> GroupOutput {
        let mut by_end: BTreeMap<i64, Vec<&FullRow>> = BTreeMap::new();
        for r in rows {
            by_end.entry(r.end_ms).or_default().push(r);
        }
        let mut out = GroupOutput::default();
        for (end_ms, mut rows) in by_end {
            rows.sort_by(|a, b| a.host.cmp(&b.host));
            rows.dedup_by(|a, b| a.host == b.host);
            if rows.len() < 2 {
                continue;
            }
            let mut b = GroupBuilder::new(end_ms);
            for r in &rows {
                b.add_host(
                    &r.host,
                    r.columns
                        .iter()
                        .zip(&r.values)
                        .map(|(c, v)| (c.channel.as_str(), c.feature, c.subsystem, *v)),
                );
            }
            let u = self.tracker.observe(&b.build());
            out.scores
                .extend(u.scores.into_iter().map(|(h, sub, v)| (h, sub, end_ms, v)));
            let now: BTreeSet<(String, Subsystem)> = u
                .findings
                .iter()
                .map(|f| (f.host.clone(), f.subsystem))
                .collect();
            for gone in self.open.difference(&now) {
                out.resolved.push((gone.0.clone(), gone.1, end_ms));
            }
            // A pair that left and came back within the pass is open again.
            out.resolved.retain(|r| !now.contains(&(r.0.clone(), r.1)));
            self.open = now;
            out.open = u.findings;
        }
        out
    }
}

fn at(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)
}

/// The alert key of a host's subsystem deviation.
pub fn deviation_key(host: &str, subsystem: Subsystem) -> String {
    format!("deviation/{host}/{}", subsystem.as_str())
}

/// A `RevealHostDeviation` alert for a finding.
pub fn deviation_finding(f: &HostDeviation) -> Finding {
    let description = f
        .evidence
        .iter()
        .map(|e| e.claim.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    Finding {
        alertname: "RevealHostDeviation",
        instance: f.host.clone(),
        subsystem: f.subsystem.as_str().to_string(),
        severity: "warning",
        summary: f.summary.clone(),
        description,
        detectors: "crosshost".to_string(),
        hint: crate::core::crosshost::explaining(f.subsystem, &f.evidence).map(|(_, h)| h),
        cgroup: None,
        cgroups: None,
        device: None,
        recurrence: None,
        start: at(f.since_ms),
        last_window_end: at(f.last_ms),
    }
}

/// The alert key of a regime change (one per change).
pub fn regime_key(ev: &RegimeEvent) -> String {
    format!("regime/{}/{}", ev.host, ev.change.start_ms)
}

/// A `RevealRegimeChange` alert, and when it ends.
pub fn regime_finding(ev: &RegimeEvent) -> (Finding, SystemTime) {
    let f = Finding {
        alertname: "RevealRegimeChange",
        instance: ev.host.clone(),
        subsystem: ev.subsystem.as_str().to_string(),
        severity: "info",
        summary: ev.summary.clone(),
        description: ev.description.clone(),
        detectors: "regime".to_string(),
        hint: None,
        cgroup: None,
        cgroups: None,
        device: None,
        recurrence: None,
        start: at(ev.change.start_ms),
        last_window_end: at(ev.change.detected_ms),
    };
    (f, at(ev.change.detected_ms + REGIME_ALERT_HOLD_MS))
}

#[cfg(test)]
mod tests;
