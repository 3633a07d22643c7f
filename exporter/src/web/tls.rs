//! A rustls server configuration from `tls_server_config`: the certificate chain and key,
//! client verification against `client_ca_file`, protocol versions, TLS 1.2 cipher suites and
//! key-exchange groups by their Go names (the names exporter-toolkit files use).

use crate::error::Excerpt;
use std::path::Path;
use std::sync::Arc;

use rustls::crypto::ring as provider;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, SupportedCipherSuite};

use super::config::{ClientAuth, TlsServerConfig, TlsVersion, WebConfigError};

fn bad(key: &str, msg: impl Into<String>) -> WebConfigError {
    WebConfigError {
        key: format!("tls_server_config.{key}"),
        msg: msg.into(),
    }
}

fn certs(key: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>, WebConfigError> {
    let read: Result<Vec<_>, _> = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(key, format!("{}: {e}", path.display())))?
        .collect();
    let v = read.map_err(|e| bad(key, format!("{}: {e}", path.display())))?;
    if v.is_empty() {
        return Err(bad(
            key,
            format!("{}: no PEM certificate in it", path.display()),
        ));
    }
    Ok(v)
}

/// TLS 1.2 suites by Go's names (`crypto/tls`), with Go's older aliases for ChaCha20.
const SUITES: [(&str, SupportedCipherSuite); 8] = [
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        provider::cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        provider::cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        provider::cipher_suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
        provider::cipher_suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        provider::cipher_suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        provider::cipher_suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        provider::cipher_suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
        provider::cipher_suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
];

/// The ring provider narrowed to the configured suites and groups.
fn crypto(t: &TlsServerConfig) -> Result<CryptoProvider, WebConfigError> {
    let mut p = provider::default_provider();
    if !t.cipher_suites.is_empty() {
        let mut chosen: Vec<SupportedCipherSuite> = p
            .cipher_suites
            .iter()
            .copied()
            .filter(|s| matches!(s, SupportedCipherSuite::Tls13(_)))
            .collect();
        for name in &t.cipher_suites {
            let Some((_, s)) = SUITES.iter().find(|(n, _)| n == name) else {
                let known: Vec<&str> = SUITES.iter().map(|(n, _)| *n).collect();
                return Err(bad(
                    "cipher_suites",
                    format!(
                        "{name:?} is not supported; the supported ones are {}",
                        known.join(", "),
                        name = Excerpt(name)
                    ),
                ));
            };
            if !chosen.contains(s) {
                chosen.push(*s);
            }
        }
        p.cipher_suites = chosen;
    }
    if !t.curve_preferences.is_empty() {
        let mut groups = Vec::new();
        for name in &t.curve_preferences {
            let g = match name.as_str() {
                "X25519" => provider::kx_group::X25519,
                "CurveP256" => provider::kx_group::SECP256R1,
                "CurveP384" => provider::kx_group::SECP384R1,
                _ => {
                    return Err(bad(
                        "curve_preferences",
                        format!(
                            "{name:?} is not supported; use X25519, CurveP256 or CurveP384",
                            name = Excerpt(name)
                        ),
                    ))
                }
            };
            groups.push(g);
        }
        p.kx_groups = groups;
    }
    Ok(p)
}

/// Builds the server configuration, reading the certificate, key and client CA files now.
pub fn server_config(t: &TlsServerConfig) -> Result<Arc<ServerConfig>, WebConfigError> {
    let (Some(cert_file), Some(key_file)) = (&t.cert_file, &t.key_file) else {
        return Err(bad("cert_file", "cert_file and key_file are required"));
    };
    let chain = certs("cert_file", cert_file)?;
    let key = PrivateKeyDer::from_pem_file(key_file)
        .map_err(|e| bad("key_file", format!("{}: {e}", key_file.display())))?;
    let provider = Arc::new(crypto(t)?);
    let lo = t.min_version.unwrap_or(TlsVersion::TLS12);
    let hi = t.max_version.unwrap_or(TlsVersion::TLS13);
    let mut versions = Vec::new();
    if lo <= TlsVersion::TLS12 && hi >= TlsVersion::TLS12 {
        versions.push(&rustls::version::TLS12);
    }
    if hi >= TlsVersion::TLS13 {
        versions.push(&rustls::version::TLS13);
    }
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| bad("cipher_suites", e.to_string()))?;
    let builder = match t.client_auth_type {
        ClientAuth::NoClientCert => builder.with_no_client_auth(),
        _ => {
            let ca_file = t
                .client_ca_file
                .as_ref()
                .ok_or_else(|| bad("client_ca_file", "required to verify client certificates"))?;
            let mut roots = RootCertStore::empty();
            for c in certs("client_ca_file", ca_file)? {
                roots
                    .add(c)
                    .map_err(|e| bad("client_ca_file", format!("{}: {e}", ca_file.display())))?;
            }
            let v = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let v = if t.client_auth_type == ClientAuth::VerifyClientCertIfGiven {
                v.allow_unauthenticated()
            } else {
                v
            };
            let v = v
                .build()
                .map_err(|e| bad("client_ca_file", e.to_string()))?;
            builder.with_client_cert_verifier(v)
        }
    };
    let mut config = builder.with_single_cert(chain, key).map_err(|e| match e {
        rustls::Error::InvalidCertificate(_) => bad(
            "cert_file",
            format!("{}: not a usable certificate: {e}", cert_file.display()),
        ),
        _ => bad(
            "key_file",
            format!(
                "{}: does not match cert_file or is unusable: {e}",
                key_file.display()
            ),
        ),
    })?;
    config.ignore_client_order = t.prefer_server_cipher_suites.unwrap_or(true);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
