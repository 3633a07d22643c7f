//! turbostat's counters: APERF, MPERF and TSC per CPU, the SMI count, and core and package
//! C-state residency, as raw counters so PromQL can derive turbostat's columns:
//!
//! ```text
//! Busy%   = rate(reveal_cpu_mperf_cycles_total) / rate(reveal_cpu_tsc_cycles_total)
//! Bzy_MHz = rate(reveal_cpu_tsc_cycles_total) * rate(aperf) / rate(mperf) / 1e6
//! CPU%c6  = rate(reveal_cpu_cstate_residency_cycles_total{scope="core",state="c6"}) / rate(tsc)
//! ```
//! (`rate(tsc)` is the TSC frequency; `reveal_cpu_tsc_frequency_hertz` is the same number
//! measured once at start, for a single scrape.)
//!
//! Sources, per register, whichever this host offers (checked at start, logged once):
//! 1. the perf `msr` PMU (`/sys/bus/event_source/devices/msr`, events `tsc aperf mperf smi`;
//!    arch/x86/events/msr.c), read as per-CPU perf groups; counts start at 0 when opened;
//! 2. the MSR device `/dev/cpu/N/msr` (`msr` module, CAP_SYS_RAWIO): IA32_TSC 0x10,
//!    MSR_SMI_COUNT 0x34, IA32_MPERF 0xE7, IA32_APERF 0xE8 (Intel SDM vol. 4; AMD APM vol. 2),
//!    absolute register values.
//!
//! The TSC itself, before either, is read once on the exporter's own CPU for every CPU where
//! the kernel vouches that all CPUs' TSCs are in step ([`super::tsc`]): no call on each CPU.
//!
//! C-states come from the `cstate_core` and `cstate_pkg` PMUs (arch/x86/events/intel/cstate.c),
//! opened on the CPUs their `cpumask` names (one per core or package). Their counters run at
//! the TSC rate.

use super::perf::pmu_type;
use super::perf_group::{self, describe_open_error, KernelOpener, OpenGroup, Opener};
use super::{Collector, Settings};
use crate::error::{CollectError, ParseError};
use crate::perf_sys::EventSpec;
use crate::scrape::{Desc, Scrape, Unit};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

pub static APERF: Desc = Desc::counter(
    "reveal_cpu_aperf_cycles",
    Unit::None,
    &["cpu"],
    "Actual performance clock cycles while in C0 (IA32_APERF); with MPERF gives the busy frequency.",
);
pub static MPERF: Desc = Desc::counter(
    "reveal_cpu_mperf_cycles",
    Unit::None,
    &["cpu"],
    "Maximum-performance (TSC-rate) clock cycles while in C0 (IA32_MPERF); over TSC gives Busy%.",
);
pub static TSC: Desc = Desc::counter(
    "reveal_cpu_tsc_cycles",
    Unit::None,
    &["cpu"],
    "Time stamp counter cycles (constant rate).",
);
pub static SMI: Desc = Desc::counter(
    "reveal_cpu_smi",
    Unit::None,
    &["cpu"],
    "System management interrupts (MSR_SMI_COUNT; counted per package, reported by each CPU).",
);
pub static CSTATE: Desc = Desc::counter(
    "reveal_cpu_cstate_residency_cycles",
    Unit::None,
    &["cpu", "scope", "state"],
    "Cycles (at the TSC rate) spent in a hardware C-state, per core or per package (reported by the CPU the cstate PMU designates).",
);
pub static TSC_HZ: Desc = Desc::gauge(
    "reveal_cpu_tsc_frequency",
    Unit::Hertz,
    &[],
    "TSC frequency measured against the monotonic clock over 50 ms at start.",
);

pub static METRICS: &[&Desc] = &[&APERF, &MPERF, &TSC, &SMI, &CSTATE, &TSC_HZ];

