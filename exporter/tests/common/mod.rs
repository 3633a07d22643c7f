//! Helpers shared by the exporter's integration tests: fixture trees, rendering, and a small
//! reader of the text exposition format.
#![allow(dead_code)] // each test binary uses a different subset

use reveal_exporter::collectors::{Settings, COLLECTORS};
use reveal_exporter::paths::Paths;
use reveal_exporter::runner::{Format, Runner};
use std::path::PathBuf;

/// Sample names whose values change from run to run, left out of golden comparisons.
/// Their HELP and TYPE lines stay, so the families are still checked.
pub const NONDETERMINISTIC: &[&str] = &[
    // Wall-clock time of each collector's update.
    "reveal_exporter_collector_duration_seconds",
    // Carries the crate version, which would churn every golden file on a release.
    "reveal_exporter_build_info",
];

/// The root of a fixture tree under `tests/fixtures/`.
pub fn fixture(tree: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(tree)
}

/// Renders one scrape of `tree` in the Prometheus text format with every collector enabled.
pub fn render_tree(tree: &str) -> String {
    let root = fixture(tree);
    assert!(root.is_dir(), "no fixture tree {}", root.display());
    let names: Vec<&str> = COLLECTORS.iter().map(|e| e.name).collect();
    let settings = Settings {
        paths: Paths::new(root.join("proc"), root.join("sys")),
        ..Default::default()
    };
    let runner = Runner::new(&names, &settings).expect("every table name is known");
    runner.render_as(Format::Text)
}

/// Drops the sample lines of [`NONDETERMINISTIC`] families.
pub fn strip_nondeterministic(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let name = line.split(['{', ' ']).next().unwrap_or("");
        if !line.starts_with('#') && NONDETERMINISTIC.contains(&name) {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// One sample line of the text format.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Sample {
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses the sample lines of a text exposition; panics (this is a test helper) on a line it
/// cannot read, so a malformed exposition fails the test that reads it.
pub fn exposition_samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| parse_sample(l).unwrap_or_else(|| panic!("unreadable sample line: {l:?}")))
        .collect()
}

fn parse_sample(line: &str) -> Option<Sample> {
    let name_end = line.find(['{', ' '])?;
    let name = line[..name_end].to_string();
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(r) = rest.strip_prefix('{') {
        rest = r;
        loop {
            rest = rest.trim_start_matches(',');
            if let Some(r) = rest.strip_prefix('}') {
                rest = r;
                break;
            }
            let eq = rest.find('=')?;
            let key = rest[..eq].to_string();
            rest = rest[eq + 1..].strip_prefix('"')?;
            let mut val = String::new();
            let mut chars = rest.char_indices();
            let end = loop {
                let (i, c) = chars.next()?;
                match c {
                    '\\' => match chars.next()?.1 {
                        'n' => val.push('\n'),
                        other => val.push(other),
                    },
                    '"' => break i,
                    c => val.push(c),
                }
            };
            rest = &rest[end + 1..];
            labels.push((key, val));
        }
    }
    let mut fields = rest.split_ascii_whitespace();
    let value = match fields.next()? {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some(Sample {
        name,
        labels,
        value,
    })
}
