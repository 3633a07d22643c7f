//! Per-CPU perf counters: the generic hardware events (instructions, cycles, cache, branches,
//! stalls), the kernel's software events, and vendor raw events from `--config.file`.
//!
//! Counters are opened once at construction, per CPU and in groups, and read with one
//! `read(2)` per group and CPU on each scrape. A group the PMU cannot hold at once is
//! multiplexed by the kernel; its counts are scaled by time_enabled/time_running (as
//! `perf stat` does) and the ratio itself is exposed as `reveal_cpu_perf_running_ratio`.
//! Events the CPU, the hypervisor or the permissions do not allow are found at construction,
//! logged once, and left out. Reference: perf_event_open(2),
//! <https://man7.org/linux/man-pages/man2/perf_event_open.2.html>.

use super::perf_group::{self, describe_open_error, KernelOpener, OpenGroup, Opener};
use super::{Collector, Settings};
use crate::config::Subsystem;
use crate::error::CollectError;
use crate::error::Excerpt;
use crate::perf_sys::{self, EventSpec};
use crate::scrape::{Desc, Scrape, Unit};
use perf_event_open_sys::bindings as b;
use std::collections::BTreeMap;
use std::path::PathBuf;

macro_rules! cpu_counter {
    ($id:ident, $name:expr, $unit:expr, $help:expr $(,)?) => {
        pub static $id: Desc = Desc::counter($name, $unit, &["cpu"], $help);
    };
}

cpu_counter!(
    INSTRUCTIONS,
    "reveal_cpu_instructions",
    Unit::None,
    "Instructions retired (perf PERF_COUNT_HW_INSTRUCTIONS), scaled for multiplexing."
);
cpu_counter!(
    CYCLES,
    "reveal_cpu_cycles",
    Unit::None,
    "Core clock cycles while not halted (PERF_COUNT_HW_CPU_CYCLES), scaled for multiplexing."
);
cpu_counter!(
    CACHE_REFERENCES,
    "reveal_cpu_cache_references",
    Unit::None,
    "Last-level cache accesses (PERF_COUNT_HW_CACHE_REFERENCES), scaled for multiplexing."
);
cpu_counter!(
    CACHE_MISSES,
    "reveal_cpu_cache_misses",
    Unit::None,
    "Last-level cache misses (PERF_COUNT_HW_CACHE_MISSES), scaled for multiplexing."
);
cpu_counter!(
    BRANCH_INSTRUCTIONS,
    "reveal_cpu_branch_instructions",
    Unit::None,
    "Branch instructions retired (PERF_COUNT_HW_BRANCH_INSTRUCTIONS), scaled for multiplexing."
);
cpu_counter!(
    BRANCH_MISSES,
    "reveal_cpu_branch_misses",
    Unit::None,
    "Mispredicted branches (PERF_COUNT_HW_BRANCH_MISSES), scaled for multiplexing."
);
cpu_counter!(
    STALLED_FRONTEND,
    "reveal_cpu_stalled_cycles_frontend",
    Unit::None,
    "Cycles the front end issued nothing (PERF_COUNT_HW_STALLED_CYCLES_FRONTEND), scaled for multiplexing.",
);
cpu_counter!(
    STALLED_BACKEND,
    "reveal_cpu_stalled_cycles_backend",
    Unit::None,
    "Cycles the back end retired nothing (PERF_COUNT_HW_STALLED_CYCLES_BACKEND), scaled for multiplexing.",
);
cpu_counter!(
    TASK_CLOCK,
    "reveal_cpu_task_clock",
    Unit::Seconds,
    "Time the CPU's counters were enabled, as the perf task-clock event counts it for CPU-wide \
     counting: it advances with wall time (busy or idle), like perf stat -a's task-clock."
);
cpu_counter!(
    CONTEXT_SWITCHES,
    "reveal_cpu_perf_context_switches",
    Unit::None,
    "Context switches on each CPU (perf software event; /proc/stat only has the host total)."
);
cpu_counter!(
    MIGRATIONS,
    "reveal_cpu_migrations",
    Unit::None,
    "Tasks migrated to each CPU from another (perf software event)."
);
cpu_counter!(
    PAGE_FAULTS,
    "reveal_memory_page_faults",
    Unit::None,
    "Page faults taken on each CPU, minor and major (perf software event)."
);

