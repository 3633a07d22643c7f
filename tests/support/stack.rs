//! The stack a fault-injection test watches: reveal-exporter on a random loopback port,
//! scraped every 100 ms by a Prometheus with its remote-write receiver on, and an
//! Alertmanager whose only receiver is a webhook the test records. The analyzer is started
//! by the test itself, with its own metric set.

use std::process::Command;
use std::time::Duration;

use crate::alertmanager::Alertmanager;
use crate::prometheus::Prometheus;
use crate::recorder::Recorder;
use crate::{flush_page_cache, free_port, loopback, workspace_bin, Proc};

pub struct Stack {
    /// The exporter's `host:port`, the `instance` of its series and alerts.
    pub target: String,
    pub exporter: Proc,
    pub prom: Prometheus,
    /// Alertmanager's webhook receiver.
    pub hook: Recorder,
    pub am: Alertmanager,
}

impl Stack {
    /// Starts everything in the calling thread's network namespace, after writing back the
    /// page cache (see [`flush_page_cache`]) so the analyzer's baseline is not a build's
    /// write-back.
    pub fn start() -> Stack {
        Stack::start_with(&[])
    }

    /// [`Stack::start`] with more exporter flags (a collector that is off by default).
    pub fn start_with(exporter_args: &[String]) -> Stack {
        flush_page_cache();
        let port = free_port();
        let target = loopback(port).to_string();
        let mut exporter = Proc::spawn(
            "reveal-exporter",
            Command::new(workspace_bin("reveal-exporter"))
                .arg(format!("--web.listen-address={target}"))
                .args(exporter_args),
        );
        exporter.wait_http_ready(loopback(port), "/metrics", Duration::from_secs(20));
        let prom = Prometheus::scraping(std::slice::from_ref(&target), "100ms").start();
        let hook = Recorder::start();
        let am = Alertmanager::with_webhook(&format!("{}/hook", hook.url()));
        Stack {
            target,
            exporter,
            prom,
            hook,
            am,
        }
    }
}
