//! `reveal-analyzer run` with the direct-scrape source: no Prometheus between it and the
//! exporter. It scrapes reveal-exporter every 100 ms into memory, warms up, and scores
//! windows of the host named by the target's `host:port`; its anomaly series are written to a
//! Prometheus that only receives them.

use std::process::Command;
use std::time::{Duration, Instant};

use reveal_e2e::analyzer::Analyzer;
use reveal_e2e::prometheus::{self, Prometheus};
use reveal_e2e::{free_port, loopback, workspace_bin, Proc};

#[test]
fn scrapes_the_exporter_directly_and_scores_its_windows() {
    if prometheus::available().is_none() {
        return;
    }
    let port = free_port();
    let target = loopback(port).to_string();
    let mut exporter = Proc::spawn(
        "reveal-exporter",
        Command::new(workspace_bin("reveal-exporter"))
            .arg(format!("--web.listen-address={target}")),
    );
    exporter.wait_http_ready(loopback(port), "/metrics", Duration::from_secs(20));
    let prom = Prometheus::with_config("global:\n  scrape_interval: 1m\n").start();
    let config = format!(
        "listen_address: {{listen}}\nstate_dir: {{state}}\nsource:\n  scrape:\n    targets: [http://{target}/metrics]\n    interval: 100ms\n    timeout: 1s\n\
         metrics:\n  - expr: reveal_cpu_.*\n    subsystem: cpu\n  - expr: reveal_memory_.*\n    subsystem: memory\n  - expr: reveal_storage_.*\n    subsystem: storage\n\
         analysis:\n  warmup: 15s\n  baseline: 1m\noutputs:\n  remote_write:\n    url: {}/api/v1/write\n",
        prom.url()
    );
    let an = Analyzer::start(&config);
    assert_eq!(an.status("/-/ready"), 503, "ready before any baseline");
    let deadline = Instant::now() + Duration::from_secs(60);
    while an
        .metric("reveal_analyzer_windows_analyzed_total")
        .unwrap_or(0.0)
        < 3.0
    {
        assert!(
            Instant::now() < deadline,
            "no window scored:\n{}",
            an.logs()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(an.status("/-/ready"), 200);
    assert_eq!(an.metric("reveal_analyzer_hosts"), Some(1.0));
    assert!(
        an.metric("reveal_analyzer_windows_skipped_total")
            .unwrap_or(0.0)
            >= 10.0,
        "warm-up windows are counted"
    );
    assert_eq!(an.metric("reveal_analyzer_query_failures_total"), Some(0.0));
    // Its scores reached Prometheus under the target's name.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = prom
            .query(&format!("reveal_anomaly_score{{instance=\"{target}\"}}"))
            .unwrap();
        if r.len() == 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "anomaly series missing: {r:?}\n{}",
            an.logs()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    drop(exporter);
}
