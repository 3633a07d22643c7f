//! The exporter's selection file (`reveal-exporter --metrics.selection`, format in
//! `reveal_schema::selection`) from the channels pruning kept:
//!
//! ```yaml
//! metrics:
//!   - reveal_memory_mem_available_bytes        # every series of the metric was kept
//!   - name: reveal_cpu_time_seconds_total      # only some series: one entry per series
//!     match: {cpu: '0', mode: 'user'}
//! ```
//!
//! Only names the exporter can emit go in (the exporter refuses others); kept channels of
//! other metrics (recording rules, node_exporter names) are listed in a comment. Matchers use
//! only labels the exporter's metric has (a `job` label added by Prometheus is dropped), and
//! label values are escaped regexes in single quotes. The text is checked with the parser the
//! exporter itself uses (`reveal_schema`) before it is returned.

use std::collections::BTreeMap;

use reveal_schema::{catalog, selection::Selection};

use super::ChannelVerdict;
use crate::core::claim::parse_channel;

/// A YAML single-quoted scalar: only `'` needs escaping (doubled).
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The selection YAML for the kept channels, with `header` as leading comment lines.
/// Fails (with the exporter's message) only if the exporter would refuse the text.
pub fn selection_yaml(verdicts: &[ChannelVerdict], header: &[String]) -> Result<String, String> {
    // metric → (kept channel names, channels seen)
    let mut by_metric: BTreeMap<&str, (Vec<&str>, usize)> = BTreeMap::new();
    for v in verdicts {
        let e = by_metric.entry(v.metric.as_str()).or_default();
        e.1 += 1;
        if v.kept {
            e.0.push(v.channel.as_str());
        }
    }
    let mut entries = String::new();
    let mut foreign = Vec::new();
    let (mut whole, mut partial) = (0usize, 0usize);
    for (metric, (kept, seen)) in &by_metric {
        if kept.is_empty() || metric.starts_with("reveal_exporter_") {
            // Nothing kept; or the exporter's own metrics, which it always exposes.
            continue;
        }
        let Some(desc) = catalog::find(metric) else {
            foreign.push(*metric);
            continue;
        };
        let mut sets: Vec<Vec<(String, String)>> = Vec::new();
        for ch in kept {
            let (_, labels) = parse_channel(ch);
            let set: Vec<(String, String)> = labels
                .into_iter()
                .filter(|(k, _)| desc.labels.contains(&k.as_str()))
                .collect();
            sets.push(set);
        }
        if kept.len() == *seen || sets.iter().any(Vec::is_empty) {
            entries.push_str(&format!("  - {metric}\n"));
            whole += 1;
            continue;
        }
        sets.sort();
        sets.dedup();
        for set in sets {
            let m: Vec<String> = set
                .iter()
                .map(|(k, v)| format!("{k}: {}", quote(&regex::escape(v))))
                .collect();
            entries.push_str(&format!(
                "  - name: {metric}\n    match: {{{}}}\n",
                m.join(", ")
            ));
        }
        partial += 1;
    }
    let mut out = String::new();
    for h in header {
        out.push_str(&format!("# {h}\n"));
    }
    out.push_str(&format!(
        "# {whole} metrics with all their series, {partial} with some; the exporter's own \
         reveal_exporter_* metrics are always exposed.\n"
    ));
    if !foreign.is_empty() {
        out.push_str("# Kept channels of metrics the exporter does not emit (recording rules,\n");
        out.push_str("# other exporters); select them where they are produced:\n");
        for f in &foreign {
            out.push_str(&format!("#   {f}\n"));
        }
    }
    if entries.is_empty() {
        out.push_str("metrics: []\n");
    } else {
        out.push_str("metrics:\n");
        out.push_str(&entries);
    }
    Selection::parse(&out).map_err(|e| format!("the exporter would refuse the selection: {e}"))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(channel: &str, kept: bool) -> ChannelVerdict {
        ChannelVerdict {
            channel: channel.to_string(),
            metric: channel.split('{').next().unwrap_or(channel).to_string(),
            kept,
            reason: if kept { "selected" } else { "redundant" },
            represented_by: None,
            abs_r: None,
        }
    }

    #[test]
    fn label_values_are_escaped_and_foreign_labels_dropped() {
        let rx = "reveal_network_receive_packets_total";
        let verdicts = [
            v(&format!("{rx}{{device=\"eth0.100\",job=\"node\"}}"), true),
            v(&format!("{rx}{{device=\"it's\"}}"), true),
            v(&format!("{rx}{{device=\"eth1\"}}"), false),
            v("reveal_memory_dirty_bytes", true),
            v(
                "reveal_exporter_collector_success{collector=\"stat\"}",
                true,
            ),
            v("instance:cpu_busy:ratio", true),
        ];
        let yaml = selection_yaml(&verdicts, &["header".to_string()]).unwrap();
        assert!(yaml.starts_with("# header\n"), "{yaml}");
        assert!(yaml.contains("match: {device: 'eth0\\.100'}"), "{yaml}");
        assert!(yaml.contains("match: {device: 'it''s'}"), "{yaml}");
        assert!(yaml.contains("#   instance:cpu_busy:ratio"), "{yaml}");
        assert!(!yaml.contains("  - reveal_exporter_"), "{yaml}");
        let sel = Selection::parse(&yaml).unwrap();
        let rule = sel.rule(rx).unwrap();
        assert!(rule.keeps(&[("device", "eth0.100".to_string())]));
        assert!(!rule.keeps(&[("device", "eth0x100".to_string())]));
        assert!(rule.keeps(&[("device", "it's".to_string())]));
        assert!(!rule.keeps(&[("device", "eth1".to_string())]));
        // Nothing kept at all: an empty list the exporter accepts.
        let yaml = selection_yaml(&[v(&format!("{rx}{{device=\"eth1\"}}"), false)], &[]).unwrap();
        assert!(yaml.ends_with("metrics: []\n"), "{yaml}");
    }
}
