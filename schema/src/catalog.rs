//! The exporter's metrics as data: sample names (as they appear in the exposition, counters
//! ending in `_total`) and label names, in the order the exporter lists them.
//!
//! The table in `catalog/table.rs` is generated from the exporter's descriptors. The
//! exporter's test `schema_catalog` fails when they differ; regenerate the table with
//! `REVEAL_BLESS=1 cargo nextest run -p reveal-exporter --test schema_catalog`.

mod table;

/// One metric family the exporter can emit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// The sample name, as in the exposition (`reveal_cpu_time_seconds_total`).
    pub name: &'static str,
    /// Label names, in the order the exporter emits them.
    pub labels: &'static [&'static str],
}

/// Every metric family the exporter can emit: its collectors' and its own
/// (`reveal_exporter_*`, `process_*`).
pub static METRICS: &[Metric] = table::METRICS;

/// Whether a sample or family name is one of the exporter's (or the analyzer's) own
/// metrics — `reveal_exporter_*`, `reveal_analyzer_*` and the `process_*` families of
/// Prometheus' client libraries — which describe the program, not the host it watches.
pub fn is_self_metric(name: &str) -> bool {
    name.starts_with("reveal_exporter_")
        || name.starts_with("reveal_analyzer_")
        || name.starts_with("process_")
}

/// The metric with this sample name, if the exporter can emit it.
pub fn find(name: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_known_ones_are_found() {
        let mut names: Vec<&str> = METRICS.iter().map(|m| m.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "duplicate metric names in the catalog");
        let m = find("reveal_cpu_time_seconds_total").unwrap();
        assert!(m.labels.contains(&"mode"), "{m:?}");
        assert!(find("reveal_exporter_build_info").is_some());
        assert!(find("reveal_cpu_time_seconds").is_none());
        assert!(find("process_cpu_seconds_total").is_some());
    }

    #[test]
    fn self_metrics_are_the_programs() {
        for own in [
            "reveal_exporter_build_info",
            "reveal_analyzer_lag_seconds",
            "process_open_fds",
        ] {
            assert!(is_self_metric(own), "{own}");
        }
        assert!(!is_self_metric("reveal_cpu_time_seconds_total"));
        assert!(!is_self_metric("node_processes_threads"));
    }
}
