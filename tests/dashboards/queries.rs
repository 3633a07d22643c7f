//! What the dashboards, rules and the stack's analyzer config ask Prometheus: collecting their
//! expressions, the metric names in them, and Grafana's variables filled in.

use reveal_e2e::workspace_bin;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

/// Raw metrics that only some machines have, and why they may be missing here.
pub const HARDWARE: &[(&str, &str)] = &[
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
    ("reveal_gpu_clock_hertz", "an NVIDIA GPU (NVML)"),
    ("reveal_gpu_temperature_celsius", "an NVIDIA GPU (NVML)"),
    ("reveal_gpu_pcie_throughput_bytes_per_second", "an NVIDIA GPU (NVML)"),
    ("reveal_gpu_retired_pages_total", "an NVIDIA GPU with page retirement (NVML)"),
    ("reveal_gpu_nvlink_errors_total", "an NVIDIA GPU with NVLink (NVML)"),
    ("reveal_cpu_cstate_residency_cycles_total", "C-state residency MSRs (msr collector)"),
    ("reveal_cpu_temperature_celsius", "a CPU temperature sensor (hwmon: coretemp, k10temp)"),
    ("reveal_cpu_idle_state_time_seconds_total", "a cpuidle driver (/sys/devices/system/cpu/cpu*/cpuidle)"),
    ("reveal_network_infiniband_receive_bytes_total", "an InfiniBand HCA (/sys/class/infiniband)"),
    ("reveal_network_infiniband_transmit_bytes_total", "an InfiniBand HCA (/sys/class/infiniband)"),
    ("reveal_network_infiniband_port_events_total", "an InfiniBand HCA (/sys/class/infiniband)"),
];

/// Series the analyzer writes (not the exporter's).
pub const ANALYZER_SERIES: &[&str] = &[
    "reveal_anomaly_score",
    "reveal_anomaly_agreement",
    "reveal_anomaly_subsystem",
    "reveal_host_deviation",
];

/// The analyzer's own metrics that rules read (scraped from its `/metrics`).
pub const ANALYZER_SELF_METRICS: &[&str] = &["reveal_analyzer_shards"];

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One expression to run, and where it comes from.
#[derive(Debug, Clone)]
pub struct Query {
    pub origin: String,
    pub expr: String,
}

pub fn read_json(path: &PathBuf) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn dashboards() -> Vec<(String, Value)> {
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

pub fn ds_type(v: &Value) -> &str {
    v["datasource"]["type"].as_str().unwrap_or("")
}

/// The `job` label of the exporter's scrape job in rules/prometheus.yml (and in this test's
/// Prometheus): what the dashboards' `$job` variable selects.
pub const EXPORTER_JOB: &str = "reveal";

/// A dashboard's panels, those inside collapsed rows included.
pub fn all_panels(d: &Value) -> Vec<Value> {
    let mut panels: Vec<Value> = d["panels"].as_array().unwrap().clone();
    let nested: Vec<Value> = panels
        .iter()
        .flat_map(|p| p["panels"].as_array().cloned().unwrap_or_default())
        .collect();
    panels.extend(nested);
    panels
}

/// PromQL of the dashboards: panels, annotations, and the series their query variables ask for.
pub fn dashboard_queries() -> Vec<Query> {
    let mut promql = Vec::new();
    for (file, d) in dashboards() {
        assert_eq!(
            d["editable"], false,
            "{file}: dashboards are provisioned read-only"
        );
        for p in &all_panels(&d) {
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
            // The datasource variable lists datasources, not series.
            if v["type"] == "datasource" {
                continue;
            }
            let q = v["query"]["query"].as_str().unwrap();
            // label_values(selector, label): Grafana asks for the selector's series. The
            // selector may hold commas (label matchers); the label is after the last one.
            let metric = q
                .strip_prefix("label_values(")
                .and_then(|r| r.strip_suffix(')'))
                .and_then(|r| r.rsplit_once(','))
                .map(|(selector, _)| selector)
                .unwrap_or_else(|| {
                    panic!("{file}: variable query {q:?} is not label_values(selector, label)")
                });
            promql.push(Query {
                origin: format!("{file}: variable {}", v["name"]),
                expr: metric.trim().to_string(),
            });
        }
    }
    promql
}

pub fn yaml(path: &str) -> yaml_serde::Value {
    yaml_serde::from_str(&std::fs::read_to_string(root().join(path)).unwrap()).unwrap()
}

/// Every rule of rules/*.rules.yml: (recorded name or alert name, expression).
pub fn rules() -> Vec<(String, Query)> {
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

pub fn analyzer_queries() -> Vec<Query> {
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
pub fn metric_names(expr: &str) -> BTreeSet<String> {
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

/// Grafana's variables, as Grafana fills them for this host (in the exporter's job) and a
/// 5-minute range: a value in a regex matcher (`=~"$instance"`, the multi-value variables) is
/// regex-escaped. `${datasource}` names the datasource of a query, never appears in one.
pub fn substitute(expr: &str, instance: &str) -> String {
    let escaped = instance.replace('.', "\\\\.");
    expr.replace("$__rate_interval", "4s")
        .replace("$__interval", "1s")
        .replace("$__range", "5m")
        .replace("=~\"$instance\"", &format!("=~\"{escaped}\""))
        .replace("$instance", instance)
        .replace("$job", EXPORTER_JOB)
}

/// Every metric family the exporter can emit, from its generated metric table.
pub fn exporter_families() -> BTreeSet<String> {
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

/// The stack's prometheus.yml with this test's ports, absolute rule paths (the alternative
/// anomaly alerts switched on, so the alert panels have alerts to show), and one more exporter
/// target where nothing listens (a host whose exporter is down). The slow job (`reveal-slow`,
/// every 15 s) is scraped every second here, so that its series have samples in the 4 s
/// `$__rate_interval` of a short test (Grafana widens it to four scrapes for the panels that
/// show them, which set a minimum interval of 15 s).
pub fn prometheus_config(exporter: u16, alertmanager: &str, dead: u16) -> String {
    let text = std::fs::read_to_string(root().join("rules/prometheus.yml")).unwrap();
    let mut out = String::new();
    let mut in_slow = false;
    for line in text.lines() {
        if line.trim_start().starts_with("- job_name:") {
            in_slow = line.trim_end().ends_with("reveal-slow");
        }
        let line = if in_slow {
            line.replace("scrape_interval: 15s", "scrape_interval: 1s")
                .replace("scrape_timeout: 5s", "scrape_timeout: 1s")
        } else {
            line.to_string()
        };
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
