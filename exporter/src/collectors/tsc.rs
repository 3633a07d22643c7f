//! The time stamp counter read once, on the CPU the exporter runs on, for every CPU.
//!
//! Reading another CPU's TSC (through the perf msr PMU or `/dev/cpu/N/msr`) is a call on that
//! CPU: an interrupt to it, which on a VM wakes an idle vCPU. Where the kernel keeps time
//! with the TSC, it has checked that every CPU's TSC is in step (the TSC sync check as each
//! CPU comes up; a TSC found out of step is marked unstable and the kernel leaves it for
//! another clocksource), so the reading CPU's own `rdtsc` is every CPU's value. Taken only
//! when the clocksource is `tsc` and the CPU says its TSC is invariant (`constant_tsc` and
//! `nonstop_tsc` in `/proc/cpuinfo`: it runs at one rate, through frequency changes and idle
//! states); otherwise each CPU's register is read as before.

use crate::paths::Paths;

/// Whether the TSC of the reading CPU stands for every CPU's, and if not why (for the log).
pub fn in_step(paths: &Paths) -> Result<(), String> {
    if !cfg!(target_arch = "x86_64") {
        return Err("no x86-64 TSC instruction on this architecture".into());
    }
    let source_path = paths.sys("devices/system/clocksource/clocksource0/current_clocksource");
    let source = std::fs::read_to_string(&source_path)
        .map_err(|e| format!("{}: {e}", source_path.display()))?;
    if source.trim() != "tsc" {
        return Err(format!(
            "the kernel keeps time with {:?}, not the TSC",
            source.trim()
        ));
    }
    let cpuinfo_path = paths.proc("cpuinfo");
    let cpuinfo = std::fs::read_to_string(&cpuinfo_path)
        .map_err(|e| format!("{}: {e}", cpuinfo_path.display()))?;
    let missing = missing_flags(&cpuinfo);
    if !missing.is_empty() {
        return Err(format!("the CPU's flags lack {}", missing.join(", ")));
    }
    Ok(())
}

/// The invariant-TSC flags the first CPU's `flags` line of `/proc/cpuinfo` lacks (all of
/// them when there is no such line).
pub fn missing_flags(cpuinfo: &str) -> Vec<&'static str> {
    let flags = cpuinfo
        .lines()
        .find_map(|l| {
            let (key, value) = l.split_once(':')?;
            (key.trim() == "flags").then_some(value)
        })
        .unwrap_or("");
    ["constant_tsc", "nonstop_tsc"]
        .into_iter()
        .filter(|f| !flags.split_whitespace().any(|x| x == *f))
        .collect()
}

/// The reading CPU's TSC.
#[allow(unsafe_code)]
pub fn read() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC exists on every x86-64 CPU and only reads the counter.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        unreachable!("in_step refuses every architecture but x86-64")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invariant_flags_are_read_from_the_first_flags_line() {
        let both = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu tsc constant_tsc rep_good nonstop_tsc cpuid\n";
        assert!(missing_flags(both).is_empty());
        let one = "processor\t: 0\nflags\t\t: fpu tsc constant_tsc\n";
        assert_eq!(missing_flags(one), ["nonstop_tsc"]);
        // A flag's name inside another is not the flag.
        let inside = "flags\t\t: xconstant_tsc nonstop_tsc_x\n";
        assert_eq!(missing_flags(inside), ["constant_tsc", "nonstop_tsc"]);
        assert_eq!(missing_flags(""), ["constant_tsc", "nonstop_tsc"]);
    }

    #[test]
    fn another_clocksource_or_flags_refuse_the_shortcut() {
        let root = std::env::temp_dir().join(format!("reveal-tsc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let put = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        let paths = Paths::new(root.join("proc"), root.join("sys"));
        assert!(in_step(&paths).unwrap_err().contains("current_clocksource"));
        put(
            "sys/devices/system/clocksource/clocksource0/current_clocksource",
            "hpet\n",
        );
        put("proc/cpuinfo", "flags\t\t: tsc constant_tsc nonstop_tsc\n");
        assert!(in_step(&paths).unwrap_err().contains("\"hpet\""));
        put(
            "sys/devices/system/clocksource/clocksource0/current_clocksource",
            "tsc\n",
        );
        if cfg!(target_arch = "x86_64") {
            assert_eq!(in_step(&paths), Ok(()));
            let (a, b) = (read(), read());
            assert!(b >= a, "the TSC does not run backwards: {a} then {b}");
        }
        put("proc/cpuinfo", "flags\t\t: tsc constant_tsc\n");
        assert!(in_step(&paths).unwrap_err().contains("nonstop_tsc"));
        let _ = std::fs::remove_dir_all(&root);
    }
}
