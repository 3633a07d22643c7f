//! Records what NVML reports for every GPU of this host as a JSON array of `GpuSample`, the
//! format of the fixtures under `exporter/tests/fixtures/nvml/`:
//!
//! ```sh
//! cargo run -p reveal-exporter --example gpu_record -- [--pcie-throughput] > t4-1gpu.json
//! ```
//! Fields NVML does not support on the GPU come out as `null` or are left out of the lists.

use reveal_exporter::collectors::gpu::{GpuArgs, GpuSource, Needs, NvmlSource};

fn main() -> anyhow::Result<()> {
    let mut args = GpuArgs::default();
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--pcie-throughput" => args.pcie_throughput = true,
            other => anyhow::bail!("unknown argument {other:?} (only --pcie-throughput)"),
        }
    }
    let mut src = NvmlSource::init(&args)?;
    // Every counter one by one (per location and link), as the slow page reads them.
    let samples = src.samples(Needs::default())?;
    anyhow::ensure!(!samples.is_empty(), "NVML loaded but reports no GPU");
    println!("{}", serde_json::to_string_pretty(&samples)?);
    Ok(())
}
