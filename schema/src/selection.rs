//! The metric selection file (`reveal-exporter --metrics.selection FILE`): which metrics, and
//! which of their series, the exporter exposes (paper §4.1's pruned set; the analyzer's
//! `prune` command writes it).
//!
//! ```yaml
//! metrics:
//!   - reveal_cpu_instructions_total            # every series of the metric
//!   - name: reveal_cpu_time_seconds_total      # only the series whose labels match
//!     match: {mode: "user|system"}             # regexes, anchored at both ends
//! ```
//! An entry may also say `sum: [cpu]`: the metric's series are served summed over those
//! labels (one series per value of the others) instead of one by one. As `--metrics.fast`
//! (the exporter's 100 ms page) that is what the fast page serves, and the per-device series
//! go to the slow page; a query that sums over the label anyway (`sum without (cpu) (…)`)
//! reads the same either way.
//!
//! Names are sample names, as they appear in the exposition. Several entries for one name are
//! alternatives (a series is kept if any matches). A name the exporter cannot emit (see
//! [`crate::catalog`]: another version's metric, or a misspelt one) is not an error: it is
//! listed in [`Selection::unknown`], for the exporter to warn about once, and the rest of the
//! file applies. Malformed YAML, a label the metric does not have, or a bad regex (on any
//! entry, known or not) refuses the file, with its line.
//!
//! The exporter's own `reveal_exporter_*` metrics are always exposed, whatever the file says:
//! they say whether the rest is healthy.

use crate::catalog::{self, Metric};
use crate::Excerpt;
use regex::Regex;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Which series of one metric family to keep.
#[derive(Debug, Clone)]
pub enum Rule {
    /// Every series.
    All,
    /// Series matching any of these label matcher sets (each set: all its regexes match).
    Any(Vec<Vec<(&'static str, Regex)>>),
}

impl Rule {
    /// Whether a series with these label pairs is kept (a missing label reads as empty).
    pub fn keeps<S: AsRef<str>>(&self, labels: &[(&str, S)]) -> bool {
        match self {
            Rule::All => true,
            Rule::Any(sets) => sets.iter().any(|set| {
                set.iter().all(|(name, re)| {
                    let v = labels
                        .iter()
                        .find(|(n, _)| n == name)
                        .map_or("", |(_, v)| v.as_ref());
                    re.is_match(v)
                })
            }),
        }
    }
}

/// A parsed selection: a rule per selected metric, in file order.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    entries: Vec<(&'static Metric, Rule)>,
    /// Per metric, the labels its series are summed over (`sum:`), in file order.
    sums: Vec<(&'static str, Vec<&'static str>)>,
    /// Names the exporter cannot emit, in file order, each once.
    unknown: Vec<String>,
}

/// Why a selection file was refused.
#[derive(Debug, thiserror::Error)]
pub enum SelectionError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `msg` is yaml_serde's, which ends with the line and column.
    #[error("{path}: {msg}")]
    Invalid {
        path: PathBuf,
        line: Option<usize>,
        msg: String,
    },
}

impl Selection {
    pub fn load(path: &Path) -> Result<Selection, SelectionError> {
        let text = std::fs::read_to_string(path).map_err(|source| SelectionError::Read {
            path: path.to_owned(),
            source,
        })?;
        Selection::parse(&text).map_err(|e| SelectionError::Invalid {
            path: path.to_owned(),
            line: e.location().map(|l| l.line()),
            msg: crate::excerpt::library_message(&e),
        })
    }

