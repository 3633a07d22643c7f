//! Where telemetry comes from: one trait, three kinds of source (DESIGN "Analyzer"):
//! Prometheus range queries, a direct scrape of exporters, and recorded files
//! ([`openmetrics`] text with timestamps, [`csv`]).
//!
//! Every source produces one [`HostMatrix`] per host through an [`Assembler`], so hosts,
//! channel names, kinds, subsystems and counter handling are the same whatever the source.
//! [`kinds`] classifies channels (the metric set); [`promapi`] is the Prometheus HTTP API.
//! Imports core (to build a `HostMatrix`) and the HTTP client, never outputs or commands.

pub mod csv;
pub mod kinds;
pub mod openmetrics;
pub mod promapi;
pub mod prometheus;
pub mod scrape;
pub mod shard;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::core::matrix::{Channel, HostMatrix, MatrixBuilder, MatrixError, MetricType};
use crate::ingest::kinds::MetricSet;

/// A half-open time range `[start_ms, end_ms)` in ms since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeRange {
    pub start_ms: i64,
    pub end_ms: i64,
}

/// A source of per-host matrices.
pub trait Source {
    /// Short name for logs: `prometheus`, `scrape`, `openmetrics-file`, `csv-file`.
    fn name(&self) -> &'static str;

    /// The hosts' matrices over `range` (the whole recording when `None`), on the grid of the
    /// source's [`SourceOptions::step_ms`].
    fn fetch(&mut self, range: Option<TimeRange>) -> Result<Vec<HostMatrix>, SourceError>;
}

/// How raw series become matrices.
#[derive(Debug, Clone)]
pub struct SourceOptions {
    /// Grid step the samples are snapped to.
    pub step_ms: i64,
    /// Label that tells hosts apart; removed from channel names.
    pub host_label: String,
    /// Host name for series without that label.
    pub default_host: String,
    /// Kinds and subsystems; defaults by name and type where it says nothing.
    pub metric_set: MetricSet,
}

