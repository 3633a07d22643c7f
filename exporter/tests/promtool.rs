//! The real binary's exposition, from this machine's /proc and /sys, and every golden file
//! must pass `promtool check metrics` (Debian package `prometheus`) without a single remark.

mod common;

use common::{fixture, http_get, promtool_check, require_tool};
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_reveal-exporter");

#[test]
fn once_on_this_host_passes_promtool() {
    let Some(promtool) = require_tool("promtool", "prometheus") else {
        return;
    };
    let out = Command::new(BIN)
        .args(["--once", "--log.level=error"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "--once failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("reveal_exporter_collector_success{collector=\"stat\"} 1"),
        "{text}"
    );
    promtool_check(&promtool, "reveal-exporter --once", &text);
}

#[test]
fn golden_files_pass_promtool() {
    let Some(promtool) = require_tool("promtool", "prometheus") else {
        return;
    };
    let dir = fixture("").join("../golden");
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        promtool_check(&promtool, &path.display().to_string(), &text);
    }
}

/// Kills the exporter when the test ends, even on a failed assertion.
struct Reaper(Child);
impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn served_scrape_passes_promtool() {
    let Some(promtool) = require_tool("promtool", "prometheus") else {
        return;
    };
    // Ask the OS for a free port, then hand it to the exporter (a small race, acceptable on
    // loopback in a test).
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let _child = Reaper(
        Command::new(BIN)
            .arg(format!("--web.listen-address={addr}"))
            .arg("--log.level=error")
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let (status, head, body) = loop {
        match http_get(addr, "/metrics", "text/plain;version=0.0.4") {
            Ok(r) => break r,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("exporter at {addr} never answered: {e}"),
        }
    };
    assert_eq!(status, 200, "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    promtool_check(&promtool, "served /metrics", &body);

    // Prometheus asks for OpenMetrics first; that body must be complete (ends with # EOF).
    let accept = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";
    let (status, head, body) = http_get(addr, "/metrics", accept).unwrap();
    assert_eq!(status, 200);
    assert!(head.contains("application/openmetrics-text"), "{head}");
    assert!(
        body.ends_with("# EOF\n"),
        "OpenMetrics body must end with # EOF"
    );
}
