//! The metric set checked against the server once, at start
//! ([`PrometheusSource::check_exprs`]).
//!
//! Each expression is asked for as the passes ask for it, as a range query, here of one
//! point. Prometheus answers an expression it cannot parse — and one a range query cannot
//! take, such as a range vector `x[1m]` or a string — with HTTP 400 and
//! `{"status":"error","errorType":"bad_data","error":"1:8: parse error: …"}`. Such an entry
//! would fail every pass, so the service refuses to start and names it ([`Rejections`]).
//! Any other failure (the server unreachable or slow, an evaluation error, an engine that
//! words a parse error otherwise) leaves the entry unchecked: it is no reason not to start,
//! and the passes report and retry it as they report and retry any failed query.

use std::collections::HashMap;
use std::fmt;

use super::PrometheusSource;
use crate::ingest::kinds::MetricSpec;
use crate::ingest::promapi::{Matrix, PromError};

/// A metric-set entry whose expression the server refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// Its position in `metrics`, from 0 (the configuration's key path `metrics.INDEX`).
    pub index: usize,
    pub expr: String,
    /// The server's own message (`error`).
    pub error: String,
}

/// What checking every expression found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ExprCheck {
    /// Entries the server refused: the configuration is wrong.
    pub rejected: Vec<Rejected>,
    /// Entries whose check failed for another reason.
    pub unchecked: usize,
    /// The first of those failures, for the log.
    pub first_error: Option<String>,
    /// Entries that returned no series (not an error: see [`super::entries`]).
    pub empty: Vec<usize>,
}

/// The server's message when a failed query says the expression itself is wrong, rather
/// than the server or the data: Prometheus' (and Thanos', Mimir's) `bad_data`.
pub fn rejection(e: &PromError) -> Option<&str> {
    match e {
        PromError::Api {
            error_type, error, ..
        } if error_type == "bad_data" => Some(error),
        _ => None,
    }
}

impl ExprCheck {
    /// Sorts the answers, one per entry of `specs` in the same order.
    pub fn from_answers(specs: &[MetricSpec], answers: Vec<Result<Matrix, PromError>>) -> Self {
        let mut out = ExprCheck::default();
        for (index, (spec, answer)) in specs.iter().zip(answers).enumerate() {
            match answer {
                Ok(m) if m.series.is_empty() => out.empty.push(index),
                Ok(_) => {}
                Err(e) => match rejection(&e) {
                    Some(error) => out.rejected.push(Rejected {
                        index,
                        expr: spec.expr.clone(),
                        error: error.to_string(),
                    }),
                    None => {
                        out.unchecked += 1;
                        out.first_error.get_or_insert_with(|| e.to_string());
                    }
                },
            }
        }
        out
    }
}

/// The entries the server refused: why the service does not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejections(pub Vec<Rejected>);

impl Rejections {
    /// One line per entry, `FILE:LINE: metrics.INDEX.expr: …`, the line looked up in
    /// `key_lines` (the configuration's key paths and their lines: `config::key_lines`).
    pub fn lines(&self, file: &str, key_lines: &HashMap<String, usize>) -> Vec<String> {
        self.0
            .iter()
            .map(|r| {
                let line = key_lines
                    .get(&format!("metrics.{}.expr", r.index))
                    .or_else(|| key_lines.get(&format!("metrics.{}", r.index)))
                    .map(|l| format!(":{l}"))
                    .unwrap_or_default();
                format!("{file}{line}: {r}")
            })
            .collect()
    }
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "metrics.{}.expr: Prometheus refuses {:?}: {}",
            self.index, self.expr, self.error
        )
    }
}

impl fmt::Display for Rejections {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl PrometheusSource {
    /// Number of metric-set entries.
    pub fn entries(&self) -> usize {
        self.specs.len()
    }

