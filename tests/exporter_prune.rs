//! Where the two crates meet: a recording of this host made with the exporter's own
//! collectors is pruned by the analyzer (paper §4.1), and the selection it writes is loaded by
//! the exporter. (The analyzer does not depend on the exporter; this test does, on both.)

use std::fmt::Write as _;
use std::path::PathBuf;

use reveal_analyzer::commands::prune::{run_cli, PruneArgs};
use reveal_exporter::collectors::Settings;
use reveal_exporter::runner::{known_descs, Format, Runner};
use reveal_exporter::selection::Selection;

/// This test's own temporary directory.
fn tmp_dir() -> PathBuf {
    std::env::temp_dir().join(format!("reveal-exporter-prune-{}", std::process::id()))
}

fn tmp(name: &str) -> PathBuf {
    let dir = tmp_dir();
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn args(inputs: Vec<PathBuf>, tag: &str) -> PruneArgs {
    PruneArgs {
        inputs: inputs.iter().map(|p| p.display().to_string()).collect(),
        threshold: 0.5,
        selection: Some(tmp(&format!("{tag}-selection.yml"))),
        curves: Some(tmp(&format!("{tag}-curves.csv"))),
        verdicts: Some(tmp(&format!("{tag}-verdicts.jsonl"))),
        metric_set: None,
        metric_set_into: None,
        per_series: true,
        step_ms: 100,
        host_label: "instance".into(),
        prune_static: false,
        from_verdicts: None,
        fast_selection: None,
        slow_range: None,
    }
}

/// Renders one scrape of the exporter's collectors as Prometheus text, stamped with `ms`.
fn stamped_scrape(runner: &Runner, ms: i64, first: bool) -> String {
    let text = runner.render_as(Format::Text);
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with('#') {
            if first {
                out.push_str(line);
                out.push('\n');
            }
        } else if !line.trim().is_empty() {
            writeln!(out, "{line} {ms}").unwrap();
        }
    }
    out
}

#[test]
fn a_recording_of_this_host_prunes_to_a_loadable_selection() {
    // A real recording: the exporter's stat, meminfo, netdev and diskstats collectors on this
    // host, 60 scrapes 100 ms apart, with a CPU burst in the middle so CPU channels move.
    let settings = Settings::default();
    let runner = Runner::new(&["stat", "meminfo", "netdev", "diskstats"], &settings).unwrap();
    let mut rec = String::new();
    let t0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    for k in 0..60 {
        let busy_until = std::time::Instant::now() + std::time::Duration::from_millis(100);
        if (20..40).contains(&k) {
            let mut x = 0u64;
            while std::time::Instant::now() < busy_until {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            std::hint::black_box(x);
        } else {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        rec.push_str(&stamped_scrape(&runner, t0 + k * 100, k == 0));
    }
    let path = tmp("host.prom");
    std::fs::write(&path, rec).unwrap();
    let summary = run_cli(&args(vec![path], "host")).unwrap();
    let sel = Selection::load(&tmp("host-selection.yml")).unwrap();
    assert!(sel.unknown().is_empty(), "{:?}", sel.unknown());
    // The CPU moved, so CPU time is judged and some series of it is kept.
    let cpu = known_descs()
        .find(|d| d.sample_name() == "reveal_cpu_time_seconds_total")
        .unwrap();
    assert!(sel.wants(cpu), "{summary}");
    let verdicts = std::fs::read_to_string(tmp("host-verdicts.jsonl")).unwrap();
    let (mut kept, mut total) = (0, 0);
    for l in verdicts.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        total += 1;
        kept += usize::from(v["kept"] == true);
    }
    assert!(total > 50 && kept < total, "{summary}");
    let csv = std::fs::read_to_string(tmp("host-curves.csv")).unwrap();
    assert_eq!(csv.lines().count(), 19, "{csv}");
    let _ = std::fs::remove_dir_all(tmp_dir());
}
