//! `reveal-analyzer replay`: a past stretch of a Prometheus, or a recording in a file, through
//! the service's own engine (the code `run` scores with), as the service would have seen it:
//! the baseline learned on `(learn-from, from]` and fitted once, then every window of
//! `(from, until]` scored, its episodes formed as `analysis.episodes` forms them. One line per
//! window, skipped window, episode event and regime change, as text or (`--json`) as JSON
//! objects that the evaluation scripts read.
//!
//! A recording (`--input`, the files `analyze` reads) is replayed from its start by default:
//! the baseline is its first `analysis.warmup` (`--warmup`; the service's first fit), and
//! every later window is scored out of sample, where `analyze` fits on the whole recording.

use std::collections::BTreeMap;
use std::path::PathBuf;

use prometheus_client::registry::Registry;
use serde::Serialize;

use crate::commands::analyze::Format;
use crate::config::{AnalysisConfig, Config};
use crate::core::episodes::tracker::Event;
use crate::core::episodes::OpenEpisode;
use crate::core::matrix::HostMatrix;
use crate::http::HttpClient;
use crate::ingest::kinds::MetricSet;
use crate::ingest::promapi::PromClient;
use crate::ingest::prometheus::PrometheusSource;
use crate::ingest::{FileFormat, FileSource, Source, SourceOptions, TimeRange};
use crate::online::{Engine, EngineParams, Outcome, WindowScore};
use crate::outputs::metrics::SelfMetrics;

#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// The service's YAML configuration (its `source.prometheus`, metric set and `analysis`).
    /// Optional with `--input`: the `analysis` defaults then.
    #[arg(
        long = "config.file",
        value_name = "FILE",
        required_unless_present = "input"
    )]
    pub config_file: Option<PathBuf>,
    /// A recording to replay instead of a Prometheus: OpenMetrics or Prometheus text with a
    /// timestamp on every sample, or CSV (the files `analyze` reads).
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// The recording's format; by default `csv` for a `.csv` file, otherwise `openmetrics`.
    #[arg(long, value_enum, requires = "input")]
    pub format: Option<Format>,
    /// Metric-set YAML for the recording's kinds and subsystems (by default the
    /// configuration's metric set, or the built-in defaults without one).
    #[arg(long = "metric-set", value_name = "FILE", requires = "input")]
    pub metric_set: Option<PathBuf>,
    /// Label of the recording that tells hosts apart.
    #[arg(long = "host-label", default_value = "instance", requires = "input")]
    pub host_label: String,
    /// The baseline the first fit needs (by default the configuration's `analysis.warmup`,
    /// 5m without one): windows before the baseline spans it are skipped as warm-up, as the
    /// service skips them. A short recording needs a shorter one.
    #[arg(long, value_name = "DURATION")]
    pub warmup: Option<String>,
    /// Start of the baseline, Unix seconds (a recording: its start by default).
    #[arg(
        long = "learn-from",
        value_name = "SECONDS",
        required_unless_present = "input"
    )]
    pub learn_from: Option<f64>,
    /// End of the baseline and start of scoring, Unix seconds (a recording: `--learn-from`
    /// plus `analysis.warmup` by default).
    #[arg(
        long = "from",
        value_name = "SECONDS",
        required_unless_present = "input"
    )]
    pub from: Option<f64>,
    /// End of scoring, Unix seconds (a recording: its end by default).
    #[arg(
        long = "until",
        value_name = "SECONDS",
        required_unless_present = "input"
    )]
    pub until: Option<f64>,
    /// Score from here instead of `--from` (earlier: the baseline's own windows, scored by
    /// the model fitted on them, which shows what in the baseline sets the bars).
    #[arg(long = "score-from", value_name = "SECONDS")]
    pub score_from: Option<f64>,
    /// One JSON object a line (`"type"`: window, skipped, episode, regime) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// One line of `--json` output.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line<'a> {
    Window(&'a WindowScore),
    Skipped {
        host: &'a str,
        end_ms: i64,
        reason: &'a str,
    },
    /// `event`: `open`, `join` (a subsystem joins the open episode: the service alerts on it
    /// too) or `close`; `at_ms` the end of the window that did it.
    Episode {
        event: &'static str,
        host: &'a str,
        at_ms: i64,
        episode: &'a OpenEpisode,
    },
    Regime {
        host: &'a str,
        detected_ms: i64,
        start_ms: i64,
        settled: bool,
        summary: &'a str,
    },
}

fn ms(seconds: f64) -> i64 {
    (seconds * 1000.0).round() as i64
}

