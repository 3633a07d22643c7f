//! Reveal's analysis library: windows, features, detectors, attribution, episodes, reports.
#![forbid(unsafe_code)]
pub mod alertmanager;
pub mod attribution;
pub mod checkpoint;
pub mod claim;
pub mod compare;
pub mod config;
pub mod crosshost;
pub mod detect;
pub mod duration;
pub mod episodes;
pub mod eval;
pub mod features;
pub mod http;
pub mod kinds;
pub mod matrix;
pub mod online;
pub mod pipeline;
pub mod promapi;
pub mod prune;
pub mod regime;
pub mod remote_write;
pub mod report;
pub mod service;
pub mod source;
pub mod window;
