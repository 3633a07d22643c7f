//! The product's packet-loss case, end to end: the whole Reveal stack (reveal-exporter,
//! Prometheus scraping it every 100 ms, Alertmanager with a webhook, reveal-analyzer) runs
//! inside network namespace A, which streams TCP to a discarding server in namespace B over a
//! veth pair. nftables in B then drops a random tenth of A's packets for 15 s (this kernel has
//! no `netem`): A's TCP retransmits, its throughput stalls on retransmission timeouts, and
//! the analyzer must raise a `RevealAnomaly` alert naming the `network` subsystem, write
//! its anomaly series to Prometheus, and resolve the episode once the loss stops.
//!
//! `/proc/net/{dev,snmp,netstat}` are per network namespace, so the exporter in A sees only
//! A's veth and A's TCP counters: traffic elsewhere on the host cannot reach the baseline.
//!
//! Reported on stderr: the time from the first dropped packet to the alert at Alertmanager,
//! and what the analyzer saw (peak scores, A's retransmission and transmit rates before and
//! during the loss).
//!
//! Needs root, `ip` (iproute2) and `nft` (nftables); skips loudly without them, and fails
//! under CI.

use std::time::{Duration, Instant};

use reveal_e2e::alertmanager;
use reveal_e2e::analyzer::Analyzer;
use reveal_e2e::netns::{self, Loss, Pair, Stream};
use reveal_e2e::prometheus::{self, Prometheus};
use reveal_e2e::recorder::Request;
use reveal_e2e::stack::Stack;

/// A random tenth of the packets: enough that some retransmissions are lost too and TCP
/// falls back on its retransmission timeout, as a flaky link or an overflowing switch
/// buffer does.
const LOSS_PER_MILLE: u32 = 100;
const LOSS_FOR: Duration = Duration::from_secs(15);

fn config(prom: &str, am: &str) -> String {
    format!(
        "listen_address: {{listen}}\nstate_dir: {{state}}\nsource:\n  prometheus:\n    url: {prom}\n    timeout: 3s\n\
         metrics:\n\
         \x20 - expr: rate(reveal_cpu_time_seconds_total[1s])\n    subsystem: cpu\n    kind: dynamic\n\
         \x20 - expr: rate(reveal_cpu_context_switches_total[1s])\n    subsystem: cpu\n    kind: dynamic\n\
         \x20 - expr: rate(reveal_network_receive_bytes_total{{device!=\"lo\"}}[1s])\n    subsystem: network\n    kind: dynamic\n\
         \x20 - expr: rate(reveal_network_transmit_bytes_total{{device!=\"lo\"}}[1s])\n    subsystem: network\n    kind: dynamic\n\
         \x20 - expr: rate(reveal_network_receive_drops_total{{device!=\"lo\"}}[1s])\n    subsystem: network\n    kind: event\n\
         \x20 - expr: rate(reveal_network_protocol_events_total{{protocol=~\"Tcp|TcpExt\",field=~\"RetransSegs|TCPLostRetransmit|TCPTimeouts\"}}[1s])\n    subsystem: network\n    kind: event\n\
         analysis:\n  warmup: 1m\n  baseline: 2m\n  refit_every: 5m\n\
         outputs:\n  remote_write:\n    url: {prom}/api/v1/write\n  alertmanager:\n    urls: [{am}]\n    resend_interval: 2s\n"
    )
}

/// A webhook notification of `status` that carries an alert for `instance` on the network
/// subsystem.
fn network_alert(r: &Request, status: &str, instance: &str) -> bool {
    let v = r.json();
    v["status"] == status
        && v["alerts"].as_array().is_some_and(|a| {
            a.iter().any(|x| {
                x["labels"]["instance"] == instance && x["labels"]["subsystem"] == "network"
            })
        })
}

