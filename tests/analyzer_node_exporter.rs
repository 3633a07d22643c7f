//! Adopting Reveal without redeploying: the analyzer with the shipped metric sets for
//! exporters a cluster already runs, deploy/analyzer-node-exporter.yml and
//! deploy/analyzer-dcgm.yml, over real servers on loopback.
//!
//! - `node_exporter_set_finds_a_cpu_hog_and_a_write_burst`: Debian's prometheus-node-exporter
//!   (the collectors the set reads, nothing else) scraped every 100 ms by a real Prometheus,
//!   the analyzer running deploy/analyzer-node-exporter.yml as shipped but for its addresses
//!   and a short warm-up, and a real Alertmanager whose webhook the test receives. A CPU hog
//!   (`stress-ng`, one worker, 12 s) must become an alert naming the `cpu` subsystem, and after
//!   that episode has closed, a write burst (`dd` with O_DIRECT to a temp file, 12 s) one
//!   naming `storage`; both alerts' claims are about node_exporter's channels.
//! - `node_exporter_set_names_what_node_exporter_serves`: every metric name the set reads is
//!   on the page node_exporter serves with the flags the set documents (those that depend on
//!   the machine, not on node_exporter, are named when this machine lacks them).
//! - `dcgm_set_reads_a_dcgm_exporter_page`: no GPU here, so a fake dcgm-exporter serves a page
//!   written to its documented format (tests/dcgm-exporter/metrics.prom), beside the real
//!   node_exporter, both scraped by a real Prometheus that gives both jobs one `instance`
//!   per node as deploy/analyzer-dcgm.yml says. Every entry of the set is read back through
//!   the analyzer's Prometheus source: one host, every GPU entry one channel per GPU with the
//!   subsystem and kind it declares, which the test also lists on its own; its host part is
//!   exactly the node_exporter set.
//!
//! Skips loudly without prometheus, prometheus-alertmanager, prometheus-node-exporter,
//! stress-ng or dd, and fails under CI (`.ci/run` installs them).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reveal_analyzer::config::{Config, PromDuration};
use reveal_analyzer::core::matrix::{Kind, Subsystem};
use reveal_analyzer::http::{HttpClient, HttpClientConfig};
use reveal_analyzer::ingest::kinds::MetricSpec;
use reveal_analyzer::ingest::promapi::PromClient;
use reveal_analyzer::ingest::prometheus::PrometheusSource;
use reveal_analyzer::ingest::{Source, TimeRange};
use reveal_e2e::alertmanager::{self, Alertmanager};
use reveal_e2e::analyzer::Analyzer;
use reveal_e2e::disk::{background_io, write_burst};
use reveal_e2e::prometheus::{self, Prometheus};
use reveal_e2e::recorder::{Recorder, Request};
use reveal_e2e::{flush_page_cache, free_port, http, loopback, require_tool, Proc, TempDir};

const NODE_EXPORTER: &str = "/usr/bin/prometheus-node-exporter";

/// The collectors deploy/analyzer-node-exporter.yml reads, with the flags its header lists,
/// and nothing else (`--collector.disable-defaults`): what the set needs, and all it needs.
const NODE_EXPORTER_FLAGS: [&str; 16] = [
    "--collector.disable-defaults",
    "--web.disable-exporter-metrics",
    "--collector.cpu",
    "--collector.cpufreq",
    "--collector.stat",
    "--collector.stat.softirq",
    "--collector.interrupts",
    "--collector.pressure",
    "--collector.meminfo",
    "--collector.meminfo_numa",
    "--collector.vmstat",
    "--collector.vmstat.fields=^(oom_kill|pgpg|pswp|pg.*fault|pgscan_kswapd|pgsteal_kswapd|compact_stall).*",
    "--collector.diskstats",
    "--collector.netdev",
    "--collector.netstat",
    "--collector.softnet",
];

