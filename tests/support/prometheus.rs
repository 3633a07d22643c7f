//! A real Prometheus (Debian's `/usr/bin/prometheus`) on a free loopback port, its TSDB and
//! config in a temp dir, and PromQL instant and range queries over its HTTP API.

use crate::http::{self, form};
use crate::{free_port, loopback, require_tool, Proc, TempDir};
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where Debian's `prometheus` package installs the server.
pub const PROMETHEUS: &str = "/usr/bin/prometheus";

/// The Prometheus binary, or `None` after a loud skip note (a failure under CI).
pub fn available() -> Option<PathBuf> {
    require_tool(PROMETHEUS, "prometheus")
}

/// How to start a Prometheus: its config file and extra flags.
#[derive(Debug, Clone)]
pub struct Builder {
    config: String,
    flags: Vec<String>,
}

impl Builder {
    /// Adds a command-line flag, e.g. `--query.lookback-delta=1s`.
    pub fn flag(mut self, f: impl Into<String>) -> Self {
        self.flags.push(f.into());
        self
    }

    /// Starts it and waits until `/-/ready` answers; panics (with its log) if it does not.
    /// The remote-write receiver is always on, as Reveal's analyzer writes into it.
    pub fn start(self) -> Prometheus {
        let bin =
            available().expect("prometheus is not installed (call prometheus::available() first)");
        let dir = TempDir::new("reveal-prometheus");
        let config = dir.write("prometheus.yml", &self.config);
        let port = free_port();
        let addr = loopback(port);
        let mut proc = Proc::spawn(
            "prometheus",
            std::process::Command::new(bin)
                .arg(format!("--config.file={}", config.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.path().join("data").display()
                ))
                .arg(format!("--web.listen-address={addr}"))
                .arg("--web.enable-remote-write-receiver")
                .args(&self.flags),
        );
        proc.wait_http_ready(addr, "/-/ready", Duration::from_secs(30));
        Prometheus {
            proc: Some(proc),
            addr,
            _dir: Some(dir),
        }
    }
}

/// One series of an instant query.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub metric: BTreeMap<String, String>,
    pub time: f64,
    pub value: f64,
}

/// One series of a range query.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub metric: BTreeMap<String, String>,
    pub values: Vec<(f64, f64)>,
}

/// A running Prometheus, stopped (and its data removed) on drop.
#[derive(Debug)]
pub struct Prometheus {
    /// `None` for a Prometheus this test did not start ([`Prometheus::at`]).
    proc: Option<Proc>,
    addr: SocketAddr,
    _dir: Option<TempDir>,
}

impl Prometheus {
    /// A Prometheus with the given `prometheus.yml` contents.
    pub fn with_config(yaml: &str) -> Builder {
        Builder {
            config: yaml.to_string(),
            flags: Vec::new(),
        }
    }

    /// A Prometheus scraping `targets` (host:port) as job `reveal` every `interval` (a
    /// Prometheus duration such as `100ms`), with the scrape timeout equal to the interval.
    pub fn scraping(targets: &[String], interval: &str) -> Builder {
        let list = targets
            .iter()
            .map(|t| format!("'{t}'"))
            .collect::<Vec<_>>()
            .join(", ");
        Prometheus::with_config(&format!(
            "global:\n  scrape_interval: {interval}\n  scrape_timeout: {interval}\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: reveal\n    static_configs:\n      - targets: [{list}]\n"
        ))
    }

