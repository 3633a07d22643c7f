use proptest::prelude::*;

use super::*;
use crate::core::matrix::{Kind, Subsystem};
use crate::ingest::kinds::MetricSet;

const CAPTURE: &str = r#"# HELP reveal_cpu_seconds Time spent per CPU and mode.
# TYPE reveal_cpu_seconds counter
# UNIT reveal_cpu_seconds seconds
reveal_cpu_seconds_total{cpu="0",mode="user"} 100.0 1700000000.000
reveal_cpu_seconds_created{cpu="0",mode="user"} 1699990000.0 1700000000.000
# TYPE reveal_memory_dirty_bytes gauge
reveal_memory_dirty_bytes 4096 1700000000.000
# TYPE reveal_network_receive_drop counter
reveal_network_receive_drop_total{device="eth0"} 7 1700000000.000 # {trace_id="a"} 1 1700000000.0
# EOF
# TYPE reveal_cpu_seconds counter
reveal_cpu_seconds_total{mode="user",cpu="0"} 100.05 1700000000.100
# TYPE reveal_memory_dirty_bytes gauge
reveal_memory_dirty_bytes 8192 1700000000.100
reveal_network_receive_drop_total{device="eth0"} 9 1700000000.100
# EOF
"#;

fn opts() -> SourceOptions {
    SourceOptions::default()
}

#[test]
fn parses_a_capture_of_two_scrapes() {
    let hosts = parse_openmetrics(CAPTURE, &opts()).unwrap();
    assert_eq!(hosts.len(), 1);
    let m = &hosts[0];
    assert_eq!(m.host, "local");
    assert_eq!(m.start_ms, 1_700_000_000_000);
    assert_eq!(m.n_steps(), 2);
    let names: Vec<&str> = m.channels.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            r#"reveal_cpu_seconds_total{cpu="0",mode="user"}"#,
            "reveal_memory_dirty_bytes",
            r#"reveal_network_receive_drop_total{device="eth0"}"#
        ]
    );
    // Counter: increase per step; the first step has none.
    assert!(m.values[[0, 0]].is_nan());
    assert!((m.values[[0, 1]] - 0.05).abs() < 1e-9);
    assert_eq!(m.values[[1, 1]], 8192.0);
    assert_eq!(m.values[[2, 1]], 2.0);
    assert_eq!(m.channels[2].kind, Kind::Event);
    assert_eq!(m.channels[2].subsystem, Subsystem::Network);
    assert_eq!(m.channels[1].subsystem, Subsystem::Memory);
}

#[test]
fn prometheus_text_timestamps_are_milliseconds_and_hosts_split_by_instance() {
    let text = "# TYPE x_total counter\n\
        x_total{instance=\"a:9100\"} 1 1000\n\
        x_total{instance=\"b:9100\"} 5 1000\n\
        x_total{instance=\"a:9100\"} 3 1100\n\
        x_total{instance=\"b:9100\"} 6 1100\n\
        y{instance=\"b:9100\"} NaN 1100\n";
    let hosts = parse_openmetrics(text, &opts()).unwrap();
    assert_eq!(hosts.len(), 2);
    assert_eq!(
        (hosts[0].host.as_str(), hosts[1].host.as_str()),
        ("a:9100", "b:9100")
    );
    assert_eq!(hosts[0].start_ms, 1000);
    assert_eq!(hosts[0].values[[0, 1]], 2.0);
    assert_eq!(hosts[1].values[[0, 1]], 1.0);
    assert_eq!(hosts[1].channels[0].name, "x_total");
    assert_eq!(hosts[1].non_finite_samples, 1);
}

#[test]
fn a_recorded_disks_busy_time_grows_by_at_most_the_time_that_passed() {
    // Four scrapes 100 ms apart: the kernel's io_ticks adds a second in the third, no byte
    // moved. Without a metric set (a new user's recording) the default bound holds it.
    let text = "# TYPE reveal_storage_io_time_seconds counter\n\
        reveal_storage_io_time_seconds_total{device=\"vda\"} 7.000 1000\n\
        reveal_storage_io_time_seconds_total{device=\"vda\"} 7.004 1100\n\
        reveal_storage_io_time_seconds_total{device=\"vda\"} 8.004 1200\n\
        reveal_storage_io_time_seconds_total{device=\"vda\"} 8.010 1300\n";
    let m = &parse_openmetrics(text, &opts()).unwrap()[0];
    assert_eq!(m.channels[0].max_rate, Some(1.0));
    let row: Vec<f64> = m.values.row(0).to_vec();
    for (got, want) in row[1..].iter().zip([0.004, 0.1, 0.006]) {
        assert!((got - want).abs() < 1e-9, "{row:?}");
    }
    // An entry that says nothing of it keeps the default; one that sets it is followed.
    let set = MetricSet::parse(
        "metrics:\n  - expr: reveal_storage_io_time_seconds_total\n    subsystem: storage\n    \
         max_rate: 2\n",
        "m.yml",
    )
    .unwrap();
    let two = SourceOptions {
        metric_set: set,
        ..opts()
    };
    let m = &parse_openmetrics(text, &two).unwrap()[0];
    assert!((m.values[[0, 2]] - 0.2).abs() < 1e-9, "{:?}", m.values);
}

