//! `reveal-analyzer run` when the data or the clock misbehave, over real Prometheus and
//! Alertmanager on loopback, with the synthetic host of `synth` written into Prometheus:
//!
//! - the analyzer's clock steps back by 40 s mid-episode (libfaketime, wall clock only, as an
//!   NTP step does): no window is analyzed twice, the open alert stays firing in Alertmanager
//!   (re-sent, never ending before it started), analysis resumes once the clock passes the
//!   last analyzed window, and the episode resolves once with one start;
//! - counters reset (an interface re-created, an exporter restarted) and 32-bit counters
//!   wrap, as Prometheus stores them: no window holding one is flagged for the network, no
//!   episode opens, and a real burst on the same counter afterwards is found;
//! - samples that land up to half a second late (the writes stall for 300 ms every 2.7 s):
//!   read again by the next pass, so no episode opens and few windows are flagged;
//! - Prometheus' answers cut off half-way (a proxy truncates them): counted as failed
//!   queries, nothing analyzed from them, caught up afterwards;
//! - series that go stale and vanish for a while (a target down, a device gone), marked with
//!   Prometheus' staleness marker: the rest of the host is still analyzed and nothing is
//!   flagged for the gap, and the metric-set entry left without series is counted and logged
//!   once when it empties and once when it returns;
//! - a metric-set expression Prometheus refuses: the analyzer does not start, and names the
//!   entry, its line and Prometheus' message;
//! - a metric-set entry with no series at start: counted, logged once, and picked up in the
//!   next pass once its series appear.

mod synth;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reveal_analyzer::outputs::remote_write::Batch;
use reveal_e2e::alertmanager::{self, Alertmanager};
use reveal_e2e::analyzer::Analyzer;
use reveal_e2e::prometheus;
use reveal_e2e::recorder::Recorder;
use reveal_e2e::{free_port, loopback, require_tool, workspace_bin, Proc, TempDir};
use synth::{about_host, noise, same_instant, wait, Prom, HOST};

/// What the synthetic host does at a step.
#[derive(Clone, Copy, Default)]
struct Host {
    /// The disk written at 400 MB/s instead of 5 MB/s.
    burst: bool,
    /// Two CPUs and the disk gone (their series not written).
    skip_some: bool,
    /// Dirty memory fortyfold.
    dirty: bool,
}

/// Gauges of the synthetic host at step `k`: four CPUs, a disk written at 5 MB/s, dirty
/// memory at 100 MB; `h` says what differs.
fn gauges(b: &mut Batch, k: i64, h: Host) {
    let Host {
        burst,
        skip_some,
        dirty,
    } = h;
    let t = k * 100;
    for cpu in 0..4u64 {
        if skip_some && cpu >= 2 {
            continue;
        }
        let c = cpu.to_string();
        b.add(
            "synth_cpu_busy_ratio",
            &[("instance", HOST), ("cpu", &c)],
            t,
            0.3 + 0.1 * noise(k, cpu),
        );
    }
    if !skip_some {
        let disk = if burst { 400e6 } else { 5e6 } * (1.0 + 0.5 * noise(k, 10));
        b.add(
            "synth_disk_written_bytes_per_second",
            &[("instance", HOST), ("device", "sda")],
            t,
            disk,
        );
    }
    b.add(
        "synth_memory_dirty_bytes",
        &[("instance", HOST)],
        t,
        if dirty { 4e9 } else { 1e8 } * (1.0 + 0.05 * noise(k, 12)),
    );
}

const GAUGES: &str =
    "metrics:\n  - expr: synth_cpu_busy_ratio\n    subsystem: cpu\n    kind: dynamic\n  \
     - expr: synth_disk_written_bytes_per_second\n    subsystem: storage\n    kind: dynamic\n  \
     - expr: synth_memory_dirty_bytes\n    subsystem: memory\n    kind: dynamic\n";

/// The analyzer's configuration over `prom`, with `metrics` and Alertmanager at `am`.
fn config(prom: &str, am: &str, metrics: &str) -> String {
    format!(
        "listen_address: {{listen}}\nstate_dir: {{state}}\nsource:\n  prometheus:\n    url: {prom}\n    timeout: 2s\n\
         {metrics}\
         analysis:\n  warmup: 2m\n  baseline: 4m\n  refit_every: 10m\n\
         outputs:\n  remote_write:\n    url: {prom}/api/v1/write\n  alertmanager:\n    urls: [{am}]\n    resend_interval: 2s\n    timeout: 2s\n"
    )
}

