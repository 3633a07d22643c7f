//! CPU time per CPU and mode, each CPU's busy time, and the scheduler counters of `/proc/stat`.
//!
//! Format (<https://docs.kernel.org/filesystems/proc.html>, section 1.8):
//! ```text
//! cpu  10132153 290696 3084719 46828483 16683 0 25195 0 175628 0
//! cpu0 1393280 32966 572056 13343292 6130 0 17875 0 23933 0
//! ctxt 1990473
//! processes 2915
//! procs_running 1
//! procs_blocked 0
//! ```
//! CPU times are in USER_HZ ticks, converted to seconds here.

use super::{Collector, Settings};
use crate::error::Excerpt;
use crate::error::{CollectError, ParseError};
use crate::read::KeptFile;
use crate::scrape::{index_str, Desc, Scrape, Unit};

/// USER_HZ, the unit of `/proc/stat` times: fixed at 100 by the kernel's ABI on every
/// architecture Linux exposes procfs on (`sysconf(_SC_CLK_TCK)`).
const USER_HZ: f64 = 100.0;

/// Column names of a `cpuN` line, in kernel order; kernels before 2.6.33 print fewer.
const MODES: [&str; 10] = [
    "user",
    "nice",
    "system",
    "idle",
    "iowait",
    "irq",
    "softirq",
    "steal",
    "guest",
    "guest_nice",
];

pub static CPU_TIME: Desc = Desc::counter(
    "reveal_cpu_time",
    Unit::Seconds,
    &["cpu", "mode"],
    "Time each CPU spent in each mode (guest time is also counted in user and nice).",
);
pub static BUSY_TIME: Desc = Desc::counter(
    "reveal_cpu_busy",
    Unit::Seconds,
    &["cpu"],
    "Time each CPU spent neither idle nor waiting for I/O: the sum of its user, nice, system, \
     irq, softirq and steal time.",
);
pub static GUEST_TIME: Desc = Desc::counter(
    "reveal_cpu_guest_time",
    Unit::Seconds,
    &["cpu", "mode"],
    "Time each CPU spent running virtual CPUs of guests, already included in user and nice.",
);
pub static CONTEXT_SWITCHES: Desc = Desc::counter(
    "reveal_cpu_context_switches",
    Unit::None,
    &[],
    "Context switches across all CPUs.",
);
pub static FORKS: Desc = Desc::counter(
    "reveal_cpu_forks",
    Unit::None,
    &[],
    "Processes and threads created.",
);
pub static PROCS_RUNNING: Desc = Desc::gauge(
    "reveal_cpu_procs_running",
    Unit::None,
    &[],
    "Tasks in runnable state (running or waiting for a CPU).",
);
pub static PROCS_BLOCKED: Desc = Desc::gauge(
    "reveal_cpu_procs_blocked",
    Unit::None,
    &[],
    "Tasks blocked waiting for I/O to complete.",
);
pub static BOOT_TIME: Desc = Desc::gauge(
    "reveal_cpu_boot_time",
    Unit::Seconds,
    &[],
    "Time the host booted, in seconds since the Unix epoch.",
);

pub static METRICS: &[&Desc] = &[
    &CPU_TIME,
    &BUSY_TIME,
    &GUEST_TIME,
    &CONTEXT_SWITCHES,
    &FORKS,
    &PROCS_RUNNING,
    &PROCS_BLOCKED,
    &BOOT_TIME,
];

/// One `cpuN` line: ticks per mode, `None` for modes this kernel does not print.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuTimes {
    pub cpu: u32,
    pub ticks: [Option<u64>; 10],
}

/// The modes that count as busy: all but idle and iowait (a CPU waiting for I/O runs nothing),
/// and the guest columns, which user and nice already include.
pub const BUSY_MODES: [usize; 6] = [0, 1, 2, 5, 6, 7];

impl CpuTimes {
    /// Ticks the CPU was busy ([`BUSY_MODES`]); the modes the kernel does not print count 0.
    pub fn busy_ticks(&self) -> u64 {
        BUSY_MODES.iter().filter_map(|&i| self.ticks[i]).sum()
    }
}

/// The parts of `/proc/stat` Reveal exposes.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Stat {
    pub cpus: Vec<CpuTimes>,
    pub context_switches: Option<u64>,
    pub forks: Option<u64>,
    pub procs_running: Option<u64>,
    pub procs_blocked: Option<u64>,
    pub boot_time: Option<u64>,
}

