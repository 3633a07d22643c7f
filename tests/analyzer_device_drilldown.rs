//! Which CPUs, end to end: the analyzer reads a 64-CPU host's interrupts only as PromQL
//! aggregates (the host's total and its busiest CPU), as the deploy metric set does to stay
//! cheap on a wide host. The real exporter reads a copy of a recorded 64-CPU machine
//! (`exporter/tests/fixtures/numa-2socket`) whose `/proc/interrupts` this test moves every
//! 100 ms, as a kernel would: a few interrupts a second on every CPU, then a device's
//! interrupts pinned to CPUs 0–3 at 25,000 a second. Prometheus scrapes at 100 ms and a
//! real Alertmanager receives. The `RevealAnomaly` alert must name the four CPUs — asked of
//! Prometheus per CPU when the alert goes out, each against its own rate in the minute
//! before — and no other.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reveal_e2e::alertmanager::{self, Alertmanager};
use reveal_e2e::analyzer::Analyzer;
use reveal_e2e::prometheus::{self, Prometheus};
use reveal_e2e::{free_port, loopback, workspace_bin, Proc, TempDir};

const CPUS: usize = 64;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("exporter/tests/fixtures/numa-2socket")
}

/// `/proc/interrupts` as the kernel prints it: a header of CPUs, then per line the IRQ and
/// one count per CPU in a fixed-width column (the file keeps its length as counts grow, so
/// a read during a rewrite never sees a shorter file).
fn interrupts(nvme: &[u64], loc: &[u64]) -> String {
    let mut s = String::from("    ");
    for c in 0..CPUS {
        s.push_str(&format!("{:>11}", format!("CPU{c}")));
    }
    s.push('\n');
    s.push_str(" 24:");
    for v in nvme {
        s.push_str(&format!(" {v:>10}"));
    }
    s.push_str("  PCI-MSI 1048576-edge      nvme0q1\n");
    s.push_str("LOC:");
    for v in loc {
        s.push_str(&format!(" {v:>10}"));
    }
    s.push_str("   Local timer interrupts\n");
    s
}

/// Rewrites `path` in place, as the kernel's file changes (the exporter keeps it open).
fn put(path: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f.set_len(text.len() as u64).unwrap();
}

/// Moves the counts every 100 ms until `stop` (or 5 minutes: the loop is bounded): each CPU
/// 40–80 interrupts a second from the disk and 250 from the timer, CPUs 0–3 25,000 more
/// while `pinned`.
fn mover(path: PathBuf, pinned: Arc<AtomicBool>, stop: Arc<AtomicBool>) {
    let mut nvme = vec![1_000_000u64; CPUS];
    let mut loc = vec![5_000_000u64; CPUS];
    let mut seed = 46u64;
    let start = Instant::now();
    while !stop.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(300) {
        for c in 0..CPUS {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            nvme[c] += 4 + (seed >> 61);
            loc[c] += 25;
            if c < 4 && pinned.load(Ordering::Relaxed) {
                nvme[c] += 2_500;
            }
        }
        put(&path, &interrupts(&nvme, &loc));
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn anomalies(am: &Alertmanager) -> Vec<serde_json::Value> {
    am.alerts()
        .unwrap_or_default()
        .into_iter()
        .filter(|a| a["labels"]["alertname"] == "RevealAnomaly")
        .collect()
}

#[test]
fn interrupts_pinned_to_four_cpus_are_an_alert_that_names_the_four() {
    if prometheus::available().is_none() || alertmanager::available().is_none() {
        return;
    }
    let dir = TempDir::new("reveal-drilldown");
    let proc_dir = dir.path().join("proc");
    let ok = Command::new("cp")
        .arg("-a")
        .arg(fixture().join("proc"))
        .arg(&proc_dir)
        .status()
        .expect("cp");
    assert!(ok.success(), "copying the fixture's /proc");
    let path = proc_dir.join("interrupts");
    std::fs::write(&path, interrupts(&[0; CPUS], &[0; CPUS])).unwrap();
    let (pinned, stop) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let moving = {
        let (p, s, path) = (pinned.clone(), stop.clone(), path.clone());
        std::thread::spawn(move || mover(path, p, s))
    };
    // Stops the mover however the test ends.
    struct Stop(Arc<AtomicBool>);
    impl Drop for Stop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let _stop = Stop(stop.clone());

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
    prom.wait_for_value(
        "sum(rate(reveal_cpu_interrupts_total[1s]))",
        |v| v > 0.0,
        Duration::from_secs(60),
    );
    let am = Alertmanager::with_config(
        "route:\n  receiver: keep\n  group_wait: 0s\nreceivers:\n  - name: keep\n",
    );
    let config = format!(
        "listen_address: {{listen}}\nstate_dir: {{state}}\nsource:\n  prometheus:\n    url: {}\n\
         metrics:\n\
         \x20 - expr: sum without (cpu) (rate(reveal_cpu_interrupts_total[1s]))\n    name: reveal_cpu_interrupts_rate\n    subsystem: cpu\n    kind: dynamic\n    resolution: 1\n\
         \x20 - expr: max without (cpu) (rate(reveal_cpu_interrupts_total[1s]))\n    name: reveal_cpu_interrupts_rate_busiest_cpu\n    subsystem: cpu\n    kind: dynamic\n    resolution: 1\n\
         analysis:\n  warmup: 20s\n  baseline: 1m\n\
         outputs:\n  alertmanager:\n    urls: [{}]\n",
        prom.url(),
        am.url()
    );
    let an = Analyzer::start(&config);
    // Fitted and scoring quietly for a few windows.
    let deadline = Instant::now() + Duration::from_secs(90);
    while an
        .metric("reveal_analyzer_windows_analyzed_total")
        .unwrap_or(0.0)
        < 5.0
    {
        assert!(
            Instant::now() < deadline,
            "no window scored:\n{}",
            an.logs()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(anomalies(&am).is_empty(), "{:?}", am.alerts());

    pinned.store(true, Ordering::Relaxed);
    let began = Instant::now();
    let alert = loop {
        if let Some(a) = anomalies(&am).into_iter().next() {
            break a;
        }
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "no RevealAnomaly within 30 s of the interrupts pinned to CPUs 0-3:\n{}",
            an.logs()
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    eprintln!(
        "interrupts pinned → RevealAnomaly in Alertmanager: {:.1} s",
        began.elapsed().as_secs_f64()
    );
    stop.store(true, Ordering::Relaxed);
    moving.join().unwrap();
    assert_eq!(alert["labels"]["subsystem"], "cpu", "{alert}");
    let summary = alert["annotations"]["summary"].as_str().unwrap_or_default();
    eprintln!("{summary}");
    let (_, named) = summary
        .split_once(" — by device: ")
        .unwrap_or_else(|| panic!("the alert names no device: {summary}\n{}", an.logs()));
    for c in 0..4 {
        assert!(named.contains(&format!("cpu {c} at ")), "{summary}");
    }
    assert_eq!(named.matches(" at ").count(), 4, "{summary}");
    // Each against itself in the minute before: a few dozen interrupts a second then.
    assert_eq!(named.matches("/s before)").count(), 4, "{summary}");
    assert!(named.ends_with(" of 64 CPUs"), "{summary}");
    assert!(
        an.logs().contains("devices behind the alert"),
        "{}",
        an.logs()
    );
}