fn metric(an: &Analyzer, name: &str) -> f64 {
    an.metric(name).unwrap_or(f64::NAN)
}

/// End times (Unix seconds) of the host's windows over the last `range` with at least two
/// detectors agreeing and most of the attribution on `subsystem`, from the anomaly series the
/// analyzer wrote back.
fn agreeing_windows(prom: &Prom, range: &str, subsystem: &str) -> Vec<f64> {
    let q = format!(
        "((reveal_anomaly_agreement{{instance=\"{HOST}\"}} >= 2) and on(instance) \
         (reveal_anomaly_subsystem{{instance=\"{HOST}\",subsystem=\"{subsystem}\"}} > 0.5))[{range}:1s]"
    );
    let path = format!(
        "/api/v1/query?{}",
        reveal_e2e::http::form(&[("query", q.as_str())])
    );
    let r = reveal_e2e::http::get(prom.addr, &path).expect("query");
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["status"], "success", "{q}: {v}");
    v["data"]["result"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["values"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p[0].as_f64())
        .collect()
}

/// libfaketime's preload library (Debian package libfaketime), wherever the architecture
/// puts it.
fn libfaketime() -> Option<PathBuf> {
    let found = std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten()
        .map(|d| d.path().join("faketime/libfaketime.so.1"))
        .find(|p| p.is_file());
    let path = found.unwrap_or_else(|| PathBuf::from("/usr/lib/faketime/libfaketime.so.1"));
    require_tool(path.to_str()?, "libfaketime")
}

#[test]
fn a_clock_stepping_back_repeats_no_window_and_keeps_the_alert_firing() {
    if prometheus::available().is_none() || alertmanager::available().is_none() {
        return;
    }
    let Some(lib) = libfaketime() else { return };
    let prom = Prom::start();
    let hook = Recorder::start();
    let am = Alertmanager::with_webhook(&format!("{}/hook", hook.url()));
    let burst = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let b = burst.clone();
    let feeder = synth::feed(
        format!("{}/api/v1/write", prom.url()),
        move |batch, k| {
            let burst = b.load(Ordering::Relaxed);
            gauges(
                batch,
                k,
                Host {
                    burst,
                    ..Host::default()
                },
            )
        },
        stop.clone(),
    );
    std::thread::sleep(Duration::from_secs(2));

    // The analyzer's wall clock is read through libfaketime from this file ("+0", later
    // "-40s"); its monotonic clock is left alone, as an NTP step leaves it.
    let dir = TempDir::new("reveal-clock");
    let offset = dir.write("offset", "+0\n");
    let env = [
        ("LD_PRELOAD", lib.to_str().unwrap()),
        ("FAKETIME_TIMESTAMP_FILE", offset.to_str().unwrap()),
        ("FAKETIME_NO_CACHE", "1"),
        ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
    ];
    let an = Analyzer::start_with_env(&config(&prom.url(), &am.url(), GAUGES), &env);
    wait(
        "ready",
        Duration::from_secs(60),
        || an.status("/-/ready") == 200,
        || an.logs(),
    );
    burst.store(true, Ordering::Relaxed);
    let fired = hook.wait_for(Duration::from_secs(30), |r| about_host(r, "firing"));
    let fired = fired.unwrap_or_else(|| panic!("no firing alert\n{}", an.logs()));
    let starts_at = same_instant(fired.json()["alerts"][0]["startsAt"].as_str().unwrap());

    // The clock steps back 40 s.
    std::fs::write(&offset, "-40s\n").unwrap();
    wait(
        "the step noticed",
        Duration::from_secs(10),
        || metric(&an, "reveal_analyzer_clock_steps_back_total") == 1.0,
        || an.logs(),
    );
    assert!(
        an.logs().contains("the clock stepped back"),
        "{}",
        an.logs()
    );
    let analyzed = metric(&an, "reveal_analyzer_windows_analyzed_total");
    // For 25 s, five times the alert's 8 s lifetime in Alertmanager: nothing analyzed again,
    // the analyzer healthy, the alert active in Alertmanager all along.
    let until = Instant::now() + Duration::from_secs(25);
    while Instant::now() < until {
        let active = am
            .alerts()
            .unwrap()
            .into_iter()
            .filter(|a| a["labels"]["instance"] == HOST && a["status"]["state"] == "active")
            .count();
        assert!(
            active >= 1,
            "the alert expired while the clock was behind\n{}",
            an.logs()
        );
        assert_eq!(an.status("/-/healthy"), 200);
        std::thread::sleep(Duration::from_secs(1));
    }
    assert_eq!(
        metric(&an, "reveal_analyzer_windows_analyzed_total"),
        analyzed,
        "windows analyzed while the clock was behind the last analyzed one\n{}",
        an.logs()
    );
    assert!(metric(&an, "reveal_analyzer_lag_seconds") < 0.0);
    assert!(
        !hook.requests().iter().any(|r| about_host(r, "resolved")),
        "resolved while the clock was behind"
    );

    // Once the clock passes the last analyzed window, analysis resumes where it stopped.
    wait(
        "analysis resumed",
        Duration::from_secs(40),
        || metric(&an, "reveal_analyzer_windows_analyzed_total") > analyzed + 3.0,
        || an.logs(),
    );
    assert!(an.logs().contains("analysis resumes"), "{}", an.logs());
    // The analyzer now reads the data 40 s behind Prometheus' clock (only its own clock
    // stepped), so the burst's end reaches it 40 s late.
    burst.store(false, Ordering::Relaxed);
    let resolved = hook.wait_for(Duration::from_secs(90), |r| about_host(r, "resolved"));
    assert!(resolved.is_some(), "no resolution\n{}", an.logs());
    let starts = synth::alert_starts(&hook.requests());
    assert_eq!(starts.into_iter().collect::<Vec<_>>(), vec![starts_at]);
    assert_eq!(
        metric(&an, "reveal_analyzer_episodes_opened_total"),
        1.0,
        "{}",
        an.logs()
    );
    stop.store(true, Ordering::Relaxed);
    feeder.join().unwrap();
}

