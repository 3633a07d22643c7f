//! Exposition text with timestamps: a recording of repeated scrapes, as the exporter serves
//! them, with each sample stamped.
//!
//! ```text
//! # TYPE reveal_cpu_seconds counter
//! reveal_cpu_seconds_total{cpu="0",mode="user"} 1234.5 1700000000.100
//! # EOF
//! ```
//!
//! Formats: <https://github.com/OpenObservability/OpenMetrics/blob/main/specification/OpenMetrics.md>
//! and <https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format>.
//! Timestamps are seconds in OpenMetrics and integer milliseconds in the Prometheus text
//! format; a file is read as OpenMetrics when it has a `# EOF` line or a timestamp with a
//! fraction or exponent, otherwise as Prometheus text. The format is decided for the whole
//! file, never by the size of a number.
//!
//! Samples without a timestamp are an error: the position of a sample in a recording is not
//! a time. Exemplars are ignored; `_created` samples are skipped (they are not
//! measurements). A counter family's `_total`, `_count`, `_sum` and `_bucket` samples are
//! counters; everything else keeps the family's type; a sample of no declared family is a
//! gauge.

use reveal_schema::Excerpt;
use std::collections::HashMap;

use super::{Assembler, SourceError, SourceOptions};
use crate::core::matrix::{HostMatrix, MetricType};

/// Parses a recording into one matrix per host. Never panics; the first malformed line is
/// an error naming its line number.
pub fn parse_openmetrics(text: &str, opts: &SourceOptions) -> Result<Vec<HostMatrix>, SourceError> {
    let openmetrics = text.lines().any(|l| l.trim_end() == "# EOF");
    let mut families: HashMap<String, &'static str> = HashMap::new();
    let mut asm = Assembler::new(opts);
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let mut words = comment.split_whitespace();
            if words.next() == Some("TYPE") {
                let (Some(name), Some(ty)) = (words.next(), words.next()) else {
                    return Err(SourceError::parse(
                        line_no,
                        "TYPE line needs a name and a type",
                    ));
                };
                let ty = match ty {
                    "counter" => "counter",
                    "gauge" => "gauge",
                    "histogram" => "histogram",
                    "gaugehistogram" => "gaugehistogram",
                    "summary" => "summary",
                    "info" => "info",
                    "stateset" => "stateset",
                    "unknown" | "untyped" => "unknown",
                    other => {
                        return Err(SourceError::parse(
                            line_no,
                            format!("unknown type {other:?}", other = Excerpt(other)),
                        ))
                    }
                };
                families.insert(name.to_string(), ty);
            }
            continue;
        }
        let s = parse_sample(line).map_err(|m| SourceError::parse(line_no, m))?;
        let Some(metric_type) = sample_type(s.metric, &families) else {
            continue;
        };
        let ts_ms = parse_timestamp(s.timestamp, openmetrics)
            .map_err(|m| SourceError::parse(line_no, m))?;
        let labels = if asm.knows(s.series) {
            Vec::new()
        } else {
            parse_label_text(s.labels).map_err(|m| SourceError::parse(line_no, m))?
        };
        asm.push(s.series, s.metric, &labels, metric_type, ts_ms, s.value);
    }
    if asm.samples() == 0 {
        return Err(SourceError::Empty);
    }
    asm.finish()
}

/// The type of a sample from its family's `# TYPE`; `None` for samples that are skipped.
fn sample_type(metric: &str, families: &HashMap<String, &'static str>) -> Option<MetricType> {
    if metric.ends_with("_created") {
        return None;
    }
    if let Some(ty) = families.get(metric) {
        // Prometheus text declares counters under the sample's own name (`x_total`).
        return Some(map_type(ty, true));
    }
    for suffix in [
        "_total", "_count", "_sum", "_bucket", "_info", "_gcount", "_gsum",
    ] {
        if let Some(fam) = metric.strip_suffix(suffix) {
            if let Some(ty) = families.get(fam) {
                let cumulative = matches!(suffix, "_total" | "_count" | "_sum" | "_bucket");
                return Some(
                    if cumulative && matches!(*ty, "counter" | "histogram" | "summary") {
                        MetricType::Counter
                    } else {
                        map_type(ty, false)
                    },
                );
            }
        }
    }
    Some(MetricType::Gauge)
}

fn map_type(ty: &str, exact: bool) -> MetricType {
    match ty {
        "counter" => MetricType::Counter,
        "info" => MetricType::Info,
        // A summary's own-name samples are quantiles; a histogram has none by that name.
        "summary" | "gauge" | "gaugehistogram" | "stateset" | "histogram" if exact => {
            MetricType::Gauge
        }
        "unknown" => MetricType::Unknown,
        _ => MetricType::Gauge,
    }
}

struct Sample<'a> {
    /// Name and labels as written, the series' identity within the file.
    series: &'a str,
    metric: &'a str,
    /// Text between the braces, empty when there are none.
    labels: &'a str,
    value: f64,
    timestamp: Option<&'a str>,
}

