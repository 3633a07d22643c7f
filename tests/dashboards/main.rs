//! Every PromQL expression of every Grafana dashboard (panels, annotations, variables), every
//! rule of rules/, and every metric of the stack's analyzer config (deploy/analyzer.yml) runs
//! against a live Prometheus and must return data. The Prometheus runs the stack's own
//! rules/prometheus.yml (ports rewritten, the opt-in anomaly alert rules switched on) with its
//! rules, scrapes the real exporter on this host at 100 ms, and sends alerts to a real
//! Alertmanager running rules/alertmanager.yml ([`stack`]).
//!
//! - [`live`]: the anomaly series are written by the test with the analyzer's own remote-write
//!   encoder (`reveal_analyzer::outputs::remote_write::Batch`), once a second: two or three detectors
//!   agreeing on the exporter's host, cross-host deviations of three hosts, and one host whose
//!   analysis stopped — so every expression, alerts and flagged subsystems included, has data
//!   to find.
//! - [`analyzer`]: the real `reveal-analyzer run` with deploy/analyzer.yml writes them, so the
//!   panels are checked against what the analyzer really emits (names, labels, values).
//!
//! The only expressions allowed to come back empty are those that need what this machine lacks
//! ([`queries::HARDWARE`]): each is excused only when the metric it needs is really absent
//! from this host's scrape, so on a machine with the hardware the same test requires their
//! data too. Detection itself is tested by the analyzer's end-to-end tests.
//!
//! Without a live stack, [`dashboards_import_into_any_grafana`] checks that no panel is bound to
//! a datasource uid or a plugin: every query reads the `datasource` variable.

mod analyzer;
mod live;
mod queries;
mod stack;

use queries::*;
use serde_json::Value;
use std::collections::BTreeSet;

#[test]
fn every_query_names_metrics_that_exist() {
    let families = exporter_families();
    let recorded: BTreeSet<String> = rules()
        .into_iter()
        .filter(|(n, _)| n.contains(':'))
        .map(|(n, _)| n)
        .collect();
    let promql = dashboard_queries();
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
                || ANALYZER_SELF_METRICS.contains(&m.as_str())
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

/// Every datasource reference in a dashboard (panels, targets, annotations, variables).
fn datasource_refs(v: &Value, path: &str, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let here = format!("{path}/{k}");
                if k == "datasource" {
                    out.push((here.clone(), x.clone()));
                }
                datasource_refs(x, &here, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                datasource_refs(x, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// The dashboards import into any Grafana and still load when provisioned: every panel,
/// target, annotation and query variable reads the `datasource` variable (a Prometheus picked
/// by the viewer, Grafana's default one unless chosen), none names a datasource uid or a
/// plugin; `__inputs` asks "Import dashboard" for a Prometheus, but nothing refers to
/// `${DS_PROMETHEUS}`, which stays unresolved in a provisioned dashboard. The exporter's
/// series are selected by a `job` variable, and `instance` is chained on it.
#[test]
fn dashboards_import_into_any_grafana() {
    let datasource = serde_json::json!({"type": "prometheus", "uid": "${datasource}"});
    for (file, d) in dashboards() {
        let text = d.to_string();
        assert!(
            !text.contains("DS_PROMETHEUS}"),
            "{file}: ${{DS_PROMETHEUS}} does not resolve in a provisioned dashboard"
        );
        let inputs = d["__inputs"].as_array().expect("__inputs");
        assert!(
            inputs.iter().any(|i| i["name"] == "DS_PROMETHEUS"
                && i["type"] == "datasource"
                && i["pluginId"] == "prometheus"),
            "{file}: __inputs does not ask for a Prometheus datasource: {inputs:?}"
        );
        let requires = d["__requires"].as_array().expect("__requires");
        for p in all_panels(&d).iter().filter(|p| p["type"] != "row") {
            assert!(
                requires
                    .iter()
                    .any(|r| r["type"] == "panel" && r["id"] == p["type"]),
                "{file}: __requires lacks panel type {}",
                p["type"]
            );
            assert!(
                p["targets"].as_array().is_some_and(|t| !t.is_empty()),
                "{file}: panel {} has no query",
                p["title"]
            );
        }
        let vars = d["templating"]["list"].as_array().unwrap();
        let ds_var = vars
            .iter()
            .find(|v| v["name"] == "datasource")
            .unwrap_or_else(|| panic!("{file}: no datasource variable"));
        assert_eq!(ds_var["type"], "datasource", "{file}");
        assert_eq!(ds_var["query"], "prometheus", "{file}");
        let mut refs = Vec::new();
        datasource_refs(&d, "", &mut refs);
        for (path, r) in &refs {
            let builtin = r["type"] == "grafana" && r["uid"] == "-- Grafana --";
            assert!(
                *r == datasource || builtin,
                "{file}{path}: bound to {r}, not the datasource variable"
            );
        }
        let var = |name: &str| vars.iter().find(|v| v["name"] == name);
        assert!(var("job").is_some(), "{file}: no job variable");
        if let Some(instance) = var("instance") {
            let q = instance["query"]["query"].as_str().unwrap();
            assert!(
                q.contains("job=~\"$job\""),
                "{file}: the instance variable is not chained on job: {q}"
            );
        }
    }
}
