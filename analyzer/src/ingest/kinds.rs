//! Channel kinds and subsystems: from the metric set when it names the metric, otherwise a
//! default by name and type (paper §4.2).
//!
//! A metric-set file is the `metrics:` list of the analyzer configuration on its own:
//!
//! ```yaml
//! metrics:
//!   - expr: reveal_memory_hugepages_.*   # metric-name regex for file and scrape sources
//!     subsystem: memory
//!     kind: static
//!   - expr: reveal_network_tcp_retrans_segments_total
//!     subsystem: network                 # kind omitted: the default below applies
//! ```
//!
//! Defaults, checked on the `_`-separated words of the metric name:
//! - **event**: counters whose name has an error, drop, retransmit, ECC, fault, timeout,
//!   loss, overrun, failure or retired word (`reveal_network_receive_drops_total`), or a
//!   label value containing one (`reveal_network_protocol_events_total{name="RetransSegs"}`);
//! - **static**: info metrics, and names with a size, total, limit, capacity, max/min,
//!   temperature, version or link-width word (`reveal_memory_mem_total_bytes`,
//!   `reveal_cpu_temperature_celsius`); a counter's own `_total` suffix does not count;
//! - **static** also: the exporter's self-metrics (`reveal_exporter_*`);
//! - **dynamic**: everything else.
//!
//! A counter read raw grows by at most its entry's `max_rate` per second between two samples;
//! by default a disk's busy time (`…_io_time_seconds_total`) by one second a second
//! ([`default_max_rate`]), nothing else bounded.

use std::path::Path;

use regex::Regex;
use serde::Deserialize;

pub use crate::core::matrix::default_max_rate;
use crate::core::matrix::{Kind, MetricType, Subsystem};

/// One entry of the metric set.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MetricSpec {
    /// PromQL expression (Prometheus source) or metric-name regex (scrape source) selecting
    /// the series; every series is one channel of its host.
    pub expr: String,
    /// Channel name for series without a `__name__` (results of functions like `rate`);
    /// defaults to the first metric name in `expr`.
    pub name: Option<String>,
    /// Subsystem the channels are attributed to.
    pub subsystem: String,
    /// `dynamic`, `event` or `static`; when absent, the analyzer's default by name and type.
    pub kind: Option<MetricKind>,
    /// The least change of the channels that carries meaning, in their unit; when absent,
    /// the default by name ([`default_resolution`]). Set it for expressions whose name says
    /// nothing of their unit (`sum(rate(x_total[1s]))` named `x_rate`: 1).
    pub resolution: Option<f64>,
    /// The label that names one device of the entry's series, when it is none of the labels
    /// the analyzer knows (`cpu`, `gpu`, `device`, `port`, `node`, `irq`, …): its series form
    /// a device family (docs/detection.md, "Families and siblings").
    #[serde(default)]
    pub device_label: Option<String>,
    /// For counters read raw (the scrape and file sources, a Prometheus expression without
    /// `rate`), the most they can grow per second between two samples; a step that grows
    /// more is held to it. When absent, the default by name ([`default_max_rate`]).
    #[serde(default)]
    pub max_rate: Option<f64>,
}

