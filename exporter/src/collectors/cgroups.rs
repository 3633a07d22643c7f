//! Per-cgroup CPU, memory and I/O usage and pressure stall times, for the N most active
//! cgroups; the others are summed into one `cgroup="other"` series.
//!
//! Hierarchies (found by the files they hold, under `<sysfs>/fs/cgroup`):
//! - cgroup v2, the unified hierarchy: `fs/cgroup` itself (a v2-only host) or
//!   `fs/cgroup/unified` (a hybrid host, systemd's layout beside v1 controllers). Per cgroup:
//!   `cpu.stat` (usage, user and system time, throttling), `memory.current`, `memory.events`
//!   (high, max, oom_kill), `io.stat` (summed over devices), and `cpu.pressure`,
//!   `memory.pressure`, `io.pressure` (PSI, parsed as the pressure collector does).
//! - cgroup v1, only for what v2 does not provide: `cpuacct.usage` (ns),
//!   `memory.usage_in_bytes`, `blkio.throttle.io_service_bytes` (Read and Write bytes).
//!
//! A cgroup is named by its path relative to its hierarchy's root (`system.slice/ssh.service`);
//! the same path in v2 and in a v1 hierarchy is the same cgroup (systemd and the kubelet
//! create the same tree in each). The root itself is not exported: it is the whole host,
//! which the stat, meminfo, diskstats and pressure collectors already cover.
//!
//! Which cgroups: those at most `--collector.cgroups.depth` levels below the root whose path
//! matches `--collector.cgroups.include`; at most [`MAX_CGROUPS`] of them are read per scrape.
//! Of those, the `--collector.cgroups.top` with the most CPU time since the previous scrape
//! (on the first scrape, since they were created) get their own series; the others are folded
//! into `cgroup="other"`, counted by `reveal_cpu_cgroups_folded`.
//!
//! `other` stays a counter: each scrape it grows by what its cgroups used since the previous
//! scrape (all of it for a cgroup not seen before), so a cgroup moving in or out of the top N
//! does not make it jump back. Cgroups nest: a folded cgroup whose parent is folded too is
//! counted once, through the parent. Its memory usage is the plain sum of the folded cgroups'
//! at this scrape.
//!
//! Bad input: any file may be missing (a controller not enabled for that cgroup) and is
//! skipped for that cgroup; an unreadable or half-written file or line is skipped; a cgroup
//! removed while it is read (ENOENT or ENODEV on the one file every cgroup of its hierarchy
//! has, read last) is left out of this scrape and forgotten. Without any hierarchy the
//! collector reports unsupported (logged once by the runner).

mod fold;
mod walk;

use super::cgroups_parse as parse;
use super::pressure::parse_pressure;
use super::{Collector, Settings};
use crate::error::CollectError;
use crate::paths::Paths;
use crate::scrape::{Desc, Scrape, Unit};
use fold::{fold, Folded};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use walk::{detect, read_file, text, walk, Got, Hierarchy, Kind};

/// Levels below the root read by default: `system.slice/ssh.service`, `kubepods.slice/...`.
pub const DEFAULT_DEPTH: u8 = 2;
/// Cgroups exposed one by one by default.
pub const DEFAULT_TOP: usize = 50;
/// Cgroups read per scrape at most; the rest of a larger hierarchy is left out.
pub const MAX_CGROUPS: usize = 10_000;
/// Directories listed per hierarchy and scrape at most (the walk to the configured depth).
const MAX_DIRS: usize = 50_000;

/// A regular expression over cgroup paths, anchored at both ends; empty matches every path.
#[derive(Debug, Clone, Default)]
pub struct Include(Option<regex::Regex>);

impl Include {
    pub fn new(pattern: &str) -> Result<Self, regex::Error> {
        if pattern.is_empty() {
            return Ok(Include(None));
        }
        regex::Regex::new(&format!("^(?:{pattern})$")).map(|r| Include(Some(r)))
    }

    /// The flag's value parser: a pattern that does not compile is a usage error at start.
    pub fn parse_flag(pattern: &str) -> Result<Self, String> {
        Include::new(pattern).map_err(|e| e.to_string())
    }

