//! System-wide memory usage from `/proc/meminfo`, one gauge per field.
//!
//! Format (<https://docs.kernel.org/filesystems/proc.html>, section "meminfo"):
//! ```text
//! MemTotal:       24684092 kB
//! Dirty:              2796 kB
//! HugePages_Total:       0
//! Hugepagesize:       2048 kB
//! ```
//! Sizes are in KiB (the kernel writes "kB"), converted to bytes here. The `HugePages_*` lines
//! are page counts with no unit, exposed as `reveal_memory_hugepages{state}`. Which fields exist
//! depends on the kernel version and configuration; each one present and known is emitted, keys
//! this table does not know are ignored.

use super::{Collector, Settings};
use crate::error::Excerpt;
use crate::error::{CollectError, ParseError};
use crate::read::KeptFile;
use crate::scrape::{Desc, Scrape, Unit};

/// Generates, from one list of (field, kernel key, help):
/// the [`MemInfo`] struct with one named field per key, a `desc` module with one gauge
/// descriptor per field (named `reveal_memory_<field>_bytes`), the key → field lookup and
/// [`METRICS`].
macro_rules! meminfo_fields {
    ($($field:ident = $key:literal : $help:literal,)*) => {
        /// The parsed `/proc/meminfo`: sizes in bytes, `None` where this kernel has no such line.
        #[derive(Debug, Default, Clone, PartialEq)]
        pub struct MemInfo {
            $(pub $field: Option<u64>,)*
            /// `HugePages_Total`, `_Free`, `_Rsvd`, `_Surp` (pages), in [`HUGEPAGE_STATES`] order.
            pub hugepages: [Option<u64>; 4],
            /// `Hugepagesize`, the default huge page size.
            pub hugepage_size_bytes: Option<u64>,
        }

        /// One gauge descriptor per byte-valued field, named after the struct field.
        #[allow(non_upper_case_globals)]
        pub mod desc {
            use crate::scrape::{Desc, Unit};
            $(pub static $field: Desc = Desc::gauge(
                concat!("reveal_memory_", stringify!($field)),
                Unit::Bytes,
                &[],
                concat!($help, " (", $key, " in /proc/meminfo)."),
            );)*
        }

        /// Every metric family this collector emits.
        pub static METRICS: &[&Desc] = &[$(&desc::$field,)* &HUGEPAGES, &HUGEPAGE_SIZE];

        impl MemInfo {
            /// The slot of a byte-valued field, by kernel key.
            fn bytes_slot(&mut self, key: &str) -> Option<&mut Option<u64>> {
                match key {
                    $($key => Some(&mut self.$field),)*
                    _ => None,
                }
            }

            /// Calls `f` for each byte-valued field present.
            pub fn for_each_bytes(&self, mut f: impl FnMut(&'static Desc, u64)) {
                $(if let Some(v) = self.$field { f(&desc::$field, v); })*
            }
        }
    };
}

meminfo_fields! {
    mem_total = "MemTotal": "Usable RAM: physical memory less reserved and kernel code",
    mem_free = "MemFree": "RAM not used for anything",
    mem_available = "MemAvailable": "Estimate of memory available for new workloads without swapping",
    buffers = "Buffers": "Block device buffers not backed by files",
    cached = "Cached": "Page cache of files read from disk, excluding swap cache",
    swap_cached = "SwapCached": "Memory swapped out and back in but still in the swap file",
    active = "Active": "Memory used recently, not usually reclaimed unless necessary",
    inactive = "Inactive": "Memory used less recently, eligible for reclaim",
    active_anon = "Active(anon)": "Recently used anonymous and shared memory",
    inactive_anon = "Inactive(anon)": "Less recently used anonymous and shared memory",
    active_file = "Active(file)": "Recently used file-backed page cache",
    inactive_file = "Inactive(file)": "Less recently used file-backed page cache",
    unevictable = "Unevictable": "Memory that cannot be reclaimed (mlocked, ramfs, pinned)",
    mlocked = "Mlocked": "Memory locked with mlock()",
    high_total = "HighTotal": "Highmem (not permanently mapped by the kernel) in total, 32-bit only",
    high_free = "HighFree": "Free highmem, 32-bit only",
    low_total = "LowTotal": "Lowmem (directly mapped by the kernel) in total, 32-bit only",
    low_free = "LowFree": "Free lowmem, 32-bit only",
    mmap_copy = "MmapCopy": "Memory used to copy mmap()ed file contents on no-MMU kernels",
    swap_total = "SwapTotal": "Swap space in total",
    swap_free = "SwapFree": "Swap space not used",
    zswap = "Zswap": "Memory used by the zswap compressed swap cache",
    zswapped = "Zswapped": "Anonymous memory held compressed in zswap",
    dirty = "Dirty": "Memory waiting to be written back to disk",
    writeback = "Writeback": "Memory being written back to disk now",
    anon_pages = "AnonPages": "Anonymous pages mapped into user page tables",
    mapped = "Mapped": "Files mapped into memory, such as libraries",
    shmem = "Shmem": "Shared memory and tmpfs",
    kernel_reclaimable = "KReclaimable": "Kernel allocations the kernel reclaims under pressure",
    slab = "Slab": "Kernel slab caches",
    slab_reclaimable = "SReclaimable": "Reclaimable part of the slab caches",
    slab_unreclaimable = "SUnreclaim": "Unreclaimable part of the slab caches",
    kernel_stack = "KernelStack": "Kernel stacks of all tasks",
    shadow_call_stack = "ShadowCallStack": "Shadow call stacks, on kernels built with them",
    page_tables = "PageTables": "Page tables of user processes",
    secondary_page_tables = "SecPageTables": "Secondary page tables (KVM and IOMMU)",
    nfs_unstable = "NFS_Unstable": "NFS pages sent to the server but not committed, always 0 since 5.8",
    bounce = "Bounce": "Bounce buffers for block devices",
    writeback_tmp = "WritebackTmp": "Temporary buffers for FUSE writeback",
    commit_limit = "CommitLimit": "Total that can be allocated under strict overcommit",
    committed_as = "Committed_AS": "Memory currently allocated on the system, whether used or not",
    vmalloc_total = "VmallocTotal": "Size of the vmalloc address space",
    vmalloc_used = "VmallocUsed": "Used vmalloc area",
    vmalloc_chunk = "VmallocChunk": "Largest free contiguous vmalloc block",
    percpu = "Percpu": "Per-CPU allocator backing pages",
    early_memtest_bad = "EarlyMemtestBad": "RAM found bad by the early memory test",
    hardware_corrupted = "HardwareCorrupted": "RAM the kernel found corrupted and took offline",
    anon_huge_pages = "AnonHugePages": "Anonymous transparent huge pages mapped into user page tables",
    shmem_huge_pages = "ShmemHugePages": "Shared memory and tmpfs in transparent huge pages",
    shmem_pmd_mapped = "ShmemPmdMapped": "Shared memory mapped into user space with huge pages",
    file_huge_pages = "FileHugePages": "File page cache in transparent huge pages",
    file_pmd_mapped = "FilePmdMapped": "File page cache mapped into user space with huge pages",
    cma_total = "CmaTotal": "Memory reserved for the contiguous memory allocator",
    cma_free = "CmaFree": "Free contiguous-memory-allocator memory",
    unaccepted = "Unaccepted": "Memory not yet accepted by a confidential-computing guest",
    balloon = "Balloon": "Memory returned to the hypervisor by the balloon driver",
    quicklists = "Quicklists": "Page table quicklists, old kernels only",
    hugetlb = "Hugetlb": "Memory used by huge pages of all sizes",
    direct_map_4k = "DirectMap4k": "Kernel direct map covered by 4 KiB pages",
    direct_map_2m = "DirectMap2M": "Kernel direct map covered by 2 MiB pages",
    direct_map_4m = "DirectMap4M": "Kernel direct map covered by 4 MiB pages (32-bit)",
    direct_map_1g = "DirectMap1G": "Kernel direct map covered by 1 GiB pages",
}

/// Label values of `reveal_memory_hugepages{state}`, in [`MemInfo::hugepages`] order.
pub const HUGEPAGE_STATES: [&str; 4] = ["total", "free", "reserved", "surplus"];

pub static HUGEPAGES: Desc = Desc::gauge(
    "reveal_memory_hugepages",
    Unit::None,
    &["state"],
    "Huge pages of the default size in the pool: total, free, reserved (promised to a mapping, \
     not yet faulted in) and surplus (above nr_hugepages, from overcommit).",
);
pub static HUGEPAGE_SIZE: Desc = Desc::gauge(
    "reveal_memory_hugepage_size",
    Unit::Bytes,
    &[],
    "Default huge page size (Hugepagesize in /proc/meminfo).",
);

/// One `Key: value [kB]` line: the key, the number, and whether it carried the `kB` unit.
/// Shared with the per-node meminfo of the numa collector, whose lines have the same tail.
pub(crate) fn split_line(line: &str, lineno: usize) -> Result<(&str, u64, bool), ParseError> {
    let (key, rest) = line.split_once(':').ok_or_else(|| {
        ParseError::new(lineno, format!("no ':' in {line:?}", line = Excerpt(line)))
    })?;
    let mut it = rest.split_ascii_whitespace();
    let num = it
        .next()
        .ok_or_else(|| ParseError::new(lineno, format!("{key} has no value")))?;
    let value: u64 = num.parse().map_err(|_| {
        ParseError::new(
            lineno,
            format!("{key}: {num:?} is not a number", num = Excerpt(num)),
        )
    })?;
    let kb = match (it.next(), it.next()) {
        (None, None) => false,
        (Some("kB"), None) => true,
        _ => {
            return Err(ParseError::new(
                lineno,
                format!("{key}: unexpected unit in {rest:?}", rest = Excerpt(rest)),
            ))
        }
    };
    Ok((key.trim(), value, kb))
}

/// Converts a KiB value to bytes; an overflow means the line is garbage.
pub(crate) fn kib_to_bytes(key: &str, kib: u64, lineno: usize) -> Result<u64, ParseError> {
    kib.checked_mul(1024)
        .ok_or_else(|| ParseError::new(lineno, format!("{key}: value too large")))
}

/// Parses the text of `/proc/meminfo`.
pub fn parse_meminfo(text: &str) -> Result<MemInfo, ParseError> {
    let mut m = MemInfo::default();
    let mut known = 0usize;
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let (key, value, kb) = split_line(line, lineno)?;
        let hp = match key {
            "HugePages_Total" => Some(0),
            "HugePages_Free" => Some(1),
            "HugePages_Rsvd" => Some(2),
            "HugePages_Surp" => Some(3),
            _ => None,
        };
        if let Some(idx) = hp {
            if kb {
                return Err(ParseError::new(
                    lineno,
                    format!("{key} is a page count, found kB"),
                ));
            }
            m.hugepages[idx] = Some(value);
            known += 1;
            continue;
        }
        let slot = if key == "Hugepagesize" {
            &mut m.hugepage_size_bytes
        } else if let Some(slot) = m.bytes_slot(key) {
            slot
        } else {
            continue;
        };
        if !kb {
            return Err(ParseError::new(lineno, format!("{key} has no kB unit")));
        }
        *slot = Some(kib_to_bytes(key, value, lineno)?);
        known += 1;
    }
    if known == 0 {
        return Err(ParseError::new(0, "no known meminfo fields"));
    }
    Ok(m)
}