    pub fn parse(text: &str) -> Result<Selection, yaml_serde::Error> {
        if let Some(line) = crate::nesting::too_deep(text) {
            return Err(serde::de::Error::custom(crate::nesting::message(line)));
        }
        let file: SelectionFile = yaml_serde::from_str(text)?;
        let mut sel = Selection::default();
        let mut unknown_seen = std::collections::HashSet::new();
        for entry in file.metrics {
            let metric = match entry.metric {
                Named::Known(m) => {
                    if let Some(labels) = entry.sum {
                        match sel.sums.iter_mut().find(|(n, _)| *n == m.name) {
                            Some((_, have)) if *have != labels => {
                                return Err(serde::de::Error::custom(format!(
                                    "{}: two different `sum` lists",
                                    m.name
                                )))
                            }
                            Some(_) => {}
                            None => sel.sums.push((m.name, labels)),
                        }
                    }
                    m
                }
                Named::Unknown(name) => {
                    if unknown_seen.insert(name.clone()) {
                        sel.unknown.push(name);
                    }
                    continue;
                }
            };
            let existing = sel
                .entries
                .iter_mut()
                .find(|(m, _)| m.name == metric.name)
                .map(|(_, r)| r);
            match (existing, entry.matchers) {
                (Some(Rule::All), _) => {}
                (Some(r), None) => *r = Rule::All,
                (Some(Rule::Any(sets)), Some(m)) => sets.push(m),
                (None, None) => sel.entries.push((metric, Rule::All)),
                (None, Some(m)) => sel.entries.push((metric, Rule::Any(vec![m]))),
            }
        }
        Ok(sel)
    }

    /// Whether any series of the metric (a sample name) is selected.
    pub fn wants(&self, name: &str) -> bool {
        self.rule(name).is_some()
    }

    /// The rule for a metric (a sample name); `None` means the metric is not exposed.
    pub fn rule(&self, name: &str) -> Option<&Rule> {
        self.entries
            .iter()
            .find(|(m, _)| m.name == name)
            .map(|(_, r)| r)
    }

