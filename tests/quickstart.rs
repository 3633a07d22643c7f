//! The README's first command, scripts/quickstart.sh, run for real on loopback with random
//! ports and a temp state directory: it starts the exporter, Prometheus (with the stack's rules)
//! and Alertmanager (and the analyzer when the build has `reveal-analyzer run`), they answer and
//! hold data, and both ways of stopping (`down`, and Ctrl-C on a foreground run) leave nothing
//! running; and its demo fault raises the CPU alert, which resolves. The debug profile is
//! used, so the build step reuses the test build.

use reveal_e2e::prometheus::{self, Prometheus};
use reveal_e2e::{free_port, http, loopback, require_tool, Proc, TempDir};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

struct Run {
    state: TempDir,
    exporter: u16,
    prometheus: u16,
    alertmanager: u16,
    analyzer: u16,
}

impl Run {
    /// `None` (after a loud note) when Prometheus or Alertmanager is missing outside CI.
    fn new() -> Option<Run> {
        prometheus::available()?;
        require_tool("prometheus-alertmanager", "prometheus-alertmanager")?;
        Some(Run {
            state: TempDir::new("reveal-quickstart"),
            exporter: free_port(),
            prometheus: free_port(),
            alertmanager: free_port(),
            analyzer: free_port(),
        })
    }

    /// Whether a failed start's output says one of its ports was taken after the test chose
    /// it (another test's server bound it between [`free_port`] and the service's bind): the
    /// quick start refuses or stops with a clear message, and the test tries other ports.
    fn port_was_taken(output: &str) -> bool {
        output.contains("address already in use") || output.contains("in use by another process")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(root().join("scripts/quickstart.sh"));
        c.args(args)
            .args(["--profile", "debug", "--no-install"])
            .env("REVEAL_STATE_DIR", self.state.path())
            .env("REVEAL_EXPORTER_PORT", self.exporter.to_string())
            .env("REVEAL_PROMETHEUS_PORT", self.prometheus.to_string())
            .env("REVEAL_ALERTMANAGER_PORT", self.alertmanager.to_string())
            .env("REVEAL_ANALYZER_PORT", self.analyzer.to_string())
            .current_dir(root());
        c
    }

    fn ports(&self) -> [u16; 3] {
        [self.exporter, self.prometheus, self.alertmanager]
    }

    fn listening(&self) -> Vec<u16> {
        self.ports()
            .into_iter()
            .filter(|p| {
                TcpStream::connect_timeout(&loopback(*p), Duration::from_millis(200)).is_ok()
            })
            .collect()
    }

    /// Waits until no port of the run accepts connections.
    fn wait_all_closed(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.listening().is_empty() {
            assert!(
                Instant::now() < deadline,
                "still listening after stop: {:?}",
                self.listening()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(
            !self.state.path().join("pids").exists(),
            "pids file left behind"
        );
    }

    /// What a user checks first: the exporter is scraped and the recording rules and alerting
    /// rules of rules/ are loaded and produce data.
    fn check_stack(&self) {
        let prom = Prometheus::at(loopback(self.prometheus));
        let up = prom.wait_for_value(
            &format!(
                "up{{job=\"reveal\",instance=\"127.0.0.1:{}\"}}",
                self.exporter
            ),
            |v| v == 1.0,
            Duration::from_secs(30),
        );
        assert_eq!(up, 1.0);
        let util = prom.wait_for_value(
            "instance:reveal_cpu_utilization:ratio1s",
            |v| (0.0..=1.0).contains(&v),
            Duration::from_secs(30),
        );
        eprintln!("host CPU utilization through the recording rule: {util:.3}");
        let groups = prom.api("rules", &[]).unwrap();
        let names: Vec<&str> = groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|g| g["name"].as_str())
            .collect();
        for g in ["reveal-cpu", "reveal-io", "reveal-health"] {
            assert!(names.contains(&g), "rule group {g} not loaded: {names:?}");
        }
        let am = http::get(loopback(self.alertmanager), "/-/ready").unwrap();
        assert_eq!(am.status, 200);
        // Prometheus found the Alertmanager of this run.
        let ams = prom.api("alertmanagers", &[]).unwrap();
        assert!(
            ams.to_string()
                .contains(&format!("127.0.0.1:{}", self.alertmanager)),
            "Prometheus does not send to this run's Alertmanager: {ams}"
        );
    }
}

/// Runs `quickstart.sh down` when dropped, so a failing assertion leaves nothing running.
struct Down<'a>(&'a Run);

impl Drop for Down<'_> {
    fn drop(&mut self) {
        let _ = self.0.command(&["down"]).output();
    }
}

