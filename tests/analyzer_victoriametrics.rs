//! VictoriaMetrics as the engine: reveal-exporter scraped every 100 ms by VictoriaMetrics
//! (single node, Debian's package, its own scraper), reveal-analyzer reading it with range
//! queries and writing its anomaly series back into it by remote write, alerts to a real
//! Alertmanager. A write burst must become a storage alert, the anomaly series must be
//! queryable from VictoriaMetrics, and the episode must resolve after the burst.
//!
//! What differs from Prometheus, and how it is handled (docs/deployment.md):
//! - VictoriaMetrics hides the newest 30 s of every series from queries by default
//!   (`-search.latencyOffset`), so ranges 1 s behind real time come back empty and the
//!   analyzer never warms up: started with `1s` here (docs/deployment.md);
//! - nothing else: the analyzer's queries (raw series and `rate(…[1s])` at a 100 ms step),
//!   its remote write and its readiness work against it unchanged.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reveal_e2e::alertmanager::{self, Alertmanager};
use reveal_e2e::analyzer::Analyzer;
use reveal_e2e::disk::{background_io, write_burst};
use reveal_e2e::recorder::{Recorder, Request};
use reveal_e2e::victoria::{self, Victoria};
use reveal_e2e::{
    flush_page_cache, free_port, loopback, require_tool, workspace_bin, Proc, TempDir,
};

fn config(source: &str, am: &str) -> String {
    format!(
        "listen_address: {{listen}}\nstate_dir: {{state}}\nsource:\n  prometheus:\n    url: {source}\n    timeout: 3s\n\
         metrics:\n\
         \x20 - expr: rate(reveal_cpu_time_seconds_total[1s])\n    subsystem: cpu\n    kind: dynamic\n\
         \x20 - expr: rate(reveal_cpu_context_switches_total[1s])\n    subsystem: cpu\n    kind: dynamic\n\
         \x20 - expr: reveal_cpu_procs_running\n    subsystem: cpu\n    kind: dynamic\n\
         \x20 - expr: rate(reveal_storage_written_bytes_total[1s])\n    subsystem: storage\n    kind: dynamic\n\
         \x20 - expr: rate(reveal_storage_read_bytes_total[1s])\n    subsystem: storage\n    kind: dynamic\n\
         \x20 - expr: rate(reveal_storage_io_time_seconds_total[1s])\n    subsystem: storage\n    kind: dynamic\n\
         analysis:\n  warmup: 1m\n  baseline: 2m\n  refit_every: 5m\n\
         outputs:\n  remote_write:\n    url: {source}/api/v1/write\n  alertmanager:\n    urls: [{am}]\n    resend_interval: 2s\n"
    )
}

fn about(r: &Request, status: &str, instance: &str) -> bool {
    let v = r.json();
    v["status"] == status
        && v["alerts"].as_array().is_some_and(|a| {
            a.iter().any(|x| {
                x["labels"]["instance"] == instance && x["labels"]["subsystem"] == "storage"
            })
        })
}

#[test]
fn a_write_burst_is_found_through_victoriametrics() {
    if victoria::available().is_none()
        || alertmanager::available().is_none()
        || require_tool("dd", "coreutils").is_none()
    {
        return;
    }
    flush_page_cache();
    let port = free_port();
    let target = loopback(port).to_string();
    let mut exporter = Proc::spawn(
        "reveal-exporter",
        std::process::Command::new(workspace_bin("reveal-exporter"))
            .arg(format!("--web.listen-address={target}")),
    );
    exporter.wait_http_ready(loopback(port), "/metrics", Duration::from_secs(20));
    let vm = Victoria::scraping(std::slice::from_ref(&target), "100ms");
    let hook = Recorder::start();
    let am = Alertmanager::with_webhook(&format!("{}/hook", hook.url()));
    let scratch = TempDir::new("reveal-burst");
    let quiet = Arc::new(AtomicBool::new(false));
    let background = background_io(scratch.path().to_path_buf(), quiet.clone());
    let an = Analyzer::start(&config(&vm.url(), &am.url()));

    // No history yet: the analyzer warms up in real time on VictoriaMetrics' data.
    let deadline = Instant::now() + Duration::from_secs(120);
    while an.status("/-/ready") != 200 {
        assert!(
            Instant::now() < deadline,
            "never ready:\n{}\n{}",
            an.logs(),
            vm.logs()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    std::thread::sleep(Duration::from_secs(10));
    assert_eq!(an.metric("reveal_analyzer_query_failures_total"), Some(0.0));

    let stop = Arc::new(AtomicBool::new(false));
    let fault_start = Instant::now();
    let burst = write_burst(
        scratch.path().to_path_buf(),
        stop.clone(),
        Duration::from_secs(12),
    );
    let alert = hook.wait_for(Duration::from_secs(30), |r| {
        r.at >= fault_start && about(r, "firing", &target)
    });
    stop.store(true, Ordering::Relaxed);
    let runs = burst.join().unwrap();
    assert!(
        alert.is_some(),
        "no storage alert within 30 s of the burst ({runs} dd runs); webhooks: {:?}\n{}",
        hook.bodies(),
        an.logs()
    );
    eprintln!(
        "fault start → alert at Alertmanager (webhook), through VictoriaMetrics: {:.1} s",
        alert.unwrap().at.duration_since(fault_start).as_secs_f64()
    );

    // The anomaly series went into VictoriaMetrics by remote write.
    let api = vm.api();
    let peak = api.wait_for_value(
        &format!("max_over_time(reveal_anomaly_agreement{{instance=\"{target}\"}}[1m])"),
        |v| v >= 2.0,
        Duration::from_secs(15),
    );
    assert!(peak >= 2.0);
    let scores = api
        .query(&format!("reveal_anomaly_score{{instance=\"{target}\"}}"))
        .unwrap();
    assert_eq!(scores.len(), 3, "{scores:?}");

    // After the burst the episode closes and the alert resolves.
    let resolved = hook.wait_for(Duration::from_secs(45), |r| about(r, "resolved", &target));
    assert!(resolved.is_some(), "not resolved:\n{}", an.logs());
    assert_eq!(an.metric("reveal_analyzer_query_failures_total"), Some(0.0));
    quiet.store(true, Ordering::Relaxed);
    background.join().unwrap();
}
