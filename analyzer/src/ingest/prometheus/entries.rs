//! Metric-set entries that return no series.
//!
//! An entry whose query returns nothing is not an error: a metric this cluster does not have
//! (GPUs, InfiniBand), one an exporter's selection leaves out, or one that appears later. It
//! is counted in every pass, and said once when it becomes empty and once when it returns
//! series again, not in every pass. A series that appears later is in the next pass's query
//! like any new series (the source keeps no list of the series it expects).

use crate::ingest::kinds::MetricSpec;

/// Which entries returned no series, pass after pass.
#[derive(Debug, Default, Clone)]
pub struct EmptyEntries {
    /// Per entry: whether it was empty in the latest pass; `None` before its first pass.
    empty: Vec<Option<bool>>,
}

/// What changed in one pass.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EmptyChanges {
    /// Entries empty now that had series before, or empty in their first pass.
    pub became_empty: Vec<usize>,
    /// Entries with series now that were empty in the pass before.
    pub returned: Vec<usize>,
    /// Entries empty in this pass.
    pub empty_now: usize,
}

impl EmptyEntries {
    /// Takes one pass's series count per entry (in metric-set order).
    pub fn update(&mut self, series_per_entry: &[usize]) -> EmptyChanges {
        self.empty.resize(series_per_entry.len(), None);
        let mut c = EmptyChanges::default();
        for (i, &n) in series_per_entry.iter().enumerate() {
            let now = n == 0;
            match (self.empty[i], now) {
                (Some(true), false) => c.returned.push(i),
                (None | Some(false), true) => c.became_empty.push(i),
                _ => {}
            }
            self.empty[i] = Some(now);
            c.empty_now += usize::from(now);
        }
        c
    }
}

/// `metrics.3 (expr), metrics.7 (expr)` for a log line; runs of white space in an
/// expression (a multi-line PromQL block) become one space.
pub fn describe(specs: &[MetricSpec], entries: &[usize]) -> String {
    entries
        .iter()
        .map(|&i| {
            let expr = specs.get(i).map_or("?", |s| s.expr.as_str());
            format!(
                "metrics.{i} ({})",
                expr.split_whitespace().collect::<Vec<_>>().join(" ")
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_change_is_reported_once() {
        let mut e = EmptyEntries::default();
        // First pass: the empty entries are reported, the others are not "returned".
        let c = e.update(&[3, 0, 1, 0]);
        assert_eq!(c.became_empty, [1, 3]);
        assert!(c.returned.is_empty());
        assert_eq!(c.empty_now, 2);
        // Nothing changed: nothing to say, the count stays.
        assert_eq!(
            e.update(&[5, 0, 1, 0]),
            EmptyChanges {
                empty_now: 2,
                ..Default::default()
            }
        );
        // A series appears on entry 1, entry 2 loses its only one.
        let c = e.update(&[5, 1, 0, 0]);
        assert_eq!(
            (c.became_empty, c.returned, c.empty_now),
            (vec![2], vec![1], 2)
        );
        let c = e.update(&[5, 1, 0, 0]);
        assert!(c.became_empty.is_empty() && c.returned.is_empty());
        let c = e.update(&[5, 1, 2, 2]);
        assert_eq!(
            (c.became_empty, c.returned, c.empty_now),
            (vec![], vec![2, 3], 0)
        );
    }

    #[test]
    fn describes_entries_by_key_path_and_expression() {
        let spec = |expr: &str| MetricSpec {
            expr: expr.into(),
            name: None,
            subsystem: "gpu".into(),
            kind: None,
            resolution: None,
            device_label: None,
            max_rate: None,
        };
        let specs = [
            spec("up"),
            spec("sum by (instance) (\n  rate(x_total[1s])\n)"),
        ];
        assert_eq!(
            describe(&specs, &[0, 1]),
            "metrics.0 (up), metrics.1 (sum by (instance) ( rate(x_total[1s]) ))"
        );
    }
}
