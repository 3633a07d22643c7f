//! The scan cycle of collectors that look their sysfs directories up now and then and read the
//! attributes they found on every scrape (cpufreq, cpuidle, hwmon, rapl, hugepages, numa,
//! infiniband).
//!
//! Listing directories costs far more than reading the few attributes found, and the set of
//! CPUs, sensors or ports rarely changes, so a [`Rescan`] says when the next scan is due: after
//! a fixed period, or sooner once a read failed (hotplug, a driver unloaded). It also repeats
//! the last scan's failure until the next scan, so a host without the hardware pays nothing per
//! scrape and the runner logs the failure once. [`Rescan::read_each`] is the per-scrape pass:
//! one item that cannot be read is left out and the others are kept.

use crate::error::CollectError;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// When a collector's next directory scan is due, and the error of its last one.
#[derive(Debug)]
pub struct Rescan {
    every: Duration,
    retry: Duration,
    last: Option<Instant>,
    /// A scan or a read failed since the last scan: the next one is due after `retry`.
    soon: bool,
    failure: ScanFailure,
}

impl Rescan {
    /// Scans `every` so long, and `retry` after a failure (zero: on the next update).
    pub fn new(every: Duration, retry: Duration) -> Self {
        Rescan {
            every,
            retry,
            last: None,
            soon: false,
            failure: ScanFailure::default(),
        }
    }

    /// Whether the collector should scan before reading: never scanned, or the period (or,
    /// after a failure, the retry delay) has passed.
    pub fn due(&self) -> bool {
        let wait = if self.soon { self.retry } else { self.every };
        self.last.is_none_or(|t| t.elapsed() >= wait)
    }

    /// Takes the outcome of a scan, when one was made (`due().then(|| scan())`), and returns
    /// the last scan's error: the new one, or the one repeated until the next scan. A scan
    /// that failed other than `Unsupported` (the directory is there but could not be read)
    /// brings the next scan forward to the retry delay.
    pub fn check(&mut self, scanned: Option<Result<(), CollectError>>) -> Result<(), CollectError> {
        let Some(res) = scanned else {
            return self.failure.repeat();
        };
        self.last = Some(Instant::now());
        self.soon = matches!(&res, Err(e) if !e.is_unsupported());
        self.failure.record(res)
    }

    /// Records a successful scan made outside an update (at construction).
    pub fn scanned(&mut self) {
        let _ = self.check(Some(Ok(())));
    }

    /// A read failed (a CPU went offline, a chip went away): scan again after the retry delay.
    pub fn retry_soon(&mut self) {
        self.soon = true;
    }

    /// Whether the next scan comes after the retry delay rather than the period.
    pub fn retrying(&self) -> bool {
        self.soon
    }

    /// Makes a scan due now (tests that change the tree between updates).
    pub fn expire(&mut self) {
        self.last = None;
    }