impl Default for SourceOptions {
    fn default() -> Self {
        SourceOptions {
            step_ms: 100,
            host_label: "instance".to_string(),
            default_host: "local".to_string(),
            metric_set: MetricSet::default(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("line {line}: {msg}")]
    Parse { line: usize, msg: String },
    #[error(transparent)]
    Matrix(#[from] MatrixError),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("no samples in the input")]
    Empty,
    #[error("{0}")]
    Other(String),
}

impl SourceError {
    /// A parse error whose message is cut to [`reveal_schema::excerpt::MAX_MESSAGE`] bytes.
    pub(crate) fn parse(line: usize, msg: impl Into<String>) -> SourceError {
        SourceError::Parse {
            line,
            msg: reveal_schema::excerpt::bounded(msg.into()),
        }
    }
}

/// Routes samples of labelled series to per-host builders, classifying each series once.
#[derive(Debug)]
pub struct Assembler<'a> {
    opts: &'a SourceOptions,
    hosts: BTreeMap<String, MatrixBuilder>,
    /// Series key (metric + all labels) → (host, channel), so classification and name
    /// formatting happen once per series, not once per sample.
    known: HashMap<String, (String, Channel)>,
    samples: usize,
}

impl<'a> Assembler<'a> {
    pub fn new(opts: &'a SourceOptions) -> Self {
        Assembler {
            opts,
            hosts: BTreeMap::new(),
            known: HashMap::new(),
            samples: 0,
        }
    }

    /// Adds one sample of `metric{labels}`; `series_key` must identify the series uniquely
    /// (the sample line's name-and-labels text is fine) and lets repeated series skip work.
    pub fn push(
        &mut self,
        series_key: &str,
        metric: &str,
        labels: &[(String, String)],
        metric_type: MetricType,
        ts_ms: i64,
        value: f64,
    ) {
        if !self.known.contains_key(series_key) {
            let entry = self.describe(metric, labels, metric_type);
            self.known.insert(series_key.to_string(), entry);
        }
        let (host, channel) = &self.known[series_key];
        self.hosts
            .entry(host.clone())
            .or_default()
            .push(channel, ts_ms, value);
        self.samples += 1;
    }

    fn describe(
        &self,
        metric: &str,
        labels: &[(String, String)],
        metric_type: MetricType,
    ) -> (String, Channel) {
        let mut host = self.opts.default_host.clone();
        let mut kept: Vec<&(String, String)> = Vec::with_capacity(labels.len());
        for l in labels {
            if l.0 == self.opts.host_label {
                host = l.1.clone();
            } else {
                kept.push(l);
            }
        }
        kept.sort();
        let mut name = metric.to_string();
        if !kept.is_empty() {
            name.push('{');
            for (i, (k, v)) in kept.iter().enumerate() {
                if i > 0 {
                    name.push(',');
                }
                name.push_str(k);
                name.push_str("=\"");
                for c in v.chars() {
                    match c {
                        '\\' => name.push_str("\\\\"),
                        '"' => name.push_str("\\\""),
                        '\n' => name.push_str("\\n"),
                        c => name.push(c),
                    }
                }
                name.push('"');
            }
            name.push('}');
        }
        let (subsystem, kind) = self
            .opts
            .metric_set
            .classify_series(metric, labels, metric_type);
        let channel = Channel {
            name,
            metric: metric.to_string(),
            subsystem,
            kind,
            metric_type,
            resolution: self.opts.metric_set.resolution(metric),
            per_second: self.opts.metric_set.per_second(metric),
            max_rate: (metric_type == MetricType::Counter)
                .then(|| self.opts.metric_set.max_rate(metric))
                .flatten(),
        };
        (host, channel)
    }

    /// Number of samples pushed (finite or not).
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// One matrix per host, hosts sorted by name. Hosts with no finite sample are dropped;
    /// an input without any finite sample is [`SourceError::Empty`].
    pub fn finish(self) -> Result<Vec<HostMatrix>, SourceError> {
        let mut out = Vec::new();
        for (host, b) in self.hosts {
            match b.build(&host, self.opts.step_ms) {
                Ok(m) => out.push(m),
                Err(MatrixError::Empty { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        if out.is_empty() {
            return Err(SourceError::Empty);
        }
        Ok(out)
    }
}

/// Input format of a recorded file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    OpenMetrics,
    Csv,
}

impl FileFormat {
    /// `.csv` is CSV; everything else (`.prom`, `.txt`, `.om`) exposition text.
    pub fn from_path(path: &Path) -> FileFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("csv") => FileFormat::Csv,
            _ => FileFormat::OpenMetrics,
        }
    }
}

/// A recorded file, read whole on each fetch and cut to the range.
#[derive(Debug)]
pub struct FileSource {
    pub path: std::path::PathBuf,
    pub format: FileFormat,
    pub options: SourceOptions,
}

impl Source for FileSource {
    fn name(&self) -> &'static str {
        match self.format {
            FileFormat::OpenMetrics => "openmetrics-file",
            FileFormat::Csv => "csv-file",
        }
    }

    fn fetch(&mut self, range: Option<TimeRange>) -> Result<Vec<HostMatrix>, SourceError> {
        let text = std::fs::read_to_string(&self.path).map_err(|source| SourceError::Io {
            path: self.path.display().to_string(),
            source,
        })?;
        let hosts = match self.format {
            FileFormat::OpenMetrics => openmetrics::parse_openmetrics(&text, &self.options),
            FileFormat::Csv => csv::parse_csv(&text, &self.options),
        }?;
        Ok(match range {
            None => hosts,
            Some(r) => hosts.into_iter().filter_map(|m| cut(m, r)).collect(),
        })
    }
}

/// The part of `m` inside `r`, or `None` when they do not overlap.
fn cut(m: HostMatrix, r: TimeRange) -> Option<HostMatrix> {
    let step = m.step_ms;
    let steps_from_start = |t: i64| {
        let d = t.saturating_sub(m.start_ms).max(0);
        (d / step + i64::from(d % step != 0)).min(m.n_steps() as i64)
    };
    let (first, end) = (steps_from_start(r.start_ms), steps_from_start(r.end_ms));
    if end <= first {
        return None;
    }
    let (first, end) = (first as usize, end as usize);
    Some(HostMatrix {
        start_ms: m.time_ms(first),
        values: m
            .values
            .slice_axis(ndarray::Axis(1), ndarray::Slice::from(first..end))
            .to_owned(),
        ..m
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_source_cuts_the_range_on_the_grid() {
        let dir = std::env::temp_dir().join(format!("reveal-source-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.csv");
        let rows: String = (0..10)
            .map(|i| format!("{}.{},{}\n", 100 + i / 10, i % 10, i))
            .collect();
        std::fs::write(&path, format!("t,a\n{rows}")).unwrap();
        let mut src = FileSource {
            path: path.clone(),
            format: FileFormat::from_path(&path),
            options: SourceOptions::default(),
        };
        assert_eq!(src.name(), "csv-file");
        let all = src.fetch(None).unwrap();
        assert_eq!(all[0].n_steps(), 10);
        let part = src
            .fetch(Some(TimeRange {
                start_ms: 100_250,
                end_ms: 100_600,
            }))
            .unwrap();
        assert_eq!(part[0].start_ms, 100_300);
        assert_eq!(part[0].row(0).to_vec(), [3.0, 4.0, 5.0]);
        let none = src
            .fetch(Some(TimeRange {
                start_ms: 0,
                end_ms: 1000,
            }))
            .unwrap();
        assert!(none.is_empty());
        let missing = FileSource {
            path: dir.join("nope.csv"),
            format: FileFormat::Csv,
            options: SourceOptions::default(),
        }
        .fetch(None);
        assert!(matches!(missing, Err(SourceError::Io { .. })));
        std::fs::remove_dir_all(&dir).ok();
    }
}
