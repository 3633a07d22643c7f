//! The metric selection (`--metrics.selection FILE`): which metrics, and which of their series,
//! the exporter exposes (paper §4.1's pruned set; the analyzer's `prune` command writes it).
//!
//! The file format, its checks and the matching rules are `reveal_schema::selection`, shared
//! with the analyzer; this wrapper asks it about the exporter's descriptors.
//!
//! Collectors none of whose metrics are selected are not built at all (no file reads, no perf
//! counters opened); the others are filtered when the exposition is encoded (the runner
//! resolves the rules per descriptor once, at start). The exporter's own `reveal_exporter_*`
//! metrics are always exposed: they say whether the rest is healthy.
//!
//! Names the exporter cannot emit (a selection written for another version, a typo) select
//! nothing: the exporter says so once at start ([`Selection::unknown_warning`]) and serves
//! the rest. Malformed YAML, unknown labels and bad regexes refuse the file.

use crate::scrape::Desc;
use std::path::Path;

pub use reveal_schema::selection::{Rule, SelectionError};

/// A loaded selection.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    inner: reveal_schema::selection::Selection,
    names: Vec<String>,
}

impl From<reveal_schema::selection::Selection> for Selection {
    fn from(inner: reveal_schema::selection::Selection) -> Self {
        let names = inner.names().map(str::to_string).collect();
        Selection { inner, names }
    }
}

impl Selection {
    pub fn load(path: &Path) -> Result<Selection, SelectionError> {
        reveal_schema::selection::Selection::load(path).map(Selection::from)
    }

    pub fn parse(text: &str) -> Result<Selection, yaml_serde::Error> {
        reveal_schema::selection::Selection::parse(text).map(Selection::from)
    }

    /// Whether any series of the family is selected.
    pub fn wants(&self, desc: &Desc) -> bool {
        self.inner.wants(&desc.sample_name())
    }

    /// The rule for a family; `None` means the family is not exposed.
    pub fn rule(&self, desc: &Desc) -> Option<&Rule> {
        self.inner.rule(&desc.sample_name())
    }

    /// The labels the family's series are summed over (`sum:`), if the file says so.
    pub fn sum_over(&self, desc: &Desc) -> Option<&[&'static str]> {
        self.inner.sum_over(&desc.sample_name())
    }

    /// The selected sample names, in file order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Names in the file that no collector emits, in file order, each once.
    pub fn unknown(&self) -> &[String] {
        self.inner.unknown()
    }

    /// The start-up warning about [`Selection::unknown`], one line naming them all; `None`
    /// when every name is known.
    pub fn unknown_warning(&self) -> Option<String> {
        let unknown = self.unknown();
        if unknown.is_empty() {
            return None;
        }
        Some(format!(
            "the selection names {} metric(s) this exporter does not have, which select nothing \
             (written for another version, or misspelt; reveal-exporter --print-metrics lists \
             every name, counters end in _total): {}; the other {} metric(s) of the file apply",
            unknown.len(),
            unknown.join(", "),
            self.names.len()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_warning_names_every_unknown_metric() {
        let sel = Selection::parse(
            "metrics:\n  - reveal_cpu_forks_total\n  - reveal_cpu_nope_total\n  \
             - name: reveal_gpu_later_metric\n    match: {gpu: '0'}\n",
        )
        .unwrap();
        let w = sel.unknown_warning().unwrap();
        assert!(
            w.contains("names 2 metric(s)")
                && w.contains(": reveal_cpu_nope_total, reveal_gpu_later_metric;")
                && w.contains("the other 1 metric(s) of the file apply"),
            "{w}"
        );
        assert!(!w.contains('\n'), "one line: {w}");
        let known = Selection::parse("metrics: [reveal_cpu_forks_total]\n").unwrap();
        assert_eq!(known.unknown_warning(), None);
    }
}
