//! Which of the generated entries read series the stack stores every 100 ms, and what becomes
//! of the others.
//!
//! The stack scrapes the exporter at two cadences (docs/metric-selection.md, "Two cadences"):
//! what `--metrics.fast` names every 100 ms, the rest every 15 s. A counter stored every 15 s
//! has no two samples in a second, so `rate(x[1s])` finds nothing between scrapes. Read over
//! two scrapes (`rate(x[30s])`) it is a channel that moves every 15 s and holds each move for
//! 30 s: in the 3 s windows the analyzer scores every second, a one-second burst of disk reads
//! is thirty windows of "mean level higher". Replayed on run 33's recording, the 29 such
//! entries of the pruned set were what made it worse than the default (CPU saturation found at
//! 10.9 s instead of 7.9 s, resolves up to 28 s, 1.39 % of quiet windows flagged against
//! 0.83 %); without them it found every fault as fast and flagged 0.33 %
//! (docs/evaluation/history.md, "Run 33 replayed"). So by default the entries of metrics the
//! fast page does not serve, counters and gauges, are left out of the metric set and listed in
//! a comment: the window model scores what is stored every 100 ms. `--slow-range` reads the
//! counters over that range instead and keeps the gauges (the stack stores every series at
//! 100 ms, or the user wants them scored anyway).

use reveal_schema::selection::Selection;

/// The range of counters the fast page serves.
pub const FAST_RANGE: &str = "1s";

/// How the generated entries read counters.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cadence<'a> {
    /// The exporter's `--metrics.fast` selection; `None` reads every counter over
    /// [`FAST_RANGE`], as for a stack that stores everything every 100 ms.
    pub fast: Option<&'a Selection>,
    /// The range of counters the fast page does not serve; `None` leaves the entries of
    /// metrics it does not serve out (see the module docs).
    pub slow_range: Option<&'a str>,
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

    /// Whether the metric set watches `metric` (its kept kinds `kinds`): served by the fast
    /// page, or given a slow range.
    pub fn watches(&self, metric: &str, kinds: &[Vec<(String, String)>]) -> bool {
        self.slow_range.is_some() || self.serves_fast(metric, kinds)
    }

    /// The range a counter entry of `metric` reads over; `None` when it is not watched.
    pub fn range(&self, metric: &str, kinds: &[Vec<(String, String)>]) -> Option<&str> {
        if self.serves_fast(metric, kinds) {
            Some(FAST_RANGE)
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
            slow_range: Some("30s"),
        };
        // Served whole, or summed over the CPU (a label no kind carries).
        assert_eq!(
            c.range("reveal_network_receive_bytes_total", &kinds(&[&[]])),
            Some("1s")
        );
        assert_eq!(
            c.range(
                "reveal_cpu_softirqs_total",
                &kinds(&[&[("type", "NET_RX")]])
            ),
            Some("1s")
        );
        // Some kinds on the fast page and one not: the entry reads them all, so slow.
        let vm = kinds(&[&[("event", "pgfault")], &[("event", "pswpin")]]);
        assert_eq!(
            c.range("reveal_memory_vmstat_events_total", &vm),
            Some("30s")
        );
        assert_eq!(
            c.range("reveal_memory_vmstat_events_total", &vm[..1]),
            Some("1s")
        );
        // Not on the fast page at all.
        assert_eq!(
            c.range("reveal_storage_flushes_completed_total", &kinds(&[&[]])),
            Some("30s")
        );
        // Summed over one of the kinds' own labels: the per-location series are slow.
        let ecc = kinds(&[&[("location", "sram")]]);
        assert_eq!(c.range("reveal_gpu_ecc_errors_total", &ecc), Some("30s"));
        assert!(c.watches("reveal_memory_mapped_bytes", &kinds(&[&[]])));
    }

    #[test]
    fn without_a_slow_range_what_the_fast_page_does_not_serve_is_not_watched() {
        let sel = Selection::parse(FAST).unwrap();
        let c = Cadence {
            fast: Some(&sel),
            slow_range: None,
        };
        let whole = kinds(&[&[]]);
        assert_eq!(
            c.range("reveal_network_receive_bytes_total", &whole),
            Some("1s")
        );
        assert!(c.watches("reveal_network_receive_bytes_total", &whole));
        assert_eq!(
            c.range("reveal_storage_flushes_completed_total", &whole),
            None
        );
        assert!(!c.watches("reveal_storage_flushes_completed_total", &whole));
        assert!(
            !c.watches("reveal_memory_mapped_bytes", &whole),
            "a slow gauge"
        );
        let vm = kinds(&[&[("event", "pgfault")], &[("event", "pswpin")]]);
        assert!(!c.watches("reveal_memory_vmstat_events_total", &vm));
        assert!(c.watches("reveal_memory_vmstat_events_total", &vm[..1]));
    }

    #[test]
    fn without_a_fast_selection_every_counter_is_fast() {
        let c = Cadence::default();
        let whole = kinds(&[&[]]);
        assert_eq!(
            c.range("reveal_storage_flushes_completed_total", &whole),
            Some("1s")
        );
        assert!(c.watches("reveal_memory_mapped_bytes", &whole));
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
