//! Isolation Forest (Liu, Ting & Zhou 2008) with scikit-learn's scoring: a
//! window's score is 2^(−E[h(x)]/c(ψ)), h the path length to its leaf plus
//! c(leaf size), ψ the subsample size.

mod model;
mod params;
mod tree;

pub use model::IForestModel;
pub use params::{ForestInput, IForestParams};

/// Average path length of an unsuccessful search in a binary search tree of
/// `n` points: the normalizer c(n) of the paper and of scikit-learn.
pub fn average_path_length(n: usize) -> f64 {
    const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;
    match n {
        0 | 1 => 0.0,
        2 => 1.0,
        _ => {
            let n = n as f64;
            2.0 * ((n - 1.0).ln() + EULER_GAMMA) - 2.0 * (n - 1.0) / n
        }
    }
}
