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

    /// The selected sample names, in file order.
    pub fn names(&self) -> &[String] {
        &self.names
    }
}
