//! Metric selection by correlation pruning (paper §4.1), behind `reveal-analyzer prune`.
//!
//! Per *run* (one host of one recording):
//! 1. Pearson correlation between every two channels over their per-step values (counters as
//!    per-step increases, as the matrix holds them). Channels with fewer than
//!    [`MIN_SAMPLES`] finite samples or no variance are left out of that run: a constant says
//!    nothing about redundancy.
//! 2. Channels are ranked by a fixed priority table ([`priority`]: utilization and throughput
//!    first), then by the variance of their correlations with the others (the paper's
//!    "correlation variance" tie-break: a channel whose correlations spread more separates
//!    the others better), then by name, so the result is deterministic.
//! 3. Greedy clustering: the best-ranked unclustered channel becomes a representative and
//!    takes every unclustered channel with |r| ≥ threshold into its cluster; repeat.
//!
//! Over runs, the **union** of representatives is kept. A channel is dropped only when some
//! run showed it redundant and no run selected it: a channel constant in every run (an error
//! counter that never fired) had no chance to show its worth and is kept. Static channels
//! (sizes, limits, temperatures: [`crate::core::matrix::Kind::Static`]) are kept unless
//! `prune_static` is set, because cross-host comparison (the HugePages case) needs them and a
//! constant series costs next to nothing to store.
//!
//! Gaps: the correlation of two channels uses each channel's own mean and standard deviation
//! and the steps where both are finite (exact Pearson when neither has gaps; a close
//! approximation otherwise), computed as three matrix products so 700 channels × an hour of
//! 100 ms steps stays a matter of seconds.
//!
//! Figure 4's curves ([`curves`]) for thresholds 0.10…0.95:
//! - *avg multi-R² proxy*: per run, the mean over its channels of R² of the channel regressed
//!   on the selected set (1 for selected channels), from the correlation matrix
//!   (`r_iSᵀ R_SS⁻¹ r_iS`); "proxy" because it is computed from pairwise correlations;
//! - *avg max |r|*: per run, the mean over *removed* channels of their largest |r| with a
//!   selected channel (how well the removed ones are represented);
//! - *selected ratio*: per run, selected / judged channels; and the union's ratio over all
//!   channels seen.

pub mod cadence;
pub mod linalg;
pub mod metric_set;
pub mod saved;
pub mod selection;
pub mod workload;

use std::collections::BTreeMap;

use ndarray::Array2;
use regex::Regex;
use serde::Serialize;

use crate::core::matrix::{Channel, HostMatrix, Kind, MetricType, Subsystem};

/// Labels that say *which* unit a series measures (a CPU, a device, a NUMA node, a GPU, a
/// sensor) rather than *what* it measures. A selection or metric set written for every host
/// does not match them: a kind of series kept on CPU 0 of the recorded host is kept on every
/// CPU of every host, where an imbalance across CPUs is the signal. `instance` and `job` are
/// Prometheus' target labels.
pub const INSTANCE_LABELS: &[&str] = &[
    "cpu",
    "device",
    "node",
    "gpu",
    "uuid",
    "model",
    "pci_bus_id",
    "port",
    "chip",
    "sensor",
    "label",
    "irq",
    "link",
    "zone",
    "instance",
    "job",
];

/// Least finite samples a channel needs in a run to be judged.
pub const MIN_SAMPLES: usize = 10;

/// Steps per block of the correlation products.
const BLOCK: usize = 4096;

/// Correlations of the judged channels of one run.
#[derive(Debug, Clone)]
pub struct RunCorrelation {
    /// Label of the run (`file:host`).
    pub run: String,
    /// All channels of the run (name, metric, subsystem, kind, type).
    pub channels: Vec<Channel>,
    /// Indices (into `channels`) of the judged channels: enough samples, non-zero variance,
    /// and not static unless static channels are pruned too.
    pub judged: Vec<usize>,
    /// `r[[a, b]]` between `judged[a]` and `judged[b]`.
    pub r: Array2<f64>,
}

