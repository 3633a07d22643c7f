//! `reveal-analyzer prune RECORDING...`: correlation pruning over recorded runs, writing the
//! exporter's selection file and figure 4's curves.

use std::path::PathBuf;

use crate::core::prune::{
    correlate, curves, curves_csv, selection::selection_yaml, thresholds, union,
};
use crate::ingest::kinds::MetricSet;
use crate::ingest::{FileFormat, FileSource, Source, SourceOptions};

#[derive(Debug, clap::Args)]
pub struct PruneArgs {
    /// Recordings (OpenMetrics/Prometheus text with timestamps, or CSV); each host of each
    /// file is one run.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Correlation threshold |r| at and above which two channels are redundant.
    #[arg(long, default_value_t = 0.5)]
    pub threshold: f64,
    /// Write the exporter's selection YAML here (`reveal-exporter --metrics.selection`).
    #[arg(long = "output.selection", value_name = "FILE")]
    pub selection: Option<PathBuf>,
    /// Write figure 4's curves (CSV) here.
    #[arg(long = "output.curves", value_name = "FILE")]
    pub curves: Option<PathBuf>,
    /// Write every channel's verdict (JSON lines) here.
    #[arg(long = "output.verdicts", value_name = "FILE")]
    pub verdicts: Option<PathBuf>,
    /// Metric-set file (kinds and subsystems); defaults by name and type otherwise.
    #[arg(long = "metric-set", value_name = "FILE")]
    pub metric_set: Option<PathBuf>,
    /// Grid step of the recordings, in ms.
    #[arg(long = "step-ms", default_value_t = 100)]
    pub step_ms: i64,
    /// Label that tells hosts apart.
    #[arg(long = "host-label", default_value = "instance")]
    pub host_label: String,
    /// Prune static channels (sizes, limits, temperatures) too; by default they are kept for
    /// cross-host comparison.
    #[arg(long = "prune-static")]
    pub prune_static: bool,
}

fn write(path: &PathBuf, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs the command; returns the summary to print.
pub fn run_cli(args: &PruneArgs) -> Result<String, String> {
    if !(args.threshold > 0.0 && args.threshold <= 1.0) {
        return Err(format!(
            "--threshold must be in (0, 1], got {}",
            args.threshold
        ));
    }
    let metric_set = match &args.metric_set {
        Some(p) => MetricSet::load(p).map_err(|e| e.to_string())?,
        None => MetricSet::default(),
    };
    let options = SourceOptions {
        step_ms: args.step_ms,
        host_label: args.host_label.clone(),
        metric_set,
        ..SourceOptions::default()
    };
    let mut runs = Vec::new();
    for path in &args.inputs {
        let mut src = FileSource {
            path: path.clone(),
            format: FileFormat::from_path(path),
            options: options.clone(),
        };
        let hosts = src
            .fetch(None)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        for m in hosts {
            let label = format!("{}:{}", path.display(), m.host);
            runs.push(correlate(&label, &m, args.prune_static));
        }
    }
    let verdicts = union(&runs, args.threshold);
    let kept = verdicts.iter().filter(|v| v.kept).count();
    let mut summary = format!(
        "{} runs, {} channels; kept {} at |r| ≥ {} ({} selected, {} never judged), removed {}\n",
        runs.len(),
        verdicts.len(),
        kept,
        args.threshold,
        verdicts.iter().filter(|v| v.reason == "selected").count(),
        verdicts.iter().filter(|v| v.reason == "unjudged").count(),
        verdicts.len() - kept
    );
    for rc in &runs {
        summary.push_str(&format!(
            "  {}: {} channels, {} judged\n",
            rc.run,
            rc.channels.len(),
            rc.judged.len()
        ));
    }
    if let Some(p) = &args.selection {
        let inputs: Vec<String> = args
            .inputs
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        let header = vec![
            "Metric selection written by `reveal-analyzer prune` (paper §4.1).".to_string(),
            format!(
                "Correlation pruning at |r| >= {}, union over {} runs: {}.",
                args.threshold,
                runs.len(),
                inputs.join(", ")
            ),
            format!("{kept} of {} channels kept.", verdicts.len()),
        ];
        write(p, &selection_yaml(&verdicts, &header)?)?;
        summary.push_str(&format!("selection: {}\n", p.display()));
    }
    if let Some(p) = &args.curves {
        write(p, &curves_csv(&curves(&runs, &thresholds())))?;
        summary.push_str(&format!("curves: {}\n", p.display()));
    }
    if let Some(p) = &args.verdicts {
        let mut s = String::new();
        for v in &verdicts {
            s.push_str(&serde_json::to_string(v).map_err(|e| e.to_string())?);
            s.push('\n');
        }
        write(p, &s)?;
        summary.push_str(&format!("verdicts: {}\n", p.display()));
    }
    Ok(summary)
}