/// Counter phases of [`Counters`].
const STEADY: u8 = 0;
const RESETS: u8 = 1;
const BURST: u8 = 2;

/// Two raw counters of one interface, as the host's exporter exposes them:
/// - bytes received, about 1 MB a step (fifty times that in `BURST`); a long-running
///   interface's large total, which in `RESETS` starts over from zero every 10 s (the
///   interface re-created, the exporter restarted);
/// - bytes sent, about 15 MB a step (1.2 Gbit/s) on a 32-bit counter, as SNMP's `ifOutOctets`
///   and some devices keep it: it wraps every 29 s.
#[derive(Default)]
struct Counters {
    received: f64,
    sent: u64,
    last_reset: i64,
    /// Times (ms) of the resets and of the wraps, for failure messages.
    events: Arc<std::sync::Mutex<(Vec<i64>, Vec<i64>)>>,
}

impl Counters {
    fn sample(&mut self, b: &mut Batch, k: i64, phase: u8) {
        let t = k * 100;
        if self.received == 0.0 {
            self.received = 1e12;
        }
        let per_step = if phase == BURST { 50e6 } else { 1e6 };
        self.received += (per_step * (1.0 + 0.2 * noise(k, 20))).round();
        if phase == RESETS && k - self.last_reset >= 100 {
            self.last_reset = k;
            self.received = (1e6 * (1.0 + 0.2 * noise(k, 21))).round();
            self.events.lock().unwrap().0.push(t);
        }
        b.add(
            "synth_network_received_bytes_total",
            &[("instance", HOST), ("device", "eth0")],
            t,
            self.received,
        );
        let sent = (15e6 * (1.0 + 0.2 * noise(k, 22))) as u64;
        if self.sent + sent >= 1 << 32 {
            self.events.lock().unwrap().1.push(t);
        }
        self.sent = (self.sent + sent) % (1 << 32);
        b.add(
            "synth_network_transmit_bytes_total",
            &[("instance", HOST), ("device", "eth0")],
            t,
            self.sent as f64,
        );
    }
}

