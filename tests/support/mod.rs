//! Support for the end-to-end tests: real binaries on loopback, with nothing left behind.
//!
//! - [`free_port`], [`TempDir`] (removed on drop), [`Proc`] (a child process killed on drop,
//!   its output kept in a log file that [`Proc::logs`] shows on failure);
//! - [`workspace_bin`] finds this workspace's binaries in `target/<profile>/`;
//! - [`http`]: a tiny blocking HTTP/1.1 client and [`wait_http_ready`];
//! - [`prometheus`]: Debian's `/usr/bin/prometheus` in a temp dir, with PromQL helpers.
//!
//! ```no_run
//! use reveal_e2e::{prometheus::Prometheus, Proc, free_port, workspace_bin};
//! let port = free_port();
//! let exporter = Proc::spawn("exporter", std::process::Command::new(workspace_bin("reveal-exporter"))
//!     .arg(format!("--web.listen-address=127.0.0.1:{port}")));
//! let prom = Prometheus::scraping(&[format!("127.0.0.1:{port}")], "100ms").start();
//! let n = prom.wait_for_value("count(up == 1)", |v| v >= 1.0, std::time::Duration::from_secs(20));
//! ```
#![deny(clippy::all)]

pub mod alertmanager;
pub mod analyzer;
pub mod disk;
pub mod fuzz;
pub mod http;
pub mod netns;
pub mod prometheus;
pub mod recorder;
pub mod stack;
pub mod tls;
pub mod victoria;

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// A port that was free a moment ago on 127.0.0.1 (the OS picks it; whoever binds it next
/// may still race with another process, which loopback tests accept).
/// The capabilities docs/privileges.md grants the exporter (its systemd example's
/// `AmbientCapabilities=` line), sorted: what the compose file, the systemd unit and the
/// Kubernetes DaemonSet must grant.
pub fn documented_capabilities() -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/privileges.md");
    let doc = std::fs::read_to_string(&path).expect("docs/privileges.md");
    let line = doc
        .lines()
        .find_map(|l| l.strip_prefix("AmbientCapabilities="))
        .expect("docs/privileges.md has an AmbientCapabilities= line");
    let mut caps: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    caps.sort();
    caps
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("binding 127.0.0.1:0")
}

/// A loopback port that stays taken for the rest of the test process and closes every
/// connection unanswered: a scrape target that is down. A port from [`free_port`] left
/// unbound could be taken by another test's server and answer.
pub fn dead_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binding 127.0.0.1:0");
    let port = listener.local_addr().expect("local address").port();
    std::thread::spawn(move || listener.incoming().for_each(drop));
    port
}

/// `127.0.0.1:port`.
pub fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// The effective uid is the second number on the `Uid:` line of `/proc/self/status`.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

/// Whether end-to-end tests must run (CI) rather than skip when a tool is missing.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Writes the page cache's dirty pages to disk and waits for it (`sync`). A fault-injection
/// test calls it before starting the stack: a build that just ended leaves hundreds of
/// megabytes that the kernel writes back over the next half minute, and the analyzer's
/// one-minute baseline would learn that write-back as the host's normal.
pub fn flush_page_cache() {
    let ok = Command::new("sync").status().is_ok_and(|s| s.success());
    assert!(ok, "sync failed");
}

/// Finds an external tool; when it is missing, skips loudly (returns `None`) outside CI and
/// fails the test under CI, where `.ci/run` must have installed it.
pub fn require_tool(path_or_name: &str, debian_package: &str) -> Option<PathBuf> {
    let p = Path::new(path_or_name);
    let found = if p.is_absolute() {
        p.is_file().then(|| p.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(path_or_name))
                .find(|c| c.is_file())
        })
    };
    if found.is_none() {
        let msg = format!(
            "{path_or_name} not found (Debian package {debian_package}; .ci/run installs it)"
        );
        if in_ci() {
            panic!("{msg}");
        }
        eprintln!("\n!!!!! SKIPPED: {msg} !!!!!\n");
    }
    found
}

/// The directory cargo put this test binary's workspace binaries in (`target/<profile>/`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<test>-<hash>: two levels up is target/<profile>.
    exe.parent()
        .and_then(Path::parent)
        .expect("test binary under target/<profile>/deps")
        .to_path_buf()
}