#[test]
fn packet_loss_becomes_a_network_alert_and_resolves() {
    if !netns::available()
        || prometheus::available().is_none()
        || alertmanager::available().is_none()
    {
        return;
    }
    // Declared first so it is removed last, after every process in it has been killed.
    let pair = Pair::new("reveal-pl");
    // From here on this thread, the processes it starts and the sockets it opens are in A.
    let _in_a = pair.a.enter();

    let Stack {
        target,
        exporter,
        prom,
        hook,
        am,
    } = Stack::start();
    // A steady ~1.6 MB/s through the veth for the whole test (bounded at 5 minutes), so the
    // baseline holds the healthy stream the loss then disturbs.
    let stream = Stream::start(
        &pair,
        16 * 1024,
        Duration::from_millis(10),
        Duration::from_secs(300),
    );
    // The exporter reads A's interfaces, not the host's.
    let veth = format!(
        "rate(reveal_network_transmit_bytes_total{{instance=\"{target}\",device=\"{}\"}}[1s])",
        pair.a_dev
    );
    prom.wait_for_value(&veth, |v| v > 100_000.0, Duration::from_secs(20));

    let an = Analyzer::start(&config(&prom.url(), &am.url()));
    let deadline = Instant::now() + Duration::from_secs(100);
    while an.status("/-/ready") != 200 {
        assert!(Instant::now() < deadline, "never ready:\n{}", an.logs());
        std::thread::sleep(Duration::from_millis(500));
    }
    // Quiet windows scored against the fresh baseline first.
    std::thread::sleep(Duration::from_secs(15));
    let before: Vec<Request> = hook
        .requests()
        .into_iter()
        .filter(|r| network_alert(r, "firing", &target))
        .collect();
    if !before.is_empty() {
        eprintln!(
            "network alerts before the loss: {:?}",
            before.iter().map(Request::json).collect::<Vec<_>>()
        );
    }
    let opened_before = an
        .metric("reveal_analyzer_episodes_opened_total")
        .unwrap_or(0.0);

    let fault_start = Instant::now();
    let loss = Loss::start(&pair.b, pair.a_addr, LOSS_PER_MILLE);
    let alert = hook.wait_for(Duration::from_secs(30), |r| {
        r.at >= fault_start && network_alert(r, "firing", &target)
    });
    let latency = alert.as_ref().map(|r| r.at.duration_since(fault_start));
    // The loss lasts its full span whether or not the alert came early.
    std::thread::sleep(LOSS_FOR.saturating_sub(fault_start.elapsed()));
    let dropped = loss.dropped();
    loss.stop();
    let loss_end = Instant::now();
    let seen = seen(&prom, &target);
    eprintln!(
        "what the analyzer saw ({dropped:?} packets dropped by nftables, {} bytes streamed):\n{}",
        stream.sent(),
        seen
    );
    let alert = alert.unwrap_or_else(|| {
        panic!(
            "no network alert within 30 s of the loss; webhooks: {:?}\n{}",
            hook.bodies(),
            an.logs()
        )
    });
    eprintln!(
        "fault start → network alert at Alertmanager (webhook): {:.1} s",
        latency.unwrap().as_secs_f64()
    );
    let a = alert.json()["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["labels"]["subsystem"] == "network")
        .cloned()
        .unwrap();
    eprintln!(
        "alert: severity {}, summary {}",
        a["labels"]["severity"], a["annotations"]["summary"]
    );
    assert_eq!(a["labels"]["alertname"], "RevealAnomaly", "{a}");
    assert_eq!(a["labels"]["instance"], target.as_str(), "{a}");
    assert!(
        !a["annotations"]["summary"]
            .as_str()
            .unwrap_or("")
            .is_empty(),
        "{a}"
    );
    assert!(
        an.metric("reveal_analyzer_episodes_opened_total")
            .unwrap_or(0.0)
            > opened_before
    );

    // The anomaly series are in Prometheus.
    let score = prom
        .query(&format!("reveal_anomaly_score{{instance=\"{target}\"}}"))
        .unwrap();
    assert!(!score.is_empty(), "no reveal_anomaly_score for {target}");
    let network = prom
        .value(&format!(
            "max_over_time(reveal_anomaly_subsystem{{instance=\"{target}\",subsystem=\"network\"}}[1m])"
        ))
        .unwrap();
    assert!(network.unwrap_or(0.0) > 0.0, "{network:?}");

    // Once the loss stops, the episode closes and its alert resolves.
    let resolved = hook.wait_for(Duration::from_secs(60), |r| {
        r.at >= fault_start && network_alert(r, "resolved", &target)
    });
    let resolved = resolved.unwrap_or_else(|| {
        panic!(
            "not resolved within 60 s after the loss stopped; webhooks: {:?}\n{}",
            hook.bodies(),
            an.logs()
        )
    });
    eprintln!(
        "loss end → resolved at Alertmanager (webhook): {:.1} s",
        resolved.at.duration_since(loss_end).as_secs_f64()
    );
    let sent = stream.stop();
    assert!(sent > 0);
    drop(exporter);
}

/// Peak scores over the loss and A's TCP rates before and during it, for the report and for
/// a failure's post-mortem.
fn seen(prom: &Prometheus, target: &str) -> String {
    let retrans = format!(
        "sum(rate(reveal_network_protocol_events_total{{instance=\"{target}\",field=\"RetransSegs\"}}[1s]))"
    );
    let tx = format!(
        "sum(rate(reveal_network_transmit_bytes_total{{instance=\"{target}\",device!=\"lo\"}}[1s]))"
    );
    [
        format!("max by (detector) (max_over_time(reveal_anomaly_score{{instance=\"{target}\"}}[20s]))"),
        format!("max_over_time(reveal_anomaly_agreement{{instance=\"{target}\"}}[20s])"),
        format!("max by (subsystem) (max_over_time(reveal_anomaly_subsystem{{instance=\"{target}\"}}[20s]))"),
        format!("max_over_time(({retrans})[15s:100ms])"),
        format!("max_over_time(({retrans})[60s:100ms] offset 20s)"),
        format!("avg_over_time(({tx})[15s:100ms])"),
        format!("avg_over_time(({tx})[60s:100ms] offset 20s)"),
    ]
    .iter()
    .map(|q| {
        let r = prom.query(q).map(|r| {
            r.iter()
                .map(|s| {
                    let label = s
                        .metric
                        .get("detector")
                        .or(s.metric.get("subsystem"))
                        .cloned()
                        .unwrap_or_default();
                    format!("{label}={:.3}", s.value)
                })
                .collect::<Vec<_>>()
                .join(" ")
        });
        format!("  {q} = {r:?}")
    })
    .collect::<Vec<_>>()
    .join("\n")
}
