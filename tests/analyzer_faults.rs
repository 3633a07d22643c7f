//! `reveal-analyzer run` when the world misbehaves, over real Prometheus and Alertmanager on
//! loopback. The telemetry is synthetic and written into Prometheus with remote write (four
//! minutes of history, then live every 200 ms), so the anomaly is exactly where the test puts
//! it and the test does not depend on what else this machine is doing:
//!
//! - Alertmanager down when the episode opens: the alert waits and arrives after its restart;
//! - the analyzer killed (SIGKILL) mid-episode and restarted: the same episode continues,
//!   Alertmanager keeps one alert with the original start, no second firing;
//! - Prometheus stopped mid-run and restarted: the analyzer stays healthy, counts the
//!   failures and catches up;
//! - the episode resolves once the anomaly stops;
//! - a source answering junk and 5xx: the analyzer stays up, healthy, not ready;
//! - Prometheus not yet up when the analyzer starts: its expressions cannot be checked, which
//!   does not stop the start; it waits, healthy and not ready, counting failed queries, and
//!   learns and analyzes once Prometheus answers;
//! - Prometheus up but empty when the analyzer starts, its history written later: the
//!   history is read again each pass until it holds series, so the baseline fills from it
//!   rather than from a live warm-up.

mod synth;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reveal_analyzer::outputs::remote_write::Batch;
use reveal_e2e::alertmanager::{self, Alertmanager};
use reveal_e2e::analyzer::Analyzer;
use reveal_e2e::prometheus;
use reveal_e2e::recorder::Recorder;
use synth::{about_host, noise, prom_query, same_instant, wait, Prom, HOST};

/// The synthetic host's samples at step `k` (100 ms grid) into `b`.
fn sample(b: &mut Batch, k: i64, anomalous: bool) {
    let t = k * 100;
    for cpu in 0..4u64 {
        let c = cpu.to_string();
        b.add(
            "synth_cpu_busy_ratio",
            &[("instance", HOST), ("cpu", &c)],
            t,
            0.3 + 0.1 * noise(k, cpu),
        );
    }
    let disk = if anomalous {
        400e6 * (1.0 + 0.3 * noise(k, 10))
    } else {
        5e6 * (1.0 + 0.5 * noise(k, 10))
    };
    b.add(
        "synth_disk_written_bytes_per_second",
        &[("instance", HOST), ("device", "sda")],
        t,
        disk,
    );
    b.add(
        "synth_disk_read_bytes_per_second",
        &[("instance", HOST), ("device", "sda")],
        t,
        2e6 * (1.0 + 0.5 * noise(k, 11)),
    );
    b.add(
        "synth_memory_dirty_bytes",
        &[("instance", HOST)],
        t,
        1e8 * (1.0 + 0.05 * noise(k, 12)),
    );
}

/// The synthetic host, with a write burst while `anomaly` is set.
fn feed(
    url: String,
    anomaly: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    synth::feed(
        url,
        move |b, k| sample(b, k, anomaly.load(Ordering::Relaxed)),
        stop,
    )
}

fn config(prom: &str, am: &str) -> String {
    format!(
        "listen_address: {{listen}}\nstate_dir: {{state}}\nsource:\n  prometheus:\n    url: {prom}\n    timeout: 2s\n\
         metrics:\n  - expr: synth_cpu_busy_ratio\n    subsystem: cpu\n    kind: dynamic\n  \
         - expr: synth_disk_written_bytes_per_second\n    subsystem: storage\n    kind: dynamic\n  \
         - expr: synth_disk_read_bytes_per_second\n    subsystem: storage\n    kind: dynamic\n  \
         - expr: synth_memory_dirty_bytes\n    subsystem: memory\n    kind: dynamic\n\
         analysis:\n  warmup: 2m\n  baseline: 4m\n  refit_every: 10m\n\
         outputs:\n  remote_write:\n    url: {prom}/api/v1/write\n  alertmanager:\n    urls: [{am}]\n    resend_interval: 2s\n    timeout: 2s\n"
    )
}

