//! Time spent in, and entries into, each CPU idle state, from cpuidle in sysfs.
//!
//! Files (<https://docs.kernel.org/admin-guide/pm/cpuidle.html>, "Representation of Idle
//! States"), one value each:
//! ```text
//! devices/system/cpu/cpu0/cpuidle/state1/name     C1
//! devices/system/cpu/cpu0/cpuidle/state1/time     431071191      (microseconds)
//! devices/system/cpu/cpu0/cpuidle/state1/usage    43696          (entries)
//! ```
//! State names come from the idle driver: `POLL`, `C1`, `C1E`, `C6` with intel_idle or
//! acpi_idle; the development VM's haltpoll driver names its state `haltpoll idle`, and KVM
//! guests without haltpoll have only `POLL`. A host without any idle driver has no `cpuidle`
//! directory under its CPUs, and the collector is then `Unsupported`.
//!
//! Cost: names are read once per scan ([`RESCAN`]); a scrape reads two small files per CPU and
//! state, through kept-open files (see [`super::sysfs_attr`]).

use super::sysfs_attr::{Attr, Budget};
use super::sysfs_scan::{cpu_number, found_any, Rescan};
use super::{Collector, Settings};
use crate::error::{CollectError, ParseError};
use crate::read::{dir_names, read_into};
use crate::scrape::{Desc, Scrape, Unit};
use std::path::PathBuf;
use std::time::Duration;

/// How long the list of CPUs and states is reused before the directories are read again (CPU
/// hotplug, an idle driver loaded late). A failed read brings the next scan forward to
/// [`RETRY`].
pub const RESCAN: Duration = Duration::from_secs(10);
/// The earliest rescan after a failed read, so a file that stays broken does not cost a scan
/// on every scrape.
pub const RETRY: Duration = Duration::from_secs(1);
/// Share of the process's descriptor limit (1/N) this collector may keep open between scrapes
/// (two files per CPU and idle state: the most of any collector); beyond it, files are read by
/// path.
pub const FD_SHARE: usize = 4;

pub static IDLE_TIME: Desc = Desc::counter(
    "reveal_cpu_idle_state_time",
    Unit::Seconds,
    &["cpu", "state"],
    "Time each CPU spent in each idle state (deeper states save more power and wake slower).",
);
pub static IDLE_ENTRIES: Desc = Desc::counter(
    "reveal_cpu_idle_state_entries",
    Unit::None,
    &["cpu", "state"],
    "Times each CPU entered each idle state.",
);

pub static METRICS: &[&Desc] = &[&IDLE_TIME, &IDLE_ENTRIES];

/// Parses a cpuidle counter attribute (`time` or `usage`: one unsigned integer).
pub fn parse_counter(text: &str) -> Result<u64, ParseError> {
    let t = text.trim();
    t.parse().map_err(|_| {
        ParseError::new(
            1,
            format!("{:?} is not an unsigned integer", crate::error::Excerpt(t)),
        )
    })
}

/// Parses a state's `name` attribute: one line of text, which must not be empty.
pub fn parse_name(text: &str) -> Result<&str, ParseError> {
    let t = text.trim();
    if t.is_empty() || t.contains('\n') {
        return Err(ParseError::new(
            1,
            format!("{:?} is not a state name", crate::error::Excerpt(t)),
        ));
    }
    Ok(t)
}

struct State {
    cpu: String,
    name: String,
    time: Attr,
    usage: Attr,
}

pub struct CpuidleCollector {
    cpu_root: PathBuf,
    states: Vec<State>,
    /// Scans every [`RESCAN`], after [`RETRY`] once a read failed.
    rescan: Rescan,
    /// A cap on kept-open files below the [`FD_SHARE`] budget (tests set it to read by path).
    max_open: usize,
    buf: String,
}

impl CpuidleCollector {
    pub fn new(s: &Settings) -> Self {
        CpuidleCollector {
            cpu_root: s.paths.sys("devices/system/cpu"),
            states: Vec::new(),
            rescan: Rescan::new(RESCAN, RETRY),
            max_open: usize::MAX,
            buf: String::new(),
        }
    }

