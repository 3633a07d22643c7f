//! Huge page pools of every size, system-wide and per NUMA node, from sysfs.
//!
//! Layout (<https://docs.kernel.org/admin-guide/mm/hugetlbpage.html>):
//! ```text
//! /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages            -> "8"
//! /sys/kernel/mm/hugepages/hugepages-2048kB/{free,resv,surplus}_hugepages
//! /sys/devices/system/node/node0/hugepages/hugepages-2048kB/{nr,free,surplus}_hugepages
//! ```
//! `/proc/meminfo` only shows the default size; this collector shows every size and, per node,
//! where the pages actually sit: pools that drift apart between nodes (or hosts) are a classic
//! cause of uneven performance that host-wide totals hide.

use super::sysfs_attr::{Attr, Budget};
use super::sysfs_scan::Rescan;
use super::{Collector, Settings};
use crate::error::{CollectError, ParseError};
use crate::read::dir_names;
use crate::scrape::{Desc, Scrape, Unit};
use std::path::PathBuf;
use std::time::Duration;

/// How often the set of pools and nodes is looked up again (sizes and nodes rarely change;
/// a read failure also triggers a new lookup).
const REDISCOVER: Duration = Duration::from_secs(60);

/// The share of the descriptor limit this collector may keep open: its attributes are read
/// through kept files (`sysfs_attr`), 3 to 4 per pool, so 14 on a 1-node host with 2 sizes.
const FD_SHARE: usize = 16;

pub static POOL: Desc = Desc::gauge(
    "reveal_memory_hugepages_pool",
    Unit::None,
    &["size", "state"],
    "Huge pages per page size (label size in bytes): total (nr_hugepages), free, reserved \
     (promised to mappings, not yet faulted in) and surplus (allocated above nr_hugepages by \
     overcommit).",
);
pub static NUMA: Desc = Desc::gauge(
    "reveal_memory_numa_hugepages",
    Unit::None,
    &["node", "size", "state"],
    "Huge pages per NUMA node and page size (label size in bytes): total, free and surplus.",
);

pub static METRICS: &[&Desc] = &[&POOL, &NUMA];

/// Files of a system-wide pool and the `state` label each becomes.
const POOL_FILES: [(&str, &str); 4] = [
    ("nr_hugepages", "total"),
    ("free_hugepages", "free"),
    ("resv_hugepages", "reserved"),
    ("surplus_hugepages", "surplus"),
];
/// Files of a per-node pool (nodes have no reservation count).
const NODE_FILES: [(&str, &str); 3] = [
    ("nr_hugepages", "total"),
    ("free_hugepages", "free"),
    ("surplus_hugepages", "surplus"),
];

/// Parses a pool directory name, `hugepages-2048kB`, into the page size in bytes.
pub fn parse_pool_name(name: &str) -> Result<u64, ParseError> {
    let kib = name
        .strip_prefix("hugepages-")
        .and_then(|s| s.strip_suffix("kB"))
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| {
            ParseError::new(
                1,
                format!("{:?} is not hugepages-<N>kB", crate::error::Excerpt(name)),
            )
        })?;
    kib.checked_mul(1024).ok_or_else(|| {
        ParseError::new(
            1,
            format!("{:?}: size too large", crate::error::Excerpt(name)),
        )
    })
}

/// Parses a sysfs count attribute: one unsigned integer and a newline.
pub fn parse_count(text: &str) -> Result<u64, ParseError> {
    let t = text.trim();
    t.parse()
        .map_err(|_| ParseError::new(1, format!("{:?} is not a count", crate::error::Excerpt(t))))
}

/// One pool directory and the label values its samples carry.
struct Pool {
    /// `None` for the system-wide pools under kernel/mm/hugepages.
    node: Option<String>,
    size: String,
    /// Each attribute file and its `state` label value.
    files: Vec<(Attr, &'static str)>,
}

impl Pool {
    fn new(node: Option<String>, size: u64, dir: PathBuf, budget: &mut Budget) -> Pool {
        let names: &[(&str, &'static str)] = if node.is_some() {
            &NODE_FILES
        } else {
            &POOL_FILES
        };
        let files = names
            .iter()
            .map(|(f, state)| (budget.attr(dir.join(f)), *state))
            .collect();
        Pool {
            node,
            size: size.to_string(),
            files,
        }
    }
}

pub struct HugepagesCollector {
    global_dir: PathBuf,
    nodes_dir: PathBuf,
    pools: Vec<Pool>,
    /// Looks the pools up every [`REDISCOVER`], at once after a failed read.
    rescan: Rescan,
    buf: String,
}

impl HugepagesCollector {
    pub fn new(s: &Settings) -> Self {
        let mut c = HugepagesCollector {
            global_dir: s.paths.sys("kernel/mm/hugepages"),
            nodes_dir: s.paths.sys("devices/system/node"),
            pools: Vec::new(),
            rescan: Rescan::new(REDISCOVER, Duration::ZERO),
            buf: String::new(),
        };
        // A failure here is reported by the first update, which looks again.
        if c.discover().is_ok() {
            c.rescan.scanned();
        }
        c
    }

