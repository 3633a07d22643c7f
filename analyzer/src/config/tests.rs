use super::*;

const EXAMPLE: &str = include_str!("../../examples/analyzer.yml");

fn minimal() -> String {
    "source:\n  prometheus:\n    url: http://127.0.0.1:9090\nmetrics:\n  - expr: up\n    subsystem: cpu\n".to_string()
}

fn refused(text: &str) -> ConfigError {
    Config::parse(text, Path::new("cfg.yml")).expect_err("config accepted")
}

#[test]
fn example_config_loads_with_every_section() {
    let c = Config::parse(EXAMPLE, Path::new("analyzer.yml")).unwrap();
    let p = c.source.prometheus.as_ref().unwrap();
    assert_eq!(p.host_label, "instance");
    assert_eq!(c.analysis.window.0, Duration::from_secs(3));
    assert_eq!(
        c.outputs.alertmanager.unwrap().urls,
        vec!["http://127.0.0.1:9093"]
    );
    assert!(c.metrics.len() > 5);
    assert_eq!(c.metrics[0].channel_name(), "reveal_cpu_time_seconds_total");
}

#[test]
fn defaults_apply_to_a_minimal_config() {
    let c = Config::parse(&minimal(), Path::new("m.yml")).unwrap();
    assert_eq!(c.analysis, AnalysisConfig::default());
    assert_eq!(c.analysis.step.0, Duration::from_millis(100));
    assert_eq!(c.analysis.baseline.0, Duration::from_secs(1800));
    assert_eq!(c.source.prometheus.unwrap().host_label, "instance");
    assert_eq!(c.listen_address.port(), 19191);
    assert!(c.outputs.remote_write.is_none());
}

#[test]
fn unknown_key_is_refused_with_file_and_line() {
    let text = minimal().replace("    url:", "    urll: x\n    url:");
    let e = refused(&text);
    assert_eq!(e.line, Some(3));
    assert!(e.msg.contains("unknown field `urll`"), "{}", e.msg);
    assert!(e.to_string().starts_with("cfg.yml:3: "), "{e}");
}

#[test]
fn type_errors_carry_the_line() {
    let e = refused(&(minimal() + "analysis:\n  window: three seconds\n"));
    assert_eq!(e.line, Some(8), "{e}");
    assert!(e.msg.contains("not a duration"), "{e}");
    let e = refused(&(minimal() + "listen_address: nowhere\n"));
    assert_eq!(e.line, Some(7), "{e}");
}

#[test]
fn window_shorter_than_stride_names_the_window_line() {
    let e = refused(&(minimal() + "analysis:\n  stride: 5s\n  window: 2s\n"));
    assert_eq!(e.line, Some(9), "{e}");
    assert!(e.msg.starts_with("analysis.window:"), "{e}");
    assert!(e.msg.contains("shorter than stride 5s"), "{e}");
}

#[test]
fn semantic_errors_in_lists_point_at_the_item() {
    let text = minimal() + "  - expr: up\n    subsystem: disk\n";
    let e = refused(&text);
    assert_eq!(e.line, Some(8), "{e}");
    assert!(e.msg.contains("metrics.1.subsystem"), "{e}");
}

#[test]
fn missing_and_conflicting_sources_are_refused() {
    let e = refused("metrics:\n  - expr: up\n    subsystem: cpu\n");
    assert!(e.msg.contains("missing field `source`"), "{e}");
    let both = minimal().replace(
        "source:\n",
        "source:\n  scrape:\n    targets: [http://h:1/metrics]\n",
    );
    let e = refused(&both);
    assert_eq!(e.line, Some(1), "{e}");
    assert!(e.msg.contains("exactly one"), "{e}");
}

