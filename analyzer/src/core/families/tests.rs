use super::*;
use crate::core::matrix::Subsystem;

fn ch(name: &str, kind: Kind, metric_type: MetricType) -> Channel {
    Channel {
        name: name.to_string(),
        metric: parse_channel(name).0.to_string(),
        subsystem: Subsystem::Storage,
        kind,
        metric_type,
        resolution: 1.0,
        per_second: false,
        max_rate: None,
    }
}

/// Eight disks' busy share (a rate's gauge) and one host-wide channel, `n` steps of 100 ms.
fn disks(n: usize, busy: impl Fn(usize, usize) -> f64) -> HostMatrix {
    let mut channels = vec![ch(
        "reveal_memory_dirty_bytes",
        Kind::Dynamic,
        MetricType::Gauge,
    )];
    for d in 0..8 {
        channels.push(ch(
            &format!("reveal_storage_io_time_seconds_total{{device=\"nvme{d}n1\"}}"),
            Kind::Dynamic,
            MetricType::Gauge,
        ));
    }
    let mut values = Array2::from_elem((channels.len(), n), 0.0);
    for t in 0..n {
        values[[0, t]] = 1e6;
        for d in 0..8 {
            values[[1 + d, t]] = busy(d, t);
        }
    }
    HostMatrix {
        host: "h".into(),
        start_ms: 0,
        step_ms: 100,
        channels,
        values,
        non_finite_samples: 0,
    }
}

#[test]
fn a_family_folds_into_a_fixed_set_of_channels() {
    let m = disks(50, |d, _| 0.02 + d as f64 * 0.001);
    let f = fold(&m, &FamilyParams::default());
    let names: Vec<&str> = f.matrix.channels.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "reveal_memory_dirty_bytes",
            "reveal_storage_io_time_seconds_total{device=\"nvme*n*\",stat=\"mean\"}",
            "reveal_storage_io_time_seconds_total{device=\"nvme*n*\",stat=\"max\"}",
            "reveal_storage_io_time_seconds_total{device=\"nvme*n*\",stat=\"min\"}",
            "reveal_storage_io_time_seconds_total{device=\"nvme*n*\",stat=\"spread\"}",
            "reveal_storage_io_time_seconds_total{device=\"nvme*n*\",stat=\"devices\"}",
        ]
    );
    let row = |i: usize| f.matrix.values.row(i).to_vec();
    assert!((row(1)[0] - 0.0235).abs() < 1e-12);
    assert!((row(2)[0] - 0.027).abs() < 1e-12);
    assert!((row(3)[0] - 0.02).abs() < 1e-12);
    // Median of 0.020…0.027 is 0.0235: the farthest device is 0.0035 from it.
    assert!((row(4)[0] - 0.0035).abs() < 1e-12);
    assert_eq!(row(5)[0], 8.0);
    assert_eq!(f.members.n_channels(), 8);
    assert_eq!(f.families.len(), 1);
    // The mean's least change is one unit of one device.
    assert!((f.matrix.channels[1].resolution - 1.0 / 8.0).abs() < 1e-12);
}

/// Every 20 steps all disks read together; from step 60 nvme3n1 is busy alone.
fn shard_reads_then_one_busy(d: usize, t: usize) -> f64 {
    if t >= 60 && d == 3 {
        0.92
    } else if t % 20 < 5 {
        0.6
    } else {
        0.02
    }
}

#[test]
fn devices_moving_together_have_no_spread_and_one_apart_is_named() {
    let m = disks(100, shard_reads_then_one_busy);
    let f = fold(&m, &FamilyParams::default());
    let spread = f
        .matrix
        .channels
        .iter()
        .position(|c| c.name.contains("spread"))
        .unwrap();
    assert_eq!(f.matrix.values[[spread, 2]], 0.0);
    assert_eq!(f.matrix.values[[spread, 41]], 0.0);
    assert!(f.matrix.values[[spread, 70]] > 0.8);
    let name = &f.matrix.channels[spread].name;
    let v = f.siblings(name, 8500, 9900, true).unwrap();
    assert_eq!(v.device, "nvme3n1");
    assert_eq!(
        v.channel,
        "reveal_storage_io_time_seconds_total{device=\"nvme3n1\"}"
    );
    assert_eq!(v.siblings, 7);
    assert_eq!(
        v.sentence("reveal_storage_io_time_seconds_total", true),
        "nvme3n1 at 92.0 % while its 7 siblings are at 2.00 %"
    );
    // Before the fault nobody stands apart from the routine read: the busiest is some disk,
    // at its siblings' level.
    let before = f.siblings(name, 0, 400, true).unwrap();
    assert!((before.value - before.siblings_median).abs() < 1e-12);
}

