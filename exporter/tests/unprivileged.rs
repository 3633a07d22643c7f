//! The real binary, run as the unprivileged user `nobody` (uid and gid 65534, no groups, no
//! capabilities), serves every collector that needs no privilege exactly as it does for root.
//! Only the collectors docs/privileges.md lists as privileged may lose their success there.
//!
//! Needs root (to switch to `nobody`) and `setpriv` (util-linux). Without them it says so and
//! passes; under CI (env CI set) it fails instead.

mod common;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Collectors that need a privilege (docs/privileges.md): CAP_PERFMON or
/// perf_event_paranoid <= 0 (perf, msr), CAP_SYS_RAWIO (msr device), NVML device access
/// (gpu), root for RAPL energy on kernels >= 5.10 (rapl).
const PRIVILEGED: &[&str] = &["perf", "msr", "gpu", "rapl"];

fn skip(why: &str) -> bool {
    let msg = format!("SKIPPED unprivileged test: {why}");
    assert!(std::env::var_os("CI").is_none(), "{msg} (CI must run it)");
    eprintln!("{msg}");
    true
}

/// `collector -> success` from an exposition.
fn successes(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| l.starts_with("reveal_exporter_collector_success{"))
        .filter_map(|l| {
            let name = l
                .split("collector=\"")
                .nth(1)?
                .split('"')
                .next()?
                .to_string();
            let v = l.rsplit(' ').next()?.parse().ok()?;
            Some((name, v))
        })
        .collect()
}

/// A copy of the binary that `nobody` can execute wherever the build tree lives.
fn binary_copy() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("reveal-unpriv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.join("reveal-exporter");
    std::fs::copy(env!("CARGO_BIN_EXE_reveal-exporter"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

fn scrape(addr: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let (head, body) = resp.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_string()
}

/// Starts the exporter (as root, or through setpriv as nobody with only the capabilities in
/// `caps`, e.g. `+perfmon`), scrapes it twice and returns the second scrape (collectors settle
/// after their first update) and the process' /proc status.
fn serve_and_scrape(bin: &PathBuf, as_nobody: bool, caps: &[&str]) -> (String, String) {
    let mut cmd = if as_nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
        if caps.is_empty() {
            c.arg("--inh-caps=-all");
        } else {
            c.arg(format!("--inh-caps={}", caps.join(",")));
            c.arg(format!("--ambient-caps={}", caps.join(",")));
        }
        c.args(["--no-new-privs", "--"]).arg(bin);
        c
    } else {
        Command::new(bin)
    };
    let mut child = cmd
        .args(["--web.listen-address", "127.0.0.1:0", "--log.level", "info"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let start = Instant::now();
    let mut addr = None;
    let mut log = String::new();
    while start.elapsed() < Duration::from_secs(20) {
        let Some(Ok(line)) = lines.next() else { break };
        log.push_str(&line);
        log.push('\n');
        if let Some(rest) = line.split("listening on ").nth(1) {
            let a = rest.split_whitespace().next().unwrap_or("");
            addr = Some(
                a.trim_end_matches(|c: char| !c.is_ascii_digit())
                    .to_string(),
            );
            break;
        }
    }
    let Some(addr) = addr else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the exporter did not start (as nobody: {as_nobody}):\n{log}");
    };
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    let first = scrape(&addr);
    let body = scrape(&addr);
    let _ = child.kill();
    let _ = child.wait();
    assert!(!first.is_empty());
    (body, status)
}

#[test]
fn nobody_still_gets_everything_unprivileged() {
    if !common::is_root() && skip("not root, cannot switch to nobody") {
        return;
    }
    if Command::new("setpriv").arg("--version").output().is_err() && skip("setpriv not found") {
        return;
    }
    let bin = binary_copy();
    let (root, _) = serve_and_scrape(&bin, false, &[]);
    let (body, status) = serve_and_scrape(&bin, true, &[]);
    assert!(
        status.contains("Uid:\t65534"),
        "not running as nobody: {status}"
    );
    let nobody = successes(&body);
    eprintln!(
        "child: {}",
        status
            .lines()
            .filter(|l| l.starts_with("Uid") || l.starts_with("CapEff"))
            .collect::<Vec<_>>()
            .join("; ")
    );
    let root = successes(&root);
    eprintln!("collector success as root: {root:?}");
    eprintln!("collector success as nobody: {nobody:?}");
    assert_eq!(
        nobody.keys().collect::<Vec<_>>(),
        root.keys().collect::<Vec<_>>()
    );
    for (name, ok_root) in &root {
        let ok_nobody = nobody[name];
        if PRIVILEGED.contains(&name.as_str()) {
            continue;
        }
        assert_eq!(
            ok_nobody, *ok_root,
            "collector {name}: root {ok_root}, nobody {ok_nobody}"
        );
    }
    // What docs/privileges.md says: with perf_event_paranoid >= 1 and no CAP_PERFMON, per-CPU
    // counters (perf) and the msr/cstate PMUs cannot be opened.
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(2);
    if paranoid >= 1 {
        assert_eq!(
            nobody.get("perf"),
            Some(&0.0),
            "perf must fail without CAP_PERFMON"
        );
    }
    for must in ["stat", "meminfo"] {
        assert_eq!(nobody.get(must), Some(&1.0), "{must} must serve as nobody");
    }
    // A collector that fails for nobody exposes nothing, and the scrape still carries the rest.
    assert!(body
        .lines()
        .any(|l| l.starts_with("reveal_cpu_time_seconds_total{")));
}

/// The one capability docs/privileges.md names for perf is enough: nobody with CAP_PERFMON
/// (and nothing else) gets the per-CPU counters wherever root gets them.
#[test]
fn cap_perfmon_alone_brings_perf_back() {
    if !common::is_root() && skip("not root, cannot switch to nobody") {
        return;
    }
    let caps_known = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .is_some_and(|last| last >= 38); // CAP_PERFMON is 38 (Linux 5.8)
    if !caps_known && skip("kernel older than 5.8 has no CAP_PERFMON") {
        return;
    }
    let bin = binary_copy();
    let root = successes(&serve_and_scrape(&bin, false, &[]).0);
    let (body, status) = serve_and_scrape(&bin, true, &["+perfmon"]);
    assert!(status.contains("Uid:\t65534"), "{status}");
    assert!(
        status.contains("CapEff:\t0000004000000000"),
        "only CAP_PERFMON expected: {status}"
    );
    let nobody = successes(&body);
    eprintln!(
        "as root: perf {:?}, msr {:?}; as nobody+CAP_PERFMON: perf {:?}, msr {:?}",
        root.get("perf"),
        root.get("msr"),
        nobody.get("perf"),
        nobody.get("msr")
    );
    assert_eq!(nobody.get("perf"), root.get("perf"));
}
