//! Cross-host comparison (DESIGN pipeline step 7; the paper's HugePages case, §6): in every
//! window, each channel-feature is compared across the hosts of a group, and a host that
//! deviates *persistently* becomes a finding of its own, with the subsystem, the evidence and
//! a plain-language claim.
//!
//! # The test
//! For one channel-feature in one window, over the hosts with a finite value:
//! - **3 or more hosts**: robust z = (x − median) / scale, where scale = 1.4826 · MAD (the
//!   MAD's consistency factor for normal data). When the MAD is 0 (more than half of the
//!   hosts share one value) the scale falls back to 1.2533 · mean absolute deviation from the
//!   median (Iglewicz & Hoaglin, *How to Detect and Handle Outliers*, 1993, whose cutoff of
//!   3.5 is also the default threshold). When every host has the same value, nothing deviates:
//!   a constant channel never makes a finding.
//! - **Identical others**: when all the *other* hosts report exactly the same value and this
//!   one differs, the difference is a configuration difference (HugePages reserved, a link
//!   width, a memory size), not a statistical one; with few hosts its robust z is bounded by
//!   n / 1.2533 (2.4 for 3 hosts), so it is a deviation by rule, reported as such.
//! - **2 hosts**: median and MAD of two values are their midpoint and half their distance, so
//!   both hosts always get |z| = 0.674: there is no majority to deviate from. The fallback is
//!   the relative difference |a − b| / max(|a|, |b|) against `pair_relative_difference`, and a
//!   finding names both hosts, saying that two cannot tell which one is off. Only features
//!   on a ratio scale (levels, spreads, counts: [`ratio_scale`]) are compared this way.
//!
//! A deviation must also be *material*: |x − median| ≥ `min_relative_difference` ·
//! max(|x|, |median|), so float noise and rounding on near-equal hosts are never findings.
//! NaN and infinite values take no part (a host missing a channel is simply not compared).
//!
//! Each comparison gives a *strength* s: |z| / threshold (robust), 1 + relative difference
//! (identical others), relative difference / `pair_relative_difference` (2 hosts); s > 1
//! is a deviating window. A host–channel-feature deviates **persistently** when s > 1 in at
//! least `k` of the last `n` windows of the group (defaults 24 of 30: with 1 s stride and 3 s
//! windows, most of half a minute, about ten non-overlapping windows, so one burst or a
//! restart does not make a finding).
//!
//! # Output
//! Per host and subsystem, the deviation score for `reveal_host_deviation{instance,subsystem}`,
//! in robust-z units: the k-th largest |robust z| over the last n windows of the subsystem's
//! most deviating channel-feature (for the identical-others and two-host rules, the
//! z-equivalent strength × threshold). It exceeds the threshold (3.5) exactly when that
//! subsystem has a persistent finding, which is what `rules/anomaly-alerts.rules.yml`'s
//! `reveal_host_deviation > 3.5` alerts on, and it rises towards the threshold as a deviation
//! becomes persistent (strengths below half the threshold count as 0, which keeps the
//! tracker's memory to what matters).
//!
//! # Use
//! - Online, one [`CrossHostTracker`] per group of hosts (hosts that run the same work: all
//!   hosts of an analyzer by default). Every stride, once every host's window ending at the
//!   same grid time is featurized, build a [`GroupWindow`] with [`GroupBuilder`] (every
//!   feature column, static channels included) and call [`CrossHostTracker::observe`]:
//!   write each `scores` entry as `reveal_host_deviation{instance,subsystem}` at the window
//!   end, send or re-send each finding as a `RevealHostDeviation` alert (summary: its
//!   `summary`; description: its evidence; startsAt: `since_ms`), and resolve the alerts of
//!   host–subsystem pairs that are no longer among the findings.
//! - Offline, [`analyze_matrices`] (or [`analyze`] on feature matrices) over a recording of
//!   several hosts, and [`markdown`] for the report.
//!
//! ```
//! use reveal_analyzer::core::crosshost::{CrossHostParams, CrossHostTracker, GroupBuilder};
//! use reveal_analyzer::core::features::Feature;
//! use reveal_analyzer::core::matrix::Subsystem;
//!
//! let p = CrossHostParams { k: 2, n: 3, ..CrossHostParams::default() };
//! let mut t = CrossHostTracker::new(p).unwrap();
//! let mut last = None;
//! for end_ms in [1000, 2000, 3000] {
//!     let mut b = GroupBuilder::new(end_ms);
//!     for (host, free) in [("a", 0.0), ("b", 1.0), ("c", 512.0), ("d", 0.0), ("e", 2.0)] {
//!         let hp = "reveal_memory_hugepages{state=\"free\"}";
//!         b.add_host(host, [(hp, Feature::Mean, Subsystem::Memory, free)]);
//!     }
//!     last = Some(t.observe(&b.build()));
//! }
//! let u = last.unwrap();
//! assert_eq!(u.findings.len(), 1);
//! assert_eq!(u.findings[0].host, "c");
//! ```

