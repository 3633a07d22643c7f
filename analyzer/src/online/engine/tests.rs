use super::verdict::level_moved_up;
use super::*;
use crate::core::matrix::{Channel, Kind, MetricType};
use crate::online::WindowScore;
use ndarray::Array1;
use prometheus_client::registry::Registry;

fn noise(seed: &mut u64) -> f64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    (*seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5
}

/// `secs` seconds of 100 ms samples from `start`: three CPU channels and one storage
/// channel of noise; the storage channel bursts during `burst` (ms range).
fn host(start: i64, secs: i64, burst: std::ops::Range<i64>, seed: &mut u64) -> HostMatrix {
    let names = [
        ("cpu_a", Subsystem::Cpu),
        ("cpu_b", Subsystem::Cpu),
        ("cpu_c", Subsystem::Cpu),
        ("disk_w", Subsystem::Storage),
    ];
    let n = (secs * 10) as usize;
    let mut values = Array2::zeros((names.len(), n));
    for t in 0..n {
        let ts = start + t as i64 * 100;
        for c in 0..names.len() {
            let base = 10.0 + noise(seed);
            values[[c, t]] = if c == 3 && burst.contains(&ts) {
                200.0 + 50.0 * noise(seed)
            } else {
                base
            };
        }
    }
    HostMatrix {
        host: "h:1".into(),
        start_ms: start,
        step_ms: 100,
        channels: names
            .iter()
            .map(|(n, s)| Channel {
                name: n.to_string(),
                metric: n.to_string(),
                subsystem: *s,
                kind: Kind::Dynamic,
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

/// The scored windows among a pass's outcomes.
fn scored(out: &[Outcome]) -> Vec<&WindowScore> {
    out.iter()
        .filter_map(|o| match o {
            Outcome::Scored(w) => Some(w),
            _ => None,
        })
        .collect()
}

/// An engine with `p` that has learned five minutes of quiet history ending at `t0` (learned,
/// not scored), and its self-metrics.
fn learned(p: EngineParams, t0: i64, seed: &mut u64) -> (Engine, SelfMetrics) {
    let metrics = SelfMetrics::new(&mut Registry::default());
    let mut e = Engine::new(p);
    let hist = host(t0 - 303_000, 303, 0..0, seed);
    e.learn(&hist, t0 - 300_000, t0, &[], &metrics);
    (e, metrics)
}

#[test]
fn history_read_again_is_learned_once() {
    // A history read that failed after its first chunks is read again from the start next
    // pass: the windows already learned are not learned twice, the rest are.
    let mut seed = 3;
    let metrics = SelfMetrics::new(&mut Registry::default());
    let t0 = 1_700_000_000_000;
    let hist = host(t0 - 303_000, 303, 0..0, &mut seed);
    let once = {
        let mut e = Engine::new(params());
        e.learn(&hist, t0 - 300_000, t0, &[], &metrics);
        e.status().baseline_windows
    };
    assert_eq!(once, 300);
    let mut e = Engine::new(params());
    e.learn(&hist, t0 - 300_000, t0 - 120_000, &[], &metrics);
    assert_eq!(e.status().baseline_windows, 180);
    e.learn(&hist, t0 - 300_000, t0, &[], &metrics);
    assert_eq!(e.status().baseline_windows, once);
    let ends: Vec<i64> = e.hosts["h:1"].ring.ends().collect();
    assert!(
        ends.windows(2).all(|p| p[1] - p[0] == 1_000),
        "in time order, once each"
    );
}

/// The regime change reported since the last call, which must be the only one.
fn the_one_regime_change(e: &mut Engine) -> crate::core::regime::RegimeChange {
    let mut changes = e.take_regime_changes();
    assert_eq!(
        changes.len(),
        1,
        "{:?}",
        changes.iter().map(|c| &c.summary).collect::<Vec<_>>()
    );
    changes.remove(0).change
}

fn params() -> EngineParams {
    EngineParams {
        window: WindowConfig::default(),
        features: FeatureConfig::WITHOUT_ADF,
        baseline_ms: 600_000,
        refit_ms: 600_000,
        warmup_ms: 300_000,
        seed: 1,
        forget_host_ms: 600_000,
        episodes: crate::config::EpisodeConfig::default(),
        detectors: None,
        calibration: Baseline::Trailing,
        families: Default::default(),
    }
}

#[test]
fn warms_up_then_flags_a_storage_burst_and_attributes_it() {
    let mut seed = 99;
    let t0 = 1_700_000_000_000;
    let (mut e, metrics) = learned(params(), t0, &mut seed);
    assert!(!e.status().warming_up, "{:?}", e.status());

    // Then 20 s live with a 5 s burst starting at t0 + 10 s.
    let live = host(t0 - 3_000, 23, t0 + 10_000..t0 + 15_000, &mut seed);
    let out = e.process(&live, t0, t0 + 20_000, &metrics);
    assert_eq!(out.len(), 20);
    let scored = scored(&out);
    assert_eq!(scored.len(), 20);
    let quiet = scored
        .iter()
        .filter(|w| w.end_ms <= t0 + 10_000 || w.end_ms > t0 + 18_000);
    assert!(
        quiet.clone().all(|w| w.agreement < 2),
        "{:?}",
        quiet
            .map(|w| (w.end_ms - t0, w.agreement))
            .collect::<Vec<_>>()
    );
    let burst: Vec<_> = scored
        .iter()
        .filter(|w| w.end_ms > t0 + 11_000 && w.end_ms <= t0 + 17_000)
        .collect();
    for w in &burst {
        assert!(
            w.agreement >= 2,
            "window ending {} ms after t0: {:?}",
            w.end_ms - t0,
            w.scores
        );
        let top = w
            .subsystems
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        assert_eq!(top.0, "storage", "{:?}", w.subsystems);
        assert!(w.summary.starts_with("disk_w (storage)"), "{}", w.summary);
    }
}

#[test]
fn realign_pads_and_cuts_on_the_grid() {
    let mut seed = 1;
    let m = host(1_000, 2, 0..0, &mut seed);
    let a = realign(&m, 800, 1_500);
    assert_eq!(a.n_steps(), 7);
    assert!(a.values[[0, 0]].is_nan() && a.values[[0, 1]].is_nan());
    assert_eq!(a.values[[0, 2]], m.values[[0, 0]]);
    // Off-grid starts (scrape jitter) snap to the nearest step.
    let a = realign(&m, 1_007, 1_500);
    assert_eq!(a.values[[0, 0]], m.values[[0, 0]]);
}

/// `m` with one more channel, an event count (network retransmissions, say) that is zero
/// except for `rate` events per step during `events` (ms range).
fn with_events(m: HostMatrix, events: std::ops::Range<i64>, rate: f64) -> HostMatrix {
    let n = m.n_steps();
    let row = Array2::from_shape_fn((1, n), |(_, t)| {
        let ts = m.start_ms + t as i64 * m.step_ms;
        if events.contains(&ts) {
            rate
        } else {
            0.0
        }
    });
    let mut channels = m.channels.clone();
    channels.push(Channel {
        name: "retransmits".into(),
        metric: "retransmits".into(),
        subsystem: Subsystem::Network,
        kind: Kind::Event,
        metric_type: MetricType::Counter,
        resolution: 0.0,
        per_second: false,
        max_rate: None,
    });
    HostMatrix {
        values: ndarray::concatenate(ndarray::Axis(0), &[m.values.view(), row.view()]).unwrap(),
        channels,
        ..m
    }
}

#[test]
fn events_on_a_channel_that_was_zero_all_baseline_are_seen() {
    let metrics = SelfMetrics::new(&mut Registry::default());
    let mut e = Engine::new(params());
    let mut seed = 7;
    let t0 = 1_700_000_000_000;
    let hist = with_events(host(t0 - 303_000, 303, 0..0, &mut seed), 0..0, 0.0);
    e.learn(&hist, t0 - 300_000, t0, &[], &metrics);
    // Three retransmissions per step for 5 s; nothing else changes.
    let live = with_events(
        host(t0 - 3_000, 23, 0..0, &mut seed),
        t0 + 10_000..t0 + 15_000,
        3.0,
    );
    let out = e.process(&live, t0, t0 + 20_000, &metrics);
    let scored = scored(&out);
    let during: Vec<_> = scored
        .iter()
        .filter(|w| w.end_ms > t0 + 11_000 && w.end_ms <= t0 + 17_000)
        .collect();
    assert!(!during.is_empty());
    for w in &during {
        assert!(w.agreement >= 2, "{:?}", w.scores);
        assert!(
            w.summary.starts_with("retransmits (network)"),
            "{}",
            w.summary
        );
    }
    let before: Vec<_> = scored.iter().filter(|w| w.end_ms <= t0 + 10_000).collect();
    assert!(
        before.iter().all(|w| w.agreement < 2),
        "{:?}",
        before.iter().map(|w| &w.scores).collect::<Vec<_>>()
    );
}

#[test]
fn a_level_left_behind_by_a_fault_settles_and_the_alert_can_end() {
    let mut seed = 5;
    let t0 = 1_700_000_000_000;
    let (mut e, metrics) = learned(params(), t0, &mut seed);
    // A 20 s fault from t0 + 40 s: the disk bursts and cpu_c drops by 5; when it ends the
    // disk is back, but cpu_c stays 10 above its old level (a dropped page cache, say).
    let (from, to) = (t0 + 40_000, t0 + 60_000);
    let mut live = host(t0 - 3_000, 123, from..to, &mut seed);
    for t in 0..live.n_steps() {
        let ts = live.start_ms + t as i64 * live.step_ms;
        if (from..to).contains(&ts) {
            live.values[[2, t]] -= 5.0;
        } else if ts >= to {
            live.values[[2, t]] += 10.0;
        }
    }
    let out = e.process(&live, t0, t0 + 120_000, &metrics);
    let scored = scored(&out);
    let flagged = |a: i64, b: i64| {
        scored
            .iter()
            .filter(|w| w.end_ms > t0 + a && w.end_ms <= t0 + b && w.agreement >= 2)
            .count()
    };
    // The fault and the first windows of the new level are flagged ...
    assert!(flagged(42_000, 58_000) >= 15, "{}", flagged(42_000, 58_000));
    assert!(flagged(63_000, 70_000) >= 6, "{}", flagged(63_000, 70_000));
    // ... then the level is one settled regime change, the column is left out of scoring
    // while the baseline learns it, and nothing is flagged from 20 s after the fault on, so
    // its alert resolves.
    let c = &the_one_regime_change(&mut e);
    assert!(c.settled);
    assert!(c.start_ms > to && c.detected_ms <= to + 20_000, "{c:?}");
    assert_eq!(flagged(80_000, 120_000), 0);
}

#[test]
fn a_new_regime_is_left_out_until_learned_and_the_baseline_is_not_cut() {
    let mut seed = 11;
    let t0 = 1_700_000_000_000;
    let (mut e, metrics) = learned(params(), t0, &mut seed);
    // A workload starts at t0 + 40 s and stays: cpu_a and cpu_b step up by 10. A storage
    // burst comes 200 s in, while the new level is still being learned.
    let start = t0 + 40_000;
    let burst = t0 + 200_000..t0 + 210_000;
    let mut live = host(t0 - 3_000, 463, burst.clone(), &mut seed);
    for t in 0..live.n_steps() {
        if live.start_ms + t as i64 * live.step_ms >= start {
            live.values[[0, t]] += 10.0;
            live.values[[1, t]] += 10.0;
        }
    }
    let out = e.process(&live, t0, t0 + 460_000, &metrics);
    let scored = scored(&out);
    let c = &the_one_regime_change(&mut e);
    assert!(!c.settled, "a workload's regime: {c:?}");
    let cols: Vec<usize> = c.left_out.iter().map(|l| l.column).collect();
    assert!(!cols.is_empty(), "its shifted columns are left out");
    // The baseline keeps its history: the ring still spans the configured baseline.
    assert!(e.status().baseline_windows >= 590, "{:?}", e.status());
    let agreeing = |a: i64, b: i64| {
        scored
            .iter()
            .filter(|w| w.end_ms > t0 + a && w.end_ms <= t0 + b && w.agreement >= 2)
            .collect::<Vec<_>>()
    };
    // The burst is found against the whole baseline, and named.
    let during = agreeing(burst.start - t0 + 3_000, burst.end - t0);
    assert!(during.len() >= 5, "{}", during.len());
    assert!(
        during.iter().all(|w| w.summary.starts_with("disk_w")),
        "{:?}",
        during[0].summary
    );
    // Between the change and the burst, and once the columns are scored again after the
    // refit that learned their level, no window is flagged for the new level.
    let on_new_level = |a: i64, b: i64| {
        agreeing(a, b)
            .into_iter()
            .filter(|w| w.summary.starts_with("cpu_a") || w.summary.starts_with("cpu_b"))
            .map(|w| ((w.end_ms - t0) / 1000, w.summary.clone()))
            .collect::<Vec<_>>()
    };
    let detected = c.detected_ms - t0;
    assert_eq!(on_new_level(detected + 5_000, burst.start - t0), vec![]);
    let learned = detected + LEFT_OUT_MS + 5_000;
    assert!(
        learned < 440_000,
        "the test runs past the expiry: {learned}"
    );
    assert_eq!(on_new_level(learned, 460_000), vec![]);
}

#[test]
fn the_service_and_analyze_flag_the_same_windows_of_one_recording() {
    // One scoring path (`core::score`): the engine, fitted once on a whole recording the way
    // `analyze` fits it, flags the same windows, by the same detectors, with the same scores.
    let mut seed = 7;
    let t0 = 1_700_000_000_000;
    let m = host(t0, 620, t0 + 400_000..t0 + 410_000, &mut seed);
    let w = WindowConfig::default();
    let offline = crate::online::analyze::analyze_host(
        &m,
        &crate::core::pipeline::AnalyzeParams {
            window: w,
            features: FeatureConfig::WITHOUT_ADF,
            seed: 1,
            regime: None,
            ..Default::default()
        },
    );
    let metrics = SelfMetrics::new(&mut Registry::default());
    let mut e = Engine::new(EngineParams {
        warmup_ms: 1,
        baseline_ms: i64::MAX / 4,
        refit_ms: i64::MAX / 4,
        calibration: Baseline::WholeRun,
        ..params()
    });
    // The windows `analyze` lays: the first ends one window after the start.
    let (from, until) = (t0 + w.window_ms - w.stride_ms, t0 + 620_000);
    e.learn(&m, from, until, &[], &metrics);
    e.refit_all(&metrics);
    let out = e.process(&m, from, until, &metrics);
    assert_eq!(scored(&out).len(), offline.summary.windows_scored);
    type Flag = (i64, Vec<String>, Vec<(String, f64)>);
    let online: Vec<Flag> = scored(&out)
        .iter()
        .filter(|x| x.agreement >= 1)
        .map(|x| {
            let scores = x.scores.iter().map(|(d, s)| (d.to_string(), *s)).collect();
            (x.end_ms, x.detectors.clone(), scores)
        })
        .collect();
    let analyzed: Vec<Flag> = offline
        .flagged
        .iter()
        .map(|f| {
            let mut scores: Vec<(String, f64)> =
                f.scores.iter().map(|(d, s)| (d.clone(), *s)).collect();
            // In the detectors' order, as the service reports them.
            scores.sort_by_key(|(d, _)| ["zscore", "pca", "iforest"].iter().position(|n| n == d));
            (f.end_ms, f.detectors.clone(), scores)
        })
        .collect();
    assert!(
        analyzed
            .iter()
            .any(|f| f.0 > t0 + 400_000 && f.0 <= t0 + 413_000),
        "the burst is flagged"
    );
    assert_eq!(online, analyzed);
    // The same words for the same evidence: every claim the service makes for a flagged
    // window is, word for word, the start of a claim `analyze` makes for it (which adds the
    // value against the baseline).
    let mut compared = 0;
    for x in scored(&out).iter().filter(|x| x.agreement >= 1) {
        let f = offline
            .flagged
            .iter()
            .find(|f| f.end_ms == x.end_ms)
            .unwrap();
        for (_, claim) in &x.claims {
            let said = format!("{claim}. ");
            assert!(
                f.evidence.iter().any(|e| e.claim.starts_with(&said)),
                "the service says {claim:?}; analyze: {:?}",
                f.evidence.iter().map(|e| &e.claim).collect::<Vec<_>>()
            );
            compared += 1;
        }
    }
    assert!(compared > 0);
}

#[test]
fn a_fault_is_not_learned_and_alerts_again_when_it_comes_back() {
    let mut seed = 7;
    let t0 = 1_700_000_000_000;
    // Refits every minute: the second burst is scored by a baseline fitted after the first.
    let p = EngineParams {
        refit_ms: 60_000,
        ..params()
    };
    let (mut e, metrics) = learned(p, t0, &mut seed);
    // The same 20 s storage burst twice, six minutes apart: in the second one's baseline
    // (the last 10 minutes) the first is 20 of 600 windows, more than trimming drops.
    let mut opened = Vec::new();
    let mut excluded_rows = Vec::new();
    let mut peak = [0.0f64; 2];
    for k in 0..2 {
        let from = t0 + k * 360_000;
        let m = host(from - 3_000, 363, from + 30_000..from + 50_000, &mut seed);
        for o in e.process(&m, from, from + 360_000, &metrics) {
            if let Outcome::Scored(w) = o {
                let z = w
                    .scores
                    .iter()
                    .find(|(d, _)| *d == "zscore")
                    .map_or(0.0, |s| s.1);
                peak[k as usize] = peak[k as usize].max(z);
                if let Some(Event::Opened(ep)) = w.event.as_deref() {
                    opened.push((k, (w.end_ms - from) / 1000, ep.subsystem.clone()));
                }
            }
        }
        excluded_rows.push(e.hosts["h:1"].ring.alerted());
    }
    assert_eq!(
        opened,
        [
            (0, 34, "storage".to_string()),
            (1, 34, "storage".to_string())
        ],
        "one alert per burst, each 4 windows after its first window"
    );
    // The return scores as the first did: nothing of the first was learned. (A baseline
    // that held the first burst scores the second at about 1.2 times its threshold.)
    assert!(
        peak[1] >= peak[0] / 2.0,
        "peak z-score / threshold: first {:.1}, second {:.1}",
        peak[0],
        peak[1]
    );
    // The burst's 20 s (and the windows reaching into it) per alert; by the end of the
    // second segment the first burst has left the 10-minute baseline.
    assert!(
        excluded_rows.iter().all(|n| (20..=30).contains(n)),
        "each alert keeps its burst's windows out: {excluded_rows:?} rows"
    );
}

#[test]
fn a_channel_still_settling_after_a_fault_is_left_out_whole() {
    let col = |channel: &str, feature| Col {
        channel: channel.into(),
        feature,
        subsystem: Subsystem::Memory,
        kind: Kind::Dynamic,
        least: 0.0,
    };
    let layout = [
        col("util", Feature::Mean),
        col("util", Feature::LinearTrendSlope),
        col("dirty", Feature::Mean),
        col("dirty", Feature::LinearTrendSlope),
    ];
    // The level of `util` was 10 before the fault and is still at 20: its trend (falling
    // back) is the fault's aftermath too, and `dirty` is scored as usual.
    let away = LeftOut {
        column: 0,
        level: 10.0,
        band: 1.0,
        side: 1.0,
    };
    let mut left_out = vec![(away, 5_000)];
    let out = without_left_out(&[20.0, -0.5, 7.0, 0.1], 1_000, &mut left_out, &layout);
    assert!(out[0].is_nan() && out[1].is_nan(), "{out:?}");
    assert_eq!(&out[2..], &[7.0, 0.1]);
    // Back at its level: the whole channel is scored again, and stays so.
    let out = without_left_out(&[10.5, -0.1, 7.0, 0.1], 2_000, &mut left_out, &layout);
    assert_eq!(out, vec![10.5, -0.1, 7.0, 0.1]);
    assert!(left_out.is_empty());
}

#[test]
fn a_host_that_stops_sending_ends_its_episode_then_is_forgotten() {
    let metrics = SelfMetrics::new(&mut Registry::default());
    let mut e = Engine::new(EngineParams {
        forget_host_ms: 60_000,
        ..params()
    });
    let mut seed = 7;
    let t0 = 1_700_000_000_000;
    e.learn(
        &host(t0 - 303_000, 303, 0..0, &mut seed),
        t0 - 300_000,
        t0,
        &[],
        &metrics,
    );
    // A burst from t0 + 2 s; the host's series stop at t0 + 12 s, mid-burst.
    let live = host(t0 - 3_000, 15, t0 + 2_000..t0 + 20_000, &mut seed);
    let opened = scored(&e.process(&live, t0, t0 + 12_000, &metrics))
        .iter()
        .any(|w| matches!(w.event.as_deref(), Some(Event::Opened(_))));
    assert!(opened, "the burst opened an episode");
    assert_eq!(e.open_episodes().len(), 1);
    assert_eq!(e.sweep(t0 + 12_000).silent, 0, "seen in the latest pass");

    // Silent for fewer strides than close the episode: it stays open.
    let close = i64::from(params().episodes.close_after) * 1_000;
    let s = e.sweep(t0 + 12_000 + close - 1_000);
    assert_eq!((s.silent, s.ended.len()), (1, 0));
    assert_eq!(e.open_episodes().len(), 1);
    // Then it ends, once, at its last flagged window; the host is still known.
    let s = e.sweep(t0 + 12_000 + close);
    let [Event::Closed(ep)] = s.ended.as_slice() else {
        panic!("{:?}", s.ended);
    };
    assert!(
        ep.last_flagged_ms <= t0 + 12_000,
        "{}",
        ep.last_flagged_ms - t0
    );
    assert!(e.open_episodes().is_empty());
    assert!(e.sweep(t0 + 30_000).ended.is_empty(), "ended once");
    assert!(e.status().baseline_windows > 0);
    assert!(e.status().feature_columns > 0);

    // After forget_host_ms without series it is forgotten, and its baseline freed.
    let s = e.sweep(t0 + 12_000 + 60_000);
    assert_eq!(s.forgotten, vec!["h:1".to_string()]);
    assert_eq!((s.silent, e.status().baseline_windows), (0, 0));
    assert_eq!(e.status().feature_columns, 0, "its layout freed too");
    // Back later, it warms up again like a new host.
    let back = host(t0 + 100_000, 10, 0..0, &mut seed);
    let out = e.process(&back, t0 + 103_000, t0 + 110_000, &metrics);
    assert!(out.iter().all(|o| matches!(
        o,
        Outcome::Skipped {
            reason: "warmup",
            ..
        }
    )));
}

#[test]
fn an_episode_restored_for_a_host_that_never_returns_ends() {
    let mut e = Engine::new(params());
    let ep = OpenEpisode {
        id: "gone:1@1000".into(),
        instance: "gone:1".into(),
        start_ms: 1_000,
        last_flagged_ms: 4_000,
        peak_agreement: 2,
        subsystem: "cpu".into(),
        subsystems: vec!["cpu".into()],
        claims: Default::default(),
        hints: Default::default(),
        severity: "warning".into(),
        summary: String::new(),
        description: String::new(),
        detectors: "zscore,pca".into(),
        recurring: None,
    };
    e.restore_episodes(&[ep]);
    let s = e.sweep(10_000);
    assert!(matches!(s.ended.as_slice(), [Event::Closed(c)] if c.instance == "gone:1"));
    assert!(e.open_episodes().is_empty());
}

/// A layout column of a dynamic channel.
fn dynamic_col(channel: &str, feature: Feature, subsystem: Subsystem) -> Col {
    Col {
        channel: channel.into(),
        feature,
        subsystem,
        kind: Kind::Dynamic,
        least: 0.0,
    }
}

#[test]
fn a_hint_follows_the_channels_level_when_the_evidence_is_its_spread() {
    // One flow where there were two: the transmit rate fell and its spread rose. The hint
    // must read the move as a fall (a per-flow limit), not as more traffic.
    let col = |feature| dynamic_col("tx_bytes", feature, Subsystem::Network);
    let layout = vec![col(Feature::Mean), col(Feature::StandardDeviation)];
    let mut seed = 7;
    let x = Array2::from_shape_fn((600, 2), |(_, j)| {
        [100.0, 5.0][j] + [10.0, 1.0][j] * noise(&mut seed)
    });
    let f = crate::core::fit::fit(x.view(), 1, 0).expect("fit");
    let fell = Array1::from(vec![50.0, 20.0]);
    let rose = Array1::from(vec![150.0, 20.0]);
    // The spread is far above its baseline either way: its own sign says "up".
    assert!(!level_moved_up(&layout[1], 15.0, fell.view(), &f, &layout));
    assert!(level_moved_up(&layout[1], 15.0, rose.view(), &f, &layout));
    // A level feature's own sign is the direction.
    assert!(!level_moved_up(&layout[0], -8.0, rose.view(), &f, &layout));
}

#[test]
fn a_regime_report_names_a_level_first() {
    // The spread of memory utilization moved most, its mean less: the report says features
    // "moved to a new level", so it names the mean.
    let col = |feature| dynamic_col("mem_util", feature, Subsystem::Memory);
    let host = HostState {
        layout: vec![col(Feature::MeanAbsChange), col(Feature::Mean)],
        ..HostState::default()
    };
    let shifted = |column, z| crate::core::regime::ShiftedColumn {
        column,
        before: 1.0,
        after: 2.0,
        z,
    };
    let change = RegimeChange {
        start_ms: 0,
        detected_ms: 60_000,
        windows: 60,
        flagged: 0,
        columns: vec![shifted(0, 9.0), shifted(1, 5.0)],
        shifted: 2,
        settled: false,
        left_out: Vec::new(),
    };
    let ev = regime_changed("h:1", &host, change);
    assert!(
        ev.summary.contains("(largest: mem_util__mean,"),
        "{}",
        ev.summary
    );
    assert_eq!(ev.change.columns[0].column, 1);
    assert!(
        ev.description.starts_with("mem_util__mean:"),
        "{}",
        ev.description
    );
}

/// Waits until `e` has no fit running in the background.
fn until_fitted(e: &Engine) {
    let deadline = Instant::now() + std::time::Duration::from_secs(60);
    while e.fits_running() > 0 {
        assert!(Instant::now() < deadline, "a background fit never ended");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn a_background_refit_scores_with_the_old_model_until_the_new_one_lands() {
    let p = EngineParams {
        refit_ms: 60_000,
        ..params()
    };
    let t0 = 1_700_000_000_000;
    let (mut inline, metrics) = learned(p.clone(), t0, &mut 21);
    let (mut background, _) = learned(p, t0, &mut 21);
    background.fit_in_background();
    // Two minutes live, a pass a second, with a storage burst at 80–90 s; refits are due at
    // the windows ending at 60 s and 120 s.
    let live = host(t0 - 3_000, 123, t0 + 80_000..t0 + 90_000, &mut 22);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for k in 0..120 {
        let (after, until) = (t0 + k * 1_000, t0 + (k + 1) * 1_000);
        a.extend(inline.process(&live, after, until, &metrics));
        b.extend(background.process(&live, after, until, &metrics));
        // The fit ends before the next pass, so the new model is in place one window later
        // than inline, not at a time that depends on this machine's speed.
        until_fitted(&background);
    }
    let (a, b) = (scored(&a), scored(&b));
    assert_eq!(a.len(), 120);
    assert_eq!(b.len(), 120);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.end_ms, y.end_ms);
        if (x.end_ms - t0) % 60_000 == 0 {
            // Scored all the same, against the model of before.
            assert_ne!(x.scores, y.scores, "the old model scored like the new one");
        } else {
            assert_eq!(
                x.scores,
                y.scores,
                "window ending {} ms after t0",
                x.end_ms - t0
            );
        }
    }
    let opened = |w: &[&WindowScore]| {
        w.iter()
            .filter(|w| matches!(w.event.as_deref(), Some(Event::Opened(_))))
            .map(|w| w.end_ms - t0)
            .collect::<Vec<_>>()
    };
    assert_eq!(opened(&a), opened(&b));
    assert_eq!(opened(&a).len(), 1, "{:?}", opened(&a));
}

#[test]
fn a_refit_asked_for_while_one_runs_in_the_background_follows_it() {
    let t0 = 1_700_000_000_000;
    let (mut e, metrics) = learned(params(), t0, &mut 31);
    e.fit_in_background();
    let live = host(t0 - 3_000, 13, 0..0, &mut 32);
    // A left-out column's time runs out: the next window starts a refit in the background.
    force_refit(e.hosts.get_mut("h:1").unwrap());
    e.process(&live, t0, t0 + 1_000, &metrics);
    assert!(e.hosts["h:1"].pending.is_some());
    // Another runs out while it fits: the fit that lands is followed by one more.
    force_refit(e.hosts.get_mut("h:1").unwrap());
    until_fitted(&e);
    e.process(&live, t0 + 1_000, t0 + 2_000, &metrics);
    assert!(e.hosts["h:1"].pending.is_some(), "no second fit");
    until_fitted(&e);
    e.process(&live, t0 + 2_000, t0 + 3_000, &metrics);
    let h = &e.hosts["h:1"];
    assert!(h.pending.is_none());
    assert_eq!(h.fitted.as_ref().map(|f| f.at_ms), Some(t0 + 2_000));
}
