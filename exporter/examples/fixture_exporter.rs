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
//! Without `--web.config.file` support: it serves plain HTTP only. The file is read again
//! when its modification time changes (`scripts/big_host_workload.py` moves the GPUs by
//! rewriting it); a GPU left out of it is a GPU NVML no longer reports. A rewrite that does
//! not parse keeps the samples before it, with a warning.

use anyhow::Context;
use reveal_exporter::collectors::gpu::{GpuCollector, GpuSample, GpuSource, Needs};
use reveal_exporter::error::CollectError;
use reveal_exporter::runner::{Format, Runner};
use reveal_exporter::{cli, server};
use std::sync::Arc;

/// The file's samples, read again when it changes.
struct Replay {
    path: std::path::PathBuf,
    modified: Option<std::time::SystemTime>,
    samples: Vec<GpuSample>,
}

fn read_samples(path: &std::path::Path) -> anyhow::Result<Vec<GpuSample>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{}: not a list of GpuSample", path.display()))
}

impl GpuSource for Replay {
    fn samples(&mut self, _: Needs) -> Result<Vec<GpuSample>, CollectError> {
        let modified = std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok();
        if modified != self.modified {
            self.modified = modified;
            match read_samples(&self.path) {
                Ok(s) => self.samples = s,
                Err(e) => tracing::warn!("{e:#}; the GPUs read before are kept"),
            }
        }
        Ok(self.samples.clone())
    }
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args_os();
    let program = args.next().unwrap_or_default();
    let gpus = args
        .next()
        .context("usage: fixture_exporter GPUS.json [reveal-exporter flags]")?;
    let path = std::path::PathBuf::from(&gpus);
    let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
    let samples = read_samples(&path)?;
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
    let replay = Replay {
        path,
        modified,
        samples,
    };
    if runner.replace(Box::new(GpuCollector::with_source(Box::new(replay)))) {
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
