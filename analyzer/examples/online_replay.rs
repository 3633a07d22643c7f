//! Replays a past range of a Prometheus through the online engine, printing every window's
//! scores and strongest claims: how `reveal-analyzer run` would have seen that stretch.
//!
//!     cargo run -p reveal-analyzer --example online_replay -- CONFIG LEARN_FROM SCORE_FROM SCORE_UNTIL
//!
//! Times are Unix seconds; the baseline is learned on (LEARN_FROM, SCORE_FROM]. Episodes are
//! formed as the service forms them (`analysis.episodes`), and printed as `EPISODE` lines:
//! opened, joined by a subsystem (the service then alerts on that subsystem too) and closed
//! at the end of which window, and on which subsystems; an opened episode's remediation hints
//! follow as `HINT` lines. With `REPLAY_FROM=<Unix seconds>` in the environment, scoring starts
//! there instead of at SCORE_FROM: an earlier start scores the baseline's own windows by the
//! model fitted on them, which shows what in the baseline sets the bars.

use prometheus_client::registry::Registry;
use reveal_analyzer::config::Config;
use reveal_analyzer::core::episodes::tracker::Event;
use reveal_analyzer::http::HttpClient;
use reveal_analyzer::ingest::promapi::PromClient;
use reveal_analyzer::ingest::prometheus::PrometheusSource;
use reveal_analyzer::ingest::TimeRange;
use reveal_analyzer::online::{Engine, EngineParams, Outcome};
use reveal_analyzer::outputs::metrics::SelfMetrics;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    anyhow::ensure!(
        args.len() == 5,
        "usage: online_replay CONFIG LEARN_FROM SCORE_FROM SCORE_UNTIL"
    );
    let config = Config::load(std::path::Path::new(&args[1]))?;
    let secs = |i: usize| -> anyhow::Result<i64> { Ok(args[i].parse::<i64>()? * 1000) };
    let (learn_from, from, until) = (secs(2)?, secs(3)?, secs(4)?);
    let p = config
        .source
        .prometheus
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("needs a prometheus source"))?;
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
    // Subsystems of the open episode alerted so far (one host per replay).
    let mut alerted: Vec<String> = Vec::new();
    let score_from = match std::env::var("REPLAY_FROM") {
        Ok(v) => v.parse::<i64>()? * 1000,
        Err(_) => from,
    };
    for m in src.fetch_async(range(score_from, until)).await? {
        for o in engine.process(&m, score_from, until, &metrics) {
            match o {
                Outcome::Skipped { end_ms, reason } => {
                    println!("{} {} skipped: {reason}", m.host, end_ms / 1000)
                }
                Outcome::Scored(w) => {
                    match w.event.as_deref() {
                        Some(Event::Extended(ep)) if ep.subsystems.len() > alerted.len() => {
                            // A subsystem joins the open episode: the service alerts on it.
                            println!(
                                "EPISODE join {} {} {} [{}]",
                                w.host,
                                w.end_ms / 1000,
                                ep.start_ms / 1000,
                                ep.subsystems.join(",")
                            );
                            alerted = ep.subsystems.clone();
                        }
                        Some(Event::Opened(ep)) => {
                            alerted = ep.subsystems.clone();
                            println!(
                                "EPISODE open {} {} {} [{}] {}",
                                w.host,
                                w.end_ms / 1000,
                                ep.start_ms / 1000,
                                ep.subsystems.join(","),
                                ep.summary
                            );
                            for (sub, hint) in &ep.hints {
                                println!("HINT {} {sub}: {hint}", w.host);
                            }
                        }
                        Some(Event::Closed(ep)) => println!(
                            "EPISODE close {} {} {} [{}]",
                            w.host,
                            w.end_ms / 1000,
                            ep.last_flagged_ms / 1000,
                            ep.subsystems.join(",")
                        ),
                        _ => {}
                    }
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
            }
        }
        for ev in engine.take_regime_changes() {
            println!(
                "REGIME {} {} {} settled={} {}",
                ev.host,
                ev.change.detected_ms / 1000,
                ev.change.start_ms / 1000,
                ev.change.settled,
                ev.summary
            );
        }
    }
    Ok(())
}