impl MetricSpec {
    /// The explicit `name`, else the first identifier in `expr` that is not a function call
    /// or a PromQL keyword (`rate(foo_total[1s])` → `foo_total`), else the expression itself.
    pub fn channel_name(&self) -> String {
        if let Some(n) = &self.name {
            return n.clone();
        }
        // Aggregations may be written `sum by (x) (...)`, so they are not always followed by
        // `(`; grouping keywords are followed by a label list, which is skipped.
        const KEYWORDS: [&str; 16] = [
            "and", "or", "unless", "offset", "bool", "sum", "min", "max", "avg", "count", "group",
            "stddev", "stdvar", "topk", "bottomk", "quantile",
        ];
        const GROUPING: [&str; 6] = [
            "by",
            "without",
            "on",
            "ignoring",
            "group_left",
            "group_right",
        ];
        let b = self.expr.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c == b'"' || c == b'\'' {
                // Skip label values: they are not names.
                i += 1;
                while i < b.len() && b[i] != c {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            } else if c == b'[' {
                // Range durations (`[1s]`) and subqueries hold no names.
                i = self.expr[i..].find(']').map_or(b.len(), |p| i + p + 1);
            } else if c.is_ascii_digit() {
                // Numbers like `1e3` or `0x1f` must not yield `e3` or `x1f`.
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                    i += 1;
                }
            } else if c.is_ascii_alphabetic() || c == b'_' || c == b':' {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b':')
                {
                    i += 1;
                }
                let word = &self.expr[start..i];
                let next = self.expr[i..].trim_start();
                let in_braces = self.expr[..start].matches('{').count()
                    > self.expr[..start].matches('}').count();
                if GROUPING.contains(&word) {
                    if next.starts_with('(') {
                        i = self.expr[i..].find(')').map_or(b.len(), |p| i + p + 1);
                    }
                    continue;
                }
                if !next.starts_with('(') && !KEYWORDS.contains(&word) && !in_braces {
                    return word.to_string();
                }
            } else {
                i += 1;
            }
        }
        self.expr.trim().to_string()
    }
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MetricKind {
    Dynamic,
    Event,
    Static,
}

impl From<MetricKind> for Kind {
    fn from(k: MetricKind) -> Kind {
        match k {
            MetricKind::Dynamic => Kind::Dynamic,
            MetricKind::Event => Kind::Event,
            MetricKind::Static => Kind::Static,
        }
    }
}

/// A metric-set file: the `metrics:` key of the analyzer configuration.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MetricSetFile {
    pub metrics: Vec<MetricSpec>,
}

#[derive(Debug, thiserror::Error)]
pub enum KindsError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {}", reveal_schema::excerpt::library_message(.source))]
    Yaml {
        path: String,
        source: yaml_serde::Error,
    },
    #[error("{path}: metrics.{index}: {msg}")]
    Entry {
        path: String,
        index: usize,
        msg: String,
    },
}

/// Compiled metric set: the first entry whose regex matches the whole metric name decides.
#[derive(Debug, Clone, Default)]
pub struct MetricSet {
    entries: Vec<Entry>,
}

/// One compiled entry of a [`MetricSet`].
#[derive(Debug, Clone)]
struct Entry {
    re: Regex,
    device_label: Option<String>,
    subsystem: Subsystem,
    kind: Option<Kind>,
    resolution: Option<f64>,
    max_rate: Option<f64>,
    /// Its series are per-second rates ([`MetricSet::mark_per_second`]).
    per_second: bool,
}

impl MetricSet {
    /// Compiles entries; `origin` names the file in errors.
    pub fn new(specs: &[MetricSpec], origin: &str) -> Result<MetricSet, KindsError> {
        let mut entries = Vec::with_capacity(specs.len());
        for (index, spec) in specs.iter().enumerate() {
            let err = |msg: String| KindsError::Entry {
                path: origin.to_string(),
                index,
                msg,
            };
            let max = reveal_schema::selection::MAX_PATTERN_LEN;
            if spec.expr.len() > max {
                return Err(err(format!(
                    "expr is {} bytes long; at most {max}",
                    spec.expr.len()
                )));
            }
            let re = Regex::new(&format!("^(?:{})$", spec.expr))
                .map_err(|e| err(format!("expr is not a metric-name regex: {e}")))?;
            let sub = Subsystem::parse(&spec.subsystem).ok_or_else(|| {
                err(format!(
                    "unknown subsystem {:?}",
                    reveal_schema::Excerpt(&spec.subsystem)
                ))
            })?;
            let resolution = match spec.resolution {
                Some(r) if !(r.is_finite() && r >= 0.0) => {
                    return Err(err(format!("resolution {r} is not a finite number ≥ 0")));
                }
                r => r,
            };
            if let Some(r) = spec.max_rate.filter(|r| !(r.is_finite() && *r > 0.0)) {
                return Err(err(format!("max_rate {r} is not a finite number > 0")));
            }
            entries.push(Entry {
                re,
                device_label: spec.device_label.clone(),
                subsystem: sub,
                kind: spec.kind.map(Kind::from),
                resolution,
                max_rate: spec.max_rate,
                per_second: false,
            });
        }
        Ok(MetricSet { entries })
    }

