//! `reveal-analyzer analyze`: offline analysis of a recording; prints the Markdown report
//! and writes the JSON lines. A recording of several hosts is also compared across hosts
//! (DESIGN step 7, [`crate::core::crosshost`]): its findings are a Markdown section and
//! `host_deviation` JSON lines.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::core::crosshost::{self, CrossHostParams};
use crate::core::detect::DetectorsConfig;
use crate::core::duration::parse_duration;
use crate::core::families::FamilyParams;
use crate::core::features::FeatureConfig;
use crate::core::pipeline::AnalyzeParams;
use crate::core::window::WindowConfig;
use crate::ingest::kinds::MetricSet;
use crate::ingest::{FileFormat, FileSource, Source, SourceOptions};
use crate::online::analyze::analyze;
use crate::outputs::report::{deviation_lines, json_lines, markdown};
use clap::ValueEnum;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// OpenMetrics or Prometheus text with a timestamp on every sample.
    Openmetrics,
    /// A time column and one column per channel.
    Csv,
}

#[derive(clap::Args)]
pub struct AnalyzeArgs {
    /// The recording to analyze.
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// Input format; by default `csv` for a `.csv` file, otherwise `openmetrics`.
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Write the JSON lines (one object per host, flagged window, episode, regime change
    /// and cross-host deviation) here.
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
    /// Write the Markdown report here instead of standard output.
    #[arg(long, value_name = "OUT")]
    markdown: Option<PathBuf>,
    /// Metric-set YAML (`metrics:` with expr, subsystem, kind) overriding the defaults.
    #[arg(long = "metric-set", value_name = "FILE")]
    metric_set: Option<PathBuf>,
    /// Label that tells hosts apart.
    #[arg(long = "host-label", default_value = "instance")]
    host_label: String,
    /// Sample grid step.
    #[arg(long, default_value = "100ms")]
    step: String,
    /// Window length.
    #[arg(long, default_value = "3s")]
    window: String,
    /// Distance between window starts.
    #[arg(long, default_value = "1s")]
    stride: String,
    /// Least fraction of a window's samples that must be present to score it.
    #[arg(long = "min-fraction", default_value_t = 0.8)]
    min_fraction: f64,
    /// Skip the augmented Dickey–Fuller feature (the expensive one).
    #[arg(long = "no-adf")]
    no_adf: bool,
    /// Seed of the randomized detectors.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Use the paper's literal detector configuration (mean |z|, PCA to 95% variance,
    /// Isolation Forest on all features) instead of the defaults. Its exact PCA is slow on
    /// thousands of feature columns (minutes for 700 channels).
    #[arg(long)]
    literal: bool,
}

/// What stops `analyze` after its arguments were parsed (bad input files are reported on
/// standard error with exit status 2 instead).
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error("--{flag}: {reason}")]
    Duration { flag: &'static str, reason: String },
    #[error("writing {}: {source}", path.display())]
    Write {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

fn ms(flag: &'static str, s: &str) -> Result<i64, AnalyzeError> {
    let d = parse_duration(s).map_err(|e| AnalyzeError::Duration {
        flag,
        reason: e.to_string(),
    })?;
    Ok(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn write(path: &std::path::Path, text: String) -> Result<(), AnalyzeError> {
    std::fs::write(path, text).map_err(|source| AnalyzeError::Write {
        path: path.to_path_buf(),
        source,
    })
}

pub fn run(args: AnalyzeArgs) -> Result<ExitCode, AnalyzeError> {
    let window = WindowConfig {
        step_ms: ms("step", &args.step)?,
        window_ms: ms("window", &args.window)?,
        stride_ms: ms("stride", &args.stride)?,
        min_fraction: args.min_fraction,
    };
    if let Err(e) = window.check() {
        eprintln!("reveal-analyzer: {e}");
        return Ok(ExitCode::from(2));
    }
    let metric_set = match &args.metric_set {
        Some(p) => match MetricSet::load(p) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("reveal-analyzer: bad metric set: {e}");
                return Ok(ExitCode::from(2));
            }
        },
        None => MetricSet::default(),
    };
    let format = match args.format {
        Some(Format::Csv) => FileFormat::Csv,
        Some(Format::Openmetrics) => FileFormat::OpenMetrics,
        None => FileFormat::from_path(&args.input),
    };
    let mut families = FamilyParams::default();
    for l in metric_set.device_labels() {
        if !families.device_labels.contains(&l) {
            families.device_labels.push(l);
        }
    }
    let mut source = FileSource {
        path: args.input.clone(),
        format,
        options: SourceOptions {
            step_ms: window.step_ms,
            host_label: args.host_label,
            metric_set,
            ..SourceOptions::default()
        },
    };
    let hosts = match source.fetch(None) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("reveal-analyzer: {}: {e}", args.input.display());
            return Ok(ExitCode::from(2));
        }
    };
    let params = AnalyzeParams {
        window,
        features: FeatureConfig {
            adf: !args.no_adf,
            ..FeatureConfig::default()
        },
        seed: args.seed,
        detectors: args.literal.then(DetectorsConfig::literal),
        families,
        ..AnalyzeParams::default()
    };
    let analyses = analyze(&hosts, &params);
    for a in &analyses {
        for n in &a.notes {
            eprintln!("reveal-analyzer: host {}: {n}", a.host);
        }
    }
    // Cross-host comparison needs a group: two hosts at least.
    let deviations = if hosts.len() >= 2 {
        match crosshost::analyze_matrices(&hosts, &window, CrossHostParams::default()) {
            Ok(d) => Some(d),
            Err(e) => {
                eprintln!("reveal-analyzer: {e}");
                return Ok(ExitCode::from(2));
            }
        }
    } else {
        None
    };
    if let Some(out) = &args.json {
        let mut lines = json_lines(&analyses);
        if let Some(d) = &deviations {
            lines.push_str(&deviation_lines(d));
        }
        write(out, lines)?;
    }
    let mut md = markdown(&analyses);
    if let Some(d) = &deviations {
        md.push_str(&crosshost::markdown(d));
    }
    match &args.markdown {
        Some(out) => write(out, md)?,
        None => print!("{md}"),
    }
    Ok(ExitCode::SUCCESS)
}
