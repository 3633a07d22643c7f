//! Virtual memory event counters from `/proc/vmstat`: page faults, swap in/out, reclaim scans
//! and steals, compaction, THP and NUMA balancing events.
//!
//! Format (one `name value` pair per line; the kernel documents the file only by its source,
//! `mm/vmstat.c` `vmstat_text`, see <https://docs.kernel.org/admin-guide/mm/concepts.html>):
//! ```text
//! nr_free_pages 988172
//! pgfault 2195731
//! pgscan_kswapd 0
//! ```
//! Every key that does not start with `nr_` is a monotonically increasing event count and is
//! exposed as `reveal_memory_vmstat_events_total{event}`. The `nr_*` keys are point-in-time page
//! counts (gauges) that duplicate `/proc/meminfo`, which the meminfo collector exposes in bytes,
//! so they are left out here. The few non-`nr_` keys that are levels, not counters, are
//! listed in `NOT_EVENTS` and skipped too.

use super::{Collector, Settings};
use crate::error::Excerpt;
use crate::error::{CollectError, ParseError};
use crate::read::KeptFile;
use crate::scrape::{Desc, Scrape, Unit};

pub static EVENTS: Desc = Desc::counter(
    "reveal_memory_vmstat_events",
    Unit::None,
    &["event"],
    "Virtual memory events since boot from /proc/vmstat (label event: the kernel's name, e.g. \
     pgfault, pgmajfault, pswpin, pgscan_kswapd, pgsteal_direct, thp_fault_alloc).",
);

pub static METRICS: &[&Desc] = &[&EVENTS];

/// Keys without the `nr_` prefix that are levels or thresholds, not event counts.
const NOT_EVENTS: &[&str] = &["workingset_nodes"];

/// Parses `/proc/vmstat` into its event counters (keys not starting with `nr_`), in file order.
pub fn parse_vmstat(text: &str) -> Result<Vec<(&str, u64)>, ParseError> {
    let mut events = Vec::with_capacity(128);
    parse_vmstat_selected(text, |_| true, &mut events)?;
    Ok(events)
}

/// [`parse_vmstat`] of the keys `keep` selects, events appended to `events`. A line is read up
/// to its key; its value is parsed, and checked, only where `keep` selects the key (the 100 ms
/// page serves seven of the file's 180 keys, and no `nr_` key).
pub fn parse_vmstat_selected<'a>(
    text: &'a str,
    keep: impl Fn(&str) -> bool,
    events: &mut Vec<(&'a str, u64)>,
) -> Result<(), ParseError> {
    let mut lines = 0usize;
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let mut it = line.split_ascii_whitespace();
        let Some(key) = it.next() else { continue };
        lines += 1;
        if !keep(key) {
            continue;
        }
        let (Some(value), None) = (it.next(), it.next()) else {
            return Err(ParseError::new(
                lineno,
                format!("expected 'name value', got {line:?}", line = Excerpt(line)),
            ));
        };
        if key.starts_with("nr_") || NOT_EVENTS.contains(&key) {
            // Gauges may be transiently negative (per-CPU drift); still check they are numbers.
            value.parse::<i64>().map_err(|_| {
                ParseError::new(
                    lineno,
                    format!("{key}: {value:?} is not a number", value = Excerpt(value)),
                )
            })?;
            continue;
        }
        let v = value.parse::<u64>().map_err(|_| {
            ParseError::new(
                lineno,
                format!("{key}: {value:?} is not a count", value = Excerpt(value)),
            )
        })?;
        events.push((key, v));
    }
    if lines == 0 {
        return Err(ParseError::new(0, "empty vmstat"));
    }
    Ok(())
}

pub struct VmstatCollector {
    path: KeptFile,
    buf: String,
    /// Events read by the last update: the next one's vector is sized from it.
    capacity: usize,
}

impl VmstatCollector {
    pub fn new(s: &Settings) -> Self {
        VmstatCollector {
            path: KeptFile::new(s.paths.proc("vmstat")),
            buf: String::new(),
            capacity: 0,
        }
    }
}

impl Collector for VmstatCollector {
    fn name(&self) -> &'static str {
        "vmstat"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        self.path.read_into(&mut self.buf)?;
        let mut events = Vec::with_capacity(self.capacity);
        let keep = |event: &str| out.may_want(&EVENTS, |_| Some(event));
        parse_vmstat_selected(&self.buf, keep, &mut events)
            .map_err(|e| CollectError::parse(&self.path, e))?;
        self.capacity = events.len();
        for (event, v) in events {
            out.push_values(&EVENTS, &[event], v as f64);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectors::test_util::value;
    use proptest::prelude::*;

    const SAMPLE: &str = "nr_free_pages 988172\n\
nr_zone_inactive_anon 1755\n\
nr_dirty -1\n\
workingset_nodes 12\n\
pgpgin 2213773\n\
pswpin 3\n\
pgfault 2195731\n\
pgmajfault 1504\n\
pgscan_kswapd 0\n\
thp_fault_alloc 17\n";

    #[test]
    fn keeps_events_only() {
        let ev = parse_vmstat(SAMPLE).unwrap();
        assert_eq!(
            ev,
            vec![
                ("pgpgin", 2213773),
                ("pswpin", 3),
                ("pgfault", 2195731),
                ("pgmajfault", 1504),
                ("pgscan_kswapd", 0),
                ("thp_fault_alloc", 17)
            ]
        );
    }

    #[test]
    fn rejects_malformed() {
        assert!(parse_vmstat("").is_err());
        assert!(parse_vmstat("pgfault\n").is_err());
        assert!(parse_vmstat("pgfault 1 2\n").is_err());
        assert!(parse_vmstat("pgfault -1\n").is_err());
        assert!(parse_vmstat("nr_free_pages x\n").is_err());
        // Only gauges: valid, no events.
        assert_eq!(parse_vmstat("nr_free_pages 1\n"), Ok(vec![]));
    }

    #[test]
    fn reads_the_values_of_the_keys_selected_only() {
        let text = "nr_free_pages x\npgpgin 1 2\npgfault 7\npswpin\n";
        let mut events = Vec::new();
        parse_vmstat_selected(text, |k| k == "pgfault", &mut events).unwrap();
        assert_eq!(events, [("pgfault", 7)]);
        // A key selected is checked as in the whole parse.
        let err = parse_vmstat_selected(text, |k| k == "pswpin", &mut events).unwrap_err();
        assert!(err.to_string().contains("pswpin"), "{err}");
        assert!(parse_vmstat_selected("", |_| false, &mut events).is_err());
    }

    /// The value of the sample named `name` whose labels include every pair of `labels`.
    #[test]
    fn on_this_host() {
        let mut c = VmstatCollector::new(&Settings::default());
        let mut out = Scrape::new();
        c.update(&mut out).expect("/proc/vmstat of this host");
        assert!(
            value(
                &out,
                "reveal_memory_vmstat_events_total",
                &[("event", "pgfault")]
            )
            .unwrap()
                > 0.0
        );
        assert!(value(
            &out,
            "reveal_memory_vmstat_events_total",
            &[("event", "nr_free_pages")]
        )
        .is_none());
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC*") {
            let _ = parse_vmstat(&s);
        }
    }
}
