//! `reveal-analyzer prune [WORKLOAD=]RECORDING...`: correlation pruning over recorded runs
//! (paper §4.1), writing the exporter's selection file, the analyzer's metric set and
//! figure 4's curves.
//!
//! The runs of one workload (every host of every file given the same `WORKLOAD=` name) are
//! averaged into one correlation matrix ([`workload::average`]); a file without a name is a
//! workload of its own. Each workload is pruned, and the union over workloads is kept.

use std::path::PathBuf;

use crate::core::prune::{
    cadence, correlate, curves_csv, metric_set, saved, selection::selection_yaml, thresholds,
    union, workload, RunCorrelation, INSTANCE_LABELS,
};
use crate::ingest::kinds::MetricSet;
use crate::ingest::{FileFormat, FileSource, Source, SourceOptions};
use reveal_schema::selection::Selection;

#[derive(Debug, clap::Args)]
pub struct PruneArgs {
    /// Recordings (OpenMetrics/Prometheus text with timestamps, or CSV); each host of each
    /// file is one run. `NAME=FILE` puts the file's runs in workload NAME, whose runs'
    /// correlations are averaged before pruning; a file without a name is its own workload.
    #[arg(
        required_unless_present = "from_verdicts",
        value_name = "[WORKLOAD=]FILE"
    )]
    pub inputs: Vec<String>,
    /// Write the outputs from the verdicts of an earlier run (its `--output.verdicts` file)
    /// instead of pruning recordings: the metric set again with other hand-written entries
    /// or cadences, or the selection. Figure 4's curves need the recordings.
    #[arg(long = "from-verdicts", value_name = "FILE", conflicts_with_all = ["inputs", "curves"])]
    pub from_verdicts: Option<PathBuf>,
    /// The exporter's `--metrics.fast` selection: metrics of the metric set that it does not
    /// serve (the stack stores them every 15 s) are left out of it and listed in a comment,
    /// or, with `--slow-range`, their counters read over that range. Without it every counter
    /// is read over 1 s, as on a stack that stores all at 100 ms.
    #[arg(long = "fast-selection", value_name = "FILE")]
    pub fast_selection: Option<PathBuf>,
    /// Watch what the fast selection does not serve anyway: its counters read over this
    /// range (two scrapes of the slow job, rules/prometheus.yml: `30s`), its gauges as they are.
    #[arg(
        long = "slow-range",
        value_name = "DURATION",
        requires = "fast_selection"
    )]
    pub slow_range: Option<String>,
    /// Correlation threshold |r| at and above which two channels are redundant.
    #[arg(long, default_value_t = 0.5)]
    pub threshold: f64,
    /// Write the exporter's selection YAML here (`reveal-exporter --metrics.selection`).
    #[arg(long = "output.selection", value_name = "FILE")]
    pub selection: Option<PathBuf>,
    /// Write figure 4's curves (CSV) here.
    #[arg(long = "output.curves", value_name = "FILE")]
    pub curves: Option<PathBuf>,
    /// Write the kept channels as the generated block of this analyzer configuration's
    /// `metrics:` (between its `# BEGIN generated` and `# END generated` lines; the rest of the
    /// file is kept as it is).
    #[arg(long = "output.metric-set", value_name = "ANALYZER_YML")]
    pub metric_set_into: Option<PathBuf>,
    /// Select the recorded host's own series one by one, and nothing it did not serve,
    /// instead of kinds of series on every CPU, device and node and every metric the
    /// recordings never showed (which a selection shipped for all hosts needs).
    #[arg(long = "per-series")]
    pub per_series: bool,
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

/// `NAME=FILE` → (NAME, FILE); a plain FILE is a workload named after it. A name is letters,
/// digits, `_`, `-` and `.`, so a path with `=` in it still reads as a path.
fn split_input(input: &str) -> (String, PathBuf) {
    if let Some((name, path)) = input.split_once('=') {
        let plain = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if plain && !std::path::Path::new(input).exists() {
            return (name.to_string(), PathBuf::from(path));
        }
    }
    (input.to_string(), PathBuf::from(input))
}

