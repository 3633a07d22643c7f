//! CPU frequency per CPU, and the policy's limits, from cpufreq in sysfs.
//!
//! Files (<https://docs.kernel.org/admin-guide/pm/cpufreq.html>, "Policy Interface in sysfs"),
//! each one integer in kHz:
//! ```text
//! devices/system/cpu/cpu0/cpufreq/scaling_cur_freq    2400000
//! devices/system/cpu/cpu0/cpufreq/scaling_min_freq    800000
//! devices/system/cpu/cpu0/cpufreq/scaling_max_freq    3500000
//! devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq    3500000
//! ```
//! `cpuN/cpufreq` is a link to the CPU's policy directory; CPUs sharing a policy show the same
//! values. Virtual machines usually have no cpufreq driver and so no `cpufreq` directory under
//! any CPU: the collector is then `Unsupported` (the case on the development VM, whose hypervisor
//! exposes no frequency control).
//!
//! Cost: the current frequency is read every scrape; the limits change only when someone (a
//! user, thermald, a power-capping daemon) writes the policy, so they are read with the
//! directory scan, at most [`RESCAN`] apart, which halves the files opened per scrape.

use super::sysfs_attr::{Attr, Budget};
use super::sysfs_scan::{cpu_number, found_any, Rescan};
use super::{Collector, Settings};
use crate::error::{CollectError, ParseError};
use crate::read::{dir_names, read_into};
use crate::scrape::{Desc, Scrape, Unit};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a CPU list and the policy limits are reused before the directory is read again
/// (CPU hotplug, a driver loaded late, limits written). A failed read brings the next scan
/// forward to [`RETRY`].
pub const RESCAN: Duration = Duration::from_secs(5);
/// The earliest rescan after a failed read, so a file that stays broken does not cost a scan
/// on every scrape.
pub const RETRY: Duration = Duration::from_secs(1);
/// Share of the process's descriptor limit (1/N) this collector may keep open between
/// scrapes; beyond it, files are read by path.
pub const FD_SHARE: usize = 16;

pub static FREQUENCY: Desc = Desc::gauge(
    "reveal_cpu_frequency",
    Unit::Hertz,
    &["cpu"],
    "Current frequency of each CPU as its cpufreq driver reports it (scaling_cur_freq).",
);
pub static MIN_FREQUENCY: Desc = Desc::gauge(
    "reveal_cpu_frequency_min",
    Unit::Hertz,
    &["cpu"],
    "Lowest frequency the CPU's cpufreq policy allows (scaling_min_freq).",
);
pub static MAX_FREQUENCY: Desc = Desc::gauge(
    "reveal_cpu_frequency_max",
    Unit::Hertz,
    &["cpu"],
    "Highest frequency the CPU's cpufreq policy allows (scaling_max_freq); below the hardware \
     maximum when the policy is capped.",
);
pub static HARDWARE_MAX_FREQUENCY: Desc = Desc::gauge(
    "reveal_cpu_frequency_hardware_max",
    Unit::Hertz,
    &["cpu"],
    "Highest frequency the CPU supports (cpuinfo_max_freq).",
);

pub static METRICS: &[&Desc] = &[
    &FREQUENCY,
    &MIN_FREQUENCY,
    &MAX_FREQUENCY,
    &HARDWARE_MAX_FREQUENCY,
];

/// Parses a cpufreq attribute (an integer in kHz, e.g. `2400000\n`) into hertz.
pub fn parse_khz(text: &str) -> Result<f64, ParseError> {
    let t = text.trim();
    let khz: u64 = t.parse().map_err(|_| {
        ParseError::new(
            1,
            format!("{:?} is not a frequency in kHz", crate::error::Excerpt(t)),
        )
    })?;
    Ok(khz as f64 * 1e3)
}

struct Cpu {
    label: String,
    cur: Attr,
    /// Policy limits read at the last scan; `None` where the file is missing or unreadable.
    min: Option<f64>,
    max: Option<f64>,
    hw_max: Option<f64>,
}

pub struct CpufreqCollector {
    cpu_root: PathBuf,
    cpus: Vec<Cpu>,
    /// Scans every [`RESCAN`], after [`RETRY`] once a read failed.
    rescan: Rescan,
    /// A cap on kept-open files below the [`FD_SHARE`] budget (tests set it to read by path).
    max_open: usize,
    buf: String,
}

impl CpufreqCollector {
    pub fn new(s: &Settings) -> Self {
        CpufreqCollector {
            cpu_root: s.paths.sys("devices/system/cpu"),
            cpus: Vec::new(),
            rescan: Rescan::new(RESCAN, RETRY),
            max_open: usize::MAX,
            buf: String::new(),
        }
    }

    fn read_khz(&mut self, path: &Path) -> Result<f64, CollectError> {
        read_into(path, &mut self.buf)?;
        parse_khz(&self.buf).map_err(|e| CollectError::parse(path, e))
    }

