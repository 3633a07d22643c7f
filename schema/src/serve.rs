//! The accept loop of both binaries' HTTP servers (the exporter's `/metrics`, the analyzer's
//! `/metrics` and health endpoints), so that timeouts and error handling are the same: each
//! connection is served on its own task over HTTP/1.1, a client gets 10 s to send its request
//! headers, and a failed `accept` (out of file descriptors and the like) backs off instead of
//! spinning. The handler answers one request; what it serves is each binary's own.

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

/// Time a client has to send its request headers.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Pause after a failed `accept`.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Serves connections from `listener` until the task is dropped, answering each request with
/// `handle`.
pub async fn serve<H, F>(listener: TcpListener, handle: H)
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let handle = handle.clone();
        tokio::spawn(async move {
            let io = TokioIo::new(stream);
            let svc = hyper::service::service_fn(move |req| {
                let answer = handle(req);
                async move { Ok::<_, Infallible>(answer.await) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(io, svc);
            if let Err(e) = conn.await {
                tracing::debug!("connection ended: {e}");
            }
        });
    }
}
