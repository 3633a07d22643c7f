//! The live stack with the anomaly series written by this test (see the crate docs).

use crate::queries::*;
use crate::stack::Stack;
use reveal_analyzer::outputs::remote_write::{Batch, WindowPoint};
use reveal_e2e::http;
use reveal_e2e::prometheus::Prometheus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Posts a batch to Prometheus' remote-write receiver, as `reveal-analyzer run` does.
fn remote_write(prom: &Prometheus, batch: &Batch) {
    let body = batch.encode();
    let r = http::request(
        prom.addr(),
        "POST",
        "/api/v1/write",
        &[
            ("Content-Type", "application/x-protobuf"),
            ("Content-Encoding", "snappy"),
            ("X-Prometheus-Remote-Write-Version", "0.1.0"),
        ],
        &body,
    )
    .expect("remote write");
    assert!(
        r.status / 100 == 2,
        "remote write refused: {} {}",
        r.status,
        r.text()
    );
}

/// Writes the anomaly series of the stack once a second until `stop`.
fn write_anomaly_series(prom: &Prometheus, host: &str, stop: &AtomicBool) {
    // A host whose analysis stopped 90 s ago (RevealAnalysisStale).
    let mut stale = Batch::default();
    stale.add_window(&WindowPoint {
        instance: "stale-host:19190",
        end_ms: now_ms() - 90_000,
        scores: &[("zscore", 0.4)],
        agreement: 0,
        subsystems: &[],
    });
    remote_write(prom, &stale);
    let mut k = 0u32;
    while !stop.load(Ordering::Relaxed) {
        let t = now_ms();
        let wobble = f64::from(k % 5) * 0.05;
        let mut b = Batch::default();
        b.add_window(&WindowPoint {
            instance: host,
            end_ms: t,
            scores: &[
                ("zscore", 1.4 + wobble),
                ("pca", 1.2),
                ("iforest", 0.8 + wobble),
            ],
            // Every fourth window all three detectors agree.
            agreement: if k % 4 == 3 { 3 } else { 2 },
            subsystems: &[("cpu", 0.75), ("storage", 0.25)],
        });
        // Two analyzers claiming shard 0 of 3: shard 1 and 2 missing, shard 0 duplicated
        // (RevealAnalyzerShardMissing and RevealAnalyzerShardDuplicated).
        for analyzer in ["analyzer-a:19191", "analyzer-b:19191"] {
            b.add(
                "reveal_analyzer_shards",
                &[
                    ("instance", analyzer),
                    ("job", "reveal-analyzer"),
                    ("shard", "0"),
                ],
                t,
                3.0,
            );
        }
        for (h, memory, cpu) in [
            (host, 0.8, 1.1),
            ("peer-a:19190", 0.3, 0.9),
            ("peer-b:19190", 5.5 + wobble, 0.7),
        ] {
            b.add_deviation(h, "memory", t, memory);
            b.add_deviation(h, "cpu", t, cpu);
        }
        remote_write(prom, &b);
        k += 1;
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
fn every_query_returns_data_from_the_live_stack() {
    if reveal_e2e::prometheus::available().is_none()
        || reveal_e2e::alertmanager::available().is_none()
    {
        return;
    }
    let stack = Stack::start();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, prom_addr, host) = (stop.clone(), stack.prom.addr(), stack.host.clone());
        std::thread::spawn(move || write_anomaly_series(&Prometheus::at(prom_addr), &host, &stop))
    };
    struct StopOnDrop(Arc<AtomicBool>);
    impl Drop for StopOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let _stop = StopOnDrop(stop.clone());

    // A firing alert rule (RevealAnomalyDetected holds for 2 s), and rates over
    // $__rate_interval need that much history.
    stack.prom.wait_for_value(
        "count(ALERTS{alertname=\"RevealAnomalyDetected\",alertstate=\"firing\"})",
        |v| v >= 1.0,
        Duration::from_secs(60),
    );
    std::thread::sleep(Duration::from_secs(5));

    let promql = dashboard_queries();
    let all: Vec<Query> = promql
        .into_iter()
        .chain(rules().into_iter().map(|(_, q)| q))
        .chain(analyzer_queries())
        .collect();
    let outcome = stack.run(&all, |_| None);
    outcome.check(all.len());
    assert!(
        outcome.ok * 2 > all.len(),
        "most expressions must return data here ({} of {})",
        outcome.ok,
        all.len()
    );

    // The anomalies dashboard's table of flagged subsystems lists the host's cpu (0.75 of the
    // attribution) with the most detectors that agreed (2, or 3 every fourth window).
    let table = dashboard_queries()
        .into_iter()
        .find(|q| q.origin.contains("Flagged subsystems"))
        .expect("the anomalies dashboard's table of flagged subsystems");
    let rows = stack
        .prom
        .query(&substitute(&table.expr, &stack.host))
        .unwrap_or_else(|e| panic!("{}: {e}", table.origin));
    assert!(
        rows.iter()
            .any(|s| s.metric.get("instance") == Some(&stack.host)
                && s.metric.get("subsystem").map(String::as_str) == Some("cpu")
                && (s.value == 2.0 || s.value == 3.0)),
        "{}: no cpu row with severity 2 or 3 for {}: {rows:?}",
        table.origin,
        stack.host
    );
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
}
