//! What the analyzer's end-to-end fault tests share: a Prometheus that can be stopped and
//! started again on the same port and data, a synthetic host written into it with remote
//! write (so an anomaly is exactly where a test puts it, whatever else this machine is
//! doing), and waiting helpers. Included by each test file with `mod synth;`.

#![allow(dead_code)] // each test file uses its own part

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reveal_analyzer::http::{HttpClient, HttpClientConfig};
use reveal_analyzer::outputs::remote_write::{Batch, RemoteWriter};
use reveal_e2e::prometheus::PROMETHEUS;
use reveal_e2e::recorder::Request;
use reveal_e2e::{free_port, loopback, Proc, TempDir};

/// The synthetic host's `instance` label.
pub const HOST: &str = "synth-1:9100";

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// A Prometheus this test can stop and start again on the same port and data.
pub struct Prom {
    proc: Option<Proc>,
    pub addr: SocketAddr,
    dir: TempDir,
}

impl Prom {
    pub fn start() -> Prom {
        let mut p = Prom::reserved();
        p.up();
        p
    }
    /// Its port and data directory, not started yet.
    pub fn reserved() -> Prom {
        let dir = TempDir::new("reveal-faults-prom");
        dir.write("prometheus.yml", "global:\n  scrape_interval: 1m\n");
        Prom {
            proc: None,
            addr: loopback(free_port()),
            dir,
        }
    }
    pub fn up(&mut self) {
        let mut proc = Proc::spawn(
            "prometheus",
            std::process::Command::new(PROMETHEUS)
                .arg(format!(
                    "--config.file={}",
                    self.dir.path().join("prometheus.yml").display()
                ))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    self.dir.path().join("data").display()
                ))
                .arg(format!("--web.listen-address={}", self.addr))
                .arg("--web.enable-remote-write-receiver"),
        );
        proc.wait_http_ready(self.addr, "/-/ready", Duration::from_secs(30));
        self.proc = Some(proc);
    }
    pub fn down(&mut self) {
        self.proc = None;
    }
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
    /// Replaces its configuration and reloads it (SIGHUP), as an operator would.
    pub fn reload(&self, yml: &str) {
        self.dir.write("prometheus.yml", yml);
        let pid = self.proc.as_ref().expect("Prometheus runs").pid();
        let ok = std::process::Command::new("kill")
            .args(["-HUP", &pid.to_string()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "SIGHUP to Prometheus");
    }
}

/// Deterministic noise in [-0.5, 0.5) from a step index and a channel.
pub fn noise(step: i64, channel: u64) -> f64 {
    let mut x = (step as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ channel.wrapping_mul(0xD1B5_4A32_D192_ED03);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5
}

/// Writes four minutes of history, then keeps writing up to now every 200 ms (retrying
/// while Prometheus is down) until `stop`: `sample(batch, k)` adds the host's samples at
/// step `k` of the 100 ms grid (time `k · 100` ms).
pub fn feed(
    url: String,
    sample: impl FnMut(&mut Batch, i64) + Send + 'static,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    let hold = Arc::new(AtomicBool::new(false));
    feed_held(url, sample, stop, hold, Duration::from_millis(200))
}

/// [`feed`], writing every `period`, and nothing while `hold` is set: the samples of that
/// time land together once it is cleared, late, as a stalled scrape or a remote-write batch
/// held back would.
pub fn feed_held(
    url: String,
    mut sample: impl FnMut(&mut Batch, i64) + Send + 'static,
    stop: Arc<AtomicBool>,
    hold: Arc<AtomicBool>,
    period: Duration,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = HttpClient::new(&HttpClientConfig::default()).unwrap();
        let mut w = RemoteWriter::new(client, url, 1 << 22);
        let mut next = (now_ms() - 240_000) / 100;
        while !stop.load(Ordering::Relaxed) {
            if hold.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            let until = now_ms() / 100;
            let mut b = Batch::default();
            while next <= until {
                sample(&mut b, next);
                next += 1;
            }
            // Failures keep the batch queued in the writer; it is resent on the next round.
            let _ = rt.block_on(w.write(b));
            std::thread::sleep(period);
        }
    })
}

pub fn about_host(r: &Request, status: &str) -> bool {
    let v = r.json();
    v["status"] == status
        && v["alerts"]
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x["labels"]["instance"] == HOST))
}

pub fn wait(
    what: &str,
    timeout: Duration,
    mut ok: impl FnMut() -> bool,
    logs: impl Fn() -> String,
) {
    let deadline = Instant::now() + timeout;
    while !ok() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}\n{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The API writes `…41.000Z`, the webhook `…41Z`: the same instant.
pub fn same_instant(t: &str) -> String {
    t.replace(".000Z", "Z")
}

pub fn prom_query(p: &Prom, q: &str) -> f64 {
    let path = format!("/api/v1/query?{}", reveal_e2e::http::form(&[("query", q)]));
    let r = reveal_e2e::http::get(p.addr, &path).expect("query");
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    v["data"]["result"][0]["value"][1]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The distinct `startsAt` (as [`same_instant`] writes them) of the synthetic host's alerts
/// across webhook deliveries: one per episode that reached Alertmanager.
pub fn alert_starts(requests: &[Request]) -> std::collections::BTreeSet<String> {
    requests
        .iter()
        .flat_map(|r| r.json()["alerts"].as_array().cloned().unwrap_or_default())
        .filter(|a| a["labels"]["instance"] == HOST)
        .map(|a| same_instant(a["startsAt"].as_str().unwrap_or("")))
        .collect()
}