/// Prometheus, a webhook behind Alertmanager, the synthetic host with its counters written
/// (in `phase`, and nothing while `hold` is set) and an analyzer reading the gauges and both
/// counters, ready; with the feeder's stop flag and thread and the counters' events.
#[allow(clippy::type_complexity)]
fn counters_stack(
    phase: Arc<AtomicU8>,
    hold: Arc<AtomicBool>,
) -> (
    Prom,
    Recorder,
    Alertmanager,
    Analyzer,
    Arc<AtomicBool>,
    std::thread::JoinHandle<()>,
    Arc<std::sync::Mutex<(Vec<i64>, Vec<i64>)>>,
) {
    let prom = Prom::start();
    let hook = Recorder::start();
    let am = Alertmanager::with_webhook(&format!("{}/hook", hook.url()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut state = Counters::default();
    let events = state.events.clone();
    let feeder = synth::feed_held(
        format!("{}/api/v1/write", prom.url()),
        move |batch, k| {
            gauges(batch, k, Host::default());
            state.sample(batch, k, phase.load(Ordering::Relaxed));
        },
        stop.clone(),
        hold,
        // Every 100 ms, so that a sample held back lands at most a stall and a period late
        // (see the late-samples test below).
        Duration::from_millis(100),
    );
    std::thread::sleep(Duration::from_secs(2));
    let metrics = format!(
        "{GAUGES}  - expr: synth_network_received_bytes_total\n    subsystem: network\n    kind: dynamic\n  \
         - expr: synth_network_transmit_bytes_total\n    subsystem: network\n    kind: dynamic\n"
    );
    let an = Analyzer::start(&config(&prom.url(), &am.url(), &metrics));
    wait(
        "ready",
        Duration::from_secs(60),
        || an.status("/-/ready") == 200,
        || an.logs(),
    );
    (prom, hook, am, an, stop, feeder, events)
}

#[test]
fn counter_resets_and_wraps_are_not_flagged_and_a_burst_after_them_is_found() {
    if prometheus::available().is_none() || alertmanager::available().is_none() {
        return;
    }
    let phase = Arc::new(AtomicU8::new(STEADY));
    let (prom, hook, _am, an, stop, feeder, events) =
        counters_stack(phase.clone(), Arc::new(AtomicBool::new(false)));

    // 45 s of resets every 10 s, and a wrap of the 32-bit counter every 29 s.
    phase.store(RESETS, Ordering::Relaxed);
    let from_ms = synth::now_ms();
    let analyzed = metric(&an, "reveal_analyzer_windows_analyzed_total");
    std::thread::sleep(Duration::from_secs(45));
    assert!(metric(&an, "reveal_analyzer_windows_analyzed_total") >= analyzed + 35.0);
    let (resets, wraps) = events.lock().unwrap().clone();
    let during = |v: &[i64]| v.iter().filter(|&&t| t >= from_ms).count();
    assert!(
        during(&resets) >= 4 && during(&wraps) >= 1,
        "{resets:?} {wraps:?}"
    );
    // No window holding a reset or a wrap is flagged for the network. Ordinary windows are
    // flagged now and then by construction (about one in fifty here: a 4-minute baseline,
    // six other channels), so a flag led by another subsystem says nothing about counters.
    let agreeing = agreeing_windows(&prom, "45s", "network");
    let holds = |end_s: f64| {
        let end = (end_s * 1000.0) as i64;
        resets
            .iter()
            .chain(&wraps)
            .any(|&t| t > end - 3000 && t <= end)
    };
    assert!(
        !agreeing.iter().any(|&e| holds(e)),
        "windows flagged for the network at {agreeing:?}; resets at {resets:?}, wraps at {wraps:?} (ms)\n{}",
        an.logs()
    );
    assert_eq!(
        metric(&an, "reveal_analyzer_episodes_opened_total"),
        0.0,
        "{}",
        an.logs()
    );
    assert_eq!(metric(&an, "reveal_analyzer_query_failures_total"), 0.0);

    // The counter is watched: fifty times its rate opens a network episode about it.
    phase.store(BURST, Ordering::Relaxed);
    let fired = hook.wait_for(Duration::from_secs(30), |r| about_host(r, "firing"));
    let fired = fired.unwrap_or_else(|| panic!("the burst was not found\n{}", an.logs()));
    let alert = &fired.json()["alerts"][0];
    assert_eq!(alert["labels"]["subsystem"], "network", "{alert}");
    assert!(
        alert["annotations"]["summary"]
            .as_str()
            .unwrap_or("")
            .contains("synth_network_received_bytes_total"),
        "{alert}"
    );
    // The query above finds network-led windows when there are some.
    assert!(!agreeing_windows(&prom, "30s", "network").is_empty());
    stop.store(true, Ordering::Relaxed);
    feeder.join().unwrap();
}

#[test]
fn samples_landing_late_are_read_again_and_open_no_episode() {
    if prometheus::available().is_none() || alertmanager::available().is_none() {
        return;
    }
    let hold = Arc::new(AtomicBool::new(false));
    let (prom, _hook, _am, an, stop, feeder, _) =
        counters_stack(Arc::new(AtomicU8::new(STEADY)), hold.clone());

    // For 45 s the writes stall for 300 ms every 2.7 s: their samples land up to about 0.4 s
    // late (the stall and the writer's 100 ms period), after the pass that first reads their
    // points (the default delay is 200 ms) and within the three delays the service asks for
    // again. Read as the sample before them, a counter's points would be a zero increase and
    // then a double one in every window that holds them. (With the writer's period at 200 ms
    // they landed up to about 0.5 s late, which left a loaded machine — the whole suite on
    // two cores — under 0.1 s before the service stopped asking: 7 of 47 flagged once.)
    let analyzed = metric(&an, "reveal_analyzer_windows_analyzed_total");
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(45) {
        std::thread::sleep(Duration::from_millis(2400));
        hold.store(true, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(300));
        hold.store(false, Ordering::Relaxed);
    }
    std::thread::sleep(Duration::from_secs(1));
    let windows = metric(&an, "reveal_analyzer_windows_analyzed_total") - analyzed;
    assert!(windows >= 35.0, "{windows} windows\n{}", an.logs());
    let flagged = synth::prom_query(
        &prom,
        &format!("count_over_time((reveal_anomaly_agreement{{instance=\"{HOST}\"}} >= 2)[46s:1s])"),
    );
    // Read as they first were, about a window in five was flagged (7 and 10 of 47 on
    // 2026-12-06, and an episode opened); ordinary windows are flagged about one in fifty.
    let flagged = if flagged.is_nan() { 0.0 } else { flagged };
    assert!(
        flagged <= 4.0,
        "{flagged} of {windows} windows flagged\n{}",
        an.logs()
    );
    assert_eq!(
        metric(&an, "reveal_analyzer_episodes_opened_total"),
        0.0,
        "{}",
        an.logs()
    );
    stop.store(true, Ordering::Relaxed);
    feeder.join().unwrap();
}

/// A proxy in front of `upstream` that forwards every request and, while `cut` is set,
/// answers range queries with only the first half of Prometheus' answer.
fn cutting_proxy(upstream: std::net::SocketAddr, cut: Arc<AtomicBool>) -> Recorder {
    let proxy = Recorder::start();
    proxy.respond(move |r| {
        let headers: Vec<(&str, &str)> = r
            .headers
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "host" | "content-length" | "connection"))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        match reveal_e2e::http::request(upstream, &r.method, &r.path, &headers, &r.body) {
            Ok(mut resp) => {
                if cut.load(Ordering::Relaxed) && r.path.starts_with("/api/v1/query_range") {
                    resp.body.truncate(resp.body.len() / 2);
                }
                (resp.status, resp.body)
            }
            Err(e) => (502, e.to_string().into_bytes()),
        }
    });
    proxy
}

