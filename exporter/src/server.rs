//! The HTTP side: `/metrics`, a landing page at `/`, and `/-/healthy`.

use crate::runner::{Format, Runner};
use crate::web::auth::Verdict;
use crate::web::Web;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use reveal_schema::serve::{Handshake, Io, Options};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Everything a request handler needs.
pub struct Server {
    pub runner: Arc<Runner>,
    pub telemetry_path: String,
    pub limit: Arc<Semaphore>,
    /// `--web.config.file`, if given.
    pub web: Option<Arc<Web>>,
    pub max_connections: usize,
}

/// Resolves `:PORT` (all interfaces, as node_exporter writes it) and `HOST:PORT`.
pub fn parse_listen_address(s: &str) -> Result<SocketAddr, String> {
    let full = if s.starts_with(':') {
        format!("0.0.0.0{s}")
    } else {
        s.to_string()
    };
    full.parse()
        .map_err(|e| format!("bad --web.listen-address {s:?}: {e}"))
}

impl Server {
    /// Serves until the process ends (the accept loop is `reveal_schema::serve`'s).
    pub async fn serve(self: Arc<Self>, listener: TcpListener) -> std::io::Result<()> {
        let mut options = Options {
            max_connections: self.max_connections,
            ..Options::default()
        };
        if let Some(web) = self.web.clone().filter(|w| w.tls_at_start) {
            options.handshake = Some(tls_handshake(web));
        }
        reveal_schema::serve::serve_with(listener, options, move |req| {
            let me = self.clone();
            async move { me.guarded(req).await }
        })
        .await;
        Ok(())
    }

    /// Basic auth and security headers of `--web.config.file` around [`Self::handle`].
    async fn guarded(self: Arc<Self>, req: Request<Incoming>) -> Response<Full<Bytes>> {
        let Some(web) = self.web.clone() else {
            return self.handle(req).await;
        };
        let loaded = match web.current() {
            Ok(l) => l,
            Err(_) => {
                return text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the web configuration is invalid; see the exporter's log\n",
                )
            }
        };
        let users = &loaded.config.basic_auth_users;
        let mut resp = if users.is_empty() {
            self.handle(req).await
        } else {
            let header = req
                .headers()
                .get(hyper::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let verdict = match web.verifier.check_cached(users, header.as_deref()) {
                Some(v) => v,
                // bcrypt takes tens of milliseconds: off the serving thread.
                None => {
                    let (w, l) = (web.clone(), loaded.clone());
                    tokio::task::spawn_blocking(move || {
                        w.verifier
                            .check(&l.config.basic_auth_users, header.as_deref())
                    })
                    .await
                    .unwrap_or(Verdict::Denied)
                }
            };
            match verdict {
                Verdict::Allowed => self.handle(req).await,
                Verdict::Denied => {
                    let mut r = text(StatusCode::UNAUTHORIZED, "Unauthorized\n");
                    r.headers_mut().insert(
                        hyper::header::WWW_AUTHENTICATE,
                        hyper::header::HeaderValue::from_static("Basic"),
                    );
                    r
                }
            }
        };
        for (name, value) in &loaded.config.http_server_config.headers {
            if let (Ok(n), Ok(v)) = (
                hyper::header::HeaderName::from_bytes(name.as_bytes()),
                hyper::header::HeaderValue::from_str(value),
            ) {
                resp.headers_mut().insert(n, v);
            }
        }
        resp
    }

    async fn handle(&self, req: Request<Incoming>) -> Response<Full<Bytes>> {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            return text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        }
        let path = req.uri().path();
        if path == self.telemetry_path {
            let Ok(_permit) = self.limit.clone().try_acquire_owned() else {
                return text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too many concurrent scrapes\n",
                );
            };
            let accept = req
                .headers()
                .get(hyper::header::ACCEPT)
                .and_then(|v| v.to_str().ok());
            let format = Format::from_accept(accept);
            // Rendered inline, on the server's one thread: scrapes are serialized by the
            // runner's lock anyway, and a scrape (about 1 ms) handed to a blocking thread and
            // back cost two cross-thread wake-ups, about 15 % of its CPU on an idle VM
            // (`benches/cpu_side_by_side.py`). Other requests wait for the render to end; on
            // a runtime with more threads, the permit above still bounds concurrent scrapes.
            let body = self.runner.render_as(format);
            return Response::builder()
                .header("Content-Type", format.content_type())
                .body(Full::new(Bytes::from(body)))
                .expect("static headers are valid");
        }
        match path {
            "/-/healthy" | "/-/ready" => text(StatusCode::OK, "OK\n"),
            "/" => Response::builder()
                .header("Content-Type", "text/html; charset=utf-8")
                .body(Full::new(Bytes::from(landing(
                    &self.telemetry_path,
                    &self.runner.names(),
                ))))
                .expect("static headers are valid"),
            _ => text(StatusCode::NOT_FOUND, "not found\n"),
        }
    }
}

/// The TLS handshake with the configuration in force for each new connection (certificates
/// rotated on disk are used from the next connection on).
fn tls_handshake(web: Arc<Web>) -> Handshake {
    Arc::new(move |tcp| {
        let web = web.clone();
        Box::pin(async move {
            let cfg = web
                .current()
                .map_err(|e| std::io::Error::other(e.to_string()))?
                .tls
                .clone()
                .ok_or_else(|| std::io::Error::other("TLS is not configured"))?;
            let tls = tokio_rustls::TlsAcceptor::from(cfg).accept(tcp).await?;
            Ok(Box::new(tls) as Box<dyn Io>)
        })
    })
}

fn text(code: StatusCode, body: &str) -> Response<Full<Bytes>> {
    Response::builder()
        .status(code)
        .header("Content-Type", "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("static headers are valid")
}

fn landing(path: &str, collectors: &[&str]) -> String {
    format!(
        "<!doctype html><html><head><title>Reveal exporter</title></head><body>\
         <h1>Reveal exporter</h1><p>Version {}</p>\
         <p><a href=\"{path}\">Metrics</a> · <a href=\"/-/healthy\">Health</a></p>\
         <p>Enabled collectors: {}</p></body></html>\n",
        env!("CARGO_PKG_VERSION"),
        collectors.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses() {
        assert_eq!(parse_listen_address(":19190").unwrap().port(), 19190);
        assert!(parse_listen_address("127.0.0.1:0")
            .unwrap()
            .ip()
            .is_loopback());
        assert!(parse_listen_address("nonsense").is_err());
    }
}
