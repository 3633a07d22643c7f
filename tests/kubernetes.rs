//! deploy/kubernetes/, checked offline (no cluster needed):
//!
//! - the PrometheusRule objects hold exactly the groups of the rule files of rules/ (both sides
//!   parsed and compared), and `scripts/kubernetes_rules.py --check` finds them up to date;
//! - every object passes the Kubernetes OpenAPI schemas (PyPI's kubernetes-validate, strict, at
//!   the oldest and newest versions below) or, for the Prometheus Operator's ServiceMonitor and
//!   PrometheusRule, tests/kubernetes/prometheus-operator.schema.yml; the validator is also shown
//!   to refuse broken objects;
//! - the exporter's DaemonSet is not privileged, drops every capability and adds exactly those of
//!   docs/privileges.md, mounts the host's /proc and /sys read-only where its flags point, and is
//!   scraped like the `reveal` job of rules/prometheus.yml;
//! - the analyzer runs unprivileged as non-root, its ConfigMap is deploy/analyzer.yml with only
//!   the addresses changed and is accepted by the analyzer;
//! - kustomization.yaml lists every manifest.
//!
//! kubernetes-validate is not skipped when missing, here or in CI: `.ci/run` installs it, and
//! elsewhere the failure says how.

use reveal_e2e::documented_capabilities;
use reveal_e2e::http::authority;
use reveal_e2e::TempDir;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use yaml_serde::Value;

/// The kubernetes-validate release `.ci/run` installs (and the failure message names).
const KUBERNETES_VALIDATE: &str = "1.37.0";
/// Kubernetes versions whose schemas every built-in object must pass: the oldest that
/// kubernetes-validate 1.37.0 ships, and the newest.
const KUBERNETES_VERSIONS: &[&str] = &["1.25", "1.37"];
/// The manifest kustomization.yaml leaves out on purpose, as rules/prometheus.yml leaves its
/// rule file out of `rule_files`.
const OPTIONAL: &str = "prometheusrule-anomaly-alerts.yaml";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn dir() -> PathBuf {
    root().join("deploy/kubernetes")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn yaml(text: &str, what: &str) -> Value {
    yaml_serde::from_str(text).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// The manifests: every `*.yaml` of deploy/kubernetes/ but kustomization.yaml, sorted.
fn manifests() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("deploy/kubernetes/")
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "yaml")
                && p.file_name().is_some_and(|n| n != "kustomization.yaml")
        })
        .collect();
    out.sort();
    assert!(out.len() >= 5, "expected the manifests, found {out:?}");
    out
}

