//! Reports of an analysis: JSON lines (one object per flagged window and per episode, plus
//! one summary per host) and Markdown in the form of the paper's table 4.
//!
//! ```text
//! {"type":"window","host":"local","window":37,"start_ms":…,"detectors":["zscore"],…}
//! {"type":"episode","host":"local","first_window":37,"last_window":39,…}
//! {"type":"regime_change","host":"local","start_ms":…,"detected_ms":…,"summary":"A new regime since …",…}
//! {"type":"host_deviation","host":"node3","subsystem":"memory","score":41.2,"since_ms":…,"evidence":[…],…}
//! ```
//!
//! Line types: `host` (what was analyzed, notes), `window` (a flagged window: detectors,
//! scores, evidence with claims), `episode` (consecutive flagged windows), `regime_change`
//! (a persistent, stable shift of one host, reported once: start, the shifted
//! channel–features with their levels before and after, and flagged windows at its start
//! counted on it as `absorbed_windows`), and `host_deviation` (a host whose subsystem
//! deviates persistently from the other hosts of the recording: score in robust-z units,
//! first and last window, evidence with claims; only for recordings of two or more hosts).

use std::fmt::Write as _;

use serde::Serialize;

use crate::core::clock::{clock, date};
use crate::core::crosshost::HostDeviation;
use crate::core::episodes::Episode;
use crate::core::matrix::Subsystem;
use crate::core::pipeline::{FlaggedWindow, HostAnalysis, HostSummary, RegimeReport};

