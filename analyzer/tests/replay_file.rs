//! `reveal-analyzer replay --input`: a recording through the service's engine, from the
//! command line. The recording is the real fault trace of `tests/fixtures/real` (this
//! project's 2-CPU machine, a CPU hog and a write burst, README there); `online_real.rs`
//! checks the engine on it window by window, this checks what a user of the command gets:
//! one episode per fault, opened within seconds of its start and naming the subsystem it
//! loads, none in the quiet stretches, JSON lines of every window; and a clear refusal of bad
//! input.

mod support;

use std::io::Read;

use support::trace::fixture_dir;
use support::{analyzer, text, tmpdir};

const SECOND: i64 = 1000;

/// The fixture's trace, unpacked into `dir` (the command reads plain text).
fn unpacked(dir: &std::path::Path) -> std::path::PathBuf {
    let mut csv = String::new();
    let gz = std::fs::File::open(fixture_dir("real").join("trace.csv.gz")).unwrap();
    flate2::read::GzDecoder::new(gz)
        .read_to_string(&mut csv)
        .unwrap();
    let path = dir.join("trace.csv");
    std::fs::write(&path, csv).unwrap();
    path
}

#[test]
fn a_recording_replayed_opens_one_episode_per_fault_naming_its_subsystem() {
    let dir = tmpdir("replay-file");
    let trace = unpacked(&dir);
    let metric_set = fixture_dir("real").join("metric-set.yml");
    let out = analyzer()
        .arg("replay")
        .arg("--input")
        .arg(&trace)
        .arg("--metric-set")
        .arg(&metric_set)
        .args(["--warmup", "1m", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("fitted the baseline of 1m"),
        "{}",
        text(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let windows = lines.iter().filter(|l| l["type"] == "window").count();
    // About 325 s of recording, one window a second after the one-minute baseline.
    assert!((200..=280).contains(&windows), "{windows} windows scored");

    let faults: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture_dir("real").join("faults.json")).unwrap(),
    )
    .unwrap();
    let opens: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["type"] == "episode" && l["event"] == "open")
        .collect();
    let expected = [("cpu_hog", "cpu"), ("write_burst", "storage")];
    for (name, subsystem) in expected {
        let f = faults["faults"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .unwrap();
        let (start, end) = (
            f["start_ms"].as_i64().unwrap(),
            f["end_ms"].as_i64().unwrap(),
        );
        let open = opens
            .iter()
            .find(|o| {
                let at = o["at_ms"].as_i64().unwrap();
                at >= start && at <= end
            })
            .unwrap_or_else(|| panic!("no episode opened during {name}: {opens:?}"));
        let at = open["at_ms"].as_i64().unwrap();
        assert!(
            at - start <= 10 * SECOND,
            "{name}: opened {} ms after its start",
            at - start
        );
        let subsystems: Vec<&str> = open["episode"]["subsystems"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s.as_str())
            .collect();
        assert!(
            subsystems.contains(&subsystem),
            "{name}: episode of {subsystems:?}"
        );
        assert!(!open["episode"]["summary"].as_str().unwrap().is_empty());
    }
    // Nothing else opens: the quiet stretches (10 s clear of a fault) stay quiet.
    assert_eq!(opens.len(), expected.len(), "episodes: {opens:?}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_input_is_refused_with_the_reason() {
    let dir = tmpdir("replay-file-bad");
    let run = |args: &[&str]| analyzer().arg("replay").args(args).output().unwrap();

    let missing = dir.join("missing.csv");
    let out = run(&["--input", missing.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("missing.csv"),
        "{}",
        text(&out.stderr)
    );

    // A recording shorter than the baseline leaves nothing to score, and says so.
    let trace = unpacked(&dir);
    let out = run(&["--input", trace.to_str().unwrap(), "--warmup", "1h"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("the times must be in order"),
        "{}",
        text(&out.stderr)
    );

    // Without a recording, the Prometheus' configuration and times are needed.
    let out = run(&["--json"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--config.file"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).ok();
}
