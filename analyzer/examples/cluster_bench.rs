//! What one analyzer pass costs as the hosts grow: the service's own fetch (range queries,
//! decoding, split by host) and engine (features, scoring, episodes, cross-host comparison)
//! over a Prometheus that holds N hosts' series (`cluster_load`), timed pass by pass.
//!
//!     cargo run --release -p reveal-analyzer --example cluster_bench -- \
//!         CONFIG LEARN_FROM SCORE_FROM PASSES [FAULTS.jsonl]
//!
//! Learns the baseline on (LEARN_FROM, SCORE_FROM] (Unix seconds) a minute at a time, as the
//! service learns history at start, fits every host, then runs PASSES passes of one stride
//! each from SCORE_FROM, as `reveal-analyzer run` does every stride. Not included: writing the
//! anomaly series and sending alerts (one request each per pass, whatever N).
//!
//! With `REVEAL_BENCH_WHOLE_SPAN=1` every pass asks for its whole span instead of only the
//! points the previous pass did not hold; with `REVEAL_BENCH_INLINE_FIT=1` the refits that
//! fall due during the passes (`analysis.refit_every`) are fitted inline, holding their pass
//! back, instead of in the background as the service fits them; with `REVEAL_BENCH_PACE=1`
//! a pass starts every stride of real time, as in the service, rather than back to back.
//!
//! Prints one JSON object (with the store's CPU seconds and `query_range` bytes per pass
//! when the source is a Prometheus that serves its own `/metrics`): hosts, channels and
//! features (the feature columns the detectors score) per host, the learn and fit times,
//! resident memory before and after (and per host), the bytes allocated per host once learned,
//! once fitted and at the end, and the most the fit allocated above what it started with
//! (counted by the allocator, whatever the system allocator keeps), per pass the wall time (mean, p50, p99,
//! max) split into fetch, engine and cross-host, CPU seconds per pass, the hosts one core can
//! follow at this stride, episodes opened against the faults of FAULTS.jsonl (if given), and
//! the cross-host findings open after the last pass.

use std::time::Instant;

use prometheus_client::registry::Registry;
use reveal_analyzer::config::Config;
use reveal_analyzer::core::episodes::tracker::Event;
use reveal_analyzer::http::HttpClient;
use reveal_analyzer::ingest::promapi::PromClient;
use reveal_analyzer::ingest::prometheus::PrometheusSource;
use reveal_analyzer::ingest::TimeRange;
use reveal_analyzer::online::{Engine, EngineParams, Outcome};
use reveal_analyzer::outputs::metrics::SelfMetrics;

#[path = "support/alloc_count.rs"]
mod alloc_count;
#[global_allocator]
static ALLOC: alloc_count::Counting = alloc_count::Counting;

/// Resident memory (VmRSS) in MB.
fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// CPU seconds (user + system) of this process.
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rfind(')').map_or("", |i| &stat[i + 2..]);
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    // USER_HZ is 100 on every Linux architecture Reveal runs on.
    (f.get(11).unwrap_or(&0.0) + f.get(12).unwrap_or(&0.0)) / 100.0
}

