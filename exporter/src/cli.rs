//! Command-line flags, in node_exporter's style (`--web.listen-address`, `--collector.NAME`).

use crate::collectors::{Settings, COLLECTORS};
use crate::paths::Paths;
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use std::path::PathBuf;

/// The exporter's default port: outside 9100–9999, which Prometheus' port allocation list has
/// fully assigned, so it does not collide with another exporter on the same host.
pub const DEFAULT_PORT: u16 = 19190;

/// The one-line description `--help` opens with.
pub const ABOUT: &str = "Prometheus exporter of host hardware telemetry (Reveal)";

#[derive(Debug, Clone, Args)]
pub struct Flags {
    /// Address to listen on for HTTP requests; repeat the flag to listen on several. `:PORT`
    /// is every IPv4 and IPv6 address (IPv4 only on a host without IPv6), `HOST:PORT` a name
    /// (`localhost:PORT`) or an address (`127.0.0.1:PORT`, `[::1]:PORT`); port 0 picks a free
    /// one and the log names it.
    #[arg(
        long = "web.listen-address",
        default_values_t = [format!(":{DEFAULT_PORT}")],
        action = ArgAction::Append
    )]
    pub listen_address: Vec<String>,
    /// Path under which to expose metrics.
    #[arg(long = "web.telemetry-path", default_value = "/metrics")]
    pub telemetry_path: String,
    /// Maximum number of scrapes served at once; further requests get 503.
    #[arg(long = "web.max-requests", default_value_t = 40)]
    pub max_requests: usize,
    /// Web configuration file (TLS, client certificates, basic auth, security headers) in
    /// Prometheus exporter-toolkit's format; read again when it or a certificate changes.
    #[arg(long = "web.config.file")]
    pub web_config_file: Option<PathBuf>,
    /// Connections open at once, on each listen address; more wait until one closes.
    #[arg(long = "web.max-connections", default_value_t = reveal_schema::serve::MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// procfs mount point.
    #[arg(long = "path.procfs", default_value = crate::paths::DEFAULT_PROCFS)]
    pub procfs: PathBuf,
    /// sysfs mount point.
    #[arg(long = "path.sysfs", default_value = crate::paths::DEFAULT_SYSFS)]
    pub sysfs: PathBuf,
    /// Device directory, for the MSR device files (cpu/N/msr).
    #[arg(long = "path.devfs", default_value = crate::paths::DEFAULT_DEVFS)]
    pub devfs: PathBuf,
    /// YAML configuration file (vendor perf events); see exporter/examples/perf-events.yml.
    #[arg(long = "config.file")]
    pub config_file: Option<PathBuf>,
    /// YAML file listing the metrics (and label matchers) to expose; everything when absent. Names this exporter does not have select nothing and are named in one warning at start.
    #[arg(long = "metrics.selection")]
    pub selection: Option<PathBuf>,
    /// YAML file in the format of --metrics.selection: the series `/metrics?cadence=fast` serves (what the analyzer and the recording rules read, scraped every 100 ms); `/metrics?cadence=slow` serves every other series, for a scrape every 10-15 s. A fast scrape runs only the collectors with a metric in the file. Plain `/metrics` serves everything either way.
    #[arg(long = "metrics.fast")]
    pub fast: Option<PathBuf>,
    /// Only log messages with at least this severity: error, warn, info, debug.
    #[arg(long = "log.level", default_value = "info", value_parser = ["error", "warn", "info", "debug", "trace"])]
    pub log_level: String,
    /// Output format of log messages: logfmt (key=value, one line each) or json (one object a
    /// line). Colour only when standard error is a terminal.
    #[arg(long = "log.format", default_value = "logfmt", value_parser = reveal_schema::logging::LogFormat::VALUES)]
    pub log_format: String,
    /// Turn off all collectors by default; enable the wanted ones with --collector.NAME.
    #[arg(long = "collector.disable-defaults")]
    pub disable_defaults: bool,
    /// Print one scrape (Prometheus text format) to standard output and exit.
    #[arg(long = "once")]
    pub once: bool,
    /// Print the Markdown list of every metric the exporter can emit and exit.
    #[arg(long = "print-metrics")]
    pub print_metrics: bool,
    #[command(flatten)]
    pub netdev: crate::collectors::netdev::NetdevArgs,
    #[command(flatten)]
    pub diskstats: crate::collectors::diskstats::DiskstatsArgs,
    #[command(flatten)]
    pub interrupts: crate::collectors::interrupts::InterruptsArgs,
    #[command(flatten)]
    pub gpu: crate::collectors::gpu::GpuArgs,
    #[command(flatten)]
    pub cgroups: crate::collectors::cgroups::CgroupsArgs,
}

/// The parsed command line: flags plus the resolved set of enabled collectors.
#[derive(Debug, Clone)]
pub struct Cli {
    pub flags: Flags,
    pub collectors: Vec<&'static str>,
    pub settings: Settings,
    /// `--metrics.fast`, loaded: for [`crate::runner::Runner::set_fast`].
    pub fast: Option<crate::selection::Selection>,
}

