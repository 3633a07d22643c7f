//! The Markdown list of metrics, generated from the collector table's descriptors.

use crate::collectors::COLLECTORS;
use crate::runner::SELF_METRICS;
use crate::scrape::{Desc, Kind};
use std::fmt::Write;

/// Renders every metric family as a Markdown table, grouped by collector.
pub fn markdown() -> String {
    let mut s = String::new();
    s.push_str("| metric | type | labels | collector | description |\n");
    s.push_str("| --- | --- | --- | --- | --- |\n");
    let rows = COLLECTORS
        .iter()
        .flat_map(|e| e.metrics.iter().map(move |d| (e.name, *d)))
        .chain(SELF_METRICS.iter().map(|d| ("(exporter)", *d)));
    for (collector, d) in rows {
        row(&mut s, collector, d);
    }
    s
}

fn row(s: &mut String, collector: &str, d: &Desc) {
    let kind = match d.kind {
        Kind::Counter => "counter",
        Kind::Gauge => "gauge",
    };
    let labels = d.labels.join(", ");
    let _ = writeln!(
        s,
        "| `{}` | {kind} | {labels} | {collector} | {} |",
        d.sample_name(),
        d.help.replace('|', "\\|")
    );
}