    pub fn matches(&self, path: &str) -> bool {
        self.0.as_ref().is_none_or(|r| r.is_match(path))
    }
}

/// Flags of the cgroups collector.
#[derive(Debug, Clone, clap::Args)]
pub struct CgroupsArgs {
    /// Read cgroups at most this many levels below the hierarchy's root (1: its children,
    /// such as system.slice; 2: also system.slice/ssh.service). Kubernetes pods are at level
    /// 3 (kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<UID>.slice), Slurm
    /// jobs at 3 (slurm/uid_N/job_N, system.slice/slurmstepd.scope/job_N).
    // The doc comment is the flag's --help text as it should read there; rustdoc alone
    // would take `<UID>` for an HTML tag.
    #[allow(rustdoc::invalid_html_tags)]
    #[arg(
        id = "collector.cgroups.depth",
        long = "collector.cgroups.depth",
        default_value_t = DEFAULT_DEPTH,
        value_parser = clap::value_parser!(u8).range(1..=32)
    )]
    pub depth: u8,
    /// Regular expression, anchored at both ends, of the cgroup paths to read (relative to the
    /// hierarchy's root, e.g. 'system\.slice/.*' or '.*/job_[0-9]+'); empty: every cgroup
    /// within the depth.
    #[arg(
        id = "collector.cgroups.include",
        long = "collector.cgroups.include",
        value_name = "REGEX",
        default_value = "",
        value_parser = Include::parse_flag
    )]
    pub include: Include,
    /// Number of cgroups, the most active by CPU time since the previous scrape, exposed one
    /// by one; the others are summed into cgroup="other" and counted in
    /// reveal_cpu_cgroups_folded.
    #[arg(
        id = "collector.cgroups.top",
        long = "collector.cgroups.top",
        default_value_t = DEFAULT_TOP
    )]
    pub top: usize,
}

impl Default for CgroupsArgs {
    fn default() -> Self {
        CgroupsArgs {
            depth: DEFAULT_DEPTH,
            include: Include::default(),
            top: DEFAULT_TOP,
        }
    }
}

const CG: &[&str] = &["cgroup", "pod_uid"];

