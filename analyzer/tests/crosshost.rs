//! Cross-host comparison end to end over the library: matrices of a group of hosts →
//! windows → features → [`crosshost::analyze`], on synthetic data with one known deviating
//! host (the paper's HugePages case) and groups that must stay quiet.

mod support;

use reveal_analyzer::core::crosshost::{self, CrossHostParams, CrossHostTracker, Method};
use reveal_analyzer::core::features::{Extractor, Feature, FeatureConfig, FeatureMatrix};
use reveal_analyzer::core::matrix::{
    Channel, HostMatrix, Kind, MatrixBuilder, MetricType, Subsystem,
};
use reveal_analyzer::core::window::{plan_windows, WindowConfig};
use support::XorShift;

const FREE: &str = "reveal_memory_hugepages{state=\"free\"}";
const BUSY: &str = "reveal_cpu_busy_ratio{cpu=\"0\"}";
const DIRTY: &str = "reveal_memory_dirty_bytes";

fn channel(name: &str, kind: Kind) -> Channel {
    let metric = name.split('{').next().unwrap().to_string();
    Channel {
        name: name.to_string(),
        subsystem: Subsystem::from_metric_name(&metric),
        metric,
        kind,
        metric_type: MetricType::Gauge,
        resolution: 0.0,
        per_second: false,
        max_rate: None,
    }
}

/// One host, `secs` seconds at 100 ms: HugePages free (static), CPU busy (dynamic, noisy,
/// same workload on every host) and dirty memory (dynamic, noisy).
fn host(name: &str, hugepages_free: f64, secs: i64, seed: u64) -> HostMatrix {
    let mut b = MatrixBuilder::new();
    let mut noise = XorShift(seed);
    let (free, busy, dirty) = (
        channel(FREE, Kind::Static),
        channel(BUSY, Kind::Dynamic),
        channel(DIRTY, Kind::Dynamic),
    );
    for k in 0..secs * 10 {
        let t = 1_700_000_000_000 + k * 100;
        b.push(&free, t, hugepages_free);
        b.push(&busy, t, 0.6 + 0.2 * noise.next());
        b.push(&dirty, t, 5.0e6 + 1.0e6 * noise.next());
    }
    b.build(name, 100).unwrap()
}

fn features(hosts: &[HostMatrix]) -> Vec<FeatureMatrix> {
    let wc = WindowConfig::default();
    let mut ex = Extractor::new(FeatureConfig::WITHOUT_ADF, wc);
    hosts
        .iter()
        .map(|m| ex.extract(m, &plan_windows(m, &wc).unwrap()))
        .collect()
}

#[test]
fn the_host_with_hugepages_reserved_is_found_and_only_it() {
    // Nine hosts, as in the paper; node3 has 1,024 pages free where the others have 0 to 2
    // (a little spread, so the MAD is not 0 and the robust z is the plain one).
    let hosts: Vec<HostMatrix> = (0..9)
        .map(|i| {
            let free = if i == 3 { 1024.0 } else { (i % 3) as f64 };
            host(&format!("node{i}"), free, 60, 1 + i as u64)
        })
        .collect();
    let fm = features(&hosts);
    let found = crosshost::analyze(&fm, 1000, CrossHostParams::default()).unwrap();
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert_eq!((f.host.as_str(), f.subsystem), ("node3", Subsystem::Memory));
    let e = &f.evidence[0];
    assert_eq!(e.channel, FREE);
    assert_eq!(e.feature, Feature::Mean);
    assert_eq!(e.method, Method::RobustZ);
    // Others: three hosts each at 0, 1, 2 → with node3, sorted 0,0,0,1,1,1,2,2,1024:
    // median 1, |dev| 1,1,1,0,0,0,1,1,1023 → MAD 1; z = 1023 / 1.4826.
    assert_eq!((e.host_value, e.group_median), (1024.0, 1.0));
    assert!((e.robust_z.unwrap() - 1023.0 / 1.4826).abs() < 1e-9);
    // The score is in robust-z units: the 24th largest of the last 30 windows' |z|, here the
    // same z every window.
    assert!((f.score - 1023.0 / 1.4826).abs() < 1e-6, "{}", f.score);
    // 60 s of data, 3 s windows, 1 s stride: 58 windows; persistent from the 24th on.
    assert!((24..=30).contains(&e.windows), "{}", e.windows);
    assert_eq!(f.since_ms, fm[3].windows[23].end_ms);
    assert!(
        f.summary
            .starts_with("HugePages (state free) on node3 is far above the other hosts' median"),
        "{}",
        f.summary
    );
}