#[test]
fn channel_appearing_mid_run_is_nan_before() {
    let text = "a 1 0\na 2 100\nb 5 100\na 3 200\n";
    let m = &parse_openmetrics(text, &opts()).unwrap()[0];
    assert_eq!(m.n_steps(), 3);
    assert!(m.values[[1, 0]].is_nan());
    assert_eq!(m.values[[1, 1]], 5.0);
    assert!(m.values[[1, 2]].is_nan());
}

#[test]
fn errors_name_the_line() {
    for (text, line, what) in [
        ("a 1 0\nb 2\n", 2, "timestamp"),
        ("a 1 0\n{x=\"1\"} 2 0\n", 2, "metric name"),
        ("a{x=\"1} 1 0\n", 1, "unterminated"),
        ("a{x=1} 1 0\n", 1, "quoted"),
        ("a 1 0\na one 0\n", 2, "bad value"),
        ("# TYPE a flux\n", 1, "unknown type"),
        ("a 1 0 0\n", 1, "unexpected"),
        ("a 1 1700000000000\n# EOF\n", 1, "looks like milliseconds"),
    ] {
        let e = parse_openmetrics(text, &opts()).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with(&format!("line {line}:")), "{text:?}: {msg}");
        assert!(msg.contains(what), "{text:?}: {msg}");
    }
    assert!(matches!(
        parse_openmetrics("", &opts()),
        Err(SourceError::Empty)
    ));
    assert!(matches!(
        parse_openmetrics("# only comments\n", &opts()),
        Err(SourceError::Empty)
    ));
    assert!(matches!(
        parse_openmetrics("a NaN 0\n", &opts()),
        Err(SourceError::Empty)
    ));
}

/// A megabyte-long bad token is quoted as an excerpt: escaping all of it would cost more
/// than parsing the scrape, and the message would be a megabyte.
#[test]
fn errors_quote_an_excerpt_of_a_long_token() {
    let long = "x".repeat(1_000_000);
    for text in [
        format!("a {long} 0\n"),
        format!("a 1 {long}\n"),
        format!("a 1 0 {long}\n"),
        format!("a{{-{long}=\"1\"}} 1 0\n"),
        format!("# TYPE a {long}\n"),
        // 10^300 is finite: read as seconds it is a millisecond stamp, refused, and quoted.
        format!("a 1 1{zeros}\n# EOF\n", zeros = "0".repeat(300)),
    ] {
        let Err(e) = parse_openmetrics(&text, &opts()) else {
            panic!("accepted {:.40}", text);
        };
        let msg = e.to_string();
        // The message's own words and an 80-character excerpt, under the 300-byte cut.
        assert!(msg.len() < 300, "{} bytes: {:.120}", msg.len(), msg);
        assert!(msg.contains(" bytes)"), "{msg}");
    }
}

#[test]
fn label_escapes_are_kept_in_channel_names() {
    let m = &parse_openmetrics("a{p=\"x\\\"y\\\\z\"} 1 0\n", &opts()).unwrap()[0];
    assert_eq!(m.channels[0].name, "a{p=\"x\\\"y\\\\z\"}");
}

proptest! {
    #[test]
    fn never_panics_on_garbage(s in "\\PC*") {
        let _ = parse_openmetrics(&s, &opts());
    }

    #[test]
    fn never_panics_on_near_valid_lines(
        name in "[a-z_]{1,5}",
        labels in "[a-z=\",{} \\\\]{0,12}",
        v in "[-+0-9.eEInfNa]{0,6}",
        ts in "[-0-9.e]{0,8}",
    ) {
        let _ = parse_openmetrics(&format!("{name}{labels} {v} {ts}\n"), &opts());
    }
}
