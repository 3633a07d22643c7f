//! The `process_*` self-metrics both binaries expose, as Prometheus' client libraries define
//! them on Linux (client_golang's process collector): CPU time, resident and virtual memory,
//! start time, open and maximum file descriptors, threads.
//!
//! Read, parse and emit are separate: [`parse_stat`], [`parse_status`], [`parse_btime`] and
//! [`parse_max_fds`] are pure parsers over the text of procfs files; [`read`] reads them for
//! the calling process; each binary encodes [`ProcessStats::values`] through its own
//! `prometheus-client` plumbing, under the names and help texts of [`FAMILIES`].

use std::path::{Path, PathBuf};

/// Clock ticks per second in `/proc/PID/stat` (`USER_HZ`): 100 on every Linux architecture
/// the binaries are built for, and what client_golang assumes too.
pub const USER_HZ: f64 = 100.0;

/// Whether a family is a counter or a gauge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
}

/// One `process_*` family: its name without unit or `_total` suffix, the unit suffix
/// (`seconds`, `bytes` or none), type and help. The sample name is
/// `name[_unit][_total]`, as client_golang names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family {
    pub name: &'static str,
    pub unit: Option<&'static str>,
    pub kind: Kind,
    pub help: &'static str,
}

impl Family {
    /// The sample name: `process_cpu_seconds_total`, `process_open_fds`.
    pub fn sample_name(&self) -> String {
        let mut s = self.name.to_string();
        if let Some(u) = self.unit {
            s.push('_');
            s.push_str(u);
        }
        if self.kind == Kind::Counter {
            s.push_str("_total");
        }
        s
    }
}

pub const CPU: Family = Family {
    name: "process_cpu",
    unit: Some("seconds"),
    kind: Kind::Counter,
    help: "Total user and system CPU time spent in seconds.",
};
pub const RESIDENT_MEMORY: Family = Family {
    name: "process_resident_memory",
    unit: Some("bytes"),
    kind: Kind::Gauge,
    help: "Resident memory size in bytes.",
};
pub const VIRTUAL_MEMORY: Family = Family {
    name: "process_virtual_memory",
    unit: Some("bytes"),
    kind: Kind::Gauge,
    help: "Virtual memory size in bytes.",
};
pub const START_TIME: Family = Family {
    name: "process_start_time",
    unit: Some("seconds"),
    kind: Kind::Gauge,
    help: "Start time of the process since unix epoch in seconds.",
};
pub const OPEN_FDS: Family = Family {
    name: "process_open_fds",
    unit: None,
    kind: Kind::Gauge,
    help: "Number of open file descriptors.",
};
pub const MAX_FDS: Family = Family {
    name: "process_max_fds",
    unit: None,
    kind: Kind::Gauge,
    help: "Maximum number of open file descriptors.",
};
pub const THREADS: Family = Family {
    name: "process_threads",
    unit: None,
    kind: Kind::Gauge,
    help: "Number of OS threads in the process.",
};

/// Every family, in the order [`ProcessStats::values`] gives their values.
pub const FAMILIES: [&Family; 7] = [
    &CPU,
    &RESIDENT_MEMORY,
    &VIRTUAL_MEMORY,
    &START_TIME,
    &OPEN_FDS,
    &MAX_FDS,
    &THREADS,
];

/// A procfs file that could not be read or parsed.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {reason}")]
    Parse { path: PathBuf, reason: String },
}

/// What `/proc/PID/stat` gives: CPU time and the start time since boot.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stat {
    /// utime + stime, in seconds.
    pub cpu_seconds: f64,
    /// Start time after boot, in seconds.
    pub start_after_boot_seconds: f64,
}

/// What `/proc/PID/status` gives: memory sizes and the thread count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub threads: u64,
}

/// One sample of every family.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessStats {
    pub cpu_seconds: f64,
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub start_time_seconds: f64,
    pub open_fds: u64,
    /// The soft limit; `None` when unlimited (the family is then left out).
    pub max_fds: Option<u64>,
    pub threads: u64,
}

impl ProcessStats {
    /// `(family, value)` for every family that has a value, in [`FAMILIES`] order.
    pub fn values(&self) -> Vec<(&'static Family, f64)> {
        let mut v = vec![
            (&CPU, self.cpu_seconds),
            (&RESIDENT_MEMORY, self.resident_bytes as f64),
            (&VIRTUAL_MEMORY, self.virtual_bytes as f64),
            (&START_TIME, self.start_time_seconds),
            (&OPEN_FDS, self.open_fds as f64),
        ];
        if let Some(m) = self.max_fds {
            v.push((&MAX_FDS, m as f64));
        }
        v.push((&THREADS, self.threads as f64));
        v
    }
}

