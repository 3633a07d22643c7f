//! Per-NUMA-node allocation counters and memory usage from sysfs.
//!
//! Formats (<https://docs.kernel.org/admin-guide/numastat.html>,
//! <https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-devices-node>):
//! ```text
//! /sys/devices/system/node/node0/numastat:  numa_hit 3899248
//! /sys/devices/system/node/node0/meminfo:   Node 0 MemTotal:        5204180 kB
//!                                           Node 0 HugePages_Total:     0
//! ```
//! Sizes are KiB, converted to bytes. The huge page counts are pages, exposed as
//! `reveal_memory_numa_meminfo_hugepages{node,state}` (the hugepages collector has them per
//! page size; these are the default size only).

use super::meminfo::{kib_to_bytes, split_line};
use super::sysfs_scan::{found_any, Rescan};
use super::{Collector, Settings};
use crate::error::Excerpt;
use crate::error::{CollectError, ParseError};
use crate::read::{dir_names, KeptFile};
use crate::scrape::{Desc, Scrape, Unit};
use std::path::PathBuf;
use std::time::Duration;

/// How often nodes are looked up again (memory hotplug can add one; a read failure also
/// triggers a new lookup).
const REDISCOVER: Duration = Duration::from_secs(60);

/// Generates one `reveal_memory_numa_<field>_bytes{node}` gauge per (field, key, help), the
/// key → descriptor lookup, and [`METRICS`].
macro_rules! node_fields {
    ($($field:ident = $key:literal : $help:literal,)*) => {
        /// One gauge descriptor per byte-valued field of a node's meminfo.
        #[allow(non_upper_case_globals)]
        pub mod desc {
            use crate::scrape::{Desc, Unit};
            $(pub static $field: Desc = Desc::gauge(
                concat!("reveal_memory_numa_", stringify!($field)),
                Unit::Bytes,
                &["node"],
                concat!($help, " on this NUMA node (", $key, " in nodeN/meminfo)."),
            );)*
        }

        /// The descriptor of a byte-valued node meminfo key, if it is one Reveal exposes.
        pub fn field_desc(key: &str) -> Option<&'static Desc> {
            match key {
                $($key => Some(&desc::$field),)*
                _ => None,
            }
        }

        pub static METRICS: &[&Desc] = &[&EVENTS, $(&desc::$field,)* &HUGEPAGES];
    };
}

node_fields! {
    mem_total = "MemTotal": "Usable RAM",
    mem_free = "MemFree": "RAM not used for anything",
    mem_used = "MemUsed": "RAM in use (MemTotal - MemFree)",
    swap_cached = "SwapCached": "Memory swapped out and back in but still in swap",
    active = "Active": "Memory used recently",
    inactive = "Inactive": "Memory used less recently, eligible for reclaim",
    active_anon = "Active(anon)": "Recently used anonymous memory",
    inactive_anon = "Inactive(anon)": "Less recently used anonymous memory",
    active_file = "Active(file)": "Recently used file page cache",
    inactive_file = "Inactive(file)": "Less recently used file page cache",
    unevictable = "Unevictable": "Memory that cannot be reclaimed",
    mlocked = "Mlocked": "Memory locked with mlock()",
    dirty = "Dirty": "Memory waiting to be written back to disk",
    writeback = "Writeback": "Memory being written back to disk now",
    file_pages = "FilePages": "File page cache",
    mapped = "Mapped": "Files mapped into memory",
    anon_pages = "AnonPages": "Anonymous pages mapped into user page tables",
    shmem = "Shmem": "Shared memory and tmpfs",
    kernel_stack = "KernelStack": "Kernel stacks",
    page_tables = "PageTables": "Page tables of user processes",
    secondary_page_tables = "SecPageTables": "Secondary page tables (KVM and IOMMU)",
    writeback_tmp = "WritebackTmp": "Temporary buffers for FUSE writeback",
    kernel_reclaimable = "KReclaimable": "Kernel allocations reclaimable under pressure",
    slab = "Slab": "Kernel slab caches",
    slab_reclaimable = "SReclaimable": "Reclaimable slab caches",
    slab_unreclaimable = "SUnreclaim": "Unreclaimable slab caches",
    anon_huge_pages = "AnonHugePages": "Anonymous transparent huge pages",
    shmem_huge_pages = "ShmemHugePages": "Shared memory in transparent huge pages",
    file_huge_pages = "FileHugePages": "File page cache in transparent huge pages",
    unaccepted = "Unaccepted": "Memory not yet accepted by a confidential-computing guest",
}