    /// Every expression of the metric set as a one-point range query at `at_ms` (snapped to
    /// the step grid), all at once, sorted by [`ExprCheck::from_answers`].
    pub async fn check_exprs(&self, at_ms: i64) -> ExprCheck {
        let step = self.options.step_ms;
        let at = at_ms.div_euclid(step) * step;
        let mut set = tokio::task::JoinSet::new();
        for (i, spec) in self.specs.iter().enumerate() {
            let (client, expr) = (self.client.clone(), spec.expr.clone());
            set.spawn(async move { (i, client.query_range(&expr, at, at, step).await) });
        }
        let mut answers: Vec<Option<Result<Matrix, PromError>>> =
            (0..self.specs.len()).map(|_| None).collect();
        while let Some(joined) = set.join_next().await {
            // A task that panicked leaves its entry unchecked (below), as a failed query would.
            if let Ok((i, answer)) = joined {
                answers[i] = Some(answer);
            }
        }
        let answers = answers
            .into_iter()
            .zip(&self.specs)
            .map(|(a, spec)| {
                a.unwrap_or_else(|| {
                    Err(PromError::Parse {
                        expr: spec.expr.clone(),
                        status: 0,
                        msg: "the check's task failed".into(),
                    })
                })
            })
            .collect();
        ExprCheck::from_answers(&self.specs, answers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::HttpError;
    use crate::ingest::promapi::{parse_query_range, Series};

    fn spec(expr: &str) -> MetricSpec {
        MetricSpec {
            expr: expr.into(),
            name: None,
            subsystem: "cpu".into(),
            kind: None,
            resolution: None,
            device_label: None,
            max_rate: None,
        }
    }

    #[test]
    fn only_bad_data_rejects_an_entry() {
        let specs = [
            spec("up"),
            spec("rate(x["),
            spec("absent_metric"),
            spec("x / on(a) y"),
            spec("x[1m]"),
            spec("slow"),
        ];
        let bad = |msg: &str| {
            let body = format!(
                "{{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":{}}}",
                serde_json::Value::from(msg)
            );
            parse_query_range("e", 400, body.as_bytes())
        };
        let one_series = Matrix {
            series: vec![Series {
                labels: Default::default(),
                samples: vec![(1000, 1.0)],
            }],
            warnings: vec![],
        };
        let answers = vec![
            Ok(one_series),
            bad("1:8: parse error: unclosed left bracket"),
            Ok(Matrix::default()),
            // An evaluation error depends on the data at that moment: not a rejection.
            parse_query_range(
                "e",
                422,
                b"{\"status\":\"error\",\"errorType\":\"execution\",\"error\":\"many-to-many matching not allowed\"}",
            ),
            bad("invalid expression type \"range vector\" for range query, must be Scalar or instant Vector"),
            Err(PromError::Http(HttpError::Transport {
                url: "http://p/api/v1/query_range".into(),
                msg: "connection refused".into(),
            })),
        ];
        let c = ExprCheck::from_answers(&specs, answers);
        assert_eq!(
            c.rejected.iter().map(|r| r.index).collect::<Vec<_>>(),
            [1, 4]
        );
        assert_eq!(c.rejected[0].expr, "rate(x[");
        assert_eq!(
            c.rejected[0].error,
            "1:8: parse error: unclosed left bracket"
        );
        assert_eq!(c.empty, [2]);
        assert_eq!(c.unchecked, 2);
        assert!(
            c.first_error.as_deref().unwrap().contains("many-to-many"),
            "{c:?}"
        );
    }

    #[test]
    fn rejections_name_file_line_entry_expression_and_message() {
        let r = Rejections(vec![
            Rejected {
                index: 1,
                expr: "rate(x[".into(),
                error: "1:8: parse error: unclosed left bracket".into(),
            },
            Rejected {
                index: 2,
                expr: "x[1m]".into(),
                error: "invalid expression type".into(),
            },
        ]);
        let lines: HashMap<String, usize> = [
            ("metrics.1.expr".to_string(), 7),
            ("metrics.2".to_string(), 9),
        ]
        .into();
        assert_eq!(
            r.lines("a.yml", &lines),
            [
                "a.yml:7: metrics.1.expr: Prometheus refuses \"rate(x[\": 1:8: parse \
                 error: unclosed left bracket",
                "a.yml:9: metrics.2.expr: Prometheus refuses \"x[1m]\": invalid \
                 expression type",
            ]
        );
        assert_eq!(
            r.lines("a.yml", &HashMap::new())[0],
            "a.yml: metrics.1.expr: Prometheus refuses \"rate(x[\": 1:8: parse error: \
             unclosed left bracket"
        );
        assert!(r
            .to_string()
            .contains("\"rate(x[\": 1:8: parse error: unclosed left bracket; metrics.2.expr"));
    }
}
