//! Energy per RAPL zone (package, core, uncore, DRAM, platform) from the powercap class.
//!
//! Files (<https://docs.kernel.org/power/powercap/powercap.html>), one value each:
//! ```text
//! class/powercap/intel-rapl:0/name                  package-0
//! class/powercap/intel-rapl:0/energy_uj             81722352468
//! class/powercap/intel-rapl:0/max_energy_range_uj   262143328850
//! class/powercap/intel-rapl:0:0/name                core
//! ```
//! `intel-rapl:N` are packages (or `psys`, the whole platform); `intel-rapl:N:M` are their
//! subzones. AMD CPUs register the same `intel-rapl` control type. The zone label is the
//! package's name, and for a subzone the package's name, a slash and its own name
//! (`package-0/dram`), because subzone names repeat across packages. `intel-rapl-mmio:*` is
//! left out: it is a second interface to a package zone already listed, and would count it
//! twice.
//!
//! Why the collector keeps state: `energy_uj` wraps to zero after `max_energy_range_uj`
//! (a 32-bit hardware counter scaled to microjoules: minutes to an hour at full load,
//! depending on the CPU's energy unit). Prometheus would read a wrap as a counter reset and
//! lose the energy up to the wrap, so the collector adds each zone's movement since the last
//! scrape, across the wrap, to a monotonic total. This needs a scrape at least once per wrap
//! period, which 100 ms scraping gives with a wide margin.
//!
//! Since Linux 5.10 `energy_uj` is readable by root only (a side channel, CVE-2020-8694); as
//! another user every read is denied and the collector is `Unsupported`. The development VM
//! has no powercap class at all (no RAPL in the guest), so it is `Unsupported` there too.

use super::sysfs_attr::{Attr, Budget};
use super::sysfs_scan::{found_any, Rescan};
use super::{Collector, Settings};
use crate::error::{CollectError, ParseError};
use crate::read::{dir_names, read_into};
use crate::scrape::{Desc, Scrape, Unit};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long the zone list is reused before the directory is read again (a driver loaded late).
pub const RESCAN: Duration = Duration::from_secs(30);
/// The earliest rescan after a failed read, so a file that stays broken does not cost a scan
/// on every scrape.
pub const RETRY: Duration = Duration::from_secs(1);
/// Share of the process's descriptor limit (1/N) this collector may keep open between
/// scrapes (one `energy_uj` per zone); beyond it, files are read by path.
pub const FD_SHARE: usize = 16;

pub static ENERGY: Desc = Desc::counter(
    "reveal_cpu_rapl_energy",
    Unit::Joules,
    &["zone"],
    "Energy used by each RAPL zone (package, core, uncore, dram, psys), kept monotonic across \
     the hardware counter's wraps.",
);

pub static METRICS: &[&Desc] = &[&ENERGY];

/// Parses a powercap attribute holding microjoules (`energy_uj`, `max_energy_range_uj`).
pub fn parse_microjoules(text: &str) -> Result<u64, ParseError> {
    let t = text.trim();
    t.parse().map_err(|_| {
        ParseError::new(
            1,
            format!("{:?} is not an energy in µJ", crate::error::Excerpt(t)),
        )
    })
}

/// Energy used between two readings of a counter that wraps to zero after `max_range`.
pub fn energy_delta(last: u64, cur: u64, max_range: u64) -> u64 {
    if cur >= last {
        cur - last
    } else if last <= max_range {
        max_range - last + cur
    } else {
        // The range is unknown or smaller than a value seen: a reset, so only `cur` is new.
        cur
    }
}

struct Zone {
    dir: String,
    label: String,
    energy: Attr,
    max_range: u64,
    last: Option<u64>,
    total_uj: u64,
}

pub struct RaplCollector {
    root: PathBuf,
    zones: Vec<Zone>,
    /// Scans every [`RESCAN`], after [`RETRY`] once a read failed.
    rescan: Rescan,
    buf: String,
}

impl RaplCollector {
    pub fn new(s: &Settings) -> Self {
        RaplCollector {
            root: s.paths.sys("class/powercap"),
            zones: Vec::new(),
            rescan: Rescan::new(RESCAN, RETRY),
            buf: String::new(),
        }
    }

    fn read_text(&mut self, path: &Path) -> Option<String> {
        read_into(path, &mut self.buf).ok()?;
        let t = self.buf.trim();
        (!t.is_empty()).then(|| t.to_string())
    }