pub struct MeminfoCollector {
    path: KeptFile,
    buf: String,
}

impl MeminfoCollector {
    pub fn new(s: &Settings) -> Self {
        MeminfoCollector {
            path: KeptFile::new(s.paths.proc("meminfo")),
            buf: String::new(),
        }
    }
}

impl Collector for MeminfoCollector {
    fn name(&self) -> &'static str {
        "meminfo"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        self.path.read_into(&mut self.buf)?;
        let m = parse_meminfo(&self.buf).map_err(|e| CollectError::parse(&self.path, e))?;
        m.for_each_bytes(|desc, v| out.push1(desc, v as f64));
        for (state, v) in HUGEPAGE_STATES.iter().zip(m.hugepages) {
            if let Some(v) = v {
                out.push_values(&HUGEPAGES, &[state], v as f64);
            }
        }
        if let Some(v) = m.hugepage_size_bytes {
            out.push1(&HUGEPAGE_SIZE, v as f64);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectors::test_util::value;
    use proptest::prelude::*;

    const SAMPLE: &str = "MemTotal:       24684092 kB\n\
MemFree:        24203988 kB\n\
MemAvailable:   24278124 kB\n\
Active(anon):       1520 kB\n\
Unevictable:       12312 kB\n\
Dirty:              2796 kB\n\
Writeback:             4 kB\n\
Committed_AS:      54644 kB\n\
AnonHugePages:     10240 kB\n\
SomeFutureField:      12 kB\n\
HugePages_Total:       8\n\
HugePages_Free:        6\n\
HugePages_Rsvd:        1\n\
HugePages_Surp:        0\n\
Hugepagesize:       2048 kB\n\
DirectMap1G:    25165824 kB\n";

    #[test]
    fn parses_sizes_and_counts() {
        let m = parse_meminfo(SAMPLE).unwrap();
        assert_eq!(m.mem_total, Some(24684092 * 1024));
        assert_eq!(m.mem_available, Some(24278124 * 1024));
        assert_eq!(m.active_anon, Some(1520 * 1024));
        assert_eq!(m.unevictable, Some(12312 * 1024));
        assert_eq!(m.dirty, Some(2796 * 1024));
        assert_eq!(m.writeback, Some(4096));
        assert_eq!(m.committed_as, Some(54644 * 1024));
        assert_eq!(m.anon_huge_pages, Some(10240 * 1024));
        assert_eq!(m.direct_map_1g, Some(25165824 * 1024));
        assert_eq!(m.swap_total, None);
        assert_eq!(m.hugepages, [Some(8), Some(6), Some(1), Some(0)]);
        assert_eq!(m.hugepage_size_bytes, Some(2 * 1024 * 1024));
        let mut n = 0;
        m.for_each_bytes(|_, _| n += 1);
        assert_eq!(n, 10);
    }

    #[test]
    fn metric_names_are_snake_case() {
        assert_eq!(
            desc::mem_total.family_name(),
            "reveal_memory_mem_total_bytes"
        );
        assert_eq!(
            desc::anon_huge_pages.family_name(),
            "reveal_memory_anon_huge_pages_bytes"
        );
        for d in METRICS {
            assert!(d
                .name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'));
        }
    }

    #[test]
    fn rejects_malformed_lines() {
        assert!(parse_meminfo("").is_err());
        assert!(
            parse_meminfo("SomeFutureField: 1 kB\n").is_err(),
            "nothing known"
        );
        assert!(parse_meminfo("MemTotal 1 kB\n").is_err());
        assert!(parse_meminfo("MemTotal: x kB\n").is_err());
        assert!(parse_meminfo("MemTotal: 1\n").is_err(), "size without unit");
        assert!(parse_meminfo("MemTotal: 1 MB\n").is_err());
        assert!(parse_meminfo("HugePages_Total: 1 kB\n").is_err());
        assert!(parse_meminfo("MemTotal: 18446744073709551615 kB\n").is_err());
        assert!(parse_meminfo("MemTotal:\n").is_err());
    }

    /// The value of the sample named `name` whose labels include every pair of `labels`.
    #[test]
    fn on_this_host() {
        let mut c = MeminfoCollector::new(&Settings::default());
        let mut out = Scrape::new();
        c.update(&mut out).expect("/proc/meminfo of this host");
        let total = value(&out, "reveal_memory_mem_total_bytes", &[]).unwrap();
        let free = value(&out, "reveal_memory_mem_free_bytes", &[]).unwrap();
        assert!(
            total > 0.0 && free <= total && total % 1024.0 == 0.0,
            "{total} {free}"
        );
        assert!(value(&out, "reveal_memory_dirty_bytes", &[]).is_some());
        assert!(value(&out, "reveal_memory_hugepages", &[("state", "surplus")]).is_some());
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC*") {
            let _ = parse_meminfo(&s);
        }

        #[test]
        fn never_panics_on_near_misses(
            lines in proptest::collection::vec("(MemTotal|HugePages_Free|Dirty|X):? *[0-9a-z]{0,22}( kB)?", 0..8)
        ) {
            let _ = parse_meminfo(&lines.join("\n"));
        }
    }
}
