//! What one NVIDIA GPU reports, as a plain [`GpuSample`] in NVML's own types and units, and
//! the pure mapping from it to metric series (units converted here, at the boundary).
//!
//! Units as the NVML API reference gives them
//! (<https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html>):
//! utilization in percent over the driver's sample period (`nvmlDeviceGetUtilizationRates`,
//! `…EncoderUtilization`, `…DecoderUtilization`); memory in bytes (`nvmlDeviceGetMemoryInfo`);
//! power in milliwatts (`nvmlDeviceGetPowerUsage`); energy in millijoules since the driver
//! was loaded (`nvmlDeviceGetTotalEnergyConsumption`); temperature in °C
//! (`nvmlDeviceGetTemperature`); clocks in MHz (`nvmlDeviceGetClockInfo`); PCIe throughput in
//! KB/s over 20 ms (`nvmlDeviceGetPcieThroughput`); throttle reasons as the
//! `nvmlClocksThrottleReason*` bit mask. A field is `None` where NVML answered
//! `NVML_ERROR_NOT_SUPPORTED` (or any other error) for that GPU.

use crate::scrape::{index_str, Desc, Scrape, Unit};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuSample {
    pub index: u32,
    pub uuid: String,
    pub name: String,
    pub pci_bus_id: String,
    pub utilization_gpu_percent: Option<u32>,
    pub utilization_memory_percent: Option<u32>,
    pub memory_used_bytes: Option<u64>,
    pub memory_total_bytes: Option<u64>,
    pub power_usage_milliwatts: Option<u32>,
    pub total_energy_millijoules: Option<u64>,
    pub temperature_gpu_celsius: Option<u32>,
    pub clock_sm_mhz: Option<u32>,
    pub clock_memory_mhz: Option<u32>,
    /// `nvmlDeviceGetMaxClockInfo`: the highest clocks the board allows.
    pub clock_sm_max_mhz: Option<u32>,
    pub clock_memory_max_mhz: Option<u32>,
    pub pcie_link_gen_current: Option<u32>,
    pub pcie_link_gen_max: Option<u32>,
    pub pcie_link_width_current: Option<u32>,
    pub pcie_link_width_max: Option<u32>,
    pub pcie_tx_kilobytes_per_second: Option<u32>,
    pub pcie_rx_kilobytes_per_second: Option<u32>,
    #[serde(default)]
    pub ecc: Vec<EccCount>,
    #[serde(default)]
    pub retired_pages: Vec<RetiredPages>,
    /// `nvmlDeviceGetCurrentClocksThrottleReasons`.
    pub throttle_reasons: Option<u64>,
    /// `nvmlDeviceGetSupportedClocksThrottleReasons`: only these get a series.
    pub throttle_reasons_supported: Option<u64>,
    pub encoder_utilization_percent: Option<u32>,
    pub decoder_utilization_percent: Option<u32>,
    #[serde(default)]
    pub nvlinks: Vec<NvLinkSample>,
    /// The NVLink error counters summed over the links by the driver
    /// (`NVML_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL`), in place of `nvlinks`, for a page that
    /// serves them summed over the links: `dl_replay`, `dl_recovery`, `dl_crc_flit`,
    /// `dl_crc_data` and the count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nvlink_error_totals: Vec<(String, u64)>,
}

/// The `location` of an [`EccCount`] that is the device's total over its memory locations
/// (`NVML_FI_DEV_ECC_*_TOTAL`), and the `link` of the NVLink error totals: only a page that
/// sums those labels away asks for them (`gpu::Needs`), so the value is never served.
pub const TOTAL: &str = "total";

/// One `nvmlDeviceGetMemoryErrorCounter` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EccCount {
    /// `corrected` or `uncorrected` (`nvmlMemoryErrorType_t`).
    pub error_type: String,
    /// `volatile` (since the driver loaded) or `aggregate` (lifetime) (`nvmlEccCounterType_t`).
    pub counter: String,
    /// `nvmlMemoryLocation_t` in snake case: `device_memory`, `l1_cache`, `l2_cache`, …
    pub location: String,
    pub count: u64,
}

/// `nvmlDeviceGetRetiredPages` for one cause: how many pages it retired.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetiredPages {
    /// `multiple_single_bit_ecc` or `double_bit_ecc` (`nvmlPageRetirementCause_t`).
    pub cause: String,
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvLinkSample {
    pub link: u32,
    pub active: bool,
    /// `nvmlNvLinkErrorCounter_t` in snake case (`dl_replay`, `dl_recovery`, `dl_crc_flit`,
    /// `dl_crc_data`) and its count.
    #[serde(default)]
    pub errors: Vec<(String, u64)>,
}

