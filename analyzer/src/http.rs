//! The one outgoing HTTP client of the analyzer (Prometheus queries, remote write, Alertmanager),
//! configured the way Prometheus configures its own clients (`http_config` in the Prometheus
//! docs: <https://prometheus.io/docs/prometheus/latest/configuration/configuration/#http_config>):
//! basic auth, bearer token, `authorization`, secrets read from `*_file`, and `tls_config`.
//!
//! TLS is rustls with the `ring` provider, built here rather than by reqwest so that
//! `server_name` and `insecure_skip_verify` mean exactly what they mean in Prometheus.
//! Secret files are re-read on every request, as Prometheus does, so a rotated token is
//! picked up without a restart.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderValue, AUTHORIZATION};
use serde::Deserialize;

use crate::core::duration::PromDuration;

#[cfg(test)]
mod limit_tests;
mod retry;
mod size;
mod tls;
pub use retry::{retry, Backoff};
pub use size::{parse_size, ByteSize};
pub use tls::rustls_config;

/// A secret string from the config file; never printed.
#[derive(Clone, Default, Deserialize, PartialEq)]
#[serde(transparent)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<secret>")
    }
}

/// `basic_auth` block: `password` and `password_file` are mutually exclusive.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BasicAuth {
    pub username: String,
    pub password: Option<Secret>,
    pub password_file: Option<PathBuf>,
}

/// `authorization` block: `Authorization: <type> <credentials>`, type defaults to `Bearer`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Authorization {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub credentials: Option<Secret>,
    pub credentials_file: Option<PathBuf>,
}

/// `tls_config` block.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM bundle of CAs to trust instead of the system's roots.
    pub ca_file: Option<PathBuf>,
    /// Client certificate (PEM) for mutual TLS; needs `key_file`.
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// Name the server certificate is checked against, when it differs from the URL's host.
    pub server_name: Option<String>,
    /// Accept any server certificate (signatures are still checked). For tests only.
    #[serde(default)]
    pub insecure_skip_verify: bool,
}

/// Settings shared by every outgoing connection.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HttpClientConfig {
    pub basic_auth: Option<BasicAuth>,
    pub bearer_token: Option<Secret>,
    pub bearer_token_file: Option<PathBuf>,
    pub authorization: Option<Authorization>,
    #[serde(default)]
    pub tls_config: TlsConfig,
    /// Whole-request timeout.
    #[serde(default = "default_timeout")]
    pub timeout: PromDuration,
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout: PromDuration,
    /// The most of a reply body that is read (`0`: no limit); a longer reply is an error,
    /// as Prometheus' `body_size_limit` makes it one for a scrape.
    #[serde(default = "default_body_size_limit")]
    pub body_size_limit: ByteSize,
}

fn default_timeout() -> PromDuration {
    PromDuration(Duration::from_secs(10))
}
fn default_connect_timeout() -> PromDuration {
    PromDuration(Duration::from_secs(3))
}
fn default_body_size_limit() -> ByteSize {
    DEFAULT_BODY_SIZE_LIMIT
}

/// The reply limit of a client whose configuration sets none: the largest answer a
/// Prometheus with its default `--query.max-samples` (50 million) sends for one range query
/// is about a gigabyte of JSON.
pub const DEFAULT_BODY_SIZE_LIMIT: ByteSize = ByteSize(1 << 30);

impl Default for HttpClientConfig {
    fn default() -> Self {
        HttpClientConfig {
            basic_auth: None,
            bearer_token: None,
            bearer_token_file: None,
            authorization: None,
            tls_config: TlsConfig::default(),
            timeout: default_timeout(),
            connect_timeout: default_connect_timeout(),
            body_size_limit: DEFAULT_BODY_SIZE_LIMIT,
        }
    }
}

impl HttpClientConfig {
    /// Semantic checks Prometheus also makes; the message names the offending key.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let schemes = [
            self.basic_auth.is_some(),
            self.bearer_token.is_some() || self.bearer_token_file.is_some(),
            self.authorization.is_some(),
        ];
        if schemes.iter().filter(|s| **s).count() > 1 {
            return Err((
                "authorization",
                "at most one of basic_auth, bearer_token/bearer_token_file and authorization may be set".into(),
            ));
        }
        if self.bearer_token.is_some() && self.bearer_token_file.is_some() {
            return Err((
                "bearer_token_file",
                "bearer_token and bearer_token_file are mutually exclusive".into(),
            ));
        }
        if let Some(b) = &self.basic_auth {
            if b.password.is_some() && b.password_file.is_some() {
                return Err((
                    "password_file",
                    "basic_auth password and password_file are mutually exclusive".into(),
                ));
            }
        }
        if let Some(a) = &self.authorization {
            if a.credentials.is_some() && a.credentials_file.is_some() {
                return Err((
                    "credentials_file",
                    "authorization credentials and credentials_file are mutually exclusive".into(),
                ));
            }
            if a.kind
                .as_deref()
                .is_some_and(|k| k.eq_ignore_ascii_case("basic"))
            {
                return Err((
                    "type",
                    "authorization type Basic is not allowed; use basic_auth".into(),
                ));
            }
        }
        let t = &self.tls_config;
        if t.cert_file.is_some() != t.key_file.is_some() {
            return Err((
                "tls_config",
                "cert_file and key_file must be set together".into(),
            ));
        }
        if self.timeout.0.is_zero() {
            return Err(("timeout", "timeout must be positive".into()));
        }
        Ok(())
    }
}

