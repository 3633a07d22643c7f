//! The whole online path on this machine: reveal-exporter scraped every 100 ms by a real
//! Prometheus (remote-write receiver on), reveal-analyzer reading it with range queries,
//! writing its anomaly series back and alerting a real Alertmanager, whose webhook the test
//! receives. A write burst (`dd` with O_DIRECT to a temp file, bounded in time and size)
//! must become an alert naming the storage subsystem, the anomaly series must be queryable,
//! and the episode must resolve after the burst.
//!
//! Reported on stderr: the time from the start of the burst to the alert at Alertmanager, and
//! the analyzer's CPU time per host per second of telemetry.
//!
//! The disk sees a little background I/O through the whole test (1 MiB every 2 s), as a
//! host's disk does: the detectors leave out a feature that is exactly constant over the
//! whole baseline (`detect::ColumnStatus::Constant`), so on a disk never written to during
//! the baseline, a burst would go unseen by design.
//!
//! The metric set is CPU and storage channels only: a write burst also moves the kernel's
//! page-out counters (memory subsystem), and this test checks the storage path, not which of
//! two truthful attributions wins.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reveal_e2e::alertmanager;
use reveal_e2e::analyzer::Analyzer;
use reveal_e2e::disk::{background_io, write_burst};
use reveal_e2e::prometheus;
use reveal_e2e::recorder::Request;
use reveal_e2e::stack::Stack;
use reveal_e2e::{require_tool, TempDir};

fn config(prom: &str, am: &str) -> String {
    format!(
        "listen_address: {{listen}}\nstate_dir: {{state}}\nsource:\n  prometheus:\n    url: {prom}\n    timeout: 3s\n\
         metrics:\n\
         \x20 - expr: rate(reveal_cpu_time_seconds_total[1s])\n    subsystem: cpu\n    kind: dynamic\n\
         \x20 - expr: rate(reveal_cpu_context_switches_total[1s])\n    subsystem: cpu\n    kind: dynamic\n\
         \x20 - expr: reveal_cpu_procs_running\n    subsystem: cpu\n    kind: dynamic\n\
         \x20 - expr: rate(reveal_storage_written_bytes_total[1s])\n    subsystem: storage\n    kind: dynamic\n\
         \x20 - expr: rate(reveal_storage_read_bytes_total[1s])\n    subsystem: storage\n    kind: dynamic\n\
         \x20 - expr: rate(reveal_storage_io_time_seconds_total[1s])\n    subsystem: storage\n    kind: dynamic\n\
         analysis:\n  warmup: 1m\n  baseline: 2m\n  refit_every: 5m\n\
         outputs:\n  remote_write:\n    url: {prom}/api/v1/write\n  alertmanager:\n    urls: [{am}]\n    resend_interval: 2s\n"
    )
}

fn firing_storage(r: &Request, instance: &str) -> bool {
    let v = r.json();
    v["status"] == "firing"
        && v["alerts"].as_array().is_some_and(|a| {
            a.iter().any(|x| {
                x["labels"]["instance"] == instance && x["labels"]["subsystem"] == "storage"
            })
        })
}