/// Names whose presence depends on this machine's kernel and hardware, not on node_exporter
/// or its flags: cpufreq (absent in most VMs), NUMA statistics (no `/sys/devices/system/node`
/// on some kernels), pressure stall information (`psi=0`), compaction (CONFIG_COMPACTION).
fn machine_dependent(name: &str) -> bool {
    name == "node_cpu_scaling_frequency_hertz"
        || name.starts_with("node_memory_numa_")
        || name.starts_with("node_pressure_")
        || name == "node_vmstat_compact_stall"
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn node_exporter() -> Option<PathBuf> {
    require_tool(NODE_EXPORTER, "prometheus-node-exporter")
}

/// node_exporter on a free loopback port with [`NODE_EXPORTER_FLAGS`]; returns it and its
/// `host:port`.
fn start_node_exporter(bin: &Path) -> (Proc, String) {
    let port = free_port();
    let target = loopback(port).to_string();
    let mut p = Proc::spawn(
        "node_exporter",
        Command::new(bin)
            .arg(format!("--web.listen-address={target}"))
            .args(NODE_EXPORTER_FLAGS),
    );
    p.wait_http_ready(loopback(port), "/metrics", Duration::from_secs(20));
    (p, target)
}

/// `text` with `from` replaced by `to`, which must occur exactly once: a shipped file that
/// changes shape fails here rather than running with an address the test did not set.
fn replace_once(text: &str, from: &str, to: &str) -> String {
    assert_eq!(
        text.matches(from).count(),
        1,
        "expected `{from}` exactly once in the shipped config"
    );
    text.replacen(from, to, 1)
}

/// A shipped config as the analyzer runs it here: its own listen address and state (the
/// `{listen}` and `{state}` of [`Analyzer::start`]), reports in the state directory, the test's
/// Prometheus and Alertmanager, and the short warm-up and baseline of the other fault tests.
/// The metric set is left exactly as shipped.
fn as_tested(shipped: &str, prom: &str, am: &str) -> String {
    let mut t = replace_once(
        shipped,
        "listen_address: 127.0.0.1:19191\n",
        "listen_address: {listen}\n",
    );
    t = replace_once(&t, "state_dir: checkpoint\n", "state_dir: {state}\n");
    t = replace_once(
        &t,
        "    url: http://127.0.0.1:9090\n",
        &format!("    url: {prom}\n    timeout: 3s\n"),
    );
    t = replace_once(
        &t,
        "url: http://127.0.0.1:9090/api/v1/write\n",
        &format!("url: {prom}/api/v1/write\n"),
    );
    t = replace_once(
        &t,
        "    urls: [http://127.0.0.1:9093]\n",
        &format!("    urls: [{am}]\n    resend_interval: 2s\n"),
    );
    t = replace_once(
        &t,
        "reports_dir: reports\n",
        "reports_dir: {state}/reports\n",
    );
    assert!(
        !t.contains("\nanalysis:"),
        "the shipped config has its own analysis block"
    );
    t + "analysis:\n  warmup: 1m\n  baseline: 2m\n  refit_every: 5m\n"
}

/// The first alert of a firing webhook notification for `instance` and `subsystem`.
fn firing(r: &Request, instance: &str, subsystem: &str) -> Option<serde_json::Value> {
    let v = r.json();
    if v["status"] != "firing" {
        return None;
    }
    v["alerts"].as_array()?.iter().find_map(|x| {
        (x["labels"]["instance"] == instance && x["labels"]["subsystem"] == subsystem)
            .then(|| x.clone())
    })
}

/// Waits until the analyzer has no open episode, so the next fault opens its own.
fn wait_no_open_episode(an: &Analyzer, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while an.metric("reveal_analyzer_episodes_open").unwrap_or(0.0) > 0.0 {
        assert!(
            Instant::now() < deadline,
            "an episode stays open:\n{}",
            an.logs()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// What a fault is watched through: the webhook, the analyzer, Prometheus, and the host.
struct Watch<'a> {
    hook: &'a Recorder,
    an: &'a Analyzer,
    prom: &'a Prometheus,
    target: &'a str,
}

impl Watch<'_> {
    /// The alert for `subsystem` within `within` of `start`, checked: a `RevealAnomaly` of
    /// warning or critical severity whose summary is a claim about a node_exporter channel of
    /// that subsystem. On failure, shows the values of `seen` (PromQL) and the analyzer's log.
    fn expect_alert(
        &self,
        subsystem: &str,
        start: Instant,
        within: Duration,
        seen: &[&str],
    ) -> Duration {
        let found = self.hook.wait_for(within, |r| {
            r.at >= start && firing(r, self.target, subsystem).is_some()
        });
        let Some(r) = found else {
            let what: Vec<String> = seen
                .iter()
                .map(|q| {
                    format!(
                        "{q} = {:?}",
                        self.prom
                            .query(q)
                            .map(|r| r.iter().map(|s| s.value).collect::<Vec<_>>())
                    )
                })
                .collect();
            panic!(
                "no {subsystem} alert within {within:?} of the fault; webhooks: {:?}\n{}\n{}",
                self.hook.bodies(),
                what.join("\n"),
                self.an.logs()
            );
        };
        let a = firing(&r, self.target, subsystem).unwrap();
        assert_eq!(a["labels"]["alertname"], "RevealAnomaly", "{a}");
        assert!(
            ["warning", "critical"].contains(&a["labels"]["severity"].as_str().unwrap_or("")),
            "{a}"
        );
        let summary = a["annotations"]["summary"].as_str().unwrap_or("");
        assert!(
            summary.starts_with("node_") && summary.contains(&format!("({subsystem})")),
            "the {subsystem} alert's claim is not about a node_exporter {subsystem} channel: {a}"
        );
        eprintln!("{subsystem} alert: {summary}");
        r.at.duration_since(start)
    }
}

#[test]
fn node_exporter_set_finds_a_cpu_hog_and_a_write_burst() {
    let (Some(_), Some(_), Some(node), Some(stress), Some(_)) = (
        prometheus::available(),
        alertmanager::available(),
        node_exporter(),
        require_tool("stress-ng", "stress-ng"),
        require_tool("dd", "coreutils"),
    ) else {
        return;
    };
    // A build's write-back must not become the baseline's normal (see flush_page_cache).
    flush_page_cache();
    let (exporter, target) = start_node_exporter(&node);
    let prom = Prometheus::with_config(&format!(
        "global:\n  scrape_interval: 100ms\n  scrape_timeout: 100ms\n  evaluation_interval: 1s\n\
         scrape_configs:\n  - job_name: node\n    static_configs:\n      - targets: ['{target}']\n"
    ))
    .start();
    let hook = Recorder::start();
    let am = Alertmanager::with_webhook(&format!("{}/hook", hook.url()));
    // A disk that is never written during the baseline has constant features, which the
    // detectors leave out by design: a little background I/O, as a host's disk has.
    let scratch = TempDir::new("reveal-node-burst");
    let quiet = Arc::new(AtomicBool::new(false));
    let background = background_io(scratch.path().to_path_buf(), quiet.clone());
    let config = as_tested(
        &read("deploy/analyzer-node-exporter.yml"),
        &prom.url(),
        &am.url(),
    );
    let an = Analyzer::start(&config);

    let deadline = Instant::now() + Duration::from_secs(100);
    while an.status("/-/ready") != 200 {
        assert!(Instant::now() < deadline, "never ready:\n{}", an.logs());
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(
        an.metric("reveal_analyzer_hosts"),
        Some(1.0),
        "{}",
        an.logs()
    );
    assert_eq!(an.metric("reveal_analyzer_query_failures_total"), Some(0.0));
    std::thread::sleep(Duration::from_secs(10));
    wait_no_open_episode(&an, Duration::from_secs(60));

    // Fault 1: one CPU kept busy for 12 s (stress-ng ends by itself; dropping the process
    // kills it if the test fails first).
    let hog_start = Instant::now();
    let hog = Proc::spawn(
        "stress-ng",
        Command::new(&stress).args(["--cpu", "1", "--timeout", "12s", "--quiet"]),
    );
    let watch = Watch {
        hook: &hook,
        an: &an,
        prom: &prom,
        target: &target,
    };
    let cpu_latency = watch.expect_alert(
        "cpu",
        hog_start,
        Duration::from_secs(30),
        &[
            "max_over_time(reveal_anomaly_score[40s])",
            "max_over_time(sum(rate(node_cpu_seconds_total{mode!=\"idle\"}[1s]))[40s:100ms])",
        ],
    );
    eprintln!(
        "cpu hog start → alert at Alertmanager: {:.1} s",
        cpu_latency.as_secs_f64()
    );
    let share = prom
        .value(&format!(
            "max_over_time(reveal_anomaly_subsystem{{instance=\"{target}\",subsystem=\"cpu\"}}[1m])"
        ))
        .unwrap();
    assert!(
        share.unwrap_or(0.0) > 0.3,
        "cpu share of attribution: {share:?}"
    );
    std::thread::sleep(Duration::from_secs(12).saturating_sub(hog_start.elapsed()));
    drop(hog);
    // The hog's episode closes (its alert resolves) before the next fault, which must open
    // an episode of its own.
    // (90 s: on a shared 2-core machine, other work can keep a few windows flagged a while.)
    let resolved = hook.wait_for(Duration::from_secs(90), |r| {
        let v = r.json();
        v["status"] == "resolved"
            && v["alerts"].as_array().is_some_and(|a| {
                a.iter().any(|x| {
                    x["labels"]["instance"] == target.as_str() && x["labels"]["subsystem"] == "cpu"
                })
            })
    });
    assert!(
        resolved.is_some(),
        "the cpu alert never resolved:\n{}",
        an.logs()
    );
    wait_no_open_episode(&an, Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(5));

    // Fault 2: 16 MiB written with O_DIRECT every 50 ms for 12 s.
    let stop = Arc::new(AtomicBool::new(false));
    let burst_start = Instant::now();
    let burst = write_burst(
        scratch.path().to_path_buf(),
        stop.clone(),
        Duration::from_secs(12),
    );
    let storage_latency = watch.expect_alert(
        "storage",
        burst_start,
        Duration::from_secs(30),
        &[
            "max_over_time(reveal_anomaly_score[40s])",
            "max_over_time(sum(rate(node_disk_written_bytes_total[1s]))[40s:100ms])",
        ],
    );
    stop.store(true, Ordering::Relaxed);
    let runs = burst.join().unwrap();
    eprintln!(
        "write burst start → alert at Alertmanager: {:.1} s ({runs} dd runs)",
        storage_latency.as_secs_f64()
    );
    // The hog's episode, closed, is in the reports with its cpu claim.
    let episodes =
        std::fs::read_to_string(an.state_dir().join("reports/episodes.jsonl")).unwrap_or_default();
    let cpu_episode = episodes
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| {
            e["subsystems"]
                .as_array()
                .is_some_and(|s| s.iter().any(|x| x == "cpu"))
        });
    let cpu_episode = cpu_episode.unwrap_or_else(|| panic!("no cpu episode reported:\n{episodes}"));
    assert!(
        cpu_episode["claims"]["cpu"]
            .as_str()
            .is_some_and(|c| c.starts_with("node_")),
        "{cpu_episode}"
    );
    assert_eq!(an.metric("reveal_analyzer_query_failures_total"), Some(0.0));
    quiet.store(true, Ordering::Relaxed);
    background.join().unwrap();
    drop(exporter);
}

/// Metric names in a PromQL expression: identifiers that are not functions, aggregations,
/// label names (in braces, or the list after `by`/`without`) or durations. The sets write
/// every name out: the analyzer classifies a series that keeps its `__name__` by the entry of
/// that name, so a `{__name__=~"…"}` entry's subsystem and kind would not apply.
fn names_in(expr: &str) -> BTreeSet<String> {
    const AGGREGATIONS: [&str; 5] = ["sum", "max", "min", "avg", "count"];
    let skip_past = |from: usize, close: char| {
        expr[from..]
            .find(close)
            .map_or(expr.len(), |p| from + p + 1)
    };
    assert!(
        !expr.contains("__name__"),
        "{expr}: a `__name__` selector's series would not take its entry's kind"
    );
    let mut out = BTreeSet::new();
    let b = expr.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'{' {
            i = skip_past(i, '}');
        } else if c == b'[' {
            i = skip_past(i, ']');
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let word = &expr[start..i];
            if word == "by" || word == "without" {
                i = skip_past(i, ')');
            } else if !expr[i..].trim_start().starts_with('(') && !AGGREGATIONS.contains(&word) {
                out.insert(word.to_string());
            }
        } else {
            i += 1;
        }
    }
    out
}

#[test]
fn names_are_found_in_the_expressions_the_sets_use() {
    let n = |e: &str| names_in(e).into_iter().collect::<Vec<_>>();
    assert_eq!(n("rate(a_total{mode!=\"idle\"}[1s])"), ["a_total"]);
    assert_eq!(n("sum without (cpu) (rate(b_total[1s]))"), ["b_total"]);
    assert_eq!(n("1 - x_bytes / y_bytes"), ["x_bytes", "y_bytes"]);
    assert_eq!(n("max without (UUID, gpu) (changes(D_X[1s]))"), ["D_X"]);
}

#[test]
fn node_exporter_set_names_what_node_exporter_serves() {
    let Some(node) = node_exporter() else {
        return;
    };
    let (exporter, target) = start_node_exporter(&node);
    let addr: std::net::SocketAddr = target.parse().unwrap();
    let page = http::get(addr, "/metrics")
        .expect("scraping node_exporter")
        .text();
    let served: BTreeSet<&str> = page
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .collect();
    let c = Config::parse(
        &read("deploy/analyzer-node-exporter.yml"),
        Path::new("deploy/analyzer-node-exporter.yml"),
    )
    .unwrap();
    let mut checked = BTreeSet::new();
    let mut absent_here = BTreeSet::new();
    for m in &c.metrics {
        let names = names_in(&m.expr);
        assert!(!names.is_empty(), "no metric name found in {:?}", m.expr);
        for n in names {
            assert!(
                n.starts_with("node_"),
                "{n} (in {:?}) is not node_exporter's",
                m.expr
            );
            if served.contains(n.as_str()) {
                checked.insert(n);
            } else if machine_dependent(&n) {
                absent_here.insert(n);
            } else {
                panic!(
                    "{n} (in {:?}) is not served by {NODE_EXPORTER} with {NODE_EXPORTER_FLAGS:?}",
                    m.expr
                );
            }
        }
    }
    if !absent_here.is_empty() {
        eprintln!(
            "\n!!!!! not checked: this machine's kernel or hardware does not give node_exporter \
             {absent_here:?} !!!!!\n"
        );
    }
    eprintln!(
        "{} names served by node_exporter: {checked:?}",
        checked.len()
    );
    assert!(checked.len() >= 30, "{checked:?}");
    drop(exporter);
}

/// The GPU entries of deploy/analyzer-dcgm.yml as this test expects them, by channel name:
/// what each is about (every one `gpu`) and how it enters the analysis.
const GPU_ENTRIES: [(&str, Kind); 30] = [
    ("DCGM_FI_DEV_GPU_UTIL", Kind::Dynamic),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", Kind::Dynamic),
    ("DCGM_FI_DEV_FB_USED", Kind::Dynamic),
    ("DCGM_FI_DEV_FB_USED_PLUS_FREE", Kind::Static),
    ("DCGM_FI_DEV_POWER_USAGE", Kind::Dynamic),
    ("DCGM_FI_DEV_SM_CLOCK", Kind::Dynamic),
    ("DCGM_FI_DEV_MEM_CLOCK", Kind::Dynamic),
    ("DCGM_FI_DEV_GPU_TEMP", Kind::Static),
    ("DCGM_FI_DEV_MEMORY_TEMP", Kind::Static),
    ("DCGM_FI_DEV_THERMAL_VIOLATION", Kind::Dynamic),
    ("DCGM_FI_DEV_POWER_VIOLATION", Kind::Dynamic),
    ("DCGM_FI_DEV_PCIE_TX_THROUGHPUT", Kind::Dynamic),
    ("DCGM_FI_DEV_PCIE_RX_THROUGHPUT", Kind::Dynamic),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", Kind::Dynamic),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", Kind::Dynamic),
    ("DCGM_FI_PROF_NVLINK_TX_BYTES", Kind::Dynamic),
    ("DCGM_FI_PROF_NVLINK_RX_BYTES", Kind::Dynamic),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", Kind::Dynamic),
    ("DCGM_FI_PROF_SM_ACTIVE", Kind::Dynamic),
    ("DCGM_FI_PROF_SM_OCCUPANCY", Kind::Dynamic),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", Kind::Dynamic),
    ("DCGM_FI_PROF_DRAM_ACTIVE", Kind::Dynamic),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", Kind::Event),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", Kind::Event),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", Kind::Event),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", Kind::Event),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", Kind::Event),
    ("DCGM_FI_DEV_XID_ERRORS_CHANGES", Kind::Event),
    ("DCGM_FI_DEV_XID_ERRORS", Kind::Static),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", Kind::Static),
];

