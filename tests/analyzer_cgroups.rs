//! Which job, end to end on this machine: two new cgroups in the host's cgroup v2 hierarchy,
//! one with a steady light load and one that starts a CPU hog on every CPU; the exporter
//! reads them (`--collector.cgroups`), Prometheus scrapes it every 100 ms, and the analyzer's
//! CPU alert must carry the hog's cgroup as its `cgroup` label and name it in its summary,
//! never the steady one as the cause.
//!
//! Needs root (to create cgroups) and a cgroup v2 hierarchy; outside CI it skips loudly
//! without them, in CI it fails.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use reveal_e2e::analyzer::Analyzer;
use reveal_e2e::recorder::Request;
use reveal_e2e::stack::Stack;
use reveal_e2e::{alertmanager, in_ci, is_root, prometheus};

fn config(prom: &str, am: &str) -> String {
    format!(
        "listen_address: {{listen}}\nstate_dir: {{state}}\nsource:\n  prometheus:\n    url: {prom}\n    timeout: 3s\n\
         metrics:\n\
         \x20 - expr: sum without (cpu) (rate(reveal_cpu_time_seconds_total[1s]))\n    subsystem: cpu\n    kind: dynamic\n\
         \x20 - expr: rate(reveal_cpu_context_switches_total[1s])\n    subsystem: cpu\n    kind: dynamic\n\
         \x20 - expr: reveal_cpu_procs_running\n    subsystem: cpu\n    kind: dynamic\n\
         analysis:\n  warmup: 1m\n  baseline: 2m\n  refit_every: 5m\n\
         outputs:\n  alertmanager:\n    urls: [{am}]\n    resend_interval: 2s\n"
    )
}

/// The host's cgroup v2 hierarchy: `/sys/fs/cgroup` on a unified host, its `unified`
/// folder on a hybrid one (this VM).
fn v2_root() -> Option<PathBuf> {
    ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        .into_iter()
        .map(PathBuf::from)
        .find(|d| d.join("cgroup.controllers").is_file())
}

/// A cgroup made for the test, removed (after its tasks are gone) when dropped.
struct Cgroup {
    path: PathBuf,
    tasks: Vec<Child>,
}

impl Cgroup {
    fn create(root: &Path, name: &str) -> Cgroup {
        let path = root.join(name);
        std::fs::create_dir(&path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
        Cgroup {
            path,
            tasks: Vec::new(),
        }
    }

    /// Runs `script` in this cgroup (the shell moves itself in first), at most `limit`.
    fn run(&mut self, script: &str, limit: Duration) {
        let child = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "echo $$ > {}/cgroup.procs && exec timeout {} sh -c '{script}'",
                self.path.display(),
                limit.as_secs()
            ))
            .spawn()
            .unwrap();
        self.tasks.push(child);
    }

    /// Ends every task of the cgroup (`cgroup.kill`, which also reaches the loops that
    /// `timeout` started: a signal to `timeout` alone would leave them running).
    fn stop(&mut self) {
        if std::fs::write(self.path.join("cgroup.kill"), "1").is_err() {
            for c in &mut self.tasks {
                let _ = c.kill();
            }
        }
        for c in &mut self.tasks {
            let _ = c.wait();
        }
        self.tasks.clear();
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        self.stop();
        // The kernel may hold a cgroup busy for a moment after its last task exited.
        for _ in 0..100 {
            if !self.path.exists() || std::fs::remove_dir(&self.path).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!("could not remove {}", self.path.display());
    }
}

fn cpu_alert(r: &Request, instance: &str) -> Option<serde_json::Value> {
    let v = r.json();
    if v["status"] != "firing" {
        return None;
    }
    v["alerts"].as_array()?.iter().find_map(|x| {
        (x["labels"]["instance"] == instance && x["labels"]["subsystem"] == "cpu")
            .then(|| x.clone())
    })
}

#[test]
fn a_cpu_hog_alert_names_the_hogs_cgroup_not_the_steady_one() {
    let skip = |why: &str| {
        assert!(
            !in_ci(),
            "the cgroup end-to-end test cannot run in CI: {why}"
        );
        eprintln!("\n!!!!! SKIPPED the cgroup end-to-end test: {why} !!!!!\n");
    };
    if !is_root() {
        return skip("not root (cannot create cgroups)");
    }
    let Some(root) = v2_root() else {
        return skip("no cgroup v2 hierarchy on this host");
    };
    if prometheus::available().is_none() || alertmanager::available().is_none() {
        return;
    }
    let tag = format!("reveal-e2e-{}", std::process::id());
    let (steady_name, hog_name) = (format!("{tag}-steady"), format!("{tag}-hog"));
    let mut steady = Cgroup::create(&root, &steady_name);
    let mut hog = Cgroup::create(&root, &hog_name);
    // About a twentieth of a core, all through the test.
    steady.run(
        "while :; do head -c 200000 /dev/urandom > /dev/null; sleep 0.05; done",
        Duration::from_secs(400),
    );
    let Stack {
        target,
        exporter: _exporter,
        prom,
        hook,
        am,
    } = Stack::start_with(&[
        "--collector.cgroups".to_string(),
        format!("--collector.cgroups.include={tag}-.*"),
    ]);
    let an = Analyzer::start(&config(&prom.url(), &am.url()));
    let deadline = Instant::now() + Duration::from_secs(150);
    while an.status("/-/ready") != 200 {
        assert!(Instant::now() < deadline, "never ready:\n{}", an.logs());
        std::thread::sleep(Duration::from_millis(500));
    }
    std::thread::sleep(Duration::from_secs(10));
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let fault_start = Instant::now();
    for _ in 0..cpus {
        hog.run("while :; do :; done", Duration::from_secs(20));
    }
    let alert = hook.wait_for(Duration::from_secs(30), |r| {
        r.at >= fault_start && cpu_alert(r, &target).is_some()
    });
    hog.stop();
    let Some(alert) = alert else {
        panic!(
            "no cpu alert within 30 s of a hog on every CPU; webhooks: {:?}\n{}",
            hook.bodies(),
            an.logs()
        );
    };
    let a = cpu_alert(&alert, &target).unwrap();
    eprintln!(
        "fault start → cpu alert: {:.1} s; {}",
        alert.at.duration_since(fault_start).as_secs_f64(),
        a["annotations"]
    );
    assert_eq!(
        a["labels"]["cgroup"],
        hog_name.as_str(),
        "{a}\n{}",
        an.logs()
    );
    let summary = a["annotations"]["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!("cgroup `{hog_name}` took")),
        "{summary}"
    );
    assert!(
        !summary.contains(&format!("cgroup `{steady_name}` took")),
        "{summary}"
    );
    let cgroups = a["annotations"]["cgroups"].as_str().unwrap_or_default();
    assert!(
        cgroups.starts_with(&format!("cgroup `{hog_name}`")),
        "{cgroups}"
    );
}
