//! Every PromQL expression of every Grafana dashboard (panels, annotations, variables), every
//! rule of rules/, and every metric of the stack's analyzer config (deploy/analyzer.yml) runs
//! against a live Prometheus and must return data. The Prometheus runs the stack's own
//! rules/prometheus.yml (ports rewritten) with its rules, scrapes the real exporter on this
//! host at 100 ms, and sends alerts to a real Alertmanager running rules/alertmanager.yml.
//!
//! The analyzer's anomaly series come from the analyzer's own remote-write encoder
//! (`reveal_analyzer::remote_write::Batch`, the code `reveal-analyzer run` writes with),
//! posted by this test to Prometheus' remote-write receiver once a second: two detectors
//! agreeing on the exporter's host, cross-host deviations of three hosts, and one host whose
//! analysis stopped. Detection itself is tested by the analyzer's end-to-end tests; this test
//! checks that the queries fit the series.
//!
//! The only expressions allowed to come back empty are those that need what this machine lacks
//! ([`HARDWARE`]): each is excused only when the metric it needs is really absent from this
//! host's scrape, so on a machine with the hardware the same test requires their data too.

use reveal_analyzer::remote_write::{Batch, WindowPoint};
use reveal_e2e::alertmanager::{self, Alertmanager};
use reveal_e2e::prometheus::{self, Prometheus};
use reveal_e2e::{free_port, http, workspace_bin, Proc};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Raw metrics that only some machines have, and why they may be missing here.
const HARDWARE: &[(&str, &str)] = &[
    ("reveal_cpu_instructions_total", "hardware perf counters (perf collector; VMs usually expose software events only)"),
    ("reveal_cpu_cycles_total", "hardware perf counters (perf collector)"),
    ("reveal_cpu_branch_instructions_total", "hardware perf counters (perf collector)"),
    ("reveal_cpu_branch_misses_total", "hardware perf counters (perf collector)"),
    ("reveal_cpu_cache_references_total", "hardware perf counters (perf collector)"),
    ("reveal_cpu_cache_misses_total", "hardware perf counters (perf collector)"),
    ("reveal_memory_perf_event_total", "the vendor event cycle_activity.stalls_l3_miss (an Intel PMU, declared in the exporter's config)"),
    ("reveal_cpu_aperf_cycles_total", "APERF/MPERF/TSC MSRs (msr collector: CAP_SYS_RAWIO and x86 MSRs)"),
    ("reveal_cpu_mperf_cycles_total", "APERF/MPERF/TSC MSRs (msr collector)"),
    ("reveal_cpu_tsc_cycles_total", "APERF/MPERF/TSC MSRs (msr collector)"),
    ("reveal_cpu_frequency_hertz", "a cpufreq driver (/sys/devices/system/cpu/cpu*/cpufreq)"),
    ("reveal_cpu_rapl_energy_joules_total", "RAPL energy counters (/sys/class/powercap)"),
    ("reveal_gpu_utilization_ratio", "an NVIDIA GPU and driver (gpu collector, NVML)"),
    ("reveal_gpu_memory_utilization_ratio", "an NVIDIA GPU (NVML)"),
    ("reveal_gpu_memory_used_bytes", "an NVIDIA GPU (NVML)"),
    ("reveal_gpu_memory_total_bytes", "an NVIDIA GPU (NVML)"),
    ("reveal_gpu_power_watts", "an NVIDIA GPU (NVML)"),
    ("reveal_gpu_pcie_link_width", "an NVIDIA GPU (NVML)"),
    ("reveal_gpu_pcie_link_width_max", "an NVIDIA GPU (NVML)"),
    ("reveal_gpu_pcie_link_generation", "an NVIDIA GPU (NVML)"),
    ("reveal_gpu_pcie_link_generation_max", "an NVIDIA GPU (NVML)"),
    ("reveal_gpu_throttle_reason", "an NVIDIA GPU (NVML)"),
    ("reveal_gpu_ecc_errors_total", "an NVIDIA GPU with ECC memory (NVML)"),
];