use std::collections::{BTreeMap, HashMap, VecDeque};

use serde::Serialize;

use crate::core::features::Feature;
use crate::core::matrix::Subsystem;
use crate::core::stats::median_sorted as median;

/// Settings of the cross-host test; see the module documentation for the reasoning.
///
/// Deserializes from the analyzer configuration (every key optional, unknown keys refused);
/// call `check()` after loading.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CrossHostParams {
    /// |robust z| above which a window deviates (Iglewicz & Hoaglin: 3.5).
    pub threshold: f64,
    /// Deviating windows needed among the last `n`.
    pub k: usize,
    /// Windows looked back over.
    pub n: usize,
    /// Least relative difference to the median that counts at all.
    pub min_relative_difference: f64,
    /// Two-host groups: relative difference that is a deviation.
    pub pair_relative_difference: f64,
    /// Evidence items kept per finding.
    pub top_evidence: usize,
}

impl Default for CrossHostParams {
    fn default() -> Self {
        CrossHostParams {
            threshold: 3.5,
            k: 24,
            n: 30,
            min_relative_difference: 0.01,
            pair_relative_difference: 0.5,
            top_evidence: 5,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("cross-host settings: {0}")]
pub struct ParamError(String);

impl CrossHostParams {
    pub fn check(&self) -> Result<(), ParamError> {
        let bad = |m: &str| Err(ParamError(m.to_string()));
        if !(self.threshold > 0.0 && self.threshold.is_finite()) {
            return bad("threshold must be positive");
        }
        if self.n == 0 || self.k == 0 || self.k > self.n {
            return bad("need 1 ≤ k ≤ n");
        }
        if !(0.0..1.0).contains(&self.min_relative_difference) {
            return bad("min_relative_difference must be in [0, 1)");
        }
        if !(self.pair_relative_difference > 0.0 && self.pair_relative_difference <= 1.0) {
            return bad("pair_relative_difference must be in (0, 1]");
        }
        Ok(())
    }
}

/// A channel-feature, the unit compared across hosts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ColumnKey {
    pub channel: String,
    pub feature: Feature,
}

/// One channel-feature in one window of a group: one value per host (NaN where absent).
#[derive(Debug, Clone)]
pub struct GroupColumn {
    pub key: ColumnKey,
    pub subsystem: Subsystem,
    pub values: Vec<f64>,
}

/// The hosts of a group in one window (the window's end on the shared stride grid).
#[derive(Debug, Clone)]
pub struct GroupWindow {
    pub end_ms: i64,
    pub hosts: Vec<String>,
    pub columns: Vec<GroupColumn>,
}

/// How a deviation was judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    RobustZ,
    IdenticalOthers,
    Pair,
}

/// One host's value of one channel-feature against its group, in one window.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub host: usize,
    pub value: f64,
    /// Group median (2 hosts: the other host's value).
    pub median: f64,
    /// Robust z; `None` for two-host groups, where it says nothing.
    pub z: Option<f64>,
    pub strength: f64,
    pub method: Method,
    pub hosts: usize,
}

fn sort(v: &mut [f64]) {
    v.sort_by(|a, b| a.total_cmp(b));
}

/// MAD consistency factor for normal data (1 / Φ⁻¹(3/4)).
const MAD_SCALE: f64 = 1.4826;
/// Mean-absolute-deviation factor for normal data (√(π/2)).
const MEAN_AD_SCALE: f64 = 1.2533;

/// Whether a feature's zero means "nothing" (levels, spreads, counts), so that a ratio of two
/// values means something. Shape features (skewness, trend, autocorrelation, ADF) hover
/// around 0 and flip sign with noise; their relative difference is meaningless.
pub fn ratio_scale(f: Feature) -> bool {
    matches!(
        f,
        Feature::Mean
            | Feature::Minimum
            | Feature::Maximum
            | Feature::SumValues
            | Feature::Variance
            | Feature::StandardDeviation
            | Feature::MeanAbsChange
    )
}