pub static EVENTS: Desc = Desc::counter(
    "reveal_memory_numa_events",
    Unit::None,
    &["node", "event"],
    "Page allocations per NUMA node (numastat): numa_hit (allocated here as intended), \
     numa_miss (allocated here, wanted elsewhere), numa_foreign (wanted here, allocated \
     elsewhere), interleave_hit, local_node and other_node (by the allocating CPU's node).",
);
pub static HUGEPAGES: Desc = Desc::gauge(
    "reveal_memory_numa_meminfo_hugepages",
    Unit::None,
    &["node", "state"],
    "Huge pages of the default size on this NUMA node (nodeN/meminfo): total, free, surplus.",
);

/// The counters of `numastat`, in kernel order; other keys are ignored.
pub const NUMASTAT_KEYS: [&str; 6] = [
    "numa_hit",
    "numa_miss",
    "numa_foreign",
    "interleave_hit",
    "local_node",
    "other_node",
];

/// Label values of [`HUGEPAGES`], in [`NodeMeminfo::hugepages`] order.
pub const HUGEPAGE_STATES: [&str; 3] = ["total", "free", "surplus"];

/// Parses a node's `numastat`: the known counters, `None` for those absent.
pub fn parse_numastat(text: &str) -> Result<[Option<u64>; 6], ParseError> {
    let mut out = [None; 6];
    let mut lines = 0;
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let mut it = line.split_ascii_whitespace();
        let Some(key) = it.next() else { continue };
        let (Some(v), None) = (it.next(), it.next()) else {
            return Err(ParseError::new(
                lineno,
                format!("expected 'name value', got {line:?}", line = Excerpt(line)),
            ));
        };
        let v: u64 = v.parse().map_err(|_| {
            ParseError::new(lineno, format!("{key}: {:?} is not a count", Excerpt(v)))
        })?;
        lines += 1;
        if let Some(idx) = NUMASTAT_KEYS.iter().position(|k| *k == key) {
            out[idx] = Some(v);
        }
    }
    if lines == 0 {
        return Err(ParseError::new(0, "empty numastat"));
    }
    Ok(out)
}

/// A node's `meminfo`: the node id its lines name, sizes in bytes by key, huge page counts.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct NodeMeminfo<'a> {
    pub node: u32,
    pub sizes: Vec<(&'a str, u64)>,
    pub hugepages: [Option<u64>; 3],
}

/// Parses `nodeN/meminfo`. Every line must name the same node.
pub fn parse_node_meminfo(text: &str) -> Result<NodeMeminfo<'_>, ParseError> {
    let mut m = NodeMeminfo::default();
    let mut node = None;
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let bad = || {
            ParseError::new(
                lineno,
                format!(
                    "expected 'Node N Key: value', got {line:?}",
                    line = Excerpt(line)
                ),
            )
        };
        let rest = line.trim_start().strip_prefix("Node ").ok_or_else(bad)?;
        let (id, rest) = rest.split_once(' ').ok_or_else(bad)?;
        let id: u32 = id.parse().map_err(|_| bad())?;
        if *node.get_or_insert(id) != id {
            return Err(ParseError::new(
                lineno,
                format!("node {id} in a file about node {}", m.node),
            ));
        }
        m.node = id;
        let (key, value, kb) = split_line(rest, lineno)?;
        let hp = match key {
            "HugePages_Total" => Some(0),
            "HugePages_Free" => Some(1),
            "HugePages_Surp" => Some(2),
            _ => None,
        };
        match (hp, kb) {
            (Some(idx), false) => m.hugepages[idx] = Some(value),
            (None, true) => m.sizes.push((key, kib_to_bytes(key, value, lineno)?)),
            (Some(_), true) => {
                return Err(ParseError::new(
                    lineno,
                    format!("{key} is a count, found kB"),
                ))
            }
            // A size Reveal exposes must carry its unit; an unknown key without one is some
            // future count, ignored like every unknown key.
            (None, false) if field_desc(key).is_some() => {
                return Err(ParseError::new(lineno, format!("{key} has no kB unit")))
            }
            (None, false) => {}
        }
    }
    if node.is_none() {
        return Err(ParseError::new(0, "empty node meminfo"));
    }
    Ok(m)
}