#[test]
fn answers_cut_off_half_way_are_failed_queries_and_caught_up_after() {
    if prometheus::available().is_none() {
        return;
    }
    let prom = Prom::start();
    let hook = Recorder::start();
    let stop = Arc::new(AtomicBool::new(false));
    let feeder = synth::feed(
        format!("{}/api/v1/write", prom.url()),
        |batch, k| gauges(batch, k, Host::default()),
        stop.clone(),
    );
    let cut = Arc::new(AtomicBool::new(false));
    let proxy = cutting_proxy(prom.addr, cut.clone());
    std::thread::sleep(Duration::from_secs(2));
    // Queries through the proxy; remote write straight to Prometheus.
    let cfg = config(&proxy.url(), &hook.url(), GAUGES).replace(
        &format!("url: {}/api/v1/write", proxy.url()),
        &format!("url: {}/api/v1/write", prom.url()),
    );
    let an = Analyzer::start(&cfg);
    wait(
        "ready",
        Duration::from_secs(60),
        || an.status("/-/ready") == 200,
        || an.logs(),
    );
    let before = metric(&an, "reveal_analyzer_windows_analyzed_total");
    cut.store(true, Ordering::Relaxed);
    let cut_at = Instant::now();
    wait(
        "failed queries",
        Duration::from_secs(20),
        || metric(&an, "reveal_analyzer_query_failures_total") >= 3.0,
        || an.logs(),
    );
    let during = metric(&an, "reveal_analyzer_windows_analyzed_total");
    std::thread::sleep(Duration::from_secs(5));
    // Nothing is analyzed from half an answer; the analyzer is up and says it is not ready.
    assert_eq!(
        metric(&an, "reveal_analyzer_windows_analyzed_total"),
        during,
        "{}",
        an.logs()
    );
    assert!(during <= before + 2.0, "{before} -> {during}");
    assert_eq!(an.status("/-/healthy"), 200);
    assert_eq!(an.status("/-/ready"), 503);
    assert!(
        an.logs().contains("fetch failed; the next pass catches up"),
        "{}",
        an.logs()
    );

    // Whole answers again: the gap is analyzed, nothing is flagged for it.
    cut.store(false, Ordering::Relaxed);
    let gap_s = cut_at.elapsed().as_secs_f64();
    wait(
        "caught up",
        Duration::from_secs(30),
        || {
            an.status("/-/ready") == 200
                && an.metric("reveal_analyzer_lag_seconds").unwrap_or(99.0) < 3.0
        },
        || an.logs(),
    );
    let after = metric(&an, "reveal_analyzer_windows_analyzed_total");
    assert!(
        after >= before + gap_s - 2.0,
        "the gap of {gap_s:.0} s was not analyzed: {before} -> {after}\n{}",
        an.logs()
    );
    assert_eq!(metric(&an, "reveal_analyzer_episodes_opened_total"), 0.0);
    stop.store(true, Ordering::Relaxed);
    feeder.join().unwrap();
}

