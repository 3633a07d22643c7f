//! A table of samples: the first column is the time, every other column one channel.
//!
//! ```text
//! timestamp,reveal_cpu_busy_ratio{cpu="0"},Busy%,reveal_network_receive_drop_total
//! 1700000000.0,0.51,48.2,10
//! ```
//!
//! - Time: Unix seconds (fractions allowed); milliseconds when the first header ends in `_ms`.
//! - Headers are series names, optionally with labels in exposition syntax, so the host
//!   label (`instance`) splits hosts here as in the text format. A header with more than one
//!   label contains commas and is quoted: `"x{instance=""a"",cpu=""0""}"`.
//! - Empty cells, `NaN` and `-` are gaps; infinities are counted and dropped.
//! - CSV carries no types, so a column is a counter exactly when its metric name ends in
//!   `_total` (the Prometheus naming rule) and becomes per-step increases; every other column
//!   is taken as a gauge, as recorded.
//!
//! Read with the `csv` crate (quoting, CRLF), see <https://www.rfc-editor.org/rfc/rfc4180>.

use super::{Assembler, SourceError, SourceOptions};
use crate::core::matrix::{HostMatrix, MetricType};
use reveal_schema::Excerpt;

/// Parses a CSV recording into one matrix per host. Never panics.
pub fn parse_csv(text: &str, opts: &SourceOptions) -> Result<Vec<HostMatrix>, SourceError> {
    let mut reader = ::csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .trim(::csv::Trim::All)
        .from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| SourceError::parse(1, e.to_string()))?
        .clone();
    if headers.len() < 2 {
        return Err(SourceError::parse(
            1,
            "need a time column and at least one channel column",
        ));
    }
    let millis = headers.get(0).is_some_and(|h| h.ends_with("_ms"));
    struct Column {
        key: String,
        metric: String,
        labels: Vec<(String, String)>,
        metric_type: MetricType,
    }
    let mut columns = Vec::with_capacity(headers.len() - 1);
    for h in headers.iter().skip(1) {
        let (metric, labels) = split_header(h).map_err(|m| SourceError::parse(1, m))?;
        let metric_type = if metric.ends_with("_total") {
            MetricType::Counter
        } else {
            MetricType::Gauge
        };
        if columns.iter().any(|c: &Column| c.key == h) {
            return Err(SourceError::parse(
                1,
                format!("duplicate column {h:?}", h = Excerpt(h)),
            ));
        }
        columns.push(Column {
            key: h.to_string(),
            metric,
            labels,
            metric_type,
        });
    }
    let mut asm = Assembler::new(opts);
    for (i, record) in reader.records().enumerate() {
        let line = i + 2;
        let record = record.map_err(|e| SourceError::parse(line, e.to_string()))?;
        let ts = record.get(0).unwrap_or("");
        let t: f64 = ts
            .parse()
            .ok()
            .filter(|t: &f64| t.is_finite() && t.abs() < 9.0e12)
            .ok_or_else(|| {
                SourceError::parse(line, format!("bad timestamp {ts:?}", ts = Excerpt(ts)))
            })?;
        let ts_ms = if millis {
            t.round()
        } else {
            (t * 1000.0).round()
        } as i64;
        for (c, cell) in columns.iter().zip(record.iter().skip(1)) {
            let v = match cell {
                "" | "-" => continue,
                _ => cell.parse::<f64>().map_err(|_| {
                    SourceError::parse(
                        line,
                        format!(
                            "bad value {cell:?} in column {:?}",
                            Excerpt(&c.key),
                            cell = Excerpt(cell)
                        ),
                    )
                })?,
            };
            if v.is_nan() {
                continue;
            }
            asm.push(&c.key, &c.metric, &c.labels, c.metric_type, ts_ms, v);
        }
    }
    if asm.samples() == 0 {
        return Err(SourceError::Empty);
    }
    asm.finish()
}

