//! Per-CPU perf counter groups, shared by the `perf` and `msr` collectors: open once at
//! construction, read once per scrape with one `read(2)` per group.
//!
//! Opening goes through an [`Opener`], so tests can substitute one that refuses hardware events
//! (as a VM without a virtual PMU does) and drive the same code the real host runs.

use crate::error::ParseError;
use crate::perf_sys::{self, EventSpec};
use std::fs::File;
use std::io::{self, Read};

/// Opens one per-CPU counter; see [`perf_sys::open_cpu_counter`].
pub trait Opener: Send {
    fn open(&mut self, spec: &EventSpec, cpu: u32, leader: Option<&File>) -> io::Result<File>;
    /// Starts a group once all its members are open (leaders are opened disabled).
    fn enable(&mut self, leader: &File) -> io::Result<()> {
        perf_sys::enable_group(leader)
    }
}

/// The kernel's `perf_event_open(2)`.
#[derive(Debug, Default, Clone, Copy)]
pub struct KernelOpener;

impl Opener for KernelOpener {
    fn open(&mut self, spec: &EventSpec, cpu: u32, leader: Option<&File>) -> io::Result<File> {
        perf_sys::open_cpu_counter(spec, cpu, leader)
    }
}

/// A group of counters on one CPU. `members[i]` is the index, in the caller's event list, of
/// the i-th counter the kernel returns (the leader first).
#[derive(Debug)]
pub struct OpenGroup {
    pub cpu: u32,
    pub members: Vec<usize>,
    leader: File,
    /// Followers are kept open for as long as the group lives; reads go through the leader.
    _followers: Vec<File>,
    buf: Vec<u8>,
}

/// An event that could not be opened on a CPU.
#[derive(Debug)]
pub struct OpenFailure {
    pub event: usize,
    pub cpu: u32,
    pub error: io::Error,
}

/// Opens `specs` as one group on `cpu`. The first event that opens leads; events that fail are
/// left out and returned, so one unsupported event never costs the others.
pub fn open_group(
    opener: &mut dyn Opener,
    cpu: u32,
    specs: &[EventSpec],
) -> (Option<OpenGroup>, Vec<OpenFailure>) {
    let mut failures = Vec::new();
    let mut leader: Option<File> = None;
    let mut followers = Vec::new();
    let mut members = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        match opener.open(spec, cpu, leader.as_ref()) {
            Ok(f) => {
                if leader.is_none() {
                    leader = Some(f);
                } else {
                    followers.push(f);
                }
                members.push(i);
            }
            Err(error) => failures.push(OpenFailure {
                event: i,
                cpu,
                error,
            }),
        }
    }
    let Some(leader) = leader else {
        return (None, failures);
    };
    if let Err(error) = opener.enable(&leader) {
        // Nothing of this group would ever count: report every member as failed.
        let failures = (0..specs.len())
            .map(|event| OpenFailure {
                event,
                cpu,
                error: io::Error::new(error.kind(), error.to_string()),
            })
            .collect();
        return (None, failures);
    }
    let buf = vec![0; perf_sys::group_read_len(members.len())];
    let group = OpenGroup {
        cpu,
        members,
        leader,
        _followers: followers,
        buf,
    };
    (Some(group), failures)
}

/// One group read: how long the group was enabled and scheduled, and each member's raw count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupCounts {
    pub time_enabled_ns: u64,
    pub time_running_ns: u64,
    pub values: Vec<u64>,
}

impl GroupCounts {
    /// The share of enabled time the group was on the PMU; below 1 means it was multiplexed.
    pub fn running_ratio(&self) -> Option<f64> {
        (self.time_enabled_ns > 0)
            .then(|| self.time_running_ns as f64 / self.time_enabled_ns as f64)
    }

    /// A count extrapolated to the whole enabled time, as `perf stat` does; `None` when the
    /// group never ran (nothing to extrapolate from).
    pub fn scaled(&self, i: usize) -> Option<f64> {
        let v = *self.values.get(i)? as f64;
        if self.time_running_ns == 0 {
            return None;
        }
        if self.time_running_ns >= self.time_enabled_ns {
            return Some(v);
        }
        Some(v * (self.time_enabled_ns as f64 / self.time_running_ns as f64))
    }
}

/// Parses a group read (`PERF_FORMAT_GROUP | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING`):
/// `u64 nr; u64 time_enabled; u64 time_running; u64 value[nr];` in native byte order
/// (perf_event_open(2), "Reading results").
pub fn parse_group_read(bytes: &[u8], expected: usize) -> Result<GroupCounts, ParseError> {
    let word = |i: usize| -> Option<u64> {
        let b = bytes.get(8 * i..8 * i + 8)?;
        Some(u64::from_ne_bytes(b.try_into().ok()?))
    };
    let short = || {
        ParseError::new(
            0,
            format!("group read of {} bytes is too short", bytes.len()),
        )
    };
    let nr = word(0).ok_or_else(short)?;
    if nr != expected as u64 {
        return Err(ParseError::new(
            0,
            format!("group has {nr} counters, expected {expected}"),
        ));
    }
    let time_enabled_ns = word(1).ok_or_else(short)?;
    let time_running_ns = word(2).ok_or_else(short)?;
    let values = (0..expected)
        .map(|i| word(3 + i).ok_or_else(short))
        .collect::<Result<_, _>>()?;
    Ok(GroupCounts {
        time_enabled_ns,
        time_running_ns,
        values,
    })
}

