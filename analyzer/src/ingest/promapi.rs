//! Client of the Prometheus HTTP API's range queries
//! (<https://prometheus.io/docs/prometheus/latest/querying/api/#range-queries>), as served by
//! Prometheus, Thanos, Mimir and VictoriaMetrics.
//!
//! A response looks like
//! `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"h:9100"},"values":[[1700000000.1,"0.5"]]}]},"warnings":["…"]}`
//! and an error like `{"status":"error","errorType":"bad_data","error":"…"}`. Parsing is a
//! pure function over the body that never panics; anything unexpected is a [`PromError`].

use reveal_schema::Excerpt;
use std::collections::BTreeMap;

use serde::Deserialize;

use crate::http::{HttpClient, HttpError};

/// Prometheus refuses range queries of more than 11,000 points per series; longer ranges are
/// split into pieces of at most this many steps.
pub const MAX_POINTS: i64 = 10_000;

#[derive(Debug, thiserror::Error)]
pub enum PromError {
    #[error(transparent)]
    Http(#[from] HttpError),
    /// The API answered with `status: error` (a bad expression, a timeout, overload).
    #[error("query {expr:?}: {error_type}: {error} (HTTP {status})")]
    Api {
        expr: String,
        status: u16,
        error_type: String,
        error: String,
    },
    /// The body was not the API's JSON.
    #[error("query {expr:?}: unreadable answer (HTTP {status}): {msg}")]
    Parse {
        expr: String,
        status: u16,
        msg: String,
    },
}

impl PromError {
    /// Whether the same query may succeed later: transport trouble, 5xx, 429, or a server
    /// that said it timed out or was unavailable. A bad expression will not.
    pub fn is_retryable(&self) -> bool {
        match self {
            PromError::Http(e) => e.is_retryable(),
            PromError::Api {
                status, error_type, ..
            } => {
                *status >= 500
                    || *status == 429
                    || matches!(error_type.as_str(), "timeout" | "unavailable" | "internal")
            }
            PromError::Parse { status, .. } => *status >= 500 || *status == 429,
        }
    }
}

/// One series of a matrix result; timestamps in ms since the epoch, values as reported
/// (NaN and infinities included: the analyzer's windows decide what to do with them).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub labels: BTreeMap<String, String>,
    pub samples: Vec<(i64, f64)>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Matrix {
    pub series: Vec<Series>,
    pub warnings: Vec<String>,
}

#[derive(Deserialize)]
struct Envelope {
    status: String,
    #[serde(default)]
    data: Option<Data>,
    #[serde(default, rename = "errorType")]
    error_type: String,
    #[serde(default)]
    error: String,
    #[serde(default)]
    warnings: Vec<String>,
}

#[derive(Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<RawSeries>,
}

#[derive(Deserialize)]
struct RawSeries {
    metric: BTreeMap<String, String>,
    #[serde(default)]
    values: Vec<(f64, String)>,
}

/// Parses a `query_range` answer of HTTP status `status` for expression `expr`.
pub fn parse_query_range(expr: &str, status: u16, body: &[u8]) -> Result<Matrix, PromError> {
    let parse_err = |msg: String| PromError::Parse {
        expr: expr.to_string(),
        status,
        msg,
    };
    let env: Envelope = serde_json::from_slice(body).map_err(|e| {
        let head = &body[..body.len().min(reveal_schema::excerpt::EXCERPT_CHARS)];
        let start = String::from_utf8_lossy(head).into_owned();
        let e = reveal_schema::excerpt::library_message(&e);
        parse_err(format!("{e}; body starts {start:?}"))
    })?;
    if env.status != "success" {
        return Err(PromError::Api {
            expr: expr.to_string(),
            status,
            error_type: env.error_type,
            error: env.error,
        });
    }
    let data = env
        .data
        .ok_or_else(|| parse_err("success without data".into()))?;
    if data.result_type != "matrix" {
        return Err(parse_err(format!(
            "resultType {:?}, expected matrix",
            Excerpt(&data.result_type)
        )));
    }
    let mut series = Vec::with_capacity(data.result.len());
    for raw in data.result {
        let mut samples = Vec::with_capacity(raw.values.len());
        for (t, v) in raw.values {
            // ±2^53 ms, as the file sources accept: a stamp beyond it would saturate the cast
            // below and break grid arithmetic downstream.
            let ms = (t * 1000.0).round();
            if !(ms.is_finite() && ms.abs() <= 9.0e15) {
                return Err(parse_err(format!("timestamp {t} out of range")));
            }
            let value = parse_value(&v)
                .ok_or_else(|| parse_err(format!("value {v:?}", v = Excerpt(&v))))?;
            samples.push((ms as i64, value));
        }
        series.push(Series {
            labels: raw.metric,
            samples,
        });
    }
    Ok(Matrix {
        series,
        warnings: env.warnings,
    })
}

