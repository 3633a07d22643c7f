//! The Prometheus source: one `query_range` per metric-set expression, each returning the
//! series of every host at once, split into hosts by the host label. A pass therefore costs
//! as many queries as the metric set has entries, whatever the number of hosts; the queries
//! of a pass run concurrently.
//!
//! Consecutive passes overlap: each asks for its windows' whole span (window + stride) for
//! one stride of new windows. The source keeps the previous answers and asks only for the
//! grid points it does not hold yet, then trims the kept ones to the new span
//! ([`reuse`]); any other range (history, a gap after a failed pass) is asked for whole.
//! The newest points it holds are asked for again ([`PrometheusSource::with_settle`]): a
//! sample that landed after the previous pass read its point (a slow scrape, remote write in
//! batches) showed there as the sample before it — a flat step, and for a counter a zero
//! increase and then a double one — and kept, that would stay in the next windows too.
//!
//! Series carry no type over the query API: a series that still has its `__name__` and whose
//! name ends in `_total` is taken as a raw counter (the matrix turns it into per-step
//! increases); everything else — notably the result of `rate()` — as a gauge.
//!
//! At start the service checks every expression against the server ([`check`]); in every
//! pass it counts the entries that returned no series ([`entries`]).

pub mod check;
pub mod entries;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Instant;

use crate::core::matrix::{HostMatrix, Kind, MetricType};
use crate::ingest::kinds::{applies_rate, default_kind, MetricKind, MetricSet, MetricSpec};
use crate::ingest::promapi::{Matrix, PromClient, PromError};
use crate::ingest::shard::Shard;
use crate::ingest::{Assembler, Source, SourceError, SourceOptions, TimeRange};

pub struct PrometheusSource {
    client: PromClient,
    specs: Vec<MetricSpec>,
    options: SourceOptions,
    /// The hosts this analyzer owns; series of other hosts are dropped on arrival.
    shard: Shard,
    /// Warnings the server attached to the latest pass (deduplicated).
    pub last_warnings: Vec<String>,
    /// Duration of the latest pass.
    pub last_duration: std::time::Duration,
    /// Hosts of the latest pass whose series came from several targets ([`duplicate_hosts`]).
    pub last_duplicates: BTreeMap<String, BTreeSet<String>>,
    /// Series each metric-set entry returned in the latest pass (all hosts, every shard's),
    /// in metric-set order.
    pub last_series: Vec<usize>,
    /// The previous answers and the grid points they hold, first and last.
    kept: Option<(i64, i64, Vec<Matrix>)>,
    /// Whether `kept` answers are reused (on unless [`PrometheusSource::whole_spans`]).
    reuse: bool,
    /// The newest span of a kept answer that is asked for again ([`Self::with_settle`]).
    settle_ms: i64,
}

/// First grid point at or after `t`.
pub fn align_up(t: i64, step: i64) -> i64 {
    let step = step.max(1);
    t.div_euclid(step) * step + if t.rem_euclid(step) == 0 { 0 } else { step }
}