pub static RUNNING_RATIO: Desc = Desc::gauge(
    "reveal_cpu_perf_running",
    Unit::Ratio,
    &["cpu", "group"],
    "Share of the time a counter group was enabled that it was on the PMU; below 1 means the kernel multiplexed it and its counts are estimates.",
);

macro_rules! raw_counter {
    ($id:ident, $name:expr) => {
        pub static $id: Desc = Desc::counter(
            $name,
            Unit::None,
            &["cpu", "event"],
            "Vendor perf event declared in the exporter's --config.file, by its name, scaled for multiplexing.",
        );
    };
}
raw_counter!(RAW_CPU, "reveal_cpu_perf_event");
raw_counter!(RAW_GPU, "reveal_gpu_perf_event");
raw_counter!(RAW_MEMORY, "reveal_memory_perf_event");
raw_counter!(RAW_NETWORK, "reveal_network_perf_event");
raw_counter!(RAW_STORAGE, "reveal_storage_perf_event");

pub static METRICS: &[&Desc] = &[
    &INSTRUCTIONS,
    &CYCLES,
    &CACHE_REFERENCES,
    &CACHE_MISSES,
    &BRANCH_INSTRUCTIONS,
    &BRANCH_MISSES,
    &STALLED_FRONTEND,
    &STALLED_BACKEND,
    &TASK_CLOCK,
    &CONTEXT_SWITCHES,
    &MIGRATIONS,
    &PAGE_FAULTS,
    &RUNNING_RATIO,
    &RAW_CPU,
    &RAW_GPU,
    &RAW_MEMORY,
    &RAW_NETWORK,
    &RAW_STORAGE,
];

fn raw_desc(s: Subsystem) -> &'static Desc {
    match s {
        Subsystem::Cpu => &RAW_CPU,
        Subsystem::Gpu => &RAW_GPU,
        Subsystem::Memory => &RAW_MEMORY,
        Subsystem::Network => &RAW_NETWORK,
        Subsystem::Storage => &RAW_STORAGE,
    }
}

/// A generic event: its perf name (for logs), group, attr, metric and unit conversion.
struct Builtin {
    name: &'static str,
    group: &'static str,
    spec: EventSpec,
    desc: &'static Desc,
    scale: f64,
}

const fn hw(name: &'static str, group: &'static str, id: u32, desc: &'static Desc) -> Builtin {
    Builtin {
        name,
        group,
        spec: EventSpec::new(perf_sys::TYPE_HARDWARE, id as u64),
        desc,
        scale: 1.0,
    }
}
const fn sw(name: &'static str, id: u32, desc: &'static Desc, scale: f64) -> Builtin {
    Builtin {
        name,
        group: "software",
        spec: EventSpec::new(perf_sys::TYPE_SOFTWARE, id as u64),
        desc,
        scale,
    }
}

