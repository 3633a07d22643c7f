//! Reveal's analysis library, in layers (docs/ARCHITECTURE.md): imports point down only.
//!
//! - [`commands`]: `analyze`, `run`, `prune`, `compare` — wiring, the clock, the runtime;
//! - [`online`]: the live service's analysis loop (engine, cross-host group, reports);
//! - [`config`]: the YAML configuration of `run`;
//! - [`ingest`] and [`outputs`]: telemetry in (Prometheus, scrape, recordings), results out
//!   (remote write, Alertmanager, reports, checkpoint, self-metrics);
//! - [`http`]: the one outgoing HTTP client both use;
//! - [`core`]: pure analysis — windows, features, detectors, attribution, episodes, regimes,
//!   cross-host comparison — no I/O, no clock, no async.
#![forbid(unsafe_code)]
pub mod commands;
pub mod config;
pub mod core;
pub mod http;
pub mod ingest;
pub mod online;
pub mod outputs;
