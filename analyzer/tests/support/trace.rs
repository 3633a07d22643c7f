//! Real recordings of this project's test machine with real faults in them (`fixtures/real/`,
//! `fixtures/busy/`): a gzipped CSV of the metric set at the analyzer's step, the metric set
//! that gives each column its subsystem and kind, and the faults' times.

use std::io::Read;
use std::path::{Path, PathBuf};

use reveal_analyzer::core::matrix::HostMatrix;
use reveal_analyzer::ingest::csv::parse_csv;
use reveal_analyzer::ingest::kinds::MetricSet;
use reveal_analyzer::ingest::SourceOptions;

/// One fault of a recording.
pub struct Fault {
    pub name: String,
    pub start_ms: i64,
    pub end_ms: i64,
}

/// `tests/fixtures/NAME`.
pub fn fixture_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The one host of `dir`'s `trace.csv.gz` (read with `metric-set.yml`) and the faults of its
/// `faults.json`.
pub fn load(dir: &Path) -> (HostMatrix, Vec<Fault>) {
    let mut text = String::new();
    let gz = std::fs::File::open(dir.join("trace.csv.gz")).expect("fixture trace.csv.gz");
    flate2::read::GzDecoder::new(gz)
        .read_to_string(&mut text)
        .expect("gzip CSV");
    let metric_set = MetricSet::load(&dir.join("metric-set.yml")).expect("metric-set.yml");
    let opts = SourceOptions {
        metric_set,
        ..SourceOptions::default()
    };
    let mut hosts = parse_csv(&text, &opts).expect("trace parses");
    assert_eq!(hosts.len(), 1, "the recording holds one host");
    let faults: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("faults.json")).unwrap()).unwrap();
    let faults = faults["faults"]
        .as_array()
        .expect("faults.json: faults")
        .iter()
        .map(|f| Fault {
            name: f["name"].as_str().unwrap().to_string(),
            start_ms: f["start_ms"].as_i64().unwrap(),
            end_ms: f["end_ms"].as_i64().unwrap(),
        })
        .collect();
    (hosts.remove(0), faults)
}
