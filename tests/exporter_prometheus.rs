//! A real Prometheus scrapes a real `reveal-exporter` every 100 ms on loopback; PromQL over
//! what it stored must show this machine's CPUs, live counters and 100 ms spacing.

use reveal_e2e::prometheus::{self, Prometheus};
use reveal_e2e::{free_port, loopback, workspace_bin, Proc};
use std::time::Duration;

/// CPUs the kernel reports per-CPU times for (the `cpuN` lines of /proc/stat).
fn cpus_in_proc_stat() -> usize {
    let stat = std::fs::read_to_string("/proc/stat").expect("reading /proc/stat");
    stat.lines()
        .filter(|l| {
            l.strip_prefix("cpu")
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        })
        .count()
}

#[test]
fn prometheus_scrapes_the_exporter_at_100ms() {
    if prometheus::available().is_none() {
        return;
    }
    let port = free_port();
    let addr = loopback(port);
    let mut exporter = Proc::spawn(
        "reveal-exporter",
        std::process::Command::new(workspace_bin("reveal-exporter"))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--log.level=warn"),
    );
    exporter.wait_http_ready(addr, "/-/healthy", Duration::from_secs(20));

    let prom = Prometheus::scraping(&[addr.to_string()], "100ms").start();
    let up = r#"up{job="reveal"}"#;
    prom.wait_for_value(up, |v| v == 1.0, Duration::from_secs(30));
    // Three seconds of 100 ms scrapes, so 2 s windows are full.
    prom.wait_for_value(
        &format!("count_over_time({up}[3s])"),
        |v| v >= 25.0,
        Duration::from_secs(30),
    );

    // The target is healthy and its last scrape parsed without error. Prometheus asks for
    // OpenMetrics first, so this is the OpenMetrics exposition being read.
    let targets = prom.api("targets", &[("state", "active")]).unwrap();
    let t = &targets["activeTargets"][0];
    assert_eq!(t["health"], "up", "{t}");
    assert_eq!(t["lastError"], "", "{t}");

    // One series per CPU and mode: user nice system idle iowait irq softirq steal.
    let cpus = cpus_in_proc_stat();
    assert!(cpus > 0);
    let n = prom.value("count(reveal_cpu_time_seconds_total)").unwrap();
    assert_eq!(n, Some((8 * cpus) as f64), "8 modes x {cpus} CPUs");
    let per_cpu = prom
        .query(r#"count by (cpu) (reveal_cpu_time_seconds_total{mode="idle"})"#)
        .unwrap();
    assert_eq!(per_cpu.len(), cpus);

    // Live counters: a busy host switches context all the time.
    let ctx = prom
        .query("rate(reveal_cpu_context_switches_total[2s]) > 0")
        .unwrap();
    assert_eq!(ctx.len(), 1, "rate of context switches over 2 s: {ctx:?}");

    let ok = prom
        .query(r#"reveal_exporter_collector_success{collector="stat"} == 1"#)
        .unwrap();
    assert_eq!(ok.len(), 1, "stat collector succeeded: {ok:?}");

    // A collector's success does not flap while the host stays the same: an unsupported
    // collector reports 0 on every scrape, not only on the first.
    let flapping = prom
        .query("changes(reveal_exporter_collector_success[3s]) > 0")
        .unwrap();
    let names: Vec<_> = flapping
        .iter()
        .map(|s| s.metric.get("collector").cloned().unwrap_or_default())
        .collect();
    assert!(
        flapping.is_empty(),
        "collectors whose success changed within 3 s: {names:?}"
    );

    // Every sample of a scrape was ingested: what Prometheus counted in the last scrape equals
    // the series it holds for the job (up and scrape_* are its own, added on top).
    let scraped = prom
        .value(r#"scrape_samples_scraped{job="reveal"}"#)
        .unwrap()
        .unwrap();
    assert!(scraped > 50.0, "samples per scrape: {scraped}");
    let post = prom
        .value(r#"scrape_samples_post_metric_relabeling{job="reveal"}"#)
        .unwrap()
        .unwrap();
    assert_eq!(scraped, post);

    // Samples about 100 ms apart: 20 in a 2 s window (a scrape more or less at the edges,
    // and some slack for a loaded machine), then the gaps between the raw samples.
    let n2s = prom
        .value("count_over_time(reveal_cpu_context_switches_total[2s])")
        .unwrap();
    assert!(
        n2s.is_some_and(|n| (15.0..=21.0).contains(&n)),
        "samples in 2 s: {n2s:?}"
    );
    let m = prom
        .query_matrix("reveal_cpu_context_switches_total[2s]")
        .unwrap();
    assert_eq!(m.len(), 1);
    let ts: Vec<f64> = m[0].values.iter().map(|(t, _)| *t).collect();
    assert!(
        ts.len() >= 15 && ts.len() <= 21,
        "{} samples in 2 s at 100 ms",
        ts.len()
    );
    let mut gaps: Vec<f64> = ts.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_by(f64::total_cmp);
    let median = gaps[gaps.len() / 2];
    assert!(
        (0.09..=0.11).contains(&median),
        "median gap between samples {median} s, gaps {gaps:?}"
    );

    assert!(
        exporter.exited().is_none(),
        "exporter died:\n{}",
        exporter.logs()
    );
}
