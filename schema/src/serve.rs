//! The accept loop of both binaries' HTTP servers (the exporter's `/metrics`, the analyzer's
//! `/metrics` and health endpoints), so that limits and error handling are the same:
//!
//! - each connection is served on its own task over HTTP/1.1;
//! - at most [`Options::max_connections`] are open at once; beyond that, new connections
//!   wait in the kernel's backlog until one closes (as Go's `LimitListener` does), so a flood
//!   of connections cannot exhaust file descriptors or memory;
//! - a client gets [`Options::header_read_timeout`] to complete its TLS handshake and to send
//!   each request's headers, and a connection idle that long between requests is closed: a
//!   slow or idle client cannot hold a connection slot for long;
//! - a failed `accept` (out of file descriptors and the like) backs off instead of spinning.
//!
//! The handler answers one request; what it serves is each binary's own. A connection can be
//! wrapped before HTTP is spoken on it ([`Options::handshake`]: the exporter's TLS).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// Time a client has to send its request headers (and to finish a TLS handshake), and the
/// longest a connection may sit idle between requests.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections open at once, by default: far more than the scrapers and browsers of one
/// node, far fewer than its file descriptors.
pub const MAX_CONNECTIONS: usize = 512;

/// Pause after a failed `accept`.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// A byte stream HTTP can be served over: a TCP stream, or a TLS stream on one.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}

/// What a connection is wrapped in before HTTP: `Err` closes it (a refused handshake).
pub type Handshake = Arc<
    dyn Fn(TcpStream) -> Pin<Box<dyn Future<Output = std::io::Result<Box<dyn Io>>> + Send>>
        + Send
        + Sync,
>;

/// Limits and the optional handshake of one server.
#[derive(Clone)]
pub struct Options {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub handshake: Option<Handshake>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_connections: MAX_CONNECTIONS,
            header_read_timeout: HEADER_READ_TIMEOUT,
            handshake: None,
        }
    }
}

/// Serves connections from `listener` with the default [`Options`] until the task is dropped,
/// answering each request with `handle`.
pub async fn serve<H, F>(listener: TcpListener, handle: H)
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    serve_with(listener, Options::default(), handle).await
}

/// [`serve`] with explicit limits and handshake.
pub async fn serve_with<H, F>(listener: TcpListener, options: Options, handle: H)
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    let slots = Arc::new(Semaphore::new(options.max_connections.max(1)));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return; // never closed
        };
        let (stream, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let handle = handle.clone();
        let options = options.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let io: Box<dyn Io> = match &options.handshake {
                None => Box::new(stream),
                Some(h) => match tokio::time::timeout(options.header_read_timeout, h(stream)).await
                {
                    Ok(Ok(io)) => io,
                    Ok(Err(e)) => {
                        tracing::debug!(%peer, "handshake refused: {e}");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(%peer, "handshake timed out");
                        return;
                    }
                },
            };
            let svc = hyper::service::service_fn(move |req| {
                let answer = handle(req);
                async move { Ok::<_, Infallible>(answer.await) }
            });
            // The header timer also runs while the connection waits for its next request,
            // so an idle keep-alive connection is closed after the same time.
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(options.header_read_timeout)
                .serve_connection(TokioIo::new(io), svc);
            if let Err(e) = conn.await {
                tracing::debug!(%peer, "connection ended: {e}");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn start(options: Options) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve_with(listener, options, |_req| async {
            Response::new(Full::new(Bytes::from_static(b"ok")))
        }));
        addr
    }

    /// Sends one request on `s` and reads until the answer's body arrives.
    async fn ask(s: &mut TcpStream) -> String {
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        while !got.ends_with(b"ok") {
            let n = s.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed before answering");
            got.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&got).into_owned()
    }

    /// Whether the server closes `s` within `within`.
    async fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
        let mut buf = [0u8; 16];
        matches!(
            tokio::time::timeout(within, s.read(&mut buf)).await,
            Ok(Ok(0)) | Ok(Err(_))
        )
    }

    #[tokio::test]
    async fn idle_and_silent_connections_are_closed_after_the_header_timeout() {
        let addr = start(Options {
            header_read_timeout: Duration::from_millis(300),
            ..Options::default()
        })
        .await;
        // Silent from the start.
        let mut silent = TcpStream::connect(addr).await.unwrap();
        assert!(closed_within(&mut silent, Duration::from_secs(3)).await);
        // Idle after one request on a keep-alive connection.
        let mut idle = TcpStream::connect(addr).await.unwrap();
        assert!(ask(&mut idle).await.starts_with("HTTP/1.1 200"));
        assert!(closed_within(&mut idle, Duration::from_secs(3)).await);
    }

    #[tokio::test]
    async fn connections_past_the_cap_wait_until_one_closes() {
        let addr = start(Options {
            max_connections: 2,
            header_read_timeout: Duration::from_secs(30),
            ..Options::default()
        })
        .await;
        let mut a = TcpStream::connect(addr).await.unwrap();
        let mut b = TcpStream::connect(addr).await.unwrap();
        ask(&mut a).await;
        ask(&mut b).await;
        // The third connects (the kernel's backlog) but is not served while two are open.
        let mut c = TcpStream::connect(addr).await.unwrap();
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 64];
        let waited = tokio::time::timeout(Duration::from_millis(500), c.read(&mut buf)).await;
        assert!(waited.is_err(), "served past the cap");
        drop(a);
        let n = tokio::time::timeout(Duration::from_secs(5), c.read(&mut buf))
            .await
            .expect("served once a slot freed")
            .unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    }
}
