//! `reveal-analyzer replay`: a past stretch of a Prometheus through the service's own engine
//! (the code `run` scores with), as the service would have seen it: the baseline learned on
//! `(learn-from, from]` and fitted once, then every window of `(from, until]` scored, its
//! episodes formed as `analysis.episodes` forms them. One line per window, skipped window,
//! episode event and regime change, as text or (`--json`) as JSON objects that the evaluation
//! scripts read.

use std::collections::BTreeMap;
use std::path::PathBuf;

use prometheus_client::registry::Registry;
use serde::Serialize;

use crate::config::Config;
use crate::core::episodes::tracker::Event;
use crate::core::episodes::OpenEpisode;
use crate::http::HttpClient;
use crate::ingest::promapi::PromClient;
use crate::ingest::prometheus::PrometheusSource;
use crate::ingest::TimeRange;
use crate::online::{Engine, EngineParams, Outcome, WindowScore};
use crate::outputs::metrics::SelfMetrics;

#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// The service's YAML configuration (its `source.prometheus`, metric set and `analysis`).
    #[arg(long = "config.file", value_name = "FILE")]
    pub config_file: PathBuf,
    /// Start of the baseline, Unix seconds.
    #[arg(long = "learn-from", value_name = "SECONDS")]
    pub learn_from: f64,
    /// End of the baseline and start of scoring, Unix seconds.
    #[arg(long = "from", value_name = "SECONDS")]
    pub from: f64,
    /// End of scoring, Unix seconds.
    #[arg(long = "until", value_name = "SECONDS")]
    pub until: f64,
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

/// Replays the stretch; errors are bad input (configuration, times) or an unreachable source.
pub async fn run(args: ReplayArgs) -> anyhow::Result<()> {
    let config =
        Config::load(&args.config_file).map_err(|e| anyhow::anyhow!("bad configuration: {e}"))?;
    let (learn_from, from, until) = (ms(args.learn_from), ms(args.from), ms(args.until));
    anyhow::ensure!(
        learn_from < from && from < until,
        "the times must be in order: --learn-from < --from < --until"
    );
    let p = config.source.prometheus.as_ref().ok_or_else(|| {
        anyhow::anyhow!("replay reads a Prometheus: the configuration has no source.prometheus")
    })?;
    let a = &config.analysis;
    let (step, window, stride) = (
        a.step.0.as_millis() as i64,
        a.window.0.as_millis() as i64,
        a.stride.0.as_millis() as i64,
    );
    let mut src = PrometheusSource::new(
        PromClient::new(HttpClient::new(&p.http_client())?, &p.url),
        &config.metrics,
        step,
        &p.host_label,
    )?;
    let metrics = SelfMetrics::new(&mut Registry::default());
    let mut engine = Engine::new(EngineParams::from_config(a));
    let range = |after: i64, to: i64| TimeRange {
        start_ms: after + stride - window - step,
        end_ms: to + step,
    };
    for m in src.fetch_async(range(learn_from, from)).await? {
        engine.learn(&m, learn_from, from, &[], &metrics);
    }
    let fit_started = std::time::Instant::now();
    engine.refit_all(&metrics);
    eprintln!(
        "fitted the baseline in {:.2} s",
        fit_started.elapsed().as_secs_f64()
    );
    let score_from = args.score_from.map_or(from, ms);
    // Subsystems alerted so far of each host's open episode.
    let mut alerted: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for m in src.fetch_async(range(score_from, until)).await? {
        for o in engine.process(&m, score_from, until, &metrics) {
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
