//! `reveal-analyzer run` refuses a bad configuration before starting anything, naming the
//! file, the line and the reason, and accepts the shipped examples.

mod support;

use support::{analyzer, text};

fn temp_config(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("reveal-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("analyzer.yml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn shipped_configs_pass_check_config() {
    for rel in [
        "examples/analyzer.yml",
        "../deploy/analyzer.yml",
        "../deploy/analyzer-node-exporter.yml",
        "../deploy/analyzer-dcgm.yml",
    ] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
        let out = analyzer()
            .args(["run", "--check-config", "--config.file"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{rel}: {}", text(&out.stderr));
    }
}

#[test]
fn bad_config_is_refused_with_file_line_and_reason() {
    let yaml = "source:\n  prometheus:\n    url: http://127.0.0.1:9090\nmetrics:\n  - expr: up\n    subsystem: cpu\nanalysis:\n  stride: 5s\n  window: 2s\n";
    let p = temp_config("window", yaml);
    let out = analyzer()
        .args(["run", "--config.file"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("{}:9: analysis.window:", p.display())),
        "{err}"
    );
    assert!(err.contains("shorter than stride"), "{err}");

    let p = temp_config("typo", &yaml.replace("  stride: 5s\n", "  strides: 5s\n"));
    let out = analyzer()
        .args(["run", "--config.file"])
        .arg(&p)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{}:8:", p.display())) && err.contains("unknown field `strides`"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(p.parent().unwrap());
}

#[test]
fn missing_config_file_is_named() {
    let out = analyzer()
        .args(["run", "--config.file", "/nonexistent/reveal.yml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("/nonexistent/reveal.yml"));
}

#[test]
fn check_config_refuses_windows_off_the_step_grid_and_bad_detector_values() {
    let base = "source:\n  prometheus:\n    url: http://127.0.0.1:9090\nmetrics:\n  - expr: up\n    subsystem: cpu\nanalysis:\n  step: 100ms\n";
    for (name, tail, want) in [
        (
            "stride",
            "  stride: 150ms\n",
            ":9: analysis.stride: 150ms is not a whole number of steps",
        ),
        (
            "detector",
            "  detectors:\n    pca:\n      scaling: !residual {max_rank: 8}\n",
            ":11: analysis.detectors.pca.scaling:",
        ),
    ] {
        let p = temp_config(name, &format!("{base}{tail}"));
        let out = analyzer()
            .args(["run", "--check-config", "--config.file"])
            .arg(&p)
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(&format!("{}{want}", p.display())), "{err}");
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
    }
}