/// The per-CPU registers: perf msr PMU event name, MSR address, metric.
const REGS: [(&str, u64, &Desc); 4] = [
    ("tsc", 0x10, &TSC),
    ("aperf", 0xe8, &APERF),
    ("mperf", 0xe7, &MPERF),
    ("smi", 0x34, &SMI),
];

/// Parses a sysfs PMU event alias such as `event=0x03` (`events/c6-residency`). Only the
/// `event` term is understood: the msr and cstate PMUs define no other
/// (<https://docs.kernel.org/admin-guide/perf/index.html>; ABI file
/// sysfs-bus-event_source-devices-events).
pub fn parse_pmu_event(text: &str) -> Result<u64, ParseError> {
    let t = text.trim();
    let v = t.strip_prefix("event=").ok_or_else(|| {
        ParseError::new(
            1,
            format!("{:?}: expected event=<code>", crate::error::Excerpt(t)),
        )
    })?;
    let parsed = match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    };
    parsed.map_err(|_| {
        ParseError::new(
            1,
            format!("{:?} is not an event code", crate::error::Excerpt(v)),
        )
    })
}

/// What one perf group's members mean: (metric, scope/state labels).
#[derive(Debug, Clone)]
struct Member {
    desc: &'static Desc,
    extra: Vec<(&'static str, String)>,
}

struct Group {
    group: OpenGroup,
    cpu: String,
    members: Vec<Member>,
}

struct DevMsr {
    cpu: String,
    file: File,
    regs: Vec<(u64, &'static Desc)>,
}

pub struct MsrCollector {
    groups: Vec<Group>,
    devs: Vec<DevMsr>,
    /// The CPUs whose TSC is the reading CPU's own (`tsc::in_step`); empty when each is read
    /// on its CPU.
    own_tsc: Vec<String>,
    tsc_hz: Option<f64>,
    unsupported: Option<String>,
}

fn read_msr(f: &File, addr: u64) -> std::io::Result<u64> {
    let mut b = [0u8; 8];
    f.read_exact_at(&mut b, addr)?;
    Ok(u64::from_le_bytes(b))
}

/// What the collector could not open at start, for its one log line.
#[derive(Debug, Default)]
struct Notes {
    lines: Vec<String>,
    /// Something other than absent hardware (a refused permission, an unreadable file):
    /// the line is a warning.
    problem: bool,
}

impl Notes {
    /// A problem an operator can act on.
    fn push(&mut self, line: String) {
        self.problem = true;
        self.lines.push(line);
    }

    /// Hardware, a driver or a register this host simply does not have.
    fn absent(&mut self, line: String) {
        self.lines.push(line);
    }
}

impl MsrCollector {
    pub fn new(s: &Settings) -> Self {
        Self::with_opener(s, &mut KernelOpener)
    }