/// Prints `line` as JSON, or as text in the layout the evaluation scripts of earlier
/// releases read (`HOST END agreement=N det=score … | claims`, `EPISODE open|join|close …`).
fn emit(line: &Line<'_>, json: bool) {
    if json {
        match serde_json::to_string(line) {
            Ok(s) => println!("{s}"),
            Err(e) => eprintln!("reveal-analyzer replay: a line not written: {e}"),
        }
        return;
    }
    match line {
        Line::Window(w) => {
            let scores: Vec<String> = w
                .scores
                .iter()
                .map(|(d, s)| format!("{d}={s:.2}"))
                .collect();
            println!(
                "{} {:.3} agreement={} {} | {}",
                w.host,
                w.end_ms as f64 / 1000.0,
                w.agreement,
                scores.join(" "),
                w.description
            );
        }
        Line::Skipped {
            host,
            end_ms,
            reason,
        } => println!("{host} {} skipped: {reason}", end_ms / 1000),
        Line::Episode {
            event,
            host,
            at_ms,
            episode: ep,
        } => {
            let at = if *event == "close" {
                ep.last_flagged_ms
            } else {
                ep.start_ms
            };
            let mut text = format!(
                "EPISODE {event} {host} {} {} [{}]",
                at_ms / 1000,
                at / 1000,
                ep.subsystems.join(",")
            );
            if *event == "open" {
                text.push(' ');
                text.push_str(&ep.summary);
            }
            println!("{text}");
            if *event == "open" {
                for (sub, hint) in &ep.hints {
                    println!("HINT {host} {sub}: {hint}");
                }
            }
        }
        Line::Regime {
            host,
            detected_ms,
            start_ms,
            settled,
            summary,
        } => println!(
            "REGIME {host} {} {} settled={settled} {summary}",
            detected_ms / 1000,
            start_ms / 1000
        ),
    }
}

/// Replays the stretch; errors are bad input (configuration, times, the recording) or an
/// unreachable source.
pub async fn run(args: ReplayArgs) -> anyhow::Result<()> {
    let config = match &args.config_file {
        Some(p) => Some(Config::load(p).map_err(|e| anyhow::anyhow!("bad configuration: {e}"))?),
        None => None,
    };
    let analysis = config
        .as_ref()
        .map_or_else(AnalysisConfig::default, |c| c.analysis.clone());
    let mut params = EngineParams::from_config(&analysis);
    if let Some(w) = &args.warmup {
        let d = crate::core::duration::parse_duration(w)
            .map_err(|e| anyhow::anyhow!("--warmup: {e}"))?;
        params.warmup_ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    }
    let stride = params.window.stride_ms;
    let mut times = Times {
        learn_from: args.learn_from.map(ms),
        from: args.from.map(ms),
        until: args.until.map(ms),
        score_from: args.score_from.map(ms),
    };
    let (learn, score) = match &args.input {
        Some(path) => {
            let metric_set = match (&args.metric_set, &config) {
                (Some(p), _) => MetricSet::load(p)
                    .map_err(|e| anyhow::anyhow!("bad metric set {}: {e}", p.display()))?,
                (None, Some(c)) => MetricSet::new(&c.metrics, "the configuration")
                    .map_err(|e| anyhow::anyhow!("bad configuration: {e}"))?,
                (None, None) => MetricSet::default(),
            };
            params.add_device_labels(&metric_set.device_labels());
            let format = match args.format {
                Some(Format::Csv) => FileFormat::Csv,
                Some(Format::Openmetrics) => FileFormat::OpenMetrics,
                None => FileFormat::from_path(path),
            };
            let mut src = FileSource {
                path: path.clone(),
                format,
                options: SourceOptions {
                    step_ms: params.window.step_ms,
                    host_label: args.host_label.clone(),
                    metric_set,
                    ..SourceOptions::default()
                },
            };
            let hosts = src
                .fetch(None)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            times.default_to(&hosts, params.warmup_ms, stride)?;
            (hosts, None)
        }
        None => {
            let config = config.as_ref().expect("clap requires --config.file");
            let p = config.source.prometheus.as_ref().ok_or_else(|| {
                anyhow::anyhow!(
                    "replay reads a Prometheus: the configuration has no source.prometheus \
                     (or give a recording with --input)"
                )
            })?;
            params.add_device_labels(&config.device_labels());
            let (learn_from, from, until) = times.resolved()?;
            let (step, window) = (params.window.step_ms, params.window.window_ms);
            let mut src = PrometheusSource::new(
                PromClient::new(HttpClient::new(&p.http_client())?, &p.url),
                &config.metrics,
                step,
                &p.host_label,
            )?;
            let range = |after: i64, to: i64| TimeRange {
                start_ms: after + stride - window - step,
                end_ms: to + step,
            };
            let learn = src.fetch_async(range(learn_from, from)).await?;
            let score = src
                .fetch_async(range(times.score_from.unwrap_or(from), until))
                .await?;
            (learn, Some(score))
        }
    };
    let (learn_from, from, until) = times.resolved()?;
    let metrics = SelfMetrics::new(&mut Registry::default());
    let mut engine = Engine::new(params);
    for m in &learn {
        engine.learn(m, learn_from, from, &[], &metrics);
    }
    let fit_started = std::time::Instant::now();
    engine.refit_all(&metrics);
    eprintln!(
        "fitted the baseline of {} in {:.2} s",
        span(from - learn_from),
        fit_started.elapsed().as_secs_f64()
    );
    let score_from = times.score_from.unwrap_or(from);
    // Subsystems alerted so far of each host's open episode.
    let mut alerted: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // A recording is read once: its whole matrices serve both.
    for m in score.as_ref().unwrap_or(&learn) {
        for o in engine.process(m, score_from, until, &metrics) {
            match o {
                Outcome::Skipped { end_ms, reason } => emit(
                    &Line::Skipped {
                        host: &m.host,
                        end_ms,
                        reason,
                    },
                    args.json,
                ),
                Outcome::Scored(w) => {
                    let host_alerted = alerted.entry(w.host.clone()).or_default();
                    let event = match w.event.as_deref() {
                        Some(Event::Opened(ep)) => {
                            *host_alerted = ep.subsystems.clone();
                            Some(("open", ep))
                        }
                        Some(Event::Extended(ep)) if ep.subsystems.len() > host_alerted.len() => {
                            *host_alerted = ep.subsystems.clone();
                            Some(("join", ep))
                        }
                        Some(Event::Closed(ep)) => {
                            host_alerted.clear();
                            Some(("close", ep))
                        }
                        _ => None,
                    };
                    if let Some((event, episode)) = event {
                        let line = Line::Episode {
                            event,
                            host: &w.host,
                            at_ms: w.end_ms,
                            episode,
                        };
                        emit(&line, args.json);
                    }
                    emit(&Line::Window(&w), args.json);
                }
            }
        }
        for ev in engine.take_regime_changes() {
            let line = Line::Regime {
                host: &ev.host,
                detected_ms: ev.change.detected_ms,
                start_ms: ev.change.start_ms,
                settled: ev.change.settled,
                summary: &ev.summary,
            };
            emit(&line, args.json);
        }
    }
    Ok(())
}