#[test]
fn an_array_over_the_disks_is_not_their_sibling() {
    // The disks of the test above, and the RAID array over them, idle: with the array among
    // them the routine read set the family's spread at 0.6; apart, it is the disks' own.
    let mut m = disks(100, shard_reads_then_one_busy);
    m.channels.push(ch(
        "reveal_storage_io_time_seconds_total{device=\"md0\"}",
        Kind::Dynamic,
        MetricType::Gauge,
    ));
    m.values
        .push_row(ndarray::ArrayView1::from(&vec![0.0; 100]))
        .unwrap();
    let f = fold(&m, &FamilyParams::default());
    let names: Vec<&str> = f.matrix.channels.iter().map(|c| c.name.as_str()).collect();
    assert!(names.contains(&"reveal_storage_io_time_seconds_total{device=\"md0\"}"));
    let spread = names
        .iter()
        .position(|n| {
            *n == "reveal_storage_io_time_seconds_total{device=\"nvme*n*\",stat=\"spread\"}"
        })
        .unwrap();
    assert_eq!(
        f.matrix.values[[spread, 2]],
        0.0,
        "the routine read: no spread"
    );
    assert!(f.matrix.values[[spread, 70]] > 0.8);
    let v = f.siblings(names[spread], 8500, 9900, true).unwrap();
    assert_eq!((v.device.as_str(), v.siblings), ("nvme3n1", 7));
    assert_eq!(f.families.len(), 1);
    assert!(
        names.iter().all(|n| !n.contains("device=\"*\"")),
        "{names:?}"
    );
}

#[test]
fn small_families_static_channels_and_plain_channels_stay() {
    let mut m = disks(10, |_, _| 0.5);
    m.channels.truncate(4); // dirty bytes and three disks
    m.values = m.values.select(ndarray::Axis(0), &[0, 1, 2, 3]);
    m.channels.push(ch(
        "reveal_gpu_temperature_celsius{gpu=\"0\"}",
        Kind::Static,
        MetricType::Gauge,
    ));
    m.values
        .push_row(ndarray::ArrayView1::from(&[40.0; 10]))
        .unwrap();
    let f = fold(&m, &FamilyParams::default());
    assert_eq!(f.matrix.channels, m.channels);
    assert!(f.families.is_empty());
    // With a least size of 2, the three disks fold.
    let f = fold(
        &m,
        &FamilyParams {
            min_devices: 2,
            ..FamilyParams::default()
        },
    );
    assert_eq!(f.families.len(), 1);
    assert!(f
        .matrix
        .channels
        .iter()
        .any(|c| c.name.contains("gpu=\"0\"")));
}

#[test]
fn a_vanishing_device_is_counted_and_gaps_are_skipped() {
    let mut m = disks(30, |d, _| d as f64);
    for t in 10..30 {
        m.values[[8, t]] = f64::NAN; // nvme7n1 falls off
    }
    let f = fold(&m, &FamilyParams::default());
    let devices = f
        .matrix
        .channels
        .iter()
        .position(|c| c.name.contains("devices"))
        .unwrap();
    let max = f
        .matrix
        .channels
        .iter()
        .position(|c| c.name.contains("\"max\""))
        .unwrap();
    assert_eq!(f.matrix.values[[devices, 5]], 8.0);
    assert_eq!(f.matrix.values[[devices, 20]], 7.0);
    assert_eq!(f.matrix.values[[max, 5]], 7.0);
    assert_eq!(f.matrix.values[[max, 20]], 6.0);
    // No finite member at a step: every stat is a gap there, not a zero.
    let mut m = disks(5, |_, _| 1.0);
    for d in 1..9 {
        m.values[[d, 2]] = f64::NAN;
    }
    let f = fold(&m, &FamilyParams::default());
    assert!(f.matrix.values[[max, 2]].is_nan());
    assert!(f.matrix.values[[devices, 2]].is_nan());
}

#[test]
fn event_families_are_summed_and_gpus_named_by_index() {
    let mut channels = Vec::new();
    for g in 0..8 {
        channels.push(ch(
            &format!("reveal_gpu_xid_errors_total{{gpu=\"{g}\",model=\"A100\",uuid=\"GPU-{g}\"}}"),
            Kind::Event,
            MetricType::Counter,
        ));
    }
    let mut values = Array2::from_elem((8, 20), 0.0);
    values[[5, 12]] = 3.0;
    let m = HostMatrix {
        host: "h".into(),
        start_ms: 0,
        step_ms: 100,
        channels,
        values,
        non_finite_samples: 0,
    };
    let f = fold(&m, &FamilyParams::default());
    let names: Vec<&str> = f.matrix.channels.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names[0],
        "reveal_gpu_xid_errors_total{gpu=\"*\",model=\"A100\",stat=\"sum\"}"
    );
    assert_eq!(f.matrix.values[[0, 12]], 3.0);
    assert_eq!(f.matrix.values[[1, 12]], 3.0);
    let v = f.siblings(names[1], 1000, 1900, true).unwrap();
    assert_eq!(v.device, "gpu 5");
    // A counter's increases per 100 ms step are 30 a second over this window's 10 steps... 3
    // events in one step of ten: 3 per second on average.
    assert!((v.value - 3.0).abs() < 1e-9, "{v:?}");
    assert_eq!(
        v.sentence("reveal_gpu_xid_errors_total", false),
        "gpu 5 at 3.00/s while its 7 siblings are at 0/s"
    );
}

