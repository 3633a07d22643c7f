//! The analyzer's alert sender against a real Alertmanager: alerts arrive with their labels and
//! annotations (read back from the API and from a webhook receiver), resolve with `endsAt`,
//! and survive an Alertmanager outage in the retry queue.

use std::time::{Duration, Instant, SystemTime};

use reveal_analyzer::http::{HttpClient, HttpClientConfig};
use reveal_analyzer::outputs::alertmanager::{AlertSender, Finding};
use reveal_e2e::alertmanager::{self, Alertmanager};
use reveal_e2e::recorder::{Recorder, Request};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn finding(start: SystemTime) -> Finding {
    Finding {
        alertname: "RevealAnomaly",
        instance: "node-7:19190".into(),
        subsystem: "storage".into(),
        severity: "critical",
        summary: "Disk write throughput is higher than its baseline (z = 9.3)".into(),
        description: "value__mean of reveal_storage_written_bytes_total{device=\"sda\"}".into(),
        detectors: "zscore,pca,iforest".into(),
        hint: reveal_analyzer::core::hints::hint(
            "storage",
            "reveal_storage_written_bytes_total{device=\"sda\"}",
            true,
        ),
        cgroup: Some("slurm/job_42".into()),
        cgroups: Some("cgroup `slurm/job_42` took 40.0 MB/s more (0.0 MB/s → 40.0 MB/s).".into()),
        device: None,
        recurrence: None,
        start,
        last_window_end: start + Duration::from_secs(3),
    }
}

fn sender(am: &Alertmanager) -> AlertSender {
    let client = HttpClient::new(&HttpClientConfig::default()).unwrap();
    AlertSender::new(client, &[am.url()], Duration::from_secs(1), 100)
}

fn webhook_status(r: &Request, status: &str) -> bool {
    let v = r.json();
    v["status"] == status
        && v["alerts"]
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x["labels"]["instance"] == "node-7:19190"))
}

fn wait_api(
    am: &Alertmanager,
    ok: impl Fn(&[serde_json::Value]) -> bool,
) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let alerts = am.alerts().unwrap_or_default();
        if ok(&alerts) {
            return alerts;
        }
        assert!(
            Instant::now() < deadline,
            "Alertmanager API never matched: {alerts:?}\n{}",
            am.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn alert_fires_through_api_and_webhook_then_resolves() {
    if alertmanager::available().is_none() {
        return;
    }
    let hook = Recorder::start();
    let am = Alertmanager::with_webhook(&format!("{}/hook", hook.url()));
    let mut tx = sender(&am);
    let rt = runtime();
    let start = SystemTime::now();
    tx.upsert("ep-1", finding(start), start);
    rt.block_on(tx.tick(start)).expect("delivery");

    let alerts = wait_api(&am, |a| !a.is_empty());
    let a = &alerts[0];
    assert_eq!(a["labels"]["alertname"], "RevealAnomaly");
    assert_eq!(a["labels"]["subsystem"], "storage");
    assert_eq!(a["labels"]["severity"], "critical");
    // The job behind it is a label (routing, silences) and its words an annotation.
    assert_eq!(a["labels"]["cgroup"], "slurm/job_42");
    assert!(a["annotations"]["cgroups"]
        .as_str()
        .is_some_and(|c| c.starts_with("cgroup `slurm/job_42` took")));
    assert_eq!(a["status"]["state"], "active");
    assert!(a["annotations"]["summary"]
        .as_str()
        .unwrap()
        .contains("Disk write"));
    assert_eq!(a["annotations"]["detectors"], "zscore,pca,iforest");
    let remediation = a["annotations"]["remediation"].as_str().unwrap_or_default();
    assert!(
        remediation.starts_with("I/O on sda rose:"),
        "remediation annotation: {remediation:?}"
    );

    let fired = hook.wait_for(Duration::from_secs(15), |r| webhook_status(r, "firing"));
    let fired = fired.unwrap_or_else(|| {
        panic!(
            "no firing webhook; got {:?}\n{}",
            hook.requests(),
            am.logs()
        )
    });
    assert_eq!(fired.json()["alerts"][0]["labels"]["subsystem"], "storage");

    // While open it is re-sent every resend interval, pushing endsAt ahead.
    let first_end = a["endsAt"].as_str().unwrap().to_string();
    std::thread::sleep(Duration::from_millis(1100));
    rt.block_on(tx.tick(SystemTime::now())).expect("re-send");
    let alerts = wait_api(&am, |a| {
        a.first()
            .is_some_and(|x| x["endsAt"].as_str() != Some(&first_end))
    });
    assert!(alerts[0]["endsAt"].as_str().unwrap() > first_end.as_str());

    tx.resolve("ep-1", SystemTime::now());
    rt.block_on(tx.tick(SystemTime::now())).expect("resolution");
    let resolved = hook.wait_for(Duration::from_secs(15), |r| webhook_status(r, "resolved"));
    assert!(
        resolved.is_some(),
        "no resolved webhook; got {:?}",
        hook.requests()
    );
    wait_api(&am, |a| a.iter().all(|x| x["status"]["state"] != "active"));
    assert_eq!(tx.stats().queued, 0);
    assert_eq!(tx.stats().dropped, 0);
}

#[test]
fn alert_raised_while_alertmanager_is_down_arrives_after_restart() {
    if alertmanager::available().is_none() {
        return;
    }
    let hook = Recorder::start();
    let mut am = Alertmanager::with_webhook(&format!("{}/hook", hook.url()));
    let mut tx = sender(&am);
    let rt = runtime();
    am.stop();

    let start = SystemTime::now();
    tx.upsert("ep-2", finding(start), start);
    let err = rt
        .block_on(tx.tick(start))
        .expect_err("Alertmanager is down");
    assert!(err.is_retryable(), "{err}");
    assert_eq!(tx.stats().queued, 1);
    assert!(tx.stats().failed_requests >= 1);

    am.start();
    rt.block_on(tx.tick(SystemTime::now()))
        .expect("delivery after restart");
    assert_eq!(tx.stats().queued, 0);
    let alerts = wait_api(&am, |a| !a.is_empty());
    assert_eq!(alerts[0]["labels"]["instance"], "node-7:19190");
    // The alert keeps the time the finding started, not the time it was finally delivered.
    let starts = alerts[0]["startsAt"].as_str().unwrap();
    assert_eq!(
        starts,
        reveal_analyzer::outputs::alertmanager::rfc3339(start)
    );
    assert!(hook
        .wait_for(Duration::from_secs(15), |r| webhook_status(r, "firing"))
        .is_some());
}
