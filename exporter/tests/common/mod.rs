//! Helpers shared by the exporter's integration tests: fixture trees, rendering, and a small
//! reader of the text exposition format.
#![allow(dead_code)] // each test binary uses a different subset

use reveal_exporter::collectors::{Settings, COLLECTORS};
use reveal_exporter::paths::Paths;
use reveal_exporter::runner::{Format, Runner};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Sample names whose values change from run to run, left out of golden comparisons.
/// Their HELP and TYPE lines stay, so the families are still checked.
pub const NONDETERMINISTIC: &[&str] = &[
    // Wall-clock time of each collector's update.
    "reveal_exporter_collector_duration_seconds",
    // Carries the crate version and git commit, which would churn every golden file.
    "reveal_exporter_build_info",
    // The exporter's (here: the test's) own process.
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "process_virtual_memory_bytes",
    "process_start_time_seconds",
    "process_open_fds",
    "process_max_fds",
    "process_threads",
];

/// Collectors that read the running host through system calls or libraries (perf_event_open,
/// MSR device files, NVML) rather than files under procfs and sysfs, so a fixture tree cannot
/// stand in for their source; they are left out of fixture renders (their parsers and
/// mappings have their own recorded fixtures and tests).
pub const HOST_ONLY: &[&str] = &["perf", "msr", "gpu"];

/// The root of a fixture tree under `tests/fixtures/`.
pub fn fixture(tree: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(tree)
}

/// Renders one scrape of `tree` in the Prometheus text format with every collector enabled
/// except [`HOST_ONLY`].
pub fn render_tree(tree: &str) -> String {
    render_tree_n(tree, 1).pop().expect("one render")
}

/// Renders `n` consecutive scrapes of `tree` with one runner, as a served exporter would:
/// collectors keep state between scrapes (cached probes, counter unwrapping), and a second
/// scrape of unchanged files must expose the same thing as the first.
pub fn render_tree_n(tree: &str, n: usize) -> Vec<String> {
    let root = fixture(tree);
    assert!(root.is_dir(), "no fixture tree {}", root.display());
    let runner = runner_on(&root);
    (0..n).map(|_| runner.render_as(Format::Text)).collect()
}

/// A runner of every collector except [`HOST_ONLY`] on the tree at `root` (`proc/`, `sys/`).
pub fn runner_on(root: &Path) -> Runner {
    let names: Vec<&str> = COLLECTORS
        .iter()
        .map(|e| e.name)
        .filter(|n| !HOST_ONLY.contains(n))
        .collect();
    let settings = Settings {
        paths: Paths::new(root.join("proc"), root.join("sys")),
        ..Default::default()
    };
    Runner::new(&names, &settings).expect("every table name is known")
}

/// Drops the sample lines of [`NONDETERMINISTIC`] families.
pub fn strip_nondeterministic(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let name = line.split(['{', ' ']).next().unwrap_or("");
        if !line.starts_with('#') && NONDETERMINISTIC.contains(&name) {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// One sample line of the text format.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Sample {
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses the sample lines of a text exposition; panics (this is a test helper) on a line it
/// cannot read, so a malformed exposition fails the test that reads it.
pub fn exposition_samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| parse_sample(l).unwrap_or_else(|| panic!("unreadable sample line: {l:?}")))
        .collect()
}

fn parse_sample(line: &str) -> Option<Sample> {
    let name_end = line.find(['{', ' '])?;
    let name = line[..name_end].to_string();
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(r) = rest.strip_prefix('{') {
        rest = r;
        loop {
            rest = rest.trim_start_matches(',');
            if let Some(r) = rest.strip_prefix('}') {
                rest = r;
                break;
            }
            let eq = rest.find('=')?;
            let key = rest[..eq].to_string();
            rest = rest[eq + 1..].strip_prefix('"')?;
            let mut val = String::new();
            let mut chars = rest.char_indices();
            let end = loop {
                let (i, c) = chars.next()?;
                match c {
                    '\\' => match chars.next()?.1 {
                        'n' => val.push('\n'),
                        other => val.push(other),
                    },
                    '"' => break i,
                    c => val.push(c),
                }
            };
            rest = &rest[end + 1..];
            labels.push((key, val));
        }
    }
    let mut fields = rest.split_ascii_whitespace();
    let value = match fields.next()? {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some(Sample {
        name,
        labels,
        value,
    })
}

/// Finds an external tool on PATH. When it is missing the test is skipped with a loud message,
/// except under CI (env `CI` set), where a missing tool fails the test instead.
pub fn require_tool(name: &str, package: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        let msg =
            format!("{name} not found on PATH (Debian package {package}); .ci/run installs it");
        let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "0" && v != "false");
        if ci {
            panic!("{msg}");
        }
        eprintln!("\n!!!!! SKIPPED: {msg} !!!!!\n");
    }
    found
}

/// Sends a blocking HTTP/1.1 GET to 127.0.0.1 and returns (status, headers, body).
pub fn http_get(
    addr: std::net::SocketAddr,
    path: &str,
    accept: &str,
) -> std::io::Result<(u16, String, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(2))?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok((status, head.to_string(), body.to_string()))
}

/// Copies a fixture tree (every file but READMEs) to `to`, listing the files copied.
pub fn copy_tree(from: &Path, to: &Path, files: &mut Vec<PathBuf>) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest, files);
        } else if e.file_name() != "README.md" {
            std::fs::copy(e.path(), &dest).unwrap();
            files.push(dest);
        }
    }
}

/// Pipes `text` into `promtool check metrics`; asserts exit 0 and no output at all (promtool
/// prints lint findings such as a counter without `_total`, or a missing HELP).
pub fn promtool_check(promtool: &Path, what: &str, text: &str) {
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running promtool");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool check metrics on {what}: {} \n{said}",
        out.status
    );
}

/// Whether the test runs with effective uid 0 (/proc/self/status "Uid:\treal\teffective\t…").
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}