/// `name{a="1",b="2"}` → (`name`, labels); a bare header is a name without labels, and any
/// text is accepted as a name so columns like `Busy%` work.
fn split_header(h: &str) -> Result<(String, Vec<(String, String)>), String> {
    if h.is_empty() {
        return Err("empty column header".to_string());
    }
    match h.find('{') {
        Some(open) if h.ends_with('}') && open > 0 => {
            let labels = super::openmetrics::parse_label_text(&h[open + 1..h.len() - 1])
                .map_err(|m| format!("column {h:?}: {m}", h = Excerpt(h)))?;
            Ok((h[..open].to_string(), labels))
        }
        _ => Ok((h.to_string(), Vec::new())),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::core::matrix::Kind;

    #[test]
    fn reads_columns_hosts_gaps_and_counters() {
        // A header with a comma in its label set is quoted, as RFC 4180 requires.
        let text =
            "timestamp,Busy%,x_total{instance=\"b\"},\"y{instance=\"\"b\"\",cpu=\"\"1\"\"}\"\n\
                    10.0,50,1,\n\
                    10.1,,4,7\n\
                    10.2,NaN,2,inf\n";
        let hosts = parse_csv(text, &SourceOptions::default()).unwrap();
        assert_eq!(hosts.len(), 2);
        let (b, local) = (&hosts[0], &hosts[1]);
        assert_eq!((b.host.as_str(), local.host.as_str()), ("b", "local"));
        assert_eq!(local.start_ms, 10_000);
        assert_eq!(local.values[[0, 0]], 50.0);
        assert_eq!(local.n_steps(), 1, "each host spans its own samples");
        assert_eq!(b.channels[0].name, "x_total");
        assert_eq!(b.channels[0].metric_type, MetricType::Counter);
        assert_eq!(b.values[[0, 1]], 3.0);
        assert_eq!(b.values[[0, 2]], 2.0, "reset");
        assert_eq!(b.channels[1].name, "y{cpu=\"1\"}");
        assert_eq!(b.channels[1].kind, Kind::Dynamic);
        assert_eq!(b.non_finite_samples, 1);
    }

    #[test]
    fn millisecond_time_column() {
        let hosts = parse_csv("t_ms,a\n1000,1\n1100,2\n", &SourceOptions::default()).unwrap();
        assert_eq!(hosts[0].start_ms, 1000);
        assert_eq!(hosts[0].n_steps(), 2);
    }

    #[test]
    fn bad_input_is_an_error_with_a_line() {
        let o = SourceOptions::default();
        for (text, want) in [
            ("t\n1\n", "line 1:"),
            ("t,a\nx,1\n", "line 2: bad timestamp"),
            ("t,a\n1,one\n", "line 2: bad value"),
            ("t,a\n1,1,2\n", "line 2:"),
            ("t,a,a\n1,1,2\n", "duplicate"),
            ("t,a{x=1}\n1,1\n", "quoted"),
        ] {
            let e = parse_csv(text, &o).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        assert!(matches!(parse_csv("t,a\n", &o), Err(SourceError::Empty)));
        assert!(matches!(
            parse_csv("t,a\n1,\n", &o),
            Err(SourceError::Empty)
        ));
        assert!(parse_csv("", &o).is_err());
    }

    /// A megabyte-long bad cell or column name is quoted as an excerpt.
    #[test]
    fn errors_quote_an_excerpt_of_a_long_cell() {
        let long = "x".repeat(1_000_000);
        for text in [
            format!("t,a\n{long},1\n"),
            format!("t,a\n1,{long}\n"),
            format!("t,{long},{long}\n1,1,2\n"),
        ] {
            let Err(e) = parse_csv(&text, &SourceOptions::default()) else {
                panic!("accepted {:.40}", text);
            };
            let msg = e.to_string();
            assert!(msg.len() < 200, "{} bytes: {:.120}", msg.len(), msg);
            assert!(msg.contains("(1000000 bytes)"), "{msg}");
        }
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC*") {
            let _ = parse_csv(&s, &SourceOptions::default());
        }
    }
}
