//! NVIDIA GPUs through NVML (`nvml-wrapper`), loaded at run time with `dlopen`: a host without
//! the driver has no `libnvidia-ml.so.1`, `Nvml::init` fails, and the collector reports
//! unsupported (success 0, logged once) while the exporter serves everything else.
//!
//! NVML reads sit behind [`GpuSource`], which returns plain [`GpuSample`]s; turning them into
//! series is the pure [`gpu_map::push_sample`], tested on JSON fixtures
//! (`exporter/tests/fixtures/nvml/`). `cargo run -p reveal-exporter --example gpu_record`
//! records such a fixture from a real GPU.

pub use super::gpu_map::{self, GpuSample, METRICS};
use super::{Collector, Settings};
use crate::error::CollectError;
use crate::scrape::Scrape;
use nvml_wrapper::enum_wrappers::device::{
    Clock, EccCounter, MemoryError, MemoryLocation, PcieUtilCounter, RetirementCause,
    TemperatureSensor,
};
use nvml_wrapper::enum_wrappers::nv_link::ErrorCounter;
use nvml_wrapper::enums::device::SampleValue;
use nvml_wrapper::struct_wrappers::device::FieldValueSample;
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::sys_exports::field_id;
use nvml_wrapper::{Device, Nvml};
use std::cell::RefCell;
use std::time::{Duration, Instant};

/// Flags of the gpu collector.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GpuArgs {
    /// Also read PCIe throughput. NVML measures it over 20 ms per direction and GPU, inside
    /// the scrape, so it is off by default for 100 ms scraping.
    #[arg(long = "collector.gpu.pcie-throughput")]
    pub pcie_throughput: bool,
}

/// How the page being scraped takes a GPU's ECC counters per memory location, or its NVLink
/// error counters per link: which NVML queries a sample makes for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Detail {
    /// Not served: not queried.
    None,
    /// Served summed over the locations (links): the device's totals, which the driver keeps,
    /// all in one `nvmlDeviceGetFieldValues` call, instead of a call per location and
    /// counter (32 a GPU) and per link and counter (90 on a GPU with 18 NVLinks).
    Totals,
    /// Served one by one: a call per location (link) and counter.
    #[default]
    Each,
}

/// What the page being scraped needs of the per-location and per-link counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Needs {
    pub ecc: Detail,
    pub nvlink: Detail,
}

impl Needs {
    /// What the page of `out` serves (the 100 ms page: both summed, so both totals).
    pub fn of(out: &Scrape) -> Needs {
        let detail = |desc: &crate::scrape::Desc, label: &str| {
            if !out.wants(desc) {
                Detail::None
            } else if out.sums_over(desc, label) {
                Detail::Totals
            } else {
                Detail::Each
            }
        };
        let nvlink = if out.wants(&gpu_map::NVLINK_ACTIVE) {
            Detail::Each // per link by nature
        } else {
            detail(&gpu_map::NVLINK_ERRORS, "link")
        };
        Needs {
            ecc: detail(&gpu_map::ECC, "location"),
            nvlink,
        }
    }
}

/// Where GPU samples come from: NVML on a real host, recorded JSON in tests.
pub trait GpuSource: Send {
    /// One sample per GPU, its ECC and NVLink counters as `needs` asks (a source that only
    /// has them one by one may always give them so: a page that sums them sums them).
    fn samples(&mut self, needs: Needs) -> Result<Vec<GpuSample>, CollectError>;
}

