//! Correlation pruning (paper §4.1): hand-checked correlations, a two-run union with known
//! redundancy, and the selection file read back through the exporter's own parser
//! (`reveal_schema::selection`). A recording of this host made with the exporter's collectors
//! is pruned in the workspace's `tests/exporter_prune.rs`, where both crates meet.

mod support;

use std::fmt::Write as _;
use std::path::PathBuf;

use ndarray::Array2;
use reveal_analyzer::commands::prune::{run_cli, PruneArgs};
use reveal_analyzer::core::matrix::{Channel, HostMatrix, Kind, MetricType, Subsystem};
use reveal_analyzer::core::prune::{correlate, curves, priority, thresholds, union};
use reveal_schema::selection::Selection;
use support::{analyzer, text, XorShift};

fn matrix(rows: &[(&str, Vec<f64>)]) -> HostMatrix {
    let n = rows[0].1.len();
    let channels = rows
        .iter()
        .map(|(name, _)| {
            let metric = name.split('{').next().unwrap().to_string();
            Channel {
                name: name.to_string(),
                subsystem: Subsystem::from_metric_name(&metric),
                metric,
                kind: Kind::Dynamic,
                metric_type: MetricType::Gauge,
                resolution: 0.0,
                per_second: false,
                max_rate: None,
            }
        })
        .collect();
    let flat: Vec<f64> = rows.iter().flat_map(|(_, v)| v.clone()).collect();
    HostMatrix {
        host: "h".into(),
        start_ms: 0,
        step_ms: 100,
        channels,
        values: Array2::from_shape_vec((rows.len(), n), flat).unwrap(),
        non_finite_samples: 0,
    }
}

