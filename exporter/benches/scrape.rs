//! In-process cost of a full scrape: every default collector read, parsed and encoded, as
//! `GET /metrics` does it, repeated N times on this host's /proc and /sys and on the 64-CPU
//! `numa-2socket` fixture tree. Prints a table; not a timed test.
//!
//! `cargo bench -p reveal-exporter --bench scrape` (env `REVEAL_BENCH_N`, default 2000 renders).

use reveal_exporter::collectors::Settings;
use reveal_exporter::paths::Paths;
use reveal_exporter::runner::{Format, Runner};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

struct Row {
    label: String,
    series: usize,
    bytes: usize,
    times: Vec<Duration>,
    /// Per collector: the durations the runner measured for its `update`.
    collectors: BTreeMap<String, Vec<f64>>,
}

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

fn measure(label: &str, runner: &Runner, format: Format, n: usize) -> Row {
    for _ in 0..20 {
        black_box(runner.render_as(format));
    }
    let mut times = Vec::with_capacity(n);
    let mut collectors: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut last = String::new();
    for _ in 0..n {
        let t = Instant::now();
        let out = runner.render_as(format);
        times.push(t.elapsed());
        // Outside the timed part: the runner's own duration samples per collector.
        for line in out
            .lines()
            .filter(|l| l.starts_with("reveal_exporter_collector_duration_seconds{"))
        {
            let name = line.split('"').nth(1).unwrap_or("?").to_string();
            let v: f64 = line
                .rsplit(' ')
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or(f64::NAN);
            collectors.entry(name).or_default().push(v * 1e3);
        }
        last = out;
    }
    times.sort();
    let series = last
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .count();
    Row {
        label: label.to_string(),
        series,
        bytes: last.len(),
        times,
        collectors,
    }
}

fn main() {
    let n: usize = std::env::var("REVEAL_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/numa-2socket");
    let host = Runner::with_defaults(&Settings::default());
    let numa = Runner::with_defaults(&Settings {
        paths: Paths::new(fixture.join("proc"), fixture.join("sys")),
        ..Default::default()
    });
    let rows = [
        measure("this host, OpenMetrics", &host, Format::OpenMetrics, n),
        measure("this host, text 0.0.4", &host, Format::Text, n),
        measure(
            "numa-2socket fixture, OpenMetrics",
            &numa,
            Format::OpenMetrics,
            n,
        ),
    ];
    println!(
        "\nfull scrape, default collectors ({}), {n} renders each\n",
        host.names().join(" ")
    );
    println!("| scrape | series | bytes | median ms | p90 ms | p99 ms | max ms |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for r in &rows {
        println!(
            "| {} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3} |",
            r.label,
            r.series,
            r.bytes,
            quantile(&r.times, 0.5),
            quantile(&r.times, 0.9),
            quantile(&r.times, 0.99),
            quantile(&r.times, 1.0)
        );
    }
    println!("\nmedian time per collector update, ms (this host | numa-2socket)\n");
    println!("| collector | this host | numa-2socket |");
    println!("| --- | ---: | ---: |");
    for (name, v) in &rows[0].collectors {
        let med = |v: &Vec<f64>| {
            let mut s = v.clone();
            s.sort_by(f64::total_cmp);
            s[s.len() / 2]
        };
        let other = rows[2].collectors.get(name).map(med).unwrap_or(f64::NAN);
        println!("| {name} | {:.3} | {:.3} |", med(v), other);
    }
    println!();
}
