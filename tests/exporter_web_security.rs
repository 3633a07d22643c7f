//! `reveal-exporter --web.config.file` (Prometheus exporter-toolkit's format) against real
//! clients: Prometheus 2.42 scraping over TLS with basic auth and over mutual TLS, curl as a
//! TLS client, and the exporter refusing to start on a file it cannot use. Certificates are
//! made for each run with `openssl`; the server certificate names `reveal-test` only.

use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use reveal_e2e::prometheus::{self, Prometheus};
use reveal_e2e::tls::{certificates, HASH};
use reveal_e2e::{free_port, loopback, require_tool, workspace_bin, Proc, TempDir};

const PASSWORD: &str = "reveal-test-password";
/// bcrypt (cost 4) of `hunter2`, made with the `bcrypt` crate.
const OTHER_HASH: &str = "$2b$04$qHL4URqcBc9eR/xRBSuryeWEFoMmMrZXQnoyckBcYa7CLOrFCH4uC";

fn tools() -> bool {
    prometheus::available().is_some()
        && require_tool("openssl", "openssl").is_some()
        && require_tool("curl", "curl").is_some()
}

fn exporter(name: &str, web: &std::path::Path) -> (Proc, SocketAddr) {
    let addr = loopback(free_port());
    let p = Proc::spawn(
        name,
        Command::new(workspace_bin("reveal-exporter"))
            .arg(format!("--web.listen-address={addr}"))
            .arg(format!("--web.config.file={}", web.display()))
            .arg("--collector.disable-defaults")
            .arg("--collector.stat")
            .arg("--log.level=info"),
    );
    (p, addr)
}

/// What curl got: its exit code, the HTTP status (0 without an answer) and the headers.
struct Got {
    exit: i32,
    status: u16,
    headers: String,
}

/// `curl` to `https://reveal-test:PORT/PATH` (resolved to the exporter, checked against the
/// test CA) or `http://…` when `tls` is false, with extra arguments.
fn curl(dir: &TempDir, addr: SocketAddr, tls: bool, path: &str, extra: &[&str]) -> Got {
    let port = addr.port();
    let url = if tls {
        format!("https://reveal-test:{port}{path}")
    } else {
        format!("http://{addr}{path}")
    };
    let out = Command::new("curl")
        .current_dir(dir.path())
        .args(["-sS", "--max-time", "10", "-D", "-", "-o", "/dev/null"])
        .args(["--resolve", &format!("reveal-test:{port}:127.0.0.1")])
        .args(["--cacert", "ca.pem"])
        .args(extra)
        .arg(url)
        .output()
        .expect("curl runs");
    let headers = String::from_utf8_lossy(&out.stdout).into_owned();
    let status = headers
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Got {
        exit: out.status.code().unwrap_or(-1),
        status,
        headers,
    }
}

