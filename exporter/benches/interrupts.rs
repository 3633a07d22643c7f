//! What `/proc/interrupts` costs on a wide host: the interrupts collector's `update` (read,
//! parse, per-CPU sums, top IRQ lines) alone, and a full scrape of the same root with the
//! exporter's default collectors, as `scripts/big_host_table.py` serves it (perf and msr off,
//! GPUs replayed from the root's `nvml.json` when it has one). Prints a table; not a timed test.
//!
//! ```text
//! scripts/big_host_fixture.py /tmp/bighost
//! REVEAL_BENCH_ROOT=/tmp/bighost cargo bench -p reveal-exporter --bench interrupts
//! ```
//!
//! `REVEAL_BENCH_ROOT` is a fixture root with `proc/` and `sys/` (default: the `numa-2socket`
//! fixture tree); `REVEAL_BENCH_N` the number of timed runs of each (default 2000). CPU is the
//! process's own over the timed runs (`/proc/self/stat`, in 10 ms ticks), divided by the runs.
//! On a machine shared with other work, the minimum is the figure least disturbed by it.

use reveal_exporter::cli;
use reveal_exporter::collectors::gpu::{GpuCollector, GpuSample, GpuSource, Needs};
use reveal_exporter::collectors::interrupts::{parse_interrupts, InterruptsCollector};
use reveal_exporter::collectors::Collector;
use reveal_exporter::error::CollectError;
use reveal_exporter::read::KeptFile;
use reveal_exporter::runner::{Format, Runner};
use reveal_exporter::scrape::Scrape;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The same GPU samples on every scrape.
struct Replay(Vec<GpuSample>);

impl GpuSource for Replay {
    fn samples(&mut self, _: Needs) -> Result<Vec<GpuSample>, CollectError> {
        Ok(self.0.clone())
    }
}

/// This process's user + system CPU time (`/proc/self/stat` fields 14 and 15, USER_HZ = 100).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_comm = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<u64> = after_comm
        .split_ascii_whitespace()
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

struct Row {
    label: String,
    times: Vec<Duration>,
    cpu: Duration,
}

fn measure(label: &str, n: usize, mut f: impl FnMut()) -> Row {
    for _ in 0..20 {
        f();
    }
    let mut times = Vec::with_capacity(n);
    let cpu0 = cpu_time();
    for _ in 0..n {
        let t = Instant::now();
        f();
        times.push(t.elapsed());
    }
    let cpu = cpu_time().saturating_sub(cpu0);
    times.sort();
    Row {
        label: label.to_string(),
        times,
        cpu: cpu / n as u32,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    ms(sorted[((sorted.len() - 1) as f64 * q).round() as usize])
}

fn main() {
    let n: usize = std::env::var("REVEAL_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let root = std::env::var_os("REVEAL_BENCH_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/numa-2socket")
        });
    let procfs = root.join("proc");
    let sysfs = root.join("sys");
    let file = procfs.join("interrupts");
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{}: {e} (set REVEAL_BENCH_ROOT)", file.display()));
    let flags = |extra: &[&str]| {
        let mut a = vec![
            "reveal-exporter".to_string(),
            format!("--path.procfs={}", procfs.display()),
            format!("--path.sysfs={}", sysfs.display()),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        cli::parse_from(a).expect("flags")
    };

    let mut rows = Vec::new();
    rows.push(measure(
        "read the file (std::fs::read_to_string)",
        n,
        || {
            black_box(std::fs::read_to_string(black_box(&file)).ok());
        },
    ));
    let kept = KeptFile::new(file.clone());
    let mut buf = String::new();
    rows.push(measure(
        "read the file into a String, kept open (KeptFile::read_into)",
        n,
        || {
            black_box(kept.read_into(&mut buf).is_ok());
        },
    ));
    rows.push(measure(
        "parse_interrupts on the text in memory (the pure parser)",
        n,
        || {
            black_box(parse_interrupts(black_box(&text)).is_ok());
        },
    ));
    let settings = flags(&[]).settings;
    let mut collector = InterruptsCollector::new(&settings);
    let mut scrape = Scrape::new();
    let mut last_ok = true;
    rows.push(measure(
        "interrupts collector update (read, parse, sums, top lines)",
        n,
        || {
            scrape.clear();
            last_ok = collector.update(&mut scrape).is_ok();
            black_box(&scrape);
        },
    ));
    let series = scrape.sample_count();

    let full = flags(&["--no-collector.perf", "--no-collector.msr"]);
    let runner = Runner::new(&full.collectors, &full.settings).expect("runner");
    let gpus = root.join("nvml.json");
    if let Some(samples) = read_gpus(&gpus) {
        runner.replace(Box::new(GpuCollector::with_source(Box::new(Replay(
            samples,
        )))));
    }
    let mut page_series = 0;
    let mut durations: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    rows.push(measure(
        "full scrape, default collectors less perf and msr (OpenMetrics)",
        n,
        || {
            let page = runner.render_as(Format::OpenMetrics);
            page_series = 0;
            for line in page.lines() {
                if line.starts_with('#') || line.is_empty() {
                    continue;
                }
                page_series += 1;
                // The runner's own measure of each collector's update.
                if let Some(rest) =
                    line.strip_prefix("reveal_exporter_collector_duration_seconds{collector=\"")
                {
                    let (name, value) = rest.split_once('"').unwrap_or(("?", ""));
                    let v: f64 = value
                        .rsplit(' ')
                        .next()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(f64::NAN);
                    durations.entry(name.to_string()).or_default().push(v * 1e3);
                }
            }
            black_box(page);
        },
    ));

    println!(
        "\n{}: {} lines, {} bytes; {n} timed runs each (after 20 untimed)\n",
        file.display(),
        text.lines().count(),
        text.len()
    );
    println!("| what | min ms | median ms | p90 ms | p99 ms | CPU ms per run |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for r in &rows {
        println!(
            "| {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
            r.label,
            quantile(&r.times, 0.0),
            quantile(&r.times, 0.5),
            quantile(&r.times, 0.9),
            quantile(&r.times, 0.99),
            ms(r.cpu)
        );
    }
    println!(
        "\ninterrupts collector: last update {}, {series} series; full scrape: {page_series} series\n",
        if last_ok { "succeeded" } else { "FAILED" }
    );
    let mut medians: Vec<(f64, &String)> = durations
        .iter()
        .map(|(name, v)| {
            let mut v = v.clone();
            v.sort_by(f64::total_cmp);
            (v[v.len() / 2], name)
        })
        .collect();
    medians.sort_by(|a, b| b.0.total_cmp(&a.0));
    let total: f64 = medians.iter().map(|m| m.0).sum();
    let shown: Vec<String> = medians
        .iter()
        .map(|(ms, name)| format!("{name} {ms:.3}"))
        .collect();
    println!(
        "full scrape, each collector's update (median ms; {total:.3} in all, the rest is \
         encoding): {}\n",
        shown.join(", ")
    );
}

fn read_gpus(path: &Path) -> Option<Vec<GpuSample>> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}