/// The driver's totals behind [`Detail::Totals`] (`nvml.h` field IDs): ECC errors over the
/// memory locations by type and counter (single-bit errors are the corrected ones,
/// double-bit the uncorrected), and NVLink errors over the links by counter.
const ECC_TOTALS: [(&str, &str, u32); 4] = [
    (
        "corrected",
        "volatile",
        field_id::NVML_FI_DEV_ECC_SBE_VOL_TOTAL,
    ),
    (
        "uncorrected",
        "volatile",
        field_id::NVML_FI_DEV_ECC_DBE_VOL_TOTAL,
    ),
    (
        "corrected",
        "aggregate",
        field_id::NVML_FI_DEV_ECC_SBE_AGG_TOTAL,
    ),
    (
        "uncorrected",
        "aggregate",
        field_id::NVML_FI_DEV_ECC_DBE_AGG_TOTAL,
    ),
];
const NVLINK_TOTALS: [(&str, u32); 4] = [
    (
        "dl_replay",
        field_id::NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL,
    ),
    (
        "dl_recovery",
        field_id::NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL,
    ),
    (
        "dl_crc_flit",
        field_id::NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL,
    ),
    (
        "dl_crc_data",
        field_id::NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL,
    ),
];

/// A field value as a count: `None` for a field the driver did not answer, or a negative or
/// fractional one.
fn count(v: &Result<FieldValueSample, nvml_wrapper::error::NvmlError>) -> Option<u64> {
    match v.as_ref().ok()?.value.as_ref().ok()? {
        SampleValue::U64(n) => Some(*n),
        SampleValue::U32(n) => Some(u64::from(*n)),
        SampleValue::I64(n) => u64::try_from(*n).ok(),
        SampleValue::F64(x) => (*x >= 0.0 && x.fract() == 0.0).then_some(*x as u64),
    }
}

/// The most NVLinks a GPU has (`NVML_NVLINK_MAX_LINKS` in nvml.h).
const MAX_NVLINKS: u32 = 18;

/// How often the energy counter is read (see `Slow`).
pub const ENERGY_EVERY: Duration = Duration::from_secs(1);

/// The queries NVML answers slowly, read less often than every scrape. NVML answers most
/// queries in microseconds, but on an H200 (driver 580) two took milliseconds each
/// (`examples/gpu_timing.rs`: the energy counter 2.5–3.1 ms median and 17 ms at the 99th
/// percentile, the two max clocks 2.5 ms together), which made the whole sample 6–7 ms of a
/// 100 ms scrape per GPU. The max clocks are the board's own: they are read when a board is
/// first seen at an index (again when its UUID changes). The energy counter is read at most
/// once per [`ENERGY_EVERY`] and its last value served between reads, so it stays a counter
/// that lags by at most that much.
#[derive(Debug, Default)]
struct Slow {
    uuid: Option<String>,
    max_clocks: (Option<u32>, Option<u32>),
    energy: Option<u64>,
    energy_at: Option<Instant>,
    /// How many NVLinks the board has, counted when first needed: a board without any is
    /// not asked for NVLink totals (the driver may answer zeros where it has no counter).
    links: Option<u32>,
}

impl Slow {
    /// Brings the slow fields of the board `uuid` up to date at `now`, calling NVML only for
    /// what is due.
    fn refresh(
        &mut self,
        uuid: &str,
        now: Instant,
        max_clocks: impl FnOnce() -> (Option<u32>, Option<u32>),
        energy: impl FnOnce() -> Option<u64>,
    ) {
        if self.uuid.as_deref() != Some(uuid) {
            *self = Slow {
                uuid: Some(uuid.to_string()),
                max_clocks: max_clocks(),
                ..Slow::default()
            };
        }
        let due = self
            .energy_at
            .is_none_or(|t| now.saturating_duration_since(t) >= ENERGY_EVERY);
        if due {
            self.energy = energy();
            self.energy_at = Some(now);
        }
    }
}

pub struct NvmlSource {
    nvml: Nvml,
    pcie_throughput: bool,
    /// The per-location, per-cause and per-link queries are the bulk of the NVML calls; they
    /// are skipped when the metric selection drops their metric.
    ecc: bool,
    retired: bool,
    nvlink: bool,
    /// Per GPU index (a `RefCell`: a `Device` borrows `nvml` while it is sampled).
    slow: RefCell<Vec<Slow>>,
}