pub static USAGE: Desc = Desc::counter(
    "reveal_cpu_cgroup_usage",
    Unit::Seconds,
    CG,
    "CPU time used by the cgroup's tasks, its descendants' included (cgroup v2 cpu.stat \
     usage_usec, v1 cpuacct.usage). cgroup is the path below the hierarchy's root, \"other\" \
     the sum of the cgroups not exposed one by one; pod_uid the Kubernetes pod's UID when the \
     path is a pod's.",
);
pub static TIME: Desc = Desc::counter(
    "reveal_cpu_cgroup_time",
    Unit::Seconds,
    &["cgroup", "pod_uid", "mode"],
    "CPU time used by the cgroup's tasks in user and system mode (cgroup v2 cpu.stat).",
);
pub static THROTTLED_PERIODS: Desc = Desc::counter(
    "reveal_cpu_cgroup_throttled_periods",
    Unit::None,
    CG,
    "CFS bandwidth periods in which the cgroup was throttled (cgroup v2 cpu.stat \
     nr_throttled; only with a cpu.max limit).",
);
pub static THROTTLED: Desc = Desc::counter(
    "reveal_cpu_cgroup_throttled",
    Unit::Seconds,
    CG,
    "Time the cgroup's tasks were held back by its CPU bandwidth limit (cgroup v2 cpu.stat \
     throttled_usec).",
);
pub static CPU_PRESSURE: Desc = Desc::counter(
    "reveal_cpu_cgroup_pressure_stalled",
    Unit::Seconds,
    &["cgroup", "pod_uid", "kind"],
    "Time in which the cgroup's runnable tasks waited for a CPU (PSI, cpu.pressure): kind \
     some = at least one task, full = all non-idle tasks.",
);
pub static MEMORY: Desc = Desc::gauge(
    "reveal_memory_cgroup_usage",
    Unit::Bytes,
    CG,
    "Memory charged to the cgroup, page cache included (cgroup v2 memory.current, v1 \
     memory.usage_in_bytes).",
);
pub static MEMORY_EVENTS: Desc = Desc::counter(
    "reveal_memory_cgroup_events",
    Unit::None,
    &["cgroup", "pod_uid", "event"],
    "Memory limit events of the cgroup (cgroup v2 memory.events): high = throttled and \
     reclaimed over memory.high, max = allocation hit memory.max, oom_kill = tasks killed by \
     the OOM killer.",
);
pub static MEMORY_PRESSURE: Desc = Desc::counter(
    "reveal_memory_cgroup_pressure_stalled",
    Unit::Seconds,
    &["cgroup", "pod_uid", "kind"],
    "Time in which the cgroup's tasks stalled on memory (PSI, memory.pressure): kind some = \
     at least one task, full = all non-idle tasks.",
);
pub static READ_BYTES: Desc = Desc::counter(
    "reveal_storage_cgroup_read",
    Unit::Bytes,
    CG,
    "Bytes read from block devices by the cgroup (cgroup v2 io.stat rbytes, v1 \
     blkio.throttle.io_service_bytes Read), summed over devices.",
);
pub static WRITTEN_BYTES: Desc = Desc::counter(
    "reveal_storage_cgroup_written",
    Unit::Bytes,
    CG,
    "Bytes written to block devices by the cgroup (cgroup v2 io.stat wbytes, v1 \
     blkio.throttle.io_service_bytes Write), summed over devices.",
);
pub static READS: Desc = Desc::counter(
    "reveal_storage_cgroup_reads",
    Unit::None,
    CG,
    "Read operations of the cgroup on block devices (cgroup v2 io.stat rios), summed over \
     devices.",
);
pub static WRITES: Desc = Desc::counter(
    "reveal_storage_cgroup_writes",
    Unit::None,
    CG,
    "Write operations of the cgroup on block devices (cgroup v2 io.stat wios), summed over \
     devices.",
);
pub static IO_PRESSURE: Desc = Desc::counter(
    "reveal_storage_cgroup_pressure_stalled",
    Unit::Seconds,
    &["cgroup", "pod_uid", "kind"],
    "Time in which the cgroup's tasks stalled waiting for block I/O (PSI, io.pressure): kind \
     some = at least one task, full = all non-idle tasks.",
);
pub static FOLDED: Desc = Desc::gauge(
    "reveal_cpu_cgroups_folded",
    Unit::None,
    &[],
    "Cgroups read at the last scrape that were not among the most active \
     (--collector.cgroups.top) and were summed into cgroup=\"other\".",
);

pub static METRICS: &[&Desc] = &[
    &USAGE,
    &TIME,
    &THROTTLED_PERIODS,
    &THROTTLED,
    &CPU_PRESSURE,
    &MEMORY,
    &MEMORY_EVENTS,
    &MEMORY_PRESSURE,
    &READ_BYTES,
    &WRITTEN_BYTES,
    &READS,
    &WRITES,
    &IO_PRESSURE,
    &FOLDED,
];

// Indices of one cgroup's values, in exposition order.
const USAGE_S: usize = 0;
const USER_S: usize = 1;
const SYSTEM_S: usize = 2;
const THR_PERIODS: usize = 3;
const THR_S: usize = 4;
const CPU_SOME: usize = 5;
const MEM_BYTES: usize = 7;
const EV_HIGH: usize = 8;
const MEM_SOME: usize = 11;
const RBYTES: usize = 13;
const WBYTES: usize = 14;
const RIOS: usize = 15;
const WIOS: usize = 16;
const IO_SOME: usize = 17;
const N: usize = 19;

/// Each value's family and the value of its third label, if the family has one.
static SERIES: [(&Desc, &str); N] = [
    (&USAGE, ""),
    (&TIME, "user"),
    (&TIME, "system"),
    (&THROTTLED_PERIODS, ""),
    (&THROTTLED, ""),
    (&CPU_PRESSURE, "some"),
    (&CPU_PRESSURE, "full"),
    (&MEMORY, ""),
    (&MEMORY_EVENTS, "high"),
    (&MEMORY_EVENTS, "max"),
    (&MEMORY_EVENTS, "oom_kill"),
    (&MEMORY_PRESSURE, "some"),
    (&MEMORY_PRESSURE, "full"),
    (&READ_BYTES, ""),
    (&WRITTEN_BYTES, ""),
    (&READS, ""),
    (&WRITES, ""),
    (&IO_PRESSURE, "some"),
    (&IO_PRESSURE, "full"),
];