/// Series the analyzer writes (not the exporter's).
const ANALYZER_SERIES: &[&str] = &[
    "reveal_anomaly_score",
    "reveal_anomaly_agreement",
    "reveal_anomaly_subsystem",
    "reveal_host_deviation",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One expression to run, and where it comes from.
#[derive(Debug, Clone)]
struct Query {
    origin: String,
    expr: String,
}

fn read_json(path: &PathBuf) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn dashboards() -> Vec<(String, Value)> {
    let mut v: Vec<_> = std::fs::read_dir(root().join("grafana/dashboards"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().to_string(),
                read_json(&p),
            )
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(
        v.len() >= 3,
        "expected the host, anomalies and cluster dashboards"
    );
    v
}

fn ds_type(v: &Value) -> &str {
    v["datasource"]["type"].as_str().unwrap_or("")
}

/// PromQL of the dashboards, and the Alertmanager matchers of their alert tables.
fn dashboard_queries() -> (Vec<Query>, Vec<Query>) {
    let (mut promql, mut matchers) = (Vec::new(), Vec::new());
    for (file, d) in dashboards() {
        assert_eq!(
            d["editable"], false,
            "{file}: dashboards are provisioned read-only"
        );
        let mut panels: Vec<Value> = d["panels"].as_array().unwrap().clone();
        // Collapsed rows carry their panels inside.
        let nested: Vec<Value> = panels
            .iter()
            .flat_map(|p| p["panels"].as_array().cloned().unwrap_or_default())
            .collect();
        panels.extend(nested);
        for p in &panels {
            for t in p["targets"].as_array().into_iter().flatten() {
                let q = Query {
                    origin: format!(
                        "{file}: panel {:?} {}",
                        p["title"].as_str().unwrap_or(""),
                        t["refId"]
                    ),
                    expr: t["expr"].as_str().unwrap_or_default().to_string(),
                };
                match ds_type(t) {
                    "prometheus" => promql.push(q),
                    "camptocamp-prometheus-alertmanager-datasource" => matchers.push(q),
                    other => panic!("{}: unexpected datasource {other:?}", q.origin),
                }
            }
        }
        for a in d["annotations"]["list"].as_array().into_iter().flatten() {
            if ds_type(a) == "prometheus" {
                promql.push(Query {
                    origin: format!("{file}: annotation {:?}", a["name"]),
                    expr: a["expr"].as_str().unwrap().to_string(),
                });
            }
        }
        for v in d["templating"]["list"].as_array().into_iter().flatten() {
            let q = v["query"]["query"].as_str().unwrap();
            // label_values(metric, label): Grafana asks for the metric's series.
            let metric = q
                .strip_prefix("label_values(")
                .and_then(|r| r.split(',').next())
                .unwrap_or_else(|| {
                    panic!("{file}: variable query {q:?} is not label_values(metric, label)")
                });
            promql.push(Query {
                origin: format!("{file}: variable {}", v["name"]),
                expr: metric.trim().to_string(),
            });
        }
    }
    (promql, matchers)
}

fn yaml(path: &str) -> serde_yaml::Value {
    serde_yaml::from_str(&std::fs::read_to_string(root().join(path)).unwrap()).unwrap()
}

/// Every rule of rules/*.rules.yml: (recorded name or alert name, expression).
fn rules() -> Vec<(String, Query)> {
    let mut out = Vec::new();
    let mut files: Vec<String> = std::fs::read_dir(root().join("rules"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".rules.yml"))
        .map(|n| format!("rules/{n}"))
        .collect();
    files.sort();
    for f in &files {
        for g in yaml(f)["groups"].as_sequence().unwrap() {
            for r in g["rules"].as_sequence().unwrap() {
                let name = r["record"]
                    .as_str()
                    .or(r["alert"].as_str())
                    .unwrap()
                    .to_string();
                let expr = r["expr"].as_str().unwrap().trim().to_string();
                out.push((
                    name.clone(),
                    Query {
                        origin: format!("{f}: {name}"),
                        expr,
                    },
                ));
            }
        }
    }
    out
}

fn analyzer_queries() -> Vec<Query> {
    yaml("deploy/analyzer.yml")["metrics"]
        .as_sequence()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, m)| Query {
            origin: format!("deploy/analyzer.yml: metrics.{i}"),
            expr: m["expr"].as_str().unwrap().to_string(),
        })
        .collect()
}

