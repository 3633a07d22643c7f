//! The analyzer's own metrics, exposed at `/metrics` through `prometheus-client`: how much it
//! analyzed and skipped, how far behind real time it is, how long queries and detectors take,
//! and what failed to be delivered; its build (`reveal_analyzer_build_info`) and the
//! `process_*` families of Prometheus' client libraries (`reveal_schema::process`).

use std::sync::atomic::AtomicU64;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Reason {
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Output {
    pub output: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Phase {
    pub phase: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ShardLabel {
    pub shard: String,
}

/// Handles to every self-metric; cloning shares the values.
#[derive(Clone, Debug)]
pub struct SelfMetrics {
    pub windows_analyzed: Counter,
    pub windows_flagged: Counter,
    /// By reason: `warmup`, `gap` (too few samples), `no_data`.
    pub windows_skipped: Family<Reason, Counter>,
    pub lag_seconds: Gauge<f64, AtomicU64>,
    pub hosts: Gauge,
    pub warming_up: Gauge,
    pub hosts_warming_up: Gauge,
    pub warmup_remaining_seconds: Gauge<f64, AtomicU64>,
    pub baseline_windows: Gauge,
    pub fits: Counter,
    pub last_fit_timestamp_seconds: Gauge<f64, AtomicU64>,
    pub query_duration_seconds: Histogram,
    pub query_failures: Counter,
    /// By phase: `features`, `fit`, `score`.
    pub detector_duration_seconds: Family<Phase, Histogram>,
    pub episodes_open: Gauge,
    pub episodes_opened: Counter,
    /// By output: `remote_write`, `alertmanager`.
    pub delivery_failures: Family<Output, Counter>,
    pub remote_write_samples_sent: Counter,
    pub remote_write_samples_dropped: Counter,
    pub remote_write_samples_pending: Gauge,
    pub alerts_sent: Counter,
    pub alerts_dropped: Counter,
    pub alerts_queued: Gauge,
    pub checkpoint_failures: Counter,
    /// Times the wall clock stepped back behind the last analyzed window.
    pub clock_steps_back: Counter,
    /// One series, `{shard="i"}` = k: which share of the hosts this analyzer owns.
    pub shards: Family<ShardLabel, Gauge>,
    /// Hosts analyzed before whose series are absent from the latest pass.
    pub hosts_silent: Gauge,
    /// Hosts forgotten after `analysis.forget_host_after` without series.
    pub hosts_forgotten: Counter,
    /// Host label values shared by several scrape jobs in the latest pass.
    pub hosts_duplicated: Gauge,
    /// Metric-set entries whose query returned no series in the latest pass (Prometheus
    /// source).
    pub metric_entries_empty: Gauge,
}

fn latency() -> Histogram {
    // 100 µs … ~3.3 s: a score is sub-millisecond, a large query or fit takes seconds.
    Histogram::new(exponential_buckets(0.0001, 2.0, 16))
}

impl SelfMetrics {
    /// Publishes which shard this analyzer owns: `reveal_analyzer_shards{shard="index"} count`.
    pub fn set_shard(&self, index: u64, count: u64) {
        self.shards
            .get_or_create(&ShardLabel {
                shard: index.to_string(),
            })
            .set(count as i64);
    }

    pub fn new(registry: &mut Registry) -> SelfMetrics {
        let m = SelfMetrics {
            windows_analyzed: Counter::default(),
            windows_flagged: Counter::default(),
            windows_skipped: Family::default(),
            lag_seconds: Gauge::default(),
            hosts: Gauge::default(),
            warming_up: Gauge::default(),
            hosts_warming_up: Gauge::default(),
            warmup_remaining_seconds: Gauge::default(),
            baseline_windows: Gauge::default(),
            fits: Counter::default(),
            last_fit_timestamp_seconds: Gauge::default(),
            query_duration_seconds: latency(),
            query_failures: Counter::default(),
            detector_duration_seconds: Family::new_with_constructor(latency),
            episodes_open: Gauge::default(),
            episodes_opened: Counter::default(),
            delivery_failures: Family::default(),
            remote_write_samples_sent: Counter::default(),
            remote_write_samples_dropped: Counter::default(),
            remote_write_samples_pending: Gauge::default(),
            alerts_sent: Counter::default(),
            alerts_dropped: Counter::default(),
            alerts_queued: Gauge::default(),
            checkpoint_failures: Counter::default(),
            clock_steps_back: Counter::default(),
            shards: Family::default(),
            hosts_silent: Gauge::default(),
            hosts_forgotten: Counter::default(),
            hosts_duplicated: Gauge::default(),
            metric_entries_empty: Gauge::default(),
        };
        registry.register_collector(Box::new(ProcessCollector::default()));
        let r = registry.sub_registry_with_prefix("reveal_analyzer");
        // A gauge, as Prometheus' client libraries and the exporter write `*_build_info`.
        let build_info = Family::<Vec<(String, String)>, Gauge>::default();
        build_info
            .get_or_create(
                &reveal_schema::build::info_labels()
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
            .set(1);
        r.register(
            "build_info",
            "The analyzer's version, the git commit and branch it was built from, and the Rust compiler's version; the value is always 1",
            build_info,
        );
        r.register(
            "windows_analyzed",
            "Windows featurized and scored",
            m.windows_analyzed.clone(),
        );
        r.register(
            "windows_flagged",
            "Windows flagged by at least one detector",
            m.windows_flagged.clone(),
        );
        r.register(
            "windows_skipped",
            "Windows not scored, by reason",
            m.windows_skipped.clone(),
        );
        r.register_with_unit(
            "lag",
            "How far the newest analyzed window ends behind real time (negative while the clock is behind it)",
            Unit::Seconds,
            m.lag_seconds.clone(),
        );
        r.register("hosts", "Hosts seen in the latest pass", m.hosts.clone());
        r.register(
            "hosts_silent",
            "Hosts analyzed before that have no series in the latest pass",
            m.hosts_silent.clone(),
        );
        r.register(
            "hosts_forgotten",
            "Hosts dropped after analysis.forget_host_after without series (episodes ended, baseline freed)",
            m.hosts_forgotten.clone(),
        );
        r.register(
            "hosts_duplicated",
            "Host label values whose series come from several scrape jobs in the latest pass (analyzed as one host)",
            m.hosts_duplicated.clone(),
        );
        r.register(
            "metric_entries_empty",
            "Metric-set entries whose query returned no series in the latest pass (Prometheus source)",
            m.metric_entries_empty.clone(),
        );
        r.register(
            "shards",
            "Number of shards the hosts are split into, labelled with the shard this analyzer owns (1 and shard 0 when unsharded)",
            m.shards.clone(),
        );
        r.register(
            "hosts_warming_up",
            "Hosts still collecting their first baseline (each warms up alone)",
            m.hosts_warming_up.clone(),
        );
        r.register(
            "warming_up",
            "1 while no host has history enough for its first fit",
            m.warming_up.clone(),
        );
        r.register_with_unit(
            "warmup_remaining",
            "History still needed before every host is fitted",
            Unit::Seconds,
            m.warmup_remaining_seconds.clone(),
        );
        r.register(
            "baseline_windows",
            "Windows in the latest fitted baseline, all hosts",
            m.baseline_windows.clone(),
        );
        r.register("fits", "Baseline fits", m.fits.clone());
        r.register_with_unit(
            "last_fit_timestamp",
            "Time of the latest fit",
            Unit::Seconds,
            m.last_fit_timestamp_seconds.clone(),
        );
        r.register_with_unit(
            "query_duration",
            "Duration of one source fetch (all queries of a pass)",
            Unit::Seconds,
            m.query_duration_seconds.clone(),
        );
        r.register(
            "query_failures",
            "Source fetches that failed",
            m.query_failures.clone(),
        );
        r.register_with_unit(
            "detector_duration",
            "Feature extraction, fit and scoring time per pass, by phase",
            Unit::Seconds,
            m.detector_duration_seconds.clone(),
        );
        r.register(
            "episodes_open",
            "Anomaly episodes open now",
            m.episodes_open.clone(),
        );
        r.register(
            "episodes_opened",
            "Anomaly episodes opened",
            m.episodes_opened.clone(),
        );
        r.register(
            "delivery_failures",
            "Failed deliveries, by output",
            m.delivery_failures.clone(),
        );
        r.register(
            "remote_write_samples_sent",
            "Anomaly samples accepted by remote write",
            m.remote_write_samples_sent.clone(),
        );
        r.register(
            "remote_write_samples_dropped",
            "Anomaly samples dropped (queue full or refused)",
            m.remote_write_samples_dropped.clone(),
        );
        r.register(
            "remote_write_samples_pending",
            "Anomaly samples waiting to be written",
            m.remote_write_samples_pending.clone(),
        );
        r.register(
            "alerts_sent",
            "Alerts accepted by an Alertmanager",
            m.alerts_sent.clone(),
        );
        r.register(
            "alerts_dropped",
            "Alerts dropped because a retry queue was full or refused",
            m.alerts_dropped.clone(),
        );
        r.register(
            "alerts_queued",
            "Alerts waiting for an Alertmanager",
            m.alerts_queued.clone(),
        );
        r.register(
            "checkpoint_failures",
            "Checkpoint writes that failed",
            m.checkpoint_failures.clone(),
        );
        r.register(
            "clock_steps_back",
            "Times the clock stepped back behind the last analyzed window (analysis waited for it)",
            m.clock_steps_back.clone(),
        );
        m
    }

    pub fn skipped(&self, reason: &str, n: u64) {
        self.windows_skipped
            .get_or_create(&Reason {
                reason: reason.to_string(),
            })
            .inc_by(n);
    }

    pub fn phase(&self, phase: &str, seconds: f64) {
        self.detector_duration_seconds
            .get_or_create(&Phase {
                phase: phase.to_string(),
            })
            .observe(seconds);
    }

    pub fn delivery_failed(&self, output: &str) {
        self.delivery_failures
            .get_or_create(&Output {
                output: output.to_string(),
            })
            .inc();
    }
}

/// The `process_*` families of the analyzer itself, read from `/proc/self` on each scrape.
#[derive(Debug, Default)]
struct ProcessCollector {
    /// Whether reading failed already (logged once).
    failed: std::sync::atomic::AtomicBool,
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        use reveal_schema::process;
        let stats = match process::read(std::path::Path::new("/proc"), "self") {
            Ok(s) => s,
            Err(e) => {
                if !self.failed.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    tracing::warn!("process_* metrics left out: {e}");
                }
                return Ok(());
            }
        };
        for (family, value) in stats.values() {
            let unit = family.unit.map(|u| match u {
                "seconds" => Unit::Seconds,
                "bytes" => Unit::Bytes,
                other => Unit::Other(other.to_string()),
            });
            let (kind, counter) = match family.kind {
                process::Kind::Counter => (MetricType::Counter, true),
                process::Kind::Gauge => (MetricType::Gauge, false),
            };
            let me = encoder.encode_descriptor(family.name, family.help, unit.as_ref(), kind)?;
            if counter {
                ConstCounter::new(value).encode(me)?;
            } else {
                ConstGauge::new(value).encode(me)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_with_prefix_units_and_total_suffixes() {
        let mut reg = Registry::default();
        let m = SelfMetrics::new(&mut reg);
        m.windows_analyzed.inc_by(3);
        m.skipped("warmup", 2);
        m.lag_seconds.set(1.5);
        m.phase("score", 0.0002);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &reg).unwrap();
        assert!(
            out.contains("reveal_analyzer_windows_analyzed_total 3\n"),
            "{out}"
        );
        assert!(
            out.contains("reveal_analyzer_windows_skipped_total{reason=\"warmup\"} 2\n"),
            "{out}"
        );
        assert!(out.contains("reveal_analyzer_lag_seconds 1.5\n"), "{out}");
        assert!(
            out.contains("reveal_analyzer_detector_duration_seconds_count{phase=\"score\"} 1\n"),
            "{out}"
        );
        for family in reveal_schema::process::FAMILIES {
            let name = family.sample_name();
            assert!(
                out.lines().any(|l| l.starts_with(&format!("{name} "))),
                "{name} missing:\n{out}"
            );
        }
        let revision = format!("revision=\"{}\"", reveal_schema::build::REVISION);
        assert!(
            out.lines()
                .any(|l| l.starts_with("reveal_analyzer_build_info{") && l.contains(&revision)),
            "{out}"
        );
    }
}
