//! Errors of the detection layer.
//!
//! Parameter errors (a bad builder value, caught by `check()` before any data is
//! touched) are kept apart from fit errors (the data cannot support a model).

use thiserror::Error;

/// A parameter is out of its documented range.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ParamError {
    #[error("{name} must be in {range}, got {value}")]
    OutOfRange {
        name: &'static str,
        range: &'static str,
        value: f64,
    },
    #[error("{name}: {reason}")]
    Unsupported {
        name: &'static str,
        reason: &'static str,
    },
}

/// Why a detector could not be fitted or a row could not be scored.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum DetectError {
    #[error(transparent)]
    Param(#[from] ParamError),
    #[error("baseline has {rows} windows; at least {min} are needed")]
    TooFewWindows { rows: usize, min: usize },
    #[error("no usable feature: all {total} columns are constant or non-finite in the baseline")]
    NoUsableFeature { total: usize },
    #[error("row has {got} features, the model was fitted on {expected}")]
    WidthMismatch { expected: usize, got: usize },
    #[error("column metadata has {got} entries, the matrix has {expected} columns")]
    MetaMismatch { expected: usize, got: usize },
}
