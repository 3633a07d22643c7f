use prometheus_client::registry::Registry;

use super::*;
use crate::core::features::FeatureConfig;
use crate::core::fit::Baseline;
use crate::core::matrix::{Channel, HostMatrix, Kind, MetricType};
use crate::core::window::WindowConfig;
use crate::online::engine::{Engine, EngineParams};
use crate::outputs::metrics::SelfMetrics;

fn noise(seed: &mut u64) -> f64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    (*seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5
}

const HP: &str = "reveal_memory_hugepages_total";

/// `secs` s of 100 ms samples of one host from `start`: two noisy CPU channels, one disk
/// channel (stepping from 10 to 60 at `step_at` ms, if given) and the static huge page total.
fn host(
    name: &str,
    start: i64,
    secs: i64,
    pages: f64,
    step_at: Option<i64>,
    seed: &mut u64,
) -> HostMatrix {
    let chans = [
        ("reveal_cpu_a_ratio", Subsystem::Cpu, Kind::Dynamic),
        ("reveal_cpu_b_ratio", Subsystem::Cpu, Kind::Dynamic),
        ("reveal_storage_w_bytes", Subsystem::Storage, Kind::Dynamic),
        (HP, Subsystem::Memory, Kind::Static),
    ];
    let n = (secs * 10) as usize;
    let values = ndarray::Array2::from_shape_fn((chans.len(), n), |(c, t)| {
        let ts = start + t as i64 * 100;
        match c {
            3 => pages,
            2 if step_at.is_some_and(|s| ts >= s) => 60.0 + noise(seed),
            _ => 10.0 + noise(seed),
        }
    });
    HostMatrix {
        host: name.into(),
        start_ms: start,
        step_ms: 100,
        channels: chans
            .iter()
            .map(|(n, s, k)| Channel {
                name: n.to_string(),
                metric: n.to_string(),
                subsystem: *s,
                kind: *k,
                metric_type: MetricType::Gauge,
                resolution: 0.0,
                per_second: false,
                max_rate: None,
            })
            .collect(),
        values,
        non_finite_samples: 0,
    }
}

fn params() -> EngineParams {
    EngineParams {
        window: WindowConfig::default(),
        features: FeatureConfig::WITHOUT_ADF,
        baseline_ms: 600_000,
        refit_ms: 600_000,
        warmup_ms: 120_000,
        seed: 1,
        forget_host_ms: 600_000,
        episodes: crate::config::EpisodeConfig::default(),
        detectors: None,
        calibration: Baseline::Trailing,
        families: Default::default(),
    }
}

const T0: i64 = 1_700_000_000_000;

#[test]
fn the_host_with_other_hugepages_becomes_a_deviation_alert_and_resolves() {
    let metrics = SelfMetrics::new(&mut Registry::default());
    let mut e = Engine::new(params());
    let mut seed = 5;
    let pages = |h: usize| if h == 2 { 512.0 } else { 0.0 };
    // 40 s of four hosts, one pass per second as the service runs them.
    let mut last = GroupOutput::default();
    let mut opened_at = None;
    for s in 0..40 {
        let (after, until) = (T0 + s * 1000, T0 + (s + 1) * 1000);
        for h in 0..4 {
            let m = host(
                &format!("n{h}"),
                after - 3_000,
                4,
                pages(h),
                None,
                &mut seed,
            );
            e.process(&m, after, until, &metrics);
        }
        last = e.cross_host();
        if opened_at.is_none() && !last.open.is_empty() {
            opened_at = Some(s);
        }
        assert!(last.resolved.is_empty());
    }
    // Persistent means 24 of 30 windows: not before the 24th.
    assert!(opened_at.is_some_and(|s| s >= 23), "{opened_at:?}");
    assert_eq!(last.open.len(), 1, "{:#?}", last.open);
    let f = &last.open[0];
    assert_eq!((f.host.as_str(), f.subsystem), ("n2", Subsystem::Memory));
    assert!(f.evidence[0].channel == HP, "{:?}", f.evidence[0]);
    // Every host and subsystem gets a score; only n2's memory is above the threshold.
    for (h, sub, end, v) in &last.scores {
        assert_eq!(*end, T0 + 40_000);
        let odd = h == "n2" && *sub == Subsystem::Memory;
        assert_eq!(*v > 3.5, odd, "{h} {sub:?} {v}");
    }
    let a = deviation_finding(f);
    assert_eq!(
        (
            a.alertname,
            a.instance.as_str(),
            a.subsystem.as_str(),
            a.severity
        ),
        ("RevealHostDeviation", "n2", "memory", "warning")
    );
    assert_eq!(a.summary, f.summary);
    assert!(a.description.contains("512"), "{}", a.description);
    assert_eq!(
        deviation_key("n2", Subsystem::Memory),
        "deviation/n2/memory"
    );

    // The pages are released on n2: the finding resolves once it is no longer persistent.
    let mut resolved = None;
    for s in 40..60 {
        let (after, until) = (T0 + s * 1000, T0 + (s + 1) * 1000);
        for h in 0..4 {
            let m = host(&format!("n{h}"), after - 3_000, 4, 0.0, None, &mut seed);
            e.process(&m, after, until, &metrics);
        }
        let out = e.cross_host();
        if let Some(r) = out.resolved.first() {
            assert!(out.open.is_empty());
            resolved = Some(r.clone());
            break;
        }
    }
    let (h, sub, end) = resolved.expect("the deviation resolves");
    assert_eq!((h.as_str(), sub), ("n2", Subsystem::Memory));
    assert!(end > T0 + 40_000);
}

