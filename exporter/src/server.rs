//! The HTTP side: `/metrics`, a landing page at `/`, and `/-/healthy`.

use crate::runner::{Format, Runner, Scope};
use crate::web::auth::Verdict;
use crate::web::Web;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use reveal_schema::serve::{Handshake, Io, Options};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
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
    /// Scrapes being rendered now, and when the last one ended (`Server::render`).
    pub rendering: AtomicUsize,
    pub last_render: Mutex<Option<LastRender>>,
}

/// Where one `--web.listen-address` asks to listen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listen {
    /// `:PORT`: every address, IPv6 and IPv4 (`[::]`, dual-stack), or IPv4 alone (`0.0.0.0`)
    /// on a host without IPv6.
    Any(u16),
    /// One address, given or resolved from a host name.
    At(SocketAddr),
}

/// Parses `:PORT` (all interfaces, as node_exporter writes it), `ADDRESS:PORT` (`[::1]:PORT`
/// for IPv6) and `HOST:PORT`, resolved now. A name with several addresses listens on the
/// first IPv4 one, else the first, as Go's `net.Listen` (and so node_exporter) does.
pub fn parse_listen_address(s: &str) -> Result<Listen, String> {
    let bad = |e: &dyn std::fmt::Display| format!("bad --web.listen-address {s:?}: {e}");
    if let Some(port) = s.strip_prefix(':') {
        return port.parse().map(Listen::Any).map_err(|e| bad(&e));
    }
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(Listen::At(a));
    }
    let (host, port) = s
        .rsplit_once(':')
        .ok_or_else(|| bad(&"expected HOST:PORT or :PORT"))?;
    let port: u16 = port.parse().map_err(|e| bad(&e))?;
    let addrs: Vec<SocketAddr> = std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
        .map_err(|e| bad(&e))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .map(Listen::At)
        .ok_or_else(|| bad(&"the name has no address"))
}

/// The kernel's backlog of each listener (as Go's `net.Listen` on Linux, near `somaxconn`).
const BACKLOG: i32 = 1024;

fn listen_on(addr: SocketAddr, dual_stack: bool) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    if dual_stack {
        socket.set_only_v6(false)?;
    }
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    Ok(socket.into())
}

/// Binds `listen`: `Any` as dual-stack `[::]:PORT`, falling back to `0.0.0.0:PORT` where the
/// host has no IPv6 (the kernel refuses an IPv6 socket, or `[::]` cannot be bound).
pub fn bind(listen: Listen) -> std::io::Result<std::net::TcpListener> {
    match listen {
        Listen::At(a) => listen_on(a, false),
        Listen::Any(port) => {
            let v6 = SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, port));
            match listen_on(v6, true) {
                Ok(l) => Ok(l),
                Err(e) if no_ipv6(&e) => {
                    tracing::info!("no IPv6 on this host ({e}): listening on IPv4 only");
                    listen_on(
                        SocketAddr::from((std::net::Ipv4Addr::UNSPECIFIED, port)),
                        false,
                    )
                }
                Err(e) => Err(e),
            }
        }
    }
}