fn write(path: &PathBuf, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Each workload's average correlation, with the correlations of its runs.
type Grouped = Vec<(RunCorrelation, Vec<RunCorrelation>)>;

/// Reads the recordings and correlates each run, grouped by workload.
fn correlate_recordings(args: &PruneArgs) -> Result<Grouped, String> {
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
    // Workloads in the order first named, each with its runs.
    let mut workloads: Vec<(String, Vec<RunCorrelation>)> = Vec::new();
    for input in &args.inputs {
        let (name, path) = split_input(input);
        let mut src = FileSource {
            path: path.clone(),
            format: FileFormat::from_path(&path),
            options: options.clone(),
        };
        let hosts = src
            .fetch(None)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let pos = match workloads.iter().position(|(w, _)| *w == name) {
            Some(p) => p,
            None => {
                workloads.push((name.clone(), Vec::new()));
                workloads.len() - 1
            }
        };
        for m in hosts {
            let label = format!("{}:{}", path.display(), m.host);
            workloads[pos]
                .1
                .push(correlate(&label, &m, args.prune_static));
        }
    }
    let grouped: Vec<(RunCorrelation, Vec<RunCorrelation>)> = workloads
        .iter()
        .map(|(name, rs)| {
            let avg = if rs.len() == 1 {
                let mut r = rs[0].clone();
                r.run = name.clone();
                r
            } else {
                workload::average(name, rs)
            };
            (avg, rs.clone())
        })
        .collect();
    Ok(grouped)
}

/// Runs the command; returns the summary to print.
pub fn run_cli(args: &PruneArgs) -> Result<String, String> {
    if !(args.threshold > 0.0 && args.threshold <= 1.0) {
        return Err(format!(
            "--threshold must be in (0, 1], got {}",
            args.threshold
        ));
    }
    if let Some(r) = &args.slow_range {
        cadence::check_range(r)?;
    }
    let fast = match &args.fast_selection {
        Some(p) => Some(Selection::load(p).map_err(|e| e.to_string())?),
        None => None,
    };
    let cadence = cadence::Cadence {
        fast: fast.as_ref(),
        slow_range: args.slow_range.as_deref(),
    };
    let (grouped, mut verdicts) = match &args.from_verdicts {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            let v = saved::read_verdicts(&text).map_err(|e| format!("{}: {e}", p.display()))?;
            (Vec::new(), v)
        }
        None => {
            let grouped = correlate_recordings(args)?;
            let runs: Vec<RunCorrelation> = grouped.iter().map(|(avg, _)| avg.clone()).collect();
            let v = union(&runs, args.threshold);
            (grouped, v)
        }
    };
    let n_runs: usize = grouped.iter().map(|(_, rs)| rs.len()).sum();
    // The analyzer configuration the metric set goes into: what its hand-written entries read
    // stays in the selection, whatever pruning said (a ratio or a sum over CPUs needs its
    // inputs served).
    let hand = match &args.metric_set_into {
        Some(p) => {
            let config = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            let hand =
                metric_set::hand_written(&config).map_err(|e| format!("{}: {e}", p.display()))?;
            Some((config, hand))
        }
        None => None,
    };
    if let Some((_, hand)) = &hand {
        for v in verdicts.iter_mut().filter(|v| !v.kept) {
            if metric_set::read_by(&v.metric, &hand.all) {
                v.kept = true;
                v.reason = "read by the metric set";
                v.represented_by = None;
                v.abs_r = None;
            }
        }
    }
    let kept = verdicts.iter().filter(|v| v.kept).count();
    // What was pruned, for the summary and for the outputs' headers.
    let (read, origin) = match &args.from_verdicts {
        Some(p) => (
            format!("the verdicts in {}", p.display()),
            format!("written from the verdicts in {}", p.display()),
        ),
        None => (
            format!("{} workloads of {n_runs} runs", grouped.len()),
            format!("union over {} workloads ({n_runs} runs)", grouped.len()),
        ),
    };
    let mut summary = format!(
        "{read}, {} channels; kept {} at |r| ≥ {} ({} selected, {} never judged), removed {}\n",
        verdicts.len(),
        kept,
        args.threshold,
        verdicts.iter().filter(|v| v.reason == "selected").count(),
        verdicts.iter().filter(|v| v.reason == "unjudged").count(),
        verdicts.len() - kept
    );
    for (rc, rs) in &grouped {
        let alone = union(std::slice::from_ref(rc), args.threshold);
        summary.push_str(&format!(
            "  {}: {} runs, {} channels, {} judged, {} representatives\n",
            rc.run,
            rs.len(),
            rc.channels.len(),
            rc.judged.len(),
            alone.iter().filter(|v| v.reason == "selected").count()
        ));
    }
    let inputs = match &args.from_verdicts {
        Some(p) => p.display().to_string(),
        None => args.inputs.join(", "),
    };
    let instance_labels: &[&str] = if args.per_series {
        &[]
    } else {
        INSTANCE_LABELS
    };
    if let Some(p) = &args.selection {
        let header = vec![
            "Metric selection written by `reveal-analyzer prune` (paper §4.1).".to_string(),
            format!(
                "Correlation pruning at |r| >= {}, {origin}: {inputs}.",
                args.threshold,
            ),
            format!("{kept} of {} channels kept.", verdicts.len()),
        ];
        write(
            p,
            &selection_yaml(&verdicts, &header, instance_labels, !args.per_series)?,
        )?;
        summary.push_str(&format!("selection: {}\n", p.display()));
    }
    if let (Some(p), Some((config, hand))) = (&args.metric_set_into, &hand) {
        let header = vec![
            format!(
                "Correlation pruning at |r| >= {} (paper §4.1), {origin}.",
                args.threshold,
            ),
            "Regenerate with scripts/prune_workloads.py (docs/metric-selection.md); edit the \
             entries above this block by hand."
                .to_string(),
        ];
        let mut ignore: Vec<&str> = instance_labels.to_vec();
        ignore.extend([args.host_label.as_str(), "job"]);
        let block = metric_set::generated_block(&verdicts, &hand.own, &ignore, &header, &cadence);
        let updated = metric_set::replace_block(config, &block)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        write(p, &updated)?;
        summary.push_str(&format!("metric set: {}\n", p.display()));
    }
    if let Some(p) = &args.curves {
        write(p, &curves_csv(&workload::curves(&grouped, &thresholds())))?;
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
