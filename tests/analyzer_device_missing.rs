//! A CPU that stops reporting, end to end: the real exporter reads a copy of a recorded
//! 64-CPU machine (`exporter/tests/fixtures/numa-2socket`), Prometheus scrapes it every
//! 100 ms, and the analyzer reads each CPU's busy time. Once the analyzer has seen every CPU,
//! `cpu63` leaves the copy's `/proc/stat`, as an offlined CPU leaves the kernel's: the
//! analyzer must raise `RevealDeviceMissing` for `cpu 63` in Alertmanager within seconds —
//! during its warm-up, since presence needs no baseline — name no other device, and resolve
//! the alert once the CPU is back.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use reveal_e2e::alertmanager::{self, Alertmanager};
use reveal_e2e::analyzer::Analyzer;
use reveal_e2e::prometheus::{self, Prometheus};
use reveal_e2e::{free_port, loopback, workspace_bin, Proc, TempDir};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("exporter/tests/fixtures/numa-2socket")
}

/// Rewrites `path` in place, as the kernel's file changes: the exporter keeps its procfs
/// files open and reads them again from the start, so a file renamed over it would go unseen.
fn replace(path: &Path, text: &str) {
    std::fs::write(path, text).expect("rewriting /proc/stat");
}

fn missing_alerts(am: &Alertmanager) -> Vec<serde_json::Value> {
    am.alerts()
        .unwrap_or_default()
        .into_iter()
        .filter(|a| a["labels"]["alertname"] == "RevealDeviceMissing")
        .collect()
}

#[test]
fn a_cpu_that_leaves_proc_stat_is_a_device_missing_alert_until_it_is_back() {
    if prometheus::available().is_none() || alertmanager::available().is_none() {
        return;
    }
    let dir = TempDir::new("reveal-device-missing");
    let proc_dir = dir.path().join("proc");
    let ok = Command::new("cp")
        .arg("-a")
        .arg(fixture().join("proc"))
        .arg(&proc_dir)
        .status()
        .expect("cp");
    assert!(ok.success(), "copying the fixture's /proc");
    let stat_path = proc_dir.join("stat");
    let stat = std::fs::read_to_string(&stat_path).unwrap();
    assert!(stat.lines().any(|l| l.starts_with("cpu63 ")), "{stat}");
    let port = free_port();
    let target = format!("127.0.0.1:{port}");
    let mut exporter = Proc::spawn(
        "reveal-exporter",
        Command::new(workspace_bin("reveal-exporter"))
            .arg(format!("--web.listen-address={target}"))
            .arg(format!("--path.procfs={}", proc_dir.display()))
            .arg(format!("--path.sysfs={}", fixture().join("sys").display())),
    );
    exporter.wait_http_ready(loopback(port), "/metrics", Duration::from_secs(20));
    let prom = Prometheus::scraping(std::slice::from_ref(&target), "100ms").start();
    let am = Alertmanager::with_config(
        "route:\n  receiver: keep\n  group_wait: 0s\nreceivers:\n  - name: keep\n",
    );
    let config = format!(
        "listen_address: {{listen}}\nstate_dir: {{state}}\nsource:\n  prometheus:\n    url: {}\n\
         metrics:\n  - expr: rate(reveal_cpu_busy_seconds_total[1s])\n    subsystem: cpu\n    kind: dynamic\n\
         analysis:\n  warmup: 5m\n  baseline: 10m\n\
         outputs:\n  alertmanager:\n    urls: [{}]\n",
        prom.url(),
        am.url()
    );
    let an = Analyzer::start(&config);
    // Every CPU seen in a few passes (the analyzer is warming up: presence needs no baseline).
    let deadline = Instant::now() + Duration::from_secs(60);
    while an
        .metric("reveal_analyzer_windows_skipped_total")
        .unwrap_or(0.0)
        < 5.0
    {
        assert!(Instant::now() < deadline, "no pass ran:\n{}", an.logs());
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(missing_alerts(&am).is_empty(), "{:?}", am.alerts());

    let without: String = stat
        .lines()
        .filter(|l| !l.starts_with("cpu63 "))
        .map(|l| format!("{l}\n"))
        .collect();
    replace(&stat_path, &without);
    let left = Instant::now();
    let alert = loop {
        if let Some(a) = missing_alerts(&am).into_iter().next() {
            break a;
        }
        assert!(
            left.elapsed() < Duration::from_secs(20),
            "no RevealDeviceMissing within 20 s of cpu63 leaving /proc/stat:\n{}",
            an.logs()
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    eprintln!(
        "cpu63 left /proc/stat → RevealDeviceMissing in Alertmanager: {:.1} s",
        left.elapsed().as_secs_f64()
    );
    assert_eq!(alert["labels"]["device"], "cpu 63", "{alert}");
    assert_eq!(alert["labels"]["subsystem"], "cpu", "{alert}");
    assert_eq!(alert["labels"]["severity"], "critical", "{alert}");
    assert_eq!(alert["labels"]["instance"], target.as_str(), "{alert}");
    let summary = alert["annotations"]["summary"].as_str().unwrap_or_default();
    assert!(
        summary.starts_with("cpu 63 not reporting since ")
            && summary.ends_with("63 of 64 devices report"),
        "{summary}"
    );
    let description = alert["annotations"]["description"]
        .as_str()
        .unwrap_or_default();
    assert!(
        description.contains("reveal_cpu_busy_seconds_total"),
        "{description}"
    );
    assert_eq!(alert["annotations"]["detectors"], "presence", "{alert}");
    assert!(
        an.logs().contains("a device stopped reporting"),
        "{}",
        an.logs()
    );

    // Back: the alert resolves (Alertmanager lists it no more, or with its end passed).
    replace(&stat_path, &stat);
    let back = Instant::now();
    loop {
        let firing: Vec<_> = missing_alerts(&am)
            .into_iter()
            .filter(|a| a["status"]["state"] == "active")
            .collect();
        if firing.is_empty() {
            break;
        }
        assert!(
            back.elapsed() < Duration::from_secs(20),
            "RevealDeviceMissing still firing 20 s after cpu63 came back: {firing:?}\n{}",
            an.logs()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    // One device, one alert: nothing else went missing all along.
    let all = missing_alerts(&am);
    assert!(
        all.iter().all(|a| a["labels"]["device"] == "cpu 63"),
        "{all:?}"
    );
}
