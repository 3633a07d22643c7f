//! The exporter's YAML configuration file (`--config.file`): what cannot be said in flags.
//! Today that is the vendor-specific perf events to count; see
//! `exporter/examples/perf-events.yml` for documented Intel and AMD examples.
//!
//! ```yaml
//! perf:
//!   events:
//!     - name: cycle_activity.stalls_l3_miss
//!       subsystem: memory
//!       event: 0xa3
//!       umask: 0x06
//!       cmask: 6
//!       help: Cycles with execution stalled while an L3 miss is outstanding.
//! ```
//! Unknown keys are refused, and every error names the file and the line.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The whole configuration file. Every section is optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExporterConfig {
    #[serde(default)]
    pub perf: PerfConfig,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerfConfig {
    /// Model-specific events, counted per CPU beside the generic ones.
    #[serde(default)]
    pub events: Vec<RawEvent>,
}

/// The subsystem a raw event is attributed to; it becomes the metric name's subsystem
/// (`reveal_<subsystem>_perf_event_total`), which the analyzer attributes by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Subsystem {
    Cpu,
    Gpu,
    Memory,
    Network,
    Storage,
}

/// One vendor event. Either `config` (the raw `perf_event_attr.config`, as `perf stat -e
/// r<hex>` takes it) or `event` plus optional `umask`, `cmask`, `inv`, `edge`, which are
/// packed the way the x86 PMUs lay out their event-select registers.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEvent {
    /// Vendor name of the event, the `event` label of its series.
    pub name: String,
    pub subsystem: Subsystem,
    /// A PMU under `/sys/bus/event_source/devices` whose `type` to use; the CPU's raw PMU
    /// (`PERF_TYPE_RAW`) when absent.
    #[serde(default)]
    pub pmu: Option<String>,
    #[serde(default)]
    pub event: Option<u64>,
    #[serde(default)]
    pub umask: Option<u64>,
    #[serde(default)]
    pub cmask: Option<u64>,
    #[serde(default)]
    pub inv: bool,
    #[serde(default)]
    pub edge: bool,
    #[serde(default)]
    pub config: Option<u64>,
    /// `perf_event_attr.config1`, e.g. the load-latency threshold of Intel `mem-loads`.
    #[serde(default)]
    pub config1: u64,
    #[serde(default)]
    pub config2: u64,
    /// Events with the same group are scheduled together (their ratio is exact even when
    /// multiplexed); each event is its own group when absent.
    #[serde(default)]
    pub group: Option<String>,
    /// What the event counts, for whoever reads the configuration.
    #[serde(default)]
    pub help: Option<String>,
}

impl RawEvent {
    /// The `perf_event_attr.config` value. x86 event select: event bits 0–7 in 0–7 and 8–11 in
    /// 32–35 (AMD extended event codes), umask 8–15, edge 18, inv 23, cmask 24–31
    /// (Intel SDM vol. 3B, IA32_PERFEVTSELx in "Architectural Performance Monitoring";
    /// AMD PPR, Core::X86::Msr::PERF_CTL).
    pub fn raw_config(&self) -> Result<u64, String> {
        match (self.config, self.event) {
            (Some(c), None) => {
                if self.umask.is_some() || self.cmask.is_some() || self.inv || self.edge {
                    return Err("config excludes umask, cmask, inv and edge".into());
                }
                Ok(c)
            }
            (None, Some(ev)) => {
                let umask = self.umask.unwrap_or(0);
                let cmask = self.cmask.unwrap_or(0);
                if ev > 0xfff || umask > 0xff || cmask > 0xff {
                    return Err(format!(
                        "event {ev:#x} (max 0xfff), umask {umask:#x} or cmask {cmask:#x} (max 0xff) out of range"
                    ));
                }
                Ok((ev & 0xff)
                    | ((ev >> 8) << 32)
                    | (umask << 8)
                    | (u64::from(self.edge) << 18)
                    | (u64::from(self.inv) << 23)
                    | (cmask << 24))
            }
            (Some(_), Some(_)) => Err("give either config or event, not both".into()),
            (None, None) => Err("needs config or event".into()),
        }
    }
}

/// Why the configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// yaml_serde's message carries the line and column.
    #[error("{path}: {msg}")]
    Invalid { path: PathBuf, msg: String },
}

