//! The analyzer's HTTP side: `/metrics`, `/-/healthy` (the process serves), `/-/ready`
//! (past warm-up, and the latest pass reached the source).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

/// Shared between the loop (which updates it) and the server (which reports it).
#[derive(Debug, Default)]
pub struct Health {
    pub ready: AtomicBool,
}

pub struct Server {
    pub registry: Arc<Registry>,
    pub health: Arc<Health>,
}

impl Server {
    /// Binds `addr`; the caller spawns [`Server::serve`] on the listener.
    pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
        TcpListener::bind(addr).await
    }

    pub async fn serve(self: Arc<Self>, listener: TcpListener) {
        loop {
            let (stream, _) = match listener.accept().await {
                Ok(c) => c,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            let me = self.clone();
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(stream);
                let svc = hyper::service::service_fn(move |req| {
                    let me = me.clone();
                    async move { Ok::<_, std::convert::Infallible>(me.handle(&req)) }
                });
                let conn = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(std::time::Duration::from_secs(10))
                    .serve_connection(io, svc);
                if let Err(e) = conn.await {
                    tracing::debug!("connection ended: {e}");
                }
            });
        }
    }

    fn handle(&self, req: &Request<Incoming>) -> Response<Full<Bytes>> {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            return text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        }
        match req.uri().path() {
            "/metrics" => {
                let mut body = String::new();
                // Encoding into a String fails only if a metric's own encoder does, which the
                // built-in types never do.
                if let Err(e) = prometheus_client::encoding::text::encode(&mut body, &self.registry)
                {
                    return text(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        &format!("encoding failed: {e}\n"),
                    );
                }
                Response::builder()
                    .header(
                        "Content-Type",
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )
                    .body(Full::new(Bytes::from(body)))
                    .expect("static headers are valid")
            }
            "/-/healthy" => text(StatusCode::OK, "OK\n"),
            "/-/ready" if self.health.ready.load(Ordering::Relaxed) => text(StatusCode::OK, "OK\n"),
            "/-/ready" => text(
                StatusCode::SERVICE_UNAVAILABLE,
                "warming up or source unreachable\n",
            ),
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
