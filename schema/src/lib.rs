//! `reveal-schema`: what the exporter and the analyzer agree on, in a crate of its own so
//! that neither has to build the other.
//!
//! - [`catalog`]: every metric the exporter can emit, with its labels, as data (generated
//!   from the exporter's descriptors; a test in the exporter keeps the two equal);
//! - [`selection`]: the selection file (`reveal-exporter --metrics.selection`), which the
//!   analyzer's `prune` command writes and the exporter reads;
//! - [`excerpt`]: how both quote bad input in their messages (a bounded excerpt);
//! - `serve` (feature `serve`): the accept loop both binaries' HTTP servers run;
//! - [`process`]: the `process_*` self-metrics both binaries expose;
//! - [`build`]: the version, git revision and compiler both were built with;
//! - `logging` (feature `logging`): both binaries' log format (`--log.format`).
#![forbid(unsafe_code)]
#![deny(clippy::all)]

pub mod build;
pub mod catalog;
pub mod excerpt;
#[cfg(feature = "logging")]
pub mod logging;
pub mod nesting;
pub mod process;
pub mod selection;
#[cfg(feature = "serve")]
pub mod serve;

pub use excerpt::Excerpt;
