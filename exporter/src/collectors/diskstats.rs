//! Block device I/O counters from `/proc/diskstats`, per device.
//!
//! Format (<https://docs.kernel.org/admin-guide/iostats.html>):
//! ```text
//!  254       0 vda 33751 7976 4427546 13682 15258 16907 3361576 6087 0 5308 20159 4877 41 414680 310 2411 79
//! ```
//! major, minor, name, then 4, 11, 15 or 17 fields depending on the kernel: 11 since 2.6, 15
//! with discards since 4.18, 17 with flushes since 5.5; 2.6 kernels printed partitions with only
//! 4 (reads, sectors read, writes, sectors written). Any other count is a layout this parser
//! does not know and is an error rather than a guess. Sectors are always 512 bytes here,
//! whatever the device's sector size; times are milliseconds. Both are converted to base units.

use super::{Collector, Settings};
pub use crate::device_filter::DeviceFilter;
use crate::error::Excerpt;
use crate::error::{CollectError, ParseError};
use crate::read::KeptFile;
use crate::scrape::{Desc, Scrape, Unit};

/// node_exporter's default: RAM disks, loop devices, floppies and partitions (whose I/O is
/// already counted on the whole disk).
pub const DEFAULT_DEVICE_EXCLUDE: &str = r"^(z?ram|loop|fd|(h|s|v|xv)d[a-z]|nvme\d+n\d+p)\d+$";

/// Flags of the diskstats collector.
#[derive(Debug, Clone, clap::Args)]
pub struct DiskstatsArgs {
    /// Regular expression of block devices to leave out (empty: keep all).
    #[arg(
        id = "collector.diskstats.device-exclude",
        long = "collector.diskstats.device-exclude",
        value_name = "REGEX",
        default_value = DEFAULT_DEVICE_EXCLUDE,
        value_parser = DeviceFilter::parse_flag
    )]
    pub device_exclude: DeviceFilter,
}

impl Default for DiskstatsArgs {
    fn default() -> Self {
        // A constant pattern, compiled in the `default_filter_compiles_...` test: cannot fail here.
        let device_exclude =
            DeviceFilter::new(DEFAULT_DEVICE_EXCLUDE).expect("valid default pattern");
        DiskstatsArgs { device_exclude }
    }
}

const LABELS: &[&str] = &["device"];

macro_rules! counter {
    ($name:literal, $unit:expr, $help:literal) => {
        Desc::counter($name, $unit, LABELS, $help)
    };
}

pub static READS: Desc = counter!(
    "reveal_storage_reads_completed",
    Unit::None,
    "Reads completed."
);
pub static READS_MERGED: Desc = counter!(
    "reveal_storage_reads_merged",
    Unit::None,
    "Adjacent reads merged into one request."
);
pub static READ_BYTES: Desc = counter!("reveal_storage_read", Unit::Bytes, "Bytes read.");
pub static READ_TIME: Desc = counter!(
    "reveal_storage_read_time",
    Unit::Seconds,
    "Time spent on reads, summed over requests."
);
pub static WRITES: Desc = counter!(
    "reveal_storage_writes_completed",
    Unit::None,
    "Writes completed."
);
pub static WRITES_MERGED: Desc = counter!(
    "reveal_storage_writes_merged",
    Unit::None,
    "Adjacent writes merged into one request."
);
pub static WRITE_BYTES: Desc = counter!("reveal_storage_written", Unit::Bytes, "Bytes written.");
pub static WRITE_TIME: Desc = counter!(
    "reveal_storage_write_time",
    Unit::Seconds,
    "Time spent on writes, summed over requests."
);
pub static IN_PROGRESS: Desc = Desc::gauge(
    "reveal_storage_io_in_progress",
    Unit::None,
    LABELS,
    "I/O requests issued to the driver and not yet completed.",
);
pub static IO_TIME: Desc = counter!(
    "reveal_storage_io_time",
    Unit::Seconds,
    "Time the device had I/O in progress (busy time)."
);
pub static IO_WEIGHTED_TIME: Desc = counter!(
    "reveal_storage_io_weighted_time",
    Unit::Seconds,
    "Time spent doing I/O weighted by the number of requests in progress (queue backlog)."
);
pub static DISCARDS: Desc = counter!(
    "reveal_storage_discards_completed",
    Unit::None,
    "Discards completed (kernel 4.18+)."
);
pub static DISCARDS_MERGED: Desc = counter!(
    "reveal_storage_discards_merged",
    Unit::None,
    "Adjacent discards merged (kernel 4.18+)."
);
pub static DISCARD_BYTES: Desc = counter!(
    "reveal_storage_discarded",
    Unit::Bytes,
    "Bytes discarded (kernel 4.18+)."
);
pub static DISCARD_TIME: Desc = counter!(
    "reveal_storage_discard_time",
    Unit::Seconds,
    "Time spent on discards (kernel 4.18+)."
);
pub static FLUSHES: Desc = counter!(
    "reveal_storage_flushes_completed",
    Unit::None,
    "Flush requests completed (kernel 5.5+)."
);
pub static FLUSH_TIME: Desc = counter!(
    "reveal_storage_flush_time",
    Unit::Seconds,
    "Time spent on flushes (kernel 5.5+)."
);