/// Groups are small on purpose: a group is scheduled all or nothing, and four general counters
/// (plus fixed ones) is what most x86 PMUs offer a CPU.
static BUILTINS: &[Builtin] = &[
    hw(
        "instructions",
        "core",
        b::PERF_COUNT_HW_INSTRUCTIONS,
        &INSTRUCTIONS,
    ),
    hw("cycles", "core", b::PERF_COUNT_HW_CPU_CYCLES, &CYCLES),
    hw(
        "branch-instructions",
        "core",
        b::PERF_COUNT_HW_BRANCH_INSTRUCTIONS,
        &BRANCH_INSTRUCTIONS,
    ),
    hw(
        "branch-misses",
        "core",
        b::PERF_COUNT_HW_BRANCH_MISSES,
        &BRANCH_MISSES,
    ),
    hw(
        "cache-references",
        "cache",
        b::PERF_COUNT_HW_CACHE_REFERENCES,
        &CACHE_REFERENCES,
    ),
    hw(
        "cache-misses",
        "cache",
        b::PERF_COUNT_HW_CACHE_MISSES,
        &CACHE_MISSES,
    ),
    hw(
        "stalled-cycles-frontend",
        "stalls",
        b::PERF_COUNT_HW_STALLED_CYCLES_FRONTEND,
        &STALLED_FRONTEND,
    ),
    hw(
        "stalled-cycles-backend",
        "stalls",
        b::PERF_COUNT_HW_STALLED_CYCLES_BACKEND,
        &STALLED_BACKEND,
    ),
    // task-clock counts nanoseconds.
    sw("task-clock", b::PERF_COUNT_SW_TASK_CLOCK, &TASK_CLOCK, 1e-9),
    sw(
        "context-switches",
        b::PERF_COUNT_SW_CONTEXT_SWITCHES,
        &CONTEXT_SWITCHES,
        1.0,
    ),
    sw(
        "cpu-migrations",
        b::PERF_COUNT_SW_CPU_MIGRATIONS,
        &MIGRATIONS,
        1.0,
    ),
    sw(
        "page-faults",
        b::PERF_COUNT_SW_PAGE_FAULTS,
        &PAGE_FAULTS,
        1.0,
    ),
];

/// One event as planned: how to open it and where its value goes.
#[derive(Debug, Clone)]
struct Planned {
    name: String,
    spec: EventSpec,
    desc: &'static Desc,
    /// The `event` label of raw events.
    event_label: Option<String>,
    scale: f64,
}

#[derive(Debug)]
struct PlannedGroup {
    name: String,
    events: Vec<Planned>,
}

/// An opened group with its precomputed labels.
#[derive(Debug)]
struct Live {
    group: OpenGroup,
    plan: usize,
    cpu_label: String,
}

pub struct PerfCollector {
    plans: Vec<PlannedGroup>,
    live: Vec<Live>,
    /// Why nothing at all could be opened, reported on every update (the runner logs it once).
    unsupported: Option<String>,
    /// Group reads since start (one per group and CPU a scrape reads).
    reads: u64,
    /// Per planned group, whether the page being scraped serves any of its series (kept to
    /// refill on every scrape without allocating).
    wanted: Vec<bool>,
}

impl PerfCollector {
    pub fn new(s: &Settings) -> Self {
        Self::with_opener(s, &mut KernelOpener)
    }

    /// Builds the collector, opening every planned event on every online CPU through `opener`.
    pub fn with_opener(s: &Settings, opener: &mut dyn Opener) -> Self {
        let (plans, mut left_out) = plan(s);
        let cpus_path = s.paths.sys("devices/system/cpu/online");
        let cpus = match std::fs::read_to_string(&cpus_path)
            .map_err(|e| e.to_string())
            .and_then(|t| perf_group::parse_cpu_list(&t).map_err(|e| e.to_string()))
        {
            Ok(c) if !c.is_empty() => c,
            Ok(_) => {
                return Self::unsupported(plans, format!("{}: no CPU online", cpus_path.display()))
            }
            Err(e) => return Self::unsupported(plans, format!("{}: {e}", cpus_path.display())),
        };
        let wanted: usize = plans.iter().map(|g| g.events.len()).sum::<usize>() * cpus.len();
        if wanted > 900 {
            if let Err(e) = perf_sys::raise_fd_limit() {
                tracing::warn!("perf: could not raise the open-file limit: {e}");
            }
        }
        let mut live = Vec::new();
        // event name -> why and on how many CPUs: one log line per reason, not per event or CPU.
        let mut failed: BTreeMap<String, Failure> = BTreeMap::new();
        for &cpu in &cpus {
            for (pi, pg) in plans.iter().enumerate() {
                let specs: Vec<EventSpec> = pg.events.iter().map(|e| e.spec).collect();
                let (group, failures) = perf_group::open_group(opener, cpu, &specs);
                for f in failures {
                    let slot = failed
                        .entry(pg.events[f.event].name.clone())
                        .or_insert_with(|| Failure {
                            reason: describe_open_error(&f.error),
                            absent: perf_group::is_absent(&f.error),
                            cpus: 0,
                        });
                    slot.cpus += 1;
                }
                if let Some(group) = group {
                    live.push(Live {
                        group,
                        plan: pi,
                        cpu_label: cpu.to_string(),
                    });
                }
            }
        }
        let planned = plans.iter().map(|g| g.events.len()).sum();
        let summary = summarize_left_out(&failed, planned, cpus.len());
        if live.is_empty() {
            // The runner logs this once, on the first scrape.
            left_out.extend(summary.into_iter().map(|(_, line)| line));
            let why = if left_out.is_empty() {
                "no event selected".to_string()
            } else {
                left_out.join("; ")
            };
            return Self::unsupported(plans, format!("no perf event could be opened: {why}"));
        }
        for (absent, line) in summary {
            if absent {
                tracing::info!(collector = "perf", "perf: {line}");
            } else {
                tracing::warn!(collector = "perf", "perf: {line}");
            }
        }
        PerfCollector {
            plans,
            live,
            unsupported: None,
            reads: 0,
            wanted: Vec::new(),
        }
    }