    fn scan(&mut self) -> Result<(), CollectError> {
        let mut old = std::mem::take(&mut self.zones);
        let mut budget = Budget::share_of_limit(FD_SHARE);
        // Ordered by zone id path (0, 0:0, 0:1, 1, 1:0): parents before their subzones, which
        // labelling needs, and each package's subzones together.
        let mut dirs: Vec<(Vec<u32>, String)> = dir_names(&self.root)?
            .into_iter()
            .filter_map(|d| {
                let id = d.strip_prefix("intel-rapl:")?;
                let key: Option<Vec<u32>> = id.split(':').map(|n| n.parse().ok()).collect();
                Some((key?, d))
            })
            .collect();
        dirs.sort();
        for (_, dir) in dirs {
            let id = &dir["intel-rapl:".len()..];
            let zone_dir = self.root.join(&dir);
            let Some(name) = self.read_text(&zone_dir.join("name")) else {
                continue;
            };
            let label = match id.rsplit_once(':') {
                Some((parent, _)) => {
                    let parent_dir = format!("intel-rapl:{parent}");
                    let Some(p) = self.zones.iter().find(|z| z.dir == parent_dir) else {
                        continue;
                    };
                    format!("{}/{name}", p.label)
                }
                None => name,
            };
            // Names are unique on every platform seen; if one repeats, the directory name
            // still tells the zones apart.
            let label = if self.zones.iter().any(|z| z.label == label) {
                dir.clone()
            } else {
                label
            };
            let max_range = self
                .read_text(&zone_dir.join("max_energy_range_uj"))
                .and_then(|t| parse_microjoules(&t).ok())
                .unwrap_or(0);
            // Keep the running total of a zone seen before the rescan.
            let (last, total_uj) = match old.iter().position(|z| z.dir == dir) {
                Some(i) => {
                    let z = old.swap_remove(i);
                    (z.last, z.total_uj)
                }
                None => (None, 0),
            };
            self.zones.push(Zone {
                energy: budget.attr(zone_dir.join("energy_uj")),
                dir,
                label,
                max_range,
                last,
                total_uj,
            });
        }
        found_any(
            &self.zones,
            || self.root.join("intel-rapl:0"),
            "no RAPL zone (no intel_rapl driver, or a virtual machine)",
        )
    }
}

impl Collector for RaplCollector {
    fn name(&self) -> &'static str {
        "rapl"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        let scanned = self.rescan.due().then(|| self.scan());
        self.rescan.check(scanned)?;
        let buf = &mut self.buf;
        // One unreadable zone must not hide the others; any failed read calls for a rescan.
        self.rescan.read_each(
            &mut self.zones,
            |_| true,
            |z| {
                z.energy.read(buf)?;
                let cur =
                    parse_microjoules(buf).map_err(|e| CollectError::parse(z.energy.path(), e))?;
                // The first reading starts the total at the hardware's value, so the series
                // continues near where it was before an exporter restart.
                let d = z
                    .last
                    .map_or(cur, |last| energy_delta(last, cur, z.max_range));
                z.total_uj = z.total_uj.saturating_add(d);
                z.last = Some(cur);
                out.push(
                    &ENERGY,
                    vec![("zone", z.label.clone())],
                    z.total_uj as f64 / 1e6,
                );
                Ok(())
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::Paths;
    use proptest::prelude::*;

    #[test]
    fn parses_and_unwraps() {
        assert_eq!(parse_microjoules("81722352468\n").unwrap(), 81722352468);
        assert!(parse_microjoules("").is_err());
        assert!(parse_microjoules("1.5").is_err());
        assert_eq!(energy_delta(100, 250, 1000), 150);
        assert_eq!(energy_delta(900, 50, 1000), 150);
        assert_eq!(energy_delta(900, 50, 0), 50);
    }

    #[test]
    fn labels_zones_and_keeps_totals_monotonic() {
        let dir = std::env::temp_dir().join(format!("reveal-rapl-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let root = dir.join("class/powercap");
        let zone = |id: &str, name: &str, energy: &str| {
            let z = root.join(id);
            std::fs::create_dir_all(&z).unwrap();
            std::fs::write(z.join("name"), format!("{name}\n")).unwrap();
            std::fs::write(z.join("energy_uj"), format!("{energy}\n")).unwrap();
            std::fs::write(z.join("max_energy_range_uj"), "1000000000\n").unwrap();
        };
        zone("intel-rapl:0", "package-0", "999000000");
        zone("intel-rapl:0:0", "core", "5000000");
        zone("intel-rapl:0:1", "dram", "7000000");
        zone("intel-rapl:1", "package-1", "1000000");
        zone("intel-rapl:1:0", "core", "2000000");
        zone("intel-rapl-mmio:0", "package-0", "999000000");
        std::fs::create_dir_all(root.join("intel-rapl")).unwrap();
        let s = Settings {
            paths: Paths::new(&dir, &dir),
            ..Default::default()
        };
        let mut c = RaplCollector::new(&s);
        let read = |c: &mut RaplCollector| {
            let mut out = Scrape::new();
            c.update(&mut out).unwrap();
            out.families()
                .flat_map(|f| f.samples.iter().map(|s| (s.labels[0].1.clone(), s.value)))
                .collect::<Vec<_>>()
        };
        let got = read(&mut c);
        let labels: Vec<&str> = got.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(
            labels,
            [
                "package-0",
                "package-0/core",
                "package-0/dram",
                "package-1",
                "package-1/core"
            ]
        );
        assert_eq!(got[0].1, 999.0);
        // package-0 wraps: 999 J -> 1000 J (range) -> 2 J is 3 J used.
        std::fs::write(root.join("intel-rapl:0/energy_uj"), "2000000\n").unwrap();
        assert_eq!(read(&mut c)[0].1, 1002.0);
        // A zone that becomes unreadable is skipped, the others stay.
        std::fs::write(root.join("intel-rapl:1/energy_uj"), "garbage\n").unwrap();
        assert_eq!(read(&mut c).len(), 4);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn no_powercap_stays_unsupported() {
        let s = Settings {
            paths: Paths::new("/nonexistent-reveal", "/nonexistent-reveal"),
            ..Default::default()
        };
        let mut c = RaplCollector::new(&s);
        for _ in 0..3 {
            assert!(c.update(&mut Scrape::new()).unwrap_err().is_unsupported());
        }
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,40}", last: u64, cur: u64, max: u64) {
            let _ = parse_microjoules(&s);
            let _ = energy_delta(last, cur, max);
        }
    }
}