    /// The labels a metric's series are summed over (`sum:`), if the file says so.
    pub fn sum_over(&self, name: &str) -> Option<&[&'static str]> {
        self.sums
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, l)| l.as_slice())
    }

    /// The selected sample names, in file order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.entries.iter().map(|(m, _)| m.name)
    }

    /// The names in the file that the exporter cannot emit (not in [`crate::catalog`]), in
    /// file order, each once. They select nothing.
    pub fn unknown(&self) -> &[String] {
        &self.unknown
    }

    /// The selected metrics with their rules, in file order.
    pub fn into_entries(self) -> impl Iterator<Item = (&'static Metric, Rule)> {
        self.entries.into_iter()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SelectionFile {
    metrics: Vec<Entry>,
}

struct Entry {
    metric: Named,
    /// `None` for every series; always `None` for an unknown metric (its patterns are checked,
    /// then dropped: they cannot match anything).
    matchers: Option<Vec<(&'static str, Regex)>>,
    /// `sum:`, the labels to sum over (checked against a known metric's labels).
    sum: Option<Vec<&'static str>>,
}

/// An entry's metric name, looked up in the catalog.
enum Named {
    Known(&'static Metric),
    /// A name no collector emits (another version's, or misspelt).
    Unknown(String),
}

fn resolve(name: String) -> Named {
    match catalog::find(&name) {
        Some(m) => Named::Known(m),
        None => Named::Unknown(name),
    }
}

/// The anchored regex of one `match` pattern; errors are raised while deserializing, so
/// yaml_serde attaches the line of the bad entry.
fn compile<E: de::Error>(label: &str, pattern: &str) -> Result<Regex, E> {
    if pattern.len() > MAX_PATTERN_LEN {
        return Err(E::custom(format!(
            "label {label:?}: a pattern of {} bytes; at most {MAX_PATTERN_LEN}",
            pattern.len(),
            label = Excerpt(label)
        )));
    }
    Regex::new(&format!("^(?:{pattern})$"))
        .map_err(|e| E::custom(format!("label {label:?}: {e}", label = Excerpt(label))))
}

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(EntryVisitor)
    }
}

struct EntryVisitor;

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = Entry;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a metric name, or a map with `name` and optional `match`")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Entry, E> {
        Ok(Entry {
            metric: resolve(v.to_string()),
            matchers: None,
            sum: None,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entry, A::Error> {
        let mut metric = None;
        let mut raw: Option<HashMap<String, String>> = None;
        let mut sum_raw: Option<Vec<String>> = None;
        while let Some(k) = map.next_key::<String>()? {
            match k.as_str() {
                "name" => metric = Some(resolve(map.next_value::<String>()?)),
                "match" => raw = Some(map.next_value()?),
                "sum" => sum_raw = Some(map.next_value()?),
                other => return Err(de::Error::unknown_field(other, &["name", "match", "sum"])),
            }
        }
        let metric = metric.ok_or_else(|| de::Error::missing_field("name"))?;
        let sum = match (&metric, sum_raw) {
            (Named::Known(known), Some(labels)) => {
                let mut out = Vec::new();
                for label in labels {
                    let l = known.labels.iter().find(|l| **l == label).ok_or_else(|| {
                        <A::Error as de::Error>::custom(format!(
                            "sum: {} has no label {label:?} (labels: {:?})",
                            known.name,
                            known.labels,
                            label = Excerpt(&label)
                        ))
                    })?;
                    out.push(*l);
                }
                Some(out)
            }
            _ => None,
        };
        let Some(raw) = raw else {
            return Ok(Entry {
                metric,
                matchers: None,
                sum,
            });
        };
        let mut raw: Vec<_> = raw.into_iter().collect();
        raw.sort();
        let mut m = Vec::new();
        for (label, pattern) in raw {
            // A known metric's labels are checked; an unknown one's cannot be.
            let known_label = match &metric {
                Named::Known(known) => {
                    Some(*known.labels.iter().find(|l| **l == label).ok_or_else(|| {
                        <A::Error as de::Error>::custom(format!(
                            "{} has no label {label:?} (labels: {:?})",
                            known.name,
                            known.labels,
                            label = Excerpt(&label)
                        ))
                    })?)
                }
                Named::Unknown(_) => None,
            };
            let re = compile::<A::Error>(&label, &pattern)?;
            if let Some(l) = known_label {
                m.push((l, re));
            }
        }
        let matchers = match metric {
            Named::Known(_) => Some(m),
            Named::Unknown(_) => None,
        };
        Ok(Entry {
            metric,
            matchers,
            sum,
        })
    }
}

/// Longest regular expression a selection (or an analyzer metric-set entry) may give: far
/// above any list of label values, far below what makes compiling it slow (a megabyte of
/// `|||…` took the regex compiler 40 s before it reached its size limit).
pub const MAX_PATTERN_LEN: usize = 4096;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sum_names_labels_of_the_metric() {
        let sel = Selection::parse(
            "metrics:\n  - name: reveal_cpu_softirqs_total\n    sum: [cpu]\n  \
             - reveal_cpu_time_seconds_total\n",
        )
        .unwrap();
        assert_eq!(
            sel.sum_over("reveal_cpu_softirqs_total"),
            Some(&["cpu"][..])
        );
        assert_eq!(sel.sum_over("reveal_cpu_time_seconds_total"), None);
        assert!(sel.wants("reveal_cpu_softirqs_total"));
        let (_, e) = refusal("metrics:\n  - name: reveal_cpu_softirqs_total\n    sum: [gpu]\n");
        assert!(e.contains("has no label \"gpu\""), "{e}");
        let (_, e) = refusal(
            "metrics:\n  - name: reveal_cpu_softirqs_total\n    sum: [cpu]\n  \
             - name: reveal_cpu_softirqs_total\n    sum: [type]\n",
        );
        assert!(e.contains("two different `sum` lists"), "{e}");
    }

    #[test]
    fn an_overlong_pattern_is_refused_before_it_is_compiled() {
        let long = "a|".repeat(MAX_PATTERN_LEN);
        let text = format!(
            "metrics:\n  - name: reveal_cpu_time_seconds_total\n    match: {{mode: \"{long}\"}}\n"
        );
        let e = Selection::parse(&text).unwrap_err().to_string();
        assert!(e.contains("at most 4096"), "{e}");
    }

    fn refusal(text: &str) -> (Option<usize>, String) {
        match Selection::parse(text) {
            Err(e) => (e.location().map(|l| l.line()), e.to_string()),
            Ok(s) => panic!("expected refusal, got {s:?}"),
        }
    }

    #[test]
    fn unknown_names_are_listed_once_and_the_rest_is_kept() {
        let sel = Selection::parse(
            "metrics:\n  - reveal_cpu_time_seconds_total\n  - reveal_cpu_tim_seconds_total\n  \
             - name: reveal_gpu_future_metric\n    match: {gpu: '0|1', anything: 'x'}\n  \
             - reveal_cpu_time_seconds\n  - reveal_cpu_tim_seconds_total\n",
        )
        .unwrap();
        assert_eq!(
            sel.unknown(),
            [
                "reveal_cpu_tim_seconds_total",
                "reveal_gpu_future_metric",
                "reveal_cpu_time_seconds"
            ]
        );
        assert_eq!(
            sel.names().collect::<Vec<_>>(),
            ["reveal_cpu_time_seconds_total"]
        );
        assert!(!sel.wants("reveal_gpu_future_metric"));
        let all_known = Selection::parse("metrics: [reveal_cpu_forks_total]\n").unwrap();
        assert!(all_known.unknown().is_empty());
    }

    #[test]
    fn labels_regexes_and_malformed_yaml_are_refused_with_their_line() {
        let (line, msg) = refusal(
            "metrics:\n  - reveal_cpu_forks_total\n  - name: reveal_cpu_time_seconds_total\n    \
             match: {cpuu: '0'}\n",
        );
        assert!(matches!(line, Some(3 | 4)), "{line:?} {msg}");
        assert!(msg.contains("cpuu"), "{msg}");
        let (_, msg) = refusal(
            "metrics:\n  - name: reveal_cpu_time_seconds_total\n    match: {mode: '(user'}\n",
        );
        assert!(msg.contains("mode"), "{msg}");
        // An unknown metric's patterns are still checked: the file is wrong whatever the
        // exporter's version.
        let (line, msg) = refusal(
            "metrics:\n  - reveal_cpu_forks_total\n  - name: reveal_no_such_total\n    \
             match: {device: 'sd[a'}\n",
        );
        assert!(matches!(line, Some(3 | 4)), "{line:?} {msg}");
        assert!(msg.contains("device"), "{msg}");
        let (line, _) = refusal("metrics:\n  - reveal_cpu_forks_total\n   - oops: [\n");
        assert!(line.is_some());
        let (line, msg) = refusal("metric:\n  - reveal_cpu_forks_total\n");
        assert_eq!(line, Some(1), "{msg}");
        assert!(msg.contains("`metric`"), "{msg}");
    }

    #[test]
    fn entries_for_one_name_are_alternatives_and_a_bare_name_takes_all() {
        let sel = Selection::parse(
            "metrics:\n  - name: reveal_cpu_time_seconds_total\n    match: {mode: user}\n  \
             - name: reveal_cpu_time_seconds_total\n    match: {mode: 'sys.*'}\n  \
             - reveal_cpu_context_switches_total\n",
        )
        .unwrap();
        assert_eq!(
            sel.names().collect::<Vec<_>>(),
            [
                "reveal_cpu_time_seconds_total",
                "reveal_cpu_context_switches_total"
            ]
        );
        let rule = sel.rule("reveal_cpu_time_seconds_total").unwrap();
        assert!(rule.keeps(&[("cpu", "0"), ("mode", "user")]));
        assert!(rule.keeps(&[("mode", "system")]));
        assert!(!rule.keeps(&[("mode", "users")]));
        assert!(!rule.keeps::<&str>(&[]));
        assert!(sel.wants("reveal_cpu_context_switches_total"));
        assert!(!sel.wants("reveal_cpu_forks_total"));

        let sel = Selection::parse(
            "metrics:\n  - name: reveal_cpu_time_seconds_total\n    match: {mode: user}\n  \
             - reveal_cpu_time_seconds_total\n",
        )
        .unwrap();
        let rule = sel.rule("reveal_cpu_time_seconds_total").unwrap();
        assert!(matches!(rule, Rule::All));
    }
}
