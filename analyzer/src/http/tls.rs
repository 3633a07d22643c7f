//! rustls client configuration from a `tls_config` block, with the two verifiers Prometheus'
//! options need: a fixed `server_name`, and `insecure_skip_verify`.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::{HttpError, TlsConfig};

fn setup<E: std::fmt::Display>(what: &str, path: &Path) -> impl FnOnce(E) -> HttpError {
    let what = format!("{what} {}", path.display());
    move |e| HttpError::Setup(format!("{what}: {e}"))
}

/// Builds the rustls client configuration for one `tls_config` block.
pub fn rustls_config(t: &TlsConfig) -> Result<rustls::ClientConfig, HttpError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    if let Some(ca) = &t.ca_file {
        let certs = CertificateDer::pem_file_iter(ca).map_err(setup("reading ca_file", ca))?;
        for cert in certs {
            let cert = cert.map_err(setup("parsing ca_file", ca))?;
            roots.add(cert).map_err(setup("adding CA from", ca))?;
        }
        if roots.is_empty() {
            return Err(HttpError::Setup(format!(
                "ca_file {} holds no certificate",
                ca.display()
            )));
        }
    } else {
        // Unreadable individual system certificates are skipped, as every TLS client does.
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| HttpError::Setup(e.to_string()))?;
    let verifier: Arc<dyn ServerCertVerifier> = if t.insecure_skip_verify {
        Arc::new(AcceptAnyCert(provider.clone()))
    } else {
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| HttpError::Setup(format!("no usable CA certificate: {e}")))?;
        match &t.server_name {
            Some(name) => {
                let name = ServerName::try_from(name.clone())
                    .map_err(|e| HttpError::Setup(format!("server_name {name:?}: {e}")))?;
                Arc::new(FixedName {
                    inner: webpki,
                    name,
                })
            }
            None => webpki,
        }
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match (&t.cert_file, &t.key_file) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .map_err(setup("reading cert_file", cert))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(setup("parsing cert_file", cert))?;
            let key_der =
                PrivateKeyDer::from_pem_file(key).map_err(setup("reading key_file", key))?;
            builder
                .with_client_auth_cert(chain, key_der)
                .map_err(setup("using client certificate", cert))?
        }
        _ => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Checks the certificate against `server_name` instead of the URL's host.
#[derive(Debug)]
struct FixedName {
    inner: Arc<WebPkiServerVerifier>,
    name: ServerName<'static>,
}

impl ServerCertVerifier for FixedName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _url_host: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.inner
            .verify_server_cert(end_entity, intermediates, &self.name, ocsp, now)
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(m, c, d)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(m, c, d)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// `insecure_skip_verify`: any certificate chain, but the handshake signature must still be
/// valid for the presented key (so the connection is at least not trivially spoofable).
#[derive(Debug)]
struct AcceptAnyCert(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
