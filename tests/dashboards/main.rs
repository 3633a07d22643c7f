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
//!   analysis stopped — so every expression, alerts and claims included, has data to find.
//! - [`analyzer`]: the real `reveal-analyzer run` with deploy/analyzer.yml writes them, so the
//!   panels are checked against what the analyzer really emits (names, labels, values).
//!
//! The only expressions allowed to come back empty are those that need what this machine lacks
//! ([`queries::HARDWARE`]): each is excused only when the metric it needs is really absent
//! from this host's scrape, so on a machine with the hardware the same test requires their
//! data too. Detection itself is tested by the analyzer's end-to-end tests.

mod analyzer;
mod live;
mod queries;
mod stack;

use queries::*;
use std::collections::BTreeSet;

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