impl NvmlSource {
    /// Loads NVML. Fails where the driver or its library is absent, or `/dev/nvidia*` is not
    /// readable.
    pub fn init(args: &GpuArgs) -> Result<NvmlSource, CollectError> {
        let nvml = Nvml::init().map_err(|e| CollectError::Unsupported {
            path: "libnvidia-ml.so.1".into(),
            reason: format!(
                "NVML not loaded ({e}); no NVIDIA driver, or /dev/nvidia* not readable"
            ),
        })?;
        Ok(NvmlSource {
            nvml,
            pcie_throughput: args.pcie_throughput,
            ecc: true,
            retired: true,
            nvlink: true,
            slow: RefCell::new(Vec::new()),
        })
    }

    /// Leaves out the NVML queries of metrics the selection does not want.
    pub fn for_selection(mut self, s: &Settings) -> Self {
        self.pcie_throughput &= s.wants(&gpu_map::PCIE_THROUGHPUT);
        self.ecc = s.wants(&gpu_map::ECC);
        self.retired = s.wants(&gpu_map::RETIRED);
        self.nvlink = s.wants(&gpu_map::NVLINK_ACTIVE) || s.wants(&gpu_map::NVLINK_ERRORS);
        self
    }

    fn sample(&self, index: u32, d: &Device, now: Instant, needs: Needs) -> GpuSample {
        let ok = |r: Result<u32, _>| r.ok();
        let uuid = d.uuid().unwrap_or_default();
        let i = index as usize;
        let mut slows = self.slow.borrow_mut();
        if slows.len() <= i {
            slows.resize_with(i + 1, Slow::default);
        }
        let slow = &mut slows[i];
        slow.refresh(
            &uuid,
            now,
            || {
                (
                    ok(d.max_clock_info(Clock::SM)),
                    ok(d.max_clock_info(Clock::Memory)),
                )
            },
            || d.total_energy_consumption().ok(),
        );
        let ecc = if self.ecc { needs.ecc } else { Detail::None };
        let mut nvlink = if self.nvlink {
            needs.nvlink
        } else {
            Detail::None
        };
        if nvlink == Detail::Totals && *slow.links.get_or_insert_with(|| count_links(d)) == 0 {
            nvlink = Detail::None;
        }
        let (max_sm, max_memory, energy) = (slow.max_clocks.0, slow.max_clocks.1, slow.energy);
        drop(slows);
        let util = d.utilization_rates().ok();
        let mem = d.memory_info().ok();
        let mut s = GpuSample {
            index,
            uuid,
            name: d.name().unwrap_or_default(),
            pci_bus_id: d.pci_info().map(|p| p.bus_id).unwrap_or_default(),
            utilization_gpu_percent: util.as_ref().map(|u| u.gpu),
            utilization_memory_percent: util.as_ref().map(|u| u.memory),
            memory_used_bytes: mem.as_ref().map(|m| m.used),
            memory_total_bytes: mem.as_ref().map(|m| m.total),
            power_usage_milliwatts: ok(d.power_usage()),
            total_energy_millijoules: energy,
            temperature_gpu_celsius: ok(d.temperature(TemperatureSensor::Gpu)),
            clock_sm_mhz: ok(d.clock_info(Clock::SM)),
            clock_memory_mhz: ok(d.clock_info(Clock::Memory)),
            clock_sm_max_mhz: max_sm,
            clock_memory_max_mhz: max_memory,
            pcie_link_gen_current: ok(d.current_pcie_link_gen()),
            pcie_link_gen_max: ok(d.max_pcie_link_gen()),
            pcie_link_width_current: ok(d.current_pcie_link_width()),
            pcie_link_width_max: ok(d.max_pcie_link_width()),
            throttle_reasons: d.current_throttle_reasons().ok().map(|r| r.bits()),
            throttle_reasons_supported: d.supported_throttle_reasons().ok().map(|r| r.bits()),
            encoder_utilization_percent: d.encoder_utilization().ok().map(|u| u.utilization),
            decoder_utilization_percent: d.decoder_utilization().ok().map(|u| u.utilization),
            ..GpuSample::default()
        };
        if self.pcie_throughput {
            s.pcie_tx_kilobytes_per_second = ok(d.pcie_throughput(PcieUtilCounter::Send));
            s.pcie_rx_kilobytes_per_second = ok(d.pcie_throughput(PcieUtilCounter::Receive));
        }
        let (ecc, nvlink) = self.sample_totals(d, ecc, nvlink, &mut s);
        if ecc == Detail::Each {
            self.sample_ecc(d, &mut s);
        }
        if self.retired {
            self.sample_retired(d, &mut s);
        }
        if nvlink == Detail::Each {
            self.sample_nvlinks(d, &mut s);
        }
        s
    }

