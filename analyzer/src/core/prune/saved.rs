//! Verdicts as `prune --output.verdicts` writes them (one JSON object a line), read back, so
//! that a metric set or selection can be written again from a pruning already done
//! (`prune --from-verdicts`) without the recordings it was done on.

use serde::Deserialize;

use super::ChannelVerdict;
use crate::core::matrix::{Kind, Subsystem};

/// The reasons a verdict can give.
pub const REASONS: [&str; 4] = [
    "selected",
    "unjudged",
    "redundant",
    "read by the metric set",
];

#[derive(Deserialize)]
struct Line {
    channel: String,
    metric: String,
    subsystem: Subsystem,
    kind: Kind,
    counter: bool,
    kept: bool,
    reason: String,
    represented_by: Option<String>,
    abs_r: Option<f64>,
}

/// The verdicts of a `--output.verdicts` file; an error names the first line that is not one.
pub fn read_verdicts(text: &str) -> Result<Vec<ChannelVerdict>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let l: Line = serde_json::from_str(line).map_err(|e| format!("line {}: {e}", i + 1))?;
        let Some(reason) = REASONS.iter().find(|r| **r == l.reason) else {
            return Err(format!(
                "line {}: reason {:?} is none of {}",
                i + 1,
                l.reason,
                REASONS.join(", ")
            ));
        };
        out.push(ChannelVerdict {
            channel: l.channel,
            metric: l.metric,
            subsystem: l.subsystem,
            kind: l.kind,
            counter: l.counter,
            kept: l.kept,
            reason,
            represented_by: l.represented_by,
            abs_r: l.abs_r,
        });
    }
    if out.is_empty() {
        return Err("no verdict in the file".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_read_back_as_written() {
        let v = ChannelVerdict {
            channel: "reveal_cpu_forks_total{job=\"reveal\"}".into(),
            metric: "reveal_cpu_forks_total".into(),
            subsystem: Subsystem::Cpu,
            kind: Kind::Dynamic,
            counter: true,
            kept: false,
            reason: "redundant",
            represented_by: Some("reveal_cpu_context_switches_total{job=\"reveal\"}".into()),
            abs_r: Some(0.82),
        };
        let text = format!("{}\n\n", serde_json::to_string(&v).unwrap());
        assert_eq!(read_verdicts(&text).unwrap(), vec![v]);
    }

    #[test]
    fn a_bad_line_is_named() {
        let good = r#"{"channel":"a","metric":"a","subsystem":"cpu","kind":"static","counter":false,"kept":true,"reason":"unjudged","represented_by":null,"abs_r":null}"#;
        let odd_reason = good.replace("unjudged", "liked");
        let err = read_verdicts(&format!("{good}\n{odd_reason}\n")).unwrap_err();
        assert!(err.starts_with("line 2: reason \"liked\""), "{err}");
        let err = read_verdicts(&format!("{good}\n{{\"channel\":1}}\n")).unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
        assert!(read_verdicts("\n").unwrap_err().contains("no verdict"));
    }
}
