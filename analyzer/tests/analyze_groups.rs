//! `reveal-analyzer analyze` over recordings that need more than one host's detectors: a
//! group of hosts where one is configured differently (cross-host, DESIGN step 7), and a
//! host whose workload steps up and stays (a regime change, step 8).

mod support;

use support::{
    analyze_recording, csv_recording, of_type, signal_columns, tmpdir, Lcg, OpenMetrics,
};

/// Four hosts running the same work for 60 s (OpenMetrics, 100 ms scrapes): CPU time,
/// dirty memory and the 2 MiB huge page pool. node2 has 1,024 huge pages reserved where the
/// others have none.
fn group_recording() -> String {
    let mut noise = Lcg(7);
    let mut om = OpenMetrics::new(&[
        ("reveal_cpu_time_seconds", "counter"),
        ("reveal_memory_dirty_bytes", "gauge"),
        ("reveal_memory_hugepages_pool", "gauge"),
    ]);
    let mut cpu = [1000.0f64; 4];
    for k in 0..600 {
        for (h, total) in cpu.iter_mut().enumerate() {
            let inst = format!("node{h}");
            *total += 0.06 + 0.02 * noise.next();
            let pages = if h == 2 { 1024 } else { 0 };
            om.sample(
                &format!(
                    "reveal_cpu_time_seconds_total{{instance=\"{inst}\",cpu=\"0\",mode=\"user\"}}"
                ),
                &format!("{total:.4}"),
                k,
            );
            om.sample(
                &format!("reveal_memory_dirty_bytes{{instance=\"{inst}\"}}"),
                &format!("{:.0}", 5.0e6 + 1.0e6 * noise.next()),
                k,
            );
            for state in ["total", "free"] {
                om.sample(
                    &format!("reveal_memory_hugepages_pool{{instance=\"{inst}\",size=\"2097152\",state=\"{state}\"}}"),
                    &pages.to_string(),
                    k,
                );
            }
        }
    }
    om.finish()
}

#[test]
fn the_host_with_other_hugepages_is_a_memory_deviation_in_both_reports() {
    let dir = tmpdir("groups-hosts");
    let report = analyze_recording(&dir, "group.om", &group_recording(), &["--no-adf"]);
    let (md, lines) = (&report.markdown, &report.lines);
    assert_eq!(of_type(lines, "host").len(), 4);
    let found = of_type(lines, "host_deviation");
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = found[0];
    assert_eq!(f["host"], "node2");
    assert_eq!(f["subsystem"], "memory");
    assert!(f["score"].as_f64().unwrap() > 3.5, "{f}");
    let e = &f["evidence"][0];
    assert!(
        e["channel"]
            .as_str()
            .unwrap()
            .starts_with("reveal_memory_hugepages_pool"),
        "{e}"
    );
    assert_eq!(e["host_value"], 1024.0);
    assert_eq!(e["group_median"], 0.0);
    let summary = f["summary"].as_str().unwrap();
    assert!(
        summary.contains("node2") && summary.contains("1024"),
        "{summary}"
    );
    // The Markdown section names the host, the subsystem and the claim.
    let section = md
        .split("## Cross-host deviations")
        .nth(1)
        .unwrap_or_else(|| panic!("no cross-host section:\n{md}"));
    assert!(
        section.contains("| Host | Subsystem | Score |"),
        "{section}"
    );
    let row = section
        .lines()
        .find(|l| l.starts_with("| node2 |"))
        .unwrap_or_else(|| panic!("no row for node2:\n{section}"));
    assert!(
        row.contains("| memory |") && row.contains("hugepages"),
        "{row}"
    );
    assert_eq!(
        section.lines().filter(|l| l.starts_with("| node")).count(),
        1
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// One host, 3 minutes at 100 ms, 16 channels; the four CPU channels step from 50 to 80 at
/// 90 s and stay there (a job starting), everything else is noise around 50.
fn step_recording() -> String {
    let mut noise = Lcg(11);
    csv_recording(&signal_columns(16), 1800, |t, c| {
        let level = if c % 4 == 0 && t >= 900 { 80.0 } else { 50.0 };
        format!("{:.4}", level + noise.next())
    })
}

#[test]
fn a_persistent_workload_step_is_one_regime_change_not_an_anomaly_storm() {
    let dir = tmpdir("groups-regime");
    let report = analyze_recording(&dir, "step.csv", &step_recording(), &["--no-adf"]);
    let (md, lines) = (&report.markdown, &report.lines);
    let changes = of_type(lines, "regime_change");
    assert_eq!(changes.len(), 1, "{changes:#?}");
    let c = changes[0];
    // The step is at 90 s; the new regime's first window ends within a window of it.
    let step_ms = 1_700_000_090_000i64;
    let start = c["start_ms"].as_i64().unwrap();
    assert!((start - step_ms).abs() <= 3_000, "start {start}");
    assert!(c["detected_ms"].as_i64().unwrap() > start);
    let names: Vec<&str> = c["column_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(!names.is_empty());
    assert!(
        names.iter().all(|n| n.starts_with("reveal_cpu_signal_")),
        "{names:?}"
    );
    assert!(c["summary"]
        .as_str()
        .unwrap()
        .starts_with("A new regime since"));
    // Not a storm: the step's own windows are the change's, and what is left is the
    // detectors' 1% contamination: three independent detectors each flag about 1% of the 178
    // scored windows, so at most about 3% are flagged by any of them.
    let flagged = of_type(lines, "window");
    assert!(flagged.len() <= 6, "{} flagged windows", flagged.len());
    // No window at the step is flagged for the step: a detector's 1% may fall there, on
    // the noise channels, but the CPU channels that stepped are the regime change's.
    for w in &flagged {
        let end = w["end_ms"].as_i64().unwrap();
        let for_the_step = w["evidence"].as_array().unwrap().iter().any(|e| {
            e["channel"]
                .as_str()
                .is_some_and(|c| c.starts_with("reveal_cpu_signal_"))
                && e["z"].as_f64().is_some_and(|z| z.abs() > 3.0)
        });
        assert!(
            (end - step_ms).abs() > 3_000 || !for_the_step,
            "window at the step flagged for the step: {w}"
        );
    }
    // One host: no cross-host comparison.
    assert!(of_type(lines, "host_deviation").is_empty());
    assert!(!md.contains("Cross-host"), "{md}");
    assert!(md.contains("### Regime changes"), "{md}");
    assert_eq!(
        md.lines()
            .filter(|l| l.contains("A new regime since"))
            .count(),
        1,
        "{md}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