/// Pearson correlations of one host matrix; see the module docs for gaps and constants.
pub fn correlate(run: &str, m: &HostMatrix, prune_static: bool) -> RunCorrelation {
    let steps = m.n_steps();
    let mut judged = Vec::new();
    let mut stats = Vec::new();
    for c in 0..m.n_channels() {
        if m.channels[c].kind == Kind::Static && !prune_static {
            continue;
        }
        let row = m.row(c);
        let (mut n, mut sum) = (0usize, 0.0);
        for &v in row.iter().filter(|v| v.is_finite()) {
            n += 1;
            sum += v;
        }
        if n < MIN_SAMPLES {
            continue;
        }
        let mean = sum / n as f64;
        let var = row
            .iter()
            .filter(|v| v.is_finite())
            .map(|v| (v - mean).powi(2))
            .sum::<f64>()
            / n as f64;
        // Relative to the level, so a counter of 1e12 with float rounding is still constant.
        if !(var > (1e-12 * mean.abs()).powi(2) && var.is_finite()) {
            continue;
        }
        judged.push(c);
        stats.push((mean, var.sqrt()));
    }
    let k = judged.len();
    // Accumulated over blocks of steps, so an hour of 700 channels needs a few MB, not the
    // whole standardized matrix three times over.
    let (mut s, mut q, mut overlap) = (
        Array2::<f64>::zeros((k, k)),
        Array2::<f64>::zeros((k, k)),
        Array2::<f64>::zeros((k, k)),
    );
    let mut t0 = 0;
    while t0 < steps {
        let len = BLOCK.min(steps - t0);
        let mut z = Array2::<f64>::zeros((k, len));
        let mut mask = Array2::<f64>::zeros((k, len));
        for (a, &c) in judged.iter().enumerate() {
            let (mean, sd) = stats[a];
            for (t, &v) in m.row(c).iter().skip(t0).take(len).enumerate() {
                if v.is_finite() {
                    z[[a, t]] = (v - mean) / sd;
                    mask[[a, t]] = 1.0;
                }
            }
        }
        s += &z.dot(&z.t());
        q += &z.mapv(|v| v * v).dot(&mask.t());
        overlap += &mask.dot(&mask.t());
        t0 += len;
    }
    let mut r = Array2::<f64>::zeros((k, k));
    for a in 0..k {
        r[[a, a]] = 1.0;
        for b in 0..a {
            let den = (q[[a, b]] * q[[b, a]]).sqrt();
            let v = if overlap[[a, b]] >= MIN_SAMPLES as f64 && den > 0.0 {
                (s[[a, b]] / den).clamp(-1.0, 1.0)
            } else {
                // Too little overlap to say: treated as uncorrelated, so nothing is dropped
                // on no evidence.
                0.0
            };
            r[[a, b]] = v;
            r[[b, a]] = v;
        }
    }
    RunCorrelation {
        run: run.to_string(),
        channels: m.channels.clone(),
        judged,
        r,
    }
}

/// The priority table: lower ranks are kept first within a cluster. Utilization and
/// throughput (CPU time, GPU utilization, memory in use, network and disk bytes) come first
/// because they are what an operator reads; then other interpretable rates and levels;
/// then derived and microarchitectural counters.
const PRIORITY: &[(u8, &str)] = &[
    (
        0,
        r"reveal_cpu_time_seconds_total|node_cpu_seconds_total|.*:cpu_utilization.*|.*busy.*",
    ),
    (
        0,
        r"reveal_gpu_utilization_ratio|DCGM_FI_DEV_GPU_UTIL|nvidia_gpu_utilization.*",
    ),
    (
        0,
        r"reveal_memory_mem_(available|free)_bytes|node_memory_Mem(Available|Free)_bytes|reveal_gpu_memory_used_bytes|DCGM_FI_DEV_FB_USED|.*:memory_utilization.*",
    ),
    (
        0,
        r"reveal_network_(infiniband_)?(receive|transmit)_bytes_total|node_network_(receive|transmit)_bytes_total|.*:network_.*bytes.*",
    ),
    (
        0,
        r"reveal_storage_(read|written)_bytes_total|node_disk_(read|written)_bytes_total|.*:disk_.*bytes.*",
    ),
    (
        1,
        r"reveal_gpu_memory_utilization_ratio|reveal_gpu_power_watts|reveal_gpu_clock_hertz|reveal_cpu_frequency_hertz|reveal_cpu_rapl_energy_joules_total",
    ),
    (
        1,
        r".*_(packets|interrupts|softirqs|context_switches|completed)_total|reveal_storage_io_(time|weighted_time)_seconds_total|reveal_storage_io_in_progress",
    ),
    (
        1,
        r"reveal_memory_(dirty|writeback|cached|anon_pages|swap_free)_bytes|reveal_cpu_procs_(running|blocked)",
    ),
];