    /// The device labels the entries declare (`device_label`), each once.
    pub fn device_labels(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for l in self.entries.iter().filter_map(|e| e.device_label.clone()) {
            if !out.contains(&l) {
                out.push(l);
            }
        }
        out
    }

    /// Parses a metric-set YAML text.
    pub fn parse(yaml: &str, origin: &str) -> Result<MetricSet, KindsError> {
        if let Some(line) = reveal_schema::nesting::too_deep(yaml) {
            return Err(KindsError::Yaml {
                path: origin.to_string(),
                source: serde::de::Error::custom(reveal_schema::nesting::message(line)),
            });
        }
        let file: MetricSetFile =
            yaml_serde::from_str(yaml).map_err(|source| KindsError::Yaml {
                path: origin.to_string(),
                source,
            })?;
        MetricSet::new(&file.metrics, origin)
    }

    pub fn load(path: &Path) -> Result<MetricSet, KindsError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| KindsError::Io {
            path: origin.clone(),
            source,
        })?;
        MetricSet::parse(&text, &origin)
    }

    /// Subsystem and kind of a metric: the matching entry, else the defaults.
    pub fn classify(&self, metric: &str, metric_type: MetricType) -> (Subsystem, Kind) {
        self.classify_series(metric, &[], metric_type)
    }

    /// Like [`MetricSet::classify`], with the series' labels for the default kind (a
    /// counter family like `reveal_network_protocol_events_total{name="RetransSegs"}` holds
    /// event counters under one name).
    pub fn classify_series(
        &self,
        metric: &str,
        labels: &[(String, String)],
        metric_type: MetricType,
    ) -> (Subsystem, Kind) {
        let default = || default_series_kind(metric, labels, metric_type);
        for e in &self.entries {
            if e.re.is_match(metric) {
                return (e.subsystem, e.kind.unwrap_or_else(default));
            }
        }
        (Subsystem::from_metric_name(metric), default())
    }

    /// Marks entry `index`'s series as per-second rates: the Prometheus source does for
    /// every expression that applies `rate` or `irate` ([`applies_rate`]).
    pub fn mark_per_second(&mut self, index: usize) {
        if let Some(e) = self.entries.get_mut(index) {
            e.per_second = true;
        }
    }

    /// Whether a metric's channels are per-second rates: the matching entry's mark.
    pub fn per_second(&self, metric: &str) -> bool {
        self.entries
            .iter()
            .find(|e| e.re.is_match(metric))
            .is_some_and(|e| e.per_second)
    }

    /// The least meaningful change of a metric's channels: the matching entry's
    /// `resolution`, else [`default_resolution`].
    pub fn resolution(&self, metric: &str) -> f64 {
        self.entries
            .iter()
            .find(|e| e.re.is_match(metric))
            .and_then(|e| e.resolution)
            .unwrap_or_else(|| default_resolution(metric))
    }

    /// The most a counter of this metric can grow per second: the matching entry's
    /// `max_rate`, else [`default_max_rate`].
    pub fn max_rate(&self, metric: &str) -> Option<f64> {
        self.entries
            .iter()
            .find(|e| e.re.is_match(metric))
            .and_then(|e| e.max_rate)
            .or_else(|| default_max_rate(metric))
    }
}

