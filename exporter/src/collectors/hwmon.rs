//! Temperatures from the hwmon class, attributed to a subsystem by the chip's driver.
//!
//! Files (<https://docs.kernel.org/hwmon/sysfs-interface.html>), one value each:
//! ```text
//! class/hwmon/hwmon2/name          coretemp
//! class/hwmon/hwmon2/temp1_input   45000          (millidegrees Celsius)
//! class/hwmon/hwmon2/temp1_label   Package id 0
//! ```
//! `hwmonN` are links to the device's hwmon directory; some older drivers keep `name` and the
//! sensor files one level down, under `hwmonN/device/`. `hwmonN` numbers follow probe order
//! and change between boots, so the `chip` label is the driver name plus the device the link
//! points to (`coretemp/coretemp.0`, `nvme/nvme0`, `k10temp/0000:00:18.3`), which is stable
//! and tells two chips of one driver apart; where two devices share a name, their whole path
//! under `devices` does. Only chips that no device tells apart (registered without a parent
//! device, or two chips of one device and driver) get `hwmonN` added, see `distinct_labels`.
//! `sensor` is `tempK`, `label` the driver's `tempK_label` (empty when it has none).
//!
//! The development VM has no hwmon class (no emulated sensors), so the collector is
//! `Unsupported` there. A sensor that cannot be read (a sleeping disk under drivetemp, a
//! faulty diode) is left out of that scrape and the others are kept.

use super::sysfs_attr::{Attr, Budget};
use super::sysfs_scan::{found_any, Rescan};
use super::{Collector, Settings};
use crate::error::{CollectError, ParseError};
use crate::read::{dir_names, read_into};
use crate::scrape::{Desc, Scrape, Unit};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long the chip list is reused before the class directory is read again (NVMe and USB
/// devices come and go). A sensor file that vanished brings the next scan forward to [`RETRY`].
pub const RESCAN: Duration = Duration::from_secs(10);
/// The earliest rescan after a sensor file vanished.
pub const RETRY: Duration = Duration::from_secs(1);
/// Share of the process's descriptor limit (1/N) this collector may keep open between
/// scrapes; beyond it, files are read by path.
pub const FD_SHARE: usize = 16;

const LABELS: &[&str] = &["chip", "sensor", "label"];

pub static CPU_TEMPERATURE: Desc = Desc::gauge(
    "reveal_cpu_temperature",
    Unit::Celsius,
    LABELS,
    "Temperature of CPU, chipset and board sensors (coretemp, k10temp, acpitz, Super-I/O, ...).",
);
pub static MEMORY_TEMPERATURE: Desc = Desc::gauge(
    "reveal_memory_temperature",
    Unit::Celsius,
    LABELS,
    "Temperature of memory module sensors (jc42, spd5118).",
);
pub static STORAGE_TEMPERATURE: Desc = Desc::gauge(
    "reveal_storage_temperature",
    Unit::Celsius,
    LABELS,
    "Temperature of drives (nvme, drivetemp).",
);
pub static NETWORK_TEMPERATURE: Desc = Desc::gauge(
    "reveal_network_temperature",
    Unit::Celsius,
    LABELS,
    "Temperature of network adapters and transceivers (mlx5, bnxt_en, ixgbe, igb, sfp).",
);
/// Named apart from the GPU collector's NVML temperature family, which has other labels (GPU
/// index and UUID): two families of one name in one exposition are invalid.
pub static GPU_TEMPERATURE: Desc = Desc::gauge(
    "reveal_gpu_hwmon_temperature",
    Unit::Celsius,
    LABELS,
    "Temperature of GPUs whose driver registers hwmon sensors (amdgpu, radeon, nouveau, i915, xe).",
);

pub static METRICS: &[&Desc] = &[
    &CPU_TEMPERATURE,
    &MEMORY_TEMPERATURE,
    &STORAGE_TEMPERATURE,
    &NETWORK_TEMPERATURE,
    &GPU_TEMPERATURE,
];

/// The subsystem a chip's temperatures belong to, by the driver's hwmon name.
///
/// Any chip not listed counts as cpu: the unlisted ones are mostly motherboard Super-I/O and
/// ACPI sensors (nct6775, it87, acpitz, pch_*), which sit beside the CPU and its voltage
/// regulators and heat with them, and the analyzer needs some subsystem to attribute to.
pub fn subsystem_desc(chip_name: &str) -> &'static Desc {
    match chip_name {
        "jc42" | "spd5118" => &MEMORY_TEMPERATURE,
        "nvme" | "drivetemp" => &STORAGE_TEMPERATURE,
        "mlx5" | "bnxt_en" | "ixgbe" | "igb" | "sfp" => &NETWORK_TEMPERATURE,
        "amdgpu" | "radeon" | "nouveau" | "i915" | "xe" => &GPU_TEMPERATURE,
        // coretemp, k10temp, k8temp, zenpower, via_cputemp, cpu_thermal, acpitz and unknowns.
        _ => &CPU_TEMPERATURE,
    }
}

