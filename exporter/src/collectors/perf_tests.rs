//! The perf collector on this host's real software events, and its hardware and raw-event
//! paths through the same code with openers that refuse them (as a VM without a virtual PMU
//! does) or stand in for them with a software counter.

use super::*;
use crate::collectors::perf_group::KernelOpener;
use crate::config::{ExporterConfig, PerfConfig, RawEvent};
use std::fs::File;
use std::io;
use std::sync::Arc;

/// Refuses the listed attr types with `errno`, opens the rest for real.
struct Refuse {
    types: Vec<u32>,
    errno: i32,
}

impl Opener for Refuse {
    fn open(&mut self, spec: &EventSpec, cpu: u32, leader: Option<&File>) -> io::Result<File> {
        if self.types.contains(&spec.type_) {
            return Err(io::Error::from_raw_os_error(self.errno));
        }
        KernelOpener.open(spec, cpu, leader)
    }
}

/// Opens the kernel's cpu-clock software counter in place of every hardware or raw event, so
/// the hardware path (grouping, reading, scaling, naming) runs on real descriptors.
struct StandIn {
    refuse_config: Option<u64>,
}

impl Opener for StandIn {
    fn open(&mut self, spec: &EventSpec, cpu: u32, leader: Option<&File>) -> io::Result<File> {
        if spec.type_ == perf_sys::TYPE_HARDWARE && Some(spec.config) == self.refuse_config {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        if spec.type_ == perf_sys::TYPE_SOFTWARE {
            return KernelOpener.open(spec, cpu, leader);
        }
        let clock = EventSpec::new(
            perf_sys::TYPE_SOFTWARE,
            u64::from(b::PERF_COUNT_SW_CPU_CLOCK),
        );
        KernelOpener.open(&clock, cpu, leader)
    }
}

/// Software per-CPU counters need CAP_PERFMON or perf_event_paranoid <= 0; without them the
/// test cannot run here. It says so, and fails under CI where it must run.
fn perf_allowed() -> bool {
    let spec = EventSpec::new(
        perf_sys::TYPE_SOFTWARE,
        u64::from(b::PERF_COUNT_SW_TASK_CLOCK),
    );
    match KernelOpener.open(&spec, 0, None) {
        Ok(_) => true,
        Err(e) => {
            let msg = format!("SKIPPED: per-CPU software perf events cannot be opened here: {e}");
            assert!(std::env::var_os("CI").is_none(), "{msg}");
            eprintln!("{msg}");
            false
        }
    }
}

fn scrape(c: &mut PerfCollector) -> Scrape {
    let mut s = Scrape::new();
    c.update(&mut s).expect("update");
    s
}

fn names(s: &Scrape) -> Vec<String> {
    s.families().map(|f| f.desc.sample_name()).collect()
}

fn cpus() -> usize {
    let t = std::fs::read_to_string(Settings::default().paths.sys("devices/system/cpu/online"))
        .unwrap();
    perf_group::parse_cpu_list(&t).unwrap().len()
}

/// The collector with the hardware and raw events refused as a host without a PMU refuses
/// them: the kernel's software events only.
fn software_only() -> PerfCollector {
    let mut opener = Refuse {
        types: vec![perf_sys::TYPE_HARDWARE, perf_sys::TYPE_RAW],
        errno: libc::ENOENT,
    };
    PerfCollector::with_opener(&Settings::default(), &mut opener)
}

#[test]
fn software_events_are_real_and_hardware_is_left_out() {
    if !perf_allowed() {
        return;
    }
    let mut c = software_only();
    assert_eq!(
        c.open_events(),
        vec![
            "context-switches",
            "cpu-migrations",
            "page-faults",
            "task-clock"
        ]
    );
    // Two reads half a second apart, with /proc/stat read right after each.
    let ctxt = || -> f64 {
        let text = std::fs::read_to_string(Settings::default().paths.proc("stat")).unwrap();
        crate::collectors::stat::parse_stat(&text)
            .unwrap()
            .context_switches
            .unwrap() as f64
    };
    let t0 = std::time::Instant::now();
    let first = scrape(&mut c);
    let ctxt0 = ctxt();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let wall = t0.elapsed().as_secs_f64();
    let second = scrape(&mut c);
    let ctxt1 = ctxt();
    assert!(!names(&second).contains(&"reveal_cpu_instructions_total".to_string()));
    let per_cpu = |s: &Scrape, d: &'static Desc| -> Vec<f64> {
        s.families()
            .filter(|f| std::ptr::eq(f.desc, d))
            .flat_map(|f| f.samples.iter().map(|s| s.value))
            .collect()
    };
    // CPU-wide task-clock advances with wall time on every CPU.
    let (a, b) = (per_cpu(&first, &TASK_CLOCK), per_cpu(&second, &TASK_CLOCK));
    assert_eq!(a.len(), cpus());
    for (x, y) in a.iter().zip(&b) {
        assert!(
            ((y - x) - wall).abs() < 0.1,
            "task clock moved {} s in {wall} s",
            y - x
        );
    }
    // The per-CPU context switches add up to the host total /proc/stat counts.
    let sum = |s: &Scrape| per_cpu(s, &CONTEXT_SWITCHES).iter().sum::<f64>();
    let (perf_cs, stat_cs) = (sum(&second) - sum(&first), ctxt1 - ctxt0);
    eprintln!("context switches in {wall:.3} s: perf {perf_cs}, /proc/stat {stat_cs}");
    assert!(
        (perf_cs - stat_cs).abs() <= 0.1 * stat_cs + 50.0,
        "perf counted {perf_cs} context switches, /proc/stat {stat_cs}"
    );
    let ratios: Vec<_> = second
        .families()
        .filter(|f| std::ptr::eq(f.desc, &RUNNING_RATIO))
        .flat_map(|f| &f.samples)
        .collect();
    assert_eq!(ratios.len(), cpus());
    assert!(ratios
        .iter()
        .all(|r| r.value == 1.0 && r.labels[1].1 == "software"));
}