/// Rank of a metric name in the priority table (0 first; unlisted metrics last).
pub fn priority(metric: &str) -> u8 {
    use std::sync::OnceLock;
    static TABLE: OnceLock<Vec<(u8, Regex)>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        PRIORITY
            .iter()
            .map(|(rank, re)| {
                let re = Regex::new(&format!("^(?:{re})$")).expect("the priority table compiles");
                (*rank, re)
            })
            .collect()
    });
    table
        .iter()
        .find(|(_, re)| re.is_match(metric))
        .map_or(2, |(rank, _)| *rank)
}

/// Selection of one run at one threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSelection {
    /// For each judged channel (by position in `judged`): the judged position of its
    /// cluster's representative (itself when selected).
    pub representative: Vec<usize>,
}

impl RunSelection {
    pub fn selected(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.representative.len()).filter(|&a| self.representative[a] == a)
    }
}

/// The ranking order of a run's judged channels (priority, correlation variance, name).
pub fn ranking(rc: &RunCorrelation) -> Vec<usize> {
    let k = rc.judged.len();
    let corr_var: Vec<f64> = (0..k)
        .map(|a| {
            if k < 2 {
                return 0.0;
            }
            let others = (0..k).filter(|&b| b != a).map(|b| rc.r[[a, b]]);
            let mean = others.clone().sum::<f64>() / (k - 1) as f64;
            others.map(|v| (v - mean).powi(2)).sum::<f64>() / (k - 1) as f64
        })
        .collect();
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&a, &b| {
        let (ca, cb) = (&rc.channels[rc.judged[a]], &rc.channels[rc.judged[b]]);
        priority(&ca.metric)
            .cmp(&priority(&cb.metric))
            .then(corr_var[b].total_cmp(&corr_var[a]))
            .then_with(|| ca.name.cmp(&cb.name))
    });
    order
}

/// Greedy clustering at `threshold` in the given ranking order.
pub fn select(rc: &RunCorrelation, order: &[usize], threshold: f64) -> RunSelection {
    let k = rc.judged.len();
    let mut rep = vec![usize::MAX; k];
    for &a in order {
        if rep[a] != usize::MAX {
            continue;
        }
        rep[a] = a;
        for (b, rb) in rep.iter_mut().enumerate() {
            if *rb == usize::MAX && rc.r[[a, b]].abs() >= threshold {
                *rb = a;
            }
        }
    }
    RunSelection {
        representative: rep,
    }
}

/// What became of one channel over all runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChannelVerdict {
    pub channel: String,
    pub metric: String,
    pub subsystem: Subsystem,
    pub kind: Kind,
    /// Whether the channel is a counter (a metric set reads it as a rate).
    pub counter: bool,
    pub kept: bool,
    /// Why: `selected` (a representative in some run), `unjudged` (constant, too short or
    /// static in every run it appears in), `redundant` (clustered under another channel in
    /// every run that judged it), `read by the metric set` (redundant, but a hand-written
    /// entry of the analyzer configuration reads it: `prune --output.metric-set`).
    pub reason: &'static str,
    /// For redundant channels: the representative and |r| in the first run that clustered it.
    pub represented_by: Option<String>,
    pub abs_r: Option<f64>,
}

/// The union over runs at one threshold.
pub fn union(runs: &[RunCorrelation], threshold: f64) -> Vec<ChannelVerdict> {
    #[derive(Default)]
    struct Acc {
        meta: Option<Channel>,
        selected: bool,
        judged: bool,
        rep: Option<(String, f64)>,
    }
    let mut acc: BTreeMap<String, Acc> = BTreeMap::new();
    for rc in runs {
        for c in &rc.channels {
            acc.entry(c.name.clone()).or_default().meta = Some(c.clone());
        }
        let sel = select(rc, &ranking(rc), threshold);
        for (a, &ra) in sel.representative.iter().enumerate() {
            let name = &rc.channels[rc.judged[a]].name;
            let e = acc.get_mut(name).expect("every channel was entered above");
            e.judged = true;
            if ra == a {
                e.selected = true;
            } else if e.rep.is_none() {
                e.rep = Some((rc.channels[rc.judged[ra]].name.clone(), rc.r[[a, ra]].abs()));
            }
        }
    }
    acc.into_iter()
        .map(|(channel, e)| {
            let (kept, reason) = if e.selected {
                (true, "selected")
            } else if !e.judged {
                (true, "unjudged")
            } else {
                (false, "redundant")
            };
            let (represented_by, abs_r) = match (kept, e.rep) {
                (false, Some((n, r))) => (Some(n), Some(r)),
                _ => (None, None),
            };
            let meta = e.meta.expect("every channel was entered with its metadata");
            ChannelVerdict {
                channel,
                metric: meta.metric,
                subsystem: meta.subsystem,
                kind: meta.kind,
                counter: meta.metric_type == MetricType::Counter,
                kept,
                reason,
                represented_by,
                abs_r,
            }
        })
        .collect()
}

