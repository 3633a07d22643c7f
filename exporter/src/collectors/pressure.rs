//! Pressure stall information (PSI): cumulative time in which tasks stalled on CPU, IRQ
//! handling, memory or I/O.
//!
//! Format (<https://docs.kernel.org/accounting/psi.html>), one file per resource under
//! `<procfs>/pressure/`:
//! ```text
//! some avg10=0.17 avg60=0.43 avg300=3.53 total=4136770800
//! full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//! ```
//! `total` is microseconds since boot; `some` counts time in which at least one task stalled,
//! `full` time in which all non-idle tasks stalled at once. `cpu` has `full` from kernel 5.13
//! (all zero system-wide), `irq` (5.19+, with `CONFIG_IRQ_TIME_ACCOUNTING`) has only `full`.
//! The avg10/avg60/avg300 averages are not exported: a rate of the counter gives them.
//!
//! A kernel without PSI (before 4.20, `CONFIG_PSI=n`, or booted with `psi=0`) has no
//! `pressure` directory, or fails reads with EOPNOTSUPP: the collector then reports
//! unsupported (success 0, logged once by the runner). A line that does not parse (a
//! half-written or future format) is skipped and the rest kept.

use super::{Collector, Settings};
use crate::error::{CollectError, ParseError};
use crate::read::KeptFile;
use crate::scrape::{Desc, Scrape, Unit};

pub static CPU: Desc = Desc::counter(
    "reveal_cpu_pressure_stalled",
    Unit::Seconds,
    &["kind"],
    "Time in which runnable tasks waited for a CPU (PSI, /proc/pressure/cpu): kind some = at \
     least one task, full = all non-idle tasks. CPU saturation shows as some rising.",
);
pub static IRQ: Desc = Desc::counter(
    "reveal_cpu_irq_pressure_stalled",
    Unit::Seconds,
    &["kind"],
    "Time in which all non-idle tasks were held up by hard and soft interrupt handling (PSI, \
     /proc/pressure/irq; kind is only full).",
);
pub static MEMORY: Desc = Desc::counter(
    "reveal_memory_pressure_stalled",
    Unit::Seconds,
    &["kind"],
    "Time in which tasks stalled on memory: reclaim, refaults, swap-in, compaction (PSI, \
     /proc/pressure/memory): kind some = at least one task, full = all non-idle tasks; full \
     rising means thrashing.",
);
pub static IO: Desc = Desc::counter(
    "reveal_storage_pressure_stalled",
    Unit::Seconds,
    &["kind"],
    "Time in which tasks stalled waiting for block I/O (PSI, /proc/pressure/io): kind some = \
     at least one task, full = all non-idle tasks.",
);

pub static METRICS: &[&Desc] = &[&CPU, &IRQ, &MEMORY, &IO];

/// The `some` and `full` totals of one pressure file, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pressure {
    pub some: Option<u64>,
    pub full: Option<u64>,
}

/// Parses one `some|full avg10=F avg60=F avg300=F total=N` line; `None` if it is malformed.
fn parse_line(line: &str) -> Option<(&str, u64)> {
    let mut it = line.split_ascii_whitespace();
    let kind = it.next().filter(|k| *k == "some" || *k == "full")?;
    let mut total = None;
    for field in it {
        let (key, value) = field.split_once('=')?;
        match key {
            "total" if total.is_none() => total = Some(value.parse::<u64>().ok()?),
            "avg10" | "avg60" | "avg300" => {
                value.parse::<f64>().ok().filter(|v| v.is_finite())?;
            }
            _ => return None,
        }
    }
    Some((kind, total?))
}

/// Parses a pressure file, skipping lines that do not parse; an error when none does.
pub fn parse_pressure(text: &str) -> Result<Pressure, ParseError> {
    let mut p = Pressure::default();
    for line in text.lines() {
        match parse_line(line) {
            Some(("some", t)) if p.some.is_none() => p.some = Some(t),
            Some(("full", t)) if p.full.is_none() => p.full = Some(t),
            _ => {}
        }
    }
    if p == Pressure::default() {
        return Err(ParseError::new(0, "no some or full line with a total"));
    }
    Ok(p)
}

/// A read failure that means the kernel has no PSI for this resource.
fn psi_absent(e: &CollectError) -> bool {
    match e {
        CollectError::Unsupported { .. } => true,
        CollectError::Io { source, .. } => source.raw_os_error() == Some(libc::EOPNOTSUPP),
        CollectError::Parse { .. } => false,
    }
}