/// One cgroup's values at one scrape, in base units.
type Values = [Option<f64>; N];

/// Per-cgroup state kept from one scrape to the next.
#[derive(Debug, Clone)]
struct Prev {
    values: Values,
    exposed: bool,
}

pub struct CgroupsCollector {
    paths: Paths,
    args: CgroupsArgs,
    /// Found on the first update that finds any (shared, so reading can borrow `self`).
    hierarchies: std::sync::Arc<[Hierarchy]>,
    want: [bool; N],
    want_folded: bool,
    prev: HashMap<String, Prev>,
    /// `other`'s counters: what the folded cgroups used, summed over scrapes.
    other: Values,
    buf: Vec<u8>,
    path: PathBuf,
    warned_cap: bool,
}

impl CgroupsCollector {
    pub fn new(s: &Settings) -> Self {
        let mut want = [false; N];
        for (w, (d, _)) in want.iter_mut().zip(SERIES.iter()) {
            *w = s.wants(d);
        }
        CgroupsCollector {
            paths: s.paths.clone(),
            args: s.cgroups.clone(),
            hierarchies: std::sync::Arc::from(Vec::new()),
            want,
            want_folded: s.wants(&FOLDED),
            prev: HashMap::new(),
            other: [None; N],
            buf: Vec::new(),
            path: PathBuf::new(),
            warned_cap: false,
        }
    }

    fn wants(&self, range: std::ops::Range<usize>) -> bool {
        self.want[range].iter().any(|w| *w)
    }

    /// Reads `file` of the cgroup directory at `self.path`.
    fn read(&mut self, file: &str) -> Got {
        self.path.push(file);
        let got = read_file(&self.path, &mut self.buf);
        self.path.pop();
        got
    }

    fn read_pressure(&mut self, file: &str, v: &mut Values, at: usize) {
        if self.wants(at..at + 2) && matches!(self.read(file), Got::Text) {
            if let Ok(p) = parse_pressure(&text(&self.buf)) {
                v[at] = p.some.map(|us| us as f64 / 1e6);
                v[at + 1] = p.full.map(|us| us as f64 / 1e6);
            }
        }
    }

