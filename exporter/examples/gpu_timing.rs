//! Times the NVML queries behind the gpu collector on this host's first GPU, one family at a
//! time, and the collector's whole sample of every GPU:
//!
//! ```sh
//! cargo run --release -p reveal-exporter --example gpu_timing -- [ROUNDS]
//! ```
//! Prints, per family, how many NVML calls it makes and the median and 99th percentile of its
//! wall time over ROUNDS rounds (default 200), so the slow queries of a driver can be told from
//! the fast ones; then the same for the collector's whole sample, taken every 100 ms as a
//! scrape would (100 samples), with the ECC and NVLink counters per location and link (as
//! the slow page takes them) and as the driver's totals (the 100 ms page, which sums them).

use std::time::Instant;

use nvml_wrapper::enum_wrappers::device::{
    Clock, EccCounter, MemoryError, MemoryLocation, RetirementCause, TemperatureSensor,
};
use nvml_wrapper::enum_wrappers::nv_link::ErrorCounter;
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::Nvml;
use reveal_exporter::collectors::gpu::{Detail, GpuArgs, GpuSource, Needs, NvmlSource};

fn quantiles(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[(v.len() * 99 / 100).min(v.len() - 1)])
}

fn main() -> anyhow::Result<()> {
    let rounds: usize = std::env::args().nth(1).map_or(Ok(200), |a| a.parse())?;
    let nvml = Nvml::init()?;
    let d = nvml.device_by_index(0)?;
    type Family<'a> = (&'a str, usize, Box<dyn Fn() + 'a>);
    let links = (0..18)
        .take_while(|l| d.link_wrapper_for(*l).is_active().is_ok())
        .count() as u32;
    let totals = [3, 4, 5, 6, 38, 45, 52, 59].map(FieldId); // nvml.h NVML_FI_DEV_*_TOTAL
    let locations = [
        MemoryLocation::Device,
        MemoryLocation::L1Cache,
        MemoryLocation::L2Cache,
        MemoryLocation::RegisterFile,
        MemoryLocation::Texture,
        MemoryLocation::Shared,
        MemoryLocation::Cbu,
        MemoryLocation::SRAM,
    ];
    let families: Vec<Family> = vec![
        (
            "device_by_index",
            1,
            Box::new(|| drop(nvml.device_by_index(0))),
        ),
        (
            "uuid + name + pci_info",
            3,
            Box::new(|| drop((d.uuid(), d.name(), d.pci_info()))),
        ),
        (
            "utilization_rates",
            1,
            Box::new(|| drop(d.utilization_rates())),
        ),
        ("memory_info", 1, Box::new(|| drop(d.memory_info()))),
        ("power_usage", 1, Box::new(|| drop(d.power_usage()))),
        (
            "total_energy_consumption",
            1,
            Box::new(|| drop(d.total_energy_consumption())),
        ),
        (
            "temperature",
            1,
            Box::new(|| drop(d.temperature(TemperatureSensor::Gpu))),
        ),
        (
            "clock_info sm + memory",
            2,
            Box::new(|| drop((d.clock_info(Clock::SM), d.clock_info(Clock::Memory)))),
        ),
        (
            "max_clock_info sm + memory",
            2,
            Box::new(|| drop((d.max_clock_info(Clock::SM), d.max_clock_info(Clock::Memory)))),
        ),
        (
            "pcie link gen/width, current/max",
            4,
            Box::new(|| {
                drop((
                    d.current_pcie_link_gen(),
                    d.max_pcie_link_gen(),
                    d.current_pcie_link_width(),
                    d.max_pcie_link_width(),
                ))
            }),
        ),
        (
            "throttle reasons current + supported",
            2,
            Box::new(|| drop((d.current_throttle_reasons(), d.supported_throttle_reasons()))),
        ),
        (
            "encoder + decoder utilization",
            2,
            Box::new(|| drop((d.encoder_utilization(), d.decoder_utilization()))),
        ),
        (
            "memory_error_counter (2 types x 2 counters x 8 locations)",
            32,
            Box::new(|| {
                for ty in [MemoryError::Corrected, MemoryError::Uncorrected] {
                    for c in [EccCounter::Volatile, EccCounter::Aggregate] {
                        for l in locations {
                            drop(d.memory_error_counter(ty, c, l));
                        }
                    }
                }
            }),
        ),
        (
            "retired_pages (2 causes)",
            2,
            Box::new(|| {
                drop(d.retired_pages(RetirementCause::MultipleSingleBitEccErrors));
                drop(d.retired_pages(RetirementCause::DoubleBitEccError));
            }),
        ),
        (
            "nvlink 0 is_active",
            1,
            Box::new(|| drop(d.link_wrapper_for(0).is_active())),
        ),
        (
            "nvlink per link: is_active + 4 error counters, every link",
            5 * links as usize,
            Box::new(|| {
                for l in 0..links {
                    let w = d.link_wrapper_for(l);
                    drop(w.is_active());
                    for c in [
                        ErrorCounter::DlReplay,
                        ErrorCounter::DlRecovery,
                        ErrorCounter::DlCrcFlit,
                        ErrorCounter::DlCrcData,
                    ] {
                        drop(w.error_counter(c));
                    }
                }
            }),
        ),
        (
            "field values: 4 ECC totals + 4 NVLink error totals",
            1,
            Box::new(|| drop(d.field_values_for(&totals))),
        ),
    ];
    println!(
        "NVML on {} ({} GPU(s)), {rounds} rounds",
        d.name()?,
        nvml.device_count()?
    );
    println!("| queries | calls | median µs | p99 µs |");
    println!("| --- | --- | --- | --- |");
    for (name, calls, f) in &families {
        let mut t = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let s = Instant::now();
            f();
            t.push(s.elapsed().as_secs_f64() * 1e6);
        }
        let (p50, p99) = quantiles(t);
        println!("| {name} | {calls} | {p50:.0} | {p99:.0} |");
    }
    let mut src = NvmlSource::init(&GpuArgs::default())?;
    let totals = Needs {
        ecc: Detail::Totals,
        nvlink: Detail::Totals,
    };
    for (what, needs) in [
        ("per location and link (the slow page)", Needs::default()),
        ("with the totals (the 100 ms page)", totals),
    ] {
        let mut t = Vec::with_capacity(100);
        for _ in 0..100 {
            let s = Instant::now();
            src.samples(needs)?;
            t.push(s.elapsed().as_secs_f64() * 1e6);
            std::thread::sleep(std::time::Duration::from_millis(100).saturating_sub(s.elapsed()));
        }
        let mean = t.iter().sum::<f64>() / t.len() as f64;
        let (p50, p99) = quantiles(t);
        println!(
            "| the collector's whole sample every 100 ms, {what} | all | {p50:.0} | {p99:.0} |"
        );
        println!("mean of the whole sample, {what}: {mean:.0} µs");
    }
    Ok(())
}