#[test]
fn series_that_go_stale_and_return_open_no_episode_and_the_rest_is_still_watched() {
    if prometheus::available().is_none() || alertmanager::available().is_none() {
        return;
    }
    let prom = Prom::start();
    let hook = Recorder::start();
    let am = Alertmanager::with_webhook(&format!("{}/hook", hook.url()));
    // 0: all series; 1: two CPUs and the disk gone (marked stale once); 2: gone, and the
    // memory's dirty pages jump fortyfold.
    let phase = Arc::new(AtomicU8::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let p = phase.clone();
    let mut marked = false;
    let feeder = synth::feed(
        format!("{}/api/v1/write", prom.url()),
        move |b, k| {
            let ph = p.load(Ordering::Relaxed);
            let h = Host {
                skip_some: ph > 0,
                dirty: ph == 2,
                ..Host::default()
            };
            gauges(b, k, h);
            if ph > 0 && !marked {
                marked = true;
                for cpu in ["2", "3"] {
                    let l = [("instance", HOST), ("cpu", cpu)];
                    b.add_stale("synth_cpu_busy_ratio", &l, k * 100);
                }
                let l = [("instance", HOST), ("device", "sda")];
                b.add_stale("synth_disk_written_bytes_per_second", &l, k * 100);
            }
            if ph == 0 {
                marked = false;
            }
        },
        stop.clone(),
    );
    std::thread::sleep(Duration::from_secs(2));
    let an = Analyzer::start(&config(&prom.url(), &am.url(), GAUGES));
    wait(
        "ready",
        Duration::from_secs(60),
        || an.status("/-/ready") == 200,
        || an.logs(),
    );

    // Three of the host's six series vanish for 25 s: the rest is still analyzed, and the
    // gap is no anomaly.
    phase.store(1, Ordering::Relaxed);
    let analyzed = metric(&an, "reveal_analyzer_windows_analyzed_total");
    std::thread::sleep(Duration::from_secs(25));
    let now = metric(&an, "reveal_analyzer_windows_analyzed_total");
    assert!(now >= analyzed + 18.0, "{analyzed} -> {now}\n{}", an.logs());
    assert_eq!(
        metric(&an, "reveal_analyzer_episodes_opened_total"),
        0.0,
        "the gap opened an episode: {:?}\n{}",
        am.alerts(),
        an.logs()
    );
    assert_eq!(metric(&an, "reveal_analyzer_query_failures_total"), 0.0);
    // The disk's entry returns nothing now: counted, and said once (not once per pass).
    assert_eq!(
        metric(&an, "reveal_analyzer_metric_entries_empty"),
        1.0,
        "{}",
        an.logs()
    );
    let emptied = "metric-set entries return no series";
    let disk = "metrics.1 (synth_disk_written_bytes_per_second)";
    assert_eq!(log_lines(&an, emptied, disk), 1, "{}", an.logs());
    // The two CPUs that stopped while their siblings go on are reported as missing, each by
    // itself (docs/detection.md); the disk, which may come and go, is not.
    let missing: Vec<String> = hook
        .requests()
        .iter()
        .flat_map(|r| r.json()["alerts"].as_array().cloned().unwrap_or_default())
        .filter(|a| a["labels"]["alertname"] == "RevealDeviceMissing")
        .map(|a| {
            a["labels"]["device"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(missing, ["cpu 2", "cpu 3"], "{}", an.logs());

    // What is left is watched: a fault on it is found while the others are gone.
    phase.store(2, Ordering::Relaxed);
    let fired = hook.wait_for(Duration::from_secs(30), |r| anomaly(r, "firing"));
    let fired = fired.unwrap_or_else(|| panic!("no alert during the gap\n{}", an.logs()));
    assert_eq!(
        fired.json()["alerts"][0]["labels"]["subsystem"],
        "memory",
        "{}",
        fired.json()
    );

    // Everything back: the episode resolves and no other opens.
    phase.store(0, Ordering::Relaxed);
    let resolved = hook.wait_for(Duration::from_secs(40), |r| anomaly(r, "resolved"));
    assert!(resolved.is_some(), "no resolution\n{}", an.logs());
    std::thread::sleep(Duration::from_secs(15));
    assert_eq!(
        metric(&an, "reveal_analyzer_episodes_opened_total"),
        1.0,
        "{}",
        an.logs()
    );
    assert_eq!(metric(&an, "reveal_analyzer_metric_entries_empty"), 0.0);
    assert_eq!(
        log_lines(&an, "return series again", disk),
        1,
        "{}",
        an.logs()
    );
    assert_eq!(log_lines(&an, emptied, disk), 1, "{}", an.logs());
    stop.store(true, Ordering::Relaxed);
    feeder.join().unwrap();
}

/// A notification about a `RevealAnomaly` of the host in `status`.
fn anomaly(r: &reveal_e2e::recorder::Request, status: &str) -> bool {
    about_host(r, status)
        && r.json()["alerts"].as_array().is_some_and(|a| {
            a.iter()
                .all(|x| x["labels"]["alertname"] == "RevealAnomaly")
        })
}

/// Lines of the analyzer's log that hold both `message` and `entry`.
fn log_lines(an: &Analyzer, message: &str, entry: &str) -> usize {
    an.logs()
        .lines()
        .filter(|l| l.contains(message) && l.contains(entry))
        .count()
}

#[test]
fn an_expression_prometheus_refuses_stops_the_start_naming_the_entry() {
    if prometheus::available().is_none() {
        return;
    }
    let prom = Prom::start();
    // Entry 3 does not parse; entry 4 parses, but a range query cannot take a range vector.
    let metrics = format!(
        "{GAUGES}  - expr: rate(synth_cpu_busy_ratio[1s]\n    subsystem: cpu\n  \
         - expr: synth_memory_dirty_bytes[1m]\n    subsystem: memory\n"
    );
    let dir = TempDir::new("reveal-refused");
    let text = config(&prom.url(), "http://127.0.0.1:9", &metrics)
        .replace("{listen}", &loopback(free_port()).to_string())
        .replace("{state}", &dir.path().join("state").display().to_string());
    let file = dir.write("analyzer.yml", &text);
    let mut an = Proc::spawn(
        "reveal-analyzer",
        std::process::Command::new(workspace_bin("reveal-analyzer"))
            .arg("run")
            .arg(format!("--config.file={}", file.display())),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(st) = an.exited() {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "still running after 30 s:\n{}",
            an.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let logs = an.logs();
    assert_eq!(status.code(), Some(2), "{logs}");
    // The line of each entry's `expr` key in the file, as Config's own errors give it.
    let line_of = |expr: &str| {
        1 + text
            .lines()
            .position(|l| l.trim() == format!("- expr: {expr}"))
            .unwrap()
    };
    let refused: Vec<&str> = logs
        .lines()
        .filter(|l| l.starts_with("reveal-analyzer: bad configuration: "))
        .collect();
    assert_eq!(refused.len(), 2, "{logs}");
    let parse = format!(
        "{}:{}: metrics.3.expr: Prometheus refuses \"rate(synth_cpu_busy_ratio[1s]\": ",
        file.display(),
        line_of("rate(synth_cpu_busy_ratio[1s]")
    );
    assert!(
        refused[0].contains(&parse) && refused[0].contains("parse error"),
        "{logs}"
    );
    let range = format!(
        "{}:{}: metrics.4.expr: Prometheus refuses \"synth_memory_dirty_bytes[1m]\": ",
        file.display(),
        line_of("synth_memory_dirty_bytes[1m]")
    );
    assert!(
        refused[1].contains(&range) && refused[1].contains("range vector"),
        "{logs}"
    );
}

#[test]
fn an_entry_without_series_is_counted_and_picked_up_once_its_series_appear() {
    if prometheus::available().is_none() {
        return;
    }
    let prom = Prom::start();
    let late = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let l = late.clone();
    let feeder = synth::feed(
        format!("{}/api/v1/write", prom.url()),
        move |b, k| {
            gauges(b, k, Host::default());
            if l.load(Ordering::Relaxed) {
                b.add(
                    "synth_gpu_busy_ratio",
                    &[("instance", HOST), ("gpu", "0")],
                    k * 100,
                    0.5 + 0.1 * noise(k, 20),
                );
            }
        },
        stop.clone(),
    );
    std::thread::sleep(Duration::from_secs(2));
    let metrics = format!("{GAUGES}  - expr: synth_gpu_busy_ratio\n    subsystem: gpu\n");
    let an = Analyzer::start(&config(&prom.url(), "http://127.0.0.1:9", &metrics));
    let gpu = "metrics.3 (synth_gpu_busy_ratio)";
    let emptied = "metric-set entries return no series";
    wait(
        "the empty entry counted",
        Duration::from_secs(30),
        || an.metric("reveal_analyzer_metric_entries_empty") == Some(1.0),
        || an.logs(),
    );
    assert!(
        an.logs()
            .contains("Prometheus accepts every metric-set expression"),
        "{}",
        an.logs()
    );
    // Several passes later, still one line about it.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(log_lines(&an, emptied, gpu), 1, "{}", an.logs());
    assert_eq!(log_lines(&an, emptied, "metrics.0"), 0, "{}", an.logs());

    // The series appears: the next passes return it.
    late.store(true, Ordering::Relaxed);
    wait(
        "the entry's series picked up",
        Duration::from_secs(20),
        || an.metric("reveal_analyzer_metric_entries_empty") == Some(0.0),
        || an.logs(),
    );
    assert_eq!(
        log_lines(&an, "return series again", gpu),
        1,
        "{}",
        an.logs()
    );
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(metric(&an, "reveal_analyzer_metric_entries_empty"), 0.0);
    assert_eq!(log_lines(&an, emptied, gpu), 1, "{}", an.logs());
    assert_eq!(metric(&an, "reveal_analyzer_query_failures_total"), 0.0);
    stop.store(true, Ordering::Relaxed);
    feeder.join().unwrap();
}
