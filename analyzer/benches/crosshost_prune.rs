//! Speed of the cross-host comparison and of correlation pruning on the paper's shapes.
//!
//! Run: `cargo bench -p reveal-analyzer --bench crosshost_prune`
//!
//! - cross-host: one window of a group of hosts, each with 700 channels × 13 features
//!   (9,100 channel-features), through [`CrossHostTracker::observe`], after 30 windows of
//!   history (so the persistence bookkeeping is full);
//! - prune: the correlation matrix of one run of 700 channels over an hour at 100 ms (36,000
//!   steps), then the figure-4 curves (18 thresholds) on it.

use std::time::Instant;

use ndarray::Array2;
use reveal_analyzer::core::crosshost::{CrossHostParams, CrossHostTracker, GroupBuilder};
use reveal_analyzer::core::features::Feature;
use reveal_analyzer::core::matrix::{Channel, HostMatrix, Kind, MetricType, Subsystem};
use reveal_analyzer::core::prune::{correlate, curves, thresholds};

const CHANNELS: usize = 700;

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn bench_crosshost(hosts: usize) -> (f64, usize) {
    let feats = [
        Feature::Mean,
        Feature::Variance,
        Feature::StandardDeviation,
        Feature::Minimum,
        Feature::Maximum,
        Feature::Skewness,
        Feature::Kurtosis,
        Feature::LinearTrendSlope,
        Feature::LinearTrendIntercept,
        Feature::LinearTrendRvalue,
        Feature::AutocorrelationLag1,
        Feature::MeanAbsChange,
        Feature::AdfTeststat,
    ];
    let names: Vec<String> = (0..CHANNELS)
        .map(|c| format!("reveal_cpu_perf_event_total{{cpu=\"{c}\"}}"))
        .collect();
    let mut rng = Lcg(7);
    let mut t = CrossHostTracker::new(CrossHostParams::default()).unwrap();
    let mut times = Vec::new();
    let mut findings = 0;
    for w in 0..60 {
        let mut b = GroupBuilder::new(w * 1000);
        for h in 0..hosts {
            // Host 0 deviates on a tenth of the channels, so findings exist.
            let vals: Vec<(&str, Feature, Subsystem, f64)> = names
                .iter()
                .enumerate()
                .flat_map(|(c, n)| {
                    let shift = if h == 0 && c % 10 == 0 { 50.0 } else { 0.0 };
                    feats
                        .iter()
                        .map(|&f| (n.as_str(), f, Subsystem::Cpu, 10.0 + shift + rng.next()))
                        .collect::<Vec<_>>()
                })
                .collect();
            b.add_host(&format!("node{h}"), vals);
        }
        let g = b.build();
        let t0 = Instant::now();
        let u = t.observe(&g);
        if w >= 30 {
            times.push(t0.elapsed().as_secs_f64() * 1e3);
        }
        findings = u.findings.len();
    }
    (median(times), findings)
}

fn bench_prune() -> (f64, f64, usize) {
    let steps = 36_000;
    let mut rng = Lcg(11);
    let base: Vec<Vec<f64>> = (0..50)
        .map(|_| (0..steps).map(|_| rng.next()).collect())
        .collect();
    // 700 channels over 50 latent signals: clusters of redundant channels, as real
    // telemetry has (per-CPU counters following one load).
    let mut values = Array2::<f64>::zeros((CHANNELS, steps));
    for c in 0..CHANNELS {
        let src = &base[c % 50];
        for t in 0..steps {
            values[[c, t]] = src[t] + 0.3 * rng.next();
        }
    }
    let channels = (0..CHANNELS)
        .map(|c| Channel {
            name: format!("reveal_cpu_perf_event_total{{cpu=\"{c}\"}}"),
            metric: "reveal_cpu_perf_event_total".into(),
            subsystem: Subsystem::Cpu,
            kind: Kind::Dynamic,
            metric_type: MetricType::Gauge,
            resolution: 0.0,
            per_second: false,
            max_rate: None,
        })
        .collect();
    let m = HostMatrix {
        host: "h".into(),
        start_ms: 0,
        step_ms: 100,
        channels,
        values,
        non_finite_samples: 0,
    };
    let t0 = Instant::now();
    let rc = correlate("run", &m, false);
    let corr = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let pts = curves(std::slice::from_ref(&rc), &thresholds());
    let curve = t1.elapsed().as_secs_f64();
    let at = pts
        .iter()
        .find(|p| (p.threshold - 0.5).abs() < 1e-9)
        .unwrap();
    (
        corr,
        curve,
        (at.selected_ratio * CHANNELS as f64).round() as usize,
    )
}

fn main() {
    println!(
        "| cross-host: hosts × 9,100 channel-features | median ms per window | open findings |"
    );
    println!("| --- | --- | --- |");
    for hosts in [2, 9, 32] {
        let (ms, f) = bench_crosshost(hosts);
        println!("| {hosts} | {ms:.2} | {f} |");
    }
    let (corr, curve, kept) = bench_prune();
    println!();
    println!("| prune: 700 channels × 36,000 steps | seconds |");
    println!("| --- | --- |");
    println!("| correlation matrix | {corr:.2} |");
    println!("| figure-4 curves (18 thresholds) | {curve:.2} |");
    println!("| channels selected at 0.5 | {kept} |");
}
