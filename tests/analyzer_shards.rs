//! Three `reveal-analyzer run` replicas split a cluster's hosts (`--shard i/3`), over a real
//! Prometheus 2.42 and Alertmanager 0.25 on loopback. Nine synthetic hosts are written into
//! Prometheus with remote write (four minutes of history, then live), so the test knows
//! exactly where each anomaly is:
//!
//! - every host is analyzed by exactly one replica, the one Prometheus' `hashmod` names;
//! - a host that appears mid-run warms up alone: its replica stays ready and goes on
//!   analyzing its other hosts;
//! - a write burst on one host is alerted once, by its replica only;
//! - a host whose series come from two scrape jobs (two targets relabeled to one `instance`)
//!   is reported by its replica;
//! - a host whose series stop (Prometheus' staleness markers, as for a vanished target) is
//!   counted as silent, then forgotten after `forget_host_after`;
//! - a replica killed: its hosts are analyzed by nobody, and Prometheus (scraping the
//!   replicas and evaluating `rules/alerting.rules.yml`) fires `RevealAnalyzerShardMissing`
//!   and `RevealAnalysisStale` for exactly that replica's hosts.

mod synth;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reveal_analyzer::ingest::shard::hashmod;
use reveal_analyzer::outputs::remote_write::Batch;
use reveal_e2e::alertmanager::{self, Alertmanager};
use reveal_e2e::analyzer::Analyzer;
use reveal_e2e::prometheus;
use reveal_e2e::recorder::Recorder;
use synth::{noise, wait, Prom};

const SHARDS: u64 = 3;
/// Hosts written from the start; `node-9` appears mid-run.
const HOSTS: usize = 9;
const LATE: usize = 9;
/// The host with the write burst, and the one whose series stop (both of shard 0), and the
/// replica that is killed (it owns neither).
const BURST: usize = 5;
const GONE: usize = 3;
const KILLED: u64 = 1;
/// The host whose series are also written under a second job.
const TWICE: usize = 7;

fn host(i: usize) -> String {
    format!("node-{i}:9100")
}

fn shard_of(i: usize) -> u64 {
    hashmod(&host(i), SHARDS)
}

/// What the feeder writes, switched by the test.
#[derive(Default)]
struct Plan {
    burst: AtomicBool,
    late: AtomicBool,
    gone: AtomicBool,
}

/// Host `i`'s samples at step `k`, as scraped by `job`.
fn sample(b: &mut Batch, k: i64, i: usize, burst: bool) {
    sample_as(b, k, i, burst, "synth");
    if i == TWICE {
        sample_as(b, k, i, burst, "synth-copy");
    }
}

fn sample_as(b: &mut Batch, k: i64, i: usize, burst: bool, job: &str) {
    let t = k * 100;
    let h = host(i);
    let ch = i as u64 * 16;
    for cpu in 0..2u64 {
        let c = cpu.to_string();
        b.add(
            "synth_cpu_busy_ratio",
            &[("instance", &h), ("job", job), ("cpu", &c)],
            t,
            0.3 + 0.1 * noise(k, ch + cpu),
        );
    }
    let written = if burst { 400e6 } else { 5e6 };
    b.add(
        "synth_disk_written_bytes_per_second",
        &[("instance", &h), ("job", job), ("device", "sda")],
        t,
        written * (1.0 + 0.4 * noise(k, ch + 10)),
    );
    b.add(
        "synth_memory_dirty_bytes",
        &[("instance", &h), ("job", job)],
        t,
        1e8 * (1.0 + 0.05 * noise(k, ch + 11)),
    );
}

/// Staleness markers for every series of host `i`: what Prometheus writes when a target
/// goes away.
fn stale(b: &mut Batch, k: i64, i: usize) {
    let h = host(i);
    let job = ("job", "synth");
    for cpu in ["0", "1"] {
        b.add_stale(
            "synth_cpu_busy_ratio",
            &[("instance", &h), job, ("cpu", cpu)],
            k * 100,
        );
    }
    b.add_stale(
        "synth_disk_written_bytes_per_second",
        &[("instance", &h), job, ("device", "sda")],
        k * 100,
    );
    b.add_stale(
        "synth_memory_dirty_bytes",
        &[("instance", &h), job],
        k * 100,
    );
}

