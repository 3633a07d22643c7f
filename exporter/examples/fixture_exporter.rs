//! `reveal-exporter` with its GPUs replayed from an NVML fixture, for fixture roots of hosts
//! with GPUs: the same flags, collectors and HTTP server as the release binary, except that
//! the gpu collector reads the `GpuSample`s of a JSON file (the format of
//! `exporter/tests/fixtures/nvml/*.json`) instead of loading NVML. `scripts/big_host_table.py`
//! serves its generated big host with it.
//!
//!     cargo run --release -p reveal-exporter --example fixture_exporter -- GPUS.json \
//!         --path.procfs ROOT/proc --path.sysfs ROOT/sys --web.listen-address 127.0.0.1:19190
//!
//! Every argument after the JSON file is a `reveal-exporter` flag (`--once` prints one scrape).
//! Without `--web.config.file` support: it serves plain HTTP only.

use anyhow::Context;
use reveal_exporter::collectors::gpu::{GpuCollector, GpuSample, GpuSource};
use reveal_exporter::error::CollectError;
use reveal_exporter::runner::{Format, Runner};
use reveal_exporter::{cli, server};
use std::sync::Arc;

/// The same samples on every scrape.
struct Replay(Vec<GpuSample>);

impl GpuSource for Replay {
    fn samples(&mut self) -> Result<Vec<GpuSample>, CollectError> {
        Ok(self.0.clone())
    }
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args_os();
    let program = args.next().unwrap_or_default();
    let gpus = args
        .next()
        .context("usage: fixture_exporter GPUS.json [reveal-exporter flags]")?;
    let text = std::fs::read_to_string(&gpus)
        .with_context(|| format!("reading {}", gpus.to_string_lossy()))?;
    let samples: Vec<GpuSample> = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a list of GpuSample", gpus.to_string_lossy()))?;
    let cli = match cli::parse_from(std::iter::once(program).chain(args)) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    let format = cli.flags.log_format.parse().map_err(anyhow::Error::msg)?;
    reveal_schema::logging::init(&cli.flags.log_level, format);
    let runner = Runner::new(&cli.collectors, &cli.settings).map_err(anyhow::Error::msg)?;
    if let Some(fast) = &cli.fast {
        runner.set_fast(fast);
    }
    let n = samples.len();
    if runner.replace(Box::new(GpuCollector::with_source(Box::new(Replay(
        samples,
    ))))) {
        tracing::info!(
            "gpu collector replays {n} GPU(s) from {}",
            gpus.to_string_lossy()
        );
    } else {
        tracing::info!("gpu collector not running (disabled or not selected): no GPU replayed");
    }
    if cli.flags.once {
        print!("{}", runner.render_as(Format::Text));
        return Ok(());
    }
    // The first --web.listen-address only: a demonstration needs one.
    let flag = &cli.flags.listen_address[0];
    let listen = server::parse_listen_address(flag).map_err(anyhow::Error::msg)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async move {
        let listener = server::bind(listen).with_context(|| format!("listening on {flag}"))?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        tracing::info!(
            collectors = %runner.names().join(","),
            "listening on {}",
            listener.local_addr()?
        );
        let srv = Arc::new(server::Server {
            runner: Arc::new(runner),
            telemetry_path: cli.flags.telemetry_path.clone(),
            limit: Arc::new(tokio::sync::Semaphore::new(cli.flags.max_requests.max(1))),
            web: None,
            max_connections: cli.flags.max_connections,
            rendering: Default::default(),
            last_render: Default::default(),
        });
        srv.serve(listener).await.context("serving HTTP")
    })
}