#[test]
fn conflicting_credentials_are_refused() {
    let text = minimal().replace(
        "    url: http://127.0.0.1:9090\n",
        "    url: http://127.0.0.1:9090\n    bearer_token: a\n    basic_auth:\n      username: u\n",
    );
    let e = refused(&text);
    assert!(e.msg.contains("at most one"), "{e}");
    let text = minimal().replace(
        "    url: http://127.0.0.1:9090\n",
        "    url: http://127.0.0.1:9090\n    basic_auth:\n      username: u\n      password: p\n      password_file: /f\n",
    );
    let e = refused(&text);
    assert_eq!(e.line, Some(7), "{e}");
}

#[test]
fn bad_urls_are_refused() {
    let e = refused(&minimal().replace("http://127.0.0.1:9090", "localhost:9090"));
    assert_eq!(e.line, Some(3), "{e}");
    assert!(e.msg.contains("source.prometheus.url"), "{e}");
}

#[test]
fn load_names_a_missing_file() {
    let e = Config::load(Path::new("/nonexistent/analyzer.yml")).unwrap_err();
    assert!(
        e.to_string().starts_with("/nonexistent/analyzer.yml: "),
        "{e}"
    );
}

#[test]
fn key_lines_handles_compact_and_indented_lists() {
    let text = "a:\n  b: 1\n  c:\n  - x: 1\n    y: 2\n  - x: 3\nd:\n    - 1\n    - {k: v}\n";
    let l = key_lines(text);
    assert_eq!(l["a.b"], 2);
    assert_eq!(l["a.c.0.y"], 5);
    assert_eq!(l["a.c.1.x"], 6);
    assert_eq!(l["d.1"], 9);
}

#[test]
fn garbage_never_panics() {
    for text in [
        "",
        ":",
        "- - -",
        "source: [",
        "\u{0}",
        "metrics: 5",
        "a:\n\t- b",
        "- : :\n  - :",
    ] {
        let _ = Config::parse(text, Path::new("g.yml"));
        let _ = key_lines(text);
    }
}

#[test]
fn the_stack_config_loads() {
    let text = include_str!("../../../deploy/analyzer.yml");
    let c = Config::parse(text, Path::new("deploy/analyzer.yml")).unwrap();
    assert!(c.outputs.alertmanager.is_some() && c.outputs.remote_write.is_some());
    let names: Vec<String> = c.metrics.iter().map(MetricSpec::channel_name).collect();
    assert!(
        names.contains(&"reveal_cpu_instructions_per_cycle".to_string()),
        "{names:?}"
    );
    assert!(
        names.contains(&"reveal_storage_written_bytes_total".to_string()),
        "{names:?}"
    );
}

#[test]
fn stride_and_window_must_be_whole_steps() {
    // 3s of 100ms steps is fine, but windows starting every 150ms cannot sit on the grid.
    let e = refused(&(minimal() + "analysis:\n  step: 100ms\n  stride: 150ms\n"));
    assert_eq!(e.line, Some(9), "{e}");
    assert!(
        e.msg
            .starts_with("analysis.stride: 150ms is not a whole number of steps of 100ms"),
        "{e}"
    );
    let e = refused(&(minimal() + "analysis:\n  window: 3050ms\n  step: 100ms\n"));
    assert_eq!(e.line, Some(8), "{e}");
    assert!(e.msg.starts_with("analysis.window: 3s50ms is not"), "{e}");
    // Whole multiples of an uncommon step pass, and are what the engine will lay.
    let c = Config::parse(
        &(minimal() + "analysis:\n  step: 250ms\n  window: 2500ms\n  stride: 750ms\n"),
        Path::new("m.yml"),
    )
    .unwrap();
    assert_eq!(c.analysis.window_config().samples(), 10);
    assert_eq!(c.analysis.window_config().stride(), 3);
}