/// Parses a `tempK_input` attribute (signed millidegrees Celsius) into degrees Celsius.
pub fn parse_millicelsius(text: &str) -> Result<f64, ParseError> {
    let t = text.trim();
    let m: i64 = t.parse().map_err(|_| {
        ParseError::new(
            1,
            format!("{:?} is not a temperature in m°C", crate::error::Excerpt(t)),
        )
    })?;
    Ok(m as f64 / 1e3)
}

/// Parses a `name` or `tempK_label` attribute: one trimmed line.
pub fn parse_attr_text(text: &str) -> Result<&str, ParseError> {
    let t = text.trim();
    if t.contains('\n') {
        return Err(ParseError::new(2, "more than one line"));
    }
    Ok(t)
}

/// The sensor index of a `tempK_input` file name.
fn temp_index(file: &str) -> Option<u32> {
    file.strip_prefix("temp")?
        .strip_suffix("_input")?
        .parse()
        .ok()
}

struct Sensor {
    desc: &'static Desc,
    chip: String,
    sensor: String,
    label: String,
    input: Attr,
}

/// One `hwmonN` directory with temperatures, as a scan found it.
struct Chip {
    hwmon: String,
    /// The driver's name (`coretemp`).
    name: String,
    /// `name/device`, or `name` without a device link.
    label: String,
    /// The device's path under sysfs's `devices`; looked up only for a label that another
    /// chip shares.
    device: Option<String>,
    /// Index of the chip's first sensor.
    first: usize,
}

/// The label of each chip, made distinct where two share one (their devices have one name
/// under different parents, or there are no device links): the driver name and the device's
/// whole path, which is stable, where no other chip of that label has the same path; otherwise
/// (no device, or two chips of one device) the label and `hwmonN`, which can change at the
/// next boot but keeps the chips' series apart.
fn distinct_labels(chips: &[Chip]) -> Vec<String> {
    chips
        .iter()
        .map(|c| {
            let peers = || chips.iter().filter(|o| o.label == c.label);
            if peers().count() == 1 {
                return c.label.clone();
            }
            match &c.device {
                Some(d) if peers().filter(|o| o.device.as_ref() == Some(d)).count() == 1 => {
                    format!("{}/{d}", c.name)
                }
                _ => format!("{}/{}", c.label, c.hwmon),
            }
        })
        .collect()
}

pub struct HwmonCollector {
    root: PathBuf,
    /// sysfs's `devices`, which device paths in chip labels are relative to.
    devices: PathBuf,
    sensors: Vec<Sensor>,
    /// Scans every [`RESCAN`], after [`RETRY`] once a sensor file vanished.
    rescan: Rescan,
    /// A cap on kept-open files below the [`FD_SHARE`] budget (tests set it to read by path).
    max_open: usize,
    buf: String,
}

impl HwmonCollector {
    pub fn new(s: &Settings) -> Self {
        HwmonCollector {
            root: s.paths.sys("class/hwmon"),
            devices: s.paths.sys("devices"),
            sensors: Vec::new(),
            rescan: Rescan::new(RESCAN, RETRY),
            max_open: usize::MAX,
            buf: String::new(),
        }
    }

