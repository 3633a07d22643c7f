//! A tiny HTTP server on loopback that records every request and answers as told: the
//! receiving end of Alertmanager's webhook, and a misbehaving server (garbage, 5xx, hangs)
//! for the analyzer's fault-tolerance tests.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request as received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub at: Instant,
}

impl Request {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// Status and body of an answer.
pub type Answer = (u16, Vec<u8>);
type Responder = Box<dyn Fn(&Request) -> Answer + Send>;

/// The server; stops accepting on drop.
pub struct Recorder {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    responder: Arc<Mutex<Responder>>,
    stop: Arc<AtomicBool>,
}

impl Recorder {
    /// Answers `200 {}` to everything until told otherwise.
    pub fn start() -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let responder: Arc<Mutex<Responder>> =
            Arc::new(Mutex::new(Box::new(|_| (200, b"{}".to_vec()))));
        let stop = Arc::new(AtomicBool::new(false));
        let (reqs, resp, st) = (requests.clone(), responder.clone(), stop.clone());
        std::thread::spawn(move || {
            while !st.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((s, _)) => {
                        let (reqs, resp) = (reqs.clone(), resp.clone());
                        std::thread::spawn(move || serve(s, &reqs, &resp));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Recorder {
            addr,
            requests,
            responder,
            stop,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Replaces how requests are answered.
    pub fn respond(&self, f: impl Fn(&Request) -> Answer + Send + 'static) {
        *self.responder.lock().unwrap() = Box::new(f);
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// Every request body read as JSON (`null` where it is not), for failure messages.
    pub fn bodies(&self) -> Vec<serde_json::Value> {
        self.requests().iter().map(Request::json).collect()
    }

    /// Waits until some recorded request satisfies `ok`, and returns it.
    pub fn wait_for(&self, timeout: Duration, ok: impl Fn(&Request) -> bool) -> Option<Request> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(r) = self.requests().into_iter().find(|r| ok(r)) {
                return Some(r);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(s: TcpStream, reqs: &Mutex<Vec<Request>>, resp: &Mutex<Responder>) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let mut w = match s.try_clone() {
        Ok(w) => w,
        Err(_) => return,
    };
    let mut r = BufReader::new(s);
    // Keep-alive: serve requests on this connection until the client closes it.
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, path) = (
            parts.next().unwrap_or("").to_string(),
            parts.next().unwrap_or("").to_string(),
        );
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
        let len = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let req = Request {
            method,
            path,
            headers,
            body,
            at: Instant::now(),
        };
        let (status, answer) = (resp.lock().unwrap())(&req);
        reqs.lock().unwrap().push(req);
        let head = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            answer.len()
        );
        if w.write_all(head.as_bytes())
            .and_then(|_| w.write_all(&answer))
            .is_err()
        {
            return;
        }
    }
}