#[test]
fn detector_parameters_are_checked_with_their_key() {
    let e = refused(
        &(minimal() + "analysis:\n  detectors:\n    zscore:\n      threshold_percentile: 100\n"),
    );
    assert_eq!(e.line, Some(10), "{e}");
    assert_eq!(
        e.msg,
        "analysis.detectors.zscore.threshold_percentile: must be in (0, 100), got 100"
    );
    let e = refused(
        &(minimal()
            + "analysis:\n  detectors:\n    zscore:\n      aggregate: max\n    pca:\n      score: mahalanobis\n      scaling: !residual {max_rank: 8}\n"),
    );
    assert_eq!(e.line, Some(13), "{e}");
    assert!(e.msg.starts_with("analysis.detectors.pca.scaling: "), "{e}");
    // A value nested in a tag names the line of its key.
    let e = refused(
        &(minimal() + "analysis:\n  detectors:\n    iforest:\n      input: !top_z {m: 0}\n"),
    );
    assert_eq!(e.line, Some(10), "{e}");
    assert!(
        e.msg.starts_with("analysis.detectors.iforest.input."),
        "{e}"
    );
    // The defaults and the paper's configuration both pass.
    for d in [
        crate::core::detect::DetectorsConfig::default(),
        crate::core::detect::DetectorsConfig::literal(),
    ] {
        let mut c = Config::parse(&minimal(), Path::new("m.yml")).unwrap();
        c.analysis.detectors = Some(d);
        assert_eq!(c.check(), Ok(()));
    }
}