/// Families of the fixture page the set leaves out, and why.
const LEFT_OUT: [(&str, &str); 5] = [
    ("DCGM_FI_DEV_ENC_UTIL", "video encoder, idle in ML work"),
    ("DCGM_FI_DEV_DEC_UTIL", "video decoder, idle in ML work"),
    (
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "its rate is DCGM_FI_DEV_POWER_USAGE",
    ),
    (
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "a counter of undocumented unit; DCGM_FI_PROF_NVLINK_*_BYTES are bytes",
    ),
    ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "a license, not hardware"),
];

/// The fixture page as a fake dcgm-exporter serves it at its `n`-th scrape: counters grow
/// (by 7 per scrape, so `rate()` is not zero), gauges stay.
fn dcgm_page(template: &str, n: u64) -> String {
    let mut counters = BTreeSet::new();
    let mut out = String::with_capacity(template.len() + 64);
    for line in template.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            if let Some((name, "counter")) = rest.split_once(' ') {
                counters.insert(name.to_string());
            }
        } else if !line.starts_with('#') {
            let name = line.split('{').next().unwrap();
            if counters.contains(name) {
                let (series, value) = line.rsplit_once(' ').unwrap();
                let v: f64 = value.parse().unwrap();
                out.push_str(&format!("{series} {}\n", v + 7.0 * n as f64));
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[test]
fn dcgm_set_reads_a_dcgm_exporter_page() {
    let (Some(_), Some(node)) = (prometheus::available(), node_exporter()) else {
        return;
    };
    let node_set = Config::parse(
        &read("deploy/analyzer-node-exporter.yml"),
        Path::new("deploy/analyzer-node-exporter.yml"),
    )
    .unwrap();
    let dcgm_set = Config::parse(
        &read("deploy/analyzer-dcgm.yml"),
        Path::new("deploy/analyzer-dcgm.yml"),
    )
    .unwrap();
    // The host part is the node_exporter set, entry for entry; the rest is the GPUs.
    let n = node_set.metrics.len();
    assert_eq!(dcgm_set.metrics[..n], node_set.metrics[..]);
    assert_eq!(dcgm_set.outputs, node_set.outputs);
    assert_eq!(dcgm_set.listen_address, node_set.listen_address);
    assert_eq!(dcgm_set.source, node_set.source);
    let src = dcgm_set.source.prometheus.clone().unwrap();
    assert_eq!(src.host_label, "instance");
    let gpu: Vec<&MetricSpec> = dcgm_set.metrics[n..].iter().collect();
    let expected: BTreeMap<&str, Kind> = GPU_ENTRIES.iter().copied().collect();
    let declared: BTreeMap<String, Kind> = gpu
        .iter()
        .map(|m| {
            assert_eq!(m.subsystem, "gpu", "{m:?}");
            assert!(m.resolution.is_some(), "no resolution: {m:?}");
            (
                m.channel_name(),
                Kind::from(m.kind.expect("every GPU entry has a kind")),
            )
        })
        .collect();
    assert_eq!(declared.len(), gpu.len(), "two GPU entries share a name");
    assert_eq!(
        declared
            .iter()
            .map(|(k, v)| (k.as_str(), *v))
            .collect::<BTreeMap<_, _>>(),
        expected
    );

    // The fake dcgm-exporter, beside the real node_exporter.
    let template = read("tests/dcgm-exporter/metrics.prom");
    let families: BTreeSet<String> = template
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    for f in &families {
        // What the scrape source and `analyze` attribute by name agrees with the set.
        assert_eq!(Subsystem::from_metric_name(f), Subsystem::Gpu, "{f}");
        let read_by_set = gpu.iter().any(|m| names_in(&m.expr).contains(f));
        let left_out = LEFT_OUT.iter().any(|(l, _)| l == f);
        assert!(
            read_by_set != left_out,
            "{f}: read by the set: {read_by_set}, listed as left out: {left_out}"
        );
    }
    let dcgm = Recorder::start();
    let scrapes = Arc::new(AtomicU64::new(0));
    let counter = scrapes.clone();
    dcgm.respond(move |_| {
        let k = counter.fetch_add(1, Ordering::Relaxed);
        (200, dcgm_page(&template, k).into_bytes())
    });
    let (exporter, node_target) = start_node_exporter(&node);
    let dcgm_target = dcgm.addr().to_string();
    // Both jobs of one node get one `instance`, the address without its port, as the header
    // of deploy/analyzer-dcgm.yml says.
    let relabel = "    relabel_configs:\n      - source_labels: [__address__]\n        regex: '(.+):\\d+'\n        target_label: instance\n";
    let prom = Prometheus::with_config(&format!(
        "global:\n  scrape_interval: 100ms\n  scrape_timeout: 100ms\n\
         scrape_configs:\n  - job_name: node\n    static_configs:\n      - targets: ['{node_target}']\n{relabel}\
         \x20 - job_name: dcgm\n    static_configs:\n      - targets: ['{dcgm_target}']\n{relabel}"
    ))
    .start();
    prom.wait_for_value(
        "count(up{instance=\"127.0.0.1\"} == 1)",
        |v| v == 2.0,
        Duration::from_secs(20),
    );
    std::thread::sleep(Duration::from_secs(4));

    let client = HttpClient::new(&HttpClientConfig {
        timeout: PromDuration(Duration::from_secs(5)),
        ..Default::default()
    })
    .unwrap();
    let pc = PromClient::new(client, &prom.url());
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let end = now / 100 * 100 - 500;
    let range = TimeRange {
        start_ms: end - 2000,
        end_ms: end,
    };
    let mut channels_per_entry = Vec::new();
    let mut unresolved = BTreeSet::new();
    for (i, m) in dcgm_set.metrics.iter().enumerate() {
        let mut source =
            PrometheusSource::new(pc.clone(), std::slice::from_ref(m), 100, &src.host_label)
                .unwrap();
        let hosts = source
            .fetch(Some(range))
            .unwrap_or_else(|e| panic!("{:?}: {e}", m.expr));
        assert!(
            source.last_duplicates.is_empty(),
            "{:?}: {:?}",
            m.expr,
            source.last_duplicates
        );
        let names: Vec<&str> = hosts.iter().map(|h| h.host.as_str()).collect();
        assert!(
            names.is_empty() || names == ["127.0.0.1"],
            "{:?}: hosts {names:?}, expected the one relabeled node",
            m.expr
        );
        let channels: Vec<_> = hosts.iter().flat_map(|h| h.channels.clone()).collect();
        let kind = Kind::from(m.kind.expect("every entry has a kind"));
        for ch in &channels {
            assert_eq!(ch.subsystem.as_str(), m.subsystem, "{}", ch.name);
            assert_eq!(ch.kind, kind, "{}", ch.name);
            assert_eq!(ch.metric.starts_with("DCGM_"), i >= n, "{}", ch.name);
        }
        if i >= n {
            // One channel per GPU, named by the entry and the GPU alone.
            let mut gpus: Vec<String> = channels.iter().map(|c| c.name.clone()).collect();
            gpus.sort();
            let name = m.channel_name();
            assert_eq!(
                gpus,
                [
                    format!("{name}{{gpu=\"0\",job=\"dcgm\"}}"),
                    format!("{name}{{gpu=\"1\",job=\"dcgm\"}}")
                ],
                "{:?}",
                m.expr
            );
            let resolution = m.resolution.unwrap();
            assert!(channels.iter().all(|c| c.resolution == resolution));
        } else if !names_in(&m.expr).iter().all(|n| machine_dependent(n)) {
            assert!(!channels.is_empty(), "{:?} gave no channel", m.expr);
        }
        for ch in channels.iter().filter(|c| c.resolution == 0.0) {
            unresolved.insert(ch.metric.clone());
        }
        channels_per_entry.push((m.channel_name(), channels.len()));
    }
    // Every channel has a least meaningful change, from its entry or its name's unit, but a
    // ratio and the throttling counters whose unit changed between dcgm-exporter releases.
    assert_eq!(
        unresolved,
        BTreeSet::from(
            [
                "node_memory_utilization",
                "DCGM_FI_DEV_THERMAL_VIOLATION",
                "DCGM_FI_DEV_POWER_VIOLATION"
            ]
            .map(String::from)
        )
    );
    eprintln!("channels per entry: {channels_per_entry:?}");
    assert!(
        scrapes.load(Ordering::Relaxed) >= 20,
        "the fake dcgm-exporter was scraped too little"
    );
    drop(exporter);
}
