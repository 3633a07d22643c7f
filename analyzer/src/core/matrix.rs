//! A host's telemetry as a matrix: one row per channel, one column per step of a regular
//! time grid, `NaN` where the channel has no sample (a gap, a scrape that failed, a channel
//! that did not exist yet or any more).
//!
//! Sources build it through [`MatrixBuilder`], which snaps raw `(timestamp, value)` samples
//! to the grid and turns counters into per-step increases (see [`MatrixBuilder::build`]).

use std::collections::BTreeMap;
use std::fmt;

use ndarray::{Array2, ArrayView1};
use serde::{Deserialize, Serialize};

/// Subsystems a metric can be attributed to; the same five as the exporter's metric names.
pub const SUBSYSTEMS: [&str; 5] = ["cpu", "gpu", "memory", "network", "storage"];

/// The part of the machine a channel is attributed to (the exporter's name prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Subsystem {
    Cpu,
    Gpu,
    Memory,
    Network,
    Storage,
    /// Not attributable from the name (no known prefix and no metric-set entry).
    Other,
}

impl Subsystem {
    pub const ALL: [Subsystem; 6] = [
        Subsystem::Cpu,
        Subsystem::Gpu,
        Subsystem::Memory,
        Subsystem::Network,
        Subsystem::Storage,
        Subsystem::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Subsystem::Cpu => "cpu",
            Subsystem::Gpu => "gpu",
            Subsystem::Memory => "memory",
            Subsystem::Network => "network",
            Subsystem::Storage => "storage",
            Subsystem::Other => "other",
        }
    }

    /// Parses `cpu`, `gpu`, `memory`, `network`, `storage`, `other`.
    pub fn parse(s: &str) -> Option<Subsystem> {
        Subsystem::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// From a metric name: `reveal_<subsystem>_…` first, then the common node_exporter and
    /// DCGM-exporter prefixes so captures of those exporters are attributed too.
    pub fn from_metric_name(name: &str) -> Subsystem {
        if let Some(rest) = name.strip_prefix("reveal_") {
            if let Some((sub, _)) = rest.split_once('_') {
                if let Some(s) = Subsystem::parse(sub) {
                    return s;
                }
            }
        }
        const PREFIXES: [(&str, Subsystem); 14] = [
            ("node_cpu", Subsystem::Cpu),
            ("node_context_switches", Subsystem::Cpu),
            ("node_intr", Subsystem::Cpu),
            ("node_softirqs", Subsystem::Cpu),
            ("node_load", Subsystem::Cpu),
            ("node_procs", Subsystem::Cpu),
            ("node_memory", Subsystem::Memory),
            ("node_vmstat", Subsystem::Memory),
            ("node_network", Subsystem::Network),
            ("node_netstat", Subsystem::Network),
            ("node_infiniband", Subsystem::Network),
            ("node_disk", Subsystem::Storage),
            ("DCGM_", Subsystem::Gpu),
            ("nvidia_", Subsystem::Gpu),
        ];
        PREFIXES
            .iter()
            .find(|(p, _)| name.starts_with(p))
            .map_or(Subsystem::Other, |(_, s)| *s)
    }
}

impl fmt::Display for Subsystem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a channel enters the analysis (paper §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Utilization, throughput, stalls: full statistical and temporal features.
    Dynamic,
    /// Errors, drops, retransmits, ECC: summed per window.
    Event,
    /// Sizes, limits, temperatures: left out of single-host detection, kept for cross-host.
    Static,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Dynamic => "dynamic",
            Kind::Event => "event",
            Kind::Static => "static",
        }
    }
}

/// The type a source declared for a metric (`# TYPE` in exposition text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricType {
    Counter,
    Gauge,
    Info,
    Unknown,
}

/// Metadata of one row of a [`HostMatrix`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Channel {
    /// Metric name with its labels, sorted: `reveal_cpu_seconds_total{cpu="0",mode="user"}`.
    pub name: String,
    /// Metric name alone: `reveal_cpu_seconds_total`.
    pub metric: String,
    pub subsystem: Subsystem,
    pub kind: Kind,
    /// Declared type; counters hold per-step increases in the matrix, not raw totals.
    pub metric_type: MetricType,
    /// The least change of the channel that carries meaning, in its unit (0: none known):
    /// one page for bytes, one event per second for a counter's rate, one clock tick for
    /// CPU time. Deviations are never measured in finer steps than this (see
    /// `crate::core::features::least_change`).
    #[serde(default)]
    pub resolution: f64,
    /// The channel is a per-second rate of a counter (a `rate()` or `irate()` of the
    /// Prometheus source): one unit of its counter, one event, fills a second of samples
    /// rather than one sample (see `crate::core::features::least_change`).
    #[serde(default)]
    pub per_second: bool,
    /// For a counter, the most it can grow per second of the time between two samples (a
    /// device's busy time: one second per second); a step that grows more is held to it.
    /// The kernel's `io_ticks` can count an idle gap as busy and add a second or more in one
    /// 100 ms step (docs/analyzer-config.md, "A disk's busy time").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rate: Option<f64>,
}

