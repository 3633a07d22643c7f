//! Writes the scaled feature matrix of a past range of a Prometheus as CSV: every window's
//! deviation from a baseline, feature by feature, as the default detectors see it. For
//! studying what moves in a window (docs/evaluation/method.md, "Replaying a recorded run").
//!
//!     cargo run --release -p reveal-analyzer --example feature_dump -- \
//!         CONFIG BASE_FROM BASE_UNTIL UNTIL > OUT.csv
//!
//! Times are Unix seconds. The bulk scaling (`Scaling::Bulk`, one event as the least scale of
//! event channels) is fitted on the windows ending in (BASE_FROM, BASE_UNTIL]; every window up
//! to UNTIL is written: `end_s` then one column per scored feature, `channel__feature`.

use ndarray::Axis;
use reveal_analyzer::config::Config;
use reveal_analyzer::core::detect::floors_for;
use reveal_analyzer::core::detect::scale::{Scaler, Scaling};
use reveal_analyzer::core::features::{least_change, Extractor, FeatureConfig};
use reveal_analyzer::core::matrix::Kind;
use reveal_analyzer::core::window::{plan_windows, WindowConfig};
use reveal_analyzer::http::HttpClient;
use reveal_analyzer::ingest::promapi::PromClient;
use reveal_analyzer::ingest::prometheus::PrometheusSource;
use reveal_analyzer::ingest::TimeRange;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    anyhow::ensure!(
        args.len() == 5,
        "usage: feature_dump CONFIG BASE_FROM BASE_UNTIL UNTIL"
    );
    let config = Config::load(std::path::Path::new(&args[1]))?;
    let secs = |i: usize| -> anyhow::Result<i64> { Ok(args[i].parse::<i64>()? * 1000) };
    let (from, base_until, until) = (secs(2)?, secs(3)?, secs(4)?);
    let p = config
        .source
        .prometheus
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("needs a prometheus source"))?;
    let a = &config.analysis;
    let wc = WindowConfig {
        step_ms: a.step.0.as_millis() as i64,
        window_ms: a.window.0.as_millis() as i64,
        stride_ms: a.stride.0.as_millis() as i64,
        ..WindowConfig::default()
    };
    let mut src = PrometheusSource::new(
        PromClient::new(HttpClient::new(&p.http_client())?, &p.url),
        &config.metrics,
        wc.step_ms,
        &p.host_label,
    )?;
    let range = TimeRange {
        start_ms: from - wc.window_ms,
        end_ms: until + wc.step_ms,
    };
    let mut extractor = Extractor::new(FeatureConfig::default(), wc);
    for m in src.fetch_async(range).await? {
        let plan = plan_windows(&m, &wc)?;
        let fm = extractor.extract(&m, &plan);
        let cols = fm.scored_columns();
        let x = fm.values.select(Axis(1), &cols);
        let base: Vec<usize> = (0..fm.windows.len())
            .filter(|&w| fm.windows[w].end_ms > from && fm.windows[w].end_ms <= base_until)
            .collect();
        let kinds: Vec<Kind> = cols.iter().map(|&c| fm.columns[c].kind).collect();
        let least: Vec<f64> = cols
            .iter()
            .map(|&c| {
                let col = &fm.columns[c];
                least_change(col.feature, &fm.channels[col.channel], &wc)
            })
            .collect();
        let floors = floors_for(&kinds, &least);
        let scaler = Scaler::fit_floored(
            x.select(Axis(0), &base).view(),
            Scaling::Bulk,
            Some(&floors),
        )?;
        let names: Vec<String> = scaler
            .used()
            .iter()
            .map(|&k| fm.column_name(cols[k]).replace(',', ";"))
            .collect();
        println!("end_s,{}", names.join(","));
        let z = scaler.transform(x.view());
        for (w, row) in fm.windows.iter().zip(z.rows()) {
            if w.end_ms <= from {
                continue;
            }
            let vals: Vec<String> = row.iter().map(|v| format!("{v:.3}")).collect();
            println!("{},{}", w.end_ms / 1000, vals.join(","));
        }
    }
    Ok(())
}