/// Compares every host of one channel-feature; returns only hosts with a material,
/// non-zero deviation. `ratio` says whether the feature is on a ratio scale
/// ([`ratio_scale`]): two-host groups are only compared on those.
pub fn compare_column(values: &[f64], ratio: bool, p: &CrossHostParams) -> Vec<Comparison> {
    let present: Vec<(usize, f64)> = values
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, v)| v.is_finite())
        .collect();
    let n = present.len();
    let material = |x: f64, m: f64| {
        let d = (x - m).abs();
        d > 0.0 && d >= p.min_relative_difference * x.abs().max(m.abs())
    };
    let mut out = Vec::new();
    if n < 2 {
        return out;
    }
    if n == 2 {
        if !ratio {
            return out;
        }
        let (a, b) = (present[0], present[1]);
        if !material(a.1, b.1) {
            return out;
        }
        let rel = (a.1 - b.1).abs() / a.1.abs().max(b.1.abs());
        for (me, other) in [(a, b), (b, a)] {
            out.push(Comparison {
                host: me.0,
                value: me.1,
                median: other.1,
                z: None,
                strength: rel / p.pair_relative_difference,
                method: Method::Pair,
                hosts: 2,
            });
        }
        return out;
    }
    let mut sorted: Vec<f64> = present.iter().map(|x| x.1).collect();
    sort(&mut sorted);
    let med = median(&sorted);
    let mut dev: Vec<f64> = sorted.iter().map(|x| (x - med).abs()).collect();
    let mean_ad = dev.iter().sum::<f64>() / n as f64;
    sort(&mut dev);
    let mad = median(&dev);
    let scale = if mad > 0.0 {
        MAD_SCALE * mad
    } else {
        MEAN_AD_SCALE * mean_ad
    };
    if !(scale > 0.0 && scale.is_finite()) {
        // Every host has the same value (or the spread overflows): nothing to say.
        return out;
    }
    // The value every host but one shares, if that is so: then only a host with a different
    // value (the lone minimum or maximum) has "identical others".
    let shared = if sorted[0] == sorted[n - 2] {
        Some(sorted[0])
    } else if sorted[1] == sorted[n - 1] {
        Some(sorted[1])
    } else {
        None
    };
    for &(host, x) in &present {
        if !material(x, med) {
            continue;
        }
        let z = (x - med) / scale;
        let mut strength = z.abs() / p.threshold;
        let mut method = Method::RobustZ;
        // All others identical: a configuration difference (see the module docs).
        if let Some(other) = shared.filter(|&v| v != x && strength <= 1.0) {
            strength = 1.0 + (x - other).abs() / x.abs().max(other.abs());
            method = Method::IdenticalOthers;
        }
        out.push(Comparison {
            host,
            value: x,
            median: med,
            z: Some(z),
            strength,
            method,
            hosts: n,
        });
    }
    out
}

/// Evidence of a persistent deviation: one channel-feature of one host.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviationEvidence {
    pub channel: String,
    pub subsystem: Subsystem,
    pub feature: Feature,
    /// tsfresh's name: `value__mean`.
    pub feature_name: String,
    pub method: Method,
    /// In the latest deviating window.
    pub host_value: f64,
    pub group_median: f64,
    pub robust_z: Option<f64>,
    pub strength: f64,
    pub hosts: usize,
    /// Deviating windows among the last n.
    pub windows: usize,
    pub claim: String,
}

/// A host whose subsystem deviates persistently from its group: one alert.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostDeviation {
    pub host: String,
    pub subsystem: Subsystem,
    /// The value of `reveal_host_deviation`, in robust-z units (above the threshold here).
    pub score: f64,
    /// End of the window where the deviation became persistent, and of the latest window.
    pub since_ms: i64,
    pub last_ms: i64,
    /// Strongest channel-features first.
    pub evidence: Vec<DeviationEvidence>,
    /// The claim of the strongest.
    pub summary: String,
}

/// What one window gives the online loop.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CrossHostUpdate {
    /// `reveal_host_deviation{instance,subsystem}` (robust-z units), every host and subsystem
    /// of the group seen in the last n windows.
    pub scores: Vec<(String, Subsystem, f64)>,
    /// Open findings (score above the threshold): alerts to send or re-send; a pair that disappears from
    /// here is resolved.
    pub findings: Vec<HostDeviation>,
}