#[test]
fn detached_start_serves_the_stack_and_down_stops_it() {
    let mut attempt = 0;
    let (run, text) = loop {
        let Some(run) = Run::new() else { return };
        let out = run
            .command(&["up", "--detach"])
            .output()
            .expect("running the quick start");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if out.status.success() {
            break (run, text);
        }
        let _ = run.command(&["down"]).output();
        attempt += 1;
        if attempt < 3 && Run::port_was_taken(&text) {
            eprintln!("a port was taken by another test, trying others:\n{text}");
            continue;
        }
        panic!("quick start failed:\n{text}");
    };
    eprintln!("{text}");
    let _down = Down(&run);
    assert_eq!(
        run.listening(),
        run.ports().to_vec(),
        "not every service listens"
    );
    run.check_stack();

    let status = run.command(&["status"]).output().unwrap();
    let status = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(status.contains("running  exporter"), "{status}");
    let down = run.command(&["down"]).output().unwrap();
    assert!(
        down.status.success(),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
    run.wait_all_closed(Duration::from_secs(10));
}

/// Starts the quick start in the foreground with `args`, on other ports when another test
/// took one of its ports; `None` (after a loud note) when Prometheus or Alertmanager is
/// missing outside CI. Ready once its Prometheus answers (the build step comes first).
fn foreground(args: &[&str]) -> Option<(Run, Proc)> {
    let mut attempt = 0;
    loop {
        let run = Run::new()?;
        let mut proc = Proc::spawn("quickstart", &mut run.command(args));
        let deadline = Instant::now() + Duration::from_secs(300);
        let ready = loop {
            if http::get(loopback(run.prometheus), "/-/ready").is_ok_and(|r| r.status == 200) {
                break true;
            }
            if proc.exited().is_some() || Instant::now() > deadline {
                break false;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        if ready {
            return Some((run, proc));
        }
        let _ = run.command(&["down"]).output();
        attempt += 1;
        if attempt < 3 && Run::port_was_taken(&proc.logs()) {
            eprintln!(
                "a port was taken by another test, trying others:\n{}",
                proc.logs()
            );
            continue;
        }
        panic!("the quick start did not become ready:\n{}", proc.logs());
    }
}

/// Sends Ctrl-C (SIGINT) to a foreground quick start and waits until it has stopped.
fn interrupt(run: &Run, proc: &mut Proc) {
    let status = Command::new("kill")
        .args(["-INT", &proc.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    while proc.exited().is_none() {
        assert!(
            Instant::now() < deadline,
            "the quick start ignored Ctrl-C:\n{}",
            proc.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    run.wait_all_closed(Duration::from_secs(10));
    assert!(proc.logs().contains("stopped"), "{}", proc.logs());
}

#[test]
fn ctrl_c_on_a_foreground_run_stops_everything() {
    let Some((run, mut proc)) = foreground(&["up", "--warmup", "5s"]) else {
        return;
    };
    let _down = Down(&run);
    Prometheus::at(loopback(run.prometheus)).wait_for_value(
        "count(up{job=\"reveal\"} == 1)",
        |v| v >= 1.0,
        Duration::from_secs(30),
    );
    interrupt(&run, &mut proc);
}

/// The alerts Alertmanager holds now: (alertname, subsystem, severity) of each.
fn active_alerts(run: &Run) -> Vec<(String, String, String)> {
    let Ok(r) = http::get(loopback(run.alertmanager), "/api/v2/alerts?active=true") else {
        return Vec::new();
    };
    let alerts: serde_json::Value = serde_json::from_str(&r.text()).unwrap_or_default();
    let label = |a: &serde_json::Value, k: &str| a["labels"][k].as_str().unwrap_or("").to_string();
    alerts
        .as_array()
        .map(|a| {
            a.iter()
                .map(|a| {
                    (
                        label(a, "alertname"),
                        label(a, "subsystem"),
                        label(a, "severity"),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The README's demo, as a new user runs it: a fresh state directory, the one-minute warm-up,
/// then 20 s of load on every CPU. The CPU alert must reach Alertmanager while the load runs
/// and resolve within 30 s of its end (issue 47: the first run after a build raised none).
#[test]
fn the_demo_fault_raises_the_cpu_alert_and_it_resolves() {
    let Some((run, mut proc)) = foreground(&["up", "--demo-fault"]) else {
        return;
    };
    let _down = Down(&run);
    let deadline = Instant::now() + Duration::from_secs(400);
    while !proc.logs().contains("demo fault") {
        assert!(
            proc.exited().is_none() && Instant::now() < deadline,
            "the warm-up never ended:\n{}",
            proc.logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let fault = Instant::now();
    let cpu = |run: &Run| {
        active_alerts(run)
            .into_iter()
            .find(|(name, sub, _)| name == "RevealAnomaly" && sub == "cpu")
    };
    let fired = loop {
        if let Some(a) = cpu(&run) {
            break a;
        }
        assert!(
            fault.elapsed() < Duration::from_secs(20),
            "no cpu alert while every CPU was loaded; alerts: {:?}\n{}",
            active_alerts(&run),
            proc.logs()
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    eprintln!(
        "cpu alert ({}) in Alertmanager {:.1} s after the fault began",
        fired.2,
        fault.elapsed().as_secs_f64()
    );
    while cpu(&run).is_some() {
        assert!(
            fault.elapsed() < Duration::from_secs(20 + 30),
            "the cpu alert did not resolve within 30 s of the fault's end\n{}",
            proc.logs()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    eprintln!(
        "resolved {:.1} s after the fault began",
        fault.elapsed().as_secs_f64()
    );
    interrupt(&run, &mut proc);
}
