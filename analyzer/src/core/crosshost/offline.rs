//! Offline use: the windows of an analysis of several hosts lined up on the stride grid,
//! and the tracker run over all of them.

use std::collections::{BTreeMap, HashMap};

use super::{
    ColumnKey, CrossHostParams, CrossHostTracker, GroupColumn, GroupWindow, HostDeviation,
    ParamError,
};
use crate::core::features::{Feature, FeatureMatrix};
use crate::core::matrix::Subsystem;

/// Builds one [`GroupWindow`] from each host's values, for the online loop: every host adds
/// its `(channel, feature, subsystem, value)` for the window ending at `end_ms` (static
/// channels included), in any order; channel-features a host lacks are NaN for it.
#[derive(Debug, Default)]
pub struct GroupBuilder {
    end_ms: i64,
    hosts: Vec<String>,
    index: HashMap<ColumnKey, usize>,
    columns: Vec<GroupColumn>,
}

impl GroupBuilder {
    pub fn new(end_ms: i64) -> GroupBuilder {
        GroupBuilder {
            end_ms,
            ..GroupBuilder::default()
        }
    }

    pub fn add_host<'a>(
        &mut self,
        host: &str,
        values: impl IntoIterator<Item = (&'a str, Feature, Subsystem, f64)>,
    ) {
        let h = self.hosts.len();
        self.hosts.push(host.to_string());
        for c in &mut self.columns {
            c.values.push(f64::NAN);
        }
        for (channel, feature, subsystem, v) in values {
            let key = ColumnKey {
                channel: channel.to_string(),
                feature,
            };
            let i = match self.index.get(&key) {
                Some(&i) => i,
                None => {
                    self.index.insert(key.clone(), self.columns.len());
                    self.columns.push(GroupColumn {
                        key,
                        subsystem,
                        values: vec![f64::NAN; h + 1],
                    });
                    self.columns.len() - 1
                }
            };
            self.columns[i].values[h] = v;
        }
    }

    pub fn build(self) -> GroupWindow {
        GroupWindow {
            end_ms: self.end_ms,
            hosts: self.hosts,
            columns: self.columns,
        }
    }
}

/// Lines up the windows of several hosts (their feature matrices, from one analysis) on the
/// stride grid by window end, for [`CrossHostTracker::observe`]. Windows a host lacks leave
/// its values NaN; only windows with at least two hosts are returned.
pub fn group_windows(hosts: &[FeatureMatrix], stride_ms: i64) -> Vec<GroupWindow> {
    let stride = stride_ms.max(1);
    let names: Vec<String> = hosts.iter().map(|m| m.host.clone()).collect();
    // Every channel-feature of any host, in first-seen order.
    let mut index: HashMap<ColumnKey, usize> = HashMap::new();
    let mut keys: Vec<(ColumnKey, Subsystem)> = Vec::new();
    let mut host_cols: Vec<Vec<usize>> = Vec::new();
    for m in hosts {
        let mut cols = Vec::with_capacity(m.columns.len());
        for c in &m.columns {
            let key = ColumnKey {
                channel: m.channels[c.channel].name.clone(),
                feature: c.feature,
            };
            let next = keys.len();
            let i = *index.entry(key.clone()).or_insert(next);
            if i == next {
                keys.push((key, c.subsystem));
            }
            cols.push(i);
        }
        host_cols.push(cols);
    }
    // Window end (rounded to the grid) → (host, row).
    let mut by_end: BTreeMap<i64, Vec<(usize, usize)>> = BTreeMap::new();
    for (h, m) in hosts.iter().enumerate() {
        for (r, w) in m.windows.iter().enumerate() {
            let end = (w.end_ms + stride / 2).div_euclid(stride) * stride;
            by_end.entry(end).or_default().push((h, r));
        }
    }
    let mut out = Vec::new();
    for (end_ms, rows) in by_end {
        if rows.len() < 2 {
            continue;
        }
        let mut values = vec![vec![f64::NAN; hosts.len()]; keys.len()];
        for (h, r) in rows {
            for (c, &k) in host_cols[h].iter().enumerate() {
                values[k][h] = hosts[h].values[[r, c]];
            }
        }
        let columns = keys
            .iter()
            .zip(values)
            .map(|((key, subsystem), values)| GroupColumn {
                key: key.clone(),
                subsystem: *subsystem,
                values,
            })
            .collect();
        out.push(GroupWindow {
            end_ms,
            hosts: names.clone(),
            columns,
        });
    }
    out
}

/// Offline: runs the tracker over a whole analysis and returns, per host and subsystem that
/// deviated persistently at some point, its strongest finding (with `since_ms` the first and
/// `last_ms` the last window it was open).
pub fn analyze(
    hosts: &[FeatureMatrix],
    stride_ms: i64,
    params: CrossHostParams,
) -> Result<Vec<HostDeviation>, ParamError> {
    let mut t = CrossHostTracker::new(params)?;
    let mut out: BTreeMap<(String, Subsystem), HostDeviation> = BTreeMap::new();
    for w in group_windows(hosts, stride_ms) {
        for f in t.observe(&w).findings {
            let slot = (f.host.clone(), f.subsystem);
            match out.get_mut(&slot) {
                Some(prev) => {
                    let since = prev.since_ms.min(f.since_ms);
                    if f.score > prev.score {
                        *prev = f;
                    } else {
                        prev.last_ms = f.last_ms;
                    }
                    prev.since_ms = since;
                }
                None => {
                    out.insert(slot, f);
                }
            }
        }
    }
    Ok(out.into_values().collect())
}

/// Offline, from the hosts' matrices: features of every window (without the ADF statistic,
/// which cross-host comparison does not need), then [`analyze`]. Hosts whose matrices are
/// on another grid than `window.step_ms` are left out.
pub fn analyze_matrices(
    hosts: &[crate::core::matrix::HostMatrix],
    window: &crate::core::window::WindowConfig,
    params: CrossHostParams,
) -> Result<Vec<HostDeviation>, ParamError> {
    let mut ex = crate::core::features::Extractor::new(
        crate::core::features::FeatureConfig::WITHOUT_ADF,
        *window,
    );
    let fms: Vec<FeatureMatrix> = hosts
        .iter()
        .filter_map(|m| {
            let plan = crate::core::window::plan_windows(m, window).ok()?;
            Some(ex.extract(m, &plan))
        })
        .collect();
    analyze(&fms, window.stride_ms, params)
}

/// The findings as a Markdown section for the analysis report.
pub fn markdown(found: &[HostDeviation]) -> String {
    let mut md = String::from("\n## Cross-host deviations\n\n");
    if found.is_empty() {
        md.push_str("No host deviates persistently from its group.\n");
        return md;
    }
    md.push_str(
        "| Host | Subsystem | Score | Since – last | Evidence (channel–feature) | Claim |\n\
         | --- | --- | --- | --- | --- | --- |\n",
    );
    for f in found {
        let e = &f.evidence[0];
        md.push_str(&format!(
            "| {} | {} | {:.1} | {} – {} | `{}__{}` | {} |\n",
            f.host,
            f.subsystem,
            f.score,
            crate::core::clock::clock(f.since_ms),
            crate::core::clock::clock(f.last_ms),
            e.channel.replace('|', "\\|"),
            e.feature.suffix(),
            f.summary.replace('|', "\\|")
        ));
    }
    md
}
