//! The web configuration file (`--web.config.file`), in the format of Prometheus'
//! exporter-toolkit (<https://github.com/prometheus/exporter-toolkit/blob/master/docs/web-configuration.md>),
//! so the file an operator already has for node_exporter works here:
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: /etc/reveal/tls.crt
//!   key_file: /etc/reveal/tls.key
//!   client_auth_type: RequireAndVerifyClientCert
//!   client_ca_file: /etc/reveal/ca.crt
//!   min_version: TLS12
//! http_server_config:
//!   headers:
//!     Strict-Transport-Security: max-age=31536000
//! basic_auth_users:
//!   prometheus: $2y$10$...   # a bcrypt hash, never the password
//! ```
//!
//! Parsing and checking are pure: [`parse`] turns the text into a [`WebConfig`] or an error
//! that names the key. Reading certificates is [`super::tls`]'s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WebConfig {
    pub tls_server_config: Option<TlsServerConfig>,
    #[serde(default)]
    pub http_server_config: HttpServerConfig,
    /// User name → bcrypt hash of the password.
    #[serde(default)]
    pub basic_auth_users: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TlsServerConfig {
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    #[serde(default)]
    pub client_auth_type: ClientAuth,
    pub client_ca_file: Option<PathBuf>,
    pub min_version: Option<TlsVersion>,
    pub max_version: Option<TlsVersion>,
    /// Go's names of TLS 1.2 suites (TLS 1.3's are not configurable, as in Go).
    #[serde(default)]
    pub cipher_suites: Vec<String>,
    /// Go's names of key-exchange groups.
    #[serde(default)]
    pub curve_preferences: Vec<String>,
    #[serde(default)]
    pub prefer_server_cipher_suites: Option<bool>,
}