impl OpenGroup {
    /// Reads every member at once. `Ok(None)` when the kernel returns nothing, which is what a
    /// counter on a CPU taken offline does (it enters the error state).
    pub fn read(&mut self) -> io::Result<Option<GroupCounts>> {
        let n = self.leader.read(&mut self.buf)?;
        if n == 0 {
            return Ok(None);
        }
        parse_group_read(&self.buf[..n], self.members.len())
            .map(Some)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
    }
}

/// Parses a CPU list as sysfs writes it (`devices/system/cpu/online`, PMU `cpumask`):
/// `0-3,8,10-11`. See <https://docs.kernel.org/admin-guide/cputopology.html>.
/// The most CPUs a CPU list may name (Linux' `NR_CPUS` is at most 8192 today).
const MAX_CPUS: u64 = 65_536;

pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>, ParseError> {
    let mut cpus = Vec::new();
    let text = text.trim();
    if text.is_empty() {
        return Ok(cpus);
    }
    for part in text.split(',') {
        let bad = || {
            ParseError::new(
                1,
                format!("bad CPU list item {:?}", crate::error::Excerpt(part)),
            )
        };
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (
                a.parse::<u32>().map_err(|_| bad())?,
                b.parse::<u32>().map_err(|_| bad())?,
            ),
            None => {
                let a = part.parse::<u32>().map_err(|_| bad())?;
                (a, a)
            }
        };
        // More CPUs than any host has — in one range or over many — is garbage, and must not
        // allocate gigabytes (a list of 500,000 ranges of 65,536 CPUs each would).
        if b < a || cpus.len() as u64 + u64::from(b - a) >= MAX_CPUS {
            return Err(bad());
        }
        cpus.extend(a..=b);
    }
    Ok(cpus)
}

/// Says in words why an event could not be opened, with the fix where there is one.
/// Whether `perf_event_open` failed because the CPU (or the hypervisor) has no such event,
/// rather than because the exporter may not open it: absent hardware is logged as
/// information, not as a warning.
pub fn is_absent(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV)
    )
}

pub fn describe_open_error(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "{e}: per-CPU counters need CAP_PERFMON (or CAP_SYS_ADMIN) or kernel.perf_event_paranoid <= 0"
        ),
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) => {
            format!("{e}: not supported by this CPU or hypervisor")
        }
        Some(libc::EINVAL) => {
            format!("{e}: rejected by the kernel (unknown code, or the group cannot be scheduled at once)")
        }
        Some(libc::EMFILE) | Some(libc::ENFILE) => format!("{e}: raise the open-file limit"),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn words(w: &[u64]) -> Vec<u8> {
        w.iter().flat_map(|v| v.to_ne_bytes()).collect()
    }

    #[test]
    fn parses_and_scales_a_group_read() {
        let g = parse_group_read(&words(&[2, 1000, 250, 10, 40]), 2).unwrap();
        assert_eq!(g.values, vec![10, 40]);
        assert_eq!(g.running_ratio(), Some(0.25));
        assert_eq!(g.scaled(0), Some(40.0));
        assert_eq!(g.scaled(1), Some(160.0));
        assert_eq!(g.scaled(2), None);
        let never = parse_group_read(&words(&[1, 1000, 0, 0]), 1).unwrap();
        assert_eq!(never.scaled(0), None);
        assert_eq!(never.running_ratio(), Some(0.0));
        assert!(parse_group_read(&words(&[3, 1, 1, 1]), 3).is_err());
        assert!(parse_group_read(&words(&[2, 1, 1, 1, 1]), 3).is_err());
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpu_list("0\n").unwrap(), vec![0]);
        assert!(parse_cpu_list("").unwrap().is_empty());
        for bad in ["3-1", "a", "0-", "1,,2", "0-4294967295", "0-65536"] {
            assert!(parse_cpu_list(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_cpu_list("0-65535").unwrap().len(), 65_536);
        // Many ranges add up: the whole list is bounded, not only each range.
        let many = vec!["0-1023"; 100].join(",");
        assert!(parse_cpu_list(&many).is_err());
        assert_eq!(
            parse_cpu_list(&vec!["0-1023"; 64].join(",")).unwrap().len(),
            65_536
        );
    }

    proptest! {
        #[test]
        fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64), n in 0usize..8, s in ".{0,40}") {
            let _ = parse_group_read(&bytes, n);
            let _ = parse_cpu_list(&s);
        }
    }
}