/// The most a counter can grow per second, by name: a block device's busy time
/// (`reveal_storage_io_time_seconds_total`, node_exporter's `node_disk_io_time_seconds_total`,
/// the kernel's `io_ticks`) counts at most the time that passed, one second per second;
/// nothing is known of any other counter.
pub fn default_max_rate(metric: &str) -> Option<f64> {
    metric.ends_with("_io_time_seconds_total").then_some(1.0)
}

/// One host's channels on a regular grid: `values[[c, t]]` is channel `c` at
/// `start_ms + t * step_ms`.
#[derive(Debug, Clone)]
pub struct HostMatrix {
    pub host: String,
    pub start_ms: i64,
    pub step_ms: i64,
    pub channels: Vec<Channel>,
    pub values: Array2<f64>,
    /// Samples dropped because they were NaN or infinite (stale markers, bad data).
    pub non_finite_samples: usize,
}

impl HostMatrix {
    pub fn n_channels(&self) -> usize {
        self.channels.len()
    }
    pub fn n_steps(&self) -> usize {
        self.values.ncols()
    }
    pub fn time_ms(&self, step: usize) -> i64 {
        self.start_ms + step as i64 * self.step_ms
    }
    pub fn row(&self, channel: usize) -> ArrayView1<'_, f64> {
        self.values.row(channel)
    }
}

/// Collects raw samples of one host, channel by channel, then snaps them to a grid.
#[derive(Debug, Default)]
pub struct MatrixBuilder {
    /// Channel name → (metadata, samples as (ms, value)).
    series: BTreeMap<String, (Channel, Vec<(i64, f64)>)>,
    non_finite: usize,
}