/// Prometheus' CPU seconds and `query_range` answer bytes so far, from its own `/metrics`.
async fn store_counters(client: &HttpClient, base: &str) -> (f64, f64) {
    let url = format!("{}/metrics", base.trim_end_matches('/'));
    let text = match client.request(reqwest::Method::GET, &url) {
        Ok(rb) => client.send(&url, rb).await.unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    let text = String::from_utf8_lossy(&text);
    let value = |prefix: &str| {
        text.lines()
            .filter(|l| l.starts_with(prefix))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>()
    };
    (
        value("process_cpu_seconds_total "),
        value("prometheus_http_response_size_bytes_sum{handler=\"/api/v1/query_range\"}"),
    )
}

fn pct(v: &[f64], q: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(((s.len() as f64 - 1.0) * q).round() as usize)
        .copied()
        .unwrap_or(f64::NAN)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    anyhow::ensure!(
        (5..=6).contains(&args.len()),
        "usage: cluster_bench CONFIG LEARN_FROM SCORE_FROM PASSES [FAULTS.jsonl]"
    );
    let config = Config::load(std::path::Path::new(&args[1]))?;
    let learn_from = args[2].parse::<i64>()? * 1000;
    let from = args[3].parse::<i64>()? * 1000;
    let passes: i64 = args[4].parse()?;
    let faults: Vec<serde_json::Value> = match args.get(5) {
        Some(p) => std::fs::read_to_string(p)?
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect(),
        None => Vec::new(),
    };
    let p = config
        .source
        .prometheus
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("needs a prometheus source"))?;
    let a = &config.analysis;
    let ms = |d: reveal_analyzer::config::PromDuration| d.0.as_millis() as i64;
    let (step, window, stride) = (ms(a.step), ms(a.window), ms(a.stride));
    let http = HttpClient::new(&p.http_client())?;
    let mut src = PrometheusSource::new(
        PromClient::new(http.clone(), &p.url),
        &config.metrics,
        step,
        &p.host_label,
    )?
    .with_settle(2 * a.delay.0.as_millis() as i64);
    // REVEAL_BENCH_WHOLE_SPAN=1: every pass asks for its whole span, as before the source
    // kept its answers (for a side-by-side run on the same data).
    let whole = std::env::var("REVEAL_BENCH_WHOLE_SPAN").is_ok_and(|v| v == "1");
    if whole {
        src = src.whole_spans();
    }
    let metrics = SelfMetrics::new(&mut Registry::default());
    let mut engine = Engine::new(EngineParams::from_config(a));
    // As the service: refits of the passes run in the background, unless
    // REVEAL_BENCH_INLINE_FIT=1 (every refit then holds its pass back).
    let inline_fit = std::env::var("REVEAL_BENCH_INLINE_FIT").is_ok_and(|v| v == "1");
    if !inline_fit {
        engine.fit_in_background();
    }
    let range = |after: i64, to: i64| TimeRange {
        start_ms: after + stride - window - step,
        end_ms: to + step,
    };
    let rss0 = rss_mb();
    let live0 = alloc_count::live_mb();

    // Learn the history a minute at a time, as the service does at start.
    let t = Instant::now();
    let (mut hosts, mut channels) = (0usize, 0usize);
    let mut at = learn_from;
    while at < from {
        let to = (at + 60_000).min(from);
        let got = src.fetch_async(range(at, to)).await?;
        hosts = hosts.max(got.len());
        channels = channels.max(got.iter().map(|m| m.n_channels()).sum::<usize>());
        for m in &got {
            engine.learn(m, at, to, &[], &metrics);
        }
        eprintln!("cluster_bench: learned to {} s", (to - learn_from) / 1000);
        at = to;
    }
    let learn_s = t.elapsed().as_secs_f64();
    anyhow::ensure!(hosts > 0, "no host in the source over the learning range");
    let live_learned = alloc_count::live_mb();
    let t = Instant::now();
    let c = cpu_s();
    alloc_count::mark();
    engine.refit_all(&metrics);
    let (live_fitted, fit_peak) = (alloc_count::live_mb(), alloc_count::peak_mb());
    let (fit_s, fit_cpu) = (t.elapsed().as_secs_f64(), cpu_s() - c);
    let rss_fitted = rss_mb();
    let status = engine.status();
    let (baseline_windows, features) = (status.baseline_windows, status.feature_columns);

    // The passes.
    let (mut wall, mut fetch, mut eng, mut group) = (vec![], vec![], vec![], vec![]);
    let store0 = store_counters(&http, &p.url).await;
    let cpu0 = cpu_s();
    let mut opened: Vec<(String, i64, Vec<String>)> = Vec::new();
    let mut findings = Vec::new();
    // REVEAL_BENCH_PACE=1: a pass every stride of real time, as the service runs them (a
    // pass late starts at once), so a background fit has the time it has in the service.
    let pace = std::env::var("REVEAL_BENCH_PACE").is_ok_and(|v| v == "1");
    let fits0 = metrics.fits.get();
    let started = Instant::now();
    for k in 0..passes {
        let (after, target) = (from + k * stride, from + (k + 1) * stride);
        if pace {
            let tick = std::time::Duration::from_millis((k * stride) as u64);
            std::thread::sleep(tick.saturating_sub(started.elapsed()));
        }
        let t0 = Instant::now();
        let got = src.fetch_async(range(after, target)).await?;
        let t1 = Instant::now();
        for m in &got {
            for o in engine.process(m, after, target, &metrics) {
                if let Outcome::Scored(w) = o {
                    if let Some(Event::Opened(ep)) = w.event.as_deref() {
                        opened.push((ep.instance.clone(), ep.start_ms, ep.subsystems.clone()));
                    }
                }
            }
        }
        let _ = engine.sweep(target);
        let t2 = Instant::now();
        findings = engine.cross_host().open;
        let t3 = Instant::now();
        fetch.push((t1 - t0).as_secs_f64());
        eng.push((t2 - t1).as_secs_f64());
        group.push((t3 - t2).as_secs_f64());
        wall.push((t3 - t0).as_secs_f64());
    }
    let refits = metrics.fits.get() - fits0;
    let cpu_per_pass = (cpu_s() - cpu0) / passes.max(1) as f64;
    let store1 = store_counters(&http, &p.url).await;
    let per_pass = |a: f64, b: f64| (b - a) / passes.max(1) as f64;
    let deviations: Vec<String> = findings
        .iter()
        .map(|d| format!("{} {}", d.host, d.subsystem.as_str()))
        .collect();
    let scored_until = from + passes * stride;
    let due: Vec<&serde_json::Value> = faults
        .iter()
        .filter(|f| {
            f["start_ms"]
                .as_i64()
                .is_some_and(|s| s >= from && s < scored_until - 10_000)
        })
        .collect();
    let found = due
        .iter()
        .filter(|f| {
            opened.iter().any(|(h, start, _)| {
                f["host"] == h.as_str()
                    && (*start - f["start_ms"].as_i64().unwrap_or(0)).abs() <= 15_000
            })
        })
        .count();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    // What the source (its kept answers, its client) and the engine (baselines, models,
    // episodes) each hold at the end: the memory each frees when dropped.
    let live_end = alloc_count::live_mb();
    drop(src);
    let live_sourceless = alloc_count::live_mb();
    drop(engine);
    let (source_mb, engine_mb) = (
        live_end - live_sourceless,
        live_sourceless - alloc_count::live_mb(),
    );
    let out = serde_json::json!({
        "fetch": if whole { "whole span" } else { "new points" },
        "hosts": hosts,
        "channels_per_host": channels as f64 / hosts as f64,
        "features_per_host": features as f64 / hosts as f64,
        "baseline_windows_per_host": baseline_windows as f64 / hosts as f64,
        "learn_s": learn_s,
        "fit_s": fit_s,
        "fit_cpu_s_per_host": fit_cpu / hosts as f64,
        "rss_start_mb": rss0,
        "rss_fitted_mb": rss_fitted,
        "rss_end_mb": rss_mb(),
        "mb_per_host": (rss_mb() - rss0) / hosts as f64,
        "allocated_learned_mb_per_host": (live_learned - live0) / hosts as f64,
        "allocated_fitted_mb_per_host": (live_fitted - live0) / hosts as f64,
        "allocated_end_mb_per_host": (live_end - live0) / hosts as f64,
        "allocated_source_mb": source_mb,
        "allocated_engine_mb_per_host": engine_mb / hosts as f64,
        "fit_peak_allocated_mb": fit_peak - live_learned,
        "passes": passes,
        "pass_wall_mean_s": mean(&wall),
        "pass_wall_p50_s": pct(&wall, 0.5),
        "pass_wall_p99_s": pct(&wall, 0.99),
        "pass_wall_max_s": pct(&wall, 1.0),
        "passes_over_a_stride": wall.iter().filter(|&&w| w > stride as f64 / 1000.0).count(),
        "paced": pace,
        "fit_in_background": !inline_fit,
        "refits_during_passes": refits,
        "fetch_mean_s": mean(&fetch),
        "engine_mean_s": mean(&eng),
        "crosshost_mean_s": mean(&group),
        "cpu_s_per_pass": cpu_per_pass,
        "cpu_ms_per_host_pass": 1000.0 * cpu_per_pass / hosts as f64,
        "hosts_per_core": hosts as f64 * (stride as f64 / 1000.0) / cpu_per_pass.max(1e-9),
        "store_cpu_s_per_pass": per_pass(store0.0, store1.0),
        "query_bytes_per_pass": per_pass(store0.1, store1.1),
        "episodes_opened": opened.len(),
        "faults_due": due.len(),
        "faults_found": found,
        "deviations": deviations,
    });
    println!("{out}");
    Ok(())
}