/// Descriptor and unit factor of each stat field, in kernel order.
const FIELDS: [(&Desc, f64); 17] = [
    (&READS, 1.0),
    (&READS_MERGED, 1.0),
    (&READ_BYTES, SECTOR),
    (&READ_TIME, MS),
    (&WRITES, 1.0),
    (&WRITES_MERGED, 1.0),
    (&WRITE_BYTES, SECTOR),
    (&WRITE_TIME, MS),
    (&IN_PROGRESS, 1.0),
    (&IO_TIME, MS),
    (&IO_WEIGHTED_TIME, MS),
    (&DISCARDS, 1.0),
    (&DISCARDS_MERGED, 1.0),
    (&DISCARD_BYTES, SECTOR),
    (&DISCARD_TIME, MS),
    (&FLUSHES, 1.0),
    (&FLUSH_TIME, MS),
];
/// The kernel's sector unit in diskstats, independent of the device (iostats.html).
const SECTOR: f64 = 512.0;
const MS: f64 = 1e-3;

pub static METRICS: &[&Desc] = &[
    &READS,
    &READS_MERGED,
    &READ_BYTES,
    &READ_TIME,
    &WRITES,
    &WRITES_MERGED,
    &WRITE_BYTES,
    &WRITE_TIME,
    &IN_PROGRESS,
    &IO_TIME,
    &IO_WEIGHTED_TIME,
    &DISCARDS,
    &DISCARDS_MERGED,
    &DISCARD_BYTES,
    &DISCARD_TIME,
    &FLUSHES,
    &FLUSH_TIME,
];

/// Where the 4 fields of an old-style partition line go among the 17 of [`FIELDS`].
const PARTITION_FIELDS: [usize; 4] = [0, 2, 4, 6];

/// One line of `/proc/diskstats`: raw stats in kernel order (sectors, ms), `None` where the
/// kernel's layout has no such field.
#[derive(Debug, Clone, PartialEq)]
pub struct DiskStat<'a> {
    pub major: u32,
    pub minor: u32,
    pub name: &'a str,
    pub stats: [Option<u64>; 17],
}

/// Parses `/proc/diskstats`.
pub fn parse_diskstats(text: &str) -> Result<Vec<DiskStat<'_>>, ParseError> {
    let mut out = Vec::new();
    let mut fields: [u64; 17] = [0; 17];
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let mut it = line.split_ascii_whitespace();
        let Some(major) = it.next() else { continue };
        let (Some(minor), Some(name)) = (it.next(), it.next()) else {
            return Err(ParseError::new(
                lineno,
                format!("short line {line:?}", line = Excerpt(line)),
            ));
        };
        let num = |s: &str| {
            s.parse::<u64>().map_err(|_| {
                ParseError::new(lineno, format!("{s:?} is not a number", s = Excerpt(s)))
            })
        };
        let (major, minor) = (num(major)? as u32, num(minor)? as u32);
        let mut n = 0;
        for f in it {
            if n == fields.len() {
                return Err(ParseError::new(
                    lineno,
                    format!("{name}: more than 17 stat fields"),
                ));
            }
            fields[n] = num(f)?;
            n += 1;
        }
        let mut stats = [None; 17];
        match n {
            4 => {
                for (src, dst) in PARTITION_FIELDS.iter().enumerate() {
                    stats[*dst] = Some(fields[src]);
                }
            }
            11 | 15 | 17 => {
                for (dst, v) in stats.iter_mut().zip(&fields[..n]) {
                    *dst = Some(*v);
                }
            }
            _ => {
                return Err(ParseError::new(
                    lineno,
                    format!("{name}: {n} stat fields, a layout other than 4, 11, 15 or 17"),
                ))
            }
        }
        out.push(DiskStat {
            major,
            minor,
            name,
            stats,
        });
    }
    if out.is_empty() {
        return Err(ParseError::new(0, "no devices"));
    }
    Ok(out)
}

pub struct DiskstatsCollector {
    path: KeptFile,
    exclude: DeviceFilter,
    buf: String,
}

impl DiskstatsCollector {
    pub fn new(s: &Settings) -> Self {
        DiskstatsCollector {
            path: KeptFile::new(s.paths.proc("diskstats")),
            exclude: s.diskstats.device_exclude.clone(),
            buf: String::new(),
        }
    }
}