/// Names of the metrics an expression reads: `reveal_*` identifiers outside label values,
/// and the names a `__name__` matcher selects. A regex matcher may only be a plain name or
/// `prefix(a|b|…)suffix`, so that each name it selects can be listed; anything else fails
/// the test instead of going unchecked.
fn referenced_metrics(expr: &str) -> Vec<String> {
    let plain = |s: &str| s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(c) = rest.chars().next() {
        if c == '"' || c == '\'' {
            let end = rest[1..].find(c).map_or(rest.len(), |i| i + 2);
            let value = &rest[1..end - 1];
            let before = expr[..expr.len() - rest.len()].trim_end();
            if before.ends_with("__name__=~") || before.ends_with("__name__=") {
                // Top-level alternatives (`a|b_(c|d)`), each a plain name or one group.
                let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
                for (i, ch) in value.char_indices() {
                    match ch {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        '|' if depth == 0 => {
                            parts.push(&value[start..i]);
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
                parts.push(&value[start..]);
                for part in parts {
                    match part.split_once('(') {
                        Some((pre, tail)) => {
                            let (alts, post) = tail.split_once(')').expect(value);
                            assert!(plain(pre) && plain(post), "unsupported regex {value:?}");
                            for alt in alts.split('|') {
                                assert!(plain(alt), "unsupported regex {value:?}");
                                out.push(format!("{pre}{alt}{post}"));
                            }
                        }
                        None => {
                            assert!(plain(part), "unsupported regex {value:?}");
                            out.push(part.to_string());
                        }
                    }
                }
            }
            rest = &rest[end.min(rest.len())..];
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let len = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            if rest.starts_with("reveal_") {
                out.push(rest[..len].to_string());
            }
            rest = &rest[len..];
        } else {
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

#[test]
fn shipped_configs_read_only_metrics_the_exporter_has() {
    let known: std::collections::HashSet<String> = reveal_schema::catalog::METRICS
        .iter()
        .map(|m| m.name.to_string())
        .collect();
    assert_eq!(
        referenced_metrics(
            "rate(reveal_a_total{mode!=\"reveal_b\"}[1s]) / {__name__=~\"reveal_c_(d|e)_bytes\"}"
        ),
        ["reveal_a_total", "reveal_c_d_bytes", "reveal_c_e_bytes"]
    );
    assert_eq!(
        referenced_metrics("{__name__=~\"reveal_f|reveal_g_(h|i)_ratio|reveal_j\"}"),
        [
            "reveal_f",
            "reveal_g_h_ratio",
            "reveal_g_i_ratio",
            "reveal_j"
        ]
    );
    for (file, text) in [
        ("analyzer/examples/analyzer.yml", EXAMPLE),
        (
            "deploy/analyzer.yml",
            include_str!("../../../deploy/analyzer.yml"),
        ),
    ] {
        let c = Config::parse(text, Path::new(file)).unwrap();
        let mut checked = 0;
        for m in &c.metrics {
            for name in referenced_metrics(&m.expr) {
                assert!(
                    known.contains(&name),
                    "{file}: {name} (in {:?}) is not a metric of the exporter",
                    m.expr
                );
                checked += 1;
            }
        }
        assert!(
            checked >= c.metrics.len(),
            "{file}: only {checked} names found"
        );
    }
}

#[test]
fn detector_presets_by_name() {
    let parse = |v: &str| {
        Config::parse(
            &(minimal() + &format!("analysis:\n  detectors: {v}\n")),
            Path::new("m.yml"),
        )
    };
    assert_eq!(
        parse("literal").unwrap().analysis.detectors,
        Some(crate::core::detect::DetectorsConfig::literal())
    );
    assert_eq!(
        parse("default").unwrap().analysis.detectors,
        Some(crate::core::detect::DetectorsConfig::default())
    );
    let e = parse("paper").unwrap_err();
    assert!(e.msg.contains("unknown detector preset `paper`"), "{e}");
    // The defaults as docs/analyzer-config.md writes them out.
    let written = "\n    zscore:  {scaling: bulk, aggregate: !top_k 5, threshold_percentile: 99}\n    pca:     {scaling: bulk, components: !signal {max_rank: 64},\n              solver: !randomized {power_iters: 2}, score: !top_k 5, threshold_percentile: 99}\n    iforest: {n_trees: 100, max_samples: 256, scaling: bulk, input: channels,\n              threshold_percentile: 99}\n    trim: true";
    assert_eq!(
        parse(written).unwrap().analysis.detectors,
        Some(crate::core::detect::DetectorsConfig::default())
    );
}

#[test]
fn windows_and_baselines_too_large_to_hold_are_refused_by_key() {
    // A day-long window of 1 ms steps would be 86 million samples per channel.
    let e = refused(&(minimal() + "analysis:\n  step: 1ms\n  window: 1d\n  stride: 1s\n"));
    assert!(
        e.msg
            .starts_with("analysis.window: 1d holds more than 100000 steps of 1ms"),
        "{e}"
    );
    let e = refused(&(minimal() + "analysis:\n  baseline: 2d\n  warmup: 5m\n"));
    assert!(
        e.msg
            .starts_with("analysis.baseline: 2d holds more than 50000 windows 1s apart"),
        "{e}"
    );
    // The largest accepted: a day at a 5 s stride.
    let ok = minimal() + "analysis:\n  baseline: 1d\n  stride: 5s\n  window: 5s\n";
    Config::parse(&ok, Path::new("cfg.yml")).expect("a day at 5 s is accepted");
}

#[test]
fn body_size_limits_have_a_default_per_block_and_parse_prometheus_sizes() {
    let c = Config::parse(
        &(minimal()
            + "outputs:\n  alertmanager:\n    urls: [http://127.0.0.1:9093]\n    body_size_limit: 0\n"),
        Path::new("m.yml"),
    )
    .unwrap();
    let p = c.source.prometheus.as_ref().unwrap().http_client();
    assert_eq!(p.body_size_limit, crate::http::ByteSize(1 << 30));
    let am = c.outputs.alertmanager.unwrap().http_client();
    assert_eq!(am.body_size_limit.limit(), None);

    let text = minimal().replace("    url:", "    body_size_limit: 2MB\n    url:");
    let c = Config::parse(&text, Path::new("m.yml")).unwrap();
    let p = c.source.prometheus.unwrap().http_client();
    assert_eq!(p.body_size_limit.limit(), Some(2 << 20));

    let text = minimal().replace("    url:", "    body_size_limit: lots\n    url:");
    let e = refused(&text);
    assert_eq!(e.line, Some(3), "{e}");
    assert!(e.msg.contains("is not a size"), "{e}");
}

#[test]
fn episode_parameters_are_checked_with_their_key() {
    let e = refused(&(minimal() + "analysis:\n  episodes:\n    clear: 0.5\n"));
    assert_eq!(
        e.msg,
        "analysis.episodes.clear: 0.5 is not a number of at least 1"
    );
    let e = refused(&(minimal() + "analysis:\n  episodes:\n    open_after: 0\n"));
    assert_eq!(e.msg, "analysis.episodes.open_after: must be at least 1");
    // Waiting less for marginal evidence than for clear evidence is the old single rule.
    let c = Config::parse(
        &(minimal() + "analysis:\n  episodes:\n    open_after: 4\n    confirm_after: 1\n"),
        Path::new("m.yml"),
    )
    .unwrap();
    assert_eq!(c.analysis.episodes.confirm_after, 1);
}

#[test]
fn a_shard_is_read_and_a_bad_one_refused_with_its_line() {
    let text = minimal().replace("    url:", "    shard: 2/3\n    url:");
    let c = Config::parse(&text, Path::new("s.yml")).unwrap();
    let shard = c.source.prometheus.unwrap().shard.unwrap();
    assert_eq!((shard.index, shard.count), (2, 3));
    let e = refused(&minimal().replace("    url:", "    shard: 3/3\n    url:"));
    assert_eq!(e.line, Some(3), "{e}");
    assert!(e.msg.contains("not a shard"), "{e}");
}

#[test]
fn forgetting_a_host_before_its_episode_ends_is_refused() {
    let e = refused(&(minimal() + "analysis:\n  forget_host_after: 2s\n"));
    assert!(e.msg.starts_with("analysis.forget_host_after:"), "{e}");
    let c = Config::parse(
        &(minimal() + "analysis:\n  forget_host_after: 1h\n"),
        Path::new("f.yml"),
    );
    assert_eq!(
        c.unwrap().analysis.forget_host_after.0,
        Duration::from_secs(3600)
    );
}

/// The configurations for clusters that run node_exporter (and dcgm-exporter) instead of
/// reveal-exporter: they load, read those exporters' names, say the subsystem and kind of
/// every entry, and split hosts by `instance` (tests/analyzer_node_exporter.rs runs them).
#[test]
fn the_adoption_configs_load() {
    for (file, text, gpu) in [
        (
            "deploy/analyzer-node-exporter.yml",
            include_str!("../../../deploy/analyzer-node-exporter.yml"),
            false,
        ),
        (
            "deploy/analyzer-dcgm.yml",
            include_str!("../../../deploy/analyzer-dcgm.yml"),
            true,
        ),
    ] {
        let c = Config::parse(text, Path::new(file)).unwrap();
        assert_eq!(c.source.prometheus.as_ref().unwrap().host_label, "instance");
        assert!(c.outputs.alertmanager.is_some() && c.outputs.remote_write.is_some());
        let names: Vec<String> = c.metrics.iter().map(MetricSpec::channel_name).collect();
        for want in ["node_cpu_busy_cores", "node_disk_written_bytes_total"] {
            assert!(names.iter().any(|n| n == want), "{file}: {names:?}");
        }
        assert_eq!(
            names.iter().any(|n| n == "DCGM_FI_DEV_GPU_UTIL"),
            gpu,
            "{file}: {names:?}"
        );
        for m in &c.metrics {
            assert!(m.kind.is_some(), "{file}: no kind: {m:?}");
            assert!(!m.expr.contains("reveal_"), "{file}: {m:?}");
            // A series that keeps its name is classified by the entry of that name: a
            // `{__name__=~"…"}` entry's subsystem, kind and resolution would not apply.
            assert!(!m.expr.contains("__name__"), "{file}: {m:?}");
            let dcgm = m.channel_name().starts_with("DCGM_");
            assert_eq!(m.subsystem == "gpu", dcgm, "{file}: {m:?}");
        }
    }
}