/// Parses `/proc/PID/stat`. The command name (field 2) is in parentheses and may itself hold
/// spaces and parentheses: fields are counted from the last `)`.
pub fn parse_stat(text: &str) -> Result<Stat, String> {
    let close = text.rfind(')').ok_or("no ')' after the command name")?;
    // Fields from 3 (state) on.
    let rest: Vec<&str> = text[close + 1..].split_ascii_whitespace().collect();
    let field = |n: usize| -> Result<u64, String> {
        let s = rest
            .get(n - 3)
            .ok_or_else(|| format!("{} fields, field {n} missing", rest.len() + 2))?;
        s.parse::<u64>()
            .map_err(|e| format!("field {n} {s:?}: {e}"))
    };
    // utime 14, stime 15, starttime 22 (proc(5)).
    let ticks = field(14)?.saturating_add(field(15)?);
    let start = field(22)?;
    Ok(Stat {
        cpu_seconds: ticks as f64 / USER_HZ,
        start_after_boot_seconds: start as f64 / USER_HZ,
    })
}

/// Parses `/proc/PID/status`: `VmRSS`, `VmSize` (kB, converted to bytes) and `Threads`.
/// A kernel thread has no `Vm*` lines: its sizes are 0.
pub fn parse_status(text: &str) -> Result<Status, String> {
    let mut s = Status {
        resident_bytes: 0,
        virtual_bytes: 0,
        threads: 0,
    };
    let mut threads = None;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let number = || -> Result<u64, String> {
            let v = value.trim();
            let v = v.strip_suffix("kB").map(str::trim_end).unwrap_or(v);
            v.parse::<u64>()
                .map_err(|e| format!("{key} {:?}: {e}", value.trim()))
        };
        match key {
            "VmRSS" => s.resident_bytes = number()?.saturating_mul(1024),
            "VmSize" => s.virtual_bytes = number()?.saturating_mul(1024),
            "Threads" => threads = Some(number()?),
            _ => {}
        }
    }
    s.threads = threads.ok_or("no Threads line")?;
    Ok(s)
}

/// The boot time (`btime`, seconds since the epoch) from `/proc/stat`.
pub fn parse_btime(text: &str) -> Result<u64, String> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("btime "))
        .ok_or("no btime line")?;
    line.trim()
        .parse()
        .map_err(|e| format!("btime {:?}: {e}", line.trim()))
}

/// The soft limit of `Max open files` in `/proc/PID/limits`; `None` when unlimited.
pub fn parse_max_fds(text: &str) -> Result<Option<u64>, String> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))
        .ok_or("no 'Max open files' line")?;
    let soft = line
        .split_ascii_whitespace()
        .next()
        .ok_or("no soft limit")?;
    if soft == "unlimited" {
        return Ok(None);
    }
    soft.parse()
        .map(Some)
        .map_err(|e| format!("Max open files {soft:?}: {e}"))
}