impl MatrixBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one sample. Non-finite values are counted and dropped: a NaN is how Prometheus
    /// marks a stale series, and an infinity is no measurement.
    pub fn push(&mut self, channel: &Channel, ts_ms: i64, value: f64) {
        let entry = self
            .series
            .entry(channel.name.clone())
            .or_insert_with(|| (channel.clone(), Vec::new()));
        if value.is_finite() {
            entry.1.push((ts_ms, value));
        } else {
            self.non_finite += 1;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.series.values().all(|(_, s)| s.is_empty())
    }

    /// Snaps samples to the grid `start + k·step` (start = earliest sample, each sample to
    /// the nearest point; a later sample in the same cell wins).
    ///
    /// Counters become *per-step increases*: cell `k` holds `v[k] − v[k−1]`, the events of
    /// the step ending at `k`, so an event channel summed over a window is the count of events
    /// in that window. A decrease is a counter reset (a restart, a device re-created), and the
    /// increase is the new value itself, as Prometheus' `increase()` assumes, unless it is a
    /// 32-bit wrap (`increase`). The first sample, and a sample whose previous cell is a
    /// gap, yield `NaN`: the increase is unknown there rather than spread over the gap by
    /// guess. A counter with a `max_rate` grows by at most that much per second of the time
    /// between the two samples' timestamps.
    ///
    /// Fails when no finite sample was pushed, when the grid would exceed [`MAX_CELLS`]
    /// (timestamps years apart in a corrupt file must not allocate the machine away), or when
    /// a grid over [`SPARSE_GRID_CELLS`] would hold more than [`SPARSE_RATIO`] cells per
    /// sample: a few samples stamped days from the rest (two scrapes of a 13 KB text, two days
    /// apart, made a grid of 1.6 GB) are a timestamp error, and the grid would be all gaps.
    pub fn build(self, host: &str, step_ms: i64) -> Result<HostMatrix, MatrixError> {
        let step_ms = step_ms.max(1);
        let mut first = i64::MAX;
        let mut last = i64::MIN;
        for (_, s) in self.series.values() {
            for &(t, _) in s {
                first = first.min(t);
                last = last.max(t);
            }
        }
        if first > last {
            return Err(MatrixError::Empty {
                host: host.to_string(),
            });
        }
        let too_large = || MatrixError::TooLarge {
            host: host.to_string(),
            span_ms: last.saturating_sub(first),
            step_ms,
            channels: self.series.len(),
        };
        let span = last.checked_sub(first).ok_or_else(too_large)?;
        // Checked: a span of `i64::MAX` at a 1 ms step must be `TooLarge`, not an overflow.
        let n_steps = usize::try_from(span / step_ms)
            .ok()
            .and_then(|n| n.checked_add(1 + usize::from(span % step_ms >= (step_ms + 1) / 2)))
            .ok_or_else(too_large)?;
        let cells = n_steps.saturating_mul(self.series.len().max(1));
        if cells > MAX_CELLS {
            return Err(too_large());
        }
        let samples: usize = self.series.values().map(|(_, s)| s.len()).sum();
        if cells > SPARSE_GRID_CELLS && cells / samples.max(1) > SPARSE_RATIO {
            return Err(MatrixError::Sparse {
                host: host.to_string(),
                samples,
                n_steps,
                channels: self.series.len(),
                span_ms: span,
                step_ms,
            });
        }
        let mut values = Array2::from_elem((self.series.len(), n_steps), f64::NAN);
        let mut channels = Vec::with_capacity(self.series.len());
        for (row, (_, (channel, mut samples))) in self.series.into_iter().enumerate() {
            samples.sort_by_key(|&(t, _)| t);
            let mut out = values.row_mut(row);
            if channel.metric_type == MetricType::Counter {
                let mut raw = vec![f64::NAN; n_steps];
                let mut at = vec![0_i64; n_steps];
                for (t, v) in samples {
                    let k = cell(t, first, step_ms, n_steps);
                    raw[k] = v;
                    at[k] = t;
                }
                let pairs = || {
                    (1..n_steps)
                        .map(|k| (k, raw[k - 1], raw[k]))
                        .filter(|(_, p, c)| p.is_finite() && c.is_finite())
                };
                // The largest increase anywhere in the range, so that a wrap is told from a
                // reset wherever it falls in the range (a pass's range may start with it).
                let largest = pairs()
                    .filter(|(_, p, c)| c >= p)
                    .fold(0.0_f64, |m, (_, p, c)| m.max(c - p));
                for (k, prev, cur) in pairs() {
                    let grown = increase(prev, cur, largest);
                    out[k] = match channel.max_rate {
                        Some(r) => grown.min(r * (at[k] - at[k - 1]) as f64 / 1000.0),
                        None => grown,
                    };
                }
            } else {
                for (t, v) in samples {
                    out[cell(t, first, step_ms, n_steps)] = v;
                }
            }
            channels.push(channel);
        }
        Ok(HostMatrix {
            host: host.to_string(),
            start_ms: first,
            step_ms,
            channels,
            values,
            non_finite_samples: self.non_finite,
        })
    }
}

fn cell(t: i64, first: i64, step_ms: i64, n: usize) -> usize {
    let d = t - first;
    let k = d / step_ms + i64::from(d % step_ms >= (step_ms + 1) / 2);
    (k.max(0) as usize).min(n - 1)
}

/// Largest grid a source may build (channels × steps), 2 GiB of `f64`.
pub const MAX_CELLS: usize = 256 << 20;

/// Grids up to this many cells (128 MiB of `f64`) are built however sparse their samples:
/// a short recording with gaps. A real range has a sample in most cells: a day of a host
/// down for all but an hour still fills 4 % of its grid.
pub const SPARSE_GRID_CELLS: usize = 16 << 20;

/// Above [`SPARSE_GRID_CELLS`], the most cells a grid may hold per sample (0.1 % filled).
pub const SPARSE_RATIO: usize = 1000;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MatrixError {
    #[error("host {host:?}: no finite samples")]
    Empty { host: String },
    #[error(
        "host {host:?}: {channels} channels over {span_ms} ms at a {step_ms} ms step exceed \
         the limit of {MAX_CELLS} cells; check the timestamps or use a larger step"
    )]
    TooLarge {
        host: String,
        span_ms: i64,
        step_ms: i64,
        channels: usize,
    },
    #[error(
        "host {host:?}: {samples} samples would fill a grid of {n_steps} steps × {channels} \
         channels ({span_ms} ms at a {step_ms} ms step) to under 0.1 %; some samples are \
         stamped far from the others: check the timestamps or use a larger step"
    )]
    Sparse {
        host: String,
        samples: usize,
        n_steps: usize,
        channels: usize,
        span_ms: i64,
        step_ms: i64,
    },
}

