//! z-score detector: each feature standardized against the baseline, the
//! window's score an aggregate of the absolute z values (paper §4.3).

mod model;
mod params;

pub use model::ZScoreModel;
pub use params::{Aggregate, ZScoreParams};
