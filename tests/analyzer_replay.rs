//! `reveal-analyzer replay` against a real Prometheus that scraped this host's exporter every
//! 100 ms: the baseline learned on a past stretch, the next stretch scored by the service's
//! engine, one JSON object a line; and bad times refused with a message, exit status not 0.

use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reveal_e2e::stack::Stack;
use reveal_e2e::{alertmanager, prometheus, workspace_bin, TempDir};

fn config(prom: &str) -> String {
    format!(
        "source:\n  prometheus:\n    url: {prom}\n    timeout: 5s\n\
         metrics:\n\
         \x20 - expr: sum without (cpu) (rate(reveal_cpu_time_seconds_total[1s]))\n    subsystem: cpu\n    kind: dynamic\n\
         \x20 - expr: rate(reveal_cpu_context_switches_total[1s])\n    subsystem: cpu\n    kind: dynamic\n\
         \x20 - expr: reveal_memory_mem_free_bytes\n    subsystem: memory\n    kind: dynamic\n\
         analysis:\n  warmup: 12s\n  baseline: 1m\n"
    )
}

fn replay(cfg: &std::path::Path, args: &[String]) -> std::process::Output {
    Command::new(workspace_bin("reveal-analyzer"))
        .arg("replay")
        .arg("--config.file")
        .arg(cfg)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn replay_scores_a_past_stretch_with_the_services_engine_as_json_lines() {
    if prometheus::available().is_none() || alertmanager::available().is_none() {
        return;
    }
    let stack = Stack::start();
    // The clock starts once Prometheus holds the rates the configuration reads (a loaded
    // machine scrapes its first samples late), so the 12 s warmup is over well before the
    // scored stretch: 26 s of baseline and 8 s to score, all in the past when the replay runs.
    stack.prom.wait_for_value(
        "sum(rate(reveal_cpu_context_switches_total[1s]))",
        |v| v > 0.0,
        Duration::from_secs(60),
    );
    let t0 = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3;
    std::thread::sleep(Duration::from_secs(3 + 26 + 8 + 2));
    let dir = TempDir::new("reveal-replay");
    let cfg = dir.write("analyzer.yml", &config(&stack.prom.url()));
    let (learn_from, from, until) = (t0, t0 + 26, t0 + 34);
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "--learn-from".to_string(),
            learn_from.to_string(),
            "--from".to_string(),
            from.to_string(),
            "--until".to_string(),
            until.to_string(),
        ]
        .into();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let out = replay(&cfg, &args(&["--json"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("fitted the baseline"), "{stderr}");
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let windows: Vec<&serde_json::Value> = lines.iter().filter(|l| l["type"] == "window").collect();
    // One window a second (the default stride) ends in (from, until].
    assert!(
        (7..=8).contains(&windows.len()),
        "{} windows: {lines:?}",
        windows.len()
    );
    for w in &windows {
        let end = w["end_ms"].as_i64().unwrap();
        assert!(
            end > from as i64 * 1000 && end <= until as i64 * 1000,
            "{w}"
        );
        assert_eq!(w["host"], stack.target.as_str());
        let detectors: Vec<&str> = w["scores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[0].as_str().unwrap())
            .collect();
        assert_eq!(detectors, ["zscore", "pca", "iforest"], "{w}");
        assert!(w["scores"][0][1].as_f64().unwrap().is_finite(), "{w}");
        assert!(w["agreement"].as_u64().unwrap() <= 3, "{w}");
    }
    for l in &lines {
        assert!(
            ["window", "skipped", "episode", "regime"].contains(&l["type"].as_str().unwrap()),
            "{l}"
        );
    }

    // Scoring from the baseline's middle scores its own windows too; the text layout has
    // one line per window.
    let out = replay(&cfg, &args(&["--score-from", &(from - 10).to_string()]));
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let scored = text.lines().filter(|l| l.contains(" agreement=")).count();
    assert!(scored >= windows.len() + 9, "{text}");

    // Times out of order are refused, with the reason.
    let out = replay(
        &cfg,
        &[
            "--learn-from".into(),
            from.to_string(),
            "--from".into(),
            learn_from.to_string(),
            "--until".into(),
            until.to_string(),
        ],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--learn-from < --from < --until"), "{err}");
}