    fn read_text(&mut self, path: &Path) -> Option<String> {
        read_into(path, &mut self.buf).ok()?;
        parse_attr_text(&self.buf).ok().map(str::to_string)
    }

    /// Adds the temperature sensors of one `hwmonN` directory and returns the driver name and
    /// the chip label it gave them, or `None` when the directory has no temperature.
    fn scan_chip(&mut self, hwmon: &str, budget: &mut Budget) -> Option<(String, String)> {
        let base = self.root.join(hwmon);
        let device = base.join("device");
        let name = self
            .read_text(&base.join("name"))
            .or_else(|| self.read_text(&device.join("name")))?;
        // Sensors live in the hwmon directory, or for older drivers in the device's.
        let (dir, mut files) = [&base, &device].into_iter().find_map(|d| {
            let files: Vec<(u32, String)> = dir_names(d)
                .ok()?
                .into_iter()
                .filter_map(|f| Some((temp_index(&f)?, f)))
                .collect();
            (!files.is_empty()).then(|| (d.clone(), files))
        })?;
        let chip = match std::fs::read_link(&device)
            .ok()
            .as_deref()
            .and_then(Path::file_name)
        {
            Some(dev) => format!("{name}/{}", dev.to_string_lossy()),
            None => name.clone(),
        };
        files.sort();
        for (k, file) in files {
            let label = self
                .read_text(&dir.join(format!("temp{k}_label")))
                .unwrap_or_default();
            self.sensors.push(Sensor {
                desc: subsystem_desc(&name),
                chip: chip.clone(),
                sensor: format!("temp{k}"),
                label,
                input: budget.attr(dir.join(file)),
            });
        }
        Some((name, chip))
    }

    /// The path of the device an `hwmonN` directory belongs to, relative to sysfs's `devices`
    /// (`devices`, canonical): `platform/coretemp.0`, `pci0000:00/0000:00:18.3`. `None` for a
    /// chip registered without a parent device (no `device` link).
    fn device_path(&self, hwmon: &str, devices: &Path) -> Option<String> {
        let dev = std::fs::canonicalize(self.root.join(hwmon).join("device")).ok()?;
        Some(dev.strip_prefix(devices).ok()?.to_str()?.to_string())
    }

    fn scan(&mut self) -> Result<(), CollectError> {
        self.sensors.clear();
        let mut budget = Budget::share_of_limit(FD_SHARE).capped(self.max_open);
        let mut chips = Vec::new();
        for hwmon in dir_names(&self.root)? {
            let first = self.sensors.len();
            if let Some((name, label)) = self.scan_chip(&hwmon, &mut budget) {
                chips.push(Chip {
                    hwmon,
                    name,
                    label,
                    device: None,
                    first,
                });
            }
        }
        let devices = std::fs::canonicalize(&self.devices).ok();
        for i in 0..chips.len() {
            if chips.iter().filter(|c| c.label == chips[i].label).count() > 1 {
                chips[i].device = devices
                    .as_deref()
                    .and_then(|d| self.device_path(&chips[i].hwmon, d));
            }
        }
        for (i, label) in distinct_labels(&chips).into_iter().enumerate() {
            let end = chips.get(i + 1).map_or(self.sensors.len(), |c| c.first);
            for s in &mut self.sensors[chips[i].first..end] {
                s.chip.clone_from(&label);
            }
        }
        found_any(
            &self.sensors,
            || self.root.clone(),
            "no hwmon temperature sensor",
        )
    }
}