#[derive(Debug, Clone)]
struct Hit {
    seq: u64,
    strength: f64,
    cmp: Comparison,
    subsystem: Subsystem,
}

/// Tracks strengths over the last `n` windows of one group and turns them into findings.
#[derive(Debug, Clone)]
pub struct CrossHostTracker {
    params: CrossHostParams,
    seq: u64,
    /// (host, channel-feature) → strengths ≥ 0.5 in the last n windows, oldest first.
    hits: HashMap<ColumnKey, HashMap<String, VecDeque<Hit>>>,
    /// Hosts and subsystems seen in the last n windows, with the last window they were in.
    seen: BTreeMap<(String, Subsystem), u64>,
    /// When an open finding became persistent.
    open_since: HashMap<(String, Subsystem), i64>,
}

/// Strengths below this are not stored (they cannot matter for a score near 1).
const KEEP_STRENGTH: f64 = 0.5;

impl CrossHostTracker {
    pub fn new(params: CrossHostParams) -> Result<CrossHostTracker, ParamError> {
        params.check()?;
        Ok(CrossHostTracker {
            params,
            seq: 0,
            hits: HashMap::new(),
            seen: BTreeMap::new(),
            open_since: HashMap::new(),
        })
    }

    /// Adds one window of the group; returns the scores and the open findings.
    pub fn observe(&mut self, w: &GroupWindow) -> CrossHostUpdate {
        let p = self.params;
        self.seq += 1;
        let seq = self.seq;
        let oldest = seq.saturating_sub(p.n as u64 - 1);
        // Host × subsystem seen in this window (a flat table: this runs per cell).
        let subs = Subsystem::ALL.len();
        let mut present = vec![false; w.hosts.len() * subs];
        for col in &w.columns {
            let si = Subsystem::ALL
                .iter()
                .position(|s| *s == col.subsystem)
                .unwrap_or(0);
            for (h, _) in col.values.iter().enumerate().filter(|(_, v)| v.is_finite()) {
                present[h * subs + si] = true;
            }
            for cmp in compare_column(&col.values, ratio_scale(col.key.feature), &p) {
                if cmp.strength < KEEP_STRENGTH {
                    continue;
                }
                // Keys are cloned only the first time they are stored.
                if !self.hits.contains_key(&col.key) {
                    self.hits.insert(col.key.clone(), HashMap::new());
                }
                let by_host = self.hits.get_mut(&col.key).expect("inserted above");
                let host = &w.hosts[cmp.host];
                if !by_host.contains_key(host) {
                    by_host.insert(host.clone(), VecDeque::new());
                }
                by_host
                    .get_mut(host)
                    .expect("inserted above")
                    .push_back(Hit {
                        seq,
                        strength: cmp.strength,
                        cmp,
                        subsystem: col.subsystem,
                    });
            }
        }
        for (i, _) in present.iter().enumerate().filter(|(_, p)| **p) {
            self.seen
                .insert((w.hosts[i / subs].clone(), Subsystem::ALL[i % subs]), seq);
        }
        self.seen.retain(|_, s| *s >= oldest);
        self.hits.retain(|_, by_host| {
            by_host.retain(|_, q| {
                while q.front().is_some_and(|h| h.seq < oldest) {
                    q.pop_front();
                }
                !q.is_empty()
            });
            !by_host.is_empty()
        });
        // Per host and subsystem: each channel-feature's k-th largest strength; evidence is
        // written out only for the strongest few of each open finding.
        let mut scores: BTreeMap<(&str, Subsystem), f64> = self
            .seen
            .keys()
            .map(|(h, sub)| ((h.as_str(), *sub), 0.0))
            .collect();
        type Candidate<'a> = (f64, &'a ColumnKey, &'a Hit, usize);
        let mut open: BTreeMap<(&str, Subsystem), Vec<Candidate>> = BTreeMap::new();
        let mut buf = Vec::new();
        for (key, host, q) in self
            .hits
            .iter()
            .flat_map(|(k, by_host)| by_host.iter().map(move |(h, q)| (k, h, q)))
        {
            if q.len() < p.k {
                continue;
            }
            buf.clear();
            buf.extend(q.iter().map(|h| h.strength));
            let (_, kth, _) = buf.select_nth_unstable_by(p.k - 1, |a, b| b.total_cmp(a));
            let kth = *kth;
            let last = q.back().expect("retained queues are not empty");
            let slot = (host.as_str(), last.subsystem);
            let s = scores.entry(slot).or_insert(0.0);
            *s = s.max(kth);
            if kth > 1.0 {
                let windows = q.iter().filter(|h| h.strength > 1.0).count();
                open.entry(slot)
                    .or_default()
                    .push((last.strength, key, last, windows));
            }
        }
        let mut best: BTreeMap<(String, Subsystem), Vec<DeviationEvidence>> = BTreeMap::new();
        for ((host, sub), mut cands) in open {
            cands.sort_by(|a, b| {
                b.0.total_cmp(&a.0)
                    .then_with(|| a.1.channel.cmp(&b.1.channel))
                    .then_with(|| a.1.feature.suffix().cmp(b.1.feature.suffix()))
            });
            // One channel, one piece of evidence (its strongest feature), as in single-host
            // attributions: a level that deviates moves a dozen features of its channel, and
            // they would crowd out a second channel that explains it.
            let mut channels: Vec<&str> = Vec::with_capacity(p.top_evidence);
            cands.retain(|c| {
                if channels.len() == p.top_evidence || channels.contains(&c.1.channel.as_str()) {
                    return false;
                }
                channels.push(c.1.channel.as_str());
                true
            });
            let ev = cands
                .into_iter()
                .map(|(_, key, hit, windows)| evidence(host, key, hit, windows, &w.hosts))
                .collect();
            best.insert((host.to_string(), sub), ev);
        }
        let scores: Vec<(String, Subsystem, f64)> = scores
            .into_iter()
            .map(|((h, sub), v)| (h.to_string(), sub, v * p.threshold))
            .collect();
        let score_of = |h: &str, sub: Subsystem| {
            scores
                .iter()
                .find(|x| x.0 == h && x.1 == sub)
                .map_or(0.0, |x| x.2)
        };
        let mut findings = Vec::new();
        for ((host, subsystem), ev) in best {
            let since = *self
                .open_since
                .entry((host.clone(), subsystem))
                .or_insert(w.end_ms);
            findings.push(HostDeviation {
                score: score_of(&host, subsystem),
                summary: summary(subsystem, &ev),
                host,
                subsystem,
                since_ms: since,
                last_ms: w.end_ms,
                evidence: ev,
            });
        }
        self.open_since
            .retain(|k, _| findings.iter().any(|f| f.host == k.0 && f.subsystem == k.1));
        CrossHostUpdate { scores, findings }
    }
}

