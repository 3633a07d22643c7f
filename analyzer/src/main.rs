//! `reveal-analyzer`: the command line over the analysis library.

use std::path::PathBuf;
use std::process::ExitCode;

mod footprint;

use clap::{Parser, Subcommand};
use reveal_analyzer::commands::run::ServiceError;
use reveal_analyzer::commands::{analyze, compare, prune, replay};

#[derive(Parser)]
#[command(
    name = "reveal-analyzer",
    version = reveal_schema::build::long_version(),
    about = "Unsupervised anomaly analysis of host telemetry"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the online service: read telemetry every stride, write anomaly series, send alerts.
    Run(RunArgs),
    /// Analyze a recording offline: print the Markdown report, write the JSON lines.
    Analyze(analyze::AnalyzeArgs),
    /// Prune correlated metrics over recorded runs (paper §4.1): write the exporter's
    /// selection file and the threshold curves.
    Prune(prune::PruneArgs),
    /// Agreement of two sets of anomaly intervals (paper §5.5): IoU, hit rates byCount and
    /// byLength, per host and overall.
    Compare(compare::CompareArgs),
    /// Replay a past stretch of a Prometheus, or a recording (--input), through the service's
    /// engine: every window's scores and claims and every episode, as `run` would have seen
    /// them (text or --json).
    Replay(replay::ReplayArgs),
}

/// Prints a command's text output, or its error with exit status 2 (bad input).
fn print_result(r: Result<String, String>) -> anyhow::Result<ExitCode> {
    match r {
        Ok(text) => {
            print!("{text}");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("reveal-analyzer: {e}");
            Ok(ExitCode::from(2))
        }
    }
}

#[derive(clap::Args)]
struct RunArgs {
    /// The YAML configuration (docs/analyzer-config.md).
    #[arg(long = "config.file", value_name = "FILE")]
    config_file: PathBuf,
    /// Check the configuration and exit.
    #[arg(long = "check-config")]
    check_config: bool,
    /// Log filter, as RUST_LOG (`info`, `reveal_analyzer=debug`); RUST_LOG, when set, wins.
    #[arg(long = "log.level", default_value = "info")]
    log_level: String,
    /// Output format of log messages: logfmt (key=value, one line each) or json (one object a
    /// line). Colour only when standard error is a terminal.
    #[arg(long = "log.format", default_value = "logfmt", value_parser = reveal_schema::logging::LogFormat::VALUES)]
    log_format: String,
    /// Analyze only shard INDEX of COUNT of the hosts (`0/3`, `1/3`, `2/3` for three
    /// replicas), split as Prometheus' `hashmod` splits them; overrides
    /// `source.prometheus.shard`.
    #[arg(long = "shard", value_name = "INDEX/COUNT")]
    shard: Option<reveal_analyzer::ingest::shard::Shard>,
}

fn init_logs(filter: &str, format: &str) -> anyhow::Result<()> {
    let filter = std::env::var("RUST_LOG").unwrap_or_else(|_| filter.to_string());
    let format = format.parse().map_err(anyhow::Error::msg)?;
    reveal_schema::logging::init(&filter, format);
    Ok(())
}

fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    init_logs(&args.log_level, &args.log_format)?;
    tracing::info!(version = %reveal_schema::build::long_version(), "reveal-analyzer starting");
    // A bad config is refused before anything starts, with file, line and reason.
    let mut config = match reveal_analyzer::config::Config::load(&args.config_file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("reveal-analyzer: bad configuration: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    if let Some(shard) = args.shard {
        match config.source.prometheus.as_mut() {
            Some(p) => p.shard = Some(shard),
            None => {
                eprintln!(
                    "reveal-analyzer: --shard splits the hosts of a Prometheus source; with \
                     `source.scrape` list each analyzer's own targets instead"
                );
                return Ok(ExitCode::from(2));
            }
        }
    }
    if args.check_config {
        println!("{}: OK", args.config_file.display());
        return Ok(ExitCode::SUCCESS);
    }
    // Refits must not move the memory of the host the analyzer may be watching.
    let kept = footprint::keep_freed_memory();
    tracing::debug!(kept, "allocator asked to keep freed memory between refits");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    match rt.block_on(reveal_analyzer::commands::run::run(config)) {
        // Expressions Prometheus refuses are a bad configuration, found at start.
        Err(ServiceError::Rejected(r)) => {
            let text = std::fs::read_to_string(&args.config_file).unwrap_or_default();
            let file = args.config_file.display().to_string();
            for line in r.lines(&file, &reveal_analyzer::config::key_lines(&text)) {
                eprintln!("reveal-analyzer: bad configuration: {line}");
            }
            Ok(ExitCode::from(2))
        }
        other => {
            other?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let res = match cli.command {
        Command::Run(args) => run(args),
        Command::Analyze(args) => analyze::run(args).map_err(anyhow::Error::from),
        Command::Prune(args) => print_result(prune::run_cli(&args)),
        Command::Compare(args) => print_result(compare::run_cli(&args)),
        Command::Replay(args) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(anyhow::Error::from)
            .and_then(|rt| rt.block_on(replay::run(args)))
            .map(|()| ExitCode::SUCCESS),
    };
    match res {
        Ok(code) => code,
        Err(e) => {
            eprintln!("reveal-analyzer: {e:#}");
            ExitCode::FAILURE
        }
    }
}