/// One point of figure 4.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CurvePoint {
    pub threshold: f64,
    pub avg_multi_r2: f64,
    pub avg_max_abs_r: f64,
    pub selected_ratio: f64,
    pub union_selected_ratio: f64,
}

/// The thresholds of figure 4: 0.10, 0.15, …, 0.95.
pub fn thresholds() -> Vec<f64> {
    (2..=19).map(|i| i as f64 * 0.05).collect()
}

/// Figure 4's curves; runs without judged channels take no part in the averages.
pub fn curves(runs: &[RunCorrelation], thresholds: &[f64]) -> Vec<CurvePoint> {
    let orders: Vec<Vec<usize>> = runs.iter().map(ranking).collect();
    thresholds
        .iter()
        .map(|&t| {
            let mut sums = CurveSums::default();
            for (rc, order) in runs.iter().zip(&orders) {
                if rc.judged.is_empty() {
                    continue;
                }
                let sel = select(rc, order, t);
                let s: Vec<usize> = sel.selected().collect();
                let removed: Vec<usize> = (0..rc.judged.len()).filter(|a| !s.contains(a)).collect();
                sums.add(rc, &s, &removed);
            }
            sums.point(t, runs)
        })
        .collect()
}

/// Sums over the runs at one threshold, averaged into a point of figure 4 by [`Self::point`].
#[derive(Default)]
pub(crate) struct CurveSums {
    pub r2: f64,
    pub maxr: f64,
    pub ratio: f64,
    /// Runs with judged channels (for `r2` and `ratio`), runs with a removed one (`maxr`).
    pub n: usize,
    pub n_maxr: usize,
}

impl CurveSums {
    /// One run judged: `s` its kept channels, `removed` the others (positions in its
    /// `judged`, which must not be empty).
    pub(crate) fn add(&mut self, rc: &RunCorrelation, s: &[usize], removed: &[usize]) {
        let k = rc.judged.len() as f64;
        let explained = linalg::multi_r2(&rc.r, s, removed);
        self.r2 += (s.len() as f64 + explained.iter().sum::<f64>()) / k;
        if !removed.is_empty() && !s.is_empty() {
            self.maxr += removed
                .iter()
                .map(|&a| s.iter().map(|&b| rc.r[[a, b]].abs()).fold(0.0, f64::max))
                .sum::<f64>()
                / removed.len() as f64;
            self.n_maxr += 1;
        }
        self.ratio += s.len() as f64 / k;
        self.n += 1;
    }

    /// The point at `threshold`, its union ratio that of [`union`] over `runs`; a value with
    /// no run to average is NaN.
    pub(crate) fn point(&self, threshold: f64, runs: &[RunCorrelation]) -> CurvePoint {
        let verdicts = union(runs, threshold);
        let kept = verdicts.iter().filter(|v| v.kept).count();
        let avg = |x: f64, n: usize| if n == 0 { f64::NAN } else { x / n as f64 };
        CurvePoint {
            threshold,
            avg_multi_r2: avg(self.r2, self.n),
            avg_max_abs_r: avg(self.maxr, self.n_maxr),
            selected_ratio: avg(self.ratio, self.n),
            union_selected_ratio: avg(kept as f64, verdicts.len()),
        }
    }
}

/// Figure 4 as CSV (`threshold,avg_multi_r2,avg_max_abs_r,selected_ratio,union_selected_ratio`);
/// an undefined value (no removed channel, no run) is an empty cell.
pub fn curves_csv(points: &[CurvePoint]) -> String {
    let cell = |v: f64| {
        if v.is_finite() {
            format!("{v:.6}")
        } else {
            String::new()
        }
    };
    let mut s =
        String::from("threshold,avg_multi_r2,avg_max_abs_r,selected_ratio,union_selected_ratio\n");
    for p in points {
        s.push_str(&format!(
            "{:.2},{},{},{},{}\n",
            p.threshold,
            cell(p.avg_multi_r2),
            cell(p.avg_max_abs_r),
            cell(p.selected_ratio),
            cell(p.union_selected_ratio)
        ));
    }
    s
}