    /// Lists the CPUs that have a cpufreq directory and reads their policy limits.
    fn scan(&mut self) -> Result<(), CollectError> {
        self.cpus.clear();
        let mut budget = Budget::share_of_limit(FD_SHARE).capped(self.max_open);
        for name in dir_names(&self.cpu_root)? {
            let Some(n) = cpu_number(&name) else {
                continue;
            };
            let dir = self.cpu_root.join(&name).join("cpufreq");
            if !dir.is_dir() {
                continue;
            }
            // A limit that cannot be read is left out; the current frequency is what matters.
            let min = self.read_khz(&dir.join("scaling_min_freq")).ok();
            let max = self.read_khz(&dir.join("scaling_max_freq")).ok();
            let hw_max = self.read_khz(&dir.join("cpuinfo_max_freq")).ok();
            self.cpus.push(Cpu {
                label: n.to_string(),
                cur: budget.attr(dir.join("scaling_cur_freq")),
                min,
                max,
                hw_max,
            });
        }
        found_any(
            &self.cpus,
            || self.cpu_root.join("cpu0/cpufreq"),
            "no CPU has a cpufreq directory (no cpufreq driver, common in VMs)",
        )
    }
}

impl Collector for CpufreqCollector {
    fn name(&self) -> &'static str {
        "cpufreq"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        let scanned = self.rescan.due().then(|| self.scan());
        self.rescan.check(scanned)?;
        let buf = &mut self.buf;
        // Any failed read (a CPU going offline) calls for an early rescan.
        self.rescan.read_each(
            &self.cpus,
            |_| true,
            |c| {
                c.cur.read(buf)?;
                let hz = parse_khz(buf).map_err(|e| CollectError::parse(c.cur.path(), e))?;
                out.push(&FREQUENCY, vec![("cpu", c.label.clone())], hz);
                let limits = [
                    (&MIN_FREQUENCY, c.min),
                    (&MAX_FREQUENCY, c.max),
                    (&HARDWARE_MAX_FREQUENCY, c.hw_max),
                ];
                for (desc, v) in limits {
                    if let Some(v) = v {
                        out.push(desc, vec![("cpu", c.label.clone())], v);
                    }
                }
                Ok(())
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectors::test_util::{owned, samples};
    use crate::paths::Paths;
    use proptest::prelude::*;

    #[test]
    fn parses_khz_to_hertz() {
        assert_eq!(parse_khz("2400000\n").unwrap(), 2.4e9);
        assert_eq!(parse_khz("800000").unwrap(), 8e8);
        assert!(parse_khz("").is_err());
        assert!(parse_khz("<unknown>\n").is_err());
        assert!(parse_khz("-1").is_err());
    }

    fn tree(tag: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("reveal-cpufreq-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (rel, text) in files {
            let p = dir.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    #[test]
    fn missing_cpufreq_is_unsupported() {
        let dir = tree("none", &[("devices/system/cpu/cpu0/online", "1\n")]);
        let s = Settings {
            paths: Paths::new(&dir, &dir),
            ..Default::default()
        };
        let mut c = CpufreqCollector::new(&s);
        let err = c.update(&mut Scrape::new()).unwrap_err();
        assert!(err.is_unsupported(), "{err}");
        // Updates before the next scan repeat the failure, word for word (logged once).
        let again = c.update(&mut Scrape::new()).unwrap_err();
        assert_eq!(again.to_string(), err.to_string());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn reads_cpus_that_have_cpufreq_and_survives_one_going_away() {
        let f = "devices/system/cpu/cpu";
        let dir = tree(
            "some",
            &[
                (&format!("{f}0/cpufreq/scaling_cur_freq"), "2400000\n"),
                (&format!("{f}0/cpufreq/scaling_min_freq"), "800000\n"),
                (&format!("{f}0/cpufreq/scaling_max_freq"), "3000000\n"),
                (&format!("{f}0/cpufreq/cpuinfo_max_freq"), "3500000\n"),
                (&format!("{f}2/cpufreq/scaling_cur_freq"), "1200000\n"),
                (&format!("{f}3/online"), "0\n"),
            ],
        );
        let s = Settings {
            paths: Paths::new(&dir, &dir),
            ..Default::default()
        };
        let mut c = CpufreqCollector::new(&s);
        let mut out = Scrape::new();
        c.update(&mut out).unwrap();
        assert_eq!(
            samples(&out),
            vec![
                ("reveal_cpu_frequency", owned(&["0"]), 2.4e9),
                ("reveal_cpu_frequency", owned(&["2"]), 1.2e9),
                ("reveal_cpu_frequency_min", owned(&["0"]), 8e8),
                ("reveal_cpu_frequency_max", owned(&["0"]), 3e9),
                ("reveal_cpu_frequency_hardware_max", owned(&["0"]), 3.5e9),
            ]
        );
        // sysfs refuses reads of a removed attribute through a kept file (ENODEV), but a file
        // here stays readable after unlinking: rescan reading by path, as a removal then
        // shows the way it would on a real host.
        c.max_open = 0;
        c.rescan.expire();
        c.update(&mut Scrape::new()).unwrap();
        std::fs::remove_dir_all(dir.join(format!("{f}2"))).unwrap();
        let mut out = Scrape::new();
        c.update(&mut out).unwrap();
        assert_eq!(out.sample_count(), 4);
        assert!(
            c.rescan.retrying(),
            "a failed read asks for an early rescan"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,40}") {
            let _ = parse_khz(&s);
        }
    }
}
