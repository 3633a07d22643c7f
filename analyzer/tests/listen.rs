//! `reveal-analyzer run` with `listen_address: 127.0.0.1:0` logs the port the system chose,
//! and that port answers: the log line is the only way to find it.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use support::{analyzer, tmpdir};

/// Kills the analyzer when the test ends, passed or not.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Drops ANSI colour sequences (`ESC [ … m`), in case the log is coloured anyway.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn port_zero_logs_the_bound_address() {
    let dir = tmpdir("listen");
    let config = dir.join("analyzer.yml");
    // Nothing has to answer at the target: the listener comes up before the first scrape.
    std::fs::write(
        &config,
        format!(
            "listen_address: 127.0.0.1:0\nstate_dir: {}\nsource:\n  scrape:\n    targets: [http://127.0.0.1:9/metrics]\n    timeout: 1s\nmetrics:\n  - expr: reveal_cpu_.*\n    subsystem: cpu\n",
            dir.join("state").display()
        ),
    )
    .unwrap();
    let mut child = analyzer()
        .args(["run", "--config.file"])
        .arg(&config)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let _running = Running(child);

    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(strip_ansi(&line)).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let addr: SocketAddr = loop {
        let line = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(l) => l,
            Err(e) => panic!(
                "no 'serving' log line ({e}); log so far:\n{}",
                seen.join("\n")
            ),
        };
        if line.contains("serving /metrics") {
            let addr = line
                .split_whitespace()
                .find_map(|w| w.strip_prefix("addr="))
                .unwrap_or_else(|| panic!("no addr= in {line:?}"));
            break addr.parse().unwrap_or_else(|e| panic!("{addr:?}: {e}"));
        }
        seen.push(line);
    };
    assert_eq!(addr.ip().to_string(), "127.0.0.1");
    assert_ne!(
        addr.port(),
        0,
        "the log names the requested port, not the bound one"
    );

    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET /-/healthy HTTP/1.1\r\nHost: reveal\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--log.format=json` (issue 49 item 2): every line is a JSON object with `ts`, `level`,
/// `target`, `msg`, no colour in a piped log; `/metrics` has the `process_*` families and
/// `reveal_analyzer_build_info` with the revision (item 5); `--version` names it.
#[test]
fn json_logs_process_metrics_and_build_info() {
    let dir = tmpdir("listen-json");
    let config = dir.join("analyzer.yml");
    std::fs::write(
        &config,
        format!(
            "listen_address: 127.0.0.1:0\nstate_dir: {}\nsource:\n  scrape:\n    targets: [http://127.0.0.1:9/metrics]\n    timeout: 1s\nmetrics:\n  - expr: reveal_cpu_.*\n    subsystem: cpu\n",
            dir.join("state").display()
        ),
    )
    .unwrap();
    let mut child = analyzer()
        .args(["run", "--log.format=json", "--config.file"])
        .arg(&config)
        .env_remove("RUST_LOG")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let _running = Running(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let addr: SocketAddr = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("no 'serving' line ({e}):\n{}", seen.join("\n")));
        assert!(!line.contains('\u{1b}'), "colour in a piped log: {line:?}");
        let v: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        for key in ["ts", "level", "target", "msg"] {
            assert!(v[key].is_string(), "no {key}: {line}");
        }
        if v["msg"].as_str().unwrap().contains("serving /metrics") {
            break v["addr"].as_str().unwrap().parse().unwrap();
        }
        seen.push(line);
    };
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: reveal\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    for family in reveal_schema::process::FAMILIES {
        let name = format!("\n{} ", family.sample_name());
        assert!(reply.contains(&name), "{name:?} missing:\n{reply}");
    }
    let revision = format!("revision=\"{}\"", reveal_schema::build::REVISION);
    assert!(
        reply
            .lines()
            .any(|l| l.starts_with("reveal_analyzer_build_info{") && l.contains(&revision)),
        "{reply}"
    );
    let out = analyzer().arg("--version").output().unwrap();
    let v = String::from_utf8_lossy(&out.stdout);
    assert!(
        v.contains(&format!("(revision {}", reveal_schema::build::REVISION)),
        "{v}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