fn parse_sample(line: &str) -> Result<Sample<'_>, String> {
    let b = line.as_bytes();
    let name_end = b
        .iter()
        .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_' || c == b':'))
        .unwrap_or(b.len());
    if name_end == 0 || b[0].is_ascii_digit() {
        return Err(format!("expected a metric name: {}", clip(line)));
    }
    let metric = &line[..name_end];
    let (labels, series_end) = if b.get(name_end) == Some(&b'{') {
        let close = label_block_end(&line[name_end..])
            .ok_or_else(|| format!("unterminated label set: {}", clip(line)))?;
        (&line[name_end + 1..name_end + close], name_end + close + 1)
    } else {
        ("", name_end)
    };
    let rest = &line[series_end..];
    if !rest.starts_with([' ', '\t']) {
        return Err(format!("expected a space after the series: {}", clip(line)));
    }
    // Exemplars follow ` # `.
    let rest = rest.split(" # ").next().unwrap_or("");
    let mut fields = rest.split_whitespace();
    let value = fields
        .next()
        .ok_or_else(|| format!("missing value: {}", clip(line)))?;
    let value =
        parse_float(value).ok_or_else(|| format!("bad value {value:?}", value = Excerpt(value)))?;
    let timestamp = fields.next();
    if let Some(extra) = fields.next() {
        return Err(format!(
            "unexpected {extra:?} after the timestamp",
            extra = Excerpt(extra)
        ));
    }
    Ok(Sample {
        series: &line[..series_end],
        metric,
        labels,
        value,
        timestamp,
    })
}

/// Offset of the `}` closing the label set that starts at `s[0] == '{'`, skipping quoted
/// values with escapes.
fn label_block_end(s: &str) -> Option<usize> {
    let mut in_str = false;
    let mut escaped = false;
    for (i, c) in s.char_indices().skip(1) {
        if in_str {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
        } else if c == '"' {
            in_str = true;
        } else if c == '}' {
            return Some(i);
        }
    }
    None
}

pub(crate) fn parse_label_text(s: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut rest = s.trim_start();
    while !rest.is_empty() {
        let eq = rest
            .find('=')
            .ok_or_else(|| format!("label without '=': {}", clip(rest)))?;
        let name = rest[..eq].trim();
        if name.is_empty()
            || name.starts_with(|c: char| c.is_ascii_digit())
            || !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
        {
            return Err(format!("bad label name {name:?}", name = Excerpt(name)));
        }
        let after = rest[eq + 1..].trim_start();
        let body = after
            .strip_prefix('"')
            .ok_or_else(|| format!("label {name} value must be quoted"))?;
        let mut value = String::new();
        let mut chars = body.char_indices();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    end = Some(i);
                    break;
                }
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    other => {
                        return Err(format!(
                            "bad escape in label {:?}: {other:?}",
                            Excerpt(name)
                        ))
                    }
                },
                c => value.push(c),
            }
        }
        let end = end.ok_or_else(|| format!("unterminated value of label {name}"))?;
        out.push((name.to_string(), value));
        rest = body[end + 1..].trim_start();
        if let Some(r) = rest.strip_prefix(',') {
            rest = r.trim_start();
        } else if !rest.is_empty() {
            return Err(format!("expected ',' between labels: {}", clip(rest)));
        }
    }
    Ok(out)
}

/// Go's `ParseFloat` spellings as Prometheus writes them (`NaN`, `+Inf`, `-Inf`).
fn parse_float(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ if s
            .bytes()
            .all(|c| c.is_ascii_digit() || b"+-.eE".contains(&c)) =>
        {
            s.parse().ok()
        }
        _ => None,
    }
}

pub(super) fn parse_timestamp(ts: Option<&str>, openmetrics: bool) -> Result<i64, String> {
    let ts = ts.ok_or("sample without a timestamp (a recording needs one on every sample)")?;
    let seconds = openmetrics || ts.contains(['.', 'e', 'E']);
    let v = parse_float(ts)
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("bad timestamp {ts:?}", ts = Excerpt(ts)))?;
    if openmetrics && v.abs() >= 1e11 && !ts.contains(['.', 'e', 'E']) {
        // 1e11 s is the year 5138: this is a millisecond stamp in a file whose `# EOF`
        // says OpenMetrics (seconds). Refuse rather than guess which one was meant.
        return Err(format!(
            "timestamp {ts:?} looks like milliseconds, but a file with `# EOF` is OpenMetrics, \
             whose timestamps are seconds; remove the `# EOF` lines or write seconds",
            ts = Excerpt(ts)
        ));
    }
    let ms = if seconds { (v * 1000.0).round() } else { v };
    // ±2^53 ms keeps every step exact and far from i64 overflow in grid arithmetic.
    if ms.abs() > 9.0e15 {
        return Err(format!("timestamp {ts:?} out of range", ts = Excerpt(ts)));
    }
    Ok(ms as i64)
}

fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}

impl Assembler<'_> {
    /// Whether `series_key` was seen before (its labels need not be parsed again).
    pub(crate) fn knows(&self, series_key: &str) -> bool {
        self.known.contains_key(series_key)
    }
}

#[cfg(test)]
mod tests;