    /// Reads the totals asked for ([`Detail::Totals`]) in one `nvmlDeviceGetFieldValues`
    /// call and says what is left to query one by one: everything asked for, where the call
    /// fails as a whole (a driver without it).
    fn sample_totals(
        &self,
        d: &Device,
        ecc: Detail,
        nvlink: Detail,
        s: &mut GpuSample,
    ) -> (Detail, Detail) {
        let mut ids = Vec::with_capacity(8);
        if ecc == Detail::Totals {
            ids.extend(ECC_TOTALS.map(|t| FieldId(t.2)));
        }
        if nvlink == Detail::Totals {
            ids.extend(NVLINK_TOTALS.map(|t| FieldId(t.1)));
        }
        if ids.is_empty() {
            return (ecc, nvlink);
        }
        let Ok(values) = d.field_values_for(&ids) else {
            let each = |d: Detail| if d == Detail::Totals { Detail::Each } else { d };
            return (each(ecc), each(nvlink));
        };
        // In the order asked; a total the driver does not answer (ECC off) is left out, as a
        // location it does not answer is.
        let mut values = values.iter();
        if ecc == Detail::Totals {
            for ((ty, counter, _), v) in ECC_TOTALS.iter().zip(values.by_ref()) {
                if let Some(n) = count(v) {
                    s.ecc.push(gpu_map::EccCount {
                        error_type: (*ty).into(),
                        counter: (*counter).into(),
                        location: gpu_map::TOTAL.into(),
                        count: n,
                    });
                }
            }
        }
        if nvlink == Detail::Totals {
            for ((name, _), v) in NVLINK_TOTALS.iter().zip(values) {
                if let Some(n) = count(v) {
                    s.nvlink_error_totals.push(((*name).into(), n));
                }
            }
        }
        let done = |d: Detail| if d == Detail::Totals { Detail::None } else { d };
        (done(ecc), done(nvlink))
    }

    fn sample_ecc(&self, d: &Device, s: &mut GpuSample) {
        let locations = [
            (MemoryLocation::Device, "device_memory"),
            (MemoryLocation::L1Cache, "l1_cache"),
            (MemoryLocation::L2Cache, "l2_cache"),
            (MemoryLocation::RegisterFile, "register_file"),
            (MemoryLocation::Texture, "texture_memory"),
            (MemoryLocation::Shared, "texture_shm"),
            (MemoryLocation::Cbu, "cbu"),
            (MemoryLocation::SRAM, "sram"),
        ];
        for (ty, ty_name) in [
            (MemoryError::Corrected, "corrected"),
            (MemoryError::Uncorrected, "uncorrected"),
        ] {
            for (counter, c_name) in [
                (EccCounter::Volatile, "volatile"),
                (EccCounter::Aggregate, "aggregate"),
            ] {
                for (loc, l_name) in &locations {
                    // NOT_SUPPORTED for locations this GPU lacks, or ECC off: leave them out.
                    if let Ok(count) = d.memory_error_counter(ty, counter, *loc) {
                        s.ecc.push(gpu_map::EccCount {
                            error_type: ty_name.into(),
                            counter: c_name.into(),
                            location: (*l_name).into(),
                            count,
                        });
                    }
                }
            }
        }
    }