/// Errors of outgoing requests, kept apart by what the caller does about them.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The client could not be built (bad certificate, unreadable key): a config problem.
    #[error("http client setup: {0}")]
    Setup(String),
    /// A secret file could not be read at request time.
    #[error("reading {path}: {source}")]
    SecretFile {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Connection refused, reset, timed out: worth retrying.
    #[error("request to {url}: {msg}")]
    Transport { url: String, msg: String },
    /// The reply was longer than `body_size_limit`; reading stopped there.
    #[error(
        "{url} answered with more than the body_size_limit of {limit}; nothing of it was used"
    )]
    TooLarge { url: String, limit: ByteSize },
    /// The server answered with a non-success status.
    #[error("{url} answered {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
}

impl HttpError {
    /// Whether retrying the same request later may succeed (transport problems, 429, 5xx).
    pub fn is_retryable(&self) -> bool {
        match self {
            HttpError::Transport { .. } => true,
            HttpError::Status { status, .. } => *status == 429 || *status >= 500,
            HttpError::Setup(_) | HttpError::SecretFile { .. } | HttpError::TooLarge { .. } => {
                false
            }
        }
    }

    pub(crate) fn transport(url: &str, e: reqwest::Error) -> Self {
        // reqwest's Display hides the cause ("error sending request"); the chain says why.
        let mut msg = e.to_string();
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            msg.push_str(": ");
            msg.push_str(&s.to_string());
            src = s.source();
        }
        HttpError::Transport {
            url: url.to_string(),
            msg,
        }
    }
}

/// A reqwest client plus the auth settings applied to every request.
#[derive(Clone, Debug)]
pub struct HttpClient {
    inner: reqwest::Client,
    config: Arc<HttpClientConfig>,
}

impl HttpClient {
    pub fn new(config: &HttpClientConfig) -> Result<Self, HttpError> {
        let tls = rustls_config(&config.tls_config)?;
        let inner = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .timeout(config.timeout.0)
            .connect_timeout(config.connect_timeout.0)
            .user_agent(concat!("reveal-analyzer/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| HttpError::Setup(e.to_string()))?;
        Ok(HttpClient {
            inner,
            config: Arc::new(config.clone()),
        })
    }

    /// A request with the configured credentials attached.
    pub fn request(
        &self,
        method: reqwest::Method,
        url: &str,
    ) -> Result<reqwest::RequestBuilder, HttpError> {
        let rb = self.inner.request(method, url);
        Ok(match credentials(&self.config)? {
            Some(Credentials::Basic { username, password }) => {
                rb.basic_auth(username, Some(password))
            }
            Some(Credentials::Header(value)) => rb.header(AUTHORIZATION, value),
            None => rb,
        })
    }

    /// Sends a request and returns the body of a 2xx answer; other statuses become
    /// [`HttpError::Status`] with the start of the body for the log.
    pub async fn send(&self, url: &str, rb: reqwest::RequestBuilder) -> Result<Vec<u8>, HttpError> {
        let (status, body) = self.fetch(url, rb).await?;
        if !(200..300).contains(&status) {
            let text = String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned();
            return Err(HttpError::Status {
                url: url.to_string(),
                status,
                body: text,
            });
        }
        Ok(body)
    }

    /// Sends a request and returns status and body whatever the status (APIs that explain
    /// their errors in the body); only transport failures and a body over the limit are
    /// errors. The body is read in pieces and never past `body_size_limit`: a faulty or
    /// hostile server cannot make the analyzer allocate without bound.
    pub async fn fetch(
        &self,
        url: &str,
        rb: reqwest::RequestBuilder,
    ) -> Result<(u16, Vec<u8>), HttpError> {
        let mut resp = rb.send().await.map_err(|e| HttpError::transport(url, e))?;
        let status = resp.status().as_u16();
        let limit = self.config.body_size_limit;
        let too_large = || HttpError::TooLarge {
            url: url.to_string(),
            limit,
        };
        let max = limit.limit().unwrap_or(u64::MAX);
        if resp.content_length().is_some_and(|n| n > max) {
            return Err(too_large());
        }
        let mut body = Vec::with_capacity(resp.content_length().unwrap_or(0) as usize);
        while let Some(piece) = resp
            .chunk()
            .await
            .map_err(|e| HttpError::transport(url, e))?
        {
            if (body.len() + piece.len()) as u64 > max {
                return Err(too_large());
            }
            body.extend_from_slice(&piece);
        }
        Ok((status, body))
    }
}

fn read_secret(path: &Path) -> Result<String, HttpError> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|source| HttpError::SecretFile {
            path: path.to_path_buf(),
            source,
        })
}