/// The name regex of an expression that is a bare `{__name__=~"re", …}` selector (its series
/// keep their names), unescaped from its PromQL string; `None` for anything else.
fn name_regex(expr: &str) -> Option<String> {
    use std::sync::OnceLock;
    static SELECTOR: OnceLock<regex::Regex> = OnceLock::new();
    let re = SELECTOR.get_or_init(|| {
        regex::Regex::new(r#"^\{\s*__name__\s*=~\s*"((?:[^"\\]|\\.)*)"\s*(?:,[^{}]*)?\}$"#)
            .expect("static regex")
    });
    let inner = re.captures(expr.trim())?.get(1)?.as_str();
    let unescaped = inner.replace("\\\\", "\\").replace("\\\"", "\"");
    regex::Regex::new(&unescaped).ok().map(|_| unescaped)
}

/// The metric-set entries keyed by the channel names a Prometheus source gives their series:
/// what classifies a channel of the live service (its subsystem and kind).
pub fn by_channel_name(specs: &[MetricSpec]) -> Vec<MetricSpec> {
    // Each expression's series are classified by the subsystem and kind of its entry:
    // the assembler's metric set is keyed by the exact channel names this source gives.
    // An entry without a kind gets the default of its name, judged as a counter when the
    // name is a counter's (`rate(x_total[1s])` is still about the events or time of `x_total`).
    specs
        .iter()
        .map(|s| {
            let name = s.channel_name();
            let kind = s.kind.unwrap_or_else(|| {
                let t = if name.ends_with("_total") {
                    MetricType::Counter
                } else {
                    MetricType::Gauge
                };
                match default_kind(&name, t) {
                    Kind::Dynamic => MetricKind::Dynamic,
                    Kind::Event => MetricKind::Event,
                    Kind::Static => MetricKind::Static,
                }
            });
            // A `{__name__=~"re"}` entry's series keep their own names: every name the
            // regex selects takes the entry's subsystem, kind and resolution.
            MetricSpec {
                expr: name_regex(&s.expr).unwrap_or_else(|| regex::escape(&name)),
                kind: Some(kind),
                ..s.clone()
            }
        })
        .collect()
}

impl PrometheusSource {
    /// `step_ms` is the query step and grid; `host_label` splits hosts.
    pub fn new(
        client: PromClient,
        specs: &[MetricSpec],
        step_ms: i64,
        host_label: &str,
    ) -> Result<Self, SourceError> {
        let by_name = by_channel_name(specs);
        let mut metric_set =
            MetricSet::new(&by_name, "metrics").map_err(|e| SourceError::Other(e.to_string()))?;
        for (i, s) in specs.iter().enumerate() {
            if applies_rate(&s.expr) {
                metric_set.mark_per_second(i);
            }
        }
        Ok(PrometheusSource {
            client,
            specs: specs.to_vec(),
            options: SourceOptions {
                step_ms: step_ms.max(1),
                host_label: host_label.to_string(),
                default_host: String::new(),
                metric_set,
            },
            shard: Shard::ALL,
            last_warnings: Vec::new(),
            last_duration: std::time::Duration::ZERO,
            last_duplicates: BTreeMap::new(),
            last_series: Vec::new(),
            kept: None,
            reuse: true,
            settle_ms: 0,
        })
    }

    /// Asks every call for its whole span, reusing nothing: what the source did before it
    /// kept answers, for measuring the difference.
    pub fn whole_spans(mut self) -> Self {
        self.reuse = false;
        self
    }

    /// Asks again for the points of a kept answer within `settle_ms` of its newest one: the
    /// service passes twice its `delay`, so a sample up to three delays late (read as the
    /// sample before it when its point was first asked for) costs only the window scored
    /// before it landed, not the next ones that hold its point as well.
    pub fn with_settle(mut self, settle_ms: i64) -> Self {
        self.settle_ms = settle_ms.max(0);
        self
    }

    /// Keeps only the hosts of `shard` (see [`crate::ingest::shard`]).
    pub fn with_shard(mut self, shard: Shard) -> Self {
        self.shard = shard;
        self
    }

    pub fn step_ms(&self) -> i64 {
        self.options.step_ms
    }

    /// The client the source queries with, for other questions to the same server.
    pub fn client(&self) -> &PromClient {
        &self.client
    }

    /// The label that tells hosts apart.
    pub fn host_label(&self) -> &str {
        &self.options.host_label
    }

    /// Every expression over the grid points in `[start, end)`, in metric-set order: the
    /// points the previous call already holds are reused when the range starts inside them
    /// and ends after them, and only the newer points are queried.
    pub async fn query_all(&mut self, range: TimeRange) -> Result<&[Matrix], PromError> {
        let step = self.options.step_ms;
        let start = align_up(range.start_ms, step);
        let end = align_up(range.end_ms, step) - step;
        let kept = self.kept.take().filter(|_| self.reuse);
        let out = match kept {
            Some((k0, k1, old)) if k0 <= start && start <= k1 + step && end >= k1 => {
                let from = ask_from(start, end, k1, step, self.settle_ms);
                let fresh = if end >= from {
                    self.query_points(from, end).await?
                } else {
                    vec![Matrix::default(); self.specs.len()]
                };
                old.into_iter()
                    .zip(fresh)
                    .map(|(o, f)| reuse(o, f, start, from))
                    .collect()
            }
            _ => self.query_points(start, end).await?,
        };
        Ok(&self.kept.insert((start, end, out)).2)
    }

    /// Runs every expression over the grid points `start..=end` concurrently and returns
    /// the raw results in metric-set order. The first failure fails the pass: a pass with a
    /// subsystem missing would look like a change of the machine.
    async fn query_points(&self, start: i64, end: i64) -> Result<Vec<Matrix>, PromError> {
        let step = self.options.step_ms;
        if end < start {
            return Ok(vec![Matrix::default(); self.specs.len()]);
        }
        let mut set = tokio::task::JoinSet::new();
        for (i, spec) in self.specs.iter().enumerate() {
            let (client, expr) = (self.client.clone(), spec.expr.clone());
            set.spawn(async move { (i, client.query_range(&expr, start, end, step).await) });
        }
        let mut out = vec![Matrix::default(); self.specs.len()];
        while let Some(joined) = set.join_next().await {
            // A query task panicking would be a bug in the parser, which is fuzzed; report it
            // as a failed pass rather than taking the analyzer down.
            let (i, res) = joined.map_err(|e| PromError::Parse {
                expr: "?".into(),
                status: 0,
                msg: e.to_string(),
            })?;
            out[i] = res?;
        }
        Ok(out)
    }

    /// The hosts' matrices over `[start, end)`.
    pub async fn fetch_async(&mut self, range: TimeRange) -> Result<Vec<HostMatrix>, SourceError> {
        let t0 = Instant::now();
        self.query_all(range)
            .await
            .map_err(|e| SourceError::Other(e.to_string()))?;
        let results = self.kept.as_ref().map_or(&[][..], |k| &k.2[..]);
        self.last_duration = t0.elapsed();
        self.last_warnings.clear();
        for m in results {
            for w in &m.warnings {
                if !self.last_warnings.contains(w) {
                    self.last_warnings.push(w.clone());
                }
            }
        }
        self.last_series = results.iter().map(|m| m.series.len()).collect();
        let shard = self.shard;
        self.last_duplicates = duplicate_hosts(results, &self.options.host_label);
        self.last_duplicates.retain(|host, _| shard.owns(host));
        assemble(&self.specs, &self.options, shard, results)
    }
}

/// The first grid point to ask for when the points up to `held` are kept from the previous
/// answer and the points `start..=end` are needed: the point after `held`, less the held
/// points within `settle_ms` of it (asked for again), never before `start`; past `end` when
/// nothing new is needed.
pub fn ask_from(start: i64, end: i64, held: i64, step: i64, settle_ms: i64) -> i64 {
    if end <= held {
        return end + step;
    }
    (held + step - align_up(settle_ms.max(0), step)).max(start)
}

/// Hosts whose series come from more than one scrape job: the same metric with the same
/// labels but for `job` under one host label value, as when two targets are relabeled to the
/// same `instance`. Their channels would be mixed into one host; the service reports them.
/// Returns each such host with the jobs seen.
pub fn duplicate_hosts(results: &[Matrix], host_label: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut first_job: HashMap<String, &str> = HashMap::new();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (i, m) in results.iter().enumerate() {
        for s in &m.series {
            let (Some(host), Some(job)) = (s.labels.get(host_label), s.labels.get("job")) else {
                continue;
            };
            let mut key = format!("{i}");
            for (k, v) in s.labels.iter().filter(|(k, _)| *k != "job") {
                key.push('\u{0}');
                key.push_str(k);
                key.push('\u{0}');
                key.push_str(v);
            }
            match first_job.get(&key) {
                None => {
                    first_job.insert(key, job);
                }
                Some(&j) if j != job.as_str() => {
                    let jobs = out.entry(host.clone()).or_default();
                    jobs.insert(j.to_string());
                    jobs.insert(job.clone());
                }
                Some(_) => {}
            }
        }
    }
    out
}

/// The kept answer `old` trimmed to the points in `[keep_from, fresh_from)`, with the points
/// of `fresh` (asked for from `fresh_from` on) appended to each series; series new in `fresh`
/// are added, and series absent from it keep their remaining points (they went stale or
/// vanished; their gap shows as missing samples, as in a whole answer).
pub fn reuse(old: Matrix, fresh: Matrix, keep_from: i64, fresh_from: i64) -> Matrix {
    let mut by_labels: BTreeMap<BTreeMap<String, String>, Vec<(i64, f64)>> = old
        .series
        .into_iter()
        .map(|s| {
            let samples: Vec<(i64, f64)> = s
                .samples
                .into_iter()
                .filter(|(t, _)| *t >= keep_from && *t < fresh_from)
                .collect();
            (s.labels, samples)
        })
        .collect();
    for s in fresh.series {
        by_labels
            .entry(s.labels)
            .or_default()
            .extend(s.samples.into_iter().filter(|(t, _)| *t >= keep_from));
    }
    Matrix {
        series: by_labels
            .into_iter()
            .filter(|(_, samples)| !samples.is_empty())
            .map(|(labels, samples)| crate::ingest::promapi::Series { labels, samples })
            .collect(),
        // The latest answers' warnings only.
        warnings: fresh.warnings,
    }
}

/// Routes every series of every result to its host's matrix; series of hosts outside
/// `shard` are dropped.
pub fn assemble(
    specs: &[MetricSpec],
    options: &SourceOptions,
    shard: Shard,
    results: &[Matrix],
) -> Result<Vec<HostMatrix>, SourceError> {
    let mut asm = Assembler::new(options);
    let mut key = String::new();
    // Each host's hash once per pass, not once per series.
    let mut owned: HashMap<&str, bool> = HashMap::new();
    for (spec, m) in specs.iter().zip(results) {
        let fallback = spec.channel_name();
        for s in &m.series {
            let Some(host) = s.labels.get(&options.host_label) else {
                continue;
            };
            if !*owned.entry(host).or_insert_with(|| shard.owns(host)) {
                continue;
            }
            let (metric, metric_type) = match s.labels.get("__name__") {
                Some(n) if n.ends_with("_total") => (n.as_str(), MetricType::Counter),
                Some(n) => (n.as_str(), MetricType::Gauge),
                None => (fallback.as_str(), MetricType::Gauge),
            };
            let labels: Vec<(String, String)> = s
                .labels
                .iter()
                .filter(|(k, _)| *k != "__name__")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            key.clear();
            key.push_str(metric);
            for (k, v) in &labels {
                key.push('\u{0}');
                key.push_str(k);
                key.push('\u{0}');
                key.push_str(v);
            }
            for &(t, v) in &s.samples {
                asm.push(&key, metric, &labels, metric_type, t, v);
            }
        }
    }
    match asm.finish() {
        Err(SourceError::Empty) => Ok(Vec::new()),
        other => other,
    }
}

impl Source for PrometheusSource {
    fn name(&self) -> &'static str {
        "prometheus"
    }

    /// Blocking fetch for offline use (`analyze` over a past range); the online service
    /// calls [`PrometheusSource::fetch_async`] on its own runtime instead.
    fn fetch(&mut self, range: Option<TimeRange>) -> Result<Vec<HostMatrix>, SourceError> {
        let range = range
            .ok_or_else(|| SourceError::Other("the Prometheus source needs a time range".into()))?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| SourceError::Other(format!("starting a runtime: {e}")))?;
        rt.block_on(self.fetch_async(range))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::matrix::Subsystem;
    use crate::ingest::promapi::Series;
    use std::collections::BTreeMap;

    #[test]
    fn a_name_selector_classifies_every_name_it_selects() {
        assert_eq!(
            name_regex(r#"{__name__=~"reveal_a_bytes|reveal_b_(c|d)"}"#).as_deref(),
            Some("reveal_a_bytes|reveal_b_(c|d)")
        );
        assert_eq!(
            name_regex(r#"{ __name__ =~ "x\\.y", device!="lo" }"#).as_deref(),
            Some(r"x\.y")
        );
        assert_eq!(name_regex(r#"rate({__name__=~"a"}[1s])"#), None);
        assert_eq!(name_regex("reveal_a_bytes"), None);
        assert_eq!(name_regex(r#"{__name__=~"("}"#), None);
        // Both names take the entry's kind, not their names' default.
        let spec: MetricSpec = yaml_serde::from_str(
            "expr: '{__name__=~\"reveal_memory_a_bytes|reveal_memory_b_total_bytes\"}'\n\
             subsystem: gpu\nkind: event\n",
        )
        .unwrap();
        let set = MetricSet::new(
            &[MetricSpec {
                expr: name_regex(&spec.expr).unwrap(),
                ..spec
            }],
            "metrics",
        )
        .unwrap();
        for name in ["reveal_memory_a_bytes", "reveal_memory_b_total_bytes"] {
            let (sub, kind) = set.classify(name, MetricType::Gauge);
            assert_eq!((sub, kind), (Subsystem::Gpu, Kind::Event), "{name}");
        }
    }

    fn series(labels: &[(&str, &str)], samples: &[(i64, f64)]) -> Series {
        Series {
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
            samples: samples.to_vec(),
        }
    }

    fn spec(
        expr: &str,
        subsystem: &str,
        kind: Option<crate::ingest::kinds::MetricKind>,
    ) -> MetricSpec {
        MetricSpec {
            expr: expr.into(),
            name: None,
            subsystem: subsystem.into(),
            kind,
            resolution: None,
            device_label: None,
            max_rate: None,
        }
    }

    #[test]
    fn splits_hosts_and_classifies_by_entry() {
        let specs = [
            spec("rate(reveal_cpu_time_seconds_total[1s])", "cpu", None),
            spec(
                "reveal_storage_written_bytes_total",
                "storage",
                Some(crate::ingest::kinds::MetricKind::Event),
            ),
        ];
        let src = PrometheusSource::new(
            PromClient::new(
                crate::http::HttpClient::new(&Default::default()).unwrap(),
                "http://x",
            ),
            &specs,
            100,
            "instance",
        )
        .unwrap();
        let results = vec![
            Matrix {
                series: vec![
                    series(
                        &[("instance", "a"), ("cpu", "0"), ("mode", "user")],
                        &[(1000, 0.5), (1100, 0.6)],
                    ),
                    series(
                        &[("instance", "b"), ("cpu", "0"), ("mode", "user")],
                        &[(1000, 0.1), (1100, 0.2)],
                    ),
                    series(&[("cpu", "0")], &[(1000, 9.0)]),
                ],
                warnings: vec![],
            },
            Matrix {
                series: vec![series(
                    &[
                        ("__name__", "reveal_storage_written_bytes_total"),
                        ("instance", "a"),
                        ("device", "sda"),
                    ],
                    &[(1000, 100.0), (1100, 150.0)],
                )],
                warnings: vec![],
            },
        ];
        let hosts = assemble(&specs, &src.options, Shard::ALL, &results).unwrap();
        assert_eq!(
            hosts.iter().map(|h| h.host.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        let a = &hosts[0];
        assert_eq!(a.n_channels(), 2);
        let cpu = a
            .channels
            .iter()
            .position(|c| c.subsystem == Subsystem::Cpu)
            .unwrap();
        assert_eq!(
            a.channels[cpu].name,
            "reveal_cpu_time_seconds_total{cpu=\"0\",mode=\"user\"}"
        );
        assert_eq!(a.channels[cpu].kind, Kind::Dynamic);
        assert_eq!(a.row(cpu).to_vec(), vec![0.5, 0.6]);
        assert!(a.channels[cpu].per_second, "a rate() is per second");
        let disk = 1 - cpu;
        assert_eq!(a.channels[disk].kind, Kind::Event);
        assert!(
            !a.channels[disk].per_second,
            "a raw counter holds per-step increases"
        );
        assert_eq!(a.channels[disk].metric_type, MetricType::Counter);
        assert_eq!(
            a.row(disk)[1],
            50.0,
            "raw counters become per-step increases"
        );
    }

    #[test]
    fn empty_results_are_no_hosts() {
        let opts = SourceOptions::default();
        assert!(assemble(&[], &opts, Shard::ALL, &[]).unwrap().is_empty());
    }

    #[test]
    fn a_kept_answer_is_trimmed_and_extended() {
        let pts = |r: std::ops::Range<i64>| r.map(|t| (t * 100, t as f64)).collect::<Vec<_>>();
        let m = |series: Vec<Series>, w: &str| Matrix {
            series,
            warnings: vec![w.to_string()],
        };
        let old = m(
            vec![
                series(&[("instance", "a")], &pts(0..5)),
                series(&[("instance", "b")], &pts(0..5)),
                series(&[("instance", "gone")], &pts(0..2)),
            ],
            "old",
        );
        let fresh = m(
            vec![
                series(&[("instance", "a")], &pts(5..7)),
                series(&[("instance", "new")], &pts(1..7)),
            ],
            "new",
        );
        let got = reuse(old, fresh, 200, 500);
        let by: BTreeMap<&str, Vec<(i64, f64)>> = got
            .series
            .iter()
            .map(|s| (s.labels["instance"].as_str(), s.samples.clone()))
            .collect();
        assert_eq!(
            by["a"],
            pts(2..7),
            "old points from 200 ms on, then the new ones"
        );
        assert_eq!(
            by["b"],
            pts(2..5),
            "absent from the new answer: what remains"
        );
        assert_eq!(by["new"], pts(2..7), "new series, trimmed to the span too");
        assert!(!by.contains_key("gone"), "nothing left in the span");
        assert_eq!(got.warnings, ["new"]);
    }

    #[test]
    fn the_newest_held_points_are_asked_for_again_and_replace_the_kept_ones() {
        // Held up to 1000 ms at a 100 ms step; the next pass needs 400..=2000.
        assert_eq!(
            ask_from(400, 2000, 1000, 100, 0),
            1100,
            "only the new points"
        );
        assert_eq!(
            ask_from(400, 2000, 1000, 100, 400),
            700,
            "the newest 400 ms again"
        );
        assert_eq!(
            ask_from(400, 2000, 1000, 100, 350),
            700,
            "settle rounds up to a step"
        );
        assert_eq!(
            ask_from(400, 2000, 1000, 100, 5000),
            400,
            "never before the span"
        );
        assert_eq!(
            ask_from(400, 1000, 1000, 100, 400),
            1100,
            "nothing new: nothing asked"
        );
        // The point at 400 ms read before its sample landed (the sample before it, 3.0) is
        // replaced by the answer asked for again; the points before it are kept.
        let pts = |v: &[(i64, f64)]| v.to_vec();
        let old = Matrix {
            series: vec![series(
                &[("instance", "a")],
                &pts(&[(200, 2.0), (300, 3.0), (400, 3.0)]),
            )],
            warnings: vec![],
        };
        let fresh = Matrix {
            series: vec![series(
                &[("instance", "a")],
                &pts(&[(400, 4.0), (500, 5.0)]),
            )],
            warnings: vec![],
        };
        let got = reuse(old, fresh, 300, 400);
        assert_eq!(
            got.series[0].samples,
            pts(&[(300, 3.0), (400, 4.0), (500, 5.0)])
        );
    }

    #[test]
    fn two_targets_under_one_host_name_are_reported() {
        let s = |job: &str, inst: &str, cpu: &str| {
            series(
                &[("instance", inst), ("job", job), ("cpu", cpu)],
                &[(1000, 1.0)],
            )
        };
        let results = vec![Matrix {
            series: vec![
                s("reveal", "node-1", "0"),
                s("reveal", "node-1", "1"),
                s("reveal-old", "node-1", "0"),
                s("reveal", "node-2", "0"),
                s("other", "node-3", "0"),
            ],
            warnings: vec![],
        }];
        let d = duplicate_hosts(&results, "instance");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(
            d["node-1"].iter().map(String::as_str).collect::<Vec<_>>(),
            ["reveal", "reveal-old"]
        );
        // The same labels in two different expressions' results are not duplicates.
        let twice = vec![results[0].clone(), results[0].clone()];
        assert_eq!(duplicate_hosts(&twice, "instance").len(), 1);
    }

    /// One exporter scraped by two jobs, its fast series by `reveal` every 100 ms and the rest by
    /// `reveal-slow` (`/metrics?cadence=fast|slow`): one host, never reported, since no series
    /// is served by both. Not even one metric split between them by a label (vmstat's events
    /// the analyzer reads are fast, the others slow), nor an expression whose answer holds
    /// both jobs' series.
    #[test]
    fn two_cadences_of_one_exporter_are_not_duplicates() {
        let s = |job: &str, name: &str, label: (&str, &str)| {
            series(
                &[
                    ("__name__", name),
                    ("instance", "node-1:19190"),
                    ("job", job),
                    label,
                ],
                &[(1000, 1.0)],
            )
        };
        let results = vec![
            Matrix {
                series: vec![
                    s("reveal", "reveal_cpu_time_seconds_total", ("cpu", "0")),
                    s("reveal", "reveal_cpu_time_seconds_total", ("cpu", "1")),
                ],
                warnings: vec![],
            },
            Matrix {
                series: vec![
                    s(
                        "reveal",
                        "reveal_memory_vmstat_events_total",
                        ("event", "pgfault"),
                    ),
                    s(
                        "reveal-slow",
                        "reveal_memory_vmstat_events_total",
                        ("event", "nr_foo"),
                    ),
                    s(
                        "reveal-slow",
                        "reveal_cpu_idle_state_time_seconds_total",
                        ("cpu", "0"),
                    ),
                ],
                warnings: vec![],
            },
        ];
        assert!(duplicate_hosts(&results, "instance").is_empty());
        // The same series from both jobs (an exporter scraped whole twice) is still reported.
        let mut twice = results.clone();
        twice[0].series.push(s(
            "reveal-slow",
            "reveal_cpu_time_seconds_total",
            ("cpu", "0"),
        ));
        assert_eq!(duplicate_hosts(&twice, "instance").len(), 1);
    }

    #[test]
    fn a_shard_keeps_only_its_hosts() {
        let specs = [spec("synth_busy", "cpu", None)];
        let hosts: Vec<String> = (0..30).map(|n| format!("node-{n}:9100")).collect();
        let results = vec![Matrix {
            series: hosts
                .iter()
                .map(|h| series(&[("instance", h)], &[(1000, 1.0), (1100, 2.0)]))
                .collect(),
            warnings: vec![],
        }];
        let opts = SourceOptions::default();
        let mut seen = Vec::new();
        for index in 0..3 {
            let shard = Shard { index, count: 3 };
            for m in assemble(&specs, &opts, shard, &results).unwrap() {
                assert!(shard.owns(&m.host));
                seen.push(m.host);
            }
        }
        seen.sort();
        let mut all = hosts.clone();
        all.sort();
        assert_eq!(seen, all, "every host in exactly one shard");
    }

    #[test]
    fn aligns_to_the_grid() {
        assert_eq!(align_up(1001, 100), 1100);
        assert_eq!(align_up(1000, 100), 1000);
        assert_eq!(align_up(-50, 100), 0);
    }
}
