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
//! Only names the exporter can emit go in (it would warn about others and ignore them); kept channels of
//! other metrics (recording rules, node_exporter names) are listed in a comment. Matchers use
//! only labels the exporter's metric has (a `job` label added by Prometheus is dropped), and
//! label values are escaped regexes in single quotes. The text is checked with the parser the
//! exporter itself uses (`reveal_schema`) before it is returned.

use std::collections::BTreeMap;

use reveal_schema::{catalog, selection::Selection};

use super::ChannelVerdict;
use crate::core::claim::parse_channel;

/// Label sets without their alternated label → (that label, its values).
type Merged = BTreeMap<Vec<(String, String)>, (String, Vec<String>)>;

/// A YAML single-quoted scalar: only `'` needs escaping (doubled).
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The selection YAML for the kept channels, with `header` as leading comment lines.
/// Labels in `instance_labels` (which CPU, device, node: [`super::INSTANCE_LABELS`]) are not
/// matched, so a kind of series kept on one CPU of the recorded host is kept on every CPU of
/// every host; with none, the selection names the recorded host's series one by one.
/// Fails (with the exporter's message) only if the exporter would refuse the text.
///
/// With `keep_unseen`, every metric the exporter can emit that the recordings never showed
/// (hardware the recorded host lacks: GPUs, InfiniBand, RAPL, MSRs) is kept whole: nothing
/// showed it redundant, and a selection shipped for every host must not switch off a
/// collector because the host it was made on had no such device.
pub fn selection_yaml(
    verdicts: &[ChannelVerdict],
    header: &[String],
    instance_labels: &[&str],
    keep_unseen: bool,
) -> Result<String, String> {
    // metric → (kept channel names, seen channel names)
    let mut by_metric: BTreeMap<&str, (Vec<&str>, Vec<&str>)> = BTreeMap::new();
    for v in verdicts {
        let e = by_metric.entry(v.metric.as_str()).or_default();
        e.1.push(v.channel.as_str());
        if v.kept {
            e.0.push(v.channel.as_str());
        }
    }
    let mut entries = String::new();
    let mut foreign = Vec::new();
    let (mut whole, mut partial) = (0usize, 0usize);
    for (metric, (kept, seen)) in &by_metric {
        if kept.is_empty() || reveal_schema::catalog::is_self_metric(metric) {
            // Nothing kept; or the exporter's own metrics (reveal_exporter_*, process_*),
            // which it always exposes.
            continue;
        }
        let Some(desc) = catalog::find(metric) else {
            foreign.push(*metric);
            continue;
        };
        let label_set = |ch: &str| -> Vec<(String, String)> {
            let (_, labels) = parse_channel(ch);
            labels
                .into_iter()
                .filter(|(k, _)| {
                    desc.labels.contains(&k.as_str()) && !instance_labels.contains(&k.as_str())
                })
                .collect()
        };
        let distinct = |chs: &[&str]| {
            let mut sets: Vec<Vec<(String, String)>> = chs.iter().map(|c| label_set(c)).collect();
            sets.sort();
            sets.dedup();
            sets
        };
        let (sets, seen_sets) = (distinct(kept), distinct(seen));
        if sets.len() == seen_sets.len() || sets.iter().any(Vec::is_empty) {
            entries.push_str(&format!("  - {metric}\n"));
            whole += 1;
            continue;
        }
        // Sets that differ in one label only are one entry with an alternation of its
        // values (`field: 'RetransSegs|InErrs'`: a protocol's kept fields in one line); the
        // label that gives the fewest entries is the one alternated.
        let merge = |i: usize| {
            let mut merged: Merged = BTreeMap::new();
            for set in &sets {
                let mut rest = set.clone();
                let (k, v) = rest.remove(i);
                let e = merged.entry(rest).or_insert_with(|| (k, Vec::new()));
                e.1.push(regex::escape(&v));
            }
            merged
        };
        let width = sets.iter().map(Vec::len).min().unwrap_or(0);
        let same_keys = sets
            .iter()
            .all(|s| s.iter().map(|(k, _)| k).eq(sets[0].iter().map(|(k, _)| k)));
        let merged = if same_keys && width > 0 {
            (0..width)
                .map(merge)
                .min_by_key(BTreeMap::len)
                .unwrap_or_default()
        } else {
            // Sets with different labels: one entry each (the alternation of one value).
            sets.iter()
                .map(|set| {
                    let mut rest = set.clone();
                    let (k, v) = rest.pop().unwrap_or_default();
                    (rest, (k, vec![regex::escape(&v)]))
                })
                .collect()
        };
        for (rest, (last, values)) in merged {
            let mut m: Vec<String> = rest
                .iter()
                .map(|(k, v)| format!("{k}: {}", quote(&regex::escape(v))))
                .collect();
            m.push(format!("{last}: {}", quote(&values.join("|"))));
            entries.push_str(&format!(
                "  - name: {metric}\n    match: {{{}}}\n",
                m.join(", ")
            ));
        }
        partial += 1;
    }
    let mut unseen = String::new();
    if keep_unseen {
        for m in catalog::METRICS {
            if !reveal_schema::catalog::is_self_metric(m.name) && !by_metric.contains_key(m.name) {
                unseen.push_str(&format!("  - {}\n", m.name));
                whole += 1;
            }
        }
    }
    if !unseen.is_empty() {
        entries.push_str(
            "  # Not served on the recorded host (no such hardware or driver there): kept whole.\n",
        );
        entries.push_str(&unseen);
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
    Selection::parse(&out).map_err(|e| {
        let e = reveal_schema::excerpt::library_message(&e);
        format!("the exporter would refuse the selection: {e}")
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(channel: &str, kept: bool) -> ChannelVerdict {
        ChannelVerdict {
            channel: channel.to_string(),
            metric: channel.split('{').next().unwrap_or(channel).to_string(),
            subsystem: crate::core::matrix::Subsystem::Network,
            kind: crate::core::matrix::Kind::Dynamic,
            counter: channel.contains("_total"),
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
        let yaml = selection_yaml(&verdicts, &["header".to_string()], &[], false).unwrap();
        assert!(yaml.starts_with("# header\n"), "{yaml}");
        assert!(
            yaml.contains("match: {device: 'eth0\\.100|it''s'}"),
            "{yaml}"
        );
        assert!(yaml.contains("#   instance:cpu_busy:ratio"), "{yaml}");
        assert!(!yaml.contains("  - reveal_exporter_"), "{yaml}");
        let sel = Selection::parse(&yaml).unwrap();
        let rule = sel.rule(rx).unwrap();
        assert!(rule.keeps(&[("device", "eth0.100".to_string())]));
        assert!(!rule.keeps(&[("device", "eth0x100".to_string())]));
        assert!(rule.keeps(&[("device", "it's".to_string())]));
        assert!(!rule.keeps(&[("device", "eth1".to_string())]));
        // Nothing kept at all: an empty list the exporter accepts.
        let yaml = selection_yaml(
            &[v(&format!("{rx}{{device=\"eth1\"}}"), false)],
            &[],
            &[],
            false,
        )
        .unwrap();
        assert!(yaml.ends_with("metrics: []\n"), "{yaml}");
    }

    #[test]
    fn instance_labels_are_not_matched() {
        let s = "reveal_cpu_softirqs_total";
        let verdicts = [
            v(&format!("{s}{{cpu=\"0\",type=\"NET_RX\"}}"), true),
            v(&format!("{s}{{cpu=\"1\",type=\"NET_RX\"}}"), false),
            v(&format!("{s}{{cpu=\"0\",type=\"TIMER\"}}"), false),
            v(&format!("{s}{{cpu=\"1\",type=\"TIMER\"}}"), false),
            v("reveal_network_receive_bytes_total{device=\"eth0\"}", true),
            v("reveal_network_receive_bytes_total{device=\"eth1\"}", false),
        ];
        let yaml =
            selection_yaml(&verdicts, &[], crate::core::prune::INSTANCE_LABELS, true).unwrap();
        assert!(
            yaml.contains("  - name: reveal_cpu_softirqs_total\n    match: {type: 'NET_RX'}\n"),
            "{yaml}"
        );
        assert!(
            yaml.contains("  - reveal_network_receive_bytes_total\n"),
            "{yaml}"
        );
        let sel = Selection::parse(&yaml).unwrap();
        let rule = sel.rule(s).unwrap();
        let cpu7_rx = [("cpu", "7".to_string()), ("type", "NET_RX".to_string())];
        assert!(rule.keeps(&cpu7_rx));
        assert!(!rule.keeps(&[("cpu", "0".to_string()), ("type", "TIMER".to_string())]));
        // Metrics the recording never showed (no GPU there) are kept whole.
        assert!(sel.wants("reveal_gpu_utilization_ratio"), "{yaml}");
        assert!(
            sel.wants("reveal_network_infiniband_receive_bytes_total"),
            "{yaml}"
        );
        assert!(!yaml.contains("  - reveal_exporter_"), "{yaml}");
    }

    #[test]
    fn kept_kinds_differing_in_one_label_are_one_entry() {
        let m = "reveal_network_protocol_events_total";
        let ch = |p: &str, f: &str| format!("{m}{{field=\"{f}\",protocol=\"{p}\"}}");
        let verdicts = [
            v(&ch("Tcp", "RetransSegs"), true),
            v(&ch("Tcp", "InErrs"), true),
            v(&ch("Tcp", "ActiveOpens"), false),
            v(&ch("Udp", "InErrors"), true),
            v(&ch("Udp", "InDatagrams"), false),
        ];
        let yaml = selection_yaml(&verdicts, &[], &[], false).unwrap();
        assert_eq!(
            yaml.matches(&format!("  - name: {m}\n")).count(),
            2,
            "{yaml}"
        );
        assert!(
            yaml.contains("match: {protocol: 'Tcp', field: 'InErrs|RetransSegs'}"),
            "{yaml}"
        );
        let sel = Selection::parse(&yaml).unwrap();
        let rule = sel.rule(m).unwrap();
        let keeps =
            |p: &str, f: &str| rule.keeps(&[("field", f.to_string()), ("protocol", p.to_string())]);
        assert!(keeps("Tcp", "RetransSegs") && keeps("Tcp", "InErrs") && keeps("Udp", "InErrors"));
        assert!(!keeps("Tcp", "ActiveOpens") && !keeps("Udp", "InDatagrams"));
        assert!(!keeps("Udp", "RetransSegs"));
    }
}
