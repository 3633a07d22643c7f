//! Which of the generated entries read series the stack stores every 100 ms, and over what
//! range the others' counters are read.
//!
//! The stack scrapes the exporter at two cadences (docs/metric-selection.md, "Two cadences"):
//! what `--metrics.fast` names every 100 ms, the rest every 15 s. A counter stored every 15 s
//! has no two samples in a second, so `rate(x[1s])` finds nothing between scrapes and the
//! entry adds no channel; read as `rate(x[30s])` (two scrapes) it is a channel that moves
//! every 15 s. Gauges need nothing: a bare selector holds a series' last sample.

use reveal_schema::selection::Selection;

/// The range of counters the fast page serves.
pub const FAST_RANGE: &str = "1s";
/// The default range of the others: two scrapes of the stack's 15 s job.
pub const SLOW_RANGE: &str = "30s";

/// How the generated entries read counters.
#[derive(Debug, Clone, Copy)]
pub struct Cadence<'a> {
    /// The exporter's `--metrics.fast` selection; `None` reads every counter over
    /// [`FAST_RANGE`], as for a stack that stores everything every 100 ms.
    pub fast: Option<&'a Selection>,
    /// The range of counters the fast page does not serve.
    pub slow_range: &'a str,
}

impl Default for Cadence<'_> {
    fn default() -> Self {
        Cadence {
            fast: None,
            slow_range: SLOW_RANGE,
        }
    }
}

impl Cadence<'_> {
    /// Whether the fast page serves every kept kind of series of `metric` as the entry reads
    /// it. `kinds` are the kept kinds' labels, without the labels naming a device or host
    /// (those the entry reads on every device); a metric the page serves summed over one of
    /// the kinds' own labels is not served as the entry reads it.
    pub fn serves_fast(&self, metric: &str, kinds: &[Vec<(String, String)>]) -> bool {
        let Some(sel) = self.fast else {
            return true;
        };
        let Some(rule) = sel.rule(metric) else {
            return false;
        };
        let summed = sel.sum_over(metric).unwrap_or(&[]);
        kinds.iter().all(|kind| {
            let pairs: Vec<(&str, &str)> =
                kind.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            rule.keeps(&pairs) && !kind.iter().any(|(k, _)| summed.contains(&k.as_str()))
        })
    }

    /// The range a counter entry of `metric` reads over.
    pub fn range(&self, metric: &str, kinds: &[Vec<(String, String)>]) -> &str {
        if self.serves_fast(metric, kinds) {
            FAST_RANGE
        } else {
            self.slow_range
        }
    }
}

/// Refuses a `--slow-range` that is not a PromQL duration of one unit (`30s`, `1m`). That it
/// spans two of the slow job's scrapes is the caller's to know.
pub fn check_range(range: &str) -> Result<(), String> {
    let (num, unit) = range.split_at(
        range
            .trim_end_matches(|c: char| c.is_ascii_alphabetic())
            .len(),
    );
    let ok = !num.is_empty()
        && num.bytes().all(|b| b.is_ascii_digit())
        && num.parse::<u64>().is_ok_and(|n| n > 0)
        && matches!(unit, "ms" | "s" | "m" | "h");
    if ok {
        Ok(())
    } else {
        Err(format!(
            "--slow-range {range:?} is not a PromQL duration such as 30s or 1m"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(list: &[&[(&str, &str)]]) -> Vec<Vec<(String, String)>> {
        list.iter()
            .map(|k| {
                k.iter()
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .collect()
            })
            .collect()
    }

    const FAST: &str = "metrics:\n  - name: reveal_cpu_softirqs_total\n    sum: [cpu]\n  - name: reveal_memory_vmstat_events_total\n    match: {event: 'pgfault|pgmajfault'}\n  - reveal_network_receive_bytes_total\n  - name: reveal_gpu_ecc_errors_total\n    sum: [location]\n";

    #[test]
    fn counters_off_the_fast_page_are_read_over_the_slow_range() {
        let sel = Selection::parse(FAST).unwrap();
        let c = Cadence {
            fast: Some(&sel),
            slow_range: "30s",
        };
        // Served whole, or summed over the CPU (a label no kind carries).
        assert_eq!(
            c.range("reveal_network_receive_bytes_total", &kinds(&[&[]])),
            "1s"
        );
        assert_eq!(
            c.range(
                "reveal_cpu_softirqs_total",
                &kinds(&[&[("type", "NET_RX")]])
            ),
            "1s"
        );
        // Some kinds on the fast page and one not: the entry reads them all, so slow.
        let vm = kinds(&[&[("event", "pgfault")], &[("event", "pswpin")]]);
        assert_eq!(c.range("reveal_memory_vmstat_events_total", &vm), "30s");
        assert_eq!(c.range("reveal_memory_vmstat_events_total", &vm[..1]), "1s");
        // Not on the fast page at all.
        assert_eq!(
            c.range("reveal_storage_flushes_completed_total", &kinds(&[&[]])),
            "30s"
        );
        // Summed over one of the kinds' own labels: the per-location series are slow.
        let ecc = kinds(&[&[("location", "sram")]]);
        assert_eq!(c.range("reveal_gpu_ecc_errors_total", &ecc), "30s");
    }

    #[test]
    fn without_a_fast_selection_every_counter_is_fast() {
        let c = Cadence::default();
        assert_eq!(
            c.range("reveal_storage_flushes_completed_total", &kinds(&[&[]])),
            "1s"
        );
    }

    #[test]
    fn slow_ranges_are_promql_durations() {
        for ok in ["30s", "1m", "45s", "500ms"] {
            assert!(check_range(ok).is_ok(), "{ok}");
        }
        for bad in ["", "30", "s", "0s", "1.5m", "30 s", "-30s", "30d0"] {
            assert!(check_range(bad).is_err(), "{bad}");
        }
    }
}
