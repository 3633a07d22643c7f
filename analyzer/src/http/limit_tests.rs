//! Reply bodies are read up to `body_size_limit`, against a server on a real socket that
//! answers what a faulty or hostile target would.

use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Serves one connection: reads the request, then writes `head` and, if `endless`, chunks
/// of 64 KiB until the client hangs up (bounded at 1 GiB so a broken client cannot keep the
/// test running).
async fn server(head: &'static str, body: Vec<u8>, endless: bool) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 4096];
        let _ = s.read(&mut buf).await;
        if s.write_all(head.as_bytes()).await.is_err() || s.write_all(&body).await.is_err() {
            return;
        }
        if endless {
            let chunk = format!("10000\r\n{}\r\n", "x".repeat(0x10000));
            for _ in 0..(1 << 14) {
                if s.write_all(chunk.as_bytes()).await.is_err() {
                    return;
                }
            }
        }
    });
    url
}

fn client(limit: ByteSize) -> HttpClient {
    HttpClient::new(&HttpClientConfig {
        body_size_limit: limit,
        ..Default::default()
    })
    .unwrap()
}

async fn get(c: &HttpClient, url: &str) -> Result<(u16, Vec<u8>), HttpError> {
    let rb = c.request(reqwest::Method::GET, url).unwrap();
    c.fetch(url, rb).await
}

#[tokio::test]
async fn a_reply_within_the_limit_is_read_whole() {
    let body = vec![b'a'; 1000];
    let url = server(
        "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",
        body.clone(),
        false,
    )
    .await;
    let (status, got) = get(&client(ByteSize(1000)), &url).await.unwrap();
    assert_eq!((status, got), (200, body));
}

#[tokio::test]
async fn a_declared_length_over_the_limit_is_refused_before_reading() {
    let url = server(
        "HTTP/1.1 200 OK\r\nContent-Length: 5000000000\r\n\r\n",
        Vec::new(),
        false,
    )
    .await;
    let e = get(&client(ByteSize::mib(1)), &url).await.unwrap_err();
    assert!(matches!(e, HttpError::TooLarge { .. }), "{e}");
    assert!(!e.is_retryable());
    assert!(e.to_string().contains("body_size_limit of 1MiB"), "{e}");
}

#[tokio::test]
async fn an_endless_chunked_reply_stops_at_the_limit() {
    let url = server(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        Vec::new(),
        true,
    )
    .await;
    // Well before the client's 10 s timeout: it stops at 1 MiB, not when time runs out.
    let t0 = std::time::Instant::now();
    let e = get(&client(ByteSize::mib(1)), &url).await.unwrap_err();
    assert!(matches!(e, HttpError::TooLarge { .. }), "{e}");
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(9),
        "{:?}",
        t0.elapsed()
    );
}

#[tokio::test]
async fn zero_means_no_limit() {
    let body = vec![b'b'; 3 << 20];
    let url = server(
        "HTTP/1.1 200 OK\r\nContent-Length: 3145728\r\n\r\n",
        body.clone(),
        false,
    )
    .await;
    let (_, got) = get(&client(ByteSize(0)), &url).await.unwrap();
    assert_eq!(got.len(), body.len());
}
