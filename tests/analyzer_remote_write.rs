//! The analyzer's remote-write client against a real Prometheus with its receiver on: the
//! anomaly series written are queryable, with their labels, values and window timestamps.

use std::time::{SystemTime, UNIX_EPOCH};

use reveal_analyzer::http::{HttpClient, HttpClientConfig};
use reveal_analyzer::outputs::remote_write::{Batch, RemoteWriter, WindowPoint};
use reveal_e2e::prometheus::{self, Prometheus};
use reveal_e2e::{free_port, loopback};

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn anomaly_series_written_are_queryable() {
    if prometheus::available().is_none() {
        return;
    }
    let prom = Prometheus::with_config("global:\n  scrape_interval: 1m\n").start();
    let client = HttpClient::new(&HttpClientConfig::default()).unwrap();
    let mut writer = RemoteWriter::new(client, format!("{}/api/v1/write", prom.url()), 1000);

    // Ten windows of two hosts, one second apart, ending a little before now.
    let end = now_ms() - 2_000;
    let mut batch = Batch::default();
    for host in ["a:9100", "b:9100"] {
        for i in 0..10 {
            let t = end - (9 - i) * 1000;
            let flagged = host == "a:9100" && i == 9;
            let pca = if flagged {
                3.5
            } else {
                0.25 + i as f64 / 100.0
            };
            let scores = [("zscore", 0.5), ("pca", pca), ("iforest", 0.75)];
            let subs = [("cpu", if flagged { 0.75 } else { 0.0 }), ("storage", 0.0)];
            batch.add_window(&WindowPoint {
                instance: host,
                end_ms: t,
                scores: &scores,
                agreement: u32::from(flagged),
                subsystems: &subs,
            });
        }
        batch.add_deviation(
            host,
            "memory",
            end,
            if host == "a:9100" { 4.0 } else { 0.5 },
        );
    }
    let samples = batch.samples();
    runtime()
        .block_on(writer.write(batch))
        .expect("remote write");
    assert_eq!(writer.stats().samples_sent, samples as u64);

    let at = format!("{:.3}", end as f64 / 1000.0);
    let v = |q: &str| -> Vec<(String, f64)> {
        let r = prom.api("query", &[("query", q), ("time", &at)]).unwrap();
        r["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["metric"].to_string(),
                    s["value"][1].as_str().unwrap().parse::<f64>().unwrap(),
                )
            })
            .collect()
    };
    let pca = v(r#"reveal_anomaly_score{instance="a:9100",detector="pca"}"#);
    assert_eq!(pca.len(), 1, "{pca:?}");
    assert_eq!(pca[0].1, 3.5);
    assert_eq!(
        v(r#"reveal_anomaly_agreement{instance="a:9100"}"#)[0].1,
        1.0
    );
    assert_eq!(
        v(r#"reveal_anomaly_subsystem{instance="a:9100",subsystem="cpu"}"#)[0].1,
        0.75
    );
    assert_eq!(
        v(r#"reveal_host_deviation{instance="a:9100",subsystem="memory"}"#)[0].1,
        4.0
    );
    // Every window is its own sample at its own timestamp.
    let counts = v(r#"count_over_time(reveal_anomaly_score{detector="zscore"}[9500ms])"#);
    assert_eq!(counts.len(), 2, "{counts:?}");
    assert!(counts.iter().all(|(_, n)| *n == 10.0), "{counts:?}");
    // Bounded cardinality: 3 detectors + agreement + 2 subsystems + 1 deviation per host.
    let series = v(r#"count({__name__=~"reveal_anomaly_.+|reveal_host_deviation"})"#);
    assert_eq!(series[0].1, 14.0);
}

#[test]
fn unreachable_prometheus_keeps_batches_bounded_and_counts_drops() {
    // A port nobody listens on: connection refused is retryable, so batches wait.
    let url = format!("http://{}/api/v1/write", loopback(free_port()));
    let client = HttpClient::new(&HttpClientConfig::default()).unwrap();
    let mut writer = RemoteWriter::new(client, url, 25);
    let rt = runtime();
    for i in 0..5 {
        let mut b = Batch::default();
        for j in 0..10 {
            b.add(
                "reveal_anomaly_agreement",
                &[("instance", "h")],
                i * 10 + j,
                0.0,
            );
        }
        let err = rt.block_on(writer.write(b)).expect_err("nothing listens");
        assert!(err.is_retryable(), "{err}");
    }
    let st = writer.stats();
    assert!(st.pending_samples <= 25, "{st:?}");
    assert_eq!(st.pending_samples + st.samples_dropped, 50, "{st:?}");
    assert!(st.failed_requests >= 5);
}
