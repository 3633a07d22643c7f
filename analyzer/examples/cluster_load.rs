//! A cluster's worth of hosts without a cluster: writes N hosts' 100 ms series into a
//! Prometheus (or any remote-write receiver) from one exporter page, with per-host levels,
//! scrape offsets and noise, faults at known times and hosts that deviate from their peers.
//!
//!     cargo run --release -p reveal-analyzer --example cluster_load -- \
//!         --write http://127.0.0.1:9090/api/v1/write --hosts 100 \
//!         --template exporter/tests/golden/vm-debian.prom --metric-set deploy/analyzer.yml \
//!         --from UNIX_S --until UNIX_S [--fault-every 60] [--faults-from UNIX_S] \
//!         [--fault-seconds 20] [--deviant 2] \
//!         [--faults-out faults.jsonl]
//!
//! - **Template**: an exposition the real exporter served (`exporter/tests/golden/*.prom` are
//!   the exporter run on fixture roots). Only the series that the metric set's selectors
//!   select are written (`name{label="v", label=~"re", label!="v"}` and
//!   `{__name__=~"re"}` are understood; other PromQL around them is ignored), so the load is
//!   what the analyzer reads.
//! - **Hosts** `gen-0:9100` … : each host scales every series by its own factor (0.8–1.2),
//!   except the configuration (`kind: static` entries: the same on every host, no noise),
//!   stamps its samples with its own offset within the 100 ms step (as scrapes of different
//!   targets land), and adds noise (±25% to a counter's rate, ±5% to a gauge).
//!   Counters (`*_total`) grow at their template value / 86400 per second.
//! - **Faults**: every `--fault-every` seconds from `--faults-from` (or `--from`), host
//!   `7919·j mod N` gets a fault
//!   of `--fault-seconds` in one subsystem (storage, network, cpu, memory in turn): its
//!   counters there run 20× faster and its gauges there read 3×. One JSON line per fault
//!   goes to `--faults-out`.
//! - **Deviants**: the first `--deviant` hosts hold half the HugePages pool of their peers
//!   (every `reveal_memory_hugepages*` series; a template without huge pages gets a pool
//!   of 1024 on every host), for the whole range: a cross-host finding.
//!
//! Samples are written oldest first, one second of every host at a time, in requests of at
//! most 100 000 samples. Times in the future are waited for, so `--until` past now writes
//! live. Progress goes to stderr every 10 s of data.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use clap::Parser;
use regex::Regex;
use reveal_analyzer::http::{HttpClient, HttpClientConfig};
use reveal_analyzer::outputs::remote_write::{Batch, RemoteWriter};

#[derive(Parser)]
struct Args {
    /// Remote-write URL.
    #[arg(long)]
    write: String,
    #[arg(long)]
    hosts: usize,
    /// An exposition the exporter served.
    #[arg(long)]
    template: std::path::PathBuf,
    /// The analyzer configuration whose metric set selects the series.
    #[arg(long = "metric-set")]
    metric_set: std::path::PathBuf,
    /// First and last second written (Unix seconds).
    #[arg(long)]
    from: i64,
    #[arg(long)]
    until: i64,
    /// Seconds between faults (0: none).
    #[arg(long = "fault-every", default_value_t = 0)]
    fault_every: i64,
    /// Faults start after this second (Unix seconds; `--from` when unset), so that a
    /// baseline can be kept free of them.
    #[arg(long = "faults-from")]
    faults_from: Option<i64>,
    #[arg(long = "fault-seconds", default_value_t = 20)]
    fault_seconds: i64,
    /// Hosts with half the HugePages pool of the others.
    #[arg(long, default_value_t = 0)]
    deviant: usize,
    #[arg(long = "faults-out")]
    faults_out: Option<std::path::PathBuf>,
}

/// One series of the template.
struct Series {
    name: String,
    labels: Labels,
    counter: bool,
    /// Configuration (`kind: static`): the same on every host, no noise.
    fixed: bool,
    subsystem: String,
    /// Per second for a counter, the level for a gauge.
    value: f64,
}

/// A label matcher of a selector.
struct Matcher {
    label: String,
    op: String,
    value: String,
}

impl Matcher {
    fn matches(&self, labels: &[(String, String)], name: &str) -> bool {
        let v = if self.label == "__name__" {
            name
        } else {
            labels
                .iter()
                .find(|(k, _)| *k == self.label)
                .map_or("", |(_, v)| v.as_str())
        };
        let re = || Regex::new(&format!("^(?:{})$", self.value)).map(|r| r.is_match(v));
        match self.op.as_str() {
            "=" => v == self.value,
            "!=" => v != self.value,
            "=~" => re().unwrap_or(false),
            "!~" => !re().unwrap_or(true),
            _ => false,
        }
    }
}