pub struct PressureCollector {
    files: Vec<(&'static Desc, KeptFile)>,
    buf: String,
}

impl PressureCollector {
    pub fn new(s: &Settings) -> Self {
        let files = [
            ("cpu", &CPU),
            ("irq", &IRQ),
            ("memory", &MEMORY),
            ("io", &IO),
        ]
        .into_iter()
        .filter(|(_, d)| s.wants(d))
        .map(|(f, d)| (d, KeptFile::new(s.paths.proc("pressure").join(f))))
        .collect();
        PressureCollector {
            files,
            buf: String::new(),
        }
    }
}

impl Collector for PressureCollector {
    fn name(&self) -> &'static str {
        "pressure"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        let (mut read, mut parsed) = (0, 0);
        let mut first_bad = None;
        for (desc, file) in &self.files {
            match file.read_into(&mut self.buf) {
                Ok(()) => read += 1,
                Err(e) if psi_absent(&e) => continue,
                Err(e) => return Err(e),
            }
            match parse_pressure(&self.buf) {
                Ok(p) => {
                    parsed += 1;
                    for (kind, us) in [("some", p.some), ("full", p.full)] {
                        if let Some(us) = us {
                            out.push_values(desc, &[kind], us as f64 / 1e6);
                        }
                    }
                }
                Err(e) => {
                    first_bad.get_or_insert_with(|| CollectError::parse(file, e));
                }
            }
        }
        match first_bad {
            _ if parsed > 0 => Ok(()),
            Some(e) => Err(e),
            None if read == 0 && !self.files.is_empty() => Err(CollectError::Unsupported {
                path: self.files[0].1.path().with_file_name(""),
                reason: "no pressure stall information (kernel without PSI, or booted with \
                         psi=0)"
                    .into(),
            }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectors::test_util::value;
    use proptest::prelude::*;

    #[test]
    fn parses_the_kernel_format() {
        let text = "some avg10=0.17 avg60=0.43 avg300=3.53 total=4136770800\n\
                    full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(
            parse_pressure(text),
            Ok(Pressure {
                some: Some(4136770800),
                full: Some(0)
            })
        );
        // irq: full only; a kernel before 5.13: cpu without full.
        let irq = parse_pressure("full avg10=0.00 avg60=0.00 avg300=0.00 total=12\n").unwrap();
        assert_eq!((irq.some, irq.full), (None, Some(12)));
        let cpu = parse_pressure("some avg10=1.00 avg60=0.50 avg300=0.10 total=7").unwrap();
        assert_eq!((cpu.some, cpu.full), (Some(7), None));
    }

    #[test]
    fn bad_lines_are_skipped() {
        let text = "some avg10=0.17 avg60=0.4\n\
                    full avg10=0.00 avg60=0.00 avg300=0.00 total=9\n";
        assert_eq!(
            parse_pressure(text),
            Ok(Pressure {
                some: None,
                full: Some(9)
            })
        );
        for bad in [
            "some avg10=0.17 avg60=0.43 avg300=3.53 total=-1",
            "some avg10=x avg60=0.43 avg300=3.53 total=1",
            "some avg10=0.17 avg60=0.43 avg300=3.53 total=1 total=2",
            "some avg10=0.17 avg60=0.43 avg300=3.53 total",
            "half avg10=0.17 avg60=0.43 avg300=3.53 total=1",
            "some avg10=0.17 avg60=0.43 avg300=3.53 total=1 new=2",
            "some avg10=NaN avg60=0.43 avg300=3.53 total=1",
        ] {
            assert_eq!(parse_line(bad), None, "{bad:?}");
        }
        assert!(parse_pressure("").is_err());
        assert!(parse_pressure("garbage\n\0\0\n").is_err());
    }

    /// A procfs stand-in with these `pressure/` files (none: no `pressure` directory).
    fn tree(tag: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("reveal-psi-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        if !files.is_empty() {
            std::fs::create_dir(dir.join("pressure")).unwrap();
        }
        for (name, text) in files {
            std::fs::write(dir.join("pressure").join(name), text).unwrap();
        }
        dir
    }

    fn collector(proc: &std::path::Path) -> PressureCollector {
        let s = Settings {
            paths: crate::paths::Paths::new(proc, "/nonexistent"),
            ..Settings::default()
        };
        PressureCollector::new(&s)
    }

    #[test]
    fn seconds_per_resource_and_kind() {
        let line = |k, t| format!("{k} avg10=0.00 avg60=0.00 avg300=0.00 total={t}\n");
        let dir = tree(
            "kinds",
            &[
                ("cpu", &(line("some", 2_500_000) + &line("full", 0))),
                ("memory", &(line("some", 1_000) + &line("full", 500))),
                ("io", "some avg10=0.0\n"),
            ],
        );
        let mut out = Scrape::new();
        collector(&dir).update(&mut out).unwrap();
        let v = |n, k| value(&out, n, &[("kind", k)]);
        assert_eq!(
            v("reveal_cpu_pressure_stalled_seconds_total", "some"),
            Some(2.5)
        );
        assert_eq!(
            v("reveal_cpu_pressure_stalled_seconds_total", "full"),
            Some(0.0)
        );
        assert_eq!(
            v("reveal_memory_pressure_stalled_seconds_total", "full"),
            Some(0.0005)
        );
        assert_eq!(
            v("reveal_storage_pressure_stalled_seconds_total", "some"),
            None
        );
        assert_eq!(
            v("reveal_cpu_irq_pressure_stalled_seconds_total", "full"),
            None
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_kernel_without_psi_is_unsupported() {
        let dir = tree("none", &[]);
        let mut out = Scrape::new();
        let e = collector(&dir).update(&mut out).unwrap_err();
        assert!(e.is_unsupported(), "{e}");
        assert_eq!(out.sample_count(), 0);
        let _ = std::fs::remove_dir_all(&dir);
        let eopnotsupp = CollectError::io("x", std::io::Error::from_raw_os_error(libc::EOPNOTSUPP));
        assert!(psi_absent(&eopnotsupp));
        assert!(!psi_absent(&CollectError::io(
            "x",
            std::io::Error::from_raw_os_error(libc::EIO)
        )));
    }

    #[test]
    fn on_this_host() {
        if !crate::paths::Paths::default().proc("pressure/cpu").exists() {
            return;
        }
        let mut out = Scrape::new();
        PressureCollector::new(&Settings::default())
            .update(&mut out)
            .expect("/proc/pressure of this host");
        assert!(value(
            &out,
            "reveal_cpu_pressure_stalled_seconds_total",
            &[("kind", "some")]
        )
        .is_some());
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC*") {
            let _ = parse_pressure(&s);
        }
    }
}
