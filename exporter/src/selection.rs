//! The metric selection (`--metrics.selection FILE`): which metrics, and which of their series,
//! the exporter exposes (paper §4.1's pruned set; the analyzer's `prune` command writes it).
//!
//! ```yaml
//! metrics:
//!   - reveal_cpu_instructions_total            # every series of the metric
//!   - name: reveal_cpu_time_seconds_total      # only the series whose labels match
//!     match: {mode: "user|system"}             # regexes, anchored at both ends
//! ```
//! Names are sample names, as they appear in the exposition. Several entries for one name are
//! alternatives (a series is kept if any matches). A name no collector can emit, a label the
//! metric does not have, or a bad regex refuses the file at start, with its line.
//!
//! Collectors none of whose metrics are selected are not built at all (no file reads, no perf
//! counters opened); the others are filtered when the exposition is encoded. The exporter's
//! own `reveal_exporter_*` metrics are always exposed: they say whether the rest is healthy.

use crate::collectors::COLLECTORS;
use crate::scrape::{Desc, Labels};
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
    pub fn keeps(&self, labels: &Labels) -> bool {
        match self {
            Rule::All => true,
            Rule::Any(sets) => sets.iter().any(|set| {
                set.iter().all(|(name, re)| {
                    let v = labels
                        .iter()
                        .find(|(n, _)| n == name)
                        .map_or("", |(_, v)| v.as_str());
                    re.is_match(v)
                })
            }),
        }
    }
}

/// A loaded selection, keyed by the descriptor (descriptors are statics, so their address is
/// a stable, allocation-free key for the per-scrape lookup).
#[derive(Debug, Clone, Default)]
pub struct Selection {
    rules: HashMap<usize, Rule>,
    names: Vec<String>,
}

fn key(desc: &Desc) -> usize {
    desc as *const Desc as usize
}

/// Every metric family a collector can emit, plus the runner's own.
pub fn known_descs() -> impl Iterator<Item = &'static Desc> {
    COLLECTORS
        .iter()
        .flat_map(|e| e.metrics.iter().copied())
        .chain(crate::runner::SELF_METRICS.iter().copied())
}

fn find_desc(sample_name: &str) -> Option<&'static Desc> {
    known_descs().find(|d| d.sample_name() == sample_name)
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
    /// `msg` is serde_yaml's, which ends with the line and column.
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
            msg: e.to_string(),
        })
    }

    pub fn parse(text: &str) -> Result<Selection, serde_yaml::Error> {
        let file: SelectionFile = serde_yaml::from_str(text)?;
        let mut sel = Selection::default();
        for entry in file.metrics {
            let k = key(entry.desc);
            if !sel.names.iter().any(|n| *n == entry.desc.sample_name()) {
                sel.names.push(entry.desc.sample_name());
            }
            match (sel.rules.get_mut(&k), entry.matchers) {
                (Some(Rule::All), _) => {}
                (Some(r), None) => *r = Rule::All,
                (Some(Rule::Any(sets)), Some(m)) => sets.push(m),
                (None, None) => {
                    sel.rules.insert(k, Rule::All);
                }
                (None, Some(m)) => {
                    sel.rules.insert(k, Rule::Any(vec![m]));
                }
            }
        }
        Ok(sel)
    }

    /// Whether any series of the family is selected.
    pub fn wants(&self, desc: &Desc) -> bool {
        self.rules.contains_key(&key(desc))
    }

    /// The rule for a family; `None` means the family is not exposed.
    pub fn rule(&self, desc: &Desc) -> Option<&Rule> {
        self.rules.get(&key(desc))
    }

    /// The selected sample names, in file order.
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SelectionFile {
    metrics: Vec<Entry>,
}

struct Entry {
    desc: &'static Desc,
    matchers: Option<Vec<(&'static str, Regex)>>,
}

/// Checks a name while deserializing, so serde_yaml attaches the line of the bad entry.
fn resolve<E: de::Error>(name: &str) -> Result<&'static Desc, E> {
    find_desc(name).ok_or_else(|| {
        E::custom(format!(
            "unknown metric {name:?}: no collector emits it (see reveal-exporter --print-metrics; \
             counters end in _total)"
        ))
    })
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
            desc: resolve(v)?,
            matchers: None,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entry, A::Error> {
        let mut desc = None;
        let mut raw: Option<HashMap<String, String>> = None;
        while let Some(k) = map.next_key::<String>()? {
            match k.as_str() {
                "name" => desc = Some(resolve(&map.next_value::<String>()?)?),
                "match" => raw = Some(map.next_value()?),
                other => return Err(de::Error::unknown_field(other, &["name", "match"])),
            }
        }
        let desc: &'static Desc = desc.ok_or_else(|| de::Error::missing_field("name"))?;
        let matchers = match raw {
            None => None,
            Some(raw) => {
                let mut m = Vec::new();
                let mut raw: Vec<_> = raw.into_iter().collect();
                raw.sort();
                for (label, pattern) in raw {
                    let Some(&l) = desc.labels.iter().find(|l| **l == label) else {
                        return Err(de::Error::custom(format!(
                            "{} has no label {label:?} (labels: {:?})",
                            desc.sample_name(),
                            desc.labels
                        )));
                    };
                    let re = Regex::new(&format!("^(?:{pattern})$"))
                        .map_err(|e| de::Error::custom(format!("label {label:?}: {e}")))?;
                    m.push((l, re));
                }
                Some(m)
            }
        };
        Ok(Entry { desc, matchers })
    }
}