    fn sample_retired(&self, d: &Device, s: &mut GpuSample) {
        for (cause, name) in [
            (
                RetirementCause::MultipleSingleBitEccErrors,
                "multiple_single_bit_ecc",
            ),
            (RetirementCause::DoubleBitEccError, "double_bit_ecc"),
        ] {
            if let Ok(pages) = d.retired_pages(cause) {
                s.retired_pages.push(gpu_map::RetiredPages {
                    cause: name.into(),
                    count: pages.len() as u64,
                });
            }
        }
    }

    fn sample_nvlinks(&self, d: &Device, s: &mut GpuSample) {
        for link in 0..MAX_NVLINKS {
            let l = d.link_wrapper_for(link);
            // A link index past this GPU's links answers an error: the GPU has no more links.
            let Ok(active) = l.is_active() else { break };
            let mut errors = Vec::new();
            for (c, name) in [
                (ErrorCounter::DlReplay, "dl_replay"),
                (ErrorCounter::DlRecovery, "dl_recovery"),
                (ErrorCounter::DlCrcFlit, "dl_crc_flit"),
                (ErrorCounter::DlCrcData, "dl_crc_data"),
            ] {
                if let Ok(n) = l.error_counter(c) {
                    errors.push((name.to_string(), n));
                }
            }
            s.nvlinks.push(gpu_map::NvLinkSample {
                link,
                active,
                errors,
            });
        }
    }
}

/// How many NVLinks the GPU has: the links NVML answers for, from link 0 up.
fn count_links(d: &Device) -> u32 {
    (0..MAX_NVLINKS)
        .take_while(|l| d.link_wrapper_for(*l).is_active().is_ok())
        .count() as u32
}

impl GpuSource for NvmlSource {
    fn samples(&mut self, needs: Needs) -> Result<Vec<GpuSample>, CollectError> {
        let n = self.nvml.device_count().map_err(|e| CollectError::Io {
            path: "nvmlDeviceGetCount".into(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let mut out = Vec::with_capacity(n as usize);
        let now = Instant::now();
        for i in 0..n {
            // A GPU that fell off the bus answers errors; skip it and keep the others.
            match self.nvml.device_by_index(i) {
                Ok(d) => out.push(self.sample(i, &d, now, needs)),
                Err(e) => tracing::debug!("gpu {i}: {e}"),
            }
        }
        Ok(out)
    }
}

pub struct GpuCollector {
    source: Option<Box<dyn GpuSource>>,
    /// Why NVML could not be loaded, reported on every update (the runner logs it once).
    unsupported: String,
}

impl GpuCollector {
    pub fn new(s: &Settings) -> Self {
        match NvmlSource::init(&s.gpu) {
            Ok(src) => Self::with_source(Box::new(src.for_selection(s))),
            Err(CollectError::Unsupported { reason, .. }) => GpuCollector {
                source: None,
                unsupported: reason,
            },
            Err(e) => GpuCollector {
                source: None,
                unsupported: e.to_string(),
            },
        }
    }

    pub fn with_source(source: Box<dyn GpuSource>) -> Self {
        GpuCollector {
            source: Some(source),
            unsupported: String::new(),
        }
    }
}

impl Collector for GpuCollector {
    fn name(&self) -> &'static str {
        "gpu"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        let Some(src) = &mut self.source else {
            return Err(CollectError::Unsupported {
                path: "nvml".into(),
                reason: self.unsupported.clone(),
            });
        };
        for g in src.samples(Needs::of(out))? {
            gpu_map::push_sample(&g, out);
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "gpu_tests.rs"]
mod tests;
