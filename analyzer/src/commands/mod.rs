//! The subcommands: the only layer that knows every other, reads the clock and owns the
//! async runtime. `main.rs` parses the command line and calls one of these.
pub mod analyze;
pub mod compare;
pub mod prune;
pub mod replay;
pub mod run;