/// Parses the text of `/proc/stat`. The aggregate `cpu` line is skipped (sum it in PromQL).
pub fn parse_stat(text: &str) -> Result<Stat, ParseError> {
    let mut st = Stat::default();
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let mut it = line.split_ascii_whitespace();
        let Some(key) = it.next() else { continue };
        if let Some(idx) = key.strip_prefix("cpu") {
            if idx.is_empty() {
                continue;
            }
            let cpu: u32 = idx.parse().map_err(|_| {
                ParseError::new(lineno, format!("bad CPU name {key:?}", key = Excerpt(key)))
            })?;
            let mut ticks = [None; 10];
            let mut n = 0;
            for field in it {
                if n == MODES.len() {
                    return Err(ParseError::new(
                        lineno,
                        format!(
                            "{key} has more than {} columns: unknown layout",
                            MODES.len()
                        ),
                    ));
                }
                ticks[n] = Some(parse_u64(field, lineno)?);
                n += 1;
            }
            if n < 4 {
                return Err(ParseError::new(
                    lineno,
                    format!("{key} has {n} columns, expected 4 to 10"),
                ));
            }
            st.cpus.push(CpuTimes { cpu, ticks });
            continue;
        }
        let slot = match key {
            "ctxt" => &mut st.context_switches,
            "processes" => &mut st.forks,
            "procs_running" => &mut st.procs_running,
            "procs_blocked" => &mut st.procs_blocked,
            "btime" => &mut st.boot_time,
            _ => continue,
        };
        let v = it
            .next()
            .ok_or_else(|| ParseError::new(lineno, format!("{key} has no value")))?;
        *slot = Some(parse_u64(v, lineno)?);
    }
    if st.cpus.is_empty() {
        return Err(ParseError::new(0, "no per-CPU lines"));
    }
    Ok(st)
}

fn parse_u64(s: &str, line: usize) -> Result<u64, ParseError> {
    s.parse().map_err(|_| {
        ParseError::new(
            line,
            format!("{s:?} is not an unsigned integer", s = Excerpt(s)),
        )
    })
}

pub struct StatCollector {
    path: KeptFile,
    buf: String,
}

impl StatCollector {
    pub fn new(s: &Settings) -> Self {
        StatCollector {
            path: KeptFile::new(s.paths.proc("stat")),
            buf: String::new(),
        }
    }
}

impl Collector for StatCollector {
    fn name(&self) -> &'static str {
        "stat"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        self.path.read_into(&mut self.buf)?;
        let st = parse_stat(&self.buf).map_err(|e| CollectError::parse(&self.path, e))?;
        for c in &st.cpus {
            let mut b = [0; 20];
            let cpu = index_str(u64::from(c.cpu), &mut b);
            for (mode, ticks) in MODES.iter().zip(c.ticks.iter()) {
                let Some(t) = ticks else { continue };
                let desc = if mode.starts_with("guest") {
                    &GUEST_TIME
                } else {
                    &CPU_TIME
                };
                let mode = if *mode == "guest_nice" {
                    "nice"
                } else if *mode == "guest" {
                    "user"
                } else {
                    mode
                };
                out.push_values(desc, &[cpu, mode], *t as f64 / USER_HZ);
            }
            out.push_values(&BUSY_TIME, &[cpu], c.busy_ticks() as f64 / USER_HZ);
        }
        let scalars = [
            (&CONTEXT_SWITCHES, st.context_switches),
            (&FORKS, st.forks),
            (&PROCS_RUNNING, st.procs_running),
            (&PROCS_BLOCKED, st.procs_blocked),
            (&BOOT_TIME, st.boot_time),
        ];
        for (desc, v) in scalars {
            if let Some(v) = v {
                out.push1(desc, v as f64);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "cpu  10 20 30 40 50 60 70 80 90 100\n\
cpu0 1 2 3 4 5 6 7 8 9 10\n\
cpu1 1 2 3 4\n\
intr 5 1 2\n\
ctxt 1990473\n\
btime 1700000000\n\
processes 2915\n\
procs_running 3\n\
procs_blocked 1\n";

    #[test]
    fn parses_all_layouts() {
        let st = parse_stat(SAMPLE).unwrap();
        assert_eq!(st.cpus.len(), 2);
        assert_eq!(st.cpus[0].ticks[9], Some(10));
        assert_eq!(st.cpus[1].ticks[3], Some(4));
        assert_eq!(st.cpus[1].ticks[4], None);
        assert_eq!(st.context_switches, Some(1990473));
        assert_eq!(st.forks, Some(2915));
        assert_eq!(st.procs_running, Some(3));
        assert_eq!(st.procs_blocked, Some(1));
        assert_eq!(st.boot_time, Some(1700000000));
    }

    #[test]
    fn busy_time_is_every_mode_but_idle_iowait_and_the_guest_columns() {
        let st = parse_stat(SAMPLE).unwrap();
        // user 1 + nice 2 + system 3 + irq 6 + softirq 7 + steal 8; not idle 4, iowait 5,
        // guest 9, guest_nice 10.
        assert_eq!(st.cpus[0].busy_ticks(), 27);
        // An old kernel's four columns: user, nice, system.
        assert_eq!(st.cpus[1].busy_ticks(), 6);
    }

    #[test]
    fn rejects_unknown_layouts_and_junk() {
        assert!(parse_stat("cpu0 1 2 3 4 5 6 7 8 9 10 11\n").is_err());
        assert!(parse_stat("cpu0 1 2 3\n").is_err());
        assert!(parse_stat("cpu0 1 x 3 4\n").is_err());
        assert!(parse_stat("").is_err());
        assert!(parse_stat("cpuX 1 2 3 4\n").is_err());
        assert!(parse_stat("cpu0 1 2 3 4\nctxt\n").is_err());
    }
}