#[test]
fn identical_noisy_hosts_and_constant_channels_stay_quiet() {
    // Same workload, same HugePages (0 everywhere), different noise: nothing persists.
    let hosts: Vec<HostMatrix> = (0..9)
        .map(|i| host(&format!("node{i}"), 0.0, 60, 100 + i as u64))
        .collect();
    let found = crosshost::analyze(&features(&hosts), 1000, CrossHostParams::default()).unwrap();
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn scores_cover_every_host_and_subsystem_and_stay_below_the_threshold_when_quiet() {
    let hosts: Vec<HostMatrix> = (0..5)
        .map(|i| host(&format!("node{i}"), 4.0, 40, 7 + i as u64))
        .collect();
    let fm = features(&hosts);
    let mut t = CrossHostTracker::new(CrossHostParams::default()).unwrap();
    let mut last = None;
    for w in crosshost::group_windows(&fm, 1000) {
        last = Some(t.observe(&w));
    }
    let u = last.unwrap();
    // 5 hosts × {cpu, memory}: bounded cardinality.
    assert_eq!(u.scores.len(), 10);
    assert!(
        u.scores.iter().all(|(_, _, s)| (0.0..=3.5).contains(s)),
        "{:?}",
        u.scores
    );
    assert!(u.findings.is_empty());
}

#[test]
fn a_pair_of_hosts_reports_both_without_taking_sides() {
    let hosts = vec![host("a", 0.0, 40, 1), host("b", 512.0, 40, 2)];
    let found = crosshost::analyze(&features(&hosts), 1000, CrossHostParams::default()).unwrap();
    let names: Vec<&str> = found.iter().map(|f| f.host.as_str()).collect();
    assert_eq!(names, ["a", "b"], "{found:#?}");
    for f in &found {
        assert_eq!(f.evidence[0].channel, FREE);
        assert_eq!(f.evidence[0].method, Method::Pair);
        assert_eq!(f.evidence[0].robust_z, None);
        assert!(
            f.summary.contains("two hosts cannot tell which one is off"),
            "{}",
            f.summary
        );
    }
}

#[test]
fn a_host_with_gaps_is_compared_where_it_has_data() {
    // node0 loses its data for 20 s: its windows there are skipped, the group goes on.
    let mut hosts: Vec<HostMatrix> = (0..6)
        .map(|i| {
            host(
                &format!("node{i}"),
                if i == 5 { 64.0 } else { 0.0 },
                60,
                30 + i as u64,
            )
        })
        .collect();
    for t in 200..400 {
        for c in 0..hosts[0].n_channels() {
            hosts[0].values[[c, t]] = f64::NAN;
        }
    }
    let found = crosshost::analyze(&features(&hosts), 1000, CrossHostParams::default()).unwrap();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].host, "node5");
    assert!(found[0].evidence.iter().all(|e| e.host_value.is_finite()));
}

#[test]
fn a_csv_recording_of_nine_hosts_names_the_odd_one() {
    // The same case read through the CSV source, where the host label splits one file into
    // hosts: node6 has no HugePages free, four hosts 512 and four 511.
    let mut noise = XorShift(77);
    let mut s = String::from("timestamp_ms");
    for h in 0..9 {
        s.push_str(&format!(
            ",\"reveal_memory_hugepages{{instance=\"\"node{h}\"\",state=\"\"free\"\"}}\",\
             \"reveal_cpu_procs_running{{instance=\"\"node{h}\"\"}}\""
        ));
    }
    s.push('\n');
    for k in 0..400 {
        s.push_str(&format!("{}", 1_700_000_000_000i64 + k * 100));
        for h in 0..9 {
            let free = if h == 6 { 0.0 } else { 512.0 - (h % 2) as f64 };
            s.push_str(&format!(",{free},{}", 4.0 + (4.0 * noise.next()).round()));
        }
        s.push('\n');
    }
    let hosts = reveal_analyzer::ingest::csv::parse_csv(
        &s,
        &reveal_analyzer::ingest::SourceOptions::default(),
    )
    .unwrap();
    assert_eq!(hosts.len(), 9);
    let found =
        crosshost::analyze_matrices(&hosts, &WindowConfig::default(), CrossHostParams::default())
            .unwrap();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].host, "node6");
    let e = &found[0].evidence[0];
    // Sorted 0, 511 ×4, 512 ×4: median 511, |dev| 511, 0 ×4, 1 ×4 → MAD 1.
    assert_eq!((e.host_value, e.group_median), (0.0, 511.0));
    assert!((e.robust_z.unwrap() + 511.0 / 1.4826).abs() < 1e-9);
    let md = crosshost::markdown(&found);
    assert!(md.contains("| node6 | memory |"), "{md}");
    assert!(md.contains("far below the other hosts' median"), "{md}");
}