    /// The query helpers for a Prometheus started elsewhere (e.g. by scripts/quickstart.sh);
    /// dropping it stops nothing.
    pub fn at(addr: SocketAddr) -> Prometheus {
        Prometheus {
            proc: None,
            addr,
            _dir: None,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn logs(&self) -> String {
        match &self.proc {
            Some(p) => p.logs(),
            None => format!("(Prometheus at {} was not started by this test)", self.addr),
        }
    }

    /// Calls `GET /api/v1/<endpoint>?<params>` and returns `data`, or the API's error text.
    pub fn api(&self, endpoint: &str, params: &[(&str, &str)]) -> Result<Value, String> {
        let path = format!("/api/v1/{endpoint}?{}", form(params));
        let resp = http::get(self.addr, &path).map_err(|e| format!("GET {path}: {e}"))?;
        let v: Value = serde_json::from_slice(&resp.body)
            .map_err(|e| format!("GET {path}: {} {e}: {}", resp.status, resp.text()))?;
        if v["status"] != "success" {
            return Err(format!(
                "GET {path}: {} {}: {}",
                resp.status, v["errorType"], v["error"]
            ));
        }
        Ok(v["data"].clone())
    }

    /// An instant query at the current time. Scalars come back as one sample without labels.
    pub fn query(&self, expr: &str) -> Result<Vec<Sample>, String> {
        let data = self.api("query", &[("query", expr)])?;
        parse_instant(&data)
    }

    /// A range query over `[start, end]` (Unix seconds) at `step` seconds.
    pub fn query_range(
        &self,
        expr: &str,
        start: f64,
        end: f64,
        step: f64,
    ) -> Result<Vec<Series>, String> {
        let (s, e, st) = (
            format!("{start:.3}"),
            format!("{end:.3}"),
            format!("{step}"),
        );
        let data = self.api(
            "query_range",
            &[("query", expr), ("start", &s), ("end", &e), ("step", &st)],
        )?;
        let arr = data["result"]
            .as_array()
            .ok_or("range result is not a matrix")?;
        arr.iter()
            .map(|s| {
                let values = s["values"]
                    .as_array()
                    .ok_or("no values")?
                    .iter()
                    .map(point)
                    .collect::<Result<Vec<_>, String>>()?;
                Ok(Series {
                    metric: labels(&s["metric"]),
                    values,
                })
            })
            .collect()
    }

    /// An instant query for a range vector (`metric[2s]`): the raw samples of each series.
    pub fn query_matrix(&self, expr: &str) -> Result<Vec<Series>, String> {
        let data = self.api("query", &[("query", expr)])?;
        if data["resultType"] != "matrix" {
            return Err(format!(
                "{expr}: expected a matrix, got {}",
                data["resultType"]
            ));
        }
        parse_matrix(&data)
    }

    /// The value of a query that returns one series (or a scalar); `None` for an empty result.
    pub fn value(&self, expr: &str) -> Result<Option<f64>, String> {
        let r = self.query(expr)?;
        match r.len() {
            0 => Ok(None),
            1 => Ok(Some(r[0].value)),
            n => Err(format!("{expr}: {n} series, expected one: {r:?}")),
        }
    }

    /// Polls `expr` until it yields one value for which `ok` holds; panics with the last
    /// result and Prometheus' log after `timeout`.
    pub fn wait_for_value(&self, expr: &str, ok: impl Fn(f64) -> bool, timeout: Duration) -> f64 {
        let deadline = Instant::now() + timeout;
        loop {
            let last = self.value(expr);
            if let Ok(Some(v)) = last {
                if ok(v) {
                    return v;
                }
            }
            if Instant::now() >= deadline {
                panic!(
                    "{expr}: no acceptable value after {timeout:?}; last: {last:?}\n{}",
                    self.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn labels(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// `[<unix time>, "<value>"]`, the API's sample encoding (values are strings: NaN, +Inf).
fn point(v: &Value) -> Result<(f64, f64), String> {
    let t = v[0]
        .as_f64()
        .ok_or_else(|| format!("bad sample time in {v}"))?;
    let s = v[1]
        .as_str()
        .ok_or_else(|| format!("bad sample value in {v}"))?;
    let x = match s {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        _ => s.parse().map_err(|_| format!("bad sample value {s:?}"))?,
    };
    Ok((t, x))
}

fn parse_matrix(data: &Value) -> Result<Vec<Series>, String> {
    let arr = data["result"].as_array().ok_or("result is not a matrix")?;
    arr.iter()
        .map(|s| {
            let values = s["values"]
                .as_array()
                .ok_or("no values")?
                .iter()
                .map(point)
                .collect::<Result<Vec<_>, String>>()?;
            Ok(Series {
                metric: labels(&s["metric"]),
                values,
            })
        })
        .collect()
}

fn parse_instant(data: &Value) -> Result<Vec<Sample>, String> {
    match data["resultType"].as_str() {
        Some("vector") => data["result"]
            .as_array()
            .ok_or("vector result is not an array")?
            .iter()
            .map(|s| {
                let (time, value) = point(&s["value"])?;
                Ok(Sample {
                    metric: labels(&s["metric"]),
                    time,
                    value,
                })
            })
            .collect(),
        Some("scalar") => {
            let (time, value) = point(&data["result"])?;
            Ok(vec![Sample {
                metric: BTreeMap::new(),
                time,
                value,
            }])
        }
        other => Err(format!("unexpected result type {other:?}: {data}")),
    }
}
