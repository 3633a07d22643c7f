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
use super::sysfs_scan::ScanFailure;
use super::{Collector, Settings};
use crate::error::{CollectError, ParseError};
use crate::read::{dir_names, read_into};
use crate::scrape::{Desc, Scrape, Unit};
use std::path::PathBuf;
use std::time::{Duration, Instant};

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
    t.parse()
        .map_err(|_| ParseError::new(1, format!("{t:?} is not an unsigned integer")))
}

/// Parses a state's `name` attribute: one line of text, which must not be empty.
pub fn parse_name(text: &str) -> Result<&str, ParseError> {
    let t = text.trim();
    if t.is_empty() || t.contains('\n') {
        return Err(ParseError::new(1, format!("{t:?} is not a state name")));
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
    scanned: Option<Instant>,
    /// A read failed since the last scan: rescan after [`RETRY`] rather than [`RESCAN`].
    retry: bool,
    /// The last scan's error, repeated until the next scan.
    scan_failure: ScanFailure,
    /// A cap on kept-open files below the [`FD_SHARE`] budget (tests set it to read by path).
    max_open: usize,
    buf: String,
}

impl CpuidleCollector {
    pub fn new(s: &Settings) -> Self {
        CpuidleCollector {
            cpu_root: s.paths.sys("devices/system/cpu"),
            states: Vec::new(),
            scanned: None,
            retry: false,
            scan_failure: ScanFailure::default(),
            max_open: usize::MAX,
            buf: String::new(),
        }
    }

    fn read_counter(&mut self, attr: &Attr) -> Result<u64, CollectError> {
        attr.read(&mut self.buf)?;
        parse_counter(&self.buf).map_err(|e| CollectError::parse(attr.path(), e))
    }

    fn scan(&mut self) -> Result<(), CollectError> {
        self.scanned = Some(Instant::now());
        self.retry = false;
        self.states.clear();
        let mut budget = Budget::share_of_limit(FD_SHARE).capped(self.max_open);
        for cpu_name in dir_names(&self.cpu_root)? {
            let Some(n) = cpu_name.strip_prefix("cpu") else {
                continue;
            };
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
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
        if self.states.is_empty() {
            return Err(CollectError::Unsupported {
                path: self.cpu_root.join("cpu0/cpuidle"),
                reason: "no CPU has cpuidle states (no idle driver)".into(),
            });
        }
        Ok(())
    }
}

impl Collector for CpuidleCollector {
    fn name(&self) -> &'static str {
        "cpuidle"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        let wait = if self.retry { RETRY } else { RESCAN };
        if self.scanned.is_none_or(|t| t.elapsed() >= wait) {
            let res = self.scan();
            self.scan_failure.record(res)?;
        }
        self.scan_failure.repeat()?;
        let states = std::mem::take(&mut self.states);
        let mut first_err = None;
        let mut ok = 0;
        for st in &states {
            let read = self
                .read_counter(&st.time)
                .and_then(|t| Ok((t, self.read_counter(&st.usage)?)));
            match read {
                Ok((time_us, usage)) => {
                    let labels = || vec![("cpu", st.cpu.clone()), ("state", st.name.clone())];
                    out.push(&IDLE_TIME, labels(), time_us as f64 / 1e6);
                    out.push(&IDLE_ENTRIES, labels(), usage as f64);
                    ok += 1;
                }
                // A CPU going offline must not hide the others; rescan next time.
                Err(e) => {
                    self.retry = true;
                    first_err.get_or_insert(e);
                }
            }
        }
        self.states = states;
        match first_err {
            Some(e) if ok == 0 => Err(e),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let got: Vec<(&str, Vec<String>, f64)> = out
            .families()
            .flat_map(|f| {
                f.samples.iter().map(move |s| {
                    (
                        f.desc.name,
                        s.labels.iter().map(|l| l.1.clone()).collect(),
                        s.value,
                    )
                })
            })
            .collect();
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
        c.scanned = None;
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