    fn discover(&mut self) -> Result<(), CollectError> {
        // Dropping the old pools closes their files before the new ones are opened.
        self.pools.clear();
        let mut budget = Budget::share_of_limit(FD_SHARE);
        for name in dir_names(&self.global_dir)? {
            // Entries other than hugepages-<N>kB are not pools; skip them.
            let Ok(size) = parse_pool_name(&name) else {
                continue;
            };
            self.pools.push(Pool::new(
                None,
                size,
                self.global_dir.join(name),
                &mut budget,
            ));
        }
        // No node directory means a kernel without NUMA support: system-wide pools only.
        let nodes = dir_names(&self.nodes_dir).unwrap_or_default();
        for node in nodes {
            let Some(id) = node
                .strip_prefix("node")
                .filter(|n| n.parse::<u32>().is_ok())
            else {
                continue;
            };
            let dir = self.nodes_dir.join(&node).join("hugepages");
            let Ok(names) = dir_names(&dir) else { continue };
            for name in names {
                let Ok(size) = parse_pool_name(&name) else {
                    continue;
                };
                self.pools.push(Pool::new(
                    Some(id.to_string()),
                    size,
                    dir.join(name),
                    &mut budget,
                ));
            }
        }
        Ok(())
    }
}

fn read_count(attr: &Attr, buf: &mut String) -> Result<u64, CollectError> {
    attr.read(buf)?;
    parse_count(buf).map_err(|e| CollectError::parse(attr.path(), e))
}

impl Collector for HugepagesCollector {
    fn name(&self) -> &'static str {
        "hugepages"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        let scanned = self.rescan.due().then(|| self.discover());
        self.rescan.check(scanned)?;
        let mut failed = None;
        for p in &self.pools {
            // Only the pools of a family the page serves (the fast cadence's: the host's).
            let desc = if p.node.is_some() { &NUMA } else { &POOL };
            if !out.wants(desc) {
                continue;
            }
            for (file, state) in &p.files {
                let v = match read_count(file, &mut self.buf) {
                    Ok(v) => v,
                    Err(e) => {
                        // A pool that vanished (size removed, node offlined): skip it now and
                        // look the pools up again on the next scrape.
                        failed = Some(e);
                        continue;
                    }
                };
                match &p.node {
                    None => out.push_values(&POOL, &[&p.size, state], v as f64),
                    Some(n) => out.push_values(&NUMA, &[n, &p.size, state], v as f64),
                }
            }
        }
        if let Some(e) = failed {
            self.rescan.retry_soon();
            // Garbage in a file is an error; a file that disappeared is a pool that went away.
            if matches!(e, CollectError::Parse { .. }) {
                return Err(e);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectors::test_util::value;
    use proptest::prelude::*;

    #[test]
    fn pool_names() {
        assert_eq!(parse_pool_name("hugepages-2048kB"), Ok(2097152));
        assert_eq!(parse_pool_name("hugepages-1048576kB"), Ok(1073741824));
        assert!(parse_pool_name("hugepages-2048").is_err());
        assert!(parse_pool_name("hugepages-kB").is_err());
        assert!(parse_pool_name("nr_overcommit").is_err());
        assert!(parse_pool_name("hugepages-99999999999999999999kB").is_err());
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("8\n"), Ok(8));
        assert_eq!(parse_count("0"), Ok(0));
        assert!(parse_count("").is_err());
        assert!(parse_count("-1\n").is_err());
        assert!(parse_count("1 2\n").is_err());
    }

    #[test]
    fn on_this_host() {
        let s = Settings::default();
        let Ok(sizes) = dir_names(&s.paths.sys("kernel/mm/hugepages")) else {
            eprintln!("SKIPPED: this kernel has no /sys/kernel/mm/hugepages (no hugetlbfs)");
            return;
        };
        let mut c = HugepagesCollector::new(&s);
        let mut out = Scrape::new();
        c.update(&mut out).expect("hugepages of this host");
        let pools = out
            .families()
            .find(|f| std::ptr::eq(f.desc, &POOL))
            .map_or(0, |f| f.samples.len());
        assert_eq!(pools, 4 * sizes.len(), "{sizes:?}");
        for size in &sizes {
            let bytes = parse_pool_name(size).unwrap().to_string();
            assert!(value(
                &out,
                "reveal_memory_hugepages_pool",
                &[("size", &bytes), ("state", "free")]
            )
            .is_some());
        }
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC*") {
            let _ = parse_pool_name(&s);
            let _ = parse_count(&s);
        }
    }
}