#[test]
fn one_host_compares_nothing() {
    let mut g = GroupStage::new(CrossHostParams::default()).unwrap();
    let cols: Arc<[FullCol]> = vec![FullCol {
        channel: HP.into(),
        feature: Feature::Mean,
        subsystem: Subsystem::Memory,
    }]
    .into();
    let row = FullRow {
        host: "a".into(),
        end_ms: 1000,
        columns: cols,
        values: vec![1.0],
    };
    assert_eq!(g.observe(&[row.clone(), row]), GroupOutput::default());
}

#[test]
fn a_workload_step_is_one_regime_change_and_the_baseline_follows_it() {
    let metrics = SelfMetrics::new(&mut Registry::default());
    let mut e = Engine::new(params());
    let mut seed = 9;
    // Two minutes of history, then live passes; the disk channel steps up at +20 s.
    let hist = host("h", T0 - 123_000, 123, 0.0, None, &mut seed);
    e.learn(&hist, T0 - 120_000, T0, &[], &metrics);
    e.refit_all(&metrics);
    let step = T0 + 20_000;
    let mut changes = Vec::new();
    let mut windows = Vec::new();
    for s in 0..160 {
        let (after, until) = (T0 + s * 1000, T0 + (s + 1) * 1000);
        let m = host("h", after - 3_000, 4, 0.0, Some(step), &mut seed);
        for o in e.process(&m, after, until, &metrics) {
            if let crate::online::Outcome::Scored(w) = o {
                windows.push((w.end_ms, w.agreement >= 2));
            }
        }
        changes.extend(e.take_regime_changes());
    }
    assert_eq!(changes.len(), 1, "{changes:#?}");
    let c = &changes[0];
    assert!(
        (c.change.start_ms - step).abs() <= 3_000,
        "{}",
        c.change.start_ms - step
    );
    assert_eq!(c.subsystem, Subsystem::Storage);
    assert!(
        c.summary.contains("reveal_storage_w_bytes"),
        "{}",
        c.summary
    );
    // Against the old baseline every window of the new regime was flagged (the storm)...
    let mut storm = windows
        .iter()
        .filter(|w| w.0 > step + 3_000 && w.0 <= c.change.detected_ms);
    assert!(storm.all(|w| w.1), "{windows:?}");
    // ...refitted on the new regime, the busier disk is normal: what is left is the odd
    // window a baseline of a few dozen windows flags, never two in a row (no episode opens).
    let after: Vec<bool> = windows
        .iter()
        .filter(|w| w.0 > c.change.detected_ms)
        .map(|w| w.1)
        .collect();
    assert!(after.len() >= 70, "{}", after.len());
    assert!(!after.windows(2).any(|p| p[0] && p[1]), "{after:?}");
    let late = after.iter().filter(|f| **f).count();
    assert!(
        late * 8 <= after.len(),
        "{late} of {} flagged after the refit",
        after.len()
    );
    let (f, ends) = regime_finding(c);
    assert_eq!(
        (f.alertname, f.severity, f.subsystem.as_str()),
        ("RevealRegimeChange", "info", "storage")
    );
    assert_eq!(f.summary, c.summary);
    assert_eq!(
        ends,
        UNIX_EPOCH + Duration::from_millis((c.change.detected_ms + REGIME_ALERT_HOLD_MS) as u64)
    );
    assert_eq!(regime_key(c), format!("regime/h/{}", c.change.start_ms));
}