/// A 32-bit counter (an SNMP `ifInOctets`, a device's own register) wraps every few minutes
/// at a gigabit. Read as a reset, each wrap would be a step with a fraction of the usual
/// increase: a dip no host made.
const WRAP: f64 = 4_294_967_296.0;

/// The increase from `prev` to `cur` of a counter whose largest increase in the range is
/// `largest`. A decrease is a 32-bit wrap when `prev` fits 32 bits and the increase
/// a wrap implies, `2³² − prev + cur`, is no more than twice `largest`: a counter that
/// increases by about that much every step. Any other decrease is a reset (a small counter
/// that starts over implies a wrap of billions where it rose by far less).
fn increase(prev: f64, cur: f64, largest: f64) -> f64 {
    if cur >= prev {
        return cur - prev;
    }
    let wrapped = WRAP - prev + cur;
    if prev < WRAP && largest > 0.0 && wrapped <= 2.0 * largest {
        wrapped
    } else {
        cur
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ch(name: &str, t: MetricType) -> Channel {
        Channel {
            name: name.into(),
            metric: name.into(),
            subsystem: Subsystem::from_metric_name(name),
            kind: Kind::Dynamic,
            metric_type: t,
            resolution: 0.0,
            per_second: false,
            max_rate: None,
        }
    }

    #[test]
    fn subsystem_from_prefix() {
        assert_eq!(
            Subsystem::from_metric_name("reveal_gpu_power_watts"),
            Subsystem::Gpu
        );
        assert_eq!(
            Subsystem::from_metric_name("reveal_storage_x"),
            Subsystem::Storage
        );
        assert_eq!(
            Subsystem::from_metric_name("reveal_foo_x"),
            Subsystem::Other
        );
        assert_eq!(
            Subsystem::from_metric_name("node_disk_io_now"),
            Subsystem::Storage
        );
        assert_eq!(Subsystem::from_metric_name("Busy%"), Subsystem::Other);
    }

    #[test]
    fn snaps_jittered_samples_and_leaves_gaps() {
        let g = ch("g", MetricType::Gauge);
        let mut b = MatrixBuilder::new();
        for (t, v) in [(1000, 1.0), (1098, 2.0), (1203, 3.0), (1500, 6.0)] {
            b.push(&g, t, v);
        }
        b.push(&g, 1600, f64::NAN);
        let m = b.build("h", 100).unwrap();
        let row: Vec<f64> = m.row(0).to_vec();
        assert_eq!(m.n_steps(), 6);
        assert_eq!(&row[..3], &[1.0, 2.0, 3.0]);
        assert!(row[3].is_nan() && row[4].is_nan());
        assert_eq!(row[5], 6.0);
        assert_eq!(m.non_finite_samples, 1);
    }

    #[test]
    fn counters_become_increases_with_resets_and_gaps() {
        let c = ch("c_total", MetricType::Counter);
        let mut b = MatrixBuilder::new();
        for (t, v) in [(0, 10.0), (100, 15.0), (200, 3.0), (400, 9.0), (500, 9.0)] {
            b.push(&c, t, v);
        }
        let m = b.build("h", 100).unwrap();
        let row: Vec<f64> = m.row(0).to_vec();
        assert!(row[0].is_nan());
        assert_eq!(row[1], 5.0);
        assert_eq!(row[2], 3.0, "reset: the new value is the increase");
        assert!(
            row[3].is_nan() && row[4].is_nan(),
            "no increase across a gap"
        );
        assert_eq!(row[5], 0.0);
    }

    #[test]
    fn a_busy_time_grows_by_at_most_the_time_between_its_samples() {
        // A disk idle, then one step counting a second of busy time in 100 ms (the kernel's
        // io_ticks counting the idle gap), then 140 ms between two samples.
        let samples = [(0, 5.0), (100, 5.05), (200, 6.05), (340, 6.25), (440, 6.3)];
        let build = |max_rate| {
            let c = Channel {
                max_rate,
                ..ch("reveal_storage_io_time_seconds_total", MetricType::Counter)
            };
            let mut b = MatrixBuilder::new();
            for (t, v) in samples {
                b.push(&c, t, v);
            }
            let m = b.build("h", 100).unwrap();
            m.row(0).to_vec()
        };
        let raw = build(None);
        let held = build(Some(1.0));
        let close = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9);
        assert!(close(&raw[1..4], &[0.05, 1.0, 0.2]), "{raw:?}");
        assert!(close(&held[1..4], &[0.05, 0.1, 0.14]), "{held:?}");
        assert!(close(&held[4..], &[0.05]), "{held:?}");
        assert!(raw[0].is_nan() && held[0].is_nan());
        // A reset is still its new value, held too.
        let mut b = MatrixBuilder::new();
        let c = Channel {
            max_rate: Some(1.0),
            ..ch("x_io_time_seconds_total", MetricType::Counter)
        };
        for (t, v) in [(0, 50.0), (100, 0.5)] {
            b.push(&c, t, v);
        }
        assert!(close(
            &b.build("h", 100).unwrap().row(0).to_vec()[1..],
            &[0.1]
        ));
    }

    #[test]
    fn a_32_bit_wrap_is_an_increase_and_a_reset_is_not_a_wrap() {
        let c = ch("c_total", MetricType::Counter);
        let mut b = MatrixBuilder::new();
        let near = WRAP - 2_500.0;
        for (t, v) in [
            (0, near - 2_000.0),
            (100, near),
            (200, 500.0),
            (300, 2_600.0),
        ] {
            b.push(&c, t, v);
        }
        let m = b.build("h", 100).unwrap();
        assert_eq!(m.row(0).to_vec()[1..], [2_000.0, 3_000.0, 2_100.0]);
        // A small counter that starts over: a reset (the wrap would be four billion).
        let mut b = MatrixBuilder::new();
        for (t, v) in [(0, 1_000.0), (100, 3_000.0), (200, 40.0), (300, 90.0)] {
            b.push(&c, t, v);
        }
        let m = b.build("h", 100).unwrap();
        assert_eq!(m.row(0).to_vec()[1..], [2_000.0, 40.0, 50.0]);
        // A wrap first in the range: told by the increases after it.
        let mut b = MatrixBuilder::new();
        for (t, v) in [(0, near), (100, 500.0), (200, 3_000.0), (300, 5_100.0)] {
            b.push(&c, t, v);
        }
        let m = b.build("h", 100).unwrap();
        assert_eq!(m.row(0).to_vec()[1..], [3_000.0, 2_500.0, 2_100.0]);
        // Above 32 bits a decrease is always a reset; with no increase known too.
        assert_eq!(increase(1e12, 5.0, 1e6), 5.0);
        assert_eq!(increase(WRAP - 10.0, 5.0, 0.0), 5.0);
    }

    #[test]
    fn empty_builder_gives_none() {
        assert!(MatrixBuilder::new().build("h", 100).is_err());
        let mut b = MatrixBuilder::new();
        b.push(&ch("g", MetricType::Gauge), 0, f64::INFINITY);
        assert!(b.build("h", 100).is_err());
        let mut b = MatrixBuilder::new();
        b.push(&ch("g", MetricType::Gauge), i64::MIN, 1.0);
        b.push(&ch("g", MetricType::Gauge), i64::MAX, 1.0);
        assert!(matches!(
            b.build("h", 100),
            Err(MatrixError::TooLarge { .. })
        ));
        // A span of exactly `i64::MAX` at the finest step: an error, not an overflow.
        let mut b = MatrixBuilder::new();
        b.push(&ch("g", MetricType::Gauge), i64::MIN, 1.0);
        b.push(&ch("g", MetricType::Gauge), -1, 1.0);
        assert!(matches!(b.build("h", 1), Err(MatrixError::TooLarge { .. })));
    }

    #[test]
    fn a_grid_almost_all_gaps_is_refused_unless_small() {
        let day = 86_400_000;
        // `channels` gauges at a 1 s step, `per_side` samples each side of a gap.
        let build = |channels: usize, gap_ms: i64, per_side: i64| {
            let mut b = MatrixBuilder::new();
            for c in 0..channels {
                let c = ch(&format!("g{c}"), MetricType::Gauge);
                for k in 0..per_side {
                    b.push(&c, k * 1000, 1.0);
                    b.push(&c, gap_ms + k * 1000, 2.0);
                }
            }
            b.build("h", 1000)
        };
        // 100 channels with one sample each side of two days: 17 M cells for 200 samples.
        let e = build(100, 2 * day, 1).unwrap_err();
        assert!(matches!(e, MatrixError::Sparse { samples: 200, .. }), "{e}");
        assert!(e.to_string().contains("check the timestamps"), "{e}");
        // The same two days of two channels is a small grid, built with its gap.
        assert_eq!(build(2, 2 * day, 1).unwrap().n_steps(), 172_801);
        // An hour recorded each side of the gap is a real recording: 4 % filled, built.
        let m = build(100, 2 * day, 3_600).unwrap();
        assert_eq!((m.n_steps(), m.channels.len()), (176_400, 100));
    }
}