/// Metric names an expression refers to: identifiers outside strings, label matchers and
/// ranges that are metric names of ours (reveal_*, recording rules) or Prometheus' own.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let (b, mut i) = (expr.as_bytes(), 0);
    while i < b.len() {
        let c = b[i];
        if c == b'"' || c == b'\'' || c == b'`' {
            i += 1;
            while i < b.len() && b[i] != c {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == b'{' || c == b'[' {
            let close = if c == b'{' { '}' } else { ']' };
            // Skip to the closing bracket, past quoted values that may contain it.
            let mut j = i + 1;
            while j < b.len() && b[j] as char != close {
                if b[j] == b'"' {
                    j += 1;
                    while j < b.len() && b[j] != b'"' {
                        j += if b[j] == b'\\' { 2 } else { 1 };
                    }
                }
                j += 1;
            }
            i = j + 1;
        } else if c.is_ascii_alphabetic() || c == b'_' || c == b':' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b':') {
                i += 1;
            }
            let w = &expr[s..i];
            if w.starts_with("reveal_") || w.contains(':') || w == "ALERTS" || w == "up" {
                out.insert(w.to_string());
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Grafana's variables, as Grafana fills them for this host and a 5-minute range: a value in
/// a regex matcher (`=~"$instance"`, the multi-value variables) is regex-escaped.
fn substitute(expr: &str, instance: &str) -> String {
    let escaped = instance.replace('.', "\\\\.");
    expr.replace("$__rate_interval", "4s")
        .replace("$__interval", "1s")
        .replace("$__range", "5m")
        .replace("=~\"$instance\"", &format!("=~\"{escaped}\""))
        .replace("$instance", instance)
}

/// Every metric family the exporter can emit, from its generated metric table.
fn exporter_families() -> BTreeSet<String> {
    let out = Command::new(workspace_bin("reveal-exporter"))
        .arg("--print-metrics")
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut names: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_string)
        .collect();
    assert!(
        names.len() > 50,
        "--print-metrics lists too few metrics: {names:?}"
    );
    // The runner's self-metrics are not in the collector table.
    for n in [
        "reveal_exporter_collector_success",
        "reveal_exporter_collector_duration_seconds",
        "reveal_exporter_build_info",
    ] {
        names.insert(n.to_string());
    }
    names
}

#[test]
fn every_query_names_metrics_that_exist() {
    let families = exporter_families();
    let recorded: BTreeSet<String> = rules()
        .into_iter()
        .filter(|(n, _)| n.contains(':'))
        .map(|(n, _)| n)
        .collect();
    let (promql, _) = dashboard_queries();
    let mut unknown = Vec::new();
    for q in promql
        .iter()
        .chain(rules().iter().map(|(_, q)| q))
        .chain(analyzer_queries().iter())
    {
        for m in metric_names(&q.expr) {
            let known = families.contains(&m)
                || recorded.contains(&m)
                || ANALYZER_SERIES.contains(&m.as_str())
                || m == "ALERTS"
                || m == "up";
            if !known {
                unknown.push(format!("{}: {m}", q.origin));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "queries name metrics nothing emits:\n{}",
        unknown.join("\n")
    );
    for (m, _) in HARDWARE {
        assert!(
            families.contains(*m),
            "HARDWARE lists {m}, which the exporter does not emit"
        );
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Posts a batch to Prometheus' remote-write receiver, as `reveal-analyzer run` does.
fn remote_write(prom: &Prometheus, batch: &Batch) {
    let body = batch.encode();
    let r = http::request(
        prom.addr(),
        "POST",
        "/api/v1/write",
        &[
            ("Content-Type", "application/x-protobuf"),
            ("Content-Encoding", "snappy"),
            ("X-Prometheus-Remote-Write-Version", "0.1.0"),
        ],
        &body,
    )
    .expect("remote write");
    assert!(
        r.status / 100 == 2,
        "remote write refused: {} {}",
        r.status,
        r.text()
    );
}

/// Writes the anomaly series of the stack once a second until `stop`.
fn write_anomaly_series(prom: &Prometheus, host: &str, stop: &AtomicBool) {
    // A host whose analysis stopped 90 s ago (RevealAnalysisStale).
    let mut stale = Batch::default();
    stale.add_window(&WindowPoint {
        instance: "stale-host:19190",
        end_ms: now_ms() - 90_000,
        scores: &[("zscore", 0.4)],
        agreement: 0,
        subsystems: &[],
    });
    remote_write(prom, &stale);
    let mut k = 0u32;
    while !stop.load(Ordering::Relaxed) {
        let t = now_ms();
        let wobble = f64::from(k % 5) * 0.05;
        let mut b = Batch::default();
        b.add_window(&WindowPoint {
            instance: host,
            end_ms: t,
            scores: &[
                ("zscore", 1.4 + wobble),
                ("pca", 1.2),
                ("iforest", 0.8 + wobble),
            ],
            // Every fourth window all three detectors agree.
            agreement: if k % 4 == 3 { 3 } else { 2 },
            subsystems: &[("cpu", 0.75), ("storage", 0.25)],
        });
        for (h, memory, cpu) in [
            (host, 0.8, 1.1),
            ("peer-a:19190", 0.3, 0.9),
            ("peer-b:19190", 5.5 + wobble, 0.7),
        ] {
            b.add_deviation(h, "memory", t, memory);
            b.add_deviation(h, "cpu", t, cpu);
        }
        remote_write(prom, &b);
        k += 1;
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// The stack's prometheus.yml with this test's ports, absolute rule paths (the alternative
/// anomaly alerts switched on, so the alert panels have alerts to show), and one more exporter
/// target where nothing listens (a host whose exporter is down).
fn prometheus_config(exporter: u16, alertmanager: &str, dead: u16) -> String {
    let text = std::fs::read_to_string(root().join("rules/prometheus.yml")).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let mut l = line
            .replace(
                "127.0.0.1:19190\"]",
                &format!("127.0.0.1:{exporter}\", \"127.0.0.1:{dead}\"]"),
            )
            .replace("127.0.0.1:19093", alertmanager);
        if l.trim() == "# - anomaly-alerts.rules.yml" {
            l = "  - anomaly-alerts.rules.yml".to_string();
        }
        if let Some(f) = l
            .trim()
            .strip_prefix("- ")
            .filter(|f| f.ends_with(".rules.yml"))
        {
            l = format!("  - {}", root().join("rules").join(f).display());
        }
        out.push_str(&l);
        out.push('\n');
    }
    assert!(
        out.contains(&format!("127.0.0.1:{dead}")),
        "the exporter target was not rewritten:\n{out}"
    );
    assert!(
        out.contains("rules/anomaly-alerts.rules.yml"),
        "the anomaly alerts were not switched on:\n{out}"
    );
    out
}

#[test]
fn every_query_returns_data_from_the_live_stack() {
    if prometheus::available().is_none() || alertmanager::available().is_none() {
        return;
    }
    let exporter_port = free_port();
    let host = format!("127.0.0.1:{exporter_port}");
    let mut exporter = Proc::spawn(
        "exporter",
        Command::new(workspace_bin("reveal-exporter")).arg(format!("--web.listen-address={host}")),
    );
    exporter.wait_http_ready(
        reveal_e2e::loopback(exporter_port),
        "/metrics",
        Duration::from_secs(20),
    );
    let am = Alertmanager::with_config(
        &std::fs::read_to_string(root().join("rules/alertmanager.yml")).unwrap(),
    );
    let prom = Prometheus::with_config(&prometheus_config(
        exporter_port,
        &am.addr().to_string(),
        free_port(),
    ))
    .start();

    // Prometheus applies discovered Alertmanagers a few seconds after start; an alert that
    // fires before that is only re-sent a minute later. Write anomalies once it knows its
    // Alertmanager.
    let deadline = Instant::now() + Duration::from_secs(30);
    while prom
        .api("alertmanagers", &[])
        .map(|v| v["activeAlertmanagers"].as_array().map_or(0, Vec::len))
        != Ok(1)
    {
        assert!(
            Instant::now() < deadline,
            "Prometheus never picked up its Alertmanager:\n{}",
            prom.logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, prom_addr, host) = (stop.clone(), prom.addr(), host.clone());
        std::thread::spawn(move || write_anomaly_series(&Prometheus::at(prom_addr), &host, &stop))
    };
    struct StopOnDrop(Arc<AtomicBool>);
    impl Drop for StopOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let _stop = StopOnDrop(stop.clone());

    // Data everywhere: scrapes, the 1 s recording rules over them, and a firing alert rule
    // (RevealAnomalyDetected holds for 2 s) that reached Alertmanager.
    let wait = Duration::from_secs(60);
    prom.wait_for_value(&format!("up{{instance=\"{host}\"}}"), |v| v == 1.0, wait);
    prom.wait_for_value(
        &format!("count(instance_cpu:reveal_cpu_utilization:ratio1s{{instance=\"{host}\"}})"),
        |v| v >= 1.0,
        wait,
    );
    prom.wait_for_value(
        "count(ALERTS{alertname=\"RevealAnomalyDetected\",alertstate=\"firing\"})",
        |v| v >= 1.0,
        wait,
    );
    // Rates over $__rate_interval need that much history.
    std::thread::sleep(Duration::from_secs(5));

    // The host's scrape, to tell missing hardware from a broken query.
    let present: BTreeSet<String> = prom
        .query(&format!("count by (__name__) ({{instance=\"{host}\"}})"))
        .unwrap()
        .into_iter()
        .filter_map(|s| s.metric.get("__name__").cloned())
        .collect();
    let rule_deps: BTreeMap<String, BTreeSet<String>> = rules()
        .into_iter()
        .map(|(n, q)| (n, metric_names(&q.expr)))
        .collect();
    // Raw metrics an expression needs, through the recording rules it uses.
    let raw_needs = |expr: &str| {
        let mut todo: Vec<String> = metric_names(expr).into_iter().collect();
        let mut raw = BTreeSet::new();
        while let Some(m) = todo.pop() {
            match rule_deps.get(&m) {
                Some(deps) if m.contains(':') => todo.extend(deps.iter().cloned()),
                _ => {
                    raw.insert(m);
                }
            }
        }
        raw
    };

    let (promql, matchers) = dashboard_queries();
    let all: Vec<Query> = promql
        .into_iter()
        .chain(rules().into_iter().map(|(_, q)| q))
        .chain(analyzer_queries())
        .collect();
    let end = now_ms() as f64 / 1000.0;
    let (mut failures, mut excused, mut ok) = (Vec::new(), Vec::new(), 0);
    for q in &all {
        let expr = substitute(&q.expr, &host);
        let result = prom.query_range(&expr, end - 20.0, end, 1.0);
        match result {
            Err(e) => failures.push(format!("{}: {e}", q.origin)),
            Ok(series) if series.iter().any(|s| !s.values.is_empty()) => ok += 1,
            Ok(_) => {
                let missing: Vec<String> = raw_needs(&q.expr)
                    .into_iter()
                    .filter(|m| !present.contains(m))
                    .filter_map(|m| {
                        HARDWARE
                            .iter()
                            .find(|(h, _)| *h == m)
                            .map(|(_, why)| format!("{m}: {why}"))
                    })
                    .collect();
                if missing.is_empty() {
                    failures.push(format!("{}: no data from {expr}", q.origin));
                } else {
                    excused.push(format!("{}\n      needs {}", q.origin, missing.join("; ")));
                }
            }
        }
    }
    eprintln!(
        "{ok} of {} expressions returned data; excused for missing hardware on this host:",
        all.len()
    );
    for e in &excused {
        eprintln!("  - {e}");
    }
    assert!(
        failures.is_empty(),
        "expressions without data:\n{}",
        failures.join("\n")
    );
    assert!(
        ok * 2 > all.len(),
        "most expressions must return data here ({ok} of {})",
        all.len()
    );

    // The claims tables ask Alertmanager with their matchers: the alert is there, with the
    // summary the table shows.
    assert!(!matchers.is_empty());
    for m in &matchers {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let path = format!(
                "/api/v2/alerts?active=true&filter={}",
                http::urlencode(&m.expr)
            );
            let r = http::get(am.addr(), &path).unwrap();
            assert_eq!(r.status, 200, "{}: {}", m.origin, r.text());
            let alerts: Vec<Value> = serde_json::from_slice(&r.body).unwrap();
            if alerts.iter().any(|a| {
                a["annotations"]["summary"]
                    .as_str()
                    .is_some_and(|s| !s.is_empty())
            }) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{}: Alertmanager lists no alert with a summary for {path}: {alerts:?}\nall alerts: {:?}\nPrometheus sends to: {:?}",
                m.origin,
                am.alerts(),
                prom.api("alertmanagers", &[])
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    drop(exporter);
}

#[test]
fn metric_name_extraction() {
    let names = metric_names(
        r#"sum without (cpu) (rate(reveal_cpu_time_seconds_total{mode=~"idle|x{y}"}[1s])) / on (instance) instance:reveal_memory_utilization:ratio and ALERTS{a="reveal_not_this"}"#,
    );
    let want: BTreeSet<String> = [
        "reveal_cpu_time_seconds_total",
        "instance:reveal_memory_utilization:ratio",
        "ALERTS",
    ]
    .map(String::from)
    .into();
    assert_eq!(names, want);
}