#[test]
fn write_burst_becomes_a_storage_alert_and_resolves() {
    if prometheus::available().is_none()
        || alertmanager::available().is_none()
        || require_tool("dd", "coreutils").is_none()
    {
        return;
    }
    let Stack {
        target,
        exporter,
        prom,
        hook,
        am,
    } = Stack::start();
    let scratch = TempDir::new("reveal-burst");
    let quiet = Arc::new(AtomicBool::new(false));
    let background = background_io(scratch.path().to_path_buf(), quiet.clone());
    let an = Analyzer::start(&config(&prom.url(), &am.url()));

    // Prometheus has no history yet: the analyzer warms up in real time, and says so.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        an.metric("reveal_analyzer_warming_up"),
        Some(1.0),
        "{}",
        an.logs()
    );
    assert_eq!(an.status("/-/ready"), 503);
    let deadline = Instant::now() + Duration::from_secs(100);
    while an.status("/-/ready") != 200 {
        assert!(Instant::now() < deadline, "never ready:\n{}", an.logs());
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(an.logs().contains("warming up"), "{}", an.logs());
    // The cost is measured from the fit on: quiet windows, the burst, the resolution.
    let (cpu0, windows0, t0) = (
        an.cpu_seconds(),
        an.metric("reveal_analyzer_windows_analyzed_total"),
        Instant::now(),
    );
    std::thread::sleep(Duration::from_secs(15));
    let opened_before = an
        .metric("reveal_analyzer_episodes_opened_total")
        .unwrap_or(0.0);

    let stop = Arc::new(AtomicBool::new(false));
    let fault_start = Instant::now();
    let burst = write_burst(
        scratch.path().to_path_buf(),
        stop.clone(),
        Duration::from_secs(12),
    );
    let alert = hook.wait_for(Duration::from_secs(30), |r| {
        r.at >= fault_start && firing_storage(r, &target)
    });
    let latency = alert.as_ref().map(|r| r.at.duration_since(fault_start));
    stop.store(true, Ordering::Relaxed);
    let runs = burst.join().unwrap();
    let alert = alert.unwrap_or_else(|| {
        // What the analyzer saw: its scores and the write rate over the last minute.
        let seen: Vec<String> = [
            "max_over_time(reveal_anomaly_score[40s])",
            "max_over_time(reveal_anomaly_agreement[40s])",
            "max_over_time(rate(reveal_storage_written_bytes_total[1s])[40s:100ms])",
            "max_over_time(rate(reveal_storage_written_bytes_total[1s])[60s:100ms] offset 40s)",
        ]
        .iter()
        .map(|q| {
            format!(
                "{q} = {:?}",
                prom.query(q)
                    .map(|r| r.iter().map(|s| s.value).collect::<Vec<_>>())
            )
        })
        .collect();
        panic!(
            "no storage alert within 30 s of the burst ({runs} dd runs); webhooks: {:?}\n{}\n{}",
            hook.bodies(),
            seen.join("\n"),
            an.logs()
        )
    });
    let latency = latency.unwrap();
    eprintln!(
        "fault start → alert at Alertmanager (webhook): {:.1} s",
        latency.as_secs_f64()
    );
    let a = alert.json()["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["labels"]["subsystem"] == "storage")
        .cloned()
        .unwrap();
    assert_eq!(a["labels"]["alertname"], "RevealAnomaly");
    assert!(
        ["warning", "critical"].contains(&a["labels"]["severity"].as_str().unwrap()),
        "{a}"
    );
    assert!(
        !a["annotations"]["summary"].as_str().unwrap().is_empty(),
        "{a}"
    );
    // The same alert, read back through Alertmanager's API.
    let api = am.alerts().unwrap();
    assert!(
        api.iter()
            .any(|x| x["labels"]["instance"] == target.as_str()
                && x["labels"]["subsystem"] == "storage"),
        "{api:?}"
    );
    assert!(
        an.metric("reveal_analyzer_episodes_opened_total")
            .unwrap_or(0.0)
            > opened_before
    );

    // The anomaly series are in Prometheus, at window timestamps.
    let score = prom
        .query(&format!("reveal_anomaly_score{{instance=\"{target}\"}}"))
        .unwrap();
    let detectors: std::collections::BTreeSet<_> =
        score.iter().map(|s| s.metric["detector"].clone()).collect();
    assert_eq!(
        detectors.into_iter().collect::<Vec<_>>(),
        ["iforest", "pca", "zscore"]
    );
    let peak = prom
        .value(&format!(
            "max_over_time(reveal_anomaly_agreement{{instance=\"{target}\"}}[1m])"
        ))
        .unwrap();
    assert!(peak.unwrap_or(0.0) >= 2.0, "{peak:?}");
    let storage = prom.value(&format!("max_over_time(reveal_anomaly_subsystem{{instance=\"{target}\",subsystem=\"storage\"}}[1m])")).unwrap();
    assert!(storage.unwrap_or(0.0) > 0.3, "{storage:?}");

    // After the burst, the episode closes and the alert resolves.
    let resolved = hook.wait_for(Duration::from_secs(45), |r| {
        let v = r.json();
        v["status"] == "resolved"
            && v["alerts"]
                .as_array()
                .is_some_and(|a| a.iter().any(|x| x["labels"]["instance"] == target.as_str()))
    });
    assert!(resolved.is_some(), "not resolved:\n{}", an.logs());

    // Cost: analyzer CPU per host per second of telemetry analyzed since the fit.
    let (cpu1, windows1) = (
        an.cpu_seconds(),
        an.metric("reveal_analyzer_windows_analyzed_total"),
    );
    if let (Some(c0), Some(c1), Some(w0), Some(w1)) = (cpu0, cpu1, windows0, windows1) {
        let telemetry_s = (w1 - w0) * 1.0; // one window per stride of 1 s per host
        let wall = t0.elapsed().as_secs_f64();
        eprintln!(
            "analyzer CPU: {:.4} s per host per second of telemetry ({:.2} s CPU over {telemetry_s:.0} s of telemetry, {wall:.0} s wall, debug build)",
            (c1 - c0) / telemetry_s.max(1.0),
            c1 - c0
        );
        assert!(telemetry_s > 0.0);
    }
    quiet.store(true, Ordering::Relaxed);
    background.join().unwrap();
    drop(exporter);
}