impl Collector for DiskstatsCollector {
    fn name(&self) -> &'static str {
        "diskstats"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        self.path.read_into(&mut self.buf)?;
        let disks = parse_diskstats(&self.buf).map_err(|e| CollectError::parse(&self.path, e))?;
        for d in disks.iter().filter(|d| !self.exclude.matches(d.name)) {
            for ((desc, factor), v) in FIELDS.iter().zip(d.stats) {
                if let Some(v) = v {
                    out.push_values(desc, &[d.name], v as f64 * factor);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectors::test_util::value;
    use proptest::prelude::*;

    const SAMPLE: &str = "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n\
 254       0 vda 33751 7976 4427546 13682 15258 16907 3361576 6087 0 5308 20159 4877 41 414680 310 2411 79\n\
 254       1 vda1 100 0 800 10 50 0 400 5 0 12 15 1 0 8 0\n\
   8       0 sda 10 1 80 3 20 2 160 4 1 6 7\n\
   8       1 sda1 5 40 10 80\n";

    #[test]
    fn parses_every_layout() {
        let d = parse_diskstats(SAMPLE).unwrap();
        assert_eq!(d.len(), 5);
        let vda = &d[1];
        assert_eq!((vda.major, vda.minor, vda.name), (254, 0, "vda"));
        assert_eq!(vda.stats[0], Some(33751));
        assert_eq!(vda.stats[16], Some(79));
        assert_eq!(d[2].stats[14], Some(0));
        assert_eq!(d[2].stats[15], None);
        assert_eq!(d[3].stats[10], Some(7));
        assert_eq!(d[3].stats[11], None);
        let sda1 = &d[4].stats;
        assert_eq!(
            sda1,
            &[
                Some(5),
                None,
                Some(40),
                None,
                Some(10),
                None,
                Some(80),
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                None
            ]
        );
    }

    #[test]
    fn rejects_unknown_layouts() {
        for n in [0, 1, 3, 5, 10, 12, 14, 16, 18, 20] {
            let line = format!("8 0 sda{}\n", " 1".repeat(n));
            assert!(parse_diskstats(&line).is_err(), "{n} fields accepted");
        }
        assert!(parse_diskstats("").is_err());
        assert!(parse_diskstats("8 0\n").is_err());
        assert!(parse_diskstats("8 x sda 1 2 3 4\n").is_err());
        assert!(parse_diskstats("8 0 sda 1 2 -3 4\n").is_err());
    }

    #[test]
    fn default_filter_compiles_and_excludes_partitions_and_ram() {
        let f = DiskstatsArgs::default().device_exclude;
        for name in [
            "loop0",
            "ram1",
            "zram0",
            "sda1",
            "vda2",
            "xvdb3",
            "nvme0n1p2",
            "fd0",
        ] {
            assert!(f.matches(name), "{name}");
        }
        for name in ["sda", "vda", "nvme0n1", "dm-0", "md0", "sr0"] {
            assert!(!f.matches(name), "{name}");
        }
    }

    #[test]
    fn flags_reach_settings() {
        let cli =
            crate::cli::parse_from(["x", "--collector.diskstats.device-exclude", "^sd"]).unwrap();
        assert!(cli.settings.diskstats.device_exclude.matches("sda"));
        assert!(!cli.settings.diskstats.device_exclude.matches("loop0"));
        let cli =
            crate::cli::parse_from(["x", "--collector.netdev.device-exclude", "^lo$"]).unwrap();
        assert!(cli.settings.netdev.device_exclude.matches("lo"));
        let cli = crate::cli::parse_from(["x"]).unwrap();
        assert!(cli.settings.diskstats.device_exclude.matches("loop0"));
        assert!(!cli.settings.netdev.device_exclude.matches("lo"));
        assert!(
            crate::cli::parse_from(["x", "--collector.diskstats.device-exclude", "("]).is_err()
        );
    }

    #[test]
    fn units_are_converted() {
        let d = parse_diskstats(SAMPLE).unwrap();
        let (desc, factor) = FIELDS[2];
        assert_eq!(desc.sample_name(), "reveal_storage_read_bytes_total");
        assert_eq!(d[1].stats[2].unwrap() as f64 * factor, 4427546.0 * 512.0);
        assert_eq!(
            FIELDS[3].0.sample_name(),
            "reveal_storage_read_time_seconds_total"
        );
        assert_eq!(FIELDS[3].1, 1e-3);
    }

    #[test]
    fn on_this_host() {
        let mut s = Settings::default();
        s.diskstats.device_exclude = DeviceFilter::none();
        let text = std::fs::read_to_string(s.paths.proc("diskstats")).expect("/proc/diskstats");
        let mut c = DiskstatsCollector::new(&s);
        let mut out = Scrape::new();
        c.update(&mut out).expect("/proc/diskstats of this host");
        let devices = out
            .families()
            .find(|f| std::ptr::eq(f.desc, &READS))
            .map_or(0, |f| f.samples.len());
        assert_eq!(
            devices,
            text.lines().filter(|l| !l.trim().is_empty()).count()
        );
        // Sectors of 512 bytes, read independently; the counter can only have grown since.
        let cols: Vec<&str> = text
            .lines()
            .next()
            .unwrap()
            .split_ascii_whitespace()
            .collect();
        let sectors: f64 = cols[5].parse().unwrap();
        let bytes = value(
            &out,
            "reveal_storage_read_bytes_total",
            &[("device", cols[2])],
        )
        .unwrap();
        assert!(bytes >= sectors * 512.0, "{bytes} < {sectors} sectors");
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC*") {
            let _ = parse_diskstats(&s);
        }

        #[test]
        fn never_panics_on_near_misses(v in proptest::collection::vec("[0-9]{1,25}|x|-1", 0..22)) {
            let _ = parse_diskstats(&format!("8 0 sda {}\n", v.join(" ")));
        }
    }
}