/// The throttle reason bits of `nvml.h` (`nvmlClocksThrottleReason*`), named in snake case.
pub const THROTTLE_REASONS: &[(u64, &str)] = &[
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
];

/// NVML's "KB" is taken as 1024 bytes; the API reference does not say which it means.
const KB: f64 = 1024.0;

macro_rules! gpu_metric {
    ($id:ident, $ctor:ident, $name:expr, $unit:expr, [$($l:expr),*], $help:expr $(,)?) => {
        pub static $id: Desc = Desc::$ctor(
            $name,
            $unit,
            &["gpu", "uuid", "model", "pci_bus_id" $(, $l)*],
            $help,
        );
    };
}

gpu_metric!(
    UTILIZATION,
    gauge,
    "reveal_gpu_utilization",
    Unit::Ratio,
    [],
    "Share of the last sample period in which a kernel ran on the GPU (NVML utilization.gpu)."
);
gpu_metric!(
    MEMORY_UTILIZATION,
    gauge,
    "reveal_gpu_memory_utilization",
    Unit::Ratio,
    [],
    "Share of the last sample period in which device memory was read or written (NVML utilization.memory)."
);
gpu_metric!(
    MEMORY_USED,
    gauge,
    "reveal_gpu_memory_used",
    Unit::Bytes,
    [],
    "Device memory allocated."
);
gpu_metric!(
    MEMORY_TOTAL,
    gauge,
    "reveal_gpu_memory_total",
    Unit::Bytes,
    [],
    "Device memory installed and usable."
);
gpu_metric!(
    POWER,
    gauge,
    "reveal_gpu_power",
    Unit::Watts,
    [],
    "Power drawn by the board."
);
gpu_metric!(
    ENERGY,
    counter,
    "reveal_gpu_energy",
    Unit::Joules,
    [],
    "Energy used by the board since the driver was loaded; read at most once a second (NVML takes milliseconds to answer it)."
);
gpu_metric!(
    TEMPERATURE,
    gauge,
    "reveal_gpu_temperature",
    Unit::Celsius,
    [],
    "GPU die temperature."
);
gpu_metric!(
    CLOCK,
    gauge,
    "reveal_gpu_clock",
    Unit::Hertz,
    ["clock"],
    "Current clock of the streaming multiprocessors (clock=\"sm\") or of device memory (clock=\"memory\")."
);
gpu_metric!(
    CLOCK_MAX,
    gauge,
    "reveal_gpu_clock_max",
    Unit::Hertz,
    ["clock"],
    "Highest clock the board allows for the streaming multiprocessors (clock=\"sm\") or device memory (clock=\"memory\")."
);
gpu_metric!(
    PCIE_GEN,
    gauge,
    "reveal_gpu_pcie_link_generation",
    Unit::None,
    [],
    "PCIe generation the link runs at now (can drop at idle to save power)."
);
gpu_metric!(
    PCIE_GEN_MAX,
    gauge,
    "reveal_gpu_pcie_link_generation_max",
    Unit::None,
    [],
    "Highest PCIe generation GPU and slot support together."
);
gpu_metric!(
    PCIE_WIDTH,
    gauge,
    "reveal_gpu_pcie_link_width",
    Unit::None,
    [],
    "PCIe lanes the link runs with now; below the max means a down-trained link."
);
gpu_metric!(
    PCIE_WIDTH_MAX,
    gauge,
    "reveal_gpu_pcie_link_width_max",
    Unit::None,
    [],
    "Most PCIe lanes GPU and slot support together."
);
gpu_metric!(
    PCIE_THROUGHPUT,
    gauge,
    "reveal_gpu_pcie_throughput_bytes_per_second",
    Unit::None,
    ["direction"],
    "PCIe traffic over NVML's last 20 ms sample, direction tx (from the GPU) or rx (to it)."
);
gpu_metric!(
    ECC,
    counter,
    "reveal_gpu_ecc_errors",
    Unit::None,
    ["type", "counter", "location"],
    "ECC errors by type (corrected/uncorrected), counter (volatile: since driver load; aggregate: lifetime) and memory location."
);
gpu_metric!(
    RETIRED,
    counter,
    "reveal_gpu_retired_pages",
    Unit::None,
    ["cause"],
    "Device memory pages retired, by cause."
);
gpu_metric!(
    THROTTLE,
    gauge,
    "reveal_gpu_throttle_reason",
    Unit::None,
    ["reason"],
    "1 while the clocks are held down for the reason, else 0 (reasons the GPU supports)."
);
gpu_metric!(
    ENCODER,
    gauge,
    "reveal_gpu_encoder_utilization",
    Unit::Ratio,
    [],
    "Share of the sample period the video encoder was busy."
);
gpu_metric!(
    DECODER,
    gauge,
    "reveal_gpu_decoder_utilization",
    Unit::Ratio,
    [],
    "Share of the sample period the video decoder was busy."
);
gpu_metric!(
    NVLINK_ACTIVE,
    gauge,
    "reveal_gpu_nvlink_active",
    Unit::None,
    ["link"],
    "1 if the NVLink is up, else 0."
);
gpu_metric!(
    NVLINK_ERRORS,
    counter,
    "reveal_gpu_nvlink_errors",
    Unit::None,
    ["link", "counter"],
    "NVLink data-link errors by counter (dl_replay, dl_recovery, dl_crc_flit, dl_crc_data)."
);