/// The objects of a multi-document YAML file (documents separated by `---` lines).
fn objects(path: &Path) -> Vec<Value> {
    let text = read(path);
    let mut docs = Vec::new();
    let mut current = String::new();
    for line in text.lines().chain(std::iter::once("---")) {
        if line == "---" {
            let v = yaml(&current, &path.display().to_string());
            if !v.is_null() {
                docs.push(v);
            }
            current.clear();
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    docs
}

/// The one object of `kind` named `name` in deploy/kubernetes/FILE.
fn object(file: &str, kind: &str, name: &str) -> Value {
    objects(&dir().join(file))
        .into_iter()
        .find(|o| o["kind"].as_str() == Some(kind) && o["metadata"]["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("{file} has no {kind} {name}"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_sequence()
        .map(|s| {
            s.iter()
                .map(|x| x.as_str().expect("a string").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The value of `--flag=value` in an argument list.
fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .find_map(|a| a.strip_prefix(&format!("{name}=")).map(str::to_string))
}

/// The port of `host:port` (`$(POD_IP):19190`, `0.0.0.0:19191`, `127.0.0.1:19190`).
fn port_of(addr: &str) -> u64 {
    addr.rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {addr:?}"))
}

/// Runs `python3 ARGS` in the repository root; a missing python3 fails the test.
fn python3(args: &[&str]) -> Output {
    Command::new("python3")
        .args(args)
        .current_dir(root())
        .output()
        .unwrap_or_else(|e| panic!("running python3 {args:?}: {e} (Debian package python3)"))
}

fn text_of(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs tests/kubernetes/validate.py on `files`; fails the test with how to install
/// kubernetes-validate when it is missing.
fn validate(files: &[PathBuf]) -> Output {
    let mut args = vec!["tests/kubernetes/validate.py".to_string()];
    for v in KUBERNETES_VERSIONS {
        args.push(format!("--kubernetes={v}"));
    }
    args.extend(files.iter().map(|f| f.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = python3(&args);
    if out.status.code() == Some(3) {
        panic!(
            "{}\n(.ci/run installs kubernetes-validate=={KUBERNETES_VALIDATE}; this test does not \
             skip without it)",
            text_of(&out).trim()
        );
    }
    out
}

#[test]
fn prometheus_rules_hold_the_groups_of_the_rule_files() {
    let mut rule_files: Vec<PathBuf> = std::fs::read_dir(root().join("rules"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".rules.yml"))
        .collect();
    rule_files.sort();
    assert!(rule_files.len() >= 3, "{rule_files:?}");
    let mut group_names = Vec::new();
    for rf in &rule_files {
        let stem = rf
            .file_name()
            .unwrap()
            .to_string_lossy()
            .trim_end_matches(".rules.yml")
            .to_string();
        let file = format!("prometheusrule-{stem}.yaml");
        let rule = object(&file, "PrometheusRule", &format!("reveal-{stem}"));
        assert_eq!(
            rule["apiVersion"].as_str(),
            Some("monitoring.coreos.com/v1")
        );
        assert_eq!(rule["metadata"]["namespace"].as_str(), Some("reveal"));
        let want = &yaml(&read(rf), &rf.display().to_string())["groups"];
        assert!(
            want.as_sequence().is_some_and(|g| !g.is_empty()),
            "{}",
            rf.display()
        );
        assert_eq!(
            &rule["spec"]["groups"],
            want,
            "{file}: spec.groups differ from the groups of {}; regenerate with `python3 \
             scripts/kubernetes_rules.py`",
            rf.display()
        );
        group_names.extend(
            want.as_sequence()
                .unwrap()
                .iter()
                .map(|g| g["name"].as_str().unwrap().to_string()),
        );
    }
    // No PrometheusRule without its rule file (a rule file renamed or removed).
    let rule_objects: usize = manifests()
        .iter()
        .flat_map(|m| objects(m))
        .filter(|o| o["kind"].as_str() == Some("PrometheusRule"))
        .count();
    assert_eq!(rule_objects, rule_files.len());
    // Group names are the key of spec.groups and of Prometheus' rule groups.
    let mut unique = group_names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), group_names.len(), "{group_names:?}");

    // The generated files are exactly what the script writes now (comments included).
    let out = python3(&["scripts/kubernetes_rules.py", "--check"]);
    assert!(out.status.success(), "{}", text_of(&out));
}

#[test]
fn manifests_pass_the_kubernetes_and_operator_schemas() {
    let files = manifests();
    let out = validate(&files);
    let text = text_of(&out);
    eprintln!("{text}");
    assert!(out.status.success(), "validation failed:\n{text}");
    assert!(
        text.lines()
            .any(|l| l == format!("kubernetes-validate {KUBERNETES_VALIDATE}")),
        "not kubernetes-validate {KUBERNETES_VALIDATE} (.ci/run's):\n{text}"
    );
    // Every object was checked: once per Kubernetes version, or once against the operator's
    // schema.
    let mut want = 0;
    for f in &files {
        for o in objects(f) {
            let api = o["apiVersion"].as_str().unwrap_or_default();
            want += if api.starts_with("monitoring.coreos.com/") {
                1
            } else {
                KUBERNETES_VERSIONS.len()
            };
        }
    }
    let ok = text.lines().filter(|l| l.starts_with("ok ")).count();
    assert_eq!(ok, want, "objects checked:\n{text}");
    // CI installs the version pinned here.
    let ci = read(&root().join(".ci/run"));
    assert!(
        ci.contains(&format!("kubernetes-validate=={KUBERNETES_VALIDATE}")),
        ".ci/run does not install kubernetes-validate=={KUBERNETES_VALIDATE}"
    );
}

/// The validator is not a rubber stamp: a misspelt field, a malformed duration, a recording
/// rule with `for` and a custom resource without a schema each fail it.
#[test]
fn validator_refuses_broken_manifests() {
    let tmp = TempDir::new("reveal-k8s-broken");
    let exporter = read(&dir().join("exporter.yaml"));
    let recording = read(&dir().join("prometheusrule-recording.yaml"));
    let first_record = "\n        - record: instance_cpu:reveal_cpu_utilization:ratio1s\n";
    assert!(recording.contains(first_record));
    let cases = [
        (
            "misspelt-daemonset.yaml",
            exporter.replacen("readOnlyRootFilesystem:", "readOnlyRootFileSystem:", 1),
        ),
        (
            "misspelt-servicemonitor.yaml",
            exporter.replacen("scrapeTimeout:", "scrape_timeout:", 1),
        ),
        (
            "bad-duration.yaml",
            exporter.replacen("interval: 100ms", "interval: 100 ms", 1),
        ),
        (
            "record-with-for.yaml",
            recording.replacen(
                first_record,
                &format!("{first_record}          for: 1m\n"),
                1,
            ),
        ),
        (
            "unknown-kind.yaml",
            exporter.replacen("kind: ServiceMonitor", "kind: PodMonitor", 1),
        ),
    ];
    for (name, text) in cases {
        let original = if name.starts_with("record") {
            &recording
        } else {
            &exporter
        };
        assert_ne!(&text, original, "{name}: the substitution matched nothing");
        let path = tmp.write(name, &text);
        let out = validate(&[path]);
        let t = text_of(&out);
        assert_eq!(out.status.code(), Some(1), "{name} passed:\n{t}");
        assert_eq!(
            t.lines().filter(|l| l.starts_with("FAIL ")).count(),
            // The DaemonSet fails at each Kubernetes version.
            if name == "misspelt-daemonset.yaml" {
                KUBERNETES_VERSIONS.len()
            } else {
                1
            },
            "{name}:\n{t}"
        );
    }
}

/// The `job_name` entry of rules/prometheus.yml.
fn scrape_job(name: &str) -> Value {
    let prom = yaml(
        &read(&root().join("rules/prometheus.yml")),
        "rules/prometheus.yml",
    );
    prom["scrape_configs"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|j| j["job_name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("rules/prometheus.yml has no job {name}"))
        .clone()
}

/// The container's named port, checked to be the one probes and the Service use.
fn checked_port(pod: &Value, container: &Value, service: &Value, probe_paths: [&str; 2]) -> u64 {
    let port = &container["ports"][0];
    let (name, number) = (
        port["name"].as_str().unwrap(),
        port["containerPort"].as_u64().unwrap(),
    );
    for (probe, path) in ["livenessProbe", "readinessProbe"].iter().zip(probe_paths) {
        let get = &container[*probe]["httpGet"];
        assert_eq!(get["path"].as_str(), Some(path), "{probe}");
        assert_eq!(get["port"].as_str(), Some(name), "{probe}");
    }
    let sport = &service["spec"]["ports"][0];
    assert_eq!(sport["targetPort"].as_str(), Some(name));
    // The Service selects the pods.
    let selector = service["spec"]["selector"].as_mapping().unwrap();
    for (k, v) in selector {
        assert_eq!(&pod["metadata"]["labels"][k.as_str().unwrap()], v);
    }
    number
}

/// The ServiceMonitor scrapes the Service's port, selected by the Service's labels.
fn check_service_monitor(monitor: &Value, service: &Value) -> Value {
    let sel = monitor["spec"]["selector"]["matchLabels"]
        .as_mapping()
        .unwrap();
    for (k, v) in sel {
        assert_eq!(&service["metadata"]["labels"][k.as_str().unwrap()], v);
    }
    let ep = monitor["spec"]["endpoints"][0].clone();
    assert_eq!(ep["port"], service["spec"]["ports"][0]["name"]);
    assert_eq!(ep["path"].as_str(), Some("/metrics"));
    ep
}

#[test]
fn exporter_has_only_the_documented_privileges() {
    let ds = object("exporter.yaml", "DaemonSet", "reveal-exporter");
    let pod = &ds["spec"]["template"];
    let spec = &pod["spec"];
    // /proc/net shows the network of the reading process: the host's counters need the host's
    // network. No host PID or IPC namespace: nothing needs them.
    assert_eq!(spec["hostNetwork"].as_bool(), Some(true));
    assert_ne!(spec["hostPID"].as_bool(), Some(true));
    assert_ne!(spec["hostIPC"].as_bool(), Some(true));
    assert_eq!(spec["automountServiceAccountToken"].as_bool(), Some(false));
    let containers = spec["containers"].as_sequence().unwrap();
    assert_eq!(containers.len(), 1);
    assert!(spec["initContainers"].is_null());
    let c = &containers[0];
    let sc = &c["securityContext"];
    assert_ne!(
        sc["privileged"].as_bool(),
        Some(true),
        "the exporter needs capabilities, not privileged"
    );
    assert_eq!(sc["allowPrivilegeEscalation"].as_bool(), Some(false));
    assert_eq!(sc["readOnlyRootFilesystem"].as_bool(), Some(true));
    assert_eq!(strings(&sc["capabilities"]["drop"]), vec!["ALL"]);
    let mut added: Vec<String> = strings(&sc["capabilities"]["add"])
        .iter()
        .map(|c| format!("CAP_{c}"))
        .collect();
    added.sort();
    assert_eq!(
        added,
        documented_capabilities(),
        "capabilities.add and docs/privileges.md disagree"
    );
    // The pod's security context grants nothing either.
    assert_ne!(spec["securityContext"]["privileged"].as_bool(), Some(true));

    // The host's /proc and /sys, read-only, where --path.procfs and --path.sysfs point; every
    // host path read-only.
    let args = strings(&c["args"]);
    let mounts = c["volumeMounts"].as_sequence().unwrap();
    let volumes = spec["volumes"].as_sequence().unwrap();
    let host_path_at = |mount_path: &str| -> Option<String> {
        let m = mounts
            .iter()
            .find(|m| m["mountPath"].as_str() == Some(mount_path))?;
        let v = volumes.iter().find(|v| v["name"] == m["name"])?;
        Some(v["hostPath"]["path"].as_str()?.to_string())
    };
    for (flag_name, host) in [("--path.procfs", "/proc"), ("--path.sysfs", "/sys")] {
        let inside = flag(&args, flag_name).unwrap_or_else(|| panic!("no {flag_name}"));
        assert_eq!(
            host_path_at(&inside).as_deref(),
            Some(host),
            "{flag_name}={inside} is not the host's {host}"
        );
    }
    for m in mounts {
        let v = volumes.iter().find(|v| v["name"] == m["name"]).unwrap();
        if !v["hostPath"].is_null() {
            assert_eq!(m["readOnly"].as_bool(), Some(true), "{m:?} is writable");
        }
    }
    let res = &c["resources"];
    for k in ["requests", "limits"] {
        for r in ["cpu", "memory"] {
            assert!(res[k][r].is_string(), "resources.{k}.{r} missing");
        }
    }

    // Scraped like the `reveal` job of rules/prometheus.yml, on the port it listens on.
    let service = object("exporter.yaml", "Service", "reveal-exporter");
    assert_eq!(service["spec"]["clusterIP"].as_str(), Some("None"));
    let port = checked_port(pod, c, &service, ["/-/healthy", "/-/healthy"]);
    let listen = flag(&args, "--web.listen-address").expect("--web.listen-address");
    assert_eq!(port_of(&listen), port);
    let job = scrape_job("reveal");
    let static_target = strings(&job["static_configs"][0]["targets"]);
    assert_eq!(port_of(&static_target[0]), port);
    let ep = check_service_monitor(
        &object("exporter.yaml", "ServiceMonitor", "reveal-exporter"),
        &service,
    );
    assert_eq!(ep["interval"], job["scrape_interval"]);
    assert_eq!(ep["scrapeTimeout"], job["scrape_timeout"]);
    let relabel = ep["relabelings"].as_sequence().unwrap();
    assert!(
        relabel.iter().any(
            |r| r["targetLabel"].as_str() == Some("job") && r["replacement"] == job["job_name"]
        ),
        "the ServiceMonitor does not name the job {:?}",
        job["job_name"]
    );

    // Two cadences, as the `reveal` and `reveal-slow` jobs: the same port and relabelings
    // (one `instance` per host), each job's interval, timeout and `cadence` parameter.
    let monitor = object("exporter.yaml", "ServiceMonitor", "reveal-exporter");
    let endpoints = monitor["spec"]["endpoints"].as_sequence().unwrap();
    assert_eq!(endpoints.len(), 2, "a fast and a slow endpoint");
    for (ep, name) in endpoints.iter().zip(["reveal", "reveal-slow"]) {
        let job = scrape_job(name);
        assert_eq!(ep["port"], endpoints[0]["port"]);
        assert_eq!(ep["path"].as_str(), Some("/metrics"));
        assert_eq!(ep["interval"], job["scrape_interval"], "{name}");
        assert_eq!(ep["scrapeTimeout"], job["scrape_timeout"], "{name}");
        assert_eq!(ep["params"], job["params"], "{name}");
        let relabel = ep["relabelings"].as_sequence().unwrap();
        assert!(relabel
            .iter()
            .any(|r| r["targetLabel"].as_str() == Some("job")
                && r["replacement"].as_str() == Some(name)));
        let others: Vec<&Value> = relabel
            .iter()
            .filter(|r| r["targetLabel"].as_str() != Some("job"))
            .collect();
        let first: Vec<&Value> = endpoints[0]["relabelings"]
            .as_sequence()
            .unwrap()
            .iter()
            .filter(|r| r["targetLabel"].as_str() != Some("job"))
            .collect();
        assert_eq!(others, first, "{name}: the same labels but for job");
    }
    // --metrics.fast reads deploy/selection-fast.yml, from the ConfigMap mounted where it
    // points.
    let fast = flag(&args, "--metrics.fast").expect("--metrics.fast");
    let (dir_in, file) = fast.rsplit_once('/').unwrap();
    let m = mounts
        .iter()
        .find(|m| m["mountPath"].as_str() == Some(dir_in))
        .expect("a mount where --metrics.fast points");
    assert_eq!(m["readOnly"].as_bool(), Some(true));
    let v = volumes.iter().find(|v| v["name"] == m["name"]).unwrap();
    let cm = object(
        "exporter-selection.yaml",
        "ConfigMap",
        v["configMap"]["name"].as_str().expect("a ConfigMap volume"),
    );
    assert_eq!(
        cm["data"][file].as_str(),
        Some(read(&root().join("deploy/selection-fast.yml")).as_str()),
        "deploy/kubernetes/exporter-selection.yaml is not deploy/selection-fast.yml: copy it"
    );
}

#[test]
fn analyzer_runs_unprivileged_with_the_stack_config() {
    let dep = object("analyzer.yaml", "Deployment", "reveal-analyzer");
    assert_eq!(dep["spec"]["replicas"].as_u64(), Some(1));
    assert_eq!(dep["spec"]["strategy"]["type"].as_str(), Some("Recreate"));
    let pod = &dep["spec"]["template"];
    let spec = &pod["spec"];
    let psc = &spec["securityContext"];
    assert_eq!(psc["runAsNonRoot"].as_bool(), Some(true));
    assert!(psc["runAsUser"].as_u64().is_some_and(|u| u != 0));
    for k in ["hostNetwork", "hostPID", "hostIPC"] {
        assert_ne!(spec[k].as_bool(), Some(true), "{k}");
    }
    let c = &spec["containers"][0];
    let sc = &c["securityContext"];
    assert_ne!(sc["privileged"].as_bool(), Some(true));
    assert_eq!(sc["allowPrivilegeEscalation"].as_bool(), Some(false));
    assert_eq!(sc["readOnlyRootFilesystem"].as_bool(), Some(true));
    assert_eq!(strings(&sc["capabilities"]["drop"]), vec!["ALL"]);
    assert!(sc["capabilities"]["add"].is_null());

    // --config.file is the ConfigMap's key, mounted read-only; the working directory (where the
    // relative state_dir and reports_dir live) is a writable volume that is not a host path.
    let args = strings(&c["args"]);
    assert_eq!(args[0], "run");
    let conf = PathBuf::from(flag(&args, "--config.file").expect("--config.file"));
    let mounts = c["volumeMounts"].as_sequence().unwrap();
    let volume_at = |path: &Path| -> (Value, Value) {
        let m = mounts
            .iter()
            .find(|m| m["mountPath"].as_str().map(Path::new) == Some(path))
            .unwrap_or_else(|| panic!("nothing mounted at {}", path.display()));
        let v = spec["volumes"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|v| v["name"] == m["name"])
            .unwrap();
        (m.clone(), v.clone())
    };
    let (cm_mount, cm_volume) = volume_at(conf.parent().unwrap());
    assert_eq!(cm_mount["readOnly"].as_bool(), Some(true));
    let cm_name = cm_volume["configMap"]["name"]
        .as_str()
        .expect("a ConfigMap");
    let cm = object("analyzer-config.yaml", "ConfigMap", cm_name);
    let key = conf.file_name().unwrap().to_str().unwrap();
    let text = cm["data"][key]
        .as_str()
        .unwrap_or_else(|| panic!("{cm_name} has no key {key}"));
    let workdir = c["workingDir"].as_str().expect("workingDir");
    let (state_mount, state_volume) = volume_at(Path::new(workdir));
    assert_ne!(state_mount["readOnly"].as_bool(), Some(true));
    assert!(
        !state_volume["emptyDir"].is_null() || !state_volume["persistentVolumeClaim"].is_null(),
        "{state_volume:?}"
    );

    // The analyzer accepts the configuration.
    let tmp = TempDir::new("reveal-k8s-analyzer");
    let path = tmp.write(key, text);
    if let Err(e) = reveal_analyzer::config::Config::load(&path) {
        panic!("the analyzer refuses {cm_name}: {e}");
    }

    // It is deploy/analyzer.yml but for the addresses, which are the cluster's.
    let got = yaml(text, cm_name);
    let mut want = yaml(
        &read(&root().join("deploy/analyzer.yml")),
        "deploy/analyzer.yml",
    );
    want["listen_address"] = got["listen_address"].clone();
    want["source"]["prometheus"]["url"] = got["source"]["prometheus"]["url"].clone();
    want["outputs"]["remote_write"]["url"] = got["outputs"]["remote_write"]["url"].clone();
    want["outputs"]["alertmanager"]["urls"] = got["outputs"]["alertmanager"]["urls"].clone();
    assert_eq!(
        got, want,
        "{cm_name} differs from deploy/analyzer.yml beyond the addresses"
    );
    let listen = got["listen_address"].as_str().unwrap();
    assert!(
        listen.starts_with("0.0.0.0:") || listen.starts_with("[::]:"),
        "listen_address {listen} is not reachable from Prometheus' pod"
    );
    let mut urls = vec![
        got["source"]["prometheus"]["url"]
            .as_str()
            .unwrap()
            .to_string(),
        got["outputs"]["remote_write"]["url"]
            .as_str()
            .unwrap()
            .to_string(),
    ];
    urls.extend(strings(&got["outputs"]["alertmanager"]["urls"]));
    for u in &urls {
        let host = authority(u);
        assert!(
            !host.starts_with("127.") && !host.starts_with("localhost"),
            "{u}: nothing listens on the analyzer pod's loopback"
        );
    }

    // Its own metrics: the Service and the ServiceMonitor of the `reveal-analyzer` job.
    let service = object("analyzer.yaml", "Service", "reveal-analyzer");
    let port = checked_port(pod, c, &service, ["/-/healthy", "/-/ready"]);
    assert_eq!(port_of(listen), port);
    let job = scrape_job("reveal-analyzer");
    let ep = check_service_monitor(
        &object("analyzer.yaml", "ServiceMonitor", "reveal-analyzer"),
        &service,
    );
    assert_eq!(ep["interval"], job["scrape_interval"]);
    // The operator names the job after the Service.
    assert_eq!(service["metadata"]["name"], job["job_name"]);
}

#[test]
fn kustomization_lists_every_manifest() {
    let k = yaml(
        &read(&dir().join("kustomization.yaml")),
        "kustomization.yaml",
    );
    let mut listed = strings(&k["resources"]);
    listed.sort();
    let mut want: Vec<String> = manifests()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|n| n != OPTIONAL)
        .collect();
    want.sort();
    assert_eq!(listed, want, "kustomization.yaml's resources");
    assert!(
        read(&dir().join("kustomization.yaml")).contains(&format!("# - {OPTIONAL}")),
        "kustomization.yaml should show how to add {OPTIONAL}"
    );
    // Every object in the namespace the Namespace object creates.
    for m in manifests() {
        for o in objects(&m) {
            if o["kind"].as_str() != Some("Namespace") {
                assert_eq!(
                    o["metadata"]["namespace"].as_str(),
                    Some("reveal"),
                    "{}: {:?}",
                    m.display(),
                    o["metadata"]["name"]
                );
            }
        }
    }
    // The images it sets are the ones the workloads run.
    let images: Vec<String> = k["images"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap().to_string())
        .collect();
    for (file, kind, name) in [
        ("exporter.yaml", "DaemonSet", "reveal-exporter"),
        ("analyzer.yaml", "Deployment", "reveal-analyzer"),
    ] {
        let o = object(file, kind, name);
        let image = o["spec"]["template"]["spec"]["containers"][0]["image"]
            .as_str()
            .unwrap();
        let base = image.split(':').next().unwrap();
        assert!(
            images.iter().any(|i| i == base),
            "{image} not in {images:?}"
        );
    }
}
