//! `reveal-analyzer analyze` over real files: a real exporter capture, a recording with an
//! injected fault and bad data, and inputs that must be refused with a clear message.

mod support;

use reveal_analyzer::core::matrix::{Kind, MetricType, Subsystem};
use reveal_analyzer::ingest::openmetrics::parse_openmetrics;
use reveal_analyzer::ingest::SourceOptions;
use support::{analyze, analyze_recording, csv_recording, signal_columns, text, tmpdir, Lcg};

const CAPTURE: &str = include_str!("fixtures/capture/exporter-2s.prom");

#[test]
fn real_capture_parses_into_one_host_with_increases() {
    let hosts = parse_openmetrics(CAPTURE, &SourceOptions::default()).expect("capture parses");
    assert_eq!(hosts.len(), 1);
    let m = &hosts[0];
    assert_eq!(m.host, "local");
    assert!(m.n_channels() > 100, "{} channels", m.n_channels());
    assert!((19..=21).contains(&m.n_steps()), "{} steps", m.n_steps());
    for s in [
        Subsystem::Cpu,
        Subsystem::Memory,
        Subsystem::Network,
        Subsystem::Storage,
    ] {
        assert!(
            m.channels.iter().any(|c| c.subsystem == s),
            "no {s} channel"
        );
    }
    for (i, c) in m.channels.iter().enumerate() {
        if c.metric_type == MetricType::Counter {
            let row = m.row(i);
            assert!(
                row[0].is_nan(),
                "{}: no increase before the first sample",
                c.name
            );
            // A counter's per-step increase is never negative (resets count from zero).
            assert!(row.iter().all(|v| v.is_nan() || *v >= 0.0), "{}", c.name);
        }
    }
    let kind = |name: &str| m.channels.iter().find(|c| c.metric == name).map(|c| c.kind);
    assert_eq!(
        kind("reveal_network_receive_errors_total"),
        Some(Kind::Event)
    );
    assert_eq!(kind("reveal_cpu_time_seconds_total"), Some(Kind::Dynamic));
    // Most cells are filled: the 100 ms scrapes land on the 100 ms grid.
    let filled = m.values.iter().filter(|v| v.is_finite()).count() as f64;
    assert!(filled / m.values.len() as f64 > 0.8);
}

#[test]
fn a_capture_shorter_than_a_window_is_reported_not_failed() {
    let dir = tmpdir("analyze-short");
    let report = analyze_recording(&dir, "capture.prom", CAPTURE, &[]);
    assert!(report.markdown.contains("shorter than one window"));
    assert!(report.markdown.contains("No anomalous windows"));
    assert_eq!(report.lines.len(), 1, "one host line, no findings");
    std::fs::remove_dir_all(&dir).ok();
}

/// Two minutes of 16 channels at 100 ms, with a burst on one network channel at 60 s, a
/// constant channel, an outage, a channel that vanishes, infinities and empty cells; and the
/// memory size, which never changes.
fn recording() -> String {
    let mut noise = Lcg(99);
    let mut columns = signal_columns(16);
    columns.push("reveal_memory_mem_total_bytes".into());
    csv_recording(&columns, 1200, |t, c| {
        if c == 16 {
            "1000000".to_string() // static
        } else if (700..740).contains(&t) {
            String::new() // 4 s outage of everything
        } else if c == 0 {
            "7".to_string() // constant
        } else if c == 5 && t > 900 {
            String::new() // vanished
        } else if c == 9 && t == 100 {
            "inf".to_string()
        } else if c == 6 && (600..620).contains(&t) {
            format!("{}", 60.0 + 20.0 * noise.next()) // the fault
        } else {
            format!("{:.4}", 50.0 + noise.next())
        }
    })
}

#[test]
fn an_injected_fault_becomes_a_table_row_and_an_episode() {
    let dir = tmpdir("analyze-fault");
    let report = analyze_recording(&dir, "run.csv", &recording(), &["--no-adf"]);
    let stdout = &report.markdown;
    assert!(stdout.contains(
        "| Window (ID / Timestamp) | Method(s) | Subsystem | Mainreasons (Metric–Temporal Feature) | Claim |"
    ));
    assert!(stdout.contains("1 static"), "{stdout}");
    assert!(!stdout.contains("NaN"), "{stdout}");
    let mut windows = 0;
    let mut fault_windows = 0;
    let mut episode_on_fault = false;
    for v in &report.lines {
        match v["type"].as_str() {
            Some("window") => {
                windows += 1;
                let top = &v["evidence"][0];
                if top["channel"] == "reveal_network_signal_6" {
                    fault_windows += 1;
                    assert_eq!(top["subsystem"], "network");
                    assert!(top["value"].is_number() && top["z"].is_number());
                }
            }
            Some("episode") => {
                let top = &v["top_evidence"][0];
                if top["channel"] == "reveal_network_signal_6" {
                    episode_on_fault = true;
                    assert!(v["windows"].as_u64().unwrap() >= 2);
                }
            }
            Some("host") => {
                assert!(
                    v["summary"]["skipped_no_data"].as_u64().unwrap() >= 1,
                    "{v}"
                );
            }
            other => panic!("unexpected line type {other:?}"),
        }
    }
    assert!(
        fault_windows >= 2,
        "{fault_windows} of {windows} flagged windows name the fault"
    );
    assert!(episode_on_fault, "the fault is an episode");
    assert!(stdout.contains("Network"), "{stdout}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_inputs_are_refused_with_a_reason() {
    let dir = tmpdir("analyze-bad");
    let cases: [(&str, &str, &str); 4] = [
        ("empty.prom", "", "no samples"),
        ("junk.prom", "this is { not metrics\n", "line 1"),
        ("nots.prom", "a 1\n", "without a timestamp"),
        ("bad.csv", "t,a\n1,x\n", "line 2: bad value"),
    ];
    for (name, body, want) in cases {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        let out = analyze(&["--input", p.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = text(&out.stderr);
        assert!(err.contains(want), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
    }
    let out = analyze(&["--input", dir.join("missing.prom").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let out = analyze(&["--input", "x.prom", "--window", "3s", "--stride", "150ms"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("multiples of the step"));
    std::fs::remove_dir_all(&dir).ok();
}
