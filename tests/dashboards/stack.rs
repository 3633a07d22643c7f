//! The stack under test: the real exporter on this host, an Alertmanager running
//! rules/alertmanager.yml and a Prometheus running rules/prometheus.yml (see
//! [`prometheus_config`]), and the check that runs expressions against it.

use crate::queries::*;
use reveal_e2e::alertmanager::Alertmanager;
use reveal_e2e::prometheus::Prometheus;
use reveal_e2e::{dead_port, free_port, loopback, workspace_bin, Proc};
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub struct Stack {
    /// The exporter's `instance` label: `127.0.0.1:port`.
    pub host: String,
    pub prom: Prometheus,
    pub am: Alertmanager,
    _exporter: Proc,
}

/// What running a list of expressions gave.
#[derive(Default)]
pub struct Outcome {
    pub ok: usize,
    pub excused: Vec<String>,
    pub failures: Vec<String>,
}

impl Stack {
    /// Starts everything and waits until the exporter is scraped, the recording rules have
    /// data and Prometheus sends to its Alertmanager (it applies discovered Alertmanagers a few
    /// seconds after start; an alert firing before that is re-sent only a minute later).
    pub fn start() -> Stack {
        let port = free_port();
        let host = format!("127.0.0.1:{port}");
        let mut exporter = Proc::spawn(
            "exporter",
            // As the stack runs it (docker-compose.yml): the selection and the fast series
            // that rules/prometheus.yml's two jobs scrape.
            Command::new(workspace_bin("reveal-exporter"))
                .arg(format!("--web.listen-address={host}"))
                .arg(format!(
                    "--metrics.selection={}",
                    root().join("deploy/selection.yml").display()
                ))
                .arg(format!(
                    "--metrics.fast={}",
                    root().join("deploy/selection-fast.yml").display()
                )),
        );
        exporter.wait_http_ready(loopback(port), "/metrics", Duration::from_secs(20));
        let am = Alertmanager::with_config(
            &std::fs::read_to_string(root().join("rules/alertmanager.yml")).unwrap(),
        );
        let prom = Prometheus::with_config(&prometheus_config(
            port,
            &am.addr().to_string(),
            dead_port(),
        ))
        .start();
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
        let wait = Duration::from_secs(60);
        // Both jobs, fast and slow, scrape it.
        prom.wait_for_value(
            &format!("min(up{{instance=\"{host}\"}}) * count(up{{instance=\"{host}\"}})"),
            |v| v == 2.0,
            wait,
        );
        prom.wait_for_value(
            &format!("count(instance_cpu:reveal_cpu_utilization:ratio1s{{instance=\"{host}\"}})"),
            |v| v >= 1.0,
            wait,
        );
        Stack {
            host,
            prom,
            am,
            _exporter: exporter,
        }
    }

    /// Runs each expression as Grafana would for this host over the last 20 s. An empty
    /// result fails unless it needs a [`HARDWARE`] metric this host's scrape lacks, or
    /// `excuse` gives a reason.
    pub fn run(&self, queries: &[Query], excuse: impl Fn(&Query) -> Option<String>) -> Outcome {
        let present: BTreeSet<String> = self
            .prom
            .query(&format!(
                "count by (__name__) ({{instance=\"{}\"}})",
                self.host
            ))
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
        let end = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let mut out = Outcome::default();
        for q in queries {
            let expr = substitute(&q.expr, &self.host);
            match self.prom.query_range(&expr, end - 20.0, end, 1.0) {
                Err(e) => out.failures.push(format!("{}: {e}", q.origin)),
                Ok(series) if series.iter().any(|s| !s.values.is_empty()) => out.ok += 1,
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
                    if !missing.is_empty() {
                        out.excused.push(format!(
                            "{}\n      needs {}",
                            q.origin,
                            missing.join("; ")
                        ));
                    } else if let Some(why) = excuse(q) {
                        out.excused.push(format!("{}\n      {why}", q.origin));
                    } else {
                        out.failures
                            .push(format!("{}: no data from {expr}", q.origin));
                    }
                }
            }
        }
        out
    }
}

impl Outcome {
    /// Prints what was excused and fails on any expression without data.
    pub fn check(&self, total: usize) {
        eprintln!("{} of {total} expressions returned data; excused:", self.ok);
        for e in &self.excused {
            eprintln!("  - {e}");
        }
        assert!(
            self.failures.is_empty(),
            "expressions without data:\n{}",
            self.failures.join("\n")
        );
    }
}