pub static METRICS: &[&Desc] = &[
    &UTILIZATION,
    &MEMORY_UTILIZATION,
    &MEMORY_USED,
    &MEMORY_TOTAL,
    &POWER,
    &ENERGY,
    &TEMPERATURE,
    &CLOCK,
    &CLOCK_MAX,
    &PCIE_GEN,
    &PCIE_GEN_MAX,
    &PCIE_WIDTH,
    &PCIE_WIDTH_MAX,
    &PCIE_THROUGHPUT,
    &ECC,
    &RETIRED,
    &THROTTLE,
    &ENCODER,
    &DECODER,
    &NVLINK_ACTIVE,
    &NVLINK_ERRORS,
];

/// Pushes every series of one GPU's sample.
pub fn push_sample(g: &GpuSample, out: &mut Scrape) {
    let mut index = [0u8; 20];
    let gpu = index_str(u64::from(g.index), &mut index);
    let base = [gpu, g.uuid.as_str(), g.name.as_str(), g.pci_bus_id.as_str()];
    // The four GPU labels, then the family's own, in its descriptor's order; borrowed, so a
    // steady scrape copies them into the strings of the last one's samples (no allocation).
    let mut put = |desc: &'static Desc, extra: &[&str], v: Option<f64>| {
        if let Some(v) = v {
            let mut values = [""; 8];
            values[..4].copy_from_slice(&base);
            values[4..4 + extra.len()].copy_from_slice(extra);
            out.push_values(desc, &values[..4 + extra.len()], v);
        }
    };
    let pct = |v: Option<u32>| v.map(|p| f64::from(p) / 100.0);
    put(&UTILIZATION, &[], pct(g.utilization_gpu_percent));
    put(&MEMORY_UTILIZATION, &[], pct(g.utilization_memory_percent));
    put(&MEMORY_USED, &[], g.memory_used_bytes.map(|b| b as f64));
    put(&MEMORY_TOTAL, &[], g.memory_total_bytes.map(|b| b as f64));
    put(
        &POWER,
        &[],
        g.power_usage_milliwatts.map(|mw| f64::from(mw) / 1e3),
    );
    put(
        &ENERGY,
        &[],
        g.total_energy_millijoules.map(|mj| mj as f64 / 1e3),
    );
    put(&TEMPERATURE, &[], g.temperature_gpu_celsius.map(f64::from));
    put(&CLOCK, &["sm"], g.clock_sm_mhz.map(|m| f64::from(m) * 1e6));
    put(
        &CLOCK,
        &["memory"],
        g.clock_memory_mhz.map(|m| f64::from(m) * 1e6),
    );
    put(
        &CLOCK_MAX,
        &["sm"],
        g.clock_sm_max_mhz.map(|m| f64::from(m) * 1e6),
    );
    put(
        &CLOCK_MAX,
        &["memory"],
        g.clock_memory_max_mhz.map(|m| f64::from(m) * 1e6),
    );
    put(&PCIE_GEN, &[], g.pcie_link_gen_current.map(f64::from));
    put(&PCIE_GEN_MAX, &[], g.pcie_link_gen_max.map(f64::from));
    put(&PCIE_WIDTH, &[], g.pcie_link_width_current.map(f64::from));
    put(&PCIE_WIDTH_MAX, &[], g.pcie_link_width_max.map(f64::from));
    put(
        &PCIE_THROUGHPUT,
        &["tx"],
        g.pcie_tx_kilobytes_per_second.map(|k| f64::from(k) * KB),
    );
    put(
        &PCIE_THROUGHPUT,
        &["rx"],
        g.pcie_rx_kilobytes_per_second.map(|k| f64::from(k) * KB),
    );
    for e in &g.ecc {
        let l = [
            e.error_type.as_str(),
            e.counter.as_str(),
            e.location.as_str(),
        ];
        put(&ECC, &l, Some(e.count as f64));
    }
    for r in &g.retired_pages {
        put(&RETIRED, &[r.cause.as_str()], Some(r.count as f64));
    }
    if let (Some(now), Some(supported)) = (g.throttle_reasons, g.throttle_reasons_supported) {
        for &(bit, name) in THROTTLE_REASONS
            .iter()
            .filter(|(bit, _)| supported & bit != 0)
        {
            put(
                &THROTTLE,
                &[name],
                Some(f64::from(u8::from(now & bit != 0))),
            );
        }
    }
    put(&ENCODER, &[], pct(g.encoder_utilization_percent));
    put(&DECODER, &[], pct(g.decoder_utilization_percent));
    for (counter, n) in &g.nvlink_error_totals {
        put(&NVLINK_ERRORS, &[TOTAL, counter.as_str()], Some(*n as f64));
    }
    for link in &g.nvlinks {
        let mut link_index = [0u8; 20];
        let id = index_str(u64::from(link.link), &mut link_index);
        put(
            &NVLINK_ACTIVE,
            &[id],
            Some(f64::from(u8::from(link.active))),
        );
        for (counter, n) in &link.errors {
            put(&NVLINK_ERRORS, &[id, counter.as_str()], Some(*n as f64));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fixtures() -> Vec<(PathBuf, Vec<GpuSample>)> {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nvml");
        let mut out = Vec::new();
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "json") {
                let text = std::fs::read_to_string(&p).unwrap();
                let gpus: Vec<GpuSample> =
                    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                out.push((p, gpus));
            }
        }
        assert!(!out.is_empty(), "no fixtures in {}", dir.display());
        out
    }

    /// The value of the one series of `desc` for GPU `gpu` whose extra labels are `extra`.
    fn value(s: &Scrape, desc: &'static Desc, gpu: u32, extra: &[(&str, &str)]) -> Option<f64> {
        let fam = s.families().find(|f| std::ptr::eq(f.desc, desc))?;
        let hits: Vec<f64> = fam
            .samples
            .iter()
            .filter(|x| x.labels[0].1 == gpu.to_string())
            .filter(|x| {
                extra
                    .iter()
                    .all(|(k, v)| x.labels.iter().any(|(lk, lv)| lk == k && lv == v))
            })
            .map(|x| x.value)
            .collect();
        assert!(
            hits.len() <= 1,
            "{} gpu {gpu} {extra:?}: {hits:?}",
            desc.name
        );
        hits.first().copied()
    }

    #[test]
    fn every_fixture_field_maps_to_its_series_in_base_units() {
        for (path, gpus) in fixtures() {
            let mut s = Scrape::new();
            for g in &gpus {
                push_sample(g, &mut s);
            }
            for g in &gpus {
                let at = format!("{} gpu {}", path.display(), g.index);
                let pct = |v: Option<u32>| v.map(|p| f64::from(p) / 100.0);
                type Check<'a> = (&'static Desc, Vec<(&'a str, &'a str)>, Option<f64>);
                let checks: Vec<Check> = vec![
                    (&UTILIZATION, vec![], pct(g.utilization_gpu_percent)),
                    (
                        &MEMORY_UTILIZATION,
                        vec![],
                        pct(g.utilization_memory_percent),
                    ),
                    (&MEMORY_USED, vec![], g.memory_used_bytes.map(|v| v as f64)),
                    (
                        &MEMORY_TOTAL,
                        vec![],
                        g.memory_total_bytes.map(|v| v as f64),
                    ),
                    (
                        &POWER,
                        vec![],
                        g.power_usage_milliwatts.map(|v| f64::from(v) / 1000.0),
                    ),
                    (
                        &ENERGY,
                        vec![],
                        g.total_energy_millijoules.map(|v| v as f64 / 1000.0),
                    ),
                    (
                        &TEMPERATURE,
                        vec![],
                        g.temperature_gpu_celsius.map(f64::from),
                    ),
                    (
                        &CLOCK,
                        vec![("clock", "sm")],
                        g.clock_sm_mhz.map(|v| f64::from(v) * 1e6),
                    ),
                    (
                        &CLOCK,
                        vec![("clock", "memory")],
                        g.clock_memory_mhz.map(|v| f64::from(v) * 1e6),
                    ),
                    (
                        &CLOCK_MAX,
                        vec![("clock", "sm")],
                        g.clock_sm_max_mhz.map(|v| f64::from(v) * 1e6),
                    ),
                    (
                        &CLOCK_MAX,
                        vec![("clock", "memory")],
                        g.clock_memory_max_mhz.map(|v| f64::from(v) * 1e6),
                    ),
                    (&PCIE_GEN, vec![], g.pcie_link_gen_current.map(f64::from)),
                    (&PCIE_GEN_MAX, vec![], g.pcie_link_gen_max.map(f64::from)),
                    (
                        &PCIE_WIDTH,
                        vec![],
                        g.pcie_link_width_current.map(f64::from),
                    ),
                    (
                        &PCIE_WIDTH_MAX,
                        vec![],
                        g.pcie_link_width_max.map(f64::from),
                    ),
                    (
                        &PCIE_THROUGHPUT,
                        vec![("direction", "tx")],
                        g.pcie_tx_kilobytes_per_second
                            .map(|v| f64::from(v) * 1024.0),
                    ),
                    (
                        &PCIE_THROUGHPUT,
                        vec![("direction", "rx")],
                        g.pcie_rx_kilobytes_per_second
                            .map(|v| f64::from(v) * 1024.0),
                    ),
                    (&ENCODER, vec![], pct(g.encoder_utilization_percent)),
                    (&DECODER, vec![], pct(g.decoder_utilization_percent)),
                ];
                for (desc, extra, want) in checks {
                    assert_eq!(
                        value(&s, desc, g.index, &extra),
                        want,
                        "{at}: {} {extra:?}",
                        desc.name
                    );
                }
                for e in &g.ecc {
                    let l = [
                        ("type", e.error_type.as_str()),
                        ("counter", e.counter.as_str()),
                        ("location", e.location.as_str()),
                    ];
                    assert_eq!(
                        value(&s, &ECC, g.index, &l),
                        Some(e.count as f64),
                        "{at}: {e:?}"
                    );
                }
                for r in &g.retired_pages {
                    assert_eq!(
                        value(&s, &RETIRED, g.index, &[("cause", &r.cause)]),
                        Some(r.count as f64),
                        "{at}"
                    );
                }
                for l in &g.nvlinks {
                    let id = l.link.to_string();
                    assert_eq!(
                        value(&s, &NVLINK_ACTIVE, g.index, &[("link", &id)]),
                        Some(f64::from(u8::from(l.active)))
                    );
                    for (c, n) in &l.errors {
                        assert_eq!(
                            value(
                                &s,
                                &NVLINK_ERRORS,
                                g.index,
                                &[("link", &id), ("counter", c)]
                            ),
                            Some(*n as f64)
                        );
                    }
                }
                // One 0/1 series per supported reason, 1 exactly for the reasons in effect.
                let (now, sup) = (
                    g.throttle_reasons.unwrap_or(0),
                    g.throttle_reasons_supported.unwrap_or(0),
                );
                for &(bit, name) in THROTTLE_REASONS {
                    let want = (sup & bit != 0).then(|| f64::from(u8::from(now & bit != 0)));
                    assert_eq!(
                        value(&s, &THROTTLE, g.index, &[("reason", name)]),
                        want,
                        "{at}: {name}"
                    );
                }
                // Every series carries the GPU's identity.
                for f in s.families() {
                    for x in f
                        .samples
                        .iter()
                        .filter(|x| x.labels[0].1 == g.index.to_string())
                    {
                        assert_eq!(
                            x.labels[1..4],
                            [
                                ("uuid", g.uuid.clone()),
                                ("model", g.name.clone()),
                                ("pci_bus_id", g.pci_bus_id.clone())
                            ]
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_down_trained_link_is_visible_as_width_below_max() {
        let (_, gpus) = fixtures()
            .into_iter()
            .find(|(p, _)| p.ends_with("a100-sxm4-2gpu.json"))
            .unwrap();
        let mut s = Scrape::new();
        for g in &gpus {
            push_sample(g, &mut s);
        }
        let down: Vec<u32> = gpus
            .iter()
            .filter(|g| {
                value(&s, &PCIE_WIDTH, g.index, &[]) < value(&s, &PCIE_WIDTH_MAX, g.index, &[])
            })
            .map(|g| g.index)
            .collect();
        assert_eq!(down, vec![1]);
    }

    #[test]
    fn unsupported_fields_emit_nothing() {
        let g = GpuSample {
            index: 0,
            uuid: "GPU-x".into(),
            name: "m".into(),
            pci_bus_id: "b".into(),
            ..Default::default()
        };
        let mut s = Scrape::new();
        push_sample(&g, &mut s);
        assert_eq!(s.sample_count(), 0);
    }
}
