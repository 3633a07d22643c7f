use ndarray::Array2;

use super::*;
use crate::core::families::{fold, FamilyParams};
use crate::core::matrix::{Channel, Kind, MetricType};

fn ch(name: &str, subsystem: Subsystem) -> Channel {
    Channel {
        name: name.to_string(),
        metric: parse_channel(name).0.to_string(),
        subsystem,
        kind: Kind::Dynamic,
        metric_type: MetricType::Gauge,
        resolution: 1.0,
        per_second: false,
        max_rate: None,
    }
}

/// Eight GPUs' utilization and power and eight disks' busy share, `n` steps of 100 ms from
/// `start_ms`; `up(channel, step)` says whether the channel has a sample then.
fn host(start_ms: i64, n: usize, up: impl Fn(&str, usize) -> bool) -> HostMatrix {
    let mut channels = Vec::new();
    for g in 0..8 {
        for metric in ["reveal_gpu_utilization_ratio", "reveal_gpu_power_watts"] {
            channels.push(ch(&format!("{metric}{{gpu=\"{g}\"}}"), Subsystem::Gpu));
        }
    }
    for d in 0..8 {
        let name = format!("reveal_storage_io_time_seconds_total{{device=\"nvme{d}n1\"}}");
        channels.push(ch(&name, Subsystem::Storage));
    }
    let mut values = Array2::from_elem((channels.len(), n), f64::NAN);
    for (r, c) in channels.iter().enumerate() {
        for t in 0..n {
            if up(&c.name, t) {
                values[[r, t]] = 0.5;
            }
        }
    }
    HostMatrix {
        host: "h".into(),
        start_ms,
        step_ms: 100,
        channels,
        values,
        non_finite_samples: 0,
    }
}

fn observe(p: &mut Presence, m: &HostMatrix, forget_before_ms: i64) {
    let folded = fold(m, &FamilyParams::default());
    p.observe(&folded.fixed, forget_before_ms);
}

#[test]
fn a_gpu_that_stops_while_its_siblings_go_on_is_missing_once_a_window_has_passed() {
    let mut p = Presence::default();
    // 30 s of every GPU, then 10 s with GPU 7 gone from 31.0 s (its last sample at 30.9 s).
    observe(&mut p, &host(0, 300, |_, _| true), 0);
    let gone = |c: &str, t: usize| !(c.contains("gpu=\"7\"") && t >= 10);
    observe(&mut p, &host(30_000, 100, gone), 0);
    let missing = p.missing(39_900, 3000);
    assert_eq!(missing.len(), 1, "{missing:?}");
    let m = &missing[0];
    assert_eq!(m.device, "gpu 7");
    assert_eq!(m.subsystem, Subsystem::Gpu);
    assert_eq!(m.last_ms, 30_900);
    assert_eq!(
        m.metrics,
        ["reveal_gpu_power_watts", "reveal_gpu_utilization_ratio"],
        "one finding for the device, every metric it stopped"
    );
    assert_eq!((m.reporting, m.known), (7, 8));
    assert_eq!(
        m.summary(),
        "gpu 7 not reporting since 00:00:30.9 UTC: 7 of 8 devices report"
    );
    // Not before it has been silent for the whole span.
    assert!(p.missing(33_800, 3000).is_empty());
    assert_eq!(p.missing(33_900, 3000).len(), 1);
}

#[test]
fn a_family_silent_as_a_whole_names_nobody() {
    let mut p = Presence::default();
    observe(&mut p, &host(0, 300, |_, _| true), 0);
    // The exporter restarts: nothing from any GPU for 10 s, the disks' series come later.
    assert!(p.missing(40_000, 3000).is_empty());
}

#[test]
fn disks_come_and_go_and_are_not_tracked() {
    let mut p = Presence::default();
    observe(&mut p, &host(0, 300, |_, _| true), 0);
    observe(&mut p, &host(30_000, 100, |c, _| !c.contains("nvme3n1")), 0);
    assert!(p.missing(39_900, 3000).is_empty());
}

#[test]
fn a_device_that_reports_again_is_no_longer_missing() {
    let mut p = Presence::default();
    observe(&mut p, &host(0, 300, |_, _| true), 0);
    observe(
        &mut p,
        &host(30_000, 100, |c, _| !c.contains("gpu=\"2\"")),
        0,
    );
    assert_eq!(p.missing(39_900, 3000).len(), 1);
    observe(&mut p, &host(40_000, 10, |_, _| true), 0);
    assert!(p.missing(40_900, 3000).is_empty());
}

#[test]
fn a_device_gone_longer_than_the_baseline_is_forgotten() {
    let mut p = Presence::default();
    observe(&mut p, &host(0, 300, |_, _| true), 0);
    let no_gpu_5 = |c: &str, _: usize| !c.contains("gpu=\"5\"");
    observe(&mut p, &host(30_000, 100, no_gpu_5), 0);
    assert_eq!(p.missing(39_900, 3000).len(), 1);
    // A pass whose baseline starts after GPU 5's last sample: the host without it is normal.
    observe(&mut p, &host(40_000, 100, no_gpu_5), 31_000);
    assert!(p.missing(49_900, 3000).is_empty());
}

#[test]
fn two_gpus_gone_are_two_findings() {
    let mut p = Presence::default();
    observe(&mut p, &host(0, 300, |_, _| true), 0);
    let two = |c: &str, _: usize| !(c.contains("gpu=\"1\"") || c.contains("gpu=\"6\""));
    observe(&mut p, &host(30_000, 100, two), 0);
    let devices: Vec<String> = p
        .missing(39_900, 3000)
        .into_iter()
        .map(|m| format!("{} ({} of {})", m.device, m.reporting, m.known))
        .collect();
    assert_eq!(devices, ["gpu 1 (6 of 8)", "gpu 6 (6 of 8)"]);
}
