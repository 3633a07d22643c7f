//! `--web.config.file`: TLS, client certificates, basic authentication and security headers,
//! configured as Prometheus' exporter-toolkit configures them ([`config`]).
//!
//! The file and the certificate files it names are read at start (an error there refuses to
//! start) and read again when any of them changed, checked on each new connection and on each
//! request, and on SIGHUP: rotated certificates and changed passwords take effect without a
//! restart. If a changed file is invalid, the exporter refuses connections and requests (and
//! logs why) until it is fixed: it never falls back to less protection than configured.

pub mod auth;
pub mod config;
pub mod tls;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rustls::ServerConfig;

use config::{WebConfig, WebConfigError};

/// bcrypt checks at once: one per core of a small node.
const BCRYPT_AT_ONCE: usize = 2;

/// One reading of the configuration.
pub struct Loaded {
    pub config: WebConfig,
    pub tls: Option<Arc<ServerConfig>>,
}

/// What a file looked like when read: a change in any of them means reading again.
type Stamp = Vec<(PathBuf, Option<(SystemTime, u64)>)>;

fn stamp(paths: &[PathBuf]) -> Stamp {
    paths
        .iter()
        .map(|p| {
            let m = std::fs::metadata(p)
                .ok()
                .map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()));
            (p.clone(), m)
        })
        .collect()
}

/// The web configuration file and what was last read from it.
pub struct Web {
    path: PathBuf,
    state: Mutex<(Stamp, Result<Arc<Loaded>, WebConfigError>)>,
    last_error: Mutex<Option<WebConfigError>>,
    pub verifier: auth::Verifier,
    /// bcrypt checks running at once (each takes tens of milliseconds of CPU): a flood of
    /// wrong passwords queues here instead of occupying a thread per connection.
    pub bcrypt_slots: tokio::sync::Semaphore,
    /// Whether TLS was on at start: it stays on (a file that drops it is refused).
    pub tls_at_start: bool,
}

/// Reads the file and everything it names.
fn read(path: &Path) -> Result<Loaded, WebConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| WebConfigError {
        key: path.display().to_string(),
        msg: format!("cannot read the web configuration: {e}"),
    })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let config = config::parse(&text, dir)?;
    let tls = match &config.tls_server_config {
        Some(t) => Some(tls::server_config(t)?),
        None => None,
    };
    Ok(Loaded { config, tls })
}

/// The files whose change means reading again: the configuration and its certificates.
fn watched(path: &Path, loaded: Option<&Loaded>) -> Vec<PathBuf> {
    let mut v = vec![path.to_path_buf()];
    if let Some(t) = loaded.and_then(|l| l.config.tls_server_config.as_ref()) {
        v.extend(
            [&t.cert_file, &t.key_file, &t.client_ca_file]
                .into_iter()
                .flatten()
                .cloned(),
        );
    }
    v
}

impl Web {
    /// Reads the file at start; any error is the reason not to start.
    pub fn load(path: &Path) -> Result<Web, String> {
        let loaded =
            read(path).map_err(|e| format!("--web.config.file {}: {e}", path.display()))?;
        let s = stamp(&watched(path, Some(&loaded)));
        let tls_at_start = loaded.tls.is_some();
        Ok(Web {
            path: path.to_path_buf(),
            state: Mutex::new((s, Ok(Arc::new(loaded)))),
            last_error: Mutex::new(None),
            verifier: auth::Verifier::default(),
            bcrypt_slots: tokio::sync::Semaphore::new(BCRYPT_AT_ONCE),
            tls_at_start,
        })
    }

    /// The configuration in force, read again first if a file changed since.
    pub fn current(&self) -> Result<Arc<Loaded>, WebConfigError> {
        let mut st = self.state.lock().expect("not poisoned");
        let watched_now = watched(&self.path, st.1.as_ref().ok().map(|l| l.as_ref()));
        let now = stamp(&watched_now);
        if now != st.0 {
            *st = self.reread();
        }
        st.1.clone()
    }

    /// Reads everything again now (SIGHUP); says what happened.
    pub fn reload(&self) -> Result<(), WebConfigError> {
        let mut st = self.state.lock().expect("not poisoned");
        *self.last_error.lock().expect("not poisoned") = None;
        *st = self.reread();
        st.1.as_ref().map(|_| ()).map_err(Clone::clone)
    }

    fn reread(&self) -> (Stamp, Result<Arc<Loaded>, WebConfigError>) {
        let r = read(&self.path).and_then(|l| {
            if self.tls_at_start && l.tls.is_none() {
                return Err(WebConfigError {
                    key: "tls_server_config".into(),
                    msg: "TLS was on at start and the file no longer configures it; restart \
                          the exporter to serve plain HTTP"
                        .into(),
                });
            }
            Ok(Arc::new(l))
        });
        match &r {
            Ok(l) => {
                tracing::info!(file = %self.path.display(), "web configuration read");
                (stamp(&watched(&self.path, Some(l))), r)
            }
            Err(e) => {
                // Logged once per distinct error; read again at every connection until fixed
                // (an empty stamp never matches), whichever file the fix is in.
                let mut last = self.last_error.lock().expect("not poisoned");
                if last.as_ref() != Some(e) {
                    tracing::error!(
                        file = %self.path.display(),
                        error = %e,
                        "web configuration invalid: refusing connections until it is fixed"
                    );
                    *last = Some(e.clone());
                }
                (Vec::new(), r)
            }
        }
    }
}
