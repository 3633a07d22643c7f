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

/// Where GPU samples come from: NVML on a real host, recorded JSON in tests.
pub trait GpuSource: Send {
    fn samples(&mut self) -> Result<Vec<GpuSample>, CollectError>;
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

    fn sample(&self, index: u32, d: &Device, now: Instant) -> GpuSample {
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
        if self.ecc {
            self.sample_ecc(d, &mut s);
        }
        if self.retired {
            self.sample_retired(d, &mut s);
        }
        if self.nvlink {
            self.sample_nvlinks(d, &mut s);
        }
        s
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

impl GpuSource for NvmlSource {
    fn samples(&mut self) -> Result<Vec<GpuSample>, CollectError> {
        let n = self.nvml.device_count().map_err(|e| CollectError::Io {
            path: "nvmlDeviceGetCount".into(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let mut out = Vec::with_capacity(n as usize);
        let now = Instant::now();
        for i in 0..n {
            // A GPU that fell off the bus answers errors; skip it and keep the others.
            match self.nvml.device_by_index(i) {
                Ok(d) => out.push(self.sample(i, &d, now)),
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
        for g in src.samples()? {
            gpu_map::push_sample(&g, out);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Replay(Vec<GpuSample>);

    impl GpuSource for Replay {
        fn samples(&mut self) -> Result<Vec<GpuSample>, CollectError> {
            Ok(self.0.clone())
        }
    }

    #[test]
    fn replayed_samples_go_through_the_collector() {
        let p = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/nvml/t4-1gpu.json"
        );
        let gpus: Vec<GpuSample> =
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        let mut c = GpuCollector::with_source(Box::new(Replay(gpus.clone())));
        let mut out = Scrape::new();
        c.update(&mut out).unwrap();
        let mut direct = Scrape::new();
        gpu_map::push_sample(&gpus[0], &mut direct);
        assert!(out.sample_count() > 0);
        assert_eq!(out.sample_count(), direct.sample_count());
    }

    #[test]
    fn slow_fields_are_read_once_per_board_and_energy_once_per_interval() {
        let t0 = Instant::now();
        let (mut max_reads, mut energy_reads) = (0, 0);
        let mut slow = Slow::default();
        let at = |slow: &mut Slow, uuid: &str, ms: u64, max_reads: &mut u32, e: &mut u32| {
            slow.refresh(
                uuid,
                t0 + Duration::from_millis(ms),
                || {
                    *max_reads += 1;
                    (Some(1980), Some(3201))
                },
                || {
                    *e += 1;
                    Some(1000 + ms)
                },
            );
        };
        // Scrapes every 100 ms for 2.5 s: max clocks once, energy at 0, 1000 and 2000 ms.
        for ms in (0..=2500).step_by(100) {
            at(&mut slow, "GPU-a", ms, &mut max_reads, &mut energy_reads);
        }
        assert_eq!((max_reads, energy_reads), (1, 3));
        assert_eq!(slow.max_clocks, (Some(1980), Some(3201)));
        assert_eq!(
            slow.energy,
            Some(3000),
            "the last read is served between reads"
        );
        // Another board at the index: its max clocks and energy are read at once.
        at(&mut slow, "GPU-b", 2600, &mut max_reads, &mut energy_reads);
        assert_eq!((max_reads, energy_reads), (2, 4));
        assert_eq!(slow.energy, Some(3600));
    }

    /// Without the driver (this host has none) the collector is built, and reports
    /// unsupported with the reason; with a driver it must read at least one GPU.
    #[test]
    fn nvml_missing_is_unsupported_not_fatal() {
        let mut c = GpuCollector::new(&Settings::default());
        let mut out = Scrape::new();
        match c.update(&mut out) {
            Err(e) => {
                assert!(e.is_unsupported(), "{e}");
                eprintln!("gpu collector unsupported here, as expected without a driver: {e}");
            }
            Ok(()) => assert!(out.sample_count() > 0, "NVML loaded but no GPU series"),
        }
    }
}
