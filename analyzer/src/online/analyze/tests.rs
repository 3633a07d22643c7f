use ndarray::Array2;

use super::*;
use crate::core::features::FeatureConfig;
use crate::core::matrix::{Channel, Kind, MetricType};

/// Deterministic noise without an RNG crate.
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

fn channel(i: usize, kind: Kind) -> Channel {
    let sub = [
        Subsystem::Cpu,
        Subsystem::Memory,
        Subsystem::Network,
        Subsystem::Storage,
    ][i % 4];
    let name = format!("reveal_{}_metric_{i}", sub.as_str());
    Channel {
        name: name.clone(),
        metric: name,
        subsystem: sub,
        kind,
        metric_type: MetricType::Gauge,
        resolution: 0.0,
        per_second: false,
        max_rate: None,
    }
}

/// `channels` noisy channels over `steps` 100 ms steps, starting at a fixed epoch time.
fn host(channels: usize, steps: usize, seed: u64) -> HostMatrix {
    let mut rng = Lcg(seed);
    let values = Array2::from_shape_fn((channels, steps), |_| 10.0 + rng.next());
    HostMatrix {
        host: "h1".into(),
        start_ms: 1_700_000_000_000,
        step_ms: 100,
        channels: (0..channels).map(|i| channel(i, Kind::Dynamic)).collect(),
        values,
        non_finite_samples: 0,
    }
}

fn fast() -> AnalyzeParams {
    AnalyzeParams {
        features: FeatureConfig::WITHOUT_ADF,
        ..AnalyzeParams::default()
    }
}

fn assert_no_nan(a: &HostAnalysis) {
    for w in &a.flagged {
        for e in &w.evidence {
            assert!(
                e.value.is_finite() && e.z.is_finite() && e.baseline.is_finite(),
                "{e:?}"
            );
            assert!(
                !e.claim.contains("NaN") && !e.claim.contains("n/a"),
                "{}",
                e.claim
            );
        }
        assert!(w.scores.values().all(|s| s.is_finite()));
    }
}

#[test]
fn an_injected_burst_is_flagged_attributed_and_one_episode() {
    let mut m = host(12, 4000, 1);
    // Channel 2 (network) jumps and oscillates for 2 s starting at step 2000 (200 s).
    for t in 2000..2020 {
        m.values[[2, t]] = 30.0 + if t % 2 == 0 { 8.0 } else { -8.0 };
    }
    let a = analyze_host(&m, &fast());
    assert!(a.notes.is_empty(), "{:?}", a.notes);
    assert_eq!(a.summary.windows_total, 398);
    let hit: Vec<&FlaggedWindow> = a
        .flagged
        .iter()
        .filter(|w| (w.start_ms..w.end_ms).contains(&(m.start_ms + 200_500)))
        .collect();
    assert!(!hit.is_empty(), "the burst's windows are flagged");
    let top = hit.iter().max_by_key(|w| w.agreement).unwrap();
    assert!(top.agreement >= 2, "{top:?}");
    assert_eq!(top.evidence[0].channel, "reveal_network_metric_2");
    assert_eq!(top.subsystems[0].0, Subsystem::Network);
    let ep = a
        .episodes
        .iter()
        .find(|e| e.first_window <= top.window && top.window <= e.last_window)
        .expect("an episode holds the burst");
    assert_eq!(ep.top_evidence[0].channel, "reveal_network_metric_2");
    assert!(ep.windows >= 3, "overlapping windows merge: {ep:?}");
    assert_no_nan(&a);
}

#[test]
fn bad_input_gives_notes_not_panics_or_nan_findings() {
    let mut m = host(8, 1500, 2);
    m.channels[7].kind = Kind::Static;
    for t in 0..1500 {
        m.values[[0, t]] = 5.0; // constant
        if t > 700 {
            m.values[[1, t]] = f64::NAN; // vanishes
        }
        if t < 300 {
            m.values[[3, t]] = f64::NAN; // appears late
        }
        if (900..960).contains(&t) {
            for c in 0..8 {
                m.values[[c, t]] = f64::NAN; // outage of 6 s
            }
        }
    }
    m.values[[4, 100]] = f64::INFINITY;
    let a = analyze_host(&m, &fast());
    assert!(a.summary.skipped_no_data + a.summary.skipped_too_few_samples >= 4);
    assert_eq!(a.summary.static_channels, 1);
    assert!(
        a.notes
            .iter()
            .any(|n| n.contains("constant or mostly missing")),
        "{:?}",
        a.notes
    );
    assert_no_nan(&a);

    let short = host(3, 25, 3);
    let a = analyze_host(&short, &fast());
    assert!(
        a.notes[0].contains("shorter than one window"),
        "{:?}",
        a.notes
    );
    let mut sparse = host(3, 3000, 6);
    for t in 0..3000 {
        if t % 10 != 0 {
            sparse.values.column_mut(t).fill(f64::NAN); // one sample per second
        }
    }
    let a = analyze_host(&sparse, &fast());
    assert!(
        a.notes.iter().any(|n| n.contains("every ~1000 ms")),
        "{:?}",
        a.notes
    );
    let few = host(3, 200, 3);
    let a = analyze_host(&few, &fast());
    assert!(
        a.notes[0].contains("needed to fit a baseline"),
        "{:?}",
        a.notes
    );
    let mut all_static = host(2, 500, 4);
    all_static
        .channels
        .iter_mut()
        .for_each(|c| c.kind = Kind::Static);
    assert!(analyze_host(&all_static, &fast()).notes[0].contains("nothing to detect"));
    let mut all_nan = host(2, 500, 5);
    all_nan.values.fill(f64::NAN);
    let a = analyze_host(&all_nan, &fast());
    assert!(a.flagged.is_empty() && !a.notes.is_empty());
}