    fn unsupported(plans: Vec<PlannedGroup>, reason: String) -> Self {
        PerfCollector {
            plans,
            live: Vec::new(),
            unsupported: Some(reason),
            reads: 0,
            wanted: Vec::new(),
        }
    }

    /// Group reads since start: one per group and CPU that a scrape read.
    pub fn group_reads(&self) -> u64 {
        self.reads
    }

    /// Names of the events open on at least one CPU, for tests and logs.
    pub fn open_events(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .live
            .iter()
            .flat_map(|l| {
                l.group
                    .members
                    .iter()
                    .map(|&m| self.plans[l.plan].events[m].name.clone())
            })
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

/// Why one event could not be opened, and on how many CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub reason: String,
    /// The CPU or hypervisor lacks the event (not: the exporter may not open it).
    pub absent: bool,
    pub cpus: usize,
}

/// One line per reason events were left out for, `(absent, line)`:
/// `8 of 10 events left out on 2 of 2 CPUs (branch-instructions, …): No such file or
/// directory (os error 2): not supported by this CPU or hypervisor`. Absent hardware is
/// logged as information, anything else (permission) as a warning.
pub(crate) fn summarize_left_out(
    failed: &BTreeMap<String, Failure>,
    planned: usize,
    cpus: usize,
) -> Vec<(bool, String)> {
    let mut by_reason: BTreeMap<(bool, &str), Vec<(&str, usize)>> = BTreeMap::new();
    for (name, f) in failed {
        by_reason
            .entry((f.absent, f.reason.as_str()))
            .or_default()
            .push((name.as_str(), f.cpus));
    }
    // Warnings first.
    let mut lines: Vec<(bool, String)> = by_reason
        .into_iter()
        .map(|((absent, reason), events)| {
            let (lo, hi) = events
                .iter()
                .fold((usize::MAX, 0), |(lo, hi), &(_, n)| (lo.min(n), hi.max(n)));
            let on = if lo == hi {
                format!("{lo} of {cpus} CPUs")
            } else {
                format!("{lo}-{hi} of {cpus} CPUs")
            };
            let names: Vec<&str> = events.iter().map(|(n, _)| *n).collect();
            let line = format!(
                "{} of {planned} events left out on {on} ({}): {reason}",
                events.len(),
                names.join(", ")
            );
            (absent, line)
        })
        .collect();
    lines.sort_by_key(|(absent, _)| *absent);
    lines
}

/// The groups to open: the generic events, then the configured raw events grouped by their
/// `group` (or alone). Returns events refused before opening (an unknown PMU) for the log.
fn plan(s: &Settings) -> (Vec<PlannedGroup>, Vec<String>) {
    let mut groups: Vec<PlannedGroup> = Vec::new();
    let mut left_out = Vec::new();
    let add = |groups: &mut Vec<PlannedGroup>, group: &str, ev: Planned| match groups
        .iter_mut()
        .find(|g| g.name == group)
    {
        Some(g) => g.events.push(ev),
        None => groups.push(PlannedGroup {
            name: group.to_string(),
            events: vec![ev],
        }),
    };
    for bi in BUILTINS.iter().filter(|bi| s.wants(bi.desc)) {
        let ev = Planned {
            name: bi.name.into(),
            spec: bi.spec,
            desc: bi.desc,
            event_label: None,
            scale: bi.scale,
        };
        add(&mut groups, bi.group, ev);
    }
    for raw in &s.config.perf.events {
        let desc = raw_desc(raw.subsystem);
        if !s.wants(desc) {
            continue;
        }
        let config = match raw.raw_config() {
            Ok(c) => c,
            Err(e) => {
                left_out.push(format!("{}: {e}", raw.name));
                continue;
            }
        };
        let type_ = match &raw.pmu {
            None => perf_sys::TYPE_RAW,
            Some(pmu) => match pmu_type(s, pmu) {
                Ok(t) => t,
                Err(e) => {
                    tracing::warn!("perf: event {} left out: {e}", raw.name);
                    left_out.push(format!("{}: {e}", raw.name));
                    continue;
                }
            },
        };
        let spec = EventSpec {
            type_,
            config,
            config1: raw.config1,
            config2: raw.config2,
        };
        let ev = Planned {
            name: raw.name.clone(),
            spec,
            desc,
            event_label: Some(raw.name.clone()),
            scale: 1.0,
        };
        add(&mut groups, raw.group.as_deref().unwrap_or(&raw.name), ev);
    }
    (groups, left_out)
}

/// The `type` of a dynamic PMU, from `/sys/bus/event_source/devices/<pmu>/type`.
pub fn pmu_type(s: &Settings, pmu: &str) -> Result<u32, String> {
    if pmu.is_empty() || pmu.contains('/') || pmu.starts_with('.') {
        return Err(format!("bad PMU name {pmu:?}", pmu = Excerpt(pmu)));
    }
    let p: PathBuf = s.paths.sys(format!("bus/event_source/devices/{pmu}/type"));
    let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    text.trim().parse().map_err(|_| {
        format!(
            "{}: {:?} is not a PMU type",
            p.display(),
            Excerpt(text.trim())
        )
    })
}

impl Collector for PerfCollector {
    fn name(&self) -> &'static str {
        "perf"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        if let Some(reason) = &self.unsupported {
            return Err(CollectError::Unsupported {
                path: "perf_event_open(2)".into(),
                reason: reason.clone(),
            });
        }
        // A group none of whose series the page serves (the software events on the stack's
        // 100 ms page) is not read: its counts go on in the kernel, and each read of a
        // CPU's counters is a call on that CPU (an interrupt to it when it is another).
        self.wanted.clear();
        self.wanted.extend(
            self.plans
                .iter()
                .map(|pg| out.wants(&RUNNING_RATIO) || pg.events.iter().any(|e| out.wants(e.desc))),
        );
        for l in &mut self.live {
            let pg = &self.plans[l.plan];
            if !self.wanted[l.plan] {
                continue;
            }
            self.reads += 1;
            let counts = l.group.read().map_err(|e| CollectError::Io {
                path: format!("perf group {} on CPU {}", pg.name, l.group.cpu).into(),
                source: e,
            })?;
            // A CPU taken offline after start: its counters read empty; skip, keep the others.
            let Some(counts) = counts else { continue };
            if let Some(r) = counts.running_ratio() {
                out.push_values(&RUNNING_RATIO, &[&l.cpu_label, &pg.name], r);
            }
            for (i, &m) in l.group.members.iter().enumerate() {
                let ev = &pg.events[m];
                let Some(v) = counts.scaled(i) else { continue };
                match &ev.event_label {
                    Some(e) => out.push_values(ev.desc, &[&l.cpu_label, e], v * ev.scale),
                    None => out.push_values(ev.desc, &[&l.cpu_label], v * ev.scale),
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "perf_tests.rs"]
mod tests;