/// The claim of the strongest evidence, followed by the claim of the evidence that explains
/// it when that is another ([`explaining`]).
fn summary(subsystem: Subsystem, ev: &[DeviationEvidence]) -> String {
    match explaining(subsystem, ev) {
        Some((i, _)) if i > 0 => format!("{} {}", ev[0].claim, ev[i].claim),
        _ => ev.first().map(|e| e.claim.clone()).unwrap_or_default(),
    }
}

/// The evidence whose remediation hint is the most specific ([`crate::core::hints::most_specific`]),
/// and that hint: what an operator acts on.
pub fn explaining(subsystem: Subsystem, ev: &[DeviationEvidence]) -> Option<(usize, String)> {
    crate::core::hints::most_specific(
        subsystem.as_str(),
        ev.iter()
            .map(|e| (e.channel.as_str(), e.host_value >= e.group_median)),
    )
}

fn evidence(
    host: &str,
    key: &ColumnKey,
    hit: &Hit,
    windows: usize,
    hosts: &[String],
) -> DeviationEvidence {
    let c = &hit.cmp;
    let other = match c.method {
        Method::Pair => hosts.iter().find(|h| *h != host).map(String::as_str),
        _ => None,
    };
    DeviationEvidence {
        channel: key.channel.clone(),
        subsystem: hit.subsystem,
        feature: key.feature,
        feature_name: key.feature.tsfresh_name(),
        method: c.method,
        host_value: c.value,
        group_median: c.median,
        robust_z: c.z,
        strength: c.strength,
        hosts: c.hosts,
        windows,
        claim: claim(host, key, c, other),
    }
}

mod claim;
mod offline;

pub use claim::claim;
pub use offline::{analyze, analyze_matrices, group_windows, markdown, GroupBuilder};

#[cfg(test)]
mod tests;