/// Go's `tls.ClientAuthType` names, as exporter-toolkit reads them.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
pub enum ClientAuth {
    #[default]
    NoClientCert,
    RequestClientCert,
    RequireAnyClientCert,
    VerifyClientCertIfGiven,
    RequireAndVerifyClientCert,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    TLS10,
    TLS11,
    TLS12,
    TLS13,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HttpServerConfig {
    /// Headers added to every answer; only the security headers exporter-toolkit allows.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Accepted for compatibility; the exporter speaks HTTP/1.1 only.
    pub http2: Option<bool>,
}

/// The headers `http_server_config.headers` may set, as in exporter-toolkit.
const ALLOWED_HEADERS: [&str; 5] = [
    "Content-Security-Policy",
    "Strict-Transport-Security",
    "X-Content-Type-Options",
    "X-Frame-Options",
    "X-XSS-Protection",
];

/// A bad web configuration: which key, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{key}: {msg}")]
pub struct WebConfigError {
    pub key: String,
    pub msg: String,
}

fn bad(key: impl Into<String>, msg: impl Into<String>) -> WebConfigError {
    WebConfigError {
        key: key.into(),
        msg: msg.into(),
    }
}

/// Parses and checks the file's text. Relative paths are made relative to `dir` (the file's
/// folder), as exporter-toolkit does.
pub fn parse(text: &str, dir: &Path) -> Result<WebConfig, WebConfigError> {
    let mut c: WebConfig = if text.trim().is_empty() {
        WebConfig::default()
    } else if let Some(line) = reveal_schema::nesting::too_deep(text) {
        return Err(bad(
            format!("line {line}"),
            reveal_schema::nesting::message(line),
        ));
    } else {
        yaml_serde::from_str(text).map_err(|e| {
            let at = e
                .location()
                .map(|l| format!("line {}", l.line()))
                .unwrap_or_else(|| "file".into());
            bad(at, reveal_schema::excerpt::library_message(&e))
        })?
    };
    if let Some(t) = c.tls_server_config.as_mut() {
        for p in [&mut t.cert_file, &mut t.key_file, &mut t.client_ca_file]
            .into_iter()
            .flatten()
        {
            if p.is_relative() {
                *p = dir.join(&*p);
            }
        }
    }
    check(&c)?;
    Ok(c)
}

fn check(c: &WebConfig) -> Result<(), WebConfigError> {
    if let Some(t) = &c.tls_server_config {
        let k = |s: &str| format!("tls_server_config.{s}");
        match (&t.cert_file, &t.key_file) {
            (Some(_), Some(_)) => {}
            (None, _) => return Err(bad(k("cert_file"), "required when TLS is configured")),
            (_, None) => return Err(bad(k("key_file"), "required when TLS is configured")),
        }
        let verifies = matches!(
            t.client_auth_type,
            ClientAuth::VerifyClientCertIfGiven | ClientAuth::RequireAndVerifyClientCert
        );
        match t.client_auth_type {
            ClientAuth::RequestClientCert | ClientAuth::RequireAnyClientCert => {
                return Err(bad(
                    k("client_auth_type"),
                    format!(
                        "{:?} (accepting client certificates nobody verifies) is not supported; \
                         use VerifyClientCertIfGiven or RequireAndVerifyClientCert with client_ca_file",
                        t.client_auth_type
                    ),
                ))
            }
            _ if verifies && t.client_ca_file.is_none() => {
                return Err(bad(
                    k("client_ca_file"),
                    format!("required by client_auth_type {:?}", t.client_auth_type),
                ))
            }
            ClientAuth::NoClientCert if t.client_ca_file.is_some() => {
                return Err(bad(
                    k("client_auth_type"),
                    "client_ca_file is set but client_auth_type is NoClientCert: say \
                     RequireAndVerifyClientCert (or VerifyClientCertIfGiven)",
                ))
            }
            _ => {}
        }
        for (key, v) in [
            ("min_version", t.min_version),
            ("max_version", t.max_version),
        ] {
            if matches!(v, Some(TlsVersion::TLS10 | TlsVersion::TLS11)) {
                return Err(bad(
                    k(key),
                    "TLS 1.0 and 1.1 are not supported; use TLS12 or TLS13",
                ));
            }
        }
        if let (Some(lo), Some(hi)) = (t.min_version, t.max_version) {
            if lo > hi {
                return Err(bad(k("max_version"), "below min_version"));
            }
        }
    }
    for (name, value) in &c.http_server_config.headers {
        let key = format!("http_server_config.headers.{name}");
        if !ALLOWED_HEADERS.contains(&name.as_str()) {
            return Err(bad(
                key,
                format!("not one of {}", ALLOWED_HEADERS.join(", ")),
            ));
        }
        let v = value.to_ascii_lowercase();
        let ok = match name.as_str() {
            "X-Content-Type-Options" => v == "nosniff",
            "X-Frame-Options" => v == "deny" || v == "sameorigin",
            _ => !value.is_empty() && !value.contains(['\r', '\n']),
        };
        if !ok {
            return Err(bad(
                key,
                format!(
                    "{value:?} is not a valid value",
                    value = crate::error::Excerpt(value)
                ),
            ));
        }
    }
    for (user, hash) in &c.basic_auth_users {
        let key = format!("basic_auth_users.{user}");
        if user.is_empty() || user.contains(':') {
            return Err(bad(key, "a user name is not empty and has no ':'"));
        }
        if hash.parse::<bcrypt::HashParts>().is_err() {
            return Err(bad(
                key,
                "not a bcrypt hash (like $2y$10$...): write the hash of the password, never \
                 the password (e.g. `htpasswd -nbBC 10 '' PASSWORD | tr -d ':'`)",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // bcrypt of "hunter2" at cost 4 (fast for tests).
    const HASH: &str = "$2b$04$qHL4URqcBc9eR/xRBSuryeWEFoMmMrZXQnoyckBcYa7CLOrFCH4uC";

    fn refused(text: &str) -> WebConfigError {
        parse(text, Path::new("/etc/reveal")).expect_err("accepted")
    }

    #[test]
    fn a_full_file_parses_with_paths_relative_to_it() {
        let c = parse(
            &format!(
                "tls_server_config:\n  cert_file: tls.crt\n  key_file: /abs/tls.key\n  \
                 client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n  \
                 min_version: TLS13\nhttp_server_config:\n  headers:\n    \
                 X-Frame-Options: deny\nbasic_auth_users:\n  prometheus: {HASH}\n"
            ),
            Path::new("/etc/reveal"),
        )
        .unwrap();
        let t = c.tls_server_config.unwrap();
        assert_eq!(t.cert_file.unwrap(), Path::new("/etc/reveal/tls.crt"));
        assert_eq!(t.key_file.unwrap(), Path::new("/abs/tls.key"));
        assert_eq!(t.client_auth_type, ClientAuth::RequireAndVerifyClientCert);
        assert_eq!(t.min_version, Some(TlsVersion::TLS13));
        assert_eq!(c.basic_auth_users["prometheus"], HASH);
        assert_eq!(parse("", Path::new("/")).unwrap(), WebConfig::default());
    }

    #[test]
    fn a_plain_password_is_refused_with_how_to_hash_it() {
        let e = refused("basic_auth_users:\n  prometheus: hunter2\n");
        assert_eq!(e.key, "basic_auth_users.prometheus");
        assert!(e.msg.contains("not a bcrypt hash"), "{e}");
    }

    #[test]
    fn each_bad_key_is_named() {
        let cases = [
            ("tls_server_config:\n  key_file: k\n", "tls_server_config.cert_file"),
            ("tls_server_config:\n  cert_file: c\n", "tls_server_config.key_file"),
            (
                "tls_server_config:\n  cert_file: c\n  key_file: k\n  client_auth_type: RequireAndVerifyClientCert\n",
                "tls_server_config.client_ca_file",
            ),
            (
                "tls_server_config:\n  cert_file: c\n  key_file: k\n  client_auth_type: RequireAnyClientCert\n",
                "tls_server_config.client_auth_type",
            ),
            (
                "tls_server_config:\n  cert_file: c\n  key_file: k\n  client_ca_file: ca\n",
                "tls_server_config.client_auth_type",
            ),
            (
                "tls_server_config:\n  cert_file: c\n  key_file: k\n  min_version: TLS10\n",
                "tls_server_config.min_version",
            ),
            (
                "tls_server_config:\n  cert_file: c\n  key_file: k\n  min_version: TLS13\n  max_version: TLS12\n",
                "tls_server_config.max_version",
            ),
            (
                "http_server_config:\n  headers:\n    Server: reveal\n",
                "http_server_config.headers.Server",
            ),
            (
                "http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n",
                "http_server_config.headers.X-Content-Type-Options",
            ),
        ];
        for (text, key) in cases {
            assert_eq!(refused(text).key, key, "{text}");
        }
        let e = refused("tls_server_config:\n  cert: inline\n");
        assert!(e.key.starts_with("line "), "{e}");
        assert!(e.msg.contains("unknown field `cert`"), "{e}");
    }
}