#[test]
fn hardware_path_with_stand_in_counters() {
    if !perf_allowed() {
        return;
    }
    let cfg = ExporterConfig {
        perf: PerfConfig {
            events: vec![
                RawEvent {
                    name: "ls_dispatch.ld_dispatch".into(),
                    subsystem: crate::config::Subsystem::Memory,
                    event: Some(0x29),
                    umask: Some(1),
                    ..raw()
                },
                RawEvent {
                    name: "ls_dc_accesses".into(),
                    subsystem: crate::config::Subsystem::Memory,
                    event: Some(0x40),
                    ..raw()
                },
            ],
        },
    };
    let s = Settings {
        config: Arc::new(cfg),
        ..Settings::default()
    };
    // cycles is refused as a PMU refuses a group it cannot hold; instructions then leads.
    let mut c = PerfCollector::with_opener(
        &s,
        &mut StandIn {
            refuse_config: Some(u64::from(b::PERF_COUNT_HW_CPU_CYCLES)),
        },
    );
    assert!(!c.open_events().contains(&"cycles".to_string()));
    assert!(c.open_events().contains(&"instructions".to_string()));
    std::thread::sleep(std::time::Duration::from_millis(20));
    let out = scrape(&mut c);
    let n = names(&out);
    // Every stand-in counts nanoseconds of cpu-clock, leader and followers alike: a zero would
    // mean a member never ran (as when a group starts before its members join).
    for f in out
        .families()
        .filter(|f| !std::ptr::eq(f.desc, &RUNNING_RATIO))
    {
        for x in &f.samples {
            let sw = [&CONTEXT_SWITCHES, &MIGRATIONS, &PAGE_FAULTS];
            if !sw.iter().any(|d| std::ptr::eq(f.desc, *d)) {
                assert!(
                    x.value > 0.0,
                    "{} {:?} = {}",
                    f.desc.name,
                    x.labels,
                    x.value
                );
            }
        }
    }
    for want in [
        "reveal_cpu_instructions_total",
        "reveal_cpu_branch_misses_total",
        "reveal_cpu_cache_misses_total",
        "reveal_cpu_stalled_cycles_backend_total",
        "reveal_memory_perf_event_total",
        "reveal_cpu_perf_running_ratio",
    ] {
        assert!(n.contains(&want.to_string()), "{want} missing from {n:?}");
    }
    let raw: Vec<_> = out
        .families()
        .filter(|f| std::ptr::eq(f.desc, &RAW_MEMORY))
        .flat_map(|f| &f.samples)
        .collect();
    assert_eq!(raw.len(), 2 * cpus());
    assert!(raw.iter().any(|s| s.labels
        == vec![
            ("cpu", "0".to_string()),
            ("event", "ls_dc_accesses".to_string())
        ]));
    let groups: std::collections::BTreeSet<_> = out
        .families()
        .filter(|f| std::ptr::eq(f.desc, &RUNNING_RATIO))
        .flat_map(|f| f.samples.iter().map(|s| s.labels[1].1.clone()))
        .collect();
    let want: std::collections::BTreeSet<_> = [
        "cache",
        "core",
        "ls_dc_accesses",
        "ls_dispatch.ld_dispatch",
        "software",
        "stalls",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(groups, want);
}

fn raw() -> RawEvent {
    RawEvent {
        name: String::new(),
        subsystem: crate::config::Subsystem::Cpu,
        pmu: None,
        event: None,
        umask: None,
        cmask: None,
        inv: false,
        edge: false,
        config: None,
        config1: 0,
        config2: 0,
        group: None,
        help: None,
    }
}

#[test]
fn no_permission_is_unsupported_with_the_fix_named() {
    let s = Settings::default();
    let mut opener = Refuse {
        types: vec![0, 1, 2, 3, 4, 5],
        errno: libc::EACCES,
    };
    let mut c = PerfCollector::with_opener(&s, &mut opener);
    let err = c.update(&mut Scrape::new()).unwrap_err();
    assert!(err.is_unsupported());
    assert!(err.to_string().contains("CAP_PERFMON"), "{err}");
}

#[test]
fn groups_the_page_does_not_serve_are_not_read() {
    if !perf_allowed() {
        return;
    }
    let mut c = software_only();
    let n = cpus() as u64;
    // The whole page: the software group is read on every CPU.
    let _ = scrape(&mut c);
    assert_eq!(c.group_reads(), n);
    // A page that serves none of its series (the stack's 100 ms page): not read.
    let mut page = Scrape::new();
    let software = [&TASK_CLOCK, &CONTEXT_SWITCHES, &MIGRATIONS, &PAGE_FAULTS];
    page.skip_only(software.into_iter().chain([&RUNNING_RATIO]));
    c.update(&mut page).expect("update");
    assert_eq!(c.group_reads(), n);
    assert_eq!(page.sample_count(), 0);
    // One of them served: the group is read, and only that one is on the page.
    page.clear();
    page.skip_only(software[1..].iter().copied().chain([&RUNNING_RATIO]));
    c.update(&mut page).expect("update");
    assert_eq!(c.group_reads(), 2 * n);
    assert_eq!(names(&page), vec!["reveal_cpu_task_clock_seconds_total"]);
}

#[test]
fn unselected_events_are_not_opened() {
    if !perf_allowed() {
        return;
    }
    let sel =
        crate::selection::Selection::parse("metrics: [reveal_cpu_task_clock_seconds_total]\n")
            .unwrap();
    let s = Settings {
        selection: Some(Arc::new(sel)),
        ..Settings::default()
    };
    let c = PerfCollector::with_opener(&s, &mut KernelOpener);
    assert_eq!(c.open_events(), vec!["task-clock"]);
}

#[test]
fn events_left_out_are_one_line_per_reason_and_absent_hardware_is_not_a_warning() {
    let absent = "No such file or directory (os error 2): not supported by this CPU or hypervisor";
    let denied = "Permission denied (os error 13): per-CPU counters need CAP_PERFMON";
    let mut failed = BTreeMap::new();
    for name in ["cycles", "instructions", "branch-misses"] {
        failed.insert(
            name.to_string(),
            Failure {
                reason: absent.into(),
                absent: true,
                cpus: 2,
            },
        );
    }
    failed.insert(
        "cache-misses".to_string(),
        Failure {
            reason: denied.into(),
            absent: false,
            cpus: 1,
        },
    );
    let lines = summarize_left_out(&failed, 10, 2);
    assert_eq!(
        lines,
        [
            (
                false,
                format!("1 of 10 events left out on 1 of 2 CPUs (cache-misses): {denied}")
            ),
            (
                true,
                format!(
                    "3 of 10 events left out on 2 of 2 CPUs (branch-misses, cycles, \
                     instructions): {absent}"
                )
            ),
        ]
    );
    assert!(summarize_left_out(&BTreeMap::new(), 10, 2).is_empty());
}