/// `1m30s`-style text of a span of milliseconds, for the log.
fn span(ms: i64) -> String {
    let s = ms / 1000;
    match (s / 60, s % 60) {
        (0, s) => format!("{s}s"),
        (m, 0) => format!("{m}m"),
        (m, s) => format!("{m}m{s}s"),
    }
}

/// The replay's times, in milliseconds: given, or (a recording) taken from it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Times {
    learn_from: Option<i64>,
    from: Option<i64>,
    until: Option<i64>,
    score_from: Option<i64>,
}

impl Times {
    /// Fills what was not given from the recording: the baseline from its first sample on the
    /// stride grid, scoring `warmup_ms` later, to its last sample.
    fn default_to(
        &mut self,
        hosts: &[HostMatrix],
        warmup_ms: i64,
        stride_ms: i64,
    ) -> anyhow::Result<()> {
        let first = hosts.iter().map(|m| m.start_ms).min();
        let last = hosts
            .iter()
            .filter(|m| m.n_steps() > 0)
            .map(|m| m.time_ms(m.n_steps() - 1))
            .max();
        let (Some(first), Some(last)) = (first, last) else {
            anyhow::bail!("the recording holds no samples");
        };
        let learn_from = *self
            .learn_from
            .get_or_insert(first.div_euclid(stride_ms) * stride_ms + stride_ms);
        self.from.get_or_insert(learn_from + warmup_ms);
        self.until
            .get_or_insert(last.div_euclid(stride_ms) * stride_ms);
        Ok(())
    }

    /// `(learn_from, from, until)`, checked to be in order.
    fn resolved(&self) -> anyhow::Result<(i64, i64, i64)> {
        let (Some(learn_from), Some(from), Some(until)) = (self.learn_from, self.from, self.until)
        else {
            anyhow::bail!("--learn-from, --from and --until are needed");
        };
        anyhow::ensure!(
            learn_from < from && from < until,
            "the times must be in order: --learn-from < --from < --until (a recording shorter \
             than its baseline has nothing to score)"
        );
        Ok((learn_from, from, until))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_carry_their_type() {
        let ep = OpenEpisode {
            id: "h@1".into(),
            instance: "h".into(),
            start_ms: 1_000,
            last_flagged_ms: 4_000,
            peak_agreement: 2,
            subsystem: "cpu".into(),
            subsystems: vec!["cpu".into()],
            claims: Default::default(),
            hints: Default::default(),
            severity: "warning".into(),
            summary: "s".into(),
            description: "d".into(),
            detectors: "zscore,pca".into(),
            recurring: None,
        };
        let line = Line::Episode {
            event: "open",
            host: "h",
            at_ms: 4_000,
            episode: &ep,
        };
        let v: serde_json::Value = serde_json::to_value(&line).unwrap();
        assert_eq!(v["type"], "episode");
        assert_eq!(v["event"], "open");
        assert_eq!(v["episode"]["subsystems"][0], "cpu");
        let skipped = Line::Skipped {
            host: "h",
            end_ms: 5_000,
            reason: "warmup",
        };
        let v = serde_json::to_value(&skipped).unwrap();
        assert_eq!(
            (v["type"].as_str(), v["reason"].as_str()),
            (Some("skipped"), Some("warmup"))
        );
        assert_eq!(ms(1.5), 1_500);
    }
}
