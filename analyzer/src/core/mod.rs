//! The pure analysis: windows, features, detectors, attribution, claims, episodes, regimes
//! and cross-host comparison, and the types they pass (`HostMatrix`, `FlaggedWindow`,
//! `Episode`). No I/O, no clock (time is an argument), no async: everything here is tested
//! with plain values.
pub mod attribution;
pub mod claim;
pub mod clock;
pub mod crosshost;
pub mod culprit;
pub mod detect;
pub mod drilldown;
pub mod duration;
pub mod episodes;
pub mod eval;
pub mod families;
pub mod features;
pub mod fit;
pub mod hints;
pub mod hold;
pub mod labels;
pub mod matrix;
pub mod pipeline;
pub mod presence;
pub mod prune;
pub mod regime;
pub mod score;
pub mod stats;
pub mod window;
