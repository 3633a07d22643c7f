//! The analyzer's range-query client against a real Prometheus (exact values back, long ranges
//! split and stitched, API errors typed) and against a server that answers junk.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reveal_analyzer::http::{HttpClient, HttpClientConfig};
use reveal_analyzer::ingest::kinds::MetricSpec;
use reveal_analyzer::ingest::promapi::{PromClient, PromError};
use reveal_analyzer::ingest::prometheus::PrometheusSource;
use reveal_analyzer::ingest::TimeRange;
use reveal_analyzer::outputs::remote_write::{Batch, RemoteWriter};
use reveal_e2e::prometheus::{self, Prometheus};
use reveal_e2e::recorder::Recorder;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn client() -> HttpClient {
    let config = HttpClientConfig {
        timeout: reveal_analyzer::config::PromDuration(Duration::from_secs(5)),
        ..Default::default()
    };
    HttpClient::new(&config).unwrap()
}

#[test]
fn range_queries_return_every_host_exactly_and_split_long_ranges() {
    if prometheus::available().is_none() {
        return;
    }
    let prom = Prometheus::with_config("global:\n  scrape_interval: 1m\n").start();
    let rt = runtime();
    // 20 minutes of 100 ms samples for two hosts: 12,000 steps, more than one query may hold.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let end = now / 100 * 100 - 1000;
    let n = 12_000;
    let start = end - (n - 1) * 100;
    let mut writer = RemoteWriter::new(client(), format!("{}/api/v1/write", prom.url()), 1 << 20);
    for chunk in 0..4 {
        let mut b = Batch::default();
        for i in (chunk * n / 4)..((chunk + 1) * n / 4) {
            for (host, scale) in [("a:1", 1.0), ("b:1", -1.0)] {
                b.add(
                    "probe_value",
                    &[("instance", host), ("cpu", "0")],
                    start + i * 100,
                    scale * i as f64,
                );
            }
        }
        rt.block_on(writer.write(b)).expect("remote write");
    }

    let pc = PromClient::new(client(), &prom.url());
    let m = rt
        .block_on(pc.query_range("probe_value", start, end, 100))
        .expect("query_range");
    assert_eq!(
        m.series.len(),
        2,
        "{:?}",
        m.series.iter().map(|s| &s.labels).collect::<Vec<_>>()
    );
    for s in &m.series {
        let sign = if s.labels["instance"] == "a:1" {
            1.0
        } else {
            -1.0
        };
        assert_eq!(s.labels["cpu"], "0");
        assert_eq!(s.samples.len(), n as usize);
        for (i, (t, v)) in s.samples.iter().enumerate() {
            assert_eq!(*t, start + i as i64 * 100);
            assert_eq!(*v, sign * i as f64, "{} at step {i}", s.labels["instance"]);
        }
    }

    // An expression with a function drops __name__ but keeps the host label.
    let m = rt
        .block_on(pc.query_range("probe_value * 2", end - 900, end, 100))
        .unwrap();
    assert!(m
        .series
        .iter()
        .all(|s| !s.labels.contains_key("__name__") && s.labels.contains_key("instance")));

    let e = rt
        .block_on(pc.query_range("rate(probe_value[", end - 900, end, 100))
        .unwrap_err();
    assert!(
        matches!(&e, PromError::Api { error_type, status: 400, .. } if error_type == "bad_data"),
        "{e}"
    );
    assert!(!e.is_retryable());

    // Consecutive passes as the service makes them (3 s windows, 1 s stride): a source that
    // keeps its previous answers and queries only the new points gives exactly what a fresh
    // source, asking for the whole span, gives.
    let spec = |expr: &str| MetricSpec {
        expr: expr.into(),
        name: None,
        subsystem: "cpu".into(),
        kind: None,
        resolution: None,
        device_label: None,
        max_rate: None,
    };
    let specs = [spec("probe_value"), spec("rate(probe_value[1s])")];
    let source = || PrometheusSource::new(pc.clone(), &specs, 100, "instance").unwrap();
    let mut kept = source();
    let pass = |after: i64| TimeRange {
        start_ms: after + 1000 - 3000 - 100,
        end_ms: after + 1000 + 100,
    };
    let first = (end - 60_000) / 1000 * 1000;
    for k in 0..30 {
        let range = pass(first + k * 1000);
        let reused = rt.block_on(kept.fetch_async(range)).unwrap();
        let whole = rt.block_on(source().fetch_async(range)).unwrap();
        assert_eq!(reused.len(), 2);
        for (r, w) in reused.iter().zip(&whole) {
            assert_eq!(
                (&r.host, r.start_ms, r.n_channels()),
                (&w.host, w.start_ms, w.n_channels())
            );
            let same = r.values.shape() == w.values.shape()
                && r.values
                    .iter()
                    .zip(&w.values)
                    .all(|(a, b)| a == b || a.is_nan() && b.is_nan());
            assert!(
                same,
                "pass {k}, host {}:\n{:?}\n{:?}",
                r.host, r.values, w.values
            );
        }
    }
}

#[test]
fn junk_and_5xx_answers_are_typed_errors() {
    let junk = Recorder::start();
    let pc = PromClient::new(client(), &junk.url());
    let rt = runtime();

    junk.respond(|_| (503, b"<html>Service Unavailable</html>".to_vec()));
    let e = rt.block_on(pc.query_range("up", 0, 1000, 100)).unwrap_err();
    assert!(
        matches!(e, PromError::Parse { status: 503, .. }) && e.is_retryable(),
        "{e}"
    );

    junk.respond(|_| (200, b"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{}".to_vec()));
    let e = rt.block_on(pc.query_range("up", 0, 1000, 100)).unwrap_err();
    assert!(matches!(e, PromError::Parse { status: 200, .. }), "{e}");

    junk.respond(|_| (200, vec![0xff; 4096]));
    assert!(rt.block_on(pc.query_range("up", 0, 1000, 100)).is_err());

    // The request itself is what Prometheus expects: a form POST to /api/v1/query_range.
    let r = &junk.requests()[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/api/v1/query_range")
    );
    assert_eq!(
        String::from_utf8_lossy(&r.body),
        "query=up&start=0.000&end=1.000&step=100ms"
    );
}