fn feed(url: String, plan: Arc<Plan>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    let mut marked = false;
    synth::feed(
        url,
        move |b, k| {
            for i in 0..HOSTS {
                if i == GONE && plan.gone.load(Ordering::Relaxed) {
                    if !marked {
                        stale(b, k, i);
                        marked = true;
                    }
                    continue;
                }
                sample(b, k, i, i == BURST && plan.burst.load(Ordering::Relaxed));
            }
            if plan.late.load(Ordering::Relaxed) {
                sample(b, k, LATE, false);
            }
        },
        stop,
    )
}

/// Replica `shard`'s configuration; the last replica gets its shard from `--shard` instead.
fn config(prom: &str, am: &str, shard: Option<u64>) -> String {
    let shard = shard.map_or(String::new(), |s| format!("    shard: {s}/{SHARDS}\n"));
    format!(
        "listen_address: {{listen}}\nstate_dir: {{state}}\nsource:\n  prometheus:\n    url: {prom}\n    timeout: 2s\n{shard}\
         metrics:\n  - expr: synth_cpu_busy_ratio\n    subsystem: cpu\n    kind: dynamic\n  \
         - expr: synth_disk_written_bytes_per_second\n    subsystem: storage\n    kind: dynamic\n  \
         - expr: synth_memory_dirty_bytes\n    subsystem: memory\n    kind: dynamic\n\
         analysis:\n  warmup: 2m\n  baseline: 4m\n  refit_every: 10m\n  forget_host_after: 20s\n\
         outputs:\n  remote_write:\n    url: {prom}/api/v1/write\n  alertmanager:\n    urls: [{am}]\n    resend_interval: 2s\n    timeout: 2s\n"
    )
}

/// Prometheus scraping the replicas and evaluating the repository's health alerts.
fn prometheus_yml(replicas: &[Analyzer]) -> String {
    let rules = concat!(env!("CARGO_MANIFEST_DIR"), "/rules/alerting.rules.yml");
    let targets: Vec<String> = replicas
        .iter()
        .map(|a| format!("\"{}\"", a.addr()))
        .collect();
    format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: [\"{rules}\"]\n\
         scrape_configs:\n  - job_name: reveal-analyzer\n    static_configs:\n      - targets: [{}]\n",
        targets.join(", ")
    )
}