/// Waits until curl gets an answer (the exporter is listening).
fn wait_answering(dir: &TempDir, addr: SocketAddr, tls: bool, extra: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while curl(dir, addr, tls, "/-/healthy", extra).status == 0 {
        assert!(
            Instant::now() < deadline,
            "exporter on {addr} never answered"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn prometheus_scrapes_over_tls_with_basic_auth_and_over_mutual_tls() {
    if !tools() {
        return;
    }
    let dir = TempDir::new("reveal-exporter-tls");
    certificates(dir.path());
    let auth = dir.write(
        "auth.yml",
        &format!(
            "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n\
             http_server_config:\n  headers:\n    X-Frame-Options: deny\n    \
             Strict-Transport-Security: max-age=31536000\n\
             basic_auth_users:\n  prometheus: {HASH}\n"
        ),
    );
    let mtls = dir.write(
        "mtls.yml",
        "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n  \
         client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n  \
         min_version: TLS13\n",
    );
    let (_a, a) = exporter("exporter-auth", &auth);
    let (_b, b) = exporter("exporter-mtls", &mtls);
    let user = format!("prometheus:{PASSWORD}");
    wait_answering(&dir, a, true, &["-u", &user]);
    let client = ["--cert", "client.pem", "--key", "client.key"];
    wait_answering(&dir, b, true, &client);

    // curl, a real TLS client: the right password and only it.
    let ok = curl(&dir, a, true, "/metrics", &["-u", &user]);
    assert_eq!(ok.status, 200, "{}", ok.headers);
    assert!(
        ok.headers.contains("x-frame-options: deny"),
        "{}",
        ok.headers
    );
    assert!(
        ok.headers
            .contains("strict-transport-security: max-age=31536000"),
        "{}",
        ok.headers
    );
    let wrong = curl(&dir, a, true, "/metrics", &["-u", "prometheus:hunter2"]);
    assert_eq!(wrong.status, 401, "{}", wrong.headers);
    assert!(
        wrong.headers.contains("www-authenticate: Basic"),
        "{}",
        wrong.headers
    );
    assert_eq!(curl(&dir, a, true, "/-/healthy", &[]).status, 401);
    // Plain HTTP to the TLS port gets no HTTP answer.
    assert_ne!(curl(&dir, a, false, "/metrics", &["-u", &user]).status, 200);
    // Mutual TLS: no client certificate, no handshake; with one, the page.
    let refused = curl(&dir, b, true, "/metrics", &[]);
    assert_eq!(refused.status, 0, "{}", refused.headers);
    assert_ne!(refused.exit, 0);
    assert_eq!(curl(&dir, b, true, "/metrics", &client).status, 200);
    // TLS 1.2 is below this exporter's min_version.
    let old = curl(
        &dir,
        b,
        true,
        "/metrics",
        &[
            "--tls-max",
            "1.2",
            "--cert",
            "client.pem",
            "--key",
            "client.key",
        ],
    );
    assert_eq!(old.status, 0, "{}", old.headers);

    // Prometheus 2.42: four jobs, two right and two wrong.
    let d = dir.path().display();
    let tls = |extra: &str| {
        format!("    scheme: https\n    tls_config:\n      ca_file: {d}/ca.pem\n      server_name: reveal-test\n{extra}")
    };
    let job = |name: &str, target: SocketAddr, rest: String| {
        format!("  - job_name: {name}\n    static_configs:\n      - targets: ['{target}']\n{rest}")
    };
    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n{}{}{}{}",
        job(
            "auth_right",
            a,
            tls("")
                + &format!(
                    "    basic_auth:\n      username: prometheus\n      password: {PASSWORD}\n"
                )
        ),
        job(
            "auth_wrong",
            a,
            tls("") + "    basic_auth:\n      username: prometheus\n      password: hunter2\n"
        ),
        job(
            "mtls_right",
            b,
            tls(&format!(
                "      cert_file: {d}/client.pem\n      key_file: {d}/client.key\n"
            ))
        ),
        job("mtls_nocert", b, tls("")),
    );
    let prom = Prometheus::with_config(&config).start();
    for j in ["auth_right", "auth_wrong", "mtls_right", "mtls_nocert"] {
        let want = if j.ends_with("right") { 1.0 } else { 0.0 };
        prom.wait_for_value(
            &format!("up{{job=\"{j}\"}}"),
            |v| v == want,
            Duration::from_secs(30),
        );
    }
    // The right jobs stored the exporter's series; the wrong ones say why they failed.
    let n = prom
        .value(r#"count(reveal_cpu_time_seconds_total{job="auth_right"})"#)
        .unwrap();
    assert!(n.unwrap_or(0.0) > 0.0);
    let targets = prom.api("targets", &[("state", "active")]).unwrap();
    let error_of = |job: &str| -> String {
        targets["activeTargets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["labels"]["job"] == job)
            .map(|t| t["lastError"].as_str().unwrap_or("").to_string())
            .unwrap()
    };
    assert!(
        error_of("auth_wrong").contains("401"),
        "{}",
        error_of("auth_wrong")
    );
    let e = error_of("mtls_nocert");
    assert!(e.contains("tls") || e.contains("certificate"), "{e}");
    assert_eq!(error_of("auth_right"), "");
    assert_eq!(error_of("mtls_right"), "");
}

#[test]
fn a_web_config_it_cannot_use_refuses_the_start_and_says_why() {
    if !tools() {
        return;
    }
    let dir = TempDir::new("reveal-exporter-badweb");
    certificates(dir.path());
    dir.write(
        "garbage.pem",
        "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n",
    );
    let cases = [
        ("missing.yml", None, "cannot read the web configuration"),
        (
            "plain.yml",
            Some("basic_auth_users:\n  prometheus: reveal-test-password\n"),
            "basic_auth_users.prometheus: not a bcrypt hash",
        ),
        (
            "nokey.yml",
            Some("tls_server_config:\n  cert_file: server.pem\n"),
            "tls_server_config.key_file",
        ),
        (
            "nofile.yml",
            Some("tls_server_config:\n  cert_file: nowhere.pem\n  key_file: server.key\n"),
            "tls_server_config.cert_file",
        ),
        (
            "garbage.yml",
            Some("tls_server_config:\n  cert_file: garbage.pem\n  key_file: server.key\n"),
            "tls_server_config.cert_file",
        ),
        (
            "mismatch.yml",
            Some("tls_server_config:\n  cert_file: server.pem\n  key_file: client.key\n"),
            "tls_server_config.key_file",
        ),
        (
            "typo.yml",
            Some("tls_server_config:\n  cert_file: server.pem\n  keyfile: server.key\n"),
            "unknown field `keyfile`",
        ),
    ];
    for (file, text, expect) in cases {
        if let Some(t) = text {
            dir.write(file, t);
        }
        let out = Command::new(workspace_bin("reveal-exporter"))
            .arg(format!("--web.listen-address={}", loopback(free_port())))
            .arg(format!(
                "--web.config.file={}",
                dir.path().join(file).display()
            ))
            .arg("--collector.disable-defaults")
            .arg("--collector.stat")
            .output()
            .expect("exporter runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{file}: started anyway");
        assert!(err.contains(expect), "{file}: {err}");
        assert!(err.contains("--web.config.file"), "{file}: {err}");
    }
}

#[test]
fn a_changed_password_and_a_broken_file_take_effect_at_once() {
    if !tools() {
        return;
    }
    let dir = TempDir::new("reveal-exporter-reload");
    certificates(dir.path());
    let web = dir.write(
        "web.yml",
        &format!("basic_auth_users:\n  prometheus: {HASH}\n"),
    );
    let (mut p, addr) = exporter("exporter-reload", &web);
    let first = format!("prometheus:{PASSWORD}");
    wait_answering(&dir, addr, false, &["-u", &first]);
    assert_eq!(
        curl(&dir, addr, false, "/metrics", &["-u", &first]).status,
        200
    );

    // Sleep past the file system's timestamp granularity so the change is seen.
    std::thread::sleep(Duration::from_millis(50));
    dir.write(
        "web.yml",
        &format!("basic_auth_users:\n  prometheus: {OTHER_HASH}\n"),
    );
    assert_eq!(
        curl(&dir, addr, false, "/metrics", &["-u", &first]).status,
        401
    );
    let second = "prometheus:hunter2";
    assert_eq!(
        curl(&dir, addr, false, "/metrics", &["-u", second]).status,
        200
    );

    // A broken file: nothing is served (never less protection), until it is fixed.
    dir.write("web.yml", "basic_auth_users:\n  prometheus: hunter2\n");
    assert_eq!(
        curl(&dir, addr, false, "/metrics", &["-u", second]).status,
        503
    );
    assert_eq!(curl(&dir, addr, false, "/metrics", &[]).status, 503);
    dir.write(
        "web.yml",
        &format!("basic_auth_users:\n  prometheus: {OTHER_HASH}\n"),
    );
    assert_eq!(
        curl(&dir, addr, false, "/metrics", &["-u", second]).status,
        200
    );

    // SIGHUP reads it again (and does not stop the exporter).
    let hup = Command::new("kill")
        .args(["-HUP", &p.pid().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !p.logs().contains("SIGHUP: web configuration read again") {
        assert!(Instant::now() < deadline, "no reload logged: {}", p.logs());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(p.exited().is_none(), "{}", p.logs());
    assert_eq!(
        curl(&dir, addr, false, "/metrics", &["-u", second]).status,
        200
    );
    assert!(
        p.logs().contains("web configuration invalid"),
        "{}",
        p.logs()
    );
}
