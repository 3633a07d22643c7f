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

    /// Serves until the task is dropped (the accept loop is `reveal_schema::serve`'s).
    pub async fn serve(self: Arc<Self>, listener: TcpListener) {
        reveal_schema::serve::serve(listener, move |req| {
            let me = self.clone();
            async move { me.handle(&req) }
        })
        .await;
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
