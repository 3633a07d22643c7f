//! Regime changes in an offline analysis (DESIGN pipeline step 8): a workload that starts
//! or stops during the recording is reported once, as a regime change, not as anomalies.
//!
//! Offline the detectors are fitted on the whole run, whose baseline already holds every
//! regime, so they cannot say whether a window is anomalous *against the old regime* (the
//! online loop's judge, [`crate::core::regime`] step 4). Here every window is offered to the
//! [`RegimeTracker`] as a candidate, and its test of a shift that is large (4σ of the old
//! regime), persistent (`RegimeParams::min_regime` windows, a minute by default) and stable
//! (no drift, the new level standing out of the new spread) alone decides. Flagged windows that straddle a change's start (within one
//! window length of it) are the change itself, seen by the detectors as one odd window of
//! mixed levels: they are counted on the change and taken out of the anomalous windows.

use ndarray::Array2;
use serde::Serialize;

use crate::core::regime::{RegimeChange, RegimeParams, RegimeTracker, RegimeWindow};

/// One regime change of a host, for the reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegimeReport {
    pub host: String,
    #[serde(flatten)]
    pub change: RegimeChange,
    /// `channel__feature` of each entry of `change.columns`, in the same order.
    pub column_names: Vec<String>,
    /// In plain language ([`RegimeChange::describe`]).
    pub summary: String,
    /// Flagged windows at the change's start, counted here rather than as anomalies.
    pub absorbed_windows: usize,
}

/// Runs a tracker over the rows of `x` (windows × scored feature columns, in window order,
/// `ends` their end times); `name(j)` names column `j`.
pub fn regime_changes(
    host: &str,
    ends: &[i64],
    x: &Array2<f64>,
    name: impl Fn(usize) -> String,
    params: RegimeParams,
) -> Vec<RegimeReport> {
    let Ok(mut tracker) = RegimeTracker::new(params) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut row = Vec::with_capacity(x.ncols());
    for (i, &end_ms) in ends.iter().enumerate().take(x.nrows()) {
        row.clear();
        row.extend(x.row(i).iter().copied());
        let w = RegimeWindow {
            end_ms,
            flagged: true,
            row: &row,
        };
        if let Some(change) = tracker.observe(w) {
            let column_names = change.columns.iter().map(|c| name(c.column)).collect();
            out.push(RegimeReport {
                host: host.to_string(),
                summary: change.describe(&name),
                column_names,
                change,
                absorbed_windows: 0,
            });
        }
    }
    out
}

/// Whether a window ending at `end_ms` straddles the start of `r` (windows are `window_ms`
/// long; the change's start is the end of the new regime's first window).
pub fn straddles(r: &RegimeReport, end_ms: i64, window_ms: i64) -> bool {
    let s = r.change.start_ms;
    end_ms > s - window_ms && end_ms < s + window_ms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_persistent_step_is_one_change_and_noise_is_none() {
        let mut s: u64 = 3;
        let mut noise = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        // 160 windows of 6 columns; columns 0 and 1 step up by 20σ at window 60.
        let x = Array2::from_shape_fn((160, 6), |(i, j)| {
            let level = if j < 2 && i >= 60 { 20.0 } else { 0.0 };
            10.0 + level + noise()
        });
        let ends: Vec<i64> = (0..160).map(|i| 1_000 * (i + 1)).collect();
        let found = regime_changes("h", &ends, &x, |j| format!("c{j}"), RegimeParams::default());
        assert_eq!(found.len(), 1, "{found:#?}");
        let r = &found[0];
        assert_eq!(r.change.start_ms, 61_000);
        assert_eq!(r.column_names.len(), 2);
        assert!(
            r.summary.contains("c0") || r.summary.contains("c1"),
            "{}",
            r.summary
        );
        assert!(straddles(r, 60_000, 3_000) && !straddles(r, 64_000, 3_000));

        let quiet = Array2::from_shape_fn((160, 6), |_| 10.0 + noise());
        assert!(regime_changes(
            "h",
            &ends,
            &quiet,
            |j| format!("c{j}"),
            RegimeParams::default()
        )
        .is_empty());
    }
}