struct Node {
    id: String,
    /// Kept open between lookups (see [`KeptFile`]): two files per node.
    numastat: KeptFile,
    meminfo: KeptFile,
}

pub struct NumaCollector {
    dir: PathBuf,
    nodes: Vec<Node>,
    /// Looks the nodes up every [`REDISCOVER`], at once after a failed read.
    rescan: Rescan,
    buf: String,
}

impl NumaCollector {
    pub fn new(s: &Settings) -> Self {
        let mut c = NumaCollector {
            dir: s.paths.sys("devices/system/node"),
            nodes: Vec::new(),
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
        self.nodes.clear();
        for name in dir_names(&self.dir)? {
            let Some(id) = name
                .strip_prefix("node")
                .filter(|n| n.parse::<u32>().is_ok())
            else {
                continue;
            };
            let d = self.dir.join(&name);
            self.nodes.push(Node {
                id: id.to_string(),
                numastat: KeptFile::new(d.join("numastat")),
                meminfo: KeptFile::new(d.join("meminfo")),
            });
        }
        found_any(&self.nodes, || self.dir.clone(), "no NUMA nodes")
    }

    fn update_node(node: &Node, buf: &mut String, out: &mut Scrape) -> Result<(), CollectError> {
        node.numastat.read_into(buf)?;
        let stats = parse_numastat(buf).map_err(|e| CollectError::parse(&node.numastat, e))?;
        for (key, v) in NUMASTAT_KEYS.iter().zip(stats) {
            if let Some(v) = v {
                out.push_values(&EVENTS, &[&node.id, key], v as f64);
            }
        }
        // A node's meminfo only for a page that serves one of its families (the fast
        // cadence's serves the allocation counters only).
        let from_meminfo = METRICS.iter().filter(|d| !std::ptr::eq(**d, &EVENTS));
        if !from_meminfo.into_iter().any(|d| out.wants(d)) {
            return Ok(());
        }
        node.meminfo.read_into(buf)?;
        let m = parse_node_meminfo(buf).map_err(|e| CollectError::parse(&node.meminfo, e))?;
        if m.node.to_string() != node.id {
            let e = ParseError::new(1, format!("file names node {}", m.node));
            return Err(CollectError::parse(&node.meminfo, e));
        }
        for (key, v) in &m.sizes {
            if let Some(desc) = field_desc(key) {
                out.push_values(desc, &[&node.id], *v as f64);
            }
        }
        for (state, v) in HUGEPAGE_STATES.iter().zip(m.hugepages) {
            if let Some(v) = v {
                out.push_values(&HUGEPAGES, &[&node.id, state], v as f64);
            }
        }
        Ok(())
    }
}

impl Collector for NumaCollector {
    fn name(&self) -> &'static str {
        "numa"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        let scanned = self.rescan.due().then(|| self.discover());
        self.rescan.check(scanned)?;
        let mut first_err = None;
        for node in &self.nodes {
            // Keep the other nodes when one fails; report the failure after.
            if let Err(e) = Self::update_node(node, &mut self.buf, out) {
                first_err.get_or_insert(e);
            }
        }
        match first_err {
            None => Ok(()),
            Some(e) => {
                self.rescan.retry_soon();
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectors::test_util::value;
    use proptest::prelude::*;

    #[test]
    fn numastat() {
        let s = "numa_hit 3899248\nnuma_miss 2\nnuma_foreign 3\ninterleave_hit 1124\n\
                 local_node 3899240\nother_node 8\nsome_new 1\n";
        assert_eq!(
            parse_numastat(s),
            Ok([
                Some(3899248),
                Some(2),
                Some(3),
                Some(1124),
                Some(3899240),
                Some(8)
            ])
        );
        assert_eq!(parse_numastat("numa_hit 1\n").unwrap()[1], None);
        assert!(parse_numastat("").is_err());
        assert!(parse_numastat("numa_hit\n").is_err());
        assert!(parse_numastat("numa_hit -1\n").is_err());
    }

    const NODE1: &str = "Node 1 MemTotal:        5204180 kB\n\
Node 1 MemFree:         4726220 kB\n\
Node 1 Active(anon):       1520 kB\n\
Node 1 Dirty:                12 kB\n\
Node 1 FilePages:        252328 kB\n\
Node 1 HugePages_Total:     512\n\
Node 1 HugePages_Free:      500\n\
Node 1 HugePages_Surp:        0\n";

    #[test]
    fn node_meminfo() {
        let m = parse_node_meminfo(NODE1).unwrap();
        assert_eq!(m.node, 1);
        assert_eq!(
            m.sizes,
            vec![
                ("MemTotal", 5204180 * 1024),
                ("MemFree", 4726220 * 1024),
                ("Active(anon)", 1520 * 1024),
                ("Dirty", 12 * 1024),
                ("FilePages", 252328 * 1024)
            ]
        );
        assert_eq!(m.hugepages, [Some(512), Some(500), Some(0)]);
        assert_eq!(
            field_desc("Active(anon)").unwrap().family_name(),
            "reveal_memory_numa_active_anon_bytes"
        );
        assert!(field_desc("HugePages_Total").is_none());
    }

    #[test]
    fn node_meminfo_rejects_malformed() {
        assert!(parse_node_meminfo("").is_err());
        assert!(parse_node_meminfo("MemTotal: 1 kB\n").is_err());
        assert!(parse_node_meminfo("Node x MemTotal: 1 kB\n").is_err());
        assert!(parse_node_meminfo("Node 0 MemTotal: 1\n").is_err());
        assert!(parse_node_meminfo("Node 0 FutureCount: 1\n").is_ok());
        assert!(parse_node_meminfo("Node 0 HugePages_Free: 1 kB\n").is_err());
        assert!(parse_node_meminfo("Node 0 MemTotal: 1 kB\nNode 1 MemFree: 1 kB\n").is_err());
        assert!(parse_node_meminfo("Node 0\n").is_err());
    }

    #[test]
    fn on_this_host() {
        let s = Settings::default();
        if !s.paths.sys("devices/system/node/node0").exists() {
            eprintln!("SKIPPED: no /sys/devices/system/node/node0 (kernel without NUMA support)");
            return;
        }
        let mut c = NumaCollector::new(&s);
        let mut out = Scrape::new();
        c.update(&mut out).expect("NUMA nodes of this host");
        assert!(
            value(
                &out,
                "reveal_memory_numa_events_total",
                &[("node", "0"), ("event", "numa_hit")]
            )
            .unwrap()
                > 0.0
        );
        let total = value(&out, "reveal_memory_numa_mem_total_bytes", &[("node", "0")]).unwrap();
        let used = value(&out, "reveal_memory_numa_mem_used_bytes", &[("node", "0")]).unwrap();
        assert!(total > 0.0 && used <= total);
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC*") {
            let _ = parse_numastat(&s);
            let _ = parse_node_meminfo(&s);
        }

        #[test]
        fn never_panics_on_near_misses(
            lines in proptest::collection::vec("(Node [0-9x]{0,3} ?)?[A-Za-z_]{0,12}:? *[0-9a-z]{0,22}( kB)?", 0..6)
        ) {
            let _ = parse_node_meminfo(&lines.join("\n"));
        }
    }
}
