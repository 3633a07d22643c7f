//! `reveal-exporter`: host hardware telemetry for Prometheus.
//!
//! Collectors read procfs, sysfs, perf and NVML on each scrape and emit samples into a
//! [`scrape::Scrape`]; the [`runner::Runner`] times them, records their success, and writes the
//! OpenMetrics exposition (in the bytes `prometheus-client`'s encoder writes, checked against it
//! in the runner's tests).
//!
//! ```no_run
//! use reveal_exporter::{collectors::Settings, runner::Runner};
//! let runner = Runner::with_defaults(&Settings::default());
//! print!("{}", runner.render());
//! ```
#![deny(clippy::all)]
// The exceptions: `perf_sys`, system calls the standard library does not wrap, and
// `collectors::tsc::read`, one instruction.
#![deny(unsafe_code)]

pub mod cli;
pub mod collectors;
pub mod config;
pub mod device_filter;
pub mod error;
pub mod exposition;
pub mod metrics_doc;
pub mod paths;
#[allow(unsafe_code)]
pub mod perf_sys;
pub mod read;
pub mod runner;
pub mod scope;
pub mod scrape;
pub mod selection;
pub mod series_filter;
pub mod server;
pub mod web;
