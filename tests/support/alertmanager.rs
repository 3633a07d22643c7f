//! A real Alertmanager (Debian's `/usr/bin/prometheus-alertmanager`) on a loopback port,
//! gossip off, its storage in a temp dir, routing every alert to a webhook; it can be
//! stopped and started again on the same port to test delivery across an outage.

use crate::{free_port, http, loopback, require_tool, Proc, TempDir};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub const ALERTMANAGER: &str = "/usr/bin/prometheus-alertmanager";

/// The binary, or `None` after a loud skip note (a failure under CI).
pub fn available() -> Option<PathBuf> {
    require_tool(ALERTMANAGER, "prometheus-alertmanager")
}

pub struct Alertmanager {
    proc: Option<Proc>,
    addr: SocketAddr,
    dir: TempDir,
}

impl Alertmanager {
    /// Starts an Alertmanager that sends every alert group (and its resolution) to
    /// `webhook_url`, with short group timers so a test sees notifications within seconds.
    pub fn with_webhook(webhook_url: &str) -> Alertmanager {
        let dir = TempDir::new("reveal-alertmanager");
        dir.write(
            "alertmanager.yml",
            &format!(
                "route:\n  receiver: hook\n  group_by: [alertname, instance, subsystem]\n  group_wait: 0s\n  \
                 group_interval: 1s\n  repeat_interval: 1h\nreceivers:\n  - name: hook\n    webhook_configs:\n      \
                 - url: {webhook_url}\n        send_resolved: true\n"
            ),
        );
        let mut am = Alertmanager {
            proc: None,
            addr: loopback(free_port()),
            dir,
        };
        am.start();
        am
    }

    /// Starts an Alertmanager with the given `alertmanager.yml` contents (e.g. the stack's
    /// rules/alertmanager.yml).
    pub fn with_config(yaml: &str) -> Alertmanager {
        let dir = TempDir::new("reveal-alertmanager");
        dir.write("alertmanager.yml", yaml);
        let mut am = Alertmanager {
            proc: None,
            addr: loopback(free_port()),
            dir,
        };
        am.start();
        am
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// (Re)starts the process on the same port and storage.
    pub fn start(&mut self) {
        let bin = available().expect("prometheus-alertmanager is not installed");
        let mut proc = Proc::spawn(
            "alertmanager",
            std::process::Command::new(bin)
                .arg(format!(
                    "--config.file={}",
                    self.dir.path().join("alertmanager.yml").display()
                ))
                .arg(format!(
                    "--storage.path={}",
                    self.dir.path().join("data").display()
                ))
                .arg(format!("--web.listen-address={}", self.addr))
                .arg("--cluster.listen-address="),
        );
        proc.wait_http_ready(self.addr, "/-/ready", Duration::from_secs(30));
        self.proc = Some(proc);
    }

    /// Kills the process (the port stays reserved for [`Alertmanager::start`]).
    pub fn stop(&mut self) {
        self.proc = None;
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn logs(&self) -> String {
        self.proc.as_ref().map(Proc::logs).unwrap_or_default()
    }

    /// `GET /api/v2/alerts` (active, silenced and inhibited alerts, as the API lists them).
    pub fn alerts(&self) -> Result<Vec<serde_json::Value>, String> {
        let r = http::get(self.addr, "/api/v2/alerts").map_err(|e| e.to_string())?;
        if r.status != 200 {
            return Err(format!("{}: {}", r.status, r.text()));
        }
        serde_json::from_slice::<Vec<serde_json::Value>>(&r.body).map_err(|e| e.to_string())
    }
}