/// A selector of the metric set: metric name (or ""), matchers, and whether its entry is
/// `kind: static` (configuration, identical across peers: no per-host factor, no noise).
struct Selector {
    name: String,
    matchers: Vec<Matcher>,
    fixed: bool,
}

/// The selectors of the metric set's expressions.
fn selectors(config: &str) -> Vec<Selector> {
    let sel = Regex::new(r#"([a-zA-Z_:][a-zA-Z0-9_:]*)?\{([^}]*)\}|([a-zA-Z_:][a-zA-Z0-9_:]*)"#)
        .expect("regex");
    let m = Regex::new(r#"([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)""#)
        .expect("regex");
    let mut out: Vec<Selector> = Vec::new();
    let mut entry_start = 0;
    for line in config.lines() {
        if line.trim() == "kind: static" {
            out[entry_start..].iter_mut().for_each(|s| s.fixed = true);
        }
        let Some(expr) = line.trim().strip_prefix("- expr:") else {
            continue;
        };
        entry_start = out.len();
        let expr = expr.trim().trim_matches('\'');
        for c in sel.captures_iter(expr) {
            let name = c.get(1).or(c.get(3)).map_or("", |n| n.as_str());
            if c.get(2).is_none() && !name.starts_with("reveal_") {
                continue; // a function, an aggregation or a label name
            }
            let matchers = c.get(2).map_or(Vec::new(), |b| {
                m.captures_iter(b.as_str())
                    .map(|x| Matcher {
                        label: x[1].to_string(),
                        op: x[2].to_string(),
                        value: x[3].replace("\\\\", "\\"),
                    })
                    .collect()
            });
            out.push(Selector {
                name: name.to_string(),
                matchers,
                fixed: false,
            });
        }
    }
    out
}

/// Labels of a series, as written.
type Labels = Vec<(String, String)>;

/// `name{k="v",…} value [timestamp]` lines of an exposition.
fn parse_line(line: &str) -> Option<(String, Labels, f64)> {
    let (head, rest) = match line.find('{') {
        Some(_) => {
            let close = line.rfind('}')?;
            (&line[..close + 1], &line[close + 1..])
        }
        None => line.split_at(line.find(' ')?),
    };
    let value: f64 = rest.split_whitespace().next()?.parse().ok()?;
    let (name, body) = match head.find('{') {
        Some(i) => (&head[..i], &head[i + 1..head.len() - 1]),
        None => (head, ""),
    };
    let pair = Regex::new(r#"([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)""#).ok()?;
    let labels = pair
        .captures_iter(body)
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .collect();
    Some((name.to_string(), labels, value))
}

fn load_template(text: &str, sel: &[Selector]) -> Vec<Series> {
    let mut out = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let Some((name, labels, value)) = parse_line(line) else {
            continue;
        };
        let picked = sel.iter().find(|s| {
            (s.name.is_empty() || s.name == name)
                && s.matchers.iter().all(|m| m.matches(&labels, &name))
        });
        let Some(picked) = picked.filter(|_| value.is_finite()) else {
            continue;
        };
        // A host without huge pages in the template gets a pool of 1024, so that the
        // deviants' half pool is a difference.
        let pool = name.starts_with("reveal_memory_hugepages")
            && labels
                .iter()
                .any(|(k, v)| k == "state" && (v == "total" || v == "free"));
        let value = if pool && value == 0.0 { 1024.0 } else { value };
        let counter = name.ends_with("_total");
        let subsystem = name
            .strip_prefix("reveal_")
            .and_then(|s| s.split('_').next())
            .unwrap_or("other")
            .to_string();
        out.push(Series {
            counter,
            fixed: picked.fixed,
            subsystem,
            value: if counter { value / 86_400.0 } else { value },
            name,
            labels,
        });
    }
    out
}

/// Deterministic noise in [-0.5, 0.5).
fn noise(a: u64, b: u64) -> f64 {
    let mut x = a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xD1B5_4A32_D192_ED03);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5
}

struct Fault {
    host: usize,
    subsystem: &'static str,
    start_ms: i64,
    end_ms: i64,
}

fn plan_faults(a: &Args) -> Vec<Fault> {
    const SUBSYSTEMS: [&str; 4] = ["storage", "network", "cpu", "memory"];
    let mut out = Vec::new();
    if a.fault_every <= 0 || a.hosts == 0 {
        return out;
    }
    let first = a.faults_from.unwrap_or(a.from);
    let mut j = 1;
    while first + j as i64 * a.fault_every + a.fault_seconds <= a.until {
        let start_ms = (first + j as i64 * a.fault_every) * 1000;
        out.push(Fault {
            host: (7919 * j) % a.hosts,
            subsystem: SUBSYSTEMS[(j - 1) % SUBSYSTEMS.len()],
            start_ms,
            end_ms: start_ms + a.fault_seconds * 1000,
        });
        j += 1;
    }
    out
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    anyhow::ensure!(a.until > a.from, "--until must be after --from");
    let config = std::fs::read_to_string(&a.metric_set)
        .with_context(|| format!("reading {}", a.metric_set.display()))?;
    let template = std::fs::read_to_string(&a.template)
        .with_context(|| format!("reading {}", a.template.display()))?;
    let series = load_template(&template, &selectors(&config));
    anyhow::ensure!(
        !series.is_empty(),
        "the metric set selects no series of the template"
    );
    let faults = plan_faults(&a);
    if let Some(p) = &a.faults_out {
        let lines: String = faults
            .iter()
            .map(|f| {
                format!(
                    "{{\"host\":\"gen-{}:9100\",\"subsystem\":\"{}\",\"start_ms\":{},\"end_ms\":{}}}\n",
                    f.host, f.subsystem, f.start_ms, f.end_ms
                )
            })
            .collect();
        std::fs::write(p, lines)?;
    }
    eprintln!(
        "cluster_load: {} hosts × {} series, {} faults, {} deviant, {} s",
        a.hosts,
        series.len(),
        faults.len(),
        a.deviant,
        a.until - a.from
    );
    let hosts: Vec<String> = (0..a.hosts).map(|h| format!("gen-{h}:9100")).collect();
    let factor: Vec<f64> = (0..a.hosts as u64)
        .map(|h| 1.0 + 0.4 * noise(h, 1))
        .collect();
    let offset: Vec<i64> = (0..a.hosts as u64)
        .map(|h| ((noise(h, 2) + 0.5) * 100.0) as i64)
        .collect();
    let mut totals: HashMap<(usize, usize), f64> = HashMap::new();
    let client = HttpClient::new(&HttpClientConfig::default())?;
    let mut writer = RemoteWriter::new(client, a.write.clone(), 10_000_000);
    let t0 = Instant::now();
    let mut written = 0usize;
    let mut batch = Batch::default();
    for sec in a.from..a.until {
        // Live: wait until the second has passed.
        let ahead = (sec + 1) * 1000 - now_ms();
        if ahead > 0 {
            tokio::time::sleep(Duration::from_millis(ahead as u64)).await;
        }
        for (h, name) in hosts.iter().enumerate() {
            for step in 0..10 {
                let k = sec * 10 + step;
                let t = k * 100 + offset[h];
                let fault = faults
                    .iter()
                    .find(|f| f.host == h && t >= f.start_ms && t < f.end_ms);
                for (i, s) in series.iter().enumerate() {
                    let hit = fault.is_some_and(|f| f.subsystem == s.subsystem);
                    let n = noise(k as u64, (h * 100_003 + i) as u64);
                    let n = if s.fixed { 0.0 } else { n };
                    let mut v = if s.fixed {
                        s.value
                    } else {
                        s.value * factor[h]
                    };
                    if h < a.deviant && s.name.starts_with("reveal_memory_hugepages") {
                        v *= 0.5;
                    }
                    let v = if s.counter {
                        let inc = v * (1.0 + 0.5 * n) * 0.1 * if hit { 20.0 } else { 1.0 };
                        let tot = totals.entry((h, i)).or_insert(s.value * 86_400.0);
                        *tot += inc.max(0.0);
                        *tot
                    } else {
                        v * (1.0 + 0.1 * n) * if hit { 3.0 } else { 1.0 }
                    };
                    let mut labels: Vec<(&str, &str)> = vec![("instance", name), ("job", "reveal")];
                    labels.extend(s.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())));
                    batch.add(&s.name, &labels, t, v);
                }
            }
            if batch.samples() >= 100_000 {
                written += batch.samples();
                writer
                    .write(std::mem::take(&mut batch))
                    .await
                    .context("remote write")?;
            }
        }
        if (sec - a.from) % 10 == 9 {
            eprintln!(
                "cluster_load: {} s of {} written ({} samples, {:.0} samples/s)",
                sec - a.from + 1,
                a.until - a.from,
                written,
                written as f64 / t0.elapsed().as_secs_f64()
            );
        }
    }
    written += batch.samples();
    writer.write(batch).await.context("remote write")?;
    eprintln!(
        "cluster_load: done, {written} samples in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}