    /// Reads each item with `read`, keeping the others when one fails (a CPU going offline, a
    /// sensor that cannot answer now). A failure for which `rescan_on` holds calls for an early
    /// rescan ([`Rescan::retry_soon`]). The first error is returned only when no item could be
    /// read: then the collector has nothing to show and reports why.
    pub fn read_each<T>(
        &mut self,
        items: impl IntoIterator<Item = T>,
        rescan_on: fn(&CollectError) -> bool,
        mut read: impl FnMut(T) -> Result<(), CollectError>,
    ) -> Result<(), CollectError> {
        let mut first_err = None;
        let mut ok = 0usize;
        for item in items {
            match read(item) {
                Ok(()) => ok += 1,
                Err(e) => {
                    self.soon |= rescan_on(&e);
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) if ok == 0 => Err(e),
            _ => Ok(()),
        }
    }
}

/// `Unsupported` at `path` when a scan found no item, so the collector reports why it shows
/// nothing instead of succeeding empty.
pub fn found_any<T>(
    items: &[T],
    path: impl FnOnce() -> PathBuf,
    reason: &str,
) -> Result<(), CollectError> {
    if items.is_empty() {
        return Err(CollectError::Unsupported {
            path: path(),
            reason: reason.into(),
        });
    }
    Ok(())
}

/// The number of a `cpuN` directory name (`cpu12` -> `12`); `None` for other entries of
/// `devices/system/cpu` (`cpufreq`, `cpuidle`, `online`, ...).
pub fn cpu_number(name: &str) -> Option<&str> {
    name.strip_prefix("cpu")
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The error of a collector's last directory scan, repeated by every update until the next
/// scan: an update between scans must report the same failure (success 0, the same message,
/// so it is logged once), not succeed with nothing to show.
#[derive(Debug, Default)]
pub struct ScanFailure(Option<CollectError>);

impl ScanFailure {
    /// Records the outcome of a scan and passes it on.
    pub fn record(&mut self, res: Result<(), CollectError>) -> Result<(), CollectError> {
        match res {
            Ok(()) => {
                self.0 = None;
                Ok(())
            }
            Err(e) => {
                self.0 = Some(copy_error(&e));
                Err(e)
            }
        }
    }

    /// The last scan's error again, if it failed.
    pub fn repeat(&self) -> Result<(), CollectError> {
        self.0.as_ref().map_or(Ok(()), |e| Err(copy_error(e)))
    }
}

fn copy_error(e: &CollectError) -> CollectError {
    match e {
        CollectError::Unsupported { path, reason } => CollectError::Unsupported {
            path: path.clone(),
            reason: reason.clone(),
        },
        CollectError::Io { path, source } => CollectError::Io {
            path: path.clone(),
            source: std::io::Error::new(source.kind(), source.to_string()),
        },
        CollectError::Parse { path, source } => CollectError::Parse {
            path: path.clone(),
            source: source.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_failure_repeats_the_same_message() {
        let mut f = ScanFailure::default();
        assert!(f.repeat().is_ok());
        let e = CollectError::io("/x", std::io::Error::from(std::io::ErrorKind::NotFound));
        let msg = e.to_string();
        assert!(f.record(Err(e)).is_err());
        let again = f.repeat().unwrap_err();
        assert!(again.is_unsupported());
        assert_eq!(again.to_string(), msg);
        let e = CollectError::io("/x", std::io::Error::other("EIO"));
        let msg = e.to_string();
        let _ = f.record(Err(e));
        assert_eq!(f.repeat().unwrap_err().to_string(), msg);
        assert!(f.record(Ok(())).is_ok() && f.repeat().is_ok());
    }

    #[test]
    fn rescan_schedule() {
        let hour = Duration::from_secs(3600);
        let mut r = Rescan::new(hour, Duration::ZERO);
        assert!(r.due());
        let absent = CollectError::io("/x", std::io::Error::from(std::io::ErrorKind::NotFound));
        let msg = absent.to_string();
        assert!(r.check(Some(Err(absent))).is_err());
        // Absence is repeated, word for word, until the period has passed.
        assert!(!r.due());
        assert_eq!(r.check(None).unwrap_err().to_string(), msg);
        // A directory that could not be read is looked at again after the retry delay.
        let eio = CollectError::io("/x", std::io::Error::other("EIO"));
        assert!(r.check(Some(Err(eio))).is_err());
        assert!(r.due() && r.retrying());
        assert!(r.check(Some(Ok(()))).is_ok());
        assert!(!r.due() && !r.retrying() && r.check(None).is_ok());
        r.retry_soon();
        assert!(r.due());
        r.scanned();
        assert!(!r.due());
        r.expire();
        assert!(r.due());
    }

    #[test]
    fn read_each_keeps_the_others_and_fails_only_when_nothing_was_read() {
        let mut r = Rescan::new(Duration::from_secs(60), Duration::from_secs(1));
        r.scanned();
        let fail = |i: &u32| CollectError::io(format!("/{i}"), std::io::Error::other("EIO"));
        let mut seen = Vec::new();
        let res = r.read_each([1, 2, 3], CollectError::is_unsupported, |i| {
            seen.push(i);
            if i == 2 {
                Err(fail(&i))
            } else {
                Ok(())
            }
        });
        assert!(res.is_ok() && seen == [1, 2, 3]);
        assert!(!r.retrying(), "EIO is not a reason to rescan here");
        let res = r.read_each([4, 5], |_| true, |i| Err(fail(&i)));
        assert_eq!(res.unwrap_err().to_string(), fail(&4).to_string());
        assert!(r.retrying());
        assert!(r.read_each([], |_| true, |()| Ok(())).is_ok());
    }

    #[test]
    fn cpu_numbers() {
        assert_eq!(cpu_number("cpu0"), Some("0"));
        assert_eq!(cpu_number("cpu127"), Some("127"));
        for other in ["cpu", "cpufreq", "cpuidle", "online", "cpu1a", "xcpu1"] {
            assert_eq!(cpu_number(other), None, "{other}");
        }
        assert!(found_any(&[1], || "/x".into(), "none").is_ok());
        let e = found_any::<u8>(&[], || "/x".into(), "none").unwrap_err();
        assert_eq!(e.to_string(), "unsupported: /x: none");
    }
}
