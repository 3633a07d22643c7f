//! `reveal-analyzer run` as a child process on a loopback port, with its config and state
//! in a temp dir that survives restarts (so a test can kill it and start it again).

use crate::{free_port, http, loopback, workspace_bin, Proc, TempDir};
use std::net::SocketAddr;
use std::time::Duration;

pub struct Analyzer {
    proc: Option<Proc>,
    addr: SocketAddr,
    dir: TempDir,
    env: Vec<(String, String)>,
    args: Vec<String>,
}

impl Analyzer {
    /// Starts the analyzer with `config`, in which `{listen}` and `{state}` are replaced by
    /// its listen address and state directory; waits until `/-/healthy` answers.
    pub fn start(config: &str) -> Analyzer {
        Analyzer::start_with_env(config, &[])
    }

    /// [`Analyzer::start`] with extra environment variables (kept for restarts).
    pub fn start_with_env(config: &str, env: &[(&str, &str)]) -> Analyzer {
        Analyzer::start_with(config, env, &[])
    }

    /// [`Analyzer::start`] with extra environment variables and command-line arguments after
    /// `run --config.file=…` (both kept for restarts).
    pub fn start_with(config: &str, env: &[(&str, &str)], args: &[&str]) -> Analyzer {
        let dir = TempDir::new("reveal-analyzer");
        let addr = loopback(free_port());
        let text = config
            .replace("{listen}", &addr.to_string())
            .replace("{state}", &dir.path().join("state").display().to_string());
        dir.write("analyzer.yml", &text);
        let mut a = Analyzer {
            proc: None,
            addr,
            dir,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            args: args.iter().map(|a| a.to_string()).collect(),
        };
        a.restart();
        a
    }

    /// Starts the process again (after [`Analyzer::kill`]) with the same config and state.
    pub fn restart(&mut self) {
        let mut proc = Proc::spawn(
            "reveal-analyzer",
            std::process::Command::new(workspace_bin("reveal-analyzer"))
                .arg("run")
                .arg(format!(
                    "--config.file={}",
                    self.dir.path().join("analyzer.yml").display()
                ))
                .args(&self.args)
                .env("RUST_LOG", "info,reveal_analyzer=debug")
                .envs(self.env.iter().map(|(k, v)| (k, v))),
        );
        proc.wait_http_ready(self.addr, "/-/healthy", Duration::from_secs(30));
        self.proc = Some(proc);
    }

    /// SIGKILL: no chance to checkpoint on the way out.
    pub fn kill(&mut self) {
        self.proc = None;
    }

    pub fn pid(&self) -> Option<u32> {
        self.proc.as_ref().map(Proc::pid)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its state directory (checkpoint, and reports when the config puts them there).
    pub fn state_dir(&self) -> std::path::PathBuf {
        self.dir.path().join("state")
    }

    pub fn logs(&self) -> String {
        self.proc.as_ref().map(Proc::logs).unwrap_or_default()
    }

    /// Status of `GET path` (0 when nothing answers).
    pub fn status(&self, path: &str) -> u16 {
        http::get(self.addr, path).map_or(0, |r| r.status)
    }

    /// The value of one unlabelled series (or the sum over a labelled family's lines that
    /// start with `name{` when `name` has no braces) from its `/metrics`.
    pub fn metric(&self, name: &str) -> Option<f64> {
        let text = http::get(self.addr, "/metrics").ok()?.text();
        let mut sum = None;
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (series, value) = line.rsplit_once(' ')?;
            if series == name || series.starts_with(&format!("{name}{{")) {
                *sum.get_or_insert(0.0) += value.parse::<f64>().ok()?;
            }
        }
        sum
    }

    /// CPU time the process used so far (user + system), from /proc/PID/stat.
    pub fn cpu_seconds(&self) -> Option<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid()?)).ok()?;
        // Fields after the command name, which is in parentheses and may hold spaces.
        let rest = &stat[stat.rfind(')')? + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
        // USER_HZ is 100 on every Linux architecture Reveal runs on.
        Some(ticks / 100.0)
    }
}
