use super::*;
use crate::http::HttpClientConfig;
use std::time::UNIX_EPOCH;

fn finding(instance: &str, subsystem: &str, severity: &'static str) -> Finding {
    let start = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    Finding {
        alertname: "RevealAnomaly",
        instance: instance.into(),
        subsystem: subsystem.into(),
        severity,
        summary: "CPU time in user mode is higher than its baseline (z = 6.1)".into(),
        description: "value__mean of reveal_cpu_time_seconds_total{mode=\"user\"}".into(),
        detectors: "zscore,pca".into(),
        hint: Some("CPU demand rose: check what runs".into()),
        cgroup: None,
        cgroups: None,
        device: None,
        recurrence: None,
        start,
        last_window_end: start + Duration::from_secs(3),
    }
}

/// A sender whose Alertmanager refuses connections: every delivery is a retryable failure.
fn unreachable(capacity: usize) -> AlertSender {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = HttpClient::new(&HttpClientConfig::default()).unwrap();
    AlertSender::new(
        client,
        &[format!("http://127.0.0.1:{port}/")],
        Duration::from_secs(10),
        capacity,
    )
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn alert_json_has_the_api_v2_shape() {
    let s = unreachable(10);
    let f = finding("h:1", "cpu", "warning");
    let a = s.alert(&f, f.start + Duration::from_secs(40));
    let v = serde_json::to_value(vec![&a]).unwrap();
    assert_eq!(v[0]["labels"]["alertname"], "RevealAnomaly");
    assert_eq!(v[0]["labels"]["subsystem"], "cpu");
    assert_eq!(v[0]["labels"]["severity"], "warning");
    assert_eq!(v[0]["startsAt"], "2023-11-14T22:13:20.000Z");
    assert_eq!(v[0]["endsAt"], "2023-11-14T22:14:00.000Z");
    assert_eq!(v[0]["annotations"]["detectors"], "zscore,pca");
    assert_eq!(
        v[0]["annotations"]["remediation"],
        "CPU demand rose: check what runs"
    );
    assert_eq!(
        v[0]["annotations"]["window_end"],
        "2023-11-14T22:13:23.000Z"
    );
    assert!(v[0].get("generatorURL").is_none());
}

#[test]
fn unreachable_alertmanager_keeps_one_state_per_alert() {
    let rt = rt();
    let mut s = unreachable(10);
    let t0 = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    s.upsert("ep1", finding("h:1", "cpu", "warning"), t0);
    assert!(rt.block_on(s.tick(t0)).unwrap_err().is_retryable());
    // Re-sends while down replace the queued copy rather than piling up.
    for i in 1..5 {
        let _ = rt.block_on(s.tick(t0 + Duration::from_secs(10 * i)));
    }
    assert_eq!(s.stats().queued, 1);
    s.resolve("ep1", t0 + Duration::from_secs(60));
    assert_eq!(s.stats().queued, 1);
    assert_eq!(s.open_keys().count(), 0);
    assert!(s.stats().failed_requests >= 5);
    assert_eq!(s.stats().dropped, 0);
}

#[test]
fn a_full_queue_drops_the_oldest_and_counts_it() {
    let rt = rt();
    let mut s = unreachable(2);
    let t0 = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for (i, host) in ["a:1", "b:1", "c:1"].iter().enumerate() {
        s.upsert(&format!("ep{i}"), finding(host, "cpu", "info"), t0);
    }
    let _ = rt.block_on(s.tick(t0));
    assert_eq!(s.stats().queued, 2);
    assert_eq!(s.stats().dropped, 1);
}

#[test]
fn a_label_change_resolves_the_old_alert() {
    let rt = rt();
    let mut s = unreachable(10);
    let t0 = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    s.upsert("ep", finding("h:1", "cpu", "info"), t0);
    let _ = rt.block_on(s.tick(t0));
    s.upsert(
        "ep",
        finding("h:1", "cpu", "critical"),
        t0 + Duration::from_secs(1),
    );
    let _ = rt.block_on(s.tick(t0 + Duration::from_secs(1)));
    let q: Vec<_> = s.targets[0]
        .queue
        .iter()
        .map(|a| (a.labels["severity"].clone(), a.ends_at))
        .collect();
    assert_eq!(q.len(), 2, "{q:?}");
    assert_eq!(q[0], ("info".to_string(), t0 + Duration::from_secs(1)));
    assert_eq!(q[1].0, "critical");
}

#[test]
fn a_clock_that_stepped_back_still_re_sends_and_never_ends_before_the_start() {
    let rt = rt();
    let mut s = unreachable(10);
    let f = finding("h:1", "cpu", "warning");
    let t0 = f.start + Duration::from_secs(30);
    s.upsert("ep", f.clone(), t0);
    let _ = rt.block_on(s.tick(t0));
    // A minute back: before the last send, and before the alert's start. Without the re-send
    // Alertmanager would let the alert expire; an end before the start it would refuse.
    let back = t0 - Duration::from_secs(60);
    s.targets[0].queue.clear();
    let _ = rt.block_on(s.tick(back));
    let q: Vec<_> = s.targets[0]
        .queue
        .iter()
        .map(|a| (a.starts_at, a.ends_at))
        .collect();
    assert_eq!(q.len(), 1, "not re-sent: {q:?}");
    assert_eq!(q[0].0, f.start);
    assert!(q[0].1 >= q[0].0, "{q:?}");
    // Resolving at a time before the start ends it at its start.
    s.targets[0].queue.clear();
    s.resolve("ep", f.start - Duration::from_secs(5));
    assert_eq!(s.targets[0].queue[0].ends_at, f.start);
}
