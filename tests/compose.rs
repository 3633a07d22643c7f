//! docker-compose.yml, checked statically (no Docker engine needed): Debian's `docker-compose
//! config` accepts it, and what it says agrees with the rest of the stack — the exporter gets
//! the host's /proc, /sys, PID and network namespaces and its privileges, every mounted file
//! exists, the addresses in rules/prometheus.yml, deploy/analyzer.yml and Grafana's datasources
//! are the ones the services listen on, and the quick start uses the same configuration files.

use reveal_e2e::documented_capabilities;
use reveal_e2e::http::authority;
use reveal_e2e::require_tool;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use yaml_serde::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn yaml(path: &str) -> Value {
    let text = std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The compose file as `docker-compose config` resolves it (absolute paths, defaults filled);
/// `None` after a loud skip when docker-compose is missing outside CI.
fn resolved() -> Option<Value> {
    let bin = require_tool("docker-compose", "docker-compose")?;
    let out = Command::new(&bin)
        .args([
            "--project-directory",
            ".",
            "-f",
            "docker-compose.yml",
            "config",
        ])
        .current_dir(root())
        .output()
        .expect("running docker-compose");
    assert!(
        out.status.success(),
        "docker-compose config rejects docker-compose.yml:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(yaml_serde::from_slice(&out.stdout).expect("docker-compose config prints YAML"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_sequence()
        .map(|s| {
            s.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The value of `--flag=value` in a command list.
fn flag(cmd: &[String], name: &str) -> Option<String> {
    cmd.iter()
        .find_map(|a| a.strip_prefix(&format!("{name}=")).map(str::to_string))
}

/// Bind mounts of a service: container path -> host path.
fn binds(service: &Value) -> BTreeMap<String, PathBuf> {
    strings(&service["volumes"])
        .iter()
        .filter_map(|v| {
            let mut parts = v.split(':');
            let (src, dst) = (parts.next()?, parts.next()?);
            src.starts_with('/')
                .then(|| (dst.to_string(), PathBuf::from(src)))
        })
        .collect()
}

/// Maps a path inside a container to the host file it comes from, through its bind mounts.
fn host_path(service: &Value, inside: &str) -> PathBuf {
    let b = binds(service);
    let (dst, src) = b
        .iter()
        .filter(|(dst, _)| inside == dst.as_str() || inside.starts_with(&format!("{dst}/")))
        .max_by_key(|(dst, _)| dst.len())
        .unwrap_or_else(|| panic!("{inside} is not under any bind mount of {b:?}"));
    src.join(inside[dst.len()..].trim_start_matches('/'))
}

#[test]
fn compose_file_is_valid() {
    let Some(c) = resolved() else { return };
    let services: Vec<&str> = c["services"]
        .as_mapping()
        .unwrap()
        .keys()
        .filter_map(|k| k.as_str())
        .collect();
    for s in [
        "exporter",
        "prometheus",
        "alertmanager",
        "analyzer",
        "grafana",
    ] {
        assert!(services.contains(&s), "service {s} missing: {services:?}");
    }
    // Every bind-mounted file or directory of the repository exists.
    for (name, svc) in c["services"].as_mapping().unwrap() {
        for (dst, src) in binds(svc) {
            assert!(
                src.exists(),
                "{name:?}: {} (mounted at {dst}) does not exist",
                src.display()
            );
        }
    }
    // The two binaries are built from targets of the Dockerfile.
    let dockerfile = std::fs::read_to_string(root().join("Dockerfile")).unwrap();
    for s in ["exporter", "analyzer"] {
        let target = c["services"][s]["build"]["target"]
            .as_str()
            .expect("build target");
        assert!(
            dockerfile
                .lines()
                .any(|l| l.starts_with("FROM ") && l.ends_with(&format!(" AS {target}"))),
            "Dockerfile has no stage {target}"
        );
    }
}

#[test]
fn exporter_sees_the_host() {
    let Some(c) = resolved() else { return };
    let e = &c["services"]["exporter"];
    // perf and MSR need the capabilities docs/privileges.md names, no more; /proc/net is per
    // network namespace, so the host's network counters need the host network.
    assert_ne!(
        e["privileged"].as_bool(),
        Some(true),
        "the exporter needs capabilities, not privileged"
    );
    let caps: Vec<String> = strings(&e["cap_add"])
        .iter()
        .map(|c| format!("CAP_{c}"))
        .collect();
    assert_eq!(
        caps,
        documented_capabilities(),
        "cap_add and docs/privileges.md disagree"
    );
    assert_eq!(e["pid"].as_str(), Some("host"));
    assert_eq!(e["network_mode"].as_str(), Some("host"));
    let vols = strings(&e["volumes"]);
    for v in ["/proc:/host/proc:ro", "/sys:/host/sys:ro"] {
        assert!(
            vols.contains(&v.to_string()),
            "exporter lacks {v}: {vols:?}"
        );
    }
    let cmd = strings(&e["command"]);
    assert_eq!(flag(&cmd, "--path.procfs").as_deref(), Some("/host/proc"));
    assert_eq!(flag(&cmd, "--path.sysfs").as_deref(), Some("/host/sys"));
    // The MSR devices: mounted where --path.devfs points, and admitted by the device cgroup.
    let devfs = flag(&cmd, "--path.devfs").expect("--path.devfs");
    assert!(
        vols.contains(&format!("/dev/cpu:{devfs}/cpu:ro")),
        "{vols:?}"
    );
    assert!(strings(&e["device_cgroup_rules"])
        .iter()
        .any(|r| r.starts_with("c 202:")));
    // The shipped selection, as the quick start passes it.
    let sel = flag(&cmd, "--metrics.selection").expect("--metrics.selection");
    assert_eq!(host_path(e, &sel), root().join("deploy/selection.yml"));
    let quickstart = std::fs::read_to_string(root().join("scripts/quickstart.sh")).unwrap();
    assert!(
        quickstart.contains("--metrics.selection=\"$ROOT/deploy/selection.yml\""),
        "the quick start's exporter does not read deploy/selection.yml"
    );
    // Two cadences: the fast series of deploy/selection-fast.yml, here and in the quick start,
    // scraped as rules/prometheus.yml's two jobs of one target.
    let fast = flag(&cmd, "--metrics.fast").expect("--metrics.fast");
    assert_eq!(
        host_path(e, &fast),
        root().join("deploy/selection-fast.yml")
    );
    assert!(
        quickstart.contains("--metrics.fast=\"$ROOT/deploy/selection-fast.yml\""),
        "the quick start's exporter does not read deploy/selection-fast.yml"
    );
    let prom = yaml("rules/prometheus.yml");
    let job = |name: &str| {
        prom["scrape_configs"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|j| j["job_name"].as_str() == Some(name))
            .unwrap_or_else(|| panic!("no job {name} in rules/prometheus.yml"))
            .clone()
    };
    let (f, s) = (job("reveal"), job("reveal-slow"));
    assert_eq!(strings(&f["params"]["cadence"]), ["fast"]);
    assert_eq!(strings(&s["params"]["cadence"]), ["slow"]);
    assert_eq!(f["scrape_interval"].as_str(), Some("100ms"));
    assert_eq!(s["scrape_interval"].as_str(), Some("15s"));
    assert_eq!(
        f["static_configs"], s["static_configs"],
        "both jobs scrape the same target, so a host is one instance"
    );
}

#[test]
fn systemd_units_grant_the_documented_capabilities() {
    let unit =
        std::fs::read_to_string(root().join("deploy/systemd/reveal-exporter.service")).unwrap();
    let field = |k: &str| -> Vec<String> {
        let mut v: Vec<String> = unit
            .lines()
            .filter_map(|l| l.strip_prefix(&format!("{k}=")))
            .flat_map(|l| l.split_whitespace().map(str::to_string))
            .collect();
        v.sort();
        v
    };
    assert_eq!(field("AmbientCapabilities"), documented_capabilities());
    assert_eq!(field("CapabilityBoundingSet"), documented_capabilities());
    assert!(
        unit.contains("--path.procfs") || !unit.contains("/host/"),
        "unit reads another root without saying so"
    );
    // rules/prometheus.yml scrapes ?cadence=fast and ?cadence=slow, which need --metrics.fast,
    // from the file the unit's install steps put there.
    assert!(
        unit.contains("--metrics.fast=/etc/reveal/selection-fast.yml")
            && unit.contains("deploy/selection-fast.yml /etc/reveal/selection-fast.yml"),
        "the exporter's unit does not serve the two cadences rules/prometheus.yml scrapes"
    );
    let analyzer =
        std::fs::read_to_string(root().join("deploy/systemd/reveal-analyzer.service")).unwrap();
    assert!(analyzer.contains("--config.file=/etc/reveal/analyzer.yml"));
    // The analyzer needs no privileges at all.
    assert!(
        analyzer.contains("CapabilityBoundingSet=\n")
            || analyzer.lines().any(|l| l == "CapabilityBoundingSet=")
    );
}

#[test]
fn addresses_agree_across_the_stack() {
    let Some(c) = resolved() else { return };
    let svc = |s: &str| c["services"][s].clone();
    let listen = |s: &str| {
        flag(&strings(&svc(s)["command"]), "--web.listen-address")
            .unwrap_or_else(|| panic!("{s} has no --web.listen-address"))
    };
    // Prometheus reads the repository's rules/prometheus.yml, with the remote-write receiver on.
    let pcmd = strings(&svc("prometheus")["command"]);
    assert!(
        pcmd.contains(&"--web.enable-remote-write-receiver".to_string()),
        "{pcmd:?}"
    );
    let pconf = host_path(&svc("prometheus"), &flag(&pcmd, "--config.file").unwrap());
    assert_eq!(pconf, root().join("rules/prometheus.yml"));
    let prom = yaml("rules/prometheus.yml");
    let targets = |job: &str| -> Vec<String> {
        let jobs = prom["scrape_configs"].as_sequence().unwrap();
        let j = jobs
            .iter()
            .find(|j| j["job_name"].as_str() == Some(job))
            .unwrap_or_else(|| panic!("no job {job}"));
        strings(&j["static_configs"][0]["targets"])
    };
    assert_eq!(targets("reveal"), vec![listen("exporter")]);
    assert_eq!(targets("prometheus"), vec![listen("prometheus")]);
    assert_eq!(targets("alertmanager"), vec![listen("alertmanager")]);
    assert_eq!(
        strings(&prom["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"]),
        vec![listen("alertmanager")]
    );
    // Every rule file Prometheus loads is mounted beside its config.
    for f in strings(&prom["rule_files"]) {
        assert!(
            pconf.parent().unwrap().join(&f).is_file(),
            "rule file {f} not mounted"
        );
    }
    let acmd = strings(&svc("alertmanager")["command"]);
    assert_eq!(
        host_path(&svc("alertmanager"), &flag(&acmd, "--config.file").unwrap()),
        root().join("rules/alertmanager.yml")
    );

    // The analyzer reads the mounted deploy/analyzer.yml, which points at the same services.
    let an_cmd = strings(&svc("analyzer")["command"]);
    let an_conf = an_cmd
        .iter()
        .position(|a| a == "--config.file")
        .map(|i| an_cmd[i + 1].clone())
        .or_else(|| flag(&an_cmd, "--config.file"))
        .expect("analyzer --config.file");
    assert_eq!(
        host_path(&svc("analyzer"), &an_conf),
        root().join("deploy/analyzer.yml")
    );
    let an = yaml("deploy/analyzer.yml");
    assert_eq!(
        authority(an["source"]["prometheus"]["url"].as_str().unwrap()),
        listen("prometheus")
    );
    assert_eq!(
        authority(an["outputs"]["remote_write"]["url"].as_str().unwrap()),
        listen("prometheus")
    );
    assert_eq!(
        strings(&an["outputs"]["alertmanager"]["urls"])
            .iter()
            .map(|u| authority(u).to_string())
            .collect::<Vec<_>>(),
        vec![listen("alertmanager")]
    );
    assert_eq!(
        targets("reveal-analyzer"),
        vec![an["listen_address"].as_str().unwrap().to_string()]
    );

    // Grafana's provisioned datasources point at Prometheus and Alertmanager.
    let g = svc("grafana");
    let prov = c["services"]["grafana"]["environment"]["GF_PATHS_PROVISIONING"]
        .as_str()
        .unwrap()
        .to_string();
    let prov_host = host_path(&g, &prov);
    let ds: Value = yaml_serde::from_str(
        &std::fs::read_to_string(prov_host.join("datasources/reveal.yml")).unwrap(),
    )
    .unwrap();
    for d in ds["datasources"].as_sequence().unwrap() {
        let want = if d["type"] == "prometheus" {
            listen("prometheus")
        } else {
            listen("alertmanager")
        };
        assert_eq!(
            authority(d["url"].as_str().unwrap()),
            want,
            "datasource {:?}",
            d["name"]
        );
    }
    // The dashboards provider reads the mounted grafana/dashboards, and UI edits are off.
    let dp: Value = yaml_serde::from_str(
        &std::fs::read_to_string(prov_host.join("dashboards/reveal.yml")).unwrap(),
    )
    .unwrap();
    let p = &dp["providers"][0];
    assert_eq!(p["allowUiUpdates"].as_bool(), Some(false));
    assert_eq!(
        host_path(&g, p["options"]["path"].as_str().unwrap()),
        root().join("grafana/dashboards")
    );
}

#[test]
fn quick_start_uses_the_same_config_files() {
    let script = std::fs::read_to_string(root().join("scripts/quickstart.sh"))
        .expect("scripts/quickstart.sh");
    for f in [
        "rules/prometheus.yml",
        "rules/alertmanager.yml",
        "deploy/analyzer.yml",
    ] {
        assert!(script.contains(f), "the quick start does not use {f}");
        assert!(Path::new(&root().join(f)).is_file());
    }
}

#[test]
fn stack_analyzer_config_is_accepted_by_the_analyzer() {
    let path = root().join("deploy/analyzer.yml");
    if let Err(e) = reveal_analyzer::config::Config::load(&path) {
        panic!("{e}");
    }
}

#[test]
fn systemd_units_pass_systemd_analyze_verify() {
    let Some(sa) = require_tool("systemd-analyze", "systemd") else {
        return;
    };
    // verify checks that ExecStart binaries exist: point the units at this build's.
    let dir = reveal_e2e::TempDir::new("reveal-units");
    let bin = reveal_e2e::target_dir();
    let mut units = Vec::new();
    for name in ["reveal-exporter.service", "reveal-analyzer.service"] {
        let text = std::fs::read_to_string(root().join("deploy/systemd").join(name)).unwrap();
        units.push(dir.write(
            name,
            &text.replace("/usr/local/bin/", &format!("{}/", bin.display())),
        ));
    }
    let out = Command::new(sa)
        .arg("verify")
        .args(&units)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.trim().is_empty(),
        "systemd-analyze verify:\n{text}"
    );
}

/// The units' exposure as `systemd-analyze security` scores it (0 best, 10 worst), offline:
/// 2.2 for the exporter (it needs CAP_PERFMON, CAP_SYS_RAWIO, the network and /dev/cpu) and
/// 1.3 for the analyzer, both "OK"; a change that loosens either past these bars fails here.
#[test]
fn systemd_units_keep_their_security_exposure() {
    let Some(sa) = require_tool("systemd-analyze", "systemd") else {
        return;
    };
    for (name, bar) in [
        ("reveal-exporter.service", "25"),
        ("reveal-analyzer.service", "15"),
    ] {
        let out = Command::new(&sa)
            .args(["security", "--offline=true", "--no-pager"])
            .arg(format!("--threshold={bar}"))
            .arg(root().join("deploy/systemd").join(name))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let overall = text
            .lines()
            .find(|l| l.contains("Overall exposure level"))
            .unwrap_or("no overall line");
        assert!(out.status.success(), "{name}: above {bar}/100: {overall}");
    }
}
