//! The same stack with the real `reveal-analyzer run` (deploy/analyzer.yml with this run's
//! ports and a short warm-up) writing its anomaly series: every dashboard panel and rule over
//! those series returns data from them. Expressions that select flagged windows, alerts or
//! cross-host deviations are excused only when this run had none of those.

use crate::queries::*;
use crate::stack::Stack;
use reveal_e2e::{free_port, loopback, workspace_bin, Proc, TempDir};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// deploy/analyzer.yml pointed at this run's Prometheus and Alertmanager.
fn analyzer_config(prom: &str, am: &str, listen: u16) -> String {
    let text = std::fs::read_to_string(root().join("deploy/analyzer.yml")).unwrap();
    let out = text
        .replace("127.0.0.1:19090", prom)
        .replace("127.0.0.1:19093", am)
        .replace("127.0.0.1:19191", &format!("127.0.0.1:{listen}"));
    assert!(
        out.contains(prom) && out.contains(am),
        "deploy/analyzer.yml was not rewritten:\n{out}"
    );
    // As the quick start does: a short warm-up, so windows are scored within seconds.
    format!("{out}\nanalysis:\n  warmup: 10s\n")
}

#[test]
fn the_analyzers_own_series_fit_the_dashboards() {
    if reveal_e2e::prometheus::available().is_none()
        || reveal_e2e::alertmanager::available().is_none()
    {
        return;
    }
    let stack = Stack::start();
    let dir = TempDir::new("reveal-analyzer-run");
    let port = free_port();
    let cfg = dir.write(
        "analyzer.yml",
        &analyzer_config(
            &stack.prom.addr().to_string(),
            &stack.am.addr().to_string(),
            port,
        ),
    );
    let mut analyzer = Proc::spawn(
        "analyzer",
        Command::new(workspace_bin("reveal-analyzer"))
            .arg("run")
            .arg(format!("--config.file={}", cfg.display()))
            .current_dir(dir.path()),
    );
    analyzer.wait_http_ready(loopback(port), "/-/healthy", Duration::from_secs(30));
    // Scored windows arrive once the warm-up is over.
    stack.prom.wait_for_value(
        &format!("count(reveal_anomaly_score{{instance=\"{}\"}})", stack.host),
        |v| v >= 1.0,
        Duration::from_secs(120),
    );
    std::thread::sleep(Duration::from_secs(3));

    // What this run had in the 20 s the expressions are run over.
    let end = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let seen = |expr: &str| {
        stack
            .prom
            .query_range(expr, end - 20.0, end + 1.0, 1.0)
            .map(|s| !s.is_empty())
            .unwrap_or(false)
    };
    let flagged = seen("reveal_anomaly_agreement >= 2");
    let all_three = seen("reveal_anomaly_agreement >= 3");
    let alerts = seen("ALERTS{alertname=~\"Reveal.*\",alertstate=\"firing\"}");
    let deviations = seen("reveal_host_deviation");
    eprintln!("this run: flagged {flagged}, all three {all_three}, alerts {alerts}, deviations {deviations}");

    let promql = dashboard_queries();
    let over_analyzer: Vec<Query> = promql
        .into_iter()
        .chain(rules().into_iter().map(|(_, q)| q))
        .filter(|q| {
            metric_names(&q.expr)
                .iter()
                .any(|m| ANALYZER_SERIES.contains(&m.as_str()) || m == "ALERTS")
        })
        .collect();
    assert!(
        over_analyzer.len() >= 10,
        "expected the anomaly panels and rules: {over_analyzer:?}"
    );
    let outcome = stack.run(&over_analyzer, |q| {
        let e = &q.expr;
        if e.contains("timestamp(") {
            Some("fires only when the analyzer stops writing windows; it is running".into())
        } else if e.contains("reveal_host_deviation") && !deviations {
            Some("no cross-host deviation written in this run (one host)".into())
        } else if e.contains("ALERTS") && !alerts {
            Some("no Reveal alert fired in the last 20 s (a quiet host)".into())
        } else if (e.contains(">= 3") && !all_three) || (e.contains(">= 2") && !flagged) {
            Some("no window flagged by that many detectors in the last 20 s (a quiet host)".into())
        } else {
            None
        }
    });
    outcome.check(over_analyzer.len());
    // The score, agreement and attribution panels always have the analyzer's data.
    assert!(
        outcome.ok >= 5,
        "only {} expressions returned the analyzer's data",
        outcome.ok
    );
    drop(analyzer);
}
