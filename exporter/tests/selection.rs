//! The metric selection (`--metrics.selection`): refused with the line of a bad entry (YAML,
//! label, regex); names the exporter does not have are warned about once and the rest is
//! served; applied, it builds only the collectors it needs and exposes only the selected
//! series.

use reveal_exporter::collectors::{Settings, COLLECTORS};
use reveal_exporter::runner::{Format, Runner};
use reveal_exporter::selection::{Selection, SelectionError};
use std::sync::Arc;

fn err_line(text: &str) -> (Option<usize>, String) {
    let dir = std::env::temp_dir().join(format!("reveal-selection-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("sel-{}.yml", text.len()));
    std::fs::write(&p, text).unwrap();
    match Selection::load(&p) {
        Err(SelectionError::Invalid { line, msg, .. }) => (line, msg),
        other => panic!("expected refusal, got {other:?}"),
    }
}

#[test]
fn unknown_names_select_nothing_and_are_listed() {
    let sel = Selection::parse(
        "metrics:\n  - reveal_cpu_time_seconds_total\n  - reveal_cpu_tim_seconds_total\n  \
         - name: reveal_cpu_nope_total\n    match: {cpu: '0'}\n  - reveal_cpu_time_seconds\n",
    )
    .unwrap();
    assert_eq!(
        sel.unknown(),
        [
            "reveal_cpu_tim_seconds_total",
            "reveal_cpu_nope_total",
            "reveal_cpu_time_seconds"
        ]
    );
    assert_eq!(sel.names(), ["reveal_cpu_time_seconds_total"]);
}

#[test]
fn malformed_yaml_labels_and_regexes_are_refused_with_their_line() {
    let (line, msg) = err_line("metric:\n  - reveal_cpu_time_seconds_total\n");
    assert_eq!(line, Some(1), "{msg}");
    let (line, msg) = err_line("metrics:\n  - reveal_cpu_time_seconds_total\n  - [unclosed\n");
    assert!(line.is_some(), "{msg}");
    let (_, msg) =
        err_line("metrics:\n  - name: reveal_cpu_time_seconds_total\n    match: {cpuu: '0'}\n");
    assert!(msg.contains("cpuu"), "{msg}");
    let (_, msg) =
        err_line("metrics:\n  - name: reveal_cpu_time_seconds_total\n    match: {mode: '(user'}\n");
    assert!(msg.contains("mode"), "{msg}");
}

#[test]
fn every_metric_of_every_collector_can_be_selected() {
    let mut text = String::from("metrics:\n");
    for e in COLLECTORS {
        for d in e.metrics {
            text.push_str(&format!("  - {}\n", d.sample_name()));
        }
    }
    let sel = Selection::parse(&text).unwrap();
    for e in COLLECTORS {
        assert!(e.metrics.iter().all(|d| sel.wants(d)), "{}", e.name);
    }
}

#[test]
fn only_selected_series_are_exposed_and_unneeded_collectors_not_built() {
    let sel = Selection::parse(
        "metrics:\n  - name: reveal_cpu_time_seconds_total\n    match: {mode: 'user|system'}\n  \
         - reveal_cpu_context_switches_total\n",
    )
    .unwrap();
    let settings = Settings {
        selection: Some(Arc::new(sel)),
        ..Settings::default()
    };
    let all: Vec<&str> = COLLECTORS.iter().map(|e| e.name).collect();
    let runner = Runner::new(&all, &settings).unwrap();
    assert_eq!(
        runner.names(),
        vec!["stat"],
        "collectors with nothing selected must not be built"
    );
    let text = runner.render_as(Format::Text);
    let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    let mut modes = std::collections::BTreeSet::new();
    for l in &samples {
        let name = l.split(['{', ' ']).next().unwrap();
        match name {
            "reveal_cpu_time_seconds_total" => {
                let mode = l
                    .split("mode=\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap();
                modes.insert(mode.to_string());
            }
            "reveal_cpu_context_switches_total" => {}
            // The exporter's own (reveal_exporter_*, process_*): always exposed.
            n if reveal_exporter::runner::is_self_metric(n) => {}
            n => panic!("unselected series exposed: {n}\n{text}"),
        }
    }
    assert_eq!(
        modes.into_iter().collect::<Vec<_>>(),
        vec!["system", "user"]
    );
    assert!(samples
        .iter()
        .any(|l| l.starts_with("reveal_cpu_context_switches_total")));
    assert!(
        !text.contains("# HELP reveal_cpu_guest_time"),
        "empty families must not be written"
    );
}

fn once_with_selection(name: &str, text: &str) -> std::process::Output {
    let dir = std::env::temp_dir().join(format!("reveal-selection-bin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_reveal-exporter"))
        .args(["--once", "--metrics.selection"])
        .arg(&p)
        .output()
        .unwrap()
}

#[test]
fn the_binary_warns_once_about_unknown_names_and_serves_the_rest() {
    let out = once_with_selection(
        "unknown.yml",
        "metrics:\n  - reveal_cpu_time_seconds_total\n  - reveal_no_such_metric\n  \
         - reveal_cpu_context_switches_total\n  - reveal_gpu_from_the_future_total\n",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("level=warn"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("reveal_no_such_metric, reveal_gpu_from_the_future_total")
            && warnings[0].contains("unknown.yml"),
        "{stderr}"
    );
    let samples: Vec<&str> = stdout
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    for known in [
        "reveal_cpu_time_seconds_total{",
        "reveal_cpu_context_switches_total ",
    ] {
        assert!(
            samples.iter().any(|l| l.starts_with(known)),
            "{known} not served:\n{stdout}"
        );
    }
    assert!(
        samples
            .iter()
            .all(|l| l.starts_with("reveal_cpu_time_seconds_total{")
                || l.starts_with("reveal_cpu_context_switches_total ")
                || reveal_exporter::runner::is_self_metric(l)),
        "{stdout}"
    );
}

#[test]
fn the_binary_refuses_a_bad_regex_or_malformed_yaml_at_start() {
    let out = once_with_selection(
        "bad-regex.yml",
        "metrics:\n  - reveal_cpu_time_seconds_total\n  - name: reveal_cpu_time_seconds_total\n    \
         match: {mode: 'user|(sys'}\n",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("bad-regex.yml")
            && stderr.contains("label \"mode\"")
            && stderr.contains("line "),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());

    let out = once_with_selection("not-yaml.yml", "metrics: [reveal_cpu_time_seconds_total\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("not-yaml.yml") && stderr.contains("line "),
        "{stderr}"
    );
}

#[test]
fn the_shipped_example_loads() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/selection.yml");
    let sel = Selection::load(&p).unwrap_or_else(|e| panic!("{e}"));
    assert!(sel
        .names()
        .iter()
        .any(|n| n == "reveal_cpu_tsc_cycles_total"));
}