/// Whether a PromQL expression's values are per-second rates: it applies `rate` or `irate`
/// (`sum without (cpu) (rate(x_total[1s]))`, a ratio of two rates) or reads a recorded one
/// (`level:x_bytes:rate1s`, Prometheus' naming convention); `increase` and `delta` are not
/// per second.
pub fn applies_rate(expr: &str) -> bool {
    // Quoted label values are not PromQL: blank them out first.
    let mut code = String::with_capacity(expr.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in expr.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
                code.push(' ');
            }
            None if c == '"' || c == '\'' || c == '`' => {
                quote = Some(c);
                code.push(' ');
            }
            None => code.push(c),
        }
    }
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut rest = code.as_str();
    while let Some(start) = rest.find(ident) {
        let tail = &rest[start..];
        let len = tail.find(|c| !ident(c)).unwrap_or(tail.len());
        let word = &tail[..len];
        let called = tail[len..].trim_start().starts_with('(');
        if (called && (word == "rate" || word == "irate")) || recorded_rate(word).is_some() {
            return true;
        }
        rest = &tail[len..];
    }
    false
}

/// A recording rule's rate by Prometheus' naming convention (`level:metric:rate1s`,
/// `…:irate…`): the name before its operation (`level:metric`).
fn recorded_rate(name: &str) -> Option<&str> {
    name.rsplit_once(':')
        .filter(|(_, op)| op.starts_with("rate") || op.starts_with("irate"))
        .map(|(rest, _)| rest)
}

/// One page: the unit in which the kernel keeps memory and moves blocks.
pub const PAGE_BYTES: f64 = 4096.0;
/// One tick of the kernel's CPU-time accounting (`USER_HZ` = 100), in seconds.
pub const CLOCK_TICK_SECONDS: f64 = 0.01;

/// The least meaningful change of a metric by its name's unit suffix, for the metric itself
/// and for its per-second rate alike: bytes (`_bytes`, `_bytes_total`) one page, CPU and
/// device time (`_seconds_total`) one clock tick, any other counter (`_total`) one event;
/// none (0) for anything else, whose unit the name does not say (ratios, temperatures).
/// A recording rule's rate (`level:reveal_x_bytes:rate1s`, named by Prometheus' convention
/// without `_total`) counts as the rate of its counter.
pub fn default_resolution(metric: &str) -> f64 {
    let counter;
    let name = match recorded_rate(metric) {
        Some(rest) => {
            let base = rest.rsplit(':').next().unwrap_or(rest);
            counter = format!("{}_total", base.trim_end_matches("_total"));
            counter.as_str()
        }
        _ => metric,
    };
    if name.ends_with("_bytes") || name.ends_with("_bytes_total") {
        PAGE_BYTES
    } else if name.ends_with("_seconds_total") {
        CLOCK_TICK_SECONDS
    } else if name.ends_with("_total") {
        1.0
    } else {
        0.0
    }
}

// Storage "discards" (TRIM) are I/O operations, not losses, so "discard" is not here.
const EVENT_WORDS: [&str; 26] = [
    "error",
    "errors",
    "err",
    "errs",
    "drop",
    "drops",
    "dropped",
    "retrans",
    "retransmit",
    "retransmits",
    "retransmitted",
    "retranssegs",
    "ecc",
    "fault",
    "faults",
    "timeout",
    "timeouts",
    "lost",
    "loss",
    "overrun",
    "overruns",
    "fail",
    "failed",
    "failure",
    "failures",
    "retired",
];
const STATIC_WORDS: [&str; 19] = [
    "size",
    "hugepagesize",
    "total",
    "limit",
    "limits",
    "capacity",
    "max",
    "min",
    "info",
    "temperature",
    "temp",
    "celsius",
    "version",
    "width",
    "generation",
    "gen",
    "mtu",
    "pagesize",
    "boot",
];
/// Label values name counters in CamelCase or run-together (`TCPLostRetransmit`,
/// `pgmajfault`, `ListenDrops`), so they are searched for these parts.
const EVENT_PARTS: [&str; 9] = [
    "error", "retrans", "drop", "fault", "timeout", "lost", "fail", "overrun", "ecc",
];

