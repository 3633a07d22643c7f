//! The analyzer's HTTP client against a real Prometheus that requires TLS with client
//! certificates and basic auth (`--web.config.file`): the CA, client certificate,
//! `server_name`, `insecure_skip_verify` and `password_file` settings each do what Prometheus'
//! own `http_config` does. Certificates are made for the test with `openssl`.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use reveal_analyzer::config::PromDuration;
use reveal_analyzer::http::{
    BasicAuth, HttpClient, HttpClientConfig, HttpError, Secret, TlsConfig,
};
use reveal_analyzer::ingest::promapi::{PromClient, PromError};
use reveal_e2e::prometheus::{self, PROMETHEUS};
use reveal_e2e::tls::{certificates, HASH};
use reveal_e2e::{free_port, loopback, require_tool, Proc, TempDir};

struct Setup {
    dir: TempDir,
    url: String,
}

impl Setup {
    fn path(&self, f: &str) -> PathBuf {
        self.dir.path().join(f)
    }

    fn full(&self) -> HttpClientConfig {
        HttpClientConfig {
            basic_auth: Some(BasicAuth {
                username: "reveal".into(),
                password: None,
                password_file: Some(self.path("password")),
            }),
            tls_config: TlsConfig {
                ca_file: Some(self.path("ca.pem")),
                cert_file: Some(self.path("client.pem")),
                key_file: Some(self.path("client.key")),
                server_name: Some("reveal-test".into()),
                insecure_skip_verify: false,
            },
            timeout: PromDuration(Duration::from_secs(5)),
            ..Default::default()
        }
    }

    fn query(&self, rt: &tokio::runtime::Runtime, c: &HttpClientConfig) -> Result<(), PromError> {
        let client = HttpClient::new(c).map_err(PromError::Http)?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        rt.block_on(PromClient::new(client, &self.url).query_range("up", now - 1000, now, 100))
            .map(|_| ())
    }
}

#[test]
fn tls_client_certificates_server_name_and_basic_auth() {
    if prometheus::available().is_none() || require_tool("openssl", "openssl").is_none() {
        return;
    }
    let dir = TempDir::new("reveal-tls");
    certificates(dir.path());
    std::fs::write(dir.path().join("password"), "reveal-test-password\n").unwrap();
    dir.write(
        "web.yml",
        &format!(
            "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\nbasic_auth_users:\n  reveal: {HASH}\n"
        ),
    );
    dir.write("prometheus.yml", "global:\n  scrape_interval: 1m\n");
    let addr = loopback(free_port());
    let _prom = Proc::spawn(
        "prometheus-tls",
        Command::new(PROMETHEUS)
            .current_dir(dir.path())
            .arg("--config.file=prometheus.yml")
            .arg("--web.config.file=web.yml")
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}")),
    );
    let s = Setup {
        url: format!("https://{addr}"),
        dir,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    // Everything right: the query goes through once the server is up.
    let deadline = Instant::now() + Duration::from_secs(30);
    while let Err(e) = s.query(&rt, &s.full()) {
        assert!(
            Instant::now() < deadline,
            "TLS Prometheus never answered: {e}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    let fails = |c: HttpClientConfig| s.query(&rt, &c).expect_err("should have failed");
    // No client certificate: the handshake is refused.
    let mut c = s.full();
    c.tls_config.cert_file = None;
    c.tls_config.key_file = None;
    assert!(matches!(
        fails(c),
        PromError::Http(HttpError::Transport { .. })
    ));
    // The certificate names reveal-test, not 127.0.0.1: without server_name it is refused.
    let mut c = s.full();
    c.tls_config.server_name = None;
    let e = fails(c);
    assert!(e.to_string().contains("certificate"), "{e}");
    // The system roots do not know the test CA.
    let mut c = s.full();
    c.tls_config.ca_file = None;
    assert!(fails(c).to_string().contains("certificate"));
    // insecure_skip_verify accepts it without CA or name (client certificate still sent).
    let mut c = s.full();
    c.tls_config.ca_file = None;
    c.tls_config.server_name = None;
    c.tls_config.insecure_skip_verify = true;
    s.query(&rt, &c).expect("insecure_skip_verify");
    // A wrong password is an HTTP 401, not retried as if the server were down.
    let mut c = s.full();
    c.basic_auth = Some(BasicAuth {
        username: "reveal".into(),
        password: Some(Secret("wrong".into())),
        password_file: None,
    });
    match fails(c) {
        PromError::Parse { status: 401, .. } | PromError::Api { status: 401, .. } => {}
        e => panic!("expected 401, got {e}"),
    }
    // A missing secret file is reported as such.
    let mut c = s.full();
    c.basic_auth.as_mut().unwrap().password_file = Some(s.path("absent"));
    assert!(matches!(
        fails(c),
        PromError::Http(HttpError::SecretFile { .. })
    ));
}