impl ExporterConfig {
    pub fn load(path: &Path) -> Result<ExporterConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        ExporterConfig::parse(&text).map_err(|msg| ConfigError::Invalid {
            path: path.to_owned(),
            msg,
        })
    }

    /// Parses and checks a configuration text.
    pub fn parse(text: &str) -> Result<ExporterConfig, String> {
        // An empty file is a valid, empty configuration.
        if text.trim().is_empty() {
            return Ok(ExporterConfig::default());
        }
        if let Some(line) = reveal_schema::nesting::too_deep(text) {
            return Err(reveal_schema::nesting::message(line));
        }
        let cfg: ExporterConfig =
            yaml_serde::from_str(text).map_err(|e| reveal_schema::excerpt::library_message(&e))?;
        let mut seen = std::collections::HashSet::new();
        for (i, ev) in cfg.perf.events.iter().enumerate() {
            let at = format!("perf.events[{i}] ({:?})", crate::error::Excerpt(&ev.name));
            let valid_name = !ev.name.is_empty()
                && ev
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-:".contains(c));
            if !valid_name {
                return Err(format!(
                    "{at}: name must be non-empty ASCII letters, digits, '.', '_', '-', ':'"
                ));
            }
            if !seen.insert((ev.name.as_str(), ev.subsystem)) {
                return Err(format!("{at}: declared twice"));
            }
            ev.raw_config().map_err(|e| format!("{at}: {e}"))?;
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_intel_and_amd_event_selects() {
        let cfg = ExporterConfig::parse(
            "perf:\n  events:\n    - {name: a, subsystem: memory, event: 0xa3, umask: 0x06, cmask: 6}\n    \
             - {name: b, subsystem: cpu, event: 0x1c0, umask: 0x1}\n    \
             - {name: c, subsystem: cpu, config: 0x5300c0}\n",
        )
        .unwrap();
        let e = &cfg.perf.events;
        assert_eq!(e[0].raw_config().unwrap(), 0x0600_06a3);
        assert_eq!(e[1].raw_config().unwrap(), 0x1_0000_01c0);
        assert_eq!(e[2].raw_config().unwrap(), 0x5300c0);
        assert_eq!(e[0].subsystem, Subsystem::Memory);
    }

    #[test]
    fn refuses_bad_configs_with_a_line() {
        let err =
            ExporterConfig::parse("perf:\n  events:\n    - {name: a, subsystem: cpu, evnt: 1}\n")
                .unwrap_err();
        assert!(err.contains("line 3"), "{err}");
        let err =
            ExporterConfig::parse("perf:\n  events:\n    - {name: a, subsystem: disk, event: 1}\n")
                .unwrap_err();
        assert!(err.contains("line 3"), "{err}");
        assert!(
            ExporterConfig::parse("perf:\n  events:\n    - {name: a, subsystem: cpu}\n").is_err()
        );
        assert!(ExporterConfig::parse(
            "perf:\n  events:\n    - {name: 'a b', subsystem: cpu, event: 1}\n"
        )
        .is_err());
        assert!(ExporterConfig::parse(
            "perf:\n  events:\n    - {name: a, subsystem: cpu, event: 1}\n    - {name: a, subsystem: cpu, event: 2}\n"
        )
        .is_err());
        assert!(ExporterConfig::parse(
            "perf:\n  events:\n    - {name: a, subsystem: cpu, config: 1, umask: 2}\n"
        )
        .is_err());
        assert_eq!(
            ExporterConfig::parse("").unwrap(),
            ExporterConfig::default()
        );
    }
}

#[cfg(test)]
mod example_tests {
    use super::*;

    /// The shipped example must stay loadable, and its AMD block (commented out) too.
    #[test]
    fn shipped_example_loads_with_both_vendor_blocks() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/perf-events.yml");
        let cfg = ExporterConfig::load(&p).unwrap();
        let names: Vec<&str> = cfg.perf.events.iter().map(|e| e.name.as_str()).collect();
        assert!(names.contains(&"cycle_activity.stalls_l3_miss") && names.contains(&"mem-stores"));
        let text = std::fs::read_to_string(&p).unwrap();
        let amd: String = text
            .lines()
            .skip_while(|l| !l.contains("AMD Zen 2"))
            .skip(1)
            .map(|l| l.replacen("    # ", "    ", 1))
            .collect::<Vec<_>>()
            .join("\n");
        let amd = ExporterConfig::parse(&format!("perf:\n  events:\n{amd}\n")).unwrap();
        let e = amd
            .perf
            .events
            .iter()
            .find(|e| e.name == "ls_dc_accesses")
            .unwrap();
        assert_eq!(e.raw_config().unwrap(), 0x40);
        assert_eq!(amd.perf.events.len(), 4);
    }
}
