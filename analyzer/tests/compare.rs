//! `reveal-analyzer compare` as a user runs it: two reports on disk, the real binary.

mod support;

use support::{analyzer, text};

#[test]
fn compares_two_reports_per_host_and_overall() {
    let dir = std::env::temp_dir().join(format!("reveal-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Report A (JSON lines, as `analyze --json` writes them): n1 has episodes [0, 10 s) and
    // [20 s, 30 s); n2 has [0, 5 s). Report B (CSV): n1 [5 s, 25 s), n2 nothing.
    let a = dir.join("a.jsonl");
    std::fs::write(
        &a,
        concat!(
            r#"{"type":"host","host":"n1","summary":{}}"#,
            "\n",
            r#"{"type":"episode","host":"n1","start_ms":0,"end_ms":10000}"#,
            "\n",
            r#"{"type":"episode","host":"n1","start_ms":20000,"end_ms":30000}"#,
            "\n",
            r#"{"type":"episode","host":"n2","start_ms":0,"end_ms":5000}"#,
            "\n"
        ),
    )
    .unwrap();
    let b = dir.join("b.csv");
    std::fs::write(&b, "start,end,host\n5000,25000,n1\n").unwrap();
    let out = analyzer()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // n1: intersection 5 + 5 = 10 s, union 20 + 20 − 10 = 30 s → IoU 1/3; both A segments hit.
    let n1 = &v["hosts"][0];
    assert_eq!(n1[0], "n1");
    assert!((n1[1]["iou"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(n1[1]["hit_by_count"], 1.0);
    assert_eq!(n1[1]["hit_by_length"], 0.5);
    // n2: B has nothing, so A's segment is missed and B's hit rates are undefined.
    let n2 = &v["hosts"][1];
    assert_eq!(n2[1]["hit_by_count"], 0.0);
    assert!(n2[1]["hit_by_count_b"].is_null());
    // Overall: intersection 10 s; L(A) = 25 s, L(B) = 20 s → IoU 10/35; 2 of 3 A segments hit.
    let all = &v["overall"];
    assert!((all["iou"].as_f64().unwrap() - 10.0 / 35.0).abs() < 1e-12);
    assert!((all["hit_by_count"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-12);
    // The Markdown table by default.
    let out = analyzer().arg("compare").arg(&a).arg(&b).output().unwrap();
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(
        md.contains("| n1 | 2 / 1 | 0.333 | 1.000 | 0.500 |"),
        "{md}"
    );
    // A missing or malformed file is a clear error with status 2, not a panic.
    let out = analyzer()
        .arg("compare")
        .arg(&a)
        .arg(dir.join("nope.csv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("nope.csv"));
    std::fs::write(dir.join("bad.csv"), "1,2\n3,x\n").unwrap();
    let out = analyzer()
        .arg("compare")
        .arg(&a)
        .arg(dir.join("bad.csv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("line 2"));
    std::fs::remove_dir_all(&dir).unwrap();
}