    pub fn with_opener(s: &Settings, opener: &mut dyn Opener) -> Self {
        let mut notes = Notes::default();
        let cpus_path = s.paths.sys("devices/system/cpu/online");
        let cpus = match std::fs::read_to_string(&cpus_path)
            .map_err(|e| e.to_string())
            .and_then(|t| perf_group::parse_cpu_list(&t).map_err(|e| e.to_string()))
        {
            Ok(c) => c,
            Err(e) => return MsrCollector::unsupported(format!("{}: {e}", cpus_path.display())),
        };
        let mut c = MsrCollector {
            groups: Vec::new(),
            devs: Vec::new(),
            own_tsc: Vec::new(),
            tsc_hz: None,
            unsupported: None,
        };
        // 0. The TSC, on this CPU for all, where they are in step.
        if s.wants(&TSC) {
            match super::tsc::in_step(&s.paths) {
                Ok(()) => {
                    c.own_tsc = cpus.iter().map(u32::to_string).collect();
                    notes.lines.push(format!(
                        "TSC read on the exporter's CPU for all {} (clocksource tsc, invariant: in step on every CPU)",
                        cpus.len()
                    ));
                }
                Err(why) => notes
                    .lines
                    .push(format!("TSC not taken from the exporter's CPU: {why}")),
            }
        }
        // 1. perf msr PMU: the registers it names.
        let own_tsc = !c.own_tsc.is_empty();
        let wanted: Vec<_> = REGS
            .iter()
            .filter(|r| s.wants(r.2) && !(own_tsc && std::ptr::eq(r.2, &TSC)))
            .collect();
        let mut from_pmu: Vec<&str> = Vec::new();
        match pmu_type(s, "msr") {
            Ok(ty) => {
                let mut missing = Vec::new();
                let mut specs = Vec::new();
                let mut members = Vec::new();
                for (name, _, desc) in &wanted {
                    match std::fs::read_to_string(
                        s.paths
                            .sys(format!("bus/event_source/devices/msr/events/{name}")),
                    ) {
                        Ok(t) => match parse_pmu_event(&t) {
                            Ok(code) => {
                                specs.push(EventSpec::new(ty, code));
                                members.push((
                                    *name,
                                    Member {
                                        desc,
                                        extra: Vec::new(),
                                    },
                                ));
                            }
                            Err(e) => notes.push(format!("msr PMU event {name}: {e}")),
                        },
                        Err(_) => missing.push(*name),
                    }
                }
                if !missing.is_empty() {
                    let s = if missing.len() > 1 { "s" } else { "" };
                    notes.absent(format!("msr PMU has no {} event{s}", missing.join(", ")));
                }
                let opened = c.open_groups(opener, &cpus, &specs, &members, "msr", &mut notes);
                from_pmu.extend(opened);
            }
            Err(e) => notes.absent(format!("no perf msr PMU ({e})")),
        }
        // 2. /dev/cpu/N/msr for the registers the PMU did not give.
        let rest: Vec<(u64, &'static Desc, &str)> = wanted
            .iter()
            .filter(|r| !from_pmu.contains(&r.0))
            .map(|r| (r.1, r.2, r.0))
            .collect();
        if !rest.is_empty() {
            c.open_devs(s, &cpus, &rest, &mut notes);
        }
        // 3. C-state residency PMUs.
        if s.wants(&CSTATE) {
            for (pmu, scope) in [("cstate_core", "core"), ("cstate_pkg", "package")] {
                c.open_cstate(s, opener, pmu, scope, &mut notes);
            }
        }
        if c.groups.is_empty() && c.devs.is_empty() && c.own_tsc.is_empty() {
            // The runner logs this once, on the first scrape.
            return MsrCollector::unsupported(notes.lines.join("; "));
        }
        // One line: what is left out and why. Hardware that is simply absent (a VM) is
        // information; anything else (a refused permission) a warning.
        if !notes.lines.is_empty() {
            let line = notes.lines.join("; ");
            if notes.problem {
                tracing::warn!(collector = "msr", "msr: {line}");
            } else {
                tracing::info!(collector = "msr", "msr: {line}");
            }
        }
        if s.wants(&TSC_HZ) {
            c.tsc_hz = c.calibrate_tsc();
        }
        c
    }

    fn unsupported(reason: String) -> Self {
        MsrCollector {
            groups: Vec::new(),
            devs: Vec::new(),
            own_tsc: Vec::new(),
            tsc_hz: None,
            unsupported: Some(reason),
        }
    }

    /// Opens `specs` as one group on each CPU; returns the names of events that opened on
    /// every CPU they were tried on (those then need no other source).
    fn open_groups<'a>(
        &mut self,
        opener: &mut dyn Opener,
        cpus: &[u32],
        specs: &[EventSpec],
        members: &[(&'a str, Member)],
        pmu: &str,
        notes: &mut Notes,
    ) -> Vec<&'a str> {
        if specs.is_empty() {
            return Vec::new();
        }
        let mut failed = vec![None; specs.len()];
        for &cpu in cpus {
            let (g, failures) = perf_group::open_group(opener, cpu, specs);
            for f in failures {
                failed[f.event].get_or_insert_with(|| {
                    (
                        describe_open_error(&f.error),
                        perf_group::is_absent(&f.error),
                    )
                });
            }
            if let Some(group) = g {
                let m = group
                    .members
                    .iter()
                    .map(|&i| members[i].1.clone())
                    .collect();
                self.groups.push(Group {
                    group,
                    cpu: cpu.to_string(),
                    members: m,
                });
            }
        }
        let mut ok = Vec::new();
        for (i, f) in failed.into_iter().enumerate() {
            match f {
                Some((why, absent)) => {
                    let line = format!("{pmu} PMU event {} left out: {why}", members[i].0);
                    if absent {
                        notes.absent(line);
                    } else {
                        notes.push(line);
                    }
                }
                None => ok.push(members[i].0),
            }
        }
        ok
    }

    fn open_devs(
        &mut self,
        s: &Settings,
        cpus: &[u32],
        regs: &[(u64, &'static Desc, &str)],
        notes: &mut Notes,
    ) {
        let mut refused: Vec<String> = Vec::new();
        // Whether every CPU's device file is missing (no msr module): absent, not refused.
        let mut all_missing = true;
        for &cpu in cpus {
            let path = s.paths.dev(format!("cpu/{cpu}/msr"));
            let file = match File::open(&path) {
                Ok(f) => f,
                Err(e) => {
                    all_missing &= e.kind() == std::io::ErrorKind::NotFound;
                    refused.push(format!("{}: {e}", path.display()));
                    continue;
                }
            };
            // A register the CPU lacks reads as EIO (#GP in the kernel): leave it out. One the
            // msr PMU already counts on this CPU (it failed only elsewhere) is not read twice.
            let label = cpu.to_string();
            let from_pmu = |d: &Desc| {
                self.groups
                    .iter()
                    .any(|g| g.cpu == label && g.members.iter().any(|m| std::ptr::eq(m.desc, d)))
            };
            let ok: Vec<_> = regs
                .iter()
                .filter(|(_, d, _)| !from_pmu(d))
                .filter(|(addr, _, _)| read_msr(&file, *addr).is_ok())
                .map(|(a, d, _)| (*a, *d))
                .collect();
            for (addr, _, name) in regs
                .iter()
                .filter(|(a, d, _)| !from_pmu(d) && !ok.iter().any(|(b, _)| a == b))
            {
                if cpu == cpus[0] {
                    notes.absent(format!(
                        "{} has no readable {name} (MSR {addr:#x})",
                        path.display()
                    ));
                }
            }
            if !ok.is_empty() {
                self.devs.push(DevMsr {
                    cpu: cpu.to_string(),
                    file,
                    regs: ok,
                });
            }
        }
        if let Some(first) = refused.first() {
            let line = format!("MSR device unavailable on {} of {} CPUs ({first}); it needs the msr module, root and CAP_SYS_RAWIO", refused.len(), cpus.len());
            if all_missing {
                notes.absent(line);
            } else {
                notes.push(line);
            }
        }
    }

    fn open_cstate(
        &mut self,
        s: &Settings,
        opener: &mut dyn Opener,
        pmu: &str,
        scope: &str,
        notes: &mut Notes,
    ) {
        let Ok(ty) = pmu_type(s, pmu) else { return }; // absent PMU: nothing to say per scrape
        let dir = s.paths.sys(format!("bus/event_source/devices/{pmu}"));
        let cpus = match std::fs::read_to_string(dir.join("cpumask"))
            .map_err(|e| e.to_string())
            .and_then(|t| perf_group::parse_cpu_list(&t).map_err(|e| e.to_string()))
        {
            Ok(c) => c,
            Err(e) => return notes.push(format!("{pmu}: cpumask: {e}")),
        };
        let mut names = crate::read::dir_names(&dir.join("events")).unwrap_or_default();
        names.retain(|n| n.ends_with("-residency"));
        let mut specs = Vec::new();
        let mut members = Vec::new();
        for n in &names {
            match std::fs::read_to_string(dir.join("events").join(n))
                .map_err(|e| e.to_string())
                .and_then(|t| parse_pmu_event(&t).map_err(|e| e.to_string()))
            {
                Ok(code) => {
                    specs.push(EventSpec::new(ty, code));
                    let state = n.trim_end_matches("-residency").to_string();
                    members.push((
                        n.as_str(),
                        Member {
                            desc: &CSTATE,
                            extra: vec![("scope", scope.to_string()), ("state", state)],
                        },
                    ));
                }
                Err(e) => notes.push(format!("{pmu} event {n}: {e}")),
            }
        }
        self.open_groups(opener, &cpus, &specs, &members, pmu, notes);
    }

    /// TSC ticks per second on the first CPU that has a TSC, over 50 ms of the monotonic clock.
    fn calibrate_tsc(&mut self) -> Option<f64> {
        let a = self.read_tsc()?;
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_millis(50));
        let b = self.read_tsc()?;
        let dt = t0.elapsed().as_secs_f64();
        (b > a).then(|| (b - a) as f64 / dt)
    }

    fn read_tsc(&mut self) -> Option<u64> {
        if !self.own_tsc.is_empty() {
            return Some(super::tsc::read());
        }
        for g in &mut self.groups {
            if let Some(i) = g.members.iter().position(|m| std::ptr::eq(m.desc, &TSC)) {
                return g.group.read().ok().flatten().map(|c| c.values[i]);
            }
        }
        let d = self
            .devs
            .iter()
            .find(|d| d.regs.iter().any(|r| r.0 == 0x10))?;
        read_msr(&d.file, 0x10).ok()
    }
}

impl Collector for MsrCollector {
    fn name(&self) -> &'static str {
        "msr"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        if let Some(reason) = &self.unsupported {
            return Err(CollectError::Unsupported {
                path: "msr".into(),
                reason: reason.clone(),
            });
        }
        // What the page does not serve is not read (the slow page, where the 100 ms one
        // serves these whole): each read is a call on the counter's CPU.
        for g in &mut self.groups {
            if !g.members.iter().any(|m| out.wants(m.desc)) {
                continue;
            }
            let counts = g.group.read().map_err(|e| CollectError::Io {
                path: format!("msr/cstate perf group on CPU {}", g.cpu).into(),
                source: e,
            })?;
            let Some(counts) = counts else { continue };
            for (i, m) in g.members.iter().enumerate() {
                let Some(v) = counts.scaled(i) else { continue };
                // The descriptors' labels are `cpu` and then the member's own, in order.
                let mut values = [g.cpu.as_str(); 3];
                for (slot, (_, value)) in values[1..].iter_mut().zip(&m.extra) {
                    *slot = value;
                }
                out.push_values(m.desc, &values[..1 + m.extra.len()], v);
            }
        }
        if !self.own_tsc.is_empty() && out.wants(&TSC) {
            let v = super::tsc::read() as f64;
            for cpu in &self.own_tsc {
                out.push_values(&TSC, &[cpu], v);
            }
        }
        for d in &self.devs {
            for (addr, desc) in &d.regs {
                if !out.wants(desc) {
                    continue;
                }
                let v = read_msr(&d.file, *addr).map_err(|e| CollectError::Io {
                    path: format!("MSR {addr:#x} of CPU {}", d.cpu).into(),
                    source: e,
                })?;
                out.push_values(desc, &[&d.cpu], v as f64);
            }
        }
        if let Some(hz) = self.tsc_hz {
            out.push1(&TSC_HZ, hz);
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "msr_tests.rs"]
mod tests;