/// [`default_kind`], and for counters also an event when a label value names an event
/// (`{name="RetransSegs"}`, `{counter="symbol_error"}`).
pub fn default_series_kind(
    metric: &str,
    labels: &[(String, String)],
    metric_type: MetricType,
) -> Kind {
    let by_name = default_kind(metric, metric_type);
    if by_name == Kind::Dynamic && metric_type == MetricType::Counter {
        let event = labels.iter().any(|(_, v)| {
            let v = v.to_ascii_lowercase();
            EVENT_PARTS.iter().any(|p| v.contains(p))
        });
        if event {
            return Kind::Event;
        }
    }
    by_name
}

/// The default kind of a metric by its name and declared type.
pub fn default_kind(metric: &str, metric_type: MetricType) -> Kind {
    // The exporter's own health (collector durations, success, process_*) describes the
    // exporter, not the host: kept for cross-host comparison, not scored.
    if metric_type == MetricType::Info || reveal_schema::catalog::is_self_metric(metric) {
        return Kind::Static;
    }
    let lower = metric.to_ascii_lowercase();
    let base = if metric_type == MetricType::Counter {
        lower.strip_suffix("_total").unwrap_or(&lower)
    } else {
        &lower
    };
    let has = |words: &[&str]| base.split(['_', ':']).any(|w| words.contains(&w));
    if metric_type == MetricType::Counter && has(&EVENT_WORDS) {
        Kind::Event
    } else if has(&STATIC_WORDS) {
        Kind::Static
    } else {
        Kind::Dynamic
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overlong_expression_is_refused_before_it_is_compiled() {
        let spec = MetricSpec {
            expr: "a|".repeat(reveal_schema::selection::MAX_PATTERN_LEN),
            name: None,
            subsystem: "cpu".into(),
            kind: None,
            resolution: None,
            device_label: None,
            max_rate: None,
        };
        let e = MetricSet::new(&[spec], "set.yml").unwrap_err().to_string();
        assert!(e.contains("at most 4096"), "{e}");
    }

    #[test]
    fn channel_names_skip_functions_keywords_and_labels() {
        let name = |e: &str| {
            MetricSpec {
                expr: e.into(),
                name: None,
                subsystem: "cpu".into(),
                kind: None,
                resolution: None,
                device_label: None,
                max_rate: None,
            }
            .channel_name()
        };
        assert_eq!(name("rate(foo_total[1s])"), "foo_total");
        assert_eq!(
            name("sum by (mode) (rate(bar_total{mode=\"idle\"}[5m]))"),
            "bar_total"
        );
        assert_eq!(name("1e3 * baz"), "baz");
        assert_eq!(name("{__name__=~\"x.*\"}"), "{__name__=~\"x.*\"}");
        let named = MetricSpec {
            expr: "up".into(),
            name: Some("alive".into()),
            subsystem: "cpu".into(),
            kind: None,
            resolution: None,
            device_label: None,
            max_rate: None,
        };
        assert_eq!(named.channel_name(), "alive");
    }

    #[test]
    fn rate_expressions_are_per_second() {
        for e in [
            "rate(reveal_cpu_softirqs_total[1s])",
            "sum without (cpu) (rate (x_total[1s]))",
            "irate(x_total[1s])",
            "sum(rate(a_total[1s])) / sum(rate(b_total[1s]))",
            "level:reveal_x_bytes:rate1s",
        ] {
            assert!(applies_rate(e), "{e}");
        }
        for e in [
            "reveal_cpu_procs_running",
            "increase(x_total[1s])",
            "my_rate(x)",
            "x{mode=\"rate(\"}",
            "reveal_cpu_softirqs_rate",
        ] {
            assert!(!applies_rate(e), "{e}");
        }
    }

    #[test]
    fn resolutions_by_unit_entry_and_recording_rule_name() {
        let r = default_resolution;
        assert_eq!(r("reveal_storage_written_bytes_total"), PAGE_BYTES);
        assert_eq!(r("reveal_memory_dirty_bytes"), PAGE_BYTES);
        assert_eq!(r("reveal_cpu_time_seconds_total"), CLOCK_TICK_SECONDS);
        assert_eq!(r("reveal_cpu_context_switches_total"), 1.0);
        assert_eq!(r("instance:reveal_cpu_context_switches:rate1s"), 1.0);
        assert_eq!(r("reveal_storage_read_bytes:rate1s"), PAGE_BYTES);
        assert_eq!(r("instance_cpu:reveal_cpu_utilization:ratio1s"), 0.0);
        assert_eq!(r("reveal_cpu_frequency_hertz"), 0.0);
        let set = MetricSet::parse(
            "metrics:\n  - expr: reveal_cpu_softirqs_rate\n    subsystem: cpu\n    resolution: 1\n\
             \n  - expr: reveal_storage_.*\n    subsystem: storage\n",
            "m.yml",
        )
        .unwrap();
        assert_eq!(set.resolution("reveal_cpu_softirqs_rate"), 1.0);
        // An entry without one leaves the default by name.
        assert_eq!(
            set.resolution("reveal_storage_read_bytes_total"),
            PAGE_BYTES
        );
        let bad = MetricSet::parse(
            "metrics:\n  - expr: x\n    subsystem: cpu\n    resolution: -1\n",
            "m.yml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            bad.contains("metrics.0") && bad.contains("resolution"),
            "{bad}"
        );
    }

    #[test]
    fn a_busy_time_grows_at_most_a_second_a_second_unless_an_entry_says_otherwise() {
        assert_eq!(
            default_max_rate("reveal_storage_io_time_seconds_total"),
            Some(1.0)
        );
        assert_eq!(
            default_max_rate("node_disk_io_time_seconds_total"),
            Some(1.0)
        );
        // The time of requests in flight adds up over them: no bound.
        assert_eq!(
            default_max_rate("reveal_storage_read_time_seconds_total"),
            None
        );
        assert_eq!(default_max_rate("reveal_cpu_time_seconds_total"), None);
        let set = MetricSet::parse(
            "metrics:\n  - expr: reveal_cpu_busy_seconds_total\n    subsystem: cpu\n    \
             max_rate: 1\n  - expr: reveal_storage_.*\n    subsystem: storage\n",
            "m.yml",
        )
        .unwrap();
        assert_eq!(set.max_rate("reveal_cpu_busy_seconds_total"), Some(1.0));
        assert_eq!(
            set.max_rate("reveal_storage_io_time_seconds_total"),
            Some(1.0)
        );
        assert_eq!(set.max_rate("reveal_storage_read_bytes_total"), None);
        for bad in ["0", "-1", ".nan"] {
            let yaml = format!("metrics:\n  - expr: x\n    subsystem: cpu\n    max_rate: {bad}\n");
            let e = MetricSet::parse(&yaml, "m.yml").unwrap_err().to_string();
            assert!(e.contains("metrics.0") && e.contains("max_rate"), "{e}");
        }
    }

    #[test]
    fn defaults_by_name_and_type() {
        use MetricType::*;
        let k = default_kind;
        assert_eq!(k("reveal_network_receive_drop_total", Counter), Kind::Event);
        assert_eq!(k("reveal_gpu_ecc_errors_total", Counter), Kind::Event);
        assert_eq!(k("reveal_memory_page_faults_total", Counter), Kind::Event);
        assert_eq!(
            k("reveal_network_tcp_retrans_segments_total", Counter),
            Kind::Event
        );
        assert_eq!(k("reveal_cpu_seconds_total", Counter), Kind::Dynamic);
        assert_eq!(k("reveal_memory_mem_total_bytes", Gauge), Kind::Static);
        assert_eq!(k("reveal_memory_hugepagesize_bytes", Gauge), Kind::Static);
        assert_eq!(k("reveal_cpu_temperature_celsius", Gauge), Kind::Static);
        assert_eq!(k("reveal_gpu_clock_max_hertz", Gauge), Kind::Static);
        assert_eq!(k("reveal_exporter_build_info", Gauge), Kind::Static);
        assert_eq!(k("process_cpu_seconds_total", Counter), Kind::Static);
        assert_eq!(k("process_open_fds", Gauge), Kind::Static);
        assert_eq!(k("reveal_build", Info), Kind::Static);
        assert_eq!(k("reveal_cpu_frequency_hertz", Gauge), Kind::Dynamic);
        // An error gauge is a level, not a stream of events.
        assert_eq!(k("reveal_gpu_errors_pending", Gauge), Kind::Dynamic);
        assert_eq!(
            k("reveal_storage_discards_completed_total", Counter),
            Kind::Dynamic
        );
        assert_eq!(k("reveal_cpu_boot_time_seconds", Gauge), Kind::Static);
        assert_eq!(
            k("reveal_exporter_collector_duration_seconds", Gauge),
            Kind::Static
        );
        assert_eq!(k("reveal_gpu_retired_pages_total", Counter), Kind::Event);
        let l = |v: &str| vec![("name".to_string(), v.to_string())];
        let ev = |m: &str, v: &str| default_series_kind(m, &l(v), Counter);
        assert_eq!(
            ev("reveal_network_protocol_events_total", "RetransSegs"),
            Kind::Event
        );
        assert_eq!(
            ev("reveal_network_protocol_events_total", "TCPLostRetransmit"),
            Kind::Event
        );
        assert_eq!(
            ev("reveal_memory_vmstat_events_total", "pgmajfault"),
            Kind::Event
        );
        assert_eq!(
            ev("reveal_network_protocol_events_total", "InSegs"),
            Kind::Dynamic
        );
        assert_eq!(
            ev("reveal_cpu_interrupts_total", "interrupts"),
            Kind::Dynamic
        );
        // Only counters are events; a gauge stays what its name says.
        let g = default_series_kind("reveal_network_protocol_value", &l("InErrors"), Gauge);
        assert_eq!(g, Kind::Dynamic);
    }

    #[test]
    fn metric_set_overrides_and_rejects_bad_entries() {
        let set = MetricSet::parse(
            "metrics:\n  - expr: reveal_memory_huge.*\n    subsystem: memory\n    kind: dynamic\n  - expr: Busy%\n    subsystem: cpu\n",
            "set.yml",
        )
        .unwrap();
        assert_eq!(
            set.classify("reveal_memory_hugepages_total", MetricType::Gauge),
            (Subsystem::Memory, Kind::Dynamic)
        );
        assert_eq!(
            set.classify("Busy%", MetricType::Gauge),
            (Subsystem::Cpu, Kind::Dynamic)
        );
        // Anchored: a prefix alone does not match.
        assert_eq!(
            set.classify("xreveal_memory_huge", MetricType::Gauge).0,
            Subsystem::Other
        );
        let e = MetricSet::parse("metrics:\n  - expr: a\n    subsystem: disk\n", "f").unwrap_err();
        assert!(e.to_string().contains("metrics.0"), "{e}");
        let e = MetricSet::parse(
            "metrics:\n  - expr: a\n    subsystem: cpu\n    kin: event\n",
            "f",
        )
        .unwrap_err();
        assert!(e.to_string().contains("kin"), "{e}");
        assert!(MetricSet::parse("metrics:\n  - expr: '('\n    subsystem: cpu\n", "f").is_err());
    }
}