/// The clap command, with one `--collector.NAME` and `--no-collector.NAME` per table row.
pub fn command() -> Command {
    let cmd = Command::new("reveal-exporter").version(reveal_schema::build::long_version());
    // clap's derive turns the doc comment of each flattened `*Args` struct ("Flags of the gpu
    // collector") into the command's about, the last one winning: the exporter's own
    // description is set after them.
    let mut cmd = Flags::augment_args(cmd).about(ABOUT).long_about(None);
    for e in COLLECTORS {
        let state = if e.default_enabled {
            "enabled"
        } else {
            "disabled"
        };
        cmd = cmd
            .arg(
                Arg::new(format!("collector.{}", e.name))
                    .long(format!("collector.{}", e.name))
                    .action(ArgAction::SetTrue)
                    .help(format!(
                        "Enable the {} collector ({state} by default): {}",
                        e.name, e.help
                    )),
            )
            .arg(
                Arg::new(format!("no-collector.{}", e.name))
                    .long(format!("no-collector.{}", e.name))
                    .action(ArgAction::SetTrue)
                    .conflicts_with(format!("collector.{}", e.name))
                    .help(format!("Disable the {} collector", e.name)),
            );
    }
    cmd
}

/// Parses the given arguments (the first is the program name).
pub fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let m = command().try_get_matches_from(args)?;
    from_matches(&m)
}

fn from_matches(m: &ArgMatches) -> Result<Cli, clap::Error> {
    let flags = Flags::from_arg_matches(m)?;
    let collectors = COLLECTORS
        .iter()
        .filter(|e| {
            let on = m.get_flag(&format!("collector.{}", e.name));
            let off = m.get_flag(&format!("no-collector.{}", e.name));
            on || (!off && e.default_enabled && !flags.disable_defaults)
        })
        .map(|e| e.name)
        .collect();
    let mut settings = Settings {
        paths: Paths::new(&flags.procfs, &flags.sysfs).with_devfs(&flags.devfs),
        netdev: flags.netdev.clone(),
        diskstats: flags.diskstats.clone(),
        interrupts: flags.interrupts.clone(),
        gpu: flags.gpu.clone(),
        cgroups: flags.cgroups.clone(),
        ..Settings::default()
    };
    // Bad files are refused here, at start, with clap's usage error and exit status.
    let invalid =
        |msg: String| clap::Error::raw(clap::error::ErrorKind::ValueValidation, msg + "\n");
    if let Some(p) = &flags.config_file {
        let cfg = crate::config::ExporterConfig::load(p).map_err(|e| invalid(e.to_string()))?;
        settings.config = std::sync::Arc::new(cfg);
    }
    if let Some(p) = &flags.selection {
        let sel = crate::selection::Selection::load(p).map_err(|e| invalid(e.to_string()))?;
        settings.selection = Some(std::sync::Arc::new(sel));
    }
    let fast = match &flags.fast {
        Some(p) => Some(crate::selection::Selection::load(p).map_err(|e| invalid(e.to_string()))?),
        None => None,
    };
    Ok(Cli {
        flags,
        collectors,
        settings,
        fast,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collector_flags() {
        let cli = parse_from(["x"]).unwrap();
        assert!(cli.collectors.contains(&"stat"));
        let cli = parse_from(["x", "--no-collector.stat"]).unwrap();
        assert!(!cli.collectors.contains(&"stat"));
        let cli = parse_from(["x", "--collector.disable-defaults", "--collector.stat"]).unwrap();
        assert_eq!(cli.collectors, vec!["stat"]);
        assert!(parse_from(["x", "--collector.stat", "--no-collector.stat"]).is_err());
        assert!(parse_from(["x", "--collector.nosuch"]).is_err());
    }

    #[test]
    fn help_opens_with_the_exporters_description() {
        let help = command().render_help().to_string();
        assert_eq!(help.lines().next(), Some(ABOUT), "{help}");
        let long = command().render_long_help().to_string();
        assert_eq!(long.lines().next(), Some(ABOUT));
    }

    #[test]
    fn listen_address_repeats_and_log_format_is_checked() {
        let cli = parse_from(["x"]).unwrap();
        assert_eq!(cli.flags.listen_address, [format!(":{DEFAULT_PORT}")]);
        assert_eq!(cli.flags.log_format, "logfmt");
        let cli = parse_from([
            "x",
            "--web.listen-address=127.0.0.1:1",
            "--web.listen-address",
            "[::1]:2",
            "--log.format=json",
        ])
        .unwrap();
        assert_eq!(cli.flags.listen_address, ["127.0.0.1:1", "[::1]:2"]);
        assert_eq!(cli.flags.log_format, "json");
        assert!(parse_from(["x", "--log.format=text"]).is_err());
    }

    #[test]
    fn version_names_the_revision() {
        let v = command().render_version();
        assert!(v.contains(reveal_schema::build::REVISION), "{v}");
    }

    #[test]
    fn paths_reach_settings() {
        let cli = parse_from(["x", "--path.procfs", "/tmp/p", "--path.sysfs", "/tmp/s"]).unwrap();
        assert_eq!(cli.settings.paths, Paths::new("/tmp/p", "/tmp/s"));
    }
}