/// Rows of the Markdown window table per host; the JSON has all of them.
pub const MAX_MARKDOWN_ROWS: usize = 200;

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line<'a> {
    Host {
        host: &'a str,
        summary: &'a HostSummary,
        notes: &'a [String],
    },
    Window(&'a FlaggedWindow),
    Episode(&'a Episode),
    RegimeChange(&'a RegimeReport),
    HostDeviation(&'a HostDeviation),
}

fn push_line(out: &mut String, l: Line) {
    // Serializing these plain structs cannot fail; non-finite floats become null.
    out.push_str(&serde_json::to_string(&l).unwrap_or_default());
    out.push('\n');
}

/// JSON lines for all hosts: a `host` summary line, then its windows, then its episodes.
pub fn json_lines(analyses: &[HostAnalysis]) -> String {
    let mut out = String::new();
    for a in analyses {
        let mut push = |l: Line| push_line(&mut out, l);
        push(Line::Host {
            host: &a.host,
            summary: &a.summary,
            notes: &a.notes,
        });
        for w in &a.flagged {
            push(Line::Window(w));
        }
        for e in &a.episodes {
            push(Line::Episode(e));
        }
        for r in &a.regime_changes {
            push(Line::RegimeChange(r));
        }
    }
    out
}

/// JSON lines of cross-host findings, one `host_deviation` object each.
pub fn deviation_lines(found: &[HostDeviation]) -> String {
    let mut out = String::new();
    for f in found {
        push_line(&mut out, Line::HostDeviation(f));
    }
    out
}

/// The paper's abbreviations: Z, MAHA (PCA + Mahalanobis), IF.
pub fn method_label(detector: &str) -> &str {
    match detector {
        "zscore" => "Z",
        "pca" => "MAHA",
        "iforest" => "IF",
        other => other,
    }
}

fn subsystem_label(s: Subsystem) -> &'static str {
    match s {
        Subsystem::Cpu => "CPU",
        Subsystem::Gpu => "GPU",
        Subsystem::Memory => "Memory",
        Subsystem::Network => "Network",
        Subsystem::Storage => "Storage",
        Subsystem::Other => "Other",
    }
}

/// A Markdown report: per host, what was analyzed, table 4 for flagged windows, episodes.
pub fn markdown(analyses: &[HostAnalysis]) -> String {
    let mut md = String::from("# Reveal anomaly report\n");
    for a in analyses {
        let s = &a.summary;
        let families = if s.families > 0 {
            format!(
                "; {} device families, {} channels in the model",
                s.families, s.model_channels
            )
        } else {
            String::new()
        };
        let _ = write!(
            md,
            "\n## Host `{}`\n\n{} channels ({} dynamic, {} event, {} static, left out of detection{families}); \
             {} of {} windows scored ({} without data, {} with too few samples); \
             {} feature columns; detectors: {}.\n",
            a.host,
            s.channels,
            s.dynamic,
            s.event,
            s.static_channels,
            s.windows_scored,
            s.windows_total,
            s.skipped_no_data,
            s.skipped_too_few_samples,
            s.feature_columns,
            if s.detectors.is_empty() { "none".to_string() } else { s.detectors.join(", ") },
        );
        if let Some(first) = a.flagged.first() {
            let _ = writeln!(
                md,
                "Times are UTC; the run starts on {}.",
                date(first.start_ms)
            );
        }
        for n in &a.notes {
            let _ = writeln!(md, "\n> Note: {n}");
        }
        regime_markdown(&mut md, &a.regime_changes);
        if a.flagged.is_empty() {
            md.push_str("\nNo anomalous windows.\n");
            continue;
        }
        md.push_str(
            "\n| Window (ID / Timestamp) | Method(s) | Subsystem | Mainreasons (Metric–Temporal Feature) | Claim |\n\
             | --- | --- | --- | --- | --- |\n",
        );
        for w in a.flagged.iter().take(MAX_MARKDOWN_ROWS) {
            let methods: Vec<&str> = w.detectors.iter().map(|d| method_label(d)).collect();
            let (sub, reason, claim) = match w.evidence.first() {
                Some(e) => (
                    subsystem_label(e.subsystem),
                    format!("{}__{}", e.channel, e.feature.suffix()),
                    e.claim.clone(),
                ),
                None => (
                    "–",
                    "–".to_string(),
                    "no single metric stands out".to_string(),
                ),
            };
            let _ = writeln!(
                md,
                "| {} / {} | {} | {} | `{}` | {} |",
                w.window,
                clock(w.start_ms),
                methods.join(", "),
                sub,
                cell(&reason),
                cell(&claim)
            );
        }
        if a.flagged.len() > MAX_MARKDOWN_ROWS {
            let _ = writeln!(
                md,
                "\n{} more flagged windows are in the JSON report.",
                a.flagged.len() - MAX_MARKDOWN_ROWS
            );
        }
        if !a.episodes.is_empty() {
            md.push_str(
                "\n### Episodes\n\n| Start – End | Windows | Peak agreement | Severity | Subsystems | Top evidence |\n\
                 | --- | --- | --- | --- | --- | --- |\n",
            );
            for e in &a.episodes {
                let subs: Vec<String> = e
                    .subsystems
                    .iter()
                    .map(|(s, v)| format!("{} {:.0}%", subsystem_label(*s), v * 100.0))
                    .collect();
                let _ = writeln!(
                    md,
                    "| {} – {} | {} ({}–{}) | {} | {} | {} | {} |",
                    clock(e.start_ms),
                    clock(e.end_ms),
                    e.windows,
                    e.first_window,
                    e.last_window,
                    e.peak_agreement,
                    e.severity,
                    subs.join(", "),
                    cell(&e.summary)
                );
            }
        }
    }
    md
}

/// A host's regime changes: one row each, before its anomalous windows.
fn regime_markdown(md: &mut String, changes: &[RegimeReport]) {
    if changes.is_empty() {
        return;
    }
    md.push_str(
        "\n### Regime changes\n\n| Start | Recognized | Shifted features | Largest shift | Summary |\n\
         | --- | --- | --- | --- | --- |\n",
    );
    for r in changes {
        let largest = r
            .column_names
            .first()
            .map_or("–".to_string(), |n| format!("`{}`", cell(n)));
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} |",
            clock(r.change.start_ms),
            clock(r.change.detected_ms),
            r.change.shifted,
            largest,
            cell(&r.summary)
        );
    }
}

/// Escapes a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_analysis_renders() {
        assert_eq!(json_lines(&[]), "");
        assert!(markdown(&[]).starts_with("# Reveal"));
        assert_eq!(cell("a|b\nc"), "a\\|b c");
    }
}