/// A binary of this workspace, built by `cargo nextest run --workspace` (which builds the
/// binaries of every package that has integration tests) or by `cargo build`.
pub fn workspace_bin(name: &str) -> PathBuf {
    let path = target_dir().join(name);
    assert!(
        path.is_file(),
        "{} does not exist: build it first (`cargo nextest run --workspace` builds every \
         workspace binary; with `-p` alone run `cargo build -p <its package>`)",
        path.display()
    );
    path
}

/// A temporary directory, removed with its contents on drop (set `REVEAL_KEEP_TMP=1` to keep
/// it for a post-mortem).
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(prefix: &str) -> TempDir {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "{prefix}-{}-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos()
        );
        let path = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&path)
            .unwrap_or_else(|e| panic!("creating {}: {e}", path.display()));
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `contents` to `name` inside the directory and returns its path.
    pub fn write(&self, name: &str, contents: &str) -> PathBuf {
        let p = self.0.join(name);
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(&p, contents).unwrap_or_else(|e| panic!("writing {}: {e}", p.display()));
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("REVEAL_KEEP_TMP").is_some() {
            eprintln!("keeping {}", self.0.display());
            return;
        }
        // Best effort: a leftover temp dir must not turn a passing test into a failing one.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process that is killed (and reaped) when dropped, so a failing assertion never
/// leaves a server behind. Its stdout and stderr go to a log file in its own temp dir.
#[derive(Debug)]
pub struct Proc {
    name: String,
    child: Child,
    log: PathBuf,
    _dir: TempDir,
}

impl Proc {
    /// Starts `cmd` (its stdio is redirected to the log file). Panics if it cannot start.
    pub fn spawn(name: &str, cmd: &mut Command) -> Proc {
        let dir = TempDir::new(&format!("reveal-{name}-log"));
        let log = dir.path().join("output.log");
        let out = std::fs::File::create(&log).unwrap();
        let err = out.try_clone().unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name} ({cmd:?}): {e}"));
        Proc {
            name: name.to_string(),
            child,
            log,
            _dir: dir,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the process wrote so far (stdout and stderr interleaved).
    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `Some(status)` if the process has exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Waits until `GET http://addr{path}` answers 200, failing with the process's logs if it
    /// exits or the timeout passes.
    pub fn wait_http_ready(&mut self, addr: SocketAddr, path: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(st) = self.exited() {
                panic!(
                    "{} exited ({st}) before it was ready:\n{}",
                    self.name,
                    self.logs()
                );
            }
            match http::get(addr, path) {
                Ok(r) if r.status == 200 => return,
                _ if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
                res => panic!(
                    "{} not ready at http://{addr}{path} after {timeout:?} ({:?}):\n{}",
                    self.name,
                    res.map(|r| r.status),
                    self.logs()
                ),
            }
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- {} output ---\n{}", self.name, self.logs());
        }
    }
}

/// Waits for `GET http://addr{path}` to answer 200 (for servers not started through [`Proc`]).
pub fn wait_http_ready(addr: SocketAddr, path: &str, timeout: Duration) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    loop {
        match http::get(addr, path) {
            Ok(r) if r.status == 200 => return Ok(()),
            res if Instant::now() >= deadline => {
                return Err(format!(
                    "http://{addr}{path} not ready after {timeout:?}: {:?}",
                    res.map(|r| r.status)
                ))
            }
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_dir_and_process_are_cleaned_up() {
        let dir = TempDir::new("reveal-support-test");
        let file = dir.write("a/b.txt", "x");
        assert!(file.is_file());
        let path = dir.path().to_path_buf();
        drop(dir);
        assert!(!path.exists(), "temp dir left behind");

        let p = Proc::spawn("sleep", Command::new("sleep").arg("30"));
        let pid = p.pid();
        assert!(Path::new(&format!("/proc/{pid}")).exists());
        drop(p);
        // Killed and reaped: no process, not even a zombie, keeps the pid.
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "child {pid} left behind"
        );
    }

    #[test]
    fn free_ports_are_bindable() {
        let port = free_port();
        assert!(TcpListener::bind(loopback(port)).is_ok());
    }
}