/// Sample values are strings: decimal, or `NaN`, `+Inf`, `-Inf`.
fn parse_value(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        _ => s.parse().ok(),
    }
}

/// `[start, end]` cut into pieces of at most [`MAX_POINTS`] steps, on the same step grid.
pub fn split_range(start_ms: i64, end_ms: i64, step_ms: i64) -> Vec<(i64, i64)> {
    let step = step_ms.max(1);
    let span = (MAX_POINTS - 1) * step;
    let mut out = Vec::new();
    let mut s = start_ms;
    while s <= end_ms {
        let e = (s + span).min(end_ms);
        out.push((s, e));
        s = e + step;
    }
    out
}

fn secs(ms: i64) -> String {
    format!("{}.{:03}", ms.div_euclid(1000), ms.rem_euclid(1000))
}

/// Range queries against one Prometheus-compatible endpoint.
#[derive(Clone, Debug)]
pub struct PromClient {
    client: HttpClient,
    url: String,
}

impl PromClient {
    /// `base` is the server's URL (`http://prometheus:9090`, or with a path prefix).
    pub fn new(client: HttpClient, base: &str) -> Self {
        PromClient {
            client,
            url: format!("{}/api/v1/query_range", base.trim_end_matches('/')),
        }
    }

    /// One `query_range` POST, its parameters as a form body (which keeps long expressions
    /// out of URLs and logs).
    fn query_request(
        &self,
        expr: &str,
        start_ms: i64,
        end_ms: i64,
        step_ms: i64,
    ) -> Result<reqwest::RequestBuilder, PromError> {
        let (start, end, step) = (
            secs(start_ms),
            secs(end_ms),
            format!("{}ms", step_ms.max(1)),
        );
        let form: [(&str, &str); 4] = [
            ("query", expr),
            ("start", &start),
            ("end", &end),
            ("step", &step),
        ];
        Ok(self
            .client
            .request(reqwest::Method::POST, &self.url)?
            .form(&form))
    }

    async fn query_once(
        &self,
        expr: &str,
        start_ms: i64,
        end_ms: i64,
        step_ms: i64,
    ) -> Result<Matrix, PromError> {
        let rb = self.query_request(expr, start_ms, end_ms, step_ms)?;
        let (status, body) = self.client.fetch(&self.url, rb).await?;
        parse_query_range(expr, status, &body)
    }

    /// The series of `expr` over `[start, end]` at `step`, split into several queries when
    /// the range holds more than [`MAX_POINTS`] steps and stitched back together.
    pub async fn query_range(
        &self,
        expr: &str,
        start_ms: i64,
        end_ms: i64,
        step_ms: i64,
    ) -> Result<Matrix, PromError> {
        let mut merged: BTreeMap<BTreeMap<String, String>, Vec<(i64, f64)>> = BTreeMap::new();
        let mut warnings = Vec::new();
        for (s, e) in split_range(start_ms, end_ms, step_ms) {
            let m = self.query_once(expr, s, e, step_ms).await?;
            warnings.extend(m.warnings);
            for series in m.series {
                merged
                    .entry(series.labels)
                    .or_default()
                    .extend(series.samples);
            }
        }
        let series = merged
            .into_iter()
            .map(|(labels, samples)| Series { labels, samples })
            .collect();
        Ok(Matrix { series, warnings })
    }
}

#[cfg(test)]
mod tests;