impl Collector for HwmonCollector {
    fn name(&self) -> &'static str {
        "hwmon"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        let scanned = self.rescan.due().then(|| self.scan());
        self.rescan.check(scanned)?;
        let buf = &mut self.buf;
        // A vanished file means the chip went away: rescan soon. Other errors (EIO, ENODATA
        // from a sensor that cannot answer now, a value that does not parse) only skip the
        // sensor.
        self.rescan
            .read_each(&self.sensors, CollectError::is_unsupported, |s| {
                // Only the sensors of a family the page serves are read (the fast cadence's
                // page serves the CPU's, not the drives').
                if !out.wants(s.desc) {
                    return Ok(());
                }
                s.input.read(buf)?;
                let celsius =
                    parse_millicelsius(buf).map_err(|e| CollectError::parse(s.input.path(), e))?;
                out.push_values(s.desc, &[&s.chip, &s.sensor, &s.label], celsius);
                Ok(())
            })
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
        assert_eq!(parse_millicelsius("45000\n").unwrap(), 45.0);
        assert_eq!(parse_millicelsius("-5500\n").unwrap(), -5.5);
        assert!(parse_millicelsius("").is_err());
        assert!(parse_millicelsius("45.0").is_err());
        assert_eq!(parse_attr_text("Package id 0\n").unwrap(), "Package id 0");
        assert!(parse_attr_text("a\nb").is_err());
        assert_eq!(temp_index("temp12_input"), Some(12));
        assert_eq!(temp_index("temp1_label"), None);
        assert_eq!(temp_index("in0_input"), None);
    }

    #[test]
    fn subsystems_by_driver() {
        assert_eq!(subsystem_desc("coretemp").name, "reveal_cpu_temperature");
        assert_eq!(subsystem_desc("nvme").name, "reveal_storage_temperature");
        assert_eq!(
            subsystem_desc("amdgpu").name,
            "reveal_gpu_hwmon_temperature"
        );
        assert_eq!(subsystem_desc("jc42").name, "reveal_memory_temperature");
        assert_eq!(subsystem_desc("nct6798").name, "reveal_cpu_temperature");
    }

    #[test]
    fn reads_chips_in_both_layouts_and_skips_bad_sensors() {
        let dir = std::env::temp_dir().join(format!("reveal-hwmon-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let dev = dir.join("devices");
        let class = dir.join("class/hwmon");
        let write = |p: PathBuf, t: &str| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, t).unwrap();
        };
        // Two coretemp chips, as on a two-socket host; one sensor reads garbage.
        for (h, d, t) in [
            ("hwmon1", "coretemp.0", "45000"),
            ("hwmon3", "coretemp.1", "x"),
        ] {
            let hw = dev.join(d).join("hwmon").join(h);
            write(hw.join("name"), "coretemp\n");
            write(hw.join("temp1_input"), &format!("{t}\n"));
            write(hw.join("temp1_label"), "Package id 0\n");
            write(hw.join("temp2_input"), "41000\n");
            std::os::unix::fs::symlink(dev.join(d), hw.join("device")).unwrap();
            std::fs::create_dir_all(&class).unwrap();
            std::os::unix::fs::symlink(&hw, class.join(h)).unwrap();
        }
        // An older driver with everything under device/.
        let old = dev.join("nvme0");
        write(old.join("name"), "nvme\n");
        write(old.join("temp1_input"), "38850\n");
        std::fs::create_dir_all(class.join("hwmon0")).unwrap();
        std::os::unix::fs::symlink(&old, class.join("hwmon0/device")).unwrap();
        // A chip without temperatures.
        write(class.join("hwmon2/name"), "fan\n");

        let s = Settings {
            paths: Paths::new(&dir, &dir),
            ..Default::default()
        };
        let mut c = HwmonCollector::new(&s);
        let mut out = Scrape::new();
        c.update(&mut out).unwrap();
        let got = samples(&out);
        let l = |c: &str, s: &str, x: &str| vec![c.to_string(), s.to_string(), x.to_string()];
        assert_eq!(
            got,
            vec![
                (
                    "reveal_storage_temperature",
                    l("nvme/nvme0", "temp1", ""),
                    38.85
                ),
                (
                    "reveal_cpu_temperature",
                    l("coretemp/coretemp.0", "temp1", "Package id 0"),
                    45.0
                ),
                (
                    "reveal_cpu_temperature",
                    l("coretemp/coretemp.0", "temp2", ""),
                    41.0
                ),
                (
                    "reveal_cpu_temperature",
                    l("coretemp/coretemp.1", "temp2", ""),
                    41.0
                ),
            ]
        );
        // sysfs refuses reads of a removed attribute through a kept file (ENODEV), but a file
        // here stays readable after unlinking: rescan reading by path, as a removal then
        // shows the way it would on a real host.
        c.max_open = 0;
        c.rescan.expire();
        c.update(&mut Scrape::new()).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            c.update(&mut Scrape::new()).unwrap_err().is_unsupported(),
            "no sensor left"
        );
        assert!(c.rescan.retrying());
    }

    /// The chip label of every sample of one update over the tree at `dir`.
    fn chip_labels(dir: &Path) -> Vec<String> {
        let s = Settings {
            paths: Paths::new(dir, dir),
            ..Default::default()
        };
        let mut out = Scrape::new();
        HwmonCollector::new(&s).update(&mut out).unwrap();
        samples(&out).into_iter().map(|s| s.1[0].clone()).collect()
    }

    #[test]
    fn same_driver_without_device_links_is_told_apart_by_hwmon_dir() {
        let dir = std::env::temp_dir().join(format!("reveal-hwmon-nolink-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for h in ["hwmon0", "hwmon1"] {
            let d = dir.join("class/hwmon").join(h);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("name"), "k10temp\n").unwrap();
            std::fs::write(d.join("temp1_input"), "50000\n").unwrap();
        }
        let chips = chip_labels(&dir);
        assert_eq!(chips, ["k10temp/hwmon0", "k10temp/hwmon1"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn chip(hwmon: &str, name: &str, label: &str, device: Option<&str>) -> Chip {
        Chip {
            hwmon: hwmon.into(),
            name: name.into(),
            label: label.into(),
            device: device.map(str::to_string),
            first: 0,
        }
    }

    #[test]
    fn shared_labels_fall_back_to_the_device_path_then_hwmon() {
        let chips = [
            chip("hwmon0", "acpitz", "acpitz", None),
            chip("hwmon1", "foo", "foo/x.0", Some("platform/x.0")),
            chip("hwmon2", "foo", "foo/x.0", Some("pci0000:00/x.0")),
            chip("hwmon3", "bar", "bar/y", Some("platform/y")),
            chip("hwmon4", "bar", "bar/y", Some("platform/y")),
            chip("hwmon5", "k10temp", "k10temp", None),
            chip("hwmon6", "k10temp", "k10temp", None),
        ];
        assert_eq!(
            distinct_labels(&chips),
            [
                "acpitz",
                "foo/platform/x.0",
                "foo/pci0000:00/x.0",
                "bar/y/hwmon3",
                "bar/y/hwmon4",
                "k10temp/hwmon5",
                "k10temp/hwmon6",
            ]
        );
    }

    #[test]
    fn devices_of_one_name_are_told_apart_by_their_path() {
        let dir = std::env::temp_dir().join(format!("reveal-hwmon-path-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (h, parent) in [("hwmon7", "platform"), ("hwmon3", "pci0000:00")] {
            let dev = dir.join("devices").join(parent).join("foo.0");
            let hw = dev.join("hwmon").join(h);
            std::fs::create_dir_all(&hw).unwrap();
            std::fs::write(hw.join("name"), "foo\n").unwrap();
            std::fs::write(hw.join("temp1_input"), "30000\n").unwrap();
            std::os::unix::fs::symlink(&dev, hw.join("device")).unwrap();
            std::fs::create_dir_all(dir.join("class/hwmon")).unwrap();
            std::os::unix::fs::symlink(&hw, dir.join("class/hwmon").join(h)).unwrap();
        }
        let chips = chip_labels(&dir);
        assert_eq!(chips, ["foo/pci0000:00/foo.0", "foo/platform/foo.0"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,40}") {
            let _ = parse_millicelsius(&s);
            let _ = parse_attr_text(&s);
            let _ = temp_index(&s);
        }
    }
}