    fn scan(&mut self) -> Result<(), CollectError> {
        self.states.clear();
        let mut budget = Budget::share_of_limit(FD_SHARE).capped(self.max_open);
        for cpu_name in dir_names(&self.cpu_root)? {
            let Some(n) = cpu_number(&cpu_name) else {
                continue;
            };
            let idle = self.cpu_root.join(&cpu_name).join("cpuidle");
            // No cpuidle directory: this CPU (or the whole host) has no idle driver.
            let Ok(names) = dir_names(&idle) else {
                continue;
            };
            for st in names.iter().filter(|s| s.starts_with("state")) {
                let dir = idle.join(st);
                let name_path = dir.join("name");
                // A state whose name cannot be read cannot be labelled: leave it out.
                if read_into(&name_path, &mut self.buf).is_err() {
                    continue;
                }
                let Ok(name) = parse_name(&self.buf) else {
                    continue;
                };
                self.states.push(State {
                    cpu: n.to_string(),
                    name: name.to_string(),
                    time: budget.attr(dir.join("time")),
                    usage: budget.attr(dir.join("usage")),
                });
            }
        }
        found_any(
            &self.states,
            || self.cpu_root.join("cpu0/cpuidle"),
            "no CPU has cpuidle states (no idle driver)",
        )
    }
}

fn read_counter(attr: &Attr, buf: &mut String) -> Result<u64, CollectError> {
    attr.read(buf)?;
    parse_counter(buf).map_err(|e| CollectError::parse(attr.path(), e))
}

impl Collector for CpuidleCollector {
    fn name(&self) -> &'static str {
        "cpuidle"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        let scanned = self.rescan.due().then(|| self.scan());
        self.rescan.check(scanned)?;
        let buf = &mut self.buf;
        // Any failed read (a CPU going offline) calls for an early rescan.
        self.rescan.read_each(
            &self.states,
            |_| true,
            |st| {
                let time_us = read_counter(&st.time, buf)?;
                let usage = read_counter(&st.usage, buf)?;
                let labels = || vec![("cpu", st.cpu.clone()), ("state", st.name.clone())];
                out.push(&IDLE_TIME, labels(), time_us as f64 / 1e6);
                out.push(&IDLE_ENTRIES, labels(), usage as f64);
                Ok(())
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectors::test_util::samples;
    use crate::paths::Paths;
    use proptest::prelude::*;

    #[test]
    fn parses_attributes() {
        assert_eq!(parse_counter("431071191\n").unwrap(), 431071191);
        assert!(parse_counter("").is_err());
        assert!(parse_counter("-3\n").is_err());
        assert_eq!(parse_name("haltpoll idle\n").unwrap(), "haltpoll idle");
        assert_eq!(parse_name("C1E\n").unwrap(), "C1E");
        assert!(parse_name("\n").is_err());
        assert!(parse_name("a\nb\n").is_err());
    }

    #[test]
    fn reads_states_by_name_and_skips_broken_ones() {
        let dir = std::env::temp_dir().join(format!("reveal-cpuidle-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let files = [
            ("cpu0/cpuidle/state0/name", "POLL\n"),
            ("cpu0/cpuidle/state0/time", "1500000\n"),
            ("cpu0/cpuidle/state0/usage", "12\n"),
            ("cpu0/cpuidle/state1/name", "C6\n"),
            ("cpu0/cpuidle/state1/time", "garbage\n"),
            ("cpu0/cpuidle/state1/usage", "3\n"),
            ("cpu1/cpuidle/state0/time", "1\n"),
        ];
        for (rel, text) in files {
            let p = dir.join("devices/system/cpu").join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let s = Settings {
            paths: Paths::new(&dir, &dir),
            ..Default::default()
        };
        let mut c = CpuidleCollector::new(&s);
        let mut out = Scrape::new();
        c.update(&mut out).unwrap();
        let got = samples(&out);
        let l = |c: &str, s: &str| vec![c.to_string(), s.to_string()];
        assert_eq!(
            got,
            vec![
                ("reveal_cpu_idle_state_time", l("0", "POLL"), 1.5),
                ("reveal_cpu_idle_state_entries", l("0", "POLL"), 12.0),
            ]
        );
        // sysfs refuses reads of a removed attribute through a kept file (ENODEV), but a file
        // here stays readable after unlinking: rescan reading by path, as a removal then
        // shows the way it would on a real host.
        c.max_open = 0;
        c.rescan.expire();
        c.update(&mut Scrape::new()).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(c.update(&mut Scrape::new()).is_err());
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,40}") {
            let _ = parse_counter(&s);
            let _ = parse_name(&s);
        }
    }
}
