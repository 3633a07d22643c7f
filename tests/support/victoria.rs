//! Debian's single-node VictoriaMetrics in a temp dir on a loopback port, scraping targets
//! itself (its `promscrape`, Prometheus' scrape configuration format) and taking remote write
//! at `/api/v1/write`. Its query API is Prometheus', so the query helpers are
//! [`Prometheus::at`]'s.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::prometheus::Prometheus;
use crate::{free_port, loopback, require_tool, Proc, TempDir};

pub const VICTORIA: &str = "/usr/bin/victoria-metrics";

/// The binary, or `None` after a loud skip (a failure under CI).
pub fn available() -> Option<PathBuf> {
    require_tool(VICTORIA, "victoria-metrics")
}

/// A running VictoriaMetrics, stopped (and its data removed) on drop.
pub struct Victoria {
    proc: Proc,
    api: Prometheus,
    _dir: TempDir,
}

impl Victoria {
    /// Starts one scraping `targets` (host:port) as job `reveal` every `interval` (e.g.
    /// `100ms`), and waits until it answers queries.
    ///
    /// `-search.latencyOffset=1s`: by default VictoriaMetrics hides the newest 30 s of every
    /// series from queries, so a range 1 s behind real time comes back empty.
    pub fn scraping(targets: &[String], interval: &str) -> Victoria {
        let bin = available().expect("victoria-metrics is not installed");
        let dir = TempDir::new("reveal-victoria");
        let list = targets
            .iter()
            .map(|t| format!("'{t}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let config = dir.write(
            "scrape.yml",
            &format!(
                "scrape_configs:\n  - job_name: reveal\n    scrape_interval: {interval}\n    \
                 scrape_timeout: {interval}\n    static_configs:\n      - targets: [{list}]\n"
            ),
        );
        let addr = loopback(free_port());
        let mut proc = Proc::spawn(
            "victoria-metrics",
            Command::new(bin)
                .arg(format!("-httpListenAddr={addr}"))
                .arg(format!(
                    "-storageDataPath={}",
                    dir.path().join("data").display()
                ))
                .arg(format!("-promscrape.config={}", config.display()))
                .arg("-retentionPeriod=1d")
                .arg("-search.latencyOffset=1s"),
        );
        proc.wait_http_ready(addr, "/health", Duration::from_secs(30));
        Victoria {
            proc,
            api: Prometheus::at(addr),
            _dir: dir,
        }
    }

    pub fn url(&self) -> String {
        self.api.url()
    }

    pub fn logs(&self) -> String {
        self.proc.logs()
    }

    /// Its Prometheus-compatible query API.
    pub fn api(&self) -> &Prometheus {
        &self.api
    }
}
