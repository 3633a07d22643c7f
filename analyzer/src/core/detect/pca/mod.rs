//! PCA detector: features standardized and projected on their principal
//! components; the score is the Mahalanobis distance in that subspace (the
//! paper's score), or, by default, the largest standardized deviations both
//! inside the subspace and off it (the residual), so a few features that break
//! their usual correlations are seen even when thousands do not move.

mod model;
mod params;

pub use model::PcaModel;
pub use params::{Components, PcaParams, PcaScore, Solver};
