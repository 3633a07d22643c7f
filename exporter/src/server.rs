//! The HTTP side: `/metrics`, a landing page at `/`, and `/-/healthy`.

use crate::runner::{Format, Runner};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Everything a request handler needs.
pub struct Server {
    pub runner: Arc<Runner>,
    pub telemetry_path: String,
    pub limit: Arc<Semaphore>,
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
        reveal_schema::serve::serve(listener, move |req| {
            let me = self.clone();
            async move { me.handle(req).await }
        })
        .await;
        Ok(())
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