#[test]
fn survives_outages_and_restarts_without_duplicating_the_episode() {
    if prometheus::available().is_none() || alertmanager::available().is_none() {
        return;
    }
    let mut prom = Prom::start();
    let hook = Recorder::start();
    let mut am = Alertmanager::with_webhook(&format!("{}/hook", hook.url()));
    let anomaly = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let feeder = feed(
        format!("{}/api/v1/write", prom.url()),
        anomaly.clone(),
        stop.clone(),
    );
    std::thread::sleep(Duration::from_secs(2));

    let mut an = Analyzer::start(&config(&prom.url(), &am.url()));
    // The four minutes of history are learned at start: ready without a real-time warm-up.
    wait(
        "ready",
        Duration::from_secs(60),
        || an.status("/-/ready") == 200,
        || an.logs(),
    );
    assert_eq!(an.metric("reveal_analyzer_warming_up"), Some(0.0));
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(
        an.metric("reveal_analyzer_episodes_opened_total"),
        Some(0.0),
        "{}",
        an.logs()
    );

    // Alertmanager is down when the anomaly starts: the alert waits in the queue.
    am.stop();
    anomaly.store(true, Ordering::Relaxed);
    wait(
        "an alert queued",
        Duration::from_secs(30),
        || an.metric("reveal_analyzer_alerts_queued").unwrap_or(0.0) >= 1.0,
        || an.logs(),
    );
    assert_eq!(
        an.metric("reveal_analyzer_episodes_opened_total"),
        Some(1.0)
    );
    assert!(
        an.metric("reveal_analyzer_delivery_failures_total")
            .unwrap_or(0.0)
            >= 1.0
    );
    am.start();
    let fired = hook.wait_for(Duration::from_secs(30), |r| about_host(r, "firing"));
    let fired = fired.unwrap_or_else(|| panic!("no firing alert after the restart\n{}", an.logs()));
    let alerts = fired.json()["alerts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let alert = alerts
        .iter()
        .find(|a| a["labels"]["subsystem"] == "storage")
        .cloned();
    let alert = alert.unwrap_or_else(|| panic!("no storage alert: {alerts:?}"));
    assert_eq!(alert["labels"]["alertname"], "RevealAnomaly");
    let starts_at = same_instant(alert["startsAt"].as_str().unwrap());
    assert!(
        alert["annotations"]["summary"]
            .as_str()
            .unwrap()
            .contains("synth_disk_written"),
        "{alert}"
    );

    // Killed without warning mid-episode, then restarted: the episode goes on.
    an.kill();
    std::thread::sleep(Duration::from_secs(2));
    an.restart();
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(
        an.metric("reveal_analyzer_episodes_opened_total"),
        Some(0.0),
        "reopened:\n{}",
        an.logs()
    );
    assert_eq!(
        an.metric("reveal_analyzer_episodes_open"),
        Some(1.0),
        "{}",
        an.logs()
    );
    let active: Vec<_> = am
        .alerts()
        .unwrap()
        .into_iter()
        .filter(|a| a["labels"]["instance"] == HOST)
        .collect();
    assert_eq!(active.len(), 1, "{active:?}");
    assert_eq!(
        same_instant(active[0]["startsAt"].as_str().unwrap()),
        starts_at
    );

    // Prometheus goes away for a while: the analyzer keeps serving and counts failures.
    prom.down();
    wait(
        "query failures",
        Duration::from_secs(20),
        || {
            an.metric("reveal_analyzer_query_failures_total")
                .unwrap_or(0.0)
                >= 2.0
        },
        || an.logs(),
    );
    assert_eq!(an.status("/-/healthy"), 200);
    assert_eq!(an.status("/-/ready"), 503);
    prom.up();
    wait(
        "catching up",
        Duration::from_secs(30),
        || {
            an.metric("reveal_analyzer_lag_seconds").unwrap_or(99.0) < 3.0
                && an.status("/-/ready") == 200
        },
        || an.logs(),
    );

    // The anomaly stops: the episode closes and its alert resolves, once.
    anomaly.store(false, Ordering::Relaxed);
    let resolved = hook.wait_for(Duration::from_secs(40), |r| about_host(r, "resolved"));
    assert!(
        resolved.is_some(),
        "no resolution; webhooks: {:?}\n{}",
        hook.requests().len(),
        an.logs()
    );
    let starts = synth::alert_starts(&hook.requests());
    assert_eq!(
        starts.len(),
        1,
        "more than one episode reached Alertmanager: {starts:?}"
    );

    // The anomaly series reached Prometheus through remote write.
    let q = prom_query(
        &prom,
        &format!("max_over_time(reveal_anomaly_agreement{{instance=\"{HOST}\"}}[5m])"),
    );
    assert!(q >= 2.0, "agreement series: {q}");
    stop.store(true, Ordering::Relaxed);
    feeder.join().unwrap();
}

#[test]
fn junk_and_5xx_from_the_source_never_take_the_analyzer_down() {
    let junk = Recorder::start();
    let flip = Arc::new(AtomicBool::new(false));
    let f = flip.clone();
    junk.respond(move |_| {
        if f.fetch_xor(true, Ordering::Relaxed) {
            (503, b"<html>upstream unavailable</html>".to_vec())
        } else {
            (200, b"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":".to_vec())
        }
    });
    let cfg = format!(
        "listen_address: {{listen}}\nstate_dir: {{state}}\nsource:\n  prometheus:\n    url: {}\n    timeout: 1s\n\
         metrics:\n  - expr: up\n    subsystem: cpu\noutputs:\n  alertmanager:\n    urls: [{}]\n",
        junk.url(),
        junk.url()
    );
    let an = Analyzer::start(&cfg);
    failing_but_up(&an, 4.0, Duration::from_secs(20));
}

/// Waits until `an` has counted `failures` failed queries, then checks that it is up
/// (healthy), not ready, and has analyzed nothing.
fn failing_but_up(an: &Analyzer, failures: f64, timeout: Duration) {
    wait(
        "failed queries counted",
        timeout,
        || {
            an.metric("reveal_analyzer_query_failures_total")
                .unwrap_or(0.0)
                >= failures
        },
        || an.logs(),
    );
    assert_eq!(an.status("/-/healthy"), 200);
    assert_eq!(an.status("/-/ready"), 503);
    assert_eq!(
        an.metric("reveal_analyzer_windows_analyzed_total"),
        Some(0.0)
    );
}

#[test]
fn prometheus_down_at_start_is_waited_for() {
    if prometheus::available().is_none() {
        return;
    }
    let mut prom = Prom::reserved();
    let hook = Recorder::start();
    let stop = Arc::new(AtomicBool::new(false));
    // The feeder retries until Prometheus takes its history.
    let feeder = feed(
        format!("{}/api/v1/write", prom.url()),
        Arc::new(AtomicBool::new(false)),
        stop.clone(),
    );
    let an = Analyzer::start(&config(&prom.url(), &hook.url()));
    failing_but_up(&an, 3.0, Duration::from_secs(30));
    // The expressions could not be checked at start: said, and no reason not to start.
    assert!(
        an.logs()
            .contains("could not check every metric-set expression against Prometheus"),
        "{}",
        an.logs()
    );

    prom.up();
    wait(
        "ready once Prometheus answers",
        Duration::from_secs(90),
        || an.status("/-/ready") == 200,
        || an.logs(),
    );
    let failures = an.metric("reveal_analyzer_query_failures_total");
    let analyzed = an
        .metric("reveal_analyzer_windows_analyzed_total")
        .unwrap_or(0.0);
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(
        an.metric("reveal_analyzer_query_failures_total"),
        failures,
        "{}",
        an.logs()
    );
    assert!(
        an.metric("reveal_analyzer_windows_analyzed_total")
            .unwrap_or(0.0)
            >= analyzed + 3.0,
        "{}",
        an.logs()
    );
    stop.store(true, Ordering::Relaxed);
    feeder.join().unwrap();
}

#[test]
fn history_that_reaches_an_empty_prometheus_late_still_fills_the_baseline() {
    if prometheus::available().is_none() {
        return;
    }
    // A Prometheus that answers but holds no series yet: just started, its first remote
    // write not yet in. The four minutes of history arrive after the analyzer has read it.
    let prom = Prom::start();
    let hook = Recorder::start();
    let an = Analyzer::start(&config(&prom.url(), &hook.url()));
    wait(
        "a pass over the empty Prometheus",
        Duration::from_secs(30),
        || an.logs().contains("metric-set entries return no series"),
        || an.logs(),
    );
    assert_eq!(an.status("/-/ready"), 503);
    let stop = Arc::new(AtomicBool::new(false));
    let feeder = feed(
        format!("{}/api/v1/write", prom.url()),
        Arc::new(AtomicBool::new(false)),
        stop.clone(),
    );
    // The history is learned once it is there: ready well before the two minutes a live
    // warm-up would take.
    wait(
        "ready from the late history",
        Duration::from_secs(60),
        || an.status("/-/ready") == 200,
        || an.logs(),
    );
    assert!(an.logs().contains("history learned"), "{}", an.logs());
    stop.store(true, Ordering::Relaxed);
    feeder.join().unwrap();
}

#[test]
fn a_prometheus_slower_than_the_stride_is_followed_without_falling_behind() {
    if prometheus::available().is_none() {
        return;
    }
    let prom = Prom::start();
    let stop = Arc::new(AtomicBool::new(false));
    let feeder = feed(
        format!("{}/api/v1/write", prom.url()),
        Arc::new(AtomicBool::new(false)),
        stop.clone(),
    );
    // A proxy that answers each query 300 ms late, one at a time: the four queries of a
    // pass take 1.2 s, longer than the 1 s stride.
    let slow = Recorder::start();
    let upstream = prom.addr;
    slow.respond(move |r| {
        std::thread::sleep(Duration::from_millis(300));
        let headers: Vec<(&str, &str)> = r
            .headers
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "host" | "content-length" | "connection"))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        match reveal_e2e::http::request(upstream, &r.method, &r.path, &headers, &r.body) {
            Ok(resp) => (resp.status, resp.body),
            Err(e) => (502, e.to_string().into_bytes()),
        }
    });
    std::thread::sleep(Duration::from_secs(2));
    let an = Analyzer::start(&config(&slow.url(), &slow.url()));
    wait(
        "ready behind the slow proxy",
        Duration::from_secs(120),
        || an.status("/-/ready") == 200,
        || an.logs(),
    );
    // Passes cover every window since the last one: the analyzer keeps up, a few seconds
    // behind at most, and no query fails or is skipped.
    let analyzed = an
        .metric("reveal_analyzer_windows_analyzed_total")
        .unwrap_or(0.0);
    std::thread::sleep(Duration::from_secs(15));
    let now = an
        .metric("reveal_analyzer_windows_analyzed_total")
        .unwrap_or(0.0);
    assert!(
        now - analyzed >= 12.0,
        "{analyzed} -> {now} windows in 15 s\n{}",
        an.logs()
    );
    let lag = an
        .metric("reveal_analyzer_lag_seconds")
        .unwrap_or(f64::INFINITY);
    assert!(lag < 5.0, "lag {lag} s\n{}", an.logs());
    assert_eq!(
        an.metric("reveal_analyzer_query_failures_total"),
        Some(0.0),
        "{}",
        an.logs()
    );
    assert_eq!(an.status("/-/healthy"), 200);
    stop.store(true, Ordering::Relaxed);
    feeder.join().unwrap();
}