#[test]
fn units_are_read_from_the_name() {
    assert_eq!(
        format_value("reveal_gpu_clock_hertz", 1.41e9, false),
        "1.41 GHz"
    );
    assert_eq!(
        format_value("reveal_storage_read_bytes_total", 2.5e6, true),
        "2.50 MB/s"
    );
    assert_eq!(
        format_value("reveal_gpu_utilization_ratio", 0.5, false),
        "50.0 %"
    );
    assert_eq!(
        format_value("reveal_gpu_power_watts", 312.4, false),
        "312 W"
    );
    assert_eq!(
        format_value("reveal_cpu_interrupts_total", 1234.0, true),
        "1234/s"
    );
}

#[test]
fn family_channels_parse_back() {
    assert_eq!(
        family_stat("reveal_x_total{device=\"*\",port=\"1\",stat=\"max\"}"),
        Some((
            "reveal_x_total{device=\"*\",port=\"1\"}".to_string(),
            Stat::Max
        ))
    );
    assert_eq!(family_stat("reveal_x_total{device=\"sda\"}"), None);
    assert_eq!(family_stat("reveal_x_total{device=\"*\"}"), None);
}

#[test]
fn a_move_of_every_device_is_the_familys_and_names_none() {
    // Every disk from 2 % to 90 % busy from step 50.
    let m = disks(100, |d, t| {
        if t >= 50 {
            0.9 + d as f64 * 0.002
        } else {
            0.02
        }
    });
    let f = fold(&m, &FamilyParams::default());
    let mean = f
        .matrix
        .channels
        .iter()
        .find(|c| c.name.contains("\"mean\""))
        .unwrap();
    let v = f.siblings(&mean.name, 6000, 9900, true).unwrap();
    assert_eq!(v.device, "all 8 devices");
    assert_eq!(v.channel, "reveal_storage_io_time_seconds_total");
    assert_eq!(
        v.sentence("reveal_storage_io_time_seconds_total", true),
        "all 8 devices at 90.7 % on average"
    );
    // One disk alone moves the mean too, and is named.
    let m = disks(100, |d, t| if t >= 50 && d == 6 { 0.9 } else { 0.02 });
    let f = fold(&m, &FamilyParams::default());
    let v = f.siblings(&mean.name, 6000, 9900, true).unwrap();
    assert_eq!(v.device, "nvme6n1");
}

#[test]
fn a_device_that_stops_reporting_is_named() {
    let mut m = disks(40, |_, _| 0.1);
    // The family of the test's disks counts its devices as a channel like any other; its
    // gone device is named all the same.
    for t in 20..40 {
        m.values[[4, t]] = f64::NAN; // nvme3n1
    }
    let f = fold(&m, &FamilyParams::default());
    let devices = &f
        .matrix
        .channels
        .iter()
        .find(|c| c.name.contains("devices"))
        .unwrap()
        .name;
    let (channel, sentence) = f.missing(devices, 2500, 3900).unwrap();
    assert_eq!(
        channel,
        "reveal_storage_io_time_seconds_total{device=\"nvme3n1\"}"
    );
    assert_eq!(sentence, "nvme3n1 not reporting (7 of 8 devices)");
    assert!(f.missing(devices, 0, 1500).is_none());
    assert!(f.missing("reveal_memory_dirty_bytes", 2500, 3900).is_none());
}

#[test]
fn a_device_gone_for_a_whole_pass_is_named_from_the_passes_before() {
    // A pass while all eight disks report, then one without nvme3n1 at all: the service's
    // later passes hold only their windows' span, so the gone disk has no row left.
    let before = fold(&disks(40, |_, _| 0.1), &FamilyParams::default());
    let mut known = KnownDevices::default();
    known.observe(&before, 4000, 0);
    let mut m = disks(40, |_, _| 0.1);
    m.values.remove_index(ndarray::Axis(0), 4); // nvme3n1's row
    m.channels.remove(4);
    m.start_ms = 4000;
    let f = fold(&m, &FamilyParams::default());
    let devices = &f
        .matrix
        .channels
        .iter()
        .find(|c| c.name.contains("devices"))
        .unwrap()
        .name;
    assert!(f.missing(devices, 6500, 7900).is_none(), "not in this pass");
    let (channel, sentence) = f.missing_known(devices, 6500, 7900, Some(&known)).unwrap();
    assert_eq!(
        channel,
        "reveal_storage_io_time_seconds_total{device=\"nvme3n1\"}"
    );
    assert_eq!(sentence, "nvme3n1 not reporting (7 of 8 devices)");
    // Seen in this pass, every known device is present: none named.
    known.observe(&f, 8000, 0);
    let again = fold(&disks(40, |_, _| 0.1), &FamilyParams::default());
    assert!(again
        .missing_known(devices, 2500, 3900, Some(&known))
        .is_none());
    // Not seen since before the horizon: forgotten, the smaller family is the host's now.
    known.observe(&f, 8000, 5000);
    assert!(f.missing_known(devices, 6500, 7900, Some(&known)).is_none());
}
