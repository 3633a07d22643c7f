//! Reveal's analysis library: windows, features, detectors, attribution, episodes, reports.
#![forbid(unsafe_code)]
pub mod detect;
pub mod config;
pub mod http;
pub mod remote_write;
pub mod eval;
pub mod alertmanager;
pub mod promapi;
pub mod checkpoint;
pub mod matrix;
pub mod kinds;
pub mod source;
pub mod online;
pub mod window;
pub mod features;
pub mod attribution;
pub mod claim;
pub mod pipeline;
pub mod episodes;
pub mod report;
pub mod service;
pub mod compare;
pub mod crosshost;
pub mod prune;
pub mod regime;
