//! The paper's HugePages case end to end: three real exporters read the same recorded
//! machine (`exporter/tests/fixtures/numa-2socket`), except that one of them sees a copy of
//! its `/sys` where no 2 MiB huge pages are reserved. One Prometheus scrapes all three at
//! 100 ms; the analyzer, reading that Prometheus, must name that host's memory as a
//! persistent deviation, in `reveal_host_deviation` and as a `RevealHostDeviation` alert in
//! Alertmanager, and no other host.

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

/// A copy of the fixture's `/sys` with the 2 MiB pool emptied (nothing reserved).
fn sys_without_hugepages(dir: &TempDir) -> PathBuf {
    let sys = dir.path().join("sys");
    let ok = Command::new("cp")
        .arg("-a")
        .arg(fixture().join("sys"))
        .arg(&sys)
        .status()
        .expect("cp");
    assert!(ok.success(), "copying the fixture's /sys");
    let pool = sys.join("kernel/mm/hugepages/hugepages-2048kB");
    for f in [
        "nr_hugepages",
        "nr_hugepages_mempolicy",
        "free_hugepages",
        "resv_hugepages",
    ] {
        std::fs::write(pool.join(f), "0\n").expect("rewriting the pool");
    }
    sys
}

fn exporter(sys: &Path) -> (Proc, String) {
    let port = free_port();
    let target = format!("127.0.0.1:{port}");
    let mut p = Proc::spawn(
        "reveal-exporter",
        Command::new(workspace_bin("reveal-exporter"))
            .arg(format!("--web.listen-address={target}"))
            .arg(format!(
                "--path.procfs={}",
                fixture().join("proc").display()
            ))
            .arg(format!("--path.sysfs={}", sys.display())),
    );
    p.wait_http_ready(loopback(port), "/metrics", Duration::from_secs(20));
    (p, target)
}

#[test]
fn the_host_without_reserved_hugepages_is_a_memory_deviation_alert() {
    if prometheus::available().is_none() || alertmanager::available().is_none() {
        return;
    }
    let dir = TempDir::new("reveal-hugepages-group");
    let odd_sys = sys_without_hugepages(&dir);
    let (_e1, t1) = exporter(&fixture().join("sys"));
    let (_e2, t2) = exporter(&fixture().join("sys"));
    let (_e3, odd) = exporter(&odd_sys);
    let targets = [t1.clone(), t2.clone(), odd.clone()];
    let prom = Prometheus::scraping(&targets, "100ms").start();
    let am = Alertmanager::with_config(
        "route:\n  receiver: keep\n  group_wait: 0s\nreceivers:\n  - name: keep\n",
    );
    let config = format!(
        "listen_address: {{listen}}\nstate_dir: {{state}}\nsource:\n  prometheus:\n    url: {}\n\
         metrics:\n  - expr: reveal_memory_hugepages_pool\n    subsystem: memory\n    kind: static\n  \
         - expr: reveal_memory_dirty_bytes\n    subsystem: memory\n    kind: dynamic\n  \
         - expr: rate(reveal_cpu_time_seconds_total[1s])\n    subsystem: cpu\n    kind: dynamic\n\
         analysis:\n  warmup: 1m\n  baseline: 2m\n\
         outputs:\n  remote_write:\n    url: {}/api/v1/write\n  alertmanager:\n    urls: [{}]\n",
        prom.url(),
        prom.url(),
        am.url()
    );
    let an = Analyzer::start(&config);
    let started = Instant::now();
    // A deviation is persistent after 24 of 30 windows (1 s stride): about half a minute.
    let deadline = Instant::now() + Duration::from_secs(90);
    let alert = loop {
        let alerts = am.alerts().unwrap_or_default();
        let found = alerts.into_iter().find(|a| {
            a["labels"]["alertname"] == "RevealHostDeviation" && a["labels"]["instance"] == odd
        });
        if let Some(a) = found {
            break a;
        }
        assert!(
            Instant::now() < deadline,
            "no RevealHostDeviation for {odd} within 90 s:\n{}",
            an.logs()
        );
        std::thread::sleep(Duration::from_secs(1));
    };
    eprintln!(
        "analyzer start → RevealHostDeviation in Alertmanager: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(alert["labels"]["subsystem"], "memory", "{alert}");
    assert_eq!(alert["labels"]["severity"], "warning", "{alert}");
    let summary = alert["annotations"]["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("hugepages") && summary.contains(odd.as_str()),
        "{summary}"
    );
    assert!(
        !alert["annotations"]["description"]
            .as_str()
            .unwrap_or_default()
            .is_empty(),
        "{alert}"
    );
    // The score in Prometheus: above the rules' 3.5 for the odd host's memory only.
    let dev = |host: &str, sub: &str| {
        prom.value(&format!(
            "max_over_time(reveal_host_deviation{{instance=\"{host}\",subsystem=\"{sub}\"}}[2m])"
        ))
        .unwrap()
    };
    let score = prom.wait_for_value(
        &format!(
            "max_over_time(reveal_host_deviation{{instance=\"{odd}\",subsystem=\"memory\"}}[2m])"
        ),
        |v| v > 3.5,
        Duration::from_secs(20),
    );
    for host in [&t1, &t2] {
        let d = dev(host, "memory").unwrap_or(0.0);
        assert!(d <= 3.5, "{host} memory deviation {d} (odd host: {score})");
    }
    for host in &targets {
        let d = dev(host, "cpu").unwrap_or(0.0);
        assert!(d <= 3.5, "{host} cpu deviation {d}");
    }
    let others: Vec<serde_json::Value> = am
        .alerts()
        .unwrap_or_default()
        .into_iter()
        .filter(|a| {
            a["labels"]["alertname"] == "RevealHostDeviation" && a["labels"]["instance"] != odd
        })
        .collect();
    assert!(others.is_empty(), "{others:#?}");
}
