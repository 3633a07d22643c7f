//! The msr collector on this host (the perf msr PMU offers the TSC here), on a sysfs tree whose
//! PMUs stand in for msr and cstate_core with the kernel's software clock, and on an MSR
//! device tree whose registers hold known values.

use super::*;
use crate::paths::Paths;
use proptest::prelude::*;
use std::path::{Path, PathBuf};

fn tmpdir(tag: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("reveal-msr-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// (sample name, labels, value)
type Row = (String, Vec<(&'static str, String)>, f64);

fn samples(c: &mut MsrCollector) -> Vec<Row> {
    let mut s = Scrape::new();
    c.update(&mut s).expect("update");
    s.families()
        .flat_map(|f| {
            f.samples
                .iter()
                .map(move |x| (f.desc.sample_name(), x.labels.clone(), x.value))
        })
        .collect()
}

fn perf_allowed() -> bool {
    let spec = EventSpec::new(crate::perf_sys::TYPE_SOFTWARE, 0);
    match KernelOpener.open(&spec, 0, None) {
        Ok(_) => true,
        Err(e) => {
            let msg = format!("SKIPPED: per-CPU perf events cannot be opened here: {e}");
            assert!(std::env::var_os("CI").is_none(), "{msg}");
            eprintln!("{msg}");
            false
        }
    }
}

#[test]
fn pmu_event_aliases() {
    assert_eq!(parse_pmu_event("event=0x03\n").unwrap(), 3);
    assert_eq!(parse_pmu_event("event=0x00").unwrap(), 0);
    assert_eq!(parse_pmu_event("event=7").unwrap(), 7);
    assert!(parse_pmu_event("umask=0x1").is_err());
    assert!(parse_pmu_event("event=0xzz").is_err());
    assert!(parse_pmu_event("").is_err());
}

proptest! {
    #[test]
    fn pmu_event_parser_never_panics(s in ".{0,30}") {
        let _ = parse_pmu_event(&s);
    }
}

/// Two CPUs' MSR device files with known registers: TSC 3 × base, SMI 2, APERF base (1000
/// and 5000). Returns the collector's settings.
fn msr_device_tree(root: &Path) -> Settings {
    write(root, "sys/devices/system/cpu/online", "0-1\n");
    for (cpu, base) in [(0u64, 1000u64), (1, 5000)] {
        // The device addresses a register by its number, a file by its byte offset, so in this
        // stand-in MPERF (0xE7) is one byte of its own followed by the low 7 bytes of APERF.
        let mut regs = vec![0u8; 0xe8 + 8];
        for (addr, v) in [(0x10usize, base * 3), (0x34, 2), (0xe8, base)] {
            regs[addr..addr + 8].copy_from_slice(&v.to_le_bytes());
        }
        regs[0xe7] = 0x10;
        let p = root.join(format!("dev/cpu/{cpu}/msr"));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, regs).unwrap();
    }
    Settings {
        paths: Paths::new(root.join("proc"), root.join("sys")).with_devfs(root.join("dev")),
        ..Settings::default()
    }
}

#[test]
fn msr_device_registers_are_read_as_written() {
    let root = tmpdir("dev");
    let s = msr_device_tree(&root);
    let mut c = MsrCollector::new(&s);
    let got = samples(&mut c);
    let find = |name: &str, cpu: &str| {
        got.iter()
            .find(|(n, l, _)| n == name && l[0].1 == cpu)
            .map(|x| x.2)
            .unwrap_or_else(|| panic!("{name} cpu {cpu} missing in {got:?}"))
    };
    assert_eq!(find("reveal_cpu_aperf_cycles_total", "1"), 5000.0);
    assert_eq!(
        find("reveal_cpu_mperf_cycles_total", "1"),
        (5000 * 256 + 0x10) as f64
    );
    assert_eq!(find("reveal_cpu_tsc_cycles_total", "0"), 3000.0);
    assert_eq!(find("reveal_cpu_smi_total", "0"), 2.0);
    // The registers of a file do not move, so no TSC frequency can be measured.
    assert!(!got
        .iter()
        .any(|(n, _, _)| n == "reveal_cpu_tsc_frequency_hertz"));
}

#[test]
fn a_tsc_in_step_is_read_once_on_this_cpu_for_every_cpu() {
    if !cfg!(target_arch = "x86_64") {
        eprintln!("SKIPPED: rdtsc is x86-64's; elsewhere each CPU's register is read");
        return;
    }
    let root = tmpdir("own-tsc");
    let s = msr_device_tree(&root);
    write(
        &root,
        "sys/devices/system/clocksource/clocksource0/current_clocksource",
        "tsc\n",
    );
    write(
        &root,
        "proc/cpuinfo",
        "processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc\n",
    );
    let before = crate::collectors::tsc::read() as f64;
    let mut c = MsrCollector::new(&s);
    let got = samples(&mut c);
    let of = |name: &str| -> Vec<f64> {
        got.iter()
            .filter(|(n, _, _)| n == name)
            .map(|x| x.2)
            .collect()
    };
    // The running counter, not the device's TSC registers (3000 and 15000), the same for both
    // CPUs; the other registers still come from each CPU's device.
    let tsc = of("reveal_cpu_tsc_cycles_total");
    assert_eq!(tsc.len(), 2, "{got:?}");
    assert_eq!(tsc[0], tsc[1]);
    assert!(tsc[0] > before, "{} after {before}", tsc[0]);
    assert_eq!(of("reveal_cpu_aperf_cycles_total"), [1000.0, 5000.0]);
    // A running TSC can be calibrated: some rate of at least a megahertz.
    let hz = of("reveal_cpu_tsc_frequency_hertz");
    assert!(hz.len() == 1 && hz[0] > 1e6, "{hz:?}");
}

#[test]
fn sysfs_pmus_drive_msr_and_cstate_groups() {
    if !perf_allowed() {
        return;
    }
    // The PMU `type` 1 is PERF_TYPE_SOFTWARE and event 0 its cpu-clock: the kernel opens a
    // real, moving counter wherever the collector would open an msr or cstate event.
    let root = tmpdir("pmu");
    write(&root, "sys/devices/system/cpu/online", "0\n");
    write(&root, "sys/bus/event_source/devices/msr/type", "1\n");
    for e in ["tsc", "aperf", "mperf"] {
        write(
            &root,
            &format!("sys/bus/event_source/devices/msr/events/{e}"),
            "event=0x00\n",
        );
    }
    write(
        &root,
        "sys/bus/event_source/devices/cstate_core/type",
        "1\n",
    );
    write(
        &root,
        "sys/bus/event_source/devices/cstate_core/cpumask",
        "0\n",
    );
    write(
        &root,
        "sys/bus/event_source/devices/cstate_core/events/c6-residency",
        "event=0x00\n",
    );
    write(
        &root,
        "sys/bus/event_source/devices/cstate_core/events/c6-residency.unit",
        "ignored\n",
    );
    let s = Settings {
        paths: Paths::new(root.join("proc"), root.join("sys")).with_devfs(root.join("dev")),
        ..Settings::default()
    };
    let mut c = MsrCollector::new(&s);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let got = samples(&mut c);
    // Leader and followers both count (cpu-clock nanoseconds).
    for (name, labels, v) in &got {
        assert!(*v > 0.0, "{name} {labels:?} = {v}");
    }
    let names: Vec<&str> = got.iter().map(|x| x.0.as_str()).collect();
    for want in [
        "reveal_cpu_tsc_cycles_total",
        "reveal_cpu_aperf_cycles_total",
        "reveal_cpu_mperf_cycles_total",
        "reveal_cpu_cstate_residency_cycles_total",
        "reveal_cpu_tsc_frequency_hertz",
    ] {
        assert!(names.contains(&want), "{want} missing: {names:?}");
    }
    let cs = got
        .iter()
        .find(|x| x.0 == "reveal_cpu_cstate_residency_cycles_total")
        .unwrap();
    assert_eq!(
        cs.1,
        vec![
            ("cpu", "0".into()),
            ("scope", "core".into()),
            ("state", "c6".into())
        ]
    );
    // cpu-clock counts nanoseconds: the "TSC" measured here runs at about 1 GHz.
    let hz = got
        .iter()
        .find(|x| x.0 == "reveal_cpu_tsc_frequency_hertz")
        .unwrap()
        .2;
    assert!((0.5e9..1.5e9).contains(&hz), "{hz}");
}

#[test]
fn this_host() {
    let s = Settings::default();
    let mut c = MsrCollector::new(&s);
    let mut out = Scrape::new();
    match c.update(&mut out) {
        Ok(()) => {
            let tsc: Vec<_> = out
                .families()
                .filter(|f| std::ptr::eq(f.desc, &TSC))
                .flat_map(|f| &f.samples)
                .collect();
            eprintln!(
                "msr on this host: {} families, {} TSC series",
                out.families().count(),
                tsc.len()
            );
        }
        Err(e) => {
            assert!(e.is_unsupported(), "{e}");
            eprintln!("msr unsupported on this host: {e}");
        }
    }
}

/// Fails every open on one CPU, as a PMU that does not cover it would.
struct NotOnCpu(u32);

impl Opener for NotOnCpu {
    fn open(&mut self, spec: &EventSpec, cpu: u32, leader: Option<&File>) -> std::io::Result<File> {
        if cpu == self.0 {
            return Err(std::io::Error::from_raw_os_error(libc::ENODEV));
        }
        KernelOpener.open(spec, cpu, leader)
    }
}

#[test]
fn pmu_and_device_together_never_duplicate_a_series() {
    if !perf_allowed() {
        return;
    }
    let root = tmpdir("mixed");
    write(&root, "sys/devices/system/cpu/online", "0-1\n");
    // The msr PMU (standing in with the software clock) offers only the TSC, and only on CPU 0.
    write(&root, "sys/bus/event_source/devices/msr/type", "1\n");
    write(
        &root,
        "sys/bus/event_source/devices/msr/events/tsc",
        "event=0x00\n",
    );
    for cpu in 0..2 {
        let mut regs = vec![0u8; 0xe8 + 8];
        regs[0x10..0x18].copy_from_slice(&7777u64.to_le_bytes());
        regs[0xe8..0xf0].copy_from_slice(&5000u64.to_le_bytes());
        let p = root.join(format!("dev/cpu/{cpu}/msr"));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, regs).unwrap();
    }
    let s = Settings {
        paths: Paths::new(root.join("proc"), root.join("sys")).with_devfs(root.join("dev")),
        ..Settings::default()
    };
    let mut c = MsrCollector::with_opener(&s, &mut NotOnCpu(1));
    let got = samples(&mut c);
    let tsc: Vec<_> = got
        .iter()
        .filter(|x| x.0 == "reveal_cpu_tsc_cycles_total")
        .collect();
    assert_eq!(tsc.len(), 2, "one TSC series per CPU: {tsc:?}");
    // CPU 0 from the PMU (counting from 0 at open), CPU 1 from the device's register.
    let on = |cpu: &str| tsc.iter().find(|x| x.1[0].1 == cpu).unwrap().2;
    assert_ne!(on("0"), 7777.0);
    assert_eq!(on("1"), 7777.0);
    let aperf = got
        .iter()
        .filter(|x| x.0 == "reveal_cpu_aperf_cycles_total")
        .count();
    assert_eq!(aperf, 2);
}