/// Whether binding `[::]` failed because the host has no IPv6 (not: the port is taken).
fn no_ipv6(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EAFNOSUPPORT) | Some(libc::EADDRNOTAVAIL) | Some(libc::EPROTONOSUPPORT)
    )
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
                    let _slot = web.bcrypt_slots.acquire().await;
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
        let accept = req
            .headers()
            .get(hyper::header::ACCEPT)
            .and_then(|v| v.to_str().ok());
        self.answer_query(req.method(), req.uri().path(), req.uri().query(), accept)
            .await
    }

    /// The answer to one request, by method, path and `Accept` header.
    #[cfg(test)]
    async fn answer(
        &self,
        method: &Method,
        path: &str,
        accept: Option<&str>,
    ) -> Response<Full<Bytes>> {
        self.answer_query(method, path, None, accept).await
    }

    /// The answer to one request, by method, path, query (`collect[]`, `cadence`,
    /// [`Scope`]) and `Accept` header.
    async fn answer_query(
        &self,
        method: &Method,
        path: &str,
        query: Option<&str>,
        accept: Option<&str>,
    ) -> Response<Full<Bytes>> {
        if method != Method::GET && method != Method::HEAD {
            return text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        }
        if path == self.telemetry_path {
            let known: Vec<&str> = crate::collectors::COLLECTORS
                .iter()
                .map(|e| e.name)
                .collect();
            let scope = match Scope::from_query(query, &known) {
                Ok(s) => s,
                Err(e) => return text(StatusCode::BAD_REQUEST, &format!("{e}\n")),
            };
            if scope.cadence != crate::runner::Cadence::All && !self.runner.has_fast() {
                return text(
                    StatusCode::BAD_REQUEST,
                    "cadence=fast and cadence=slow need --metrics.fast\n",
                );
            }
            let Ok(_permit) = self.limit.clone().try_acquire_owned() else {
                return text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too many concurrent scrapes\n",
                );
            };
            let format = Format::from_accept(accept);
            let body = self.render(format, scope).await;
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

/// A scrape that follows the last one by less than this finds the exporter busy.
const BUSY_GAP: Duration = Duration::from_millis(10);

/// A render that took longer than this is slow (many GPUs, a slow sysfs): the next one is
/// rendered off the serving thread.
const SLOW_RENDER: Duration = Duration::from_millis(5);

/// The last render: when it ended and how long it took.
#[derive(Debug, Clone, Copy)]
pub struct LastRender {
    ended: Instant,
    took: Duration,
}

/// Whether the next render goes to a blocking thread: when `in_progress` renders run, or
/// the last one ended less than [`BUSY_GAP`] before `now` or took longer than [`SLOW_RENDER`].
fn off_thread(in_progress: usize, last: Option<LastRender>, now: Instant) -> bool {
    in_progress > 0
        || last.is_some_and(|l| {
            now.saturating_duration_since(l.ended) < BUSY_GAP || l.took > SLOW_RENDER
        })
}

impl Server {
    /// Renders a scrape. A lone, quick scrape (one Prometheus every 100 ms): inline, on the
    /// server's one thread — a scrape (about 1 ms) handed to a blocking thread and back costs
    /// two cross-thread wake-ups, about 15 % of its CPU on an idle VM
    /// (`benches/cpu_side_by_side.py`). Otherwise — a render in progress, the last one ended
    /// less than [`BUSY_GAP`] ago (many scrapers) or took longer than [`SLOW_RENDER`] — on a
    /// blocking thread, so health checks and other connections are answered meanwhile
    /// (`benches/serving_under_load.py`).
    async fn render(&self, format: Format, scope: Scope) -> String {
        let last = *self.last_render.lock().expect("not poisoned");
        let busy = off_thread(self.rendering.load(Ordering::Acquire), last, Instant::now());
        self.rendering.fetch_add(1, Ordering::AcqRel);
        let t0 = Instant::now();
        let body = if busy {
            let runner = self.runner.clone();
            tokio::task::spawn_blocking(move || {
                let t = Instant::now();
                (runner.render_scoped(format, &scope), t.elapsed())
            })
            .await
            .unwrap_or_else(|e| (format!("# render failed: {e}\n"), t0.elapsed()))
        } else {
            (self.runner.render_scoped(format, &scope), t0.elapsed())
        };
        self.rendering.fetch_sub(1, Ordering::AcqRel);
        *self.last_render.lock().expect("not poisoned") = Some(LastRender {
            ended: Instant::now(),
            took: body.1,
        });
        body.0
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
        reveal_schema::build::long_version(),
        collectors.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(max_requests: usize) -> Server {
        let settings = crate::collectors::Settings::default();
        Server {
            runner: Arc::new(Runner::new(&["stat"], &settings).unwrap()),
            telemetry_path: "/metrics".into(),
            limit: Arc::new(Semaphore::new(max_requests)),
            web: None,
            max_connections: 8,
            rendering: Default::default(),
            last_render: Default::default(),
        }
    }

    #[tokio::test]
    async fn scrapes_past_the_bound_get_503_at_once_and_the_rest_is_served() {
        let s = server(1);
        let ok = s.answer(&Method::GET, "/metrics", None).await;
        assert_eq!(ok.status(), StatusCode::OK);
        // The one scrape allowed is in progress: the next is refused, health still answers.
        let held = s.limit.clone().try_acquire_owned().unwrap();
        let busy = s.answer(&Method::GET, "/metrics", None).await;
        assert_eq!(busy.status(), StatusCode::SERVICE_UNAVAILABLE);
        let health = s.answer(&Method::GET, "/-/healthy", None).await;
        assert_eq!(health.status(), StatusCode::OK);
        drop(held);
        assert_eq!(
            s.answer(&Method::HEAD, "/metrics", None).await.status(),
            StatusCode::OK
        );
        let post = s.answer(&Method::POST, "/metrics", None).await;
        assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
        let other = s.answer(&Method::GET, "/debug/pprof", None).await;
        assert_eq!(other.status(), StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn bad_scrape_parameters_get_400_and_cadence_needs_a_fast_selection() {
        let s = server(4);
        let get = |q: &'static str| s.answer_query(&Method::GET, "/metrics", Some(q), None);
        assert_eq!(get("collect[]=stat").await.status(), StatusCode::OK);
        assert_eq!(
            get("collect[]=nope").await.status(),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(get("cadence=fast").await.status(), StatusCode::BAD_REQUEST);
        assert_eq!(get("cadence=all").await.status(), StatusCode::OK);
        let fast =
            crate::selection::Selection::parse("metrics: [reveal_cpu_forks_total]\n").unwrap();
        s.runner.set_fast(&fast);
        assert_eq!(get("cadence=fast").await.status(), StatusCode::OK);
        assert_eq!(
            get("cadence=sometimes").await.status(),
            StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn a_lone_quick_scrape_is_rendered_inline_and_a_busy_or_slow_one_is_not() {
        let now = Instant::now();
        let last = |ago_ms: u64, took_ms: u64| {
            Some(LastRender {
                ended: now - Duration::from_millis(ago_ms),
                took: Duration::from_millis(took_ms),
            })
        };
        assert!(!off_thread(0, None, now), "the first scrape");
        assert!(
            !off_thread(0, last(100, 1), now),
            "one Prometheus every 100 ms"
        );
        assert!(off_thread(1, last(100, 1), now), "a render in progress");
        assert!(off_thread(0, last(2, 1), now), "many scrapers, 2 ms apart");
        assert!(off_thread(0, last(100, 40), now), "a slow collector");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn both_ways_of_rendering_serve_the_same_page() {
        let s = server(4);
        let inline = s.answer(&Method::GET, "/metrics", None).await;
        // Right after it: the exporter is busy, so this one is rendered on a blocking thread.
        assert!(off_thread(
            0,
            *s.last_render.lock().unwrap(),
            Instant::now()
        ));
        let blocking = s.answer(&Method::GET, "/metrics", None).await;
        for r in [inline, blocking] {
            assert_eq!(r.status(), StatusCode::OK);
            let body = http_body_util::BodyExt::collect(r.into_body())
                .await
                .unwrap()
                .to_bytes();
            let text = String::from_utf8_lossy(&body);
            assert!(text.contains("reveal_cpu_time_seconds_total"), "{text}");
        }
    }

    #[test]
    fn listen_addresses() {
        assert_eq!(parse_listen_address(":19190").unwrap(), Listen::Any(19190));
        assert_eq!(
            parse_listen_address("127.0.0.1:0").unwrap(),
            Listen::At("127.0.0.1:0".parse().unwrap())
        );
        assert_eq!(
            parse_listen_address("[::1]:9100").unwrap(),
            Listen::At("[::1]:9100".parse().unwrap())
        );
        // A name resolves (its IPv4 address first, as Go's net.Listen picks).
        match parse_listen_address("localhost:9100").unwrap() {
            Listen::At(a) => assert!(a.ip().is_loopback() && a.port() == 9100, "{a}"),
            other => panic!("{other:?}"),
        }
        for bad in ["nonsense", ":", ":70000", "localhost:http", "[::1]"] {
            assert!(parse_listen_address(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn any_listens_on_ipv4_and_ipv6() {
        let l = bind(Listen::Any(0)).unwrap();
        let addr = l.local_addr().unwrap();
        let v4 = std::net::TcpStream::connect(("127.0.0.1", addr.port()));
        assert!(v4.is_ok(), "{addr}: IPv4 loopback refused: {v4:?}");
        if addr.is_ipv6() {
            // Dual-stack: the same socket takes IPv6 too.
            assert!(std::net::TcpStream::connect(("::1", addr.port())).is_ok());
        } else {
            eprintln!("NOTE: no IPv6 on this host; `:PORT` fell back to 0.0.0.0");
        }
        // A taken port is an error, never a silent fallback.
        let again = bind(Listen::At(SocketAddr::from(([127, 0, 0, 1], addr.port()))));
        assert!(again.is_err());
    }
}