#[test]
fn pearson_by_hand_constants_left_out_gaps_tolerated() {
    // x = 1..12, y = 2x + 3 (r = 1), w = −x (r = −1), v alternates ±1 (r(x, v) by hand:
    // x − x̄ = k − 6.5, v = (−1)^k for k = 1..12; Σ(x − x̄)v = 6 (six pairs of +1), Σ(x−x̄)² =
    // 143, Σv² = 12, v̄ = 0 → r = 6 / √(143 · 12) = 0.14484…). The constant is not judged.
    let x: Vec<f64> = (1..=12).map(f64::from).collect();
    let y: Vec<f64> = x.iter().map(|v| 2.0 * v + 3.0).collect();
    let w: Vec<f64> = x.iter().map(|v| -v).collect();
    let v: Vec<f64> = (1..=12)
        .map(|k| if k % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    let m = matrix(&[
        ("x", x.clone()),
        ("y", y),
        ("c", vec![5.0; 12]),
        ("w", w),
        ("v", v),
    ]);
    let rc = correlate("run", &m, false);
    assert_eq!(rc.judged, [0, 1, 3, 4]);
    assert!((rc.r[[0, 1]] - 1.0).abs() < 1e-12);
    assert!((rc.r[[0, 2]] + 1.0).abs() < 1e-12);
    assert!((rc.r[[0, 3]] - 6.0 / (143.0f64 * 12.0).sqrt()).abs() < 1e-12);
    // A gap in y leaves r(x, y) at 1 on the overlap.
    let mut y2: Vec<f64> = x.iter().map(|v| 2.0 * v + 3.0).collect();
    y2[4] = f64::NAN;
    let m = matrix(&[("x", x), ("y", y2)]);
    let rc = correlate("run", &m, false);
    assert!((rc.r[[0, 1]] - 1.0).abs() < 1e-3, "{}", rc.r[[0, 1]]);
}

#[test]
fn priority_table_prefers_utilization_and_throughput() {
    assert_eq!(priority("reveal_cpu_time_seconds_total"), 0);
    assert_eq!(priority("reveal_gpu_utilization_ratio"), 0);
    assert_eq!(priority("reveal_memory_mem_available_bytes"), 0);
    assert_eq!(priority("reveal_network_receive_bytes_total"), 0);
    assert_eq!(priority("reveal_storage_read_bytes_total"), 0);
    assert_eq!(priority("reveal_network_receive_packets_total"), 1);
    assert_eq!(priority("reveal_storage_reads_completed_total"), 1);
    assert_eq!(priority("reveal_cpu_instructions_total"), 2);
    assert_eq!(priority("reveal_storage_reads_merged_total"), 2);
}

const CPU: &str = "reveal_cpu_time_seconds_total{cpu=\"0\",mode=\"user\"}";
const INS: &str = "reveal_cpu_instructions_total{cpu=\"0\"}";
const RXB: &str = "reveal_network_receive_bytes_total{device=\"eth0\"}";
const RXP0: &str = "reveal_network_receive_packets_total{device=\"eth0\"}";
const RXP1: &str = "reveal_network_receive_packets_total{device=\"eth1\"}";
const DIRTY: &str = "reveal_memory_dirty_bytes";
const ERR: &str = "reveal_network_receive_errors_total{device=\"eth0\"}";
const LOAD: &str = "node_load1";

/// A CSV run (counters as running totals, 100 ms apart). In run A the instruction counter
/// follows CPU time; in run B it does not. eth0 packets follow eth0 bytes in both; eth1
/// packets, dirty memory and the load are independent; the error counter never moves.
fn csv_run(instructions_follow_cpu: bool, seed: u64) -> String {
    let mut n = XorShift(seed);
    let names = [CPU, INS, RXB, RXP0, RXP1, DIRTY, ERR, LOAD];
    let mut s = String::from("timestamp_ms");
    for h in names {
        write!(s, ",\"{}\"", h.replace('"', "\"\"")).unwrap();
    }
    s.push('\n');
    let mut tot = [0.0f64; 5];
    for k in 0..400 {
        let cpu = 0.05 + 0.04 * n.next();
        let ins = if instructions_follow_cpu {
            2e8 * cpu + 1e5 * n.next()
        } else {
            1e7 + 5e6 * n.next()
        };
        let rxb = 1e5 + 8e4 * n.next();
        let rxp0 = rxb / 1000.0 + 2.0 * n.next();
        let rxp1 = 50.0 + 40.0 * n.next();
        for (t, inc) in tot.iter_mut().zip([cpu, ins, rxb, rxp0, rxp1]) {
            *t += inc;
        }
        let dirty = 5e6 + 1e6 * n.next();
        let load = 1.0 + n.next();
        writeln!(
            s,
            "{},{},{},{},{},{},{},0,{}",
            1_700_000_000_000i64 + k * 100,
            tot[0],
            tot[1],
            tot[2],
            tot[3],
            tot[4],
            dirty,
            load
        )
        .unwrap();
    }
    s
}

/// A file in this test's own temporary directory (per process and test thread, so tests
/// running in parallel threads of one process do not share it).
fn tmp_dir() -> PathBuf {
    let thread = std::thread::current();
    let tag: String = thread
        .name()
        .unwrap_or("main")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    std::env::temp_dir().join(format!("reveal-prune-{}-{tag}", std::process::id()))
}

fn tmp(name: &str) -> PathBuf {
    let dir = tmp_dir();
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Removes this test's directory (left behind when a test fails, for a look).
fn cleanup() {
    let _ = std::fs::remove_dir_all(tmp_dir());
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

#[test]
fn union_over_runs_and_selection_loads_in_the_exporter() {
    let (a, b) = (tmp("a.csv"), tmp("b.csv"));
    std::fs::write(&a, csv_run(true, 11)).unwrap();
    std::fs::write(&b, csv_run(false, 12)).unwrap();

    // Run A alone: instructions and eth0 packets are redundant (clustered under CPU time and
    // eth0 bytes, the priority-0 channels); the error counter was never judged and is kept.
    let summary = run_cli(&args(vec![a.clone()], "a")).unwrap();
    assert!(summary.contains("kept 6"), "{summary}");
    let verdicts = std::fs::read_to_string(tmp("a-verdicts.jsonl")).unwrap();
    let find = |name: &str| -> serde_json::Value {
        verdicts
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|v| v["channel"] == name)
            .unwrap()
    };
    assert_eq!(find(INS)["reason"], "redundant");
    assert_eq!(find(INS)["represented_by"], CPU);
    assert!(find(INS)["abs_r"].as_f64().unwrap() > 0.95);
    assert_eq!(find(RXP0)["represented_by"], RXB);
    assert_eq!(find(ERR)["reason"], "unjudged");
    for kept in [CPU, RXB, RXP1, DIRTY, LOAD] {
        assert_eq!(find(kept)["reason"], "selected", "{kept}");
    }

    // Union with run B, where instructions do not follow CPU time: they are kept.
    let summary = run_cli(&args(vec![a, b], "ab")).unwrap();
    assert!(
        summary.contains("2 workloads of 2 runs, 8 channels; kept 7"),
        "{summary}"
    );
    let yaml = std::fs::read_to_string(tmp("ab-selection.yml")).unwrap();
    // Every entry is a metric the exporter knows (others would select nothing), eth0 packets
    // are out, eth1 packets in, and the node_exporter name is only mentioned in a comment.
    let sel = Selection::load(&tmp("ab-selection.yml")).unwrap();
    assert!(sel.unknown().is_empty(), "{:?}\n{yaml}", sel.unknown());
    let packets = sel.rule("reveal_network_receive_packets_total").unwrap();
    assert!(packets.keeps(&[("device", "eth1".to_string())]));
    assert!(!packets.keeps(&[("device", "eth0".to_string())]));
    for m in [
        "reveal_cpu_instructions_total",
        "reveal_cpu_time_seconds_total",
        "reveal_network_receive_errors_total",
        "reveal_memory_dirty_bytes",
    ] {
        assert!(sel.wants(m), "{m}\n{yaml}");
    }
    assert!(yaml.contains("#   node_load1"), "{yaml}");
    assert!(!sel.names().any(|n| n == "node_load1"));

    // Figure 4: 18 thresholds, ratios in range and the selected share growing with |r|.
    let csv = std::fs::read_to_string(tmp("ab-curves.csv")).unwrap();
    let rows: Vec<Vec<f64>> = csv
        .lines()
        .skip(1)
        .map(|l| {
            l.split(',')
                .map(|c| c.parse().unwrap_or(f64::NAN))
                .collect()
        })
        .collect();
    assert_eq!(rows.len(), 18);
    assert!((rows[0][0] - 0.10).abs() < 1e-9 && (rows[17][0] - 0.95).abs() < 1e-9);
    for w in rows.windows(2) {
        assert!(
            w[1][3] >= w[0][3] - 1e-12,
            "selected ratio must not fall: {csv}"
        );
    }
    for r in &rows {
        assert!(
            (0.0..=1.0).contains(&r[1]) && (0.0..=1.0).contains(&r[3]),
            "{csv}"
        );
    }
    // At 0.5 run A selects 5 of its 7 judged channels and run B 6 of 7: mean 11/14 (the CSV
    // has six decimals).
    let at = |t: f64| rows.iter().find(|r| (r[0] - t).abs() < 1e-9).unwrap();
    assert!((at(0.5)[3] - 11.0 / 14.0).abs() < 1e-6, "{csv}");
    // The removed ones are near-perfectly predicted from the kept ones.
    assert!(at(0.5)[1] > 0.97 && at(0.5)[2] > 0.95, "{csv}");
    cleanup();
}

#[test]
fn curves_on_a_redundant_family() {
    // Five channels all driven by one signal plus small independent noise: at |r| ≤ 0.9 one
    // representative remains, and it explains the others almost fully.
    let mut n = XorShift(5);
    let base: Vec<f64> = (0..300).map(|_| n.next()).collect();
    let rows: Vec<(String, Vec<f64>)> = (0..5)
        .map(|i| {
            let v = base.iter().map(|b| b + 0.05 * n.next()).collect();
            (format!("reveal_cpu_perf_event_total{{event=\"e{i}\"}}"), v)
        })
        .collect();
    let refs: Vec<(&str, Vec<f64>)> = rows.iter().map(|(a, b)| (a.as_str(), b.clone())).collect();
    let rc = correlate("r", &matrix(&refs), false);
    let pts = curves(std::slice::from_ref(&rc), &thresholds());
    let p = pts
        .iter()
        .find(|p| (p.threshold - 0.5).abs() < 1e-9)
        .unwrap();
    assert!((p.selected_ratio - 0.2).abs() < 1e-12);
    assert!(p.avg_multi_r2 > 0.98, "{p:?}");
    assert!(p.avg_max_abs_r > 0.98, "{p:?}");
    let v = union(&[rc], 0.5);
    assert_eq!(v.iter().filter(|v| v.kept).count(), 1);
}

#[test]
fn long_runs_are_correlated_in_blocks_exactly() {
    // 10,000 steps (more than one block of the products): r must equal the textbook
    // two-pass Pearson on the same data.
    let mut n = XorShift(9);
    let x: Vec<f64> = (0..10_000).map(|_| n.next()).collect();
    let y: Vec<f64> = x.iter().map(|v| 0.3 * v + 0.2 * n.next() + 7.0).collect();
    let pearson = |a: &[f64], b: &[f64]| {
        let (ma, mb) = (
            a.iter().sum::<f64>() / a.len() as f64,
            b.iter().sum::<f64>() / b.len() as f64,
        );
        let cov: f64 = a.iter().zip(b).map(|(p, q)| (p - ma) * (q - mb)).sum();
        let va: f64 = a.iter().map(|p| (p - ma).powi(2)).sum();
        let vb: f64 = b.iter().map(|q| (q - mb).powi(2)).sum();
        cov / (va * vb).sqrt()
    };
    let want = pearson(&x, &y);
    let rc = correlate("r", &matrix(&[("x", x), ("y", y)]), false);
    assert!(
        (rc.r[[0, 1]] - want).abs() < 1e-12,
        "{} vs {want}",
        rc.r[[0, 1]]
    );
}

#[test]
fn the_prune_command_writes_what_it_says() {
    let a = tmp("cmd.csv");
    std::fs::write(&a, csv_run(true, 21)).unwrap();
    let (sel, curves_path) = (tmp("cmd-selection.yml"), tmp("cmd-curves.csv"));
    let out = analyzer()
        .arg("prune")
        .arg(&a)
        .arg("--output.selection")
        .arg(&sel)
        .arg("--output.curves")
        .arg(&curves_path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary = String::from_utf8(out.stdout).unwrap();
    assert!(
        summary.contains("1 workloads of 1 runs, 8 channels; kept 6 at |r| ≥ 0.5"),
        "{summary}"
    );
    assert!(Selection::load(&sel).unwrap().unknown().is_empty());
    assert_eq!(
        std::fs::read_to_string(&curves_path)
            .unwrap()
            .lines()
            .count(),
        19
    );
    // A threshold outside (0, 1] and an unreadable recording are refused with status 2.
    for bad in [vec!["--threshold", "1.5"], vec![]] {
        let mut cmd = analyzer();
        cmd.arg("prune").args(&bad);
        cmd.arg(if bad.is_empty() {
            tmp("missing.csv")
        } else {
            a.clone()
        });
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
    cleanup();
}

#[test]
fn runs_of_one_workload_are_averaged_and_the_metric_set_is_generated() {
    // Instructions follow CPU time in two of the workload's three runs: averaged, |r| ≈ 2/3
    // and the counter is redundant. Given as three workloads, run B alone selects it.
    let (a1, a2, b) = (tmp("w-a1.csv"), tmp("w-a2.csv"), tmp("w-b.csv"));
    std::fs::write(&a1, csv_run(true, 11)).unwrap();
    std::fs::write(&a2, csv_run(true, 12)).unwrap();
    std::fs::write(&b, csv_run(false, 13)).unwrap();
    let named: Vec<String> = [&a1, &a2, &b]
        .iter()
        .map(|p| format!("train={}", p.display()))
        .collect();
    let config = tmp("analyzer.yml");
    std::fs::write(
        &config,
        "source:\n  prometheus:\n    url: http://127.0.0.1:9090\nmetrics:\n  \
         - expr: rate(reveal_cpu_time_seconds_total{mode!=\"idle\"}[1s])\n    subsystem: cpu\n  \
         - expr: rate(reveal_cpu_instructions_total[1s]) / rate(reveal_cpu_cycles_total[1s])\n    \
         name: ipc\n    subsystem: cpu\n  \
         # BEGIN generated by reveal-analyzer prune\n  \
         # END generated by reveal-analyzer prune\n",
    )
    .unwrap();
    let mut workload = args(vec![], "w");
    workload.inputs = named;
    workload.per_series = false;
    let summary = run_cli(&workload).unwrap();
    assert!(summary.contains("1 workloads of 3 runs"), "{summary}");
    assert!(summary.contains("  train: 3 runs, 8 channels"), "{summary}");
    let verdicts = std::fs::read_to_string(tmp("w-verdicts.jsonl")).unwrap();
    let ins: serde_json::Value = verdicts
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["channel"] == INS)
        .unwrap();
    assert_eq!(ins["reason"], "redundant", "{ins}");
    let r = ins["abs_r"].as_f64().unwrap();
    assert!(r > 0.5 && r < 0.8, "averaged |r| {r}");

    let mut separate = args(vec![a1, a2, b], "s");
    separate.per_series = false;
    let summary = run_cli(&separate).unwrap();
    assert!(summary.contains("3 workloads of 3 runs"), "{summary}");
    let verdicts = std::fs::read_to_string(tmp("s-verdicts.jsonl")).unwrap();
    assert!(verdicts.lines().any(|l| l
        .contains(&format!("\"channel\":{}", serde_json::json!(INS)))
        && l.contains("\"selected\"")));

    // With the metric set: a hand-written ratio reads the instruction counter, so it stays in
    // the selection though it is redundant.
    workload.metric_set_into = Some(config.clone());
    run_cli(&workload).unwrap();
    let verdicts = std::fs::read_to_string(tmp("w-verdicts.jsonl")).unwrap();
    assert!(verdicts.lines().any(|l| l
        .contains(&format!("\"channel\":{}", serde_json::json!(INS)))
        && l.contains("\"read by the metric set\"")));
    let sel = Selection::load(&tmp("w-selection.yml")).unwrap();
    assert!(sel.wants("reveal_cpu_instructions_total"));

    // The metric set: CPU time is read by the hand-written entry; packets are read on every
    // device (eth1's were kept, eth0's not: the device is which unit, not what); the error
    // counter that never moved is kept as an event rate; the file still loads as a config.
    let text = std::fs::read_to_string(&config).unwrap();
    let cfg = reveal_analyzer::config::Config::parse(&text, &config).unwrap();
    let exprs: Vec<&str> = cfg.metrics.iter().map(|m| m.expr.as_str()).collect();
    assert_eq!(
        exprs
            .iter()
            .filter(|e| e.contains("reveal_cpu_time_seconds_total"))
            .count(),
        1
    );
    assert!(
        exprs.contains(&"rate(reveal_network_receive_packets_total[1s])"),
        "{text}"
    );
    assert!(exprs.contains(&"reveal_memory_dirty_bytes"), "{text}");
    let err = cfg
        .metrics
        .iter()
        .find(|m| m.expr == "rate(reveal_network_receive_errors_total[1s])")
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(err.subsystem, "network");
    assert!(text.contains("# Read by the entries above: reveal_cpu_time_seconds_total."));
    cleanup();
}

#[test]
fn the_metric_set_is_written_again_from_verdicts_at_the_stacks_cadences() {
    // One workload's verdicts, then the metric set written from them alone, first as before
    // (every counter over 1 s), then with a fast page that serves eth's packets but not the
    // error counter: the errors are read over two of the slow job's scrapes.
    let (a, b) = (tmp("v-a.csv"), tmp("v-b.csv"));
    std::fs::write(&a, csv_run(true, 21)).unwrap();
    std::fs::write(&b, csv_run(false, 22)).unwrap();
    let block = "source:\n  prometheus:\n    url: http://127.0.0.1:9090\n\
                 metrics:\n  - expr: rate(reveal_cpu_time_seconds_total[1s])\n    subsystem: cpu\n  \
                 # BEGIN generated by reveal-analyzer prune\n  \
                 # END generated by reveal-analyzer prune\n";
    let config = tmp("v-analyzer.yml");
    std::fs::write(&config, block).unwrap();
    let mut direct = args(vec![a, b], "v");
    direct.per_series = false;
    direct.metric_set_into = Some(config.clone());
    run_cli(&direct).unwrap();
    let from_recordings = std::fs::read_to_string(&config).unwrap();

    std::fs::write(&config, block).unwrap();
    let mut again = args(vec![], "v2");
    again.per_series = false;
    again.curves = None;
    again.from_verdicts = Some(tmp("v-verdicts.jsonl"));
    again.metric_set_into = Some(config.clone());
    let summary = run_cli(&again).unwrap();
    assert!(summary.contains("the verdicts in "), "{summary}");
    let from_verdicts = std::fs::read_to_string(&config).unwrap();
    // The same entries; only the header says where they came from.
    let entries = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.trim_start().starts_with("# Correlation"))
            .map(String::from)
            .collect()
    };
    assert_eq!(entries(&from_verdicts), entries(&from_recordings));
    assert!(from_verdicts.contains("'rate(reveal_network_receive_errors_total[1s])'"));

    let fast = tmp("v-fast.yml");
    std::fs::write(
        &fast,
        "metrics:\n  - reveal_network_receive_packets_total\n",
    )
    .unwrap();
    std::fs::write(&config, block).unwrap();
    again.fast_selection = Some(fast);
    run_cli(&again).unwrap();
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.contains("'rate(reveal_network_receive_packets_total[1s])'"),
        "{text}"
    );
    // The errors are stored every 15 s: listed, not watched.
    assert!(
        !text.contains("expr: 'rate(reveal_network_receive_errors_total"),
        "{text}"
    );
    assert!(
        text.contains("not scored in 3 s windows: ")
            && text.contains("reveal_network_receive_errors_total"),
        "{text}"
    );
    reveal_analyzer::config::Config::parse(&text, &config).unwrap();

    std::fs::write(&config, block).unwrap();
    again.slow_range = Some("30s".into());
    run_cli(&again).unwrap();
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.contains("'rate(reveal_network_receive_errors_total[30s])'"),
        "{text}"
    );
    reveal_analyzer::config::Config::parse(&text, &config).unwrap();

    again.slow_range = Some("30".into());
    assert!(run_cli(&again).unwrap_err().contains("--slow-range"));
    again.slow_range = None;
    again.from_verdicts = Some(tmp("missing.jsonl"));
    assert!(run_cli(&again).unwrap_err().contains("missing.jsonl"));
    cleanup();
}