/// Reads the statistics of the process `pid` (`"self"` for the caller) under the procfs
/// mounted at `procfs`.
pub fn read(procfs: &Path, pid: &str) -> Result<ProcessStats, ProcessError> {
    let dir = procfs.join(pid);
    let text = |path: PathBuf| match std::fs::read_to_string(&path) {
        Ok(t) => Ok((path, t)),
        Err(source) => Err(ProcessError::Io { path, source }),
    };
    let parse = |path: &Path, reason: String| ProcessError::Parse {
        path: path.to_path_buf(),
        reason,
    };
    let (p, t) = text(dir.join("stat"))?;
    let stat = parse_stat(&t).map_err(|r| parse(&p, r))?;
    let (p, t) = text(dir.join("status"))?;
    let status = parse_status(&t).map_err(|r| parse(&p, r))?;
    let (p, t) = text(dir.join("limits"))?;
    let max_fds = parse_max_fds(&t).map_err(|r| parse(&p, r))?;
    let (p, t) = text(procfs.join("stat"))?;
    let btime = parse_btime(&t).map_err(|r| parse(&p, r))?;
    let fd_dir = dir.join("fd");
    let open_fds = std::fs::read_dir(&fd_dir)
        .map_err(|source| ProcessError::Io {
            path: fd_dir.clone(),
            source,
        })?
        .count() as u64;
    Ok(ProcessStats {
        cpu_seconds: stat.cpu_seconds,
        resident_bytes: status.resident_bytes,
        virtual_bytes: status.virtual_bytes,
        start_time_seconds: btime as f64 + stat.start_after_boot_seconds,
        // The directory listing itself holds one descriptor while it is read.
        open_fds: open_fds.saturating_sub(u64::from(pid == "self")),
        max_fds,
        threads: status.threads,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/proc/self/stat` of a reveal-exporter on Debian 12 (6.1), its name made awkward.
    const STAT: &str = "4242 (reveal (x) ex) S 1 4242 4242 0 -1 4194560 1786 0 0 0 \
        37 12 0 0 20 0 3 0 123456 72781824 2345 18446744073709551615 1 1 0 0 0 0 0 4096 \
        17922 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

    const STATUS: &str = "Name:\treveal-exporter\nUmask:\t0022\nState:\tS (sleeping)\n\
        Tgid:\t4242\nVmPeak:\t   71088 kB\nVmSize:\t   71076 kB\nVmLck:\t       0 kB\n\
        VmRSS:\t    9380 kB\nRssAnon:\t    1668 kB\nThreads:\t3\nSigQ:\t0/31437\n";

    const LIMITS: &str =
        "Limit                     Soft Limit           Hard Limit           Units     \n\
        Max cpu time              unlimited            unlimited            seconds   \n\
        Max open files            1024                 524288               files     \n\
        Max locked memory         8388608              8388608              bytes     \n";

    #[test]
    fn stat_counts_fields_after_the_last_parenthesis() {
        let s = parse_stat(STAT).unwrap();
        assert!((s.cpu_seconds - 0.49).abs() < 1e-9, "{s:?}");
        assert!((s.start_after_boot_seconds - 1234.56).abs() < 1e-9);
        assert!(parse_stat("1 (x) S 1 2").is_err());
        assert!(parse_stat("no parenthesis").is_err());
        // Found by tests/fuzz.rs: utime + stime past u64::MAX.
        let huge = STAT.replace(" 37 12 ", " 18446744073709551615 12 ");
        assert!(parse_stat(&huge).unwrap().cpu_seconds > 1e17);
    }

    #[test]
    fn status_sizes_are_bytes() {
        let s = parse_status(STATUS).unwrap();
        assert_eq!(s.resident_bytes, 9380 * 1024);
        assert_eq!(s.virtual_bytes, 71076 * 1024);
        assert_eq!(s.threads, 3);
        // A kernel thread: no Vm lines.
        let k = parse_status("Name:\tkthreadd\nThreads:\t1\n").unwrap();
        assert_eq!((k.resident_bytes, k.threads), (0, 1));
        assert!(parse_status("Name:\tx\n").is_err());
        assert!(parse_status("VmRSS:\tlots kB\nThreads:\t1\n").is_err());
    }

    #[test]
    fn limits_and_btime() {
        assert_eq!(parse_max_fds(LIMITS).unwrap(), Some(1024));
        let unlimited = LIMITS.replace("1024                 524288", "unlimited unlimited");
        assert_eq!(parse_max_fds(&unlimited).unwrap(), None);
        assert!(parse_max_fds("Limit Soft Hard\n").is_err());
        assert_eq!(
            parse_btime("cpu  1 2 3\nintr 5\nbtime 1764900000\nprocesses 9\n").unwrap(),
            1764900000
        );
        assert!(parse_btime("cpu 1\n").is_err());
    }

    #[test]
    fn sample_names_follow_client_golang() {
        let names: Vec<String> = FAMILIES.iter().map(|f| f.sample_name()).collect();
        assert_eq!(
            names,
            [
                "process_cpu_seconds_total",
                "process_resident_memory_bytes",
                "process_virtual_memory_bytes",
                "process_start_time_seconds",
                "process_open_fds",
                "process_max_fds",
                "process_threads"
            ]
        );
    }

    #[test]
    fn this_process_reads() {
        let s = read(Path::new("/proc"), "self").unwrap();
        assert!(
            s.threads >= 1 && s.resident_bytes > 0 && s.open_fds >= 1,
            "{s:?}"
        );
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(s.start_time_seconds <= now + 1.0 && s.start_time_seconds > now - 86400.0);
        assert_eq!(s.values().len(), 6 + usize::from(s.max_fds.is_some()));
    }
}