/// Instances of the alerts named `name` that Prometheus has firing.
fn firing(prom: &Prom, name: &str) -> BTreeSet<String> {
    let Ok(r) = reveal_e2e::http::get(prom.addr, "/api/v1/alerts") else {
        return BTreeSet::new();
    };
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
    v["data"]["alerts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["labels"]["alertname"] == name && a["state"] == "firing")
        .map(|a| a["labels"]["instance"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Instances with an anomaly series in Prometheus (one per analyzed host).
fn analyzed_hosts(prom: &Prom) -> BTreeSet<String> {
    let path = format!(
        "/api/v1/query?{}",
        reveal_e2e::http::form(&[("query", "count by (instance) (reveal_anomaly_agreement)")])
    );
    let Ok(r) = reveal_e2e::http::get(prom.addr, &path) else {
        return BTreeSet::new();
    };
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
    v["data"]["result"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| s["metric"]["instance"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn three_replicas_split_the_hosts_and_a_missing_one_is_visible() {
    if prometheus::available().is_none() || alertmanager::available().is_none() {
        return;
    }
    // The hosts must spread over the three shards for the test to say anything.
    let owned = |s: u64| (0..HOSTS).filter(|&i| shard_of(i) == s).count();
    assert!((0..SHARDS).all(|s| owned(s) > 0));
    assert_eq!((shard_of(BURST), shard_of(GONE)), (0, 0));
    assert_ne!(shard_of(LATE), KILLED);

    let prom = Prom::start();
    let hook = Recorder::start();
    let am = Alertmanager::with_webhook(&format!("{}/hook", hook.url()));
    let plan = Arc::new(Plan::default());
    let stop = Arc::new(AtomicBool::new(false));
    let feeder = feed(
        format!("{}/api/v1/write", prom.url()),
        plan.clone(),
        stop.clone(),
    );
    std::thread::sleep(Duration::from_secs(2));

    let last = SHARDS - 1;
    let mut replicas: Vec<Analyzer> = (0..SHARDS)
        .map(|s| {
            if s == last {
                let flag = format!("--shard={s}/{SHARDS}");
                Analyzer::start_with(&config(&prom.url(), &am.url(), None), &[], &[&flag])
            } else {
                Analyzer::start(&config(&prom.url(), &am.url(), Some(s)))
            }
        })
        .collect();
    prom.reload(&prometheus_yml(&replicas));
    let logs = |rs: &[Analyzer]| {
        rs.iter()
            .enumerate()
            .map(|(i, a)| format!("--- replica {i}\n{}", a.logs()))
            .collect::<String>()
    };

    // Each replica learns its hosts' history and is ready; each analyzes exactly its shard.
    for r in &replicas {
        wait(
            "ready",
            Duration::from_secs(60),
            || r.status("/-/ready") == 200,
            || logs(&replicas),
        );
    }
    for (s, r) in replicas.iter().enumerate() {
        let s = s as u64;
        assert_eq!(
            r.metric(&format!("reveal_analyzer_shards{{shard=\"{s}\"}}")),
            Some(SHARDS as f64),
            "{}",
            r.logs()
        );
        wait(
            "the replica's hosts",
            Duration::from_secs(20),
            || r.metric("reveal_analyzer_hosts") == Some(owned(s) as f64),
            || logs(&replicas),
        );
    }
    // All hosts have anomaly series, and the replicas' host counts add up to the hosts: every
    // host is analyzed by exactly one replica.
    let all: BTreeSet<String> = (0..HOSTS).map(host).collect();
    wait(
        "every host analyzed",
        Duration::from_secs(30),
        || analyzed_hosts(&prom) == all,
        || format!("{:?}\n{}", analyzed_hosts(&prom), logs(&replicas)),
    );
    let total: f64 = replicas
        .iter()
        .filter_map(|r| r.metric("reveal_analyzer_hosts"))
        .sum();
    assert_eq!(total, HOSTS as f64);
    // The host written under two jobs is reported by its replica, and only there.
    for (s, r) in replicas.iter().enumerate() {
        let expected = usize::from(shard_of(TWICE) == s as u64) as f64;
        assert_eq!(r.metric("reveal_analyzer_hosts_duplicated"), Some(expected));
    }
    let r = &replicas[shard_of(TWICE) as usize];
    assert!(
        r.logs()
            .contains("several scrape targets share this host label value")
            && r.logs().contains(&host(TWICE)),
        "{}",
        r.logs()
    );

    // A host that appears now warms up alone: its replica stays ready and goes on analyzing.
    plan.late.store(true, Ordering::Relaxed);
    let r = &replicas[shard_of(LATE) as usize];
    wait(
        "the new host seen",
        Duration::from_secs(20),
        || r.metric("reveal_analyzer_hosts_warming_up") == Some(1.0),
        || logs(&replicas),
    );
    // Its other hosts go on being analyzed: two more windows each (a wait, not a timed
    // sleep: a loaded machine may take longer over the same passes).
    let before = r.metric("reveal_analyzer_windows_analyzed_total").unwrap();
    wait(
        "two more windows of each host",
        Duration::from_secs(20),
        || {
            r.metric("reveal_analyzer_windows_analyzed_total")
                .is_some_and(|n| n >= before + 2.0 * (owned(shard_of(LATE)) as f64))
        },
        || logs(&replicas),
    );
    assert_eq!(r.status("/-/ready"), 200);
    assert_eq!(r.metric("reveal_analyzer_warming_up"), Some(0.0));
    assert!(
        r.logs().contains("a new host: it warms up alone"),
        "{}",
        r.logs()
    );

    // A write burst on one host: one alert, from its replica only, and it resolves.
    plan.burst.store(true, Ordering::Relaxed);
    let owner = replicas[shard_of(BURST) as usize].addr().to_string();
    let fired = hook.wait_for(Duration::from_secs(40), |q| q.json()["status"] == "firing");
    assert!(fired.is_some(), "no alert\n{}", logs(&replicas));
    std::thread::sleep(Duration::from_secs(5));
    plan.burst.store(false, Ordering::Relaxed);
    let resolved = hook.wait_for(Duration::from_secs(40), |q| {
        q.json()["status"] == "resolved"
    });
    assert!(resolved.is_some(), "not resolved\n{}", logs(&replicas));
    let alerts: Vec<serde_json::Value> = hook
        .bodies()
        .iter()
        .flat_map(|b| b["alerts"].as_array().cloned().unwrap_or_default())
        .collect();
    let instances: BTreeSet<&str> = alerts
        .iter()
        .filter_map(|a| a["labels"]["instance"].as_str())
        .collect();
    assert_eq!(
        instances,
        BTreeSet::from([host(BURST).as_str()]),
        "{alerts:#?}"
    );
    assert!(
        alerts.iter().all(|a| a["generatorURL"]
            .as_str()
            .is_some_and(|u| u.contains(&owner))),
        "alerts came from another replica than {owner}: {alerts:#?}"
    );
    let starts: BTreeSet<String> = alerts
        .iter()
        .map(|a| synth::same_instant(a["startsAt"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(starts.len(), 1, "one episode: {starts:?}");

    // A host whose series stop is silent at once, then forgotten after forget_host_after.
    plan.gone.store(true, Ordering::Relaxed);
    let r = &replicas[shard_of(GONE) as usize];
    wait(
        "the gone host counted silent",
        Duration::from_secs(20),
        || r.metric("reveal_analyzer_hosts_silent") == Some(1.0),
        || logs(&replicas),
    );
    wait(
        "the gone host forgotten",
        Duration::from_secs(40),
        || r.metric("reveal_analyzer_hosts_forgotten_total") == Some(1.0),
        || logs(&replicas),
    );
    assert_eq!(r.metric("reveal_analyzer_hosts_silent"), Some(0.0));
    assert!(
        r.logs().contains("forgot a host without series"),
        "{}",
        r.logs()
    );

    // A replica down: nobody analyzes its hosts, and Prometheus says so.
    replicas[KILLED as usize].kill();
    let orphans: BTreeSet<String> = (0..HOSTS)
        .filter(|&i| shard_of(i) == KILLED)
        .map(host)
        .collect();
    wait(
        "RevealAnalyzerShardMissing and RevealAnalysisStale for the killed replica's hosts",
        Duration::from_secs(150),
        || {
            let stale = firing(&prom, "RevealAnalysisStale");
            !firing(&prom, "RevealAnalyzerShardMissing").is_empty() && orphans.is_subset(&stale)
        },
        || {
            format!(
                "missing {:?} stale {:?}\n{}",
                firing(&prom, "RevealAnalyzerShardMissing"),
                firing(&prom, "RevealAnalysisStale"),
                logs(&replicas)
            )
        },
    );
    // Only those hosts (and the one that went away) are stale: the others are still analyzed
    // by their own replicas, which did not take the orphans over.
    let stale = firing(&prom, "RevealAnalysisStale");
    let mut expected = orphans.clone();
    expected.insert(host(GONE));
    assert!(stale.is_subset(&expected), "{stale:?}");
    for (s, r) in replicas
        .iter()
        .enumerate()
        .filter(|(s, _)| *s as u64 != KILLED)
    {
        let late = usize::from(shard_of(LATE) == s as u64);
        let gone = usize::from(shard_of(GONE) == s as u64);
        assert_eq!(
            r.metric("reveal_analyzer_hosts"),
            Some((owned(s as u64) + late - gone) as f64),
            "replica {s} took over hosts"
        );
    }
    stop.store(true, Ordering::Relaxed);
    feeder.join().unwrap();
    drop(am);
}
