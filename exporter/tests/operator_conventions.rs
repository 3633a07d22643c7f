//! The binary as an operator runs it (issue 49, items 2 and 5): logs a log shipper can take
//! (no colour off a terminal, logfmt or JSON lines, one line per collector about hardware the
//! host lacks), the `process_*` and `build_info` self-metrics, `--version` with the revision,
//! and `--web.listen-address` given twice, served on both.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_reveal-exporter");

/// Kills the exporter when the test ends, passed or not.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the exporter with `args`, stderr piped; returns it, a channel of its log lines, and
/// the lines up to and including the one that says where it listens.
fn start(args: &[&str]) -> (Running, mpsc::Receiver<String>, Vec<String>) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let running = Running(child);
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
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("no 'listening on' line ({e}):\n{}", seen.join("\n")));
        let done = line.contains("listening on ");
        seen.push(line);
        if done {
            return (running, rx, seen);
        }
    }
}

/// The addresses of the "listening on A, B" message.
fn addresses(msg: &str) -> Vec<SocketAddr> {
    let rest = msg.split("listening on ").nth(1).expect("a listening line");
    let rest = rest.split('"').next().unwrap_or(rest);
    rest.split(", ")
        .map(|a| {
            let a = a.split_whitespace().next().unwrap_or(a);
            a.parse()
                .unwrap_or_else(|e| panic!("{a:?} in {msg:?}: {e}"))
        })
        .collect()
}

/// The value of `key=` in a logfmt line (quoted or bare).
fn logfmt_field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(&format!(" {key}="))? + key.len() + 2;
    let rest = &line[at..];
    match rest.strip_prefix('"') {
        Some(q) => q.split('"').next(),
        None => rest.split(' ').next(),
    }
}

fn scrape(addr: SocketAddr) -> String {
    let (status, head, body) = common::http_get(addr, "/metrics", "text/plain").unwrap();
    assert_eq!(status, 200, "{addr}: {head}");
    body
}

fn ipv6_loopback() -> bool {
    std::net::TcpListener::bind("[::1]:0").is_ok()
}

#[test]
fn logs_are_plain_logfmt_with_one_line_per_collector_about_absent_hardware() {
    let (running, rx, mut log) = start(&["--web.listen-address", "127.0.0.1:0"]);
    let addr = addresses(log.last().unwrap())[0];
    let page = scrape(addr);
    // The runner logs unsupported collectors on the first scrape; let the lines arrive.
    drop(running);
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(5)) {
        log.push(line);
    }
    let text = log.join("\n");
    assert!(!text.contains("\x1b["), "colour in a piped log:\n{text}");
    let mut per_collector: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for line in &log {
        assert!(
            line.starts_with("ts=") && line.contains(" level=") && line.contains(" msg="),
            "not logfmt: {line}"
        );
        let target = logfmt_field(line, "target").unwrap_or("");
        let collector = logfmt_field(line, "collector").or_else(|| {
            target
                .strip_prefix("reveal_exporter::collectors::")
                .map(|c| c.split("::").next().unwrap_or(c))
        });
        if let Some(c) = collector {
            per_collector.entry(c.to_string()).or_default().push(line);
        }
    }
    for (collector, lines) in &per_collector {
        let info = lines.iter().filter(|l| l.contains(" level=info ")).count();
        assert!(
            info <= 1,
            "{collector}: {info} lines about absent hardware:\n{}",
            lines.join("\n")
        );
        assert!(
            lines.len() <= 2,
            "{collector}: {} lines:\n{}",
            lines.len(),
            lines.join("\n")
        );
    }
    // process_* and the full build_info.
    for name in [
        "process_cpu_seconds_total ",
        "process_resident_memory_bytes ",
        "process_virtual_memory_bytes ",
        "process_start_time_seconds ",
        "process_open_fds ",
        "process_threads ",
    ] {
        assert!(page.lines().any(|l| l.starts_with(name)), "{name}:\n{page}");
    }
    let build = page
        .lines()
        .find(|l| l.starts_with("reveal_exporter_build_info{"))
        .expect("build_info");
    for label in ["version=", "revision=", "branch=", "rustversion="] {
        assert!(build.contains(label), "{build}");
    }
}

#[test]
fn json_lines_parse_and_two_listen_addresses_are_both_served() {
    let v6 = ipv6_loopback();
    let mut args = vec!["--log.format=json", "--web.listen-address", "127.0.0.1:0"];
    if v6 {
        args.extend(["--web.listen-address", "[::1]:0"]);
    } else {
        eprintln!(
            "SKIPPED IN PART: this host has no IPv6 loopback (::1); the second address is \
             127.0.0.2:0 instead"
        );
        args.extend(["--web.listen-address", "127.0.0.2:0"]);
    }
    let (_running, _rx, log) = start(&args);
    for line in &log {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        for key in ["ts", "level", "target", "msg"] {
            assert!(v[key].is_string(), "no {key}: {line}");
        }
    }
    let last: serde_json::Value = serde_json::from_str(log.last().unwrap()).unwrap();
    let addrs = addresses(last["msg"].as_str().unwrap());
    assert_eq!(addrs.len(), 2, "{last}");
    assert_eq!(addrs[1].is_ipv6(), v6, "{addrs:?}");
    for a in addrs {
        assert_ne!(a.port(), 0);
        assert!(
            scrape(a).contains("reveal_exporter_collector_success"),
            "{a}"
        );
    }
}

#[test]
fn version_names_the_revision_and_compiler() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    assert!(out.status.success());
    let mut v = String::new();
    out.stdout.as_slice().read_to_string(&mut v).unwrap();
    assert!(
        v.starts_with("reveal-exporter ") && v.contains("(revision ") && v.contains("rustc "),
        "{v}"
    );
}