    /// Reads one cgroup from the hierarchies in `mask`; `None` when it was removed meanwhile.
    fn read_cgroup(&mut self, rel: &str, mask: u8) -> Option<Values> {
        let mut v: Values = [None; N];
        let hierarchies = self.hierarchies.clone();
        for (i, h) in hierarchies.iter().enumerate() {
            if mask & (1 << i) == 0 {
                continue;
            }
            self.path = h.root.join(rel);
            match h.kind {
                Kind::V2 => {
                    if self.want[MEM_BYTES] && matches!(self.read("memory.current"), Got::Text) {
                        v[MEM_BYTES] = parse::parse_single(&text(&self.buf)).map(|b| b as f64);
                    }
                    if self.wants(EV_HIGH..EV_HIGH + 3)
                        && matches!(self.read("memory.events"), Got::Text)
                    {
                        if let Some(ev) = parse::parse_memory_events(&text(&self.buf)) {
                            for (k, e) in ev.iter().enumerate() {
                                v[EV_HIGH + k] = e.map(|n| n as f64);
                            }
                        }
                    }
                    if self.wants(RBYTES..WIOS + 1) && matches!(self.read("io.stat"), Got::Text) {
                        if let Some(io) = parse::parse_io_stat(&text(&self.buf)) {
                            v[RBYTES] = Some(io.rbytes as f64);
                            v[WBYTES] = Some(io.wbytes as f64);
                            v[RIOS] = io.rios.map(|n| n as f64);
                            v[WIOS] = io.wios.map(|n| n as f64);
                        }
                    }
                    self.read_pressure("cpu.pressure", &mut v, CPU_SOME);
                    self.read_pressure("memory.pressure", &mut v, MEM_SOME);
                    self.read_pressure("io.pressure", &mut v, IO_SOME);
                    // Last: every v2 cgroup has cpu.stat, so its absence now means the
                    // cgroup went away while it was read.
                    match self.read("cpu.stat") {
                        Got::Absent => return None,
                        Got::Unreadable => {}
                        Got::Text => {
                            if let Some(c) = parse::parse_cpu_stat(&text(&self.buf)) {
                                let s = |us: Option<u64>| us.map(|us| us as f64 / 1e6);
                                v[USAGE_S] = s(c.usage_usec);
                                v[USER_S] = s(c.user_usec);
                                v[SYSTEM_S] = s(c.system_usec);
                                v[THR_PERIODS] = c.nr_throttled.map(|n| n as f64);
                                v[THR_S] = s(c.throttled_usec);
                            }
                        }
                    }
                }
                Kind::Cpuacct if v[USAGE_S].is_none() => match self.read("cpuacct.usage") {
                    Got::Absent => return None,
                    Got::Unreadable => {}
                    Got::Text => {
                        v[USAGE_S] = parse::parse_single(&text(&self.buf)).map(|ns| ns as f64 / 1e9)
                    }
                },
                Kind::Memory if v[MEM_BYTES].is_none() && self.want[MEM_BYTES] => {
                    match self.read("memory.usage_in_bytes") {
                        Got::Absent => return None,
                        Got::Unreadable => {}
                        Got::Text => {
                            v[MEM_BYTES] = parse::parse_single(&text(&self.buf)).map(|b| b as f64)
                        }
                    }
                }
                Kind::Blkio if v[RBYTES].is_none() && self.wants(RBYTES..WBYTES + 1) => {
                    match self.read("blkio.throttle.io_service_bytes") {
                        Got::Absent => return None,
                        Got::Unreadable => {}
                        Got::Text => {
                            if let Some(io) = parse::parse_blkio_service_bytes(&text(&self.buf)) {
                                v[RBYTES] = Some(io.rbytes as f64);
                                v[WBYTES] = Some(io.wbytes as f64);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        Some(v)
    }
}

impl Collector for CgroupsCollector {
    fn name(&self) -> &'static str {
        "cgroups"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        if self.hierarchies.is_empty() {
            self.hierarchies = detect(&self.paths).into();
            if self.hierarchies.is_empty() {
                return Err(CollectError::Unsupported {
                    path: self.paths.sys("fs/cgroup"),
                    reason: "no cgroup v2 hierarchy (cgroup.controllers) and no v1 cpuacct, \
                             memory or blkio hierarchy"
                        .into(),
                });
            }
        }
        let mut found = BTreeMap::new();
        let mut capped = false;
        let depth = usize::from(self.args.depth.max(1));
        for (i, h) in self.hierarchies.iter().enumerate() {
            walk(
                &h.root,
                1 << i,
                depth,
                &self.args.include,
                &mut found,
                &mut capped,
            );
        }
        if capped && !self.warned_cap {
            self.warned_cap = true;
            tracing::warn!(
                collector = "cgroups",
                "more than {MAX_CGROUPS} cgroups (or {MAX_DIRS} directories) within the depth: \
                 the rest are not read; narrow --collector.cgroups.include or .depth"
            );
        }

        // Read every cgroup; the ones removed meanwhile are left out.
        let mut cgroups: Vec<(String, Values)> = Vec::with_capacity(found.len());
        for (rel, mask) in found {
            if let Some(v) = self.read_cgroup(&rel, mask) {
                cgroups.push((rel, v));
            }
        }

        let Folded {
            exposed,
            other_gauge,
            folded_count,
        } = fold(&cgroups, &self.prev, self.args.top, &mut self.other);

        // Exposition: family by family, the exposed cgroups in path order, then `other`.
        let labels: Vec<(usize, String)> = (0..cgroups.len())
            .filter(|&i| exposed[i])
            .map(|i| (i, parse::pod_uid(&cgroups[i].0).unwrap_or_default()))
            .collect();
        for (k, &(desc, extra)) in SERIES.iter().enumerate() {
            if !self.want[k] {
                continue;
            }
            let mut push = |cg: &str, pod: &str, value: f64| {
                if desc.labels.len() == 3 {
                    out.push_values(desc, &[cg, pod, extra], value);
                } else {
                    out.push_values(desc, &[cg, pod], value);
                }
            };
            for (i, pod) in &labels {
                if let Some(value) = cgroups[*i].1[k] {
                    push(&cgroups[*i].0, pod, value);
                }
            }
            let other = if k == MEM_BYTES {
                other_gauge[k]
            } else {
                self.other[k]
            };
            if let Some(value) = other {
                push("other", "", value);
            }
        }
        if self.want_folded {
            out.push1(&FOLDED, folded_count as f64);
        }

        // Only the cgroups of this scrape are remembered: a removed one leaves nothing.
        self.prev = cgroups
            .into_iter()
            .zip(exposed)
            .map(|((rel, values), exposed)| (rel, Prev { values, exposed }))
            .collect();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectors::test_util::value;
    use std::path::Path;

    fn settings(sys: &Path, args: CgroupsArgs) -> Settings {
        Settings {
            paths: Paths::new("/nonexistent", sys),
            cgroups: args,
            ..Settings::default()
        }
    }

    fn fixture_sys() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vm-debian/sys")
    }

    /// This VM's recording: a hybrid host, cpu.stat and PSI from v2, memory and block I/O
    /// from v1.
    #[test]
    fn hybrid_host_fixture() {
        let mut c = CgroupsCollector::new(&settings(&fixture_sys(), CgroupsArgs::default()));
        let mut out = Scrape::new();
        c.update(&mut out).unwrap();
        let a = [("cgroup", "reveal-fixture-a")];
        let v = |n: &str, l: &[(&str, &str)]| value(&out, n, l);
        assert_eq!(
            v("reveal_cpu_cgroup_usage_seconds_total", &a),
            Some(0.253788)
        );
        assert_eq!(
            v(
                "reveal_cpu_cgroup_time_seconds_total",
                &[a[0], ("mode", "user")]
            ),
            Some(0.253788)
        );
        assert_eq!(v("reveal_memory_cgroup_usage_bytes", &a), Some(802816.0));
        assert_eq!(v("reveal_storage_cgroup_read_bytes_total", &a), Some(0.0));
        assert_eq!(v("reveal_storage_cgroup_reads_total", &a), None);
        assert_eq!(
            v(
                "reveal_storage_cgroup_pressure_stalled_seconds_total",
                &[a[0], ("kind", "full")]
            ),
            Some(0.002019)
        );
        assert_eq!(
            v(
                "reveal_cpu_cgroup_usage_seconds_total",
                &[("cgroup", "reveal-fixture-a/child")]
            ),
            Some(0.0)
        );
        assert_eq!(v("reveal_cpu_cgroups_folded", &[]), Some(0.0));
        // The root is not a cgroup of its own here.
        assert_eq!(
            v("reveal_cpu_cgroup_usage_seconds_total", &[("cgroup", "")]),
            None
        );
        // Depth 1 leaves the child out.
        let args = CgroupsArgs {
            depth: 1,
            ..CgroupsArgs::default()
        };
        let mut out = Scrape::new();
        CgroupsCollector::new(&settings(&fixture_sys(), args))
            .update(&mut out)
            .unwrap();
        assert_eq!(
            value(
                &out,
                "reveal_cpu_cgroup_usage_seconds_total",
                &[("cgroup", "reveal-fixture-a/child")]
            ),
            None
        );
    }

    #[test]
    fn no_hierarchy_is_unsupported() {
        let dir = std::env::temp_dir().join(format!("reveal-cg-none-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("fs/cgroup")).unwrap();
        let mut c = CgroupsCollector::new(&settings(&dir, CgroupsArgs::default()));
        let e = c.update(&mut Scrape::new()).unwrap_err();
        assert!(e.is_unsupported(), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn include_patterns_are_anchored() {
        assert!(Include::new("system\\.slice/.*")
            .unwrap()
            .matches("system.slice/a"));
        assert!(!Include::new("system").unwrap().matches("system.slice"));
        assert!(Include::new("").unwrap().matches("x"));
        assert!(Include::parse_flag("(").is_err());
    }
}