/// What a request carries to authenticate: basic auth (encoded by reqwest), or the value of
/// an `Authorization` header for the other schemes.
#[derive(Debug, PartialEq)]
pub enum Credentials {
    Basic { username: String, password: String },
    Header(HeaderValue),
}

/// The credentials of the configured scheme, reading secret files now.
pub fn credentials(c: &HttpClientConfig) -> Result<Option<Credentials>, HttpError> {
    if let Some(b) = &c.basic_auth {
        let password = match (&b.password, &b.password_file) {
            (Some(p), _) => p.0.clone(),
            (None, Some(f)) => read_secret(f)?,
            (None, None) => String::new(),
        };
        return Ok(Some(Credentials::Basic {
            username: b.username.clone(),
            password,
        }));
    }
    let value = if let Some(t) = &c.bearer_token {
        format!("Bearer {}", t.0)
    } else if let Some(f) = &c.bearer_token_file {
        format!("Bearer {}", read_secret(f)?)
    } else if let Some(a) = &c.authorization {
        let credentials = match (&a.credentials, &a.credentials_file) {
            (Some(s), _) => s.0.clone(),
            (None, Some(f)) => read_secret(f)?,
            (None, None) => String::new(),
        };
        format!("{} {}", a.kind.as_deref().unwrap_or("Bearer"), credentials)
    } else {
        return Ok(None);
    };
    let mut hv = HeaderValue::from_str(&value).map_err(|_| {
        HttpError::Setup("credentials contain characters not allowed in a header".into())
    })?;
    hv.set_sensitive(true);
    Ok(Some(Credentials::Header(hv)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `Authorization` header a request of this client carries.
    fn auth_header(c: &HttpClientConfig) -> Result<Option<HeaderValue>, HttpError> {
        let rb = HttpClient::new(c)?.request(reqwest::Method::GET, "http://127.0.0.1:9/")?;
        let req = rb.build().map_err(|e| HttpError::Setup(e.to_string()))?;
        Ok(req.headers().get(AUTHORIZATION).cloned())
    }

    #[test]
    fn basic_auth_is_encoded_as_rfc7617_says() {
        let c = HttpClientConfig {
            basic_auth: Some(BasicAuth {
                username: "Aladdin".into(),
                password: Some(Secret("open sesame".into())),
                password_file: None,
            }),
            ..Default::default()
        };
        let h = auth_header(&c).unwrap().unwrap();
        assert_eq!(h, "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
        assert!(h.is_sensitive());
        let c = HttpClientConfig {
            basic_auth: Some(BasicAuth {
                username: "u".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        // No password: `u:` (as Prometheus sends it).
        assert_eq!(auth_header(&c).unwrap().unwrap(), "Basic dTo=");
    }

    #[test]
    fn auth_header_reads_secret_files_each_time() {
        let dir = std::env::temp_dir().join(format!("reveal-http-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("token");
        std::fs::write(&f, "first\n").unwrap();
        let c = HttpClientConfig {
            bearer_token_file: Some(f.clone()),
            ..Default::default()
        };
        assert_eq!(auth_header(&c).unwrap().unwrap(), "Bearer first");
        std::fs::write(&f, "second").unwrap();
        assert_eq!(auth_header(&c).unwrap().unwrap(), "Bearer second");
        let c = HttpClientConfig {
            basic_auth: Some(BasicAuth {
                username: "u".into(),
                password: Some(Secret("p".into())),
                password_file: None,
            }),
            ..Default::default()
        };
        assert_eq!(auth_header(&c).unwrap().unwrap(), "Basic dTpw");
        let c = HttpClientConfig {
            authorization: Some(Authorization {
                kind: Some("Token".into()),
                credentials: Some(Secret("x".into())),
                credentials_file: None,
            }),
            ..Default::default()
        };
        assert_eq!(auth_header(&c).unwrap().unwrap(), "Token x");
        let missing = HttpClientConfig {
            bearer_token_file: Some(dir.join("absent")),
            ..Default::default()
        };
        assert!(matches!(
            auth_header(&missing),
            Err(HttpError::SecretFile { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn conflicting_auth_is_refused() {
        let c = HttpClientConfig {
            bearer_token: Some(Secret("a".into())),
            basic_auth: Some(BasicAuth::default()),
            ..Default::default()
        };
        assert!(c.check().is_err());
        let c = HttpClientConfig {
            tls_config: TlsConfig {
                cert_file: Some("c".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(c.check().unwrap_err().0, "tls_config");
    }

    #[test]
    fn secrets_are_not_printed() {
        let c = HttpClientConfig {
            bearer_token: Some(Secret("hunter2".into())),
            ..Default::default()
        };
        assert!(!format!("{c:?}").contains("hunter2"));
    }
}
