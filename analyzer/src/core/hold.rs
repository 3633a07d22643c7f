//! Held evidence: a detector's score that stays up window after window.
//!
//! A window's score is compared with what the baseline's windows reached (the 99th
//! percentile). On a busy host that bar is set by short, large, ordinary events: a
//! write-back of dirty pages, an I/O-wait burst, a routine job's start. Each lasts a moment
//! and is seen by the few windows that hold it. A fault that holds — every CPU saturated for
//! 20 s — can move the host less than such a moment does and still be far beyond anything the
//! baseline *held*. So each detector has a second bar: the most its baseline's scores held
//! over `len` consecutive windows (their minimum there), trimmed of what is far out among
//! those (`core::fit`). A window is flagged when its score passes the first bar, or when it
//! and the `len − 1` windows before it all passed the second. Both bars come from the
//! baseline.
//!
//! `len` must outlast a blip: a 3 s window with a 1 s stride sees a 100 ms spike in 3
//! windows, so the default is 5.

use std::collections::VecDeque;

/// Consecutive windows a score must hold (`analysis.detectors.hold`); 0 or 1 turns it off.
pub const DEFAULT_HOLD: usize = 5;

/// Per position `i`, the minimum of `values[i + 1 − len ..= i]`; `None` where fewer than
/// `len` values end at `i`, and everywhere when `len` < 2.
pub fn rolling_min(values: &[f64], len: usize) -> Vec<Option<f64>> {
    let mut out = vec![None; values.len()];
    if len < 2 {
        return out;
    }
    for (i, o) in out.iter_mut().enumerate().skip(len - 1) {
        *o = Some(
            values[i + 1 - len..=i]
                .iter()
                .copied()
                .fold(f64::INFINITY, f64::min),
        );
    }
    out
}

/// The held scores of one host's consecutive windows, per detector: the minimum over the
/// last `len` windows of each detector's score relative to its held bar. A window that does
/// not follow the previous one by one stride (a skipped window, a restart) starts afresh.
#[derive(Debug, Clone)]
pub struct Hold {
    len: usize,
    stride_ms: i64,
    last_end_ms: Option<i64>,
    recent: VecDeque<Vec<f64>>,
}

impl Hold {
    pub fn new(len: usize, stride_ms: i64) -> Hold {
        Hold {
            len,
            stride_ms,
            last_end_ms: None,
            recent: VecDeque::with_capacity(len),
        }
    }

    /// Adds the window ending at `end_ms` with its relative held scores (score over held bar,
    /// per detector) and returns, per detector, their minimum over the last `len` windows;
    /// `None` until `len` consecutive windows are in.
    pub fn push(&mut self, end_ms: i64, relative: &[f64]) -> Option<Vec<f64>> {
        if self.len < 2 {
            return None;
        }
        let follows = self
            .last_end_ms
            .is_some_and(|last| end_ms - last == self.stride_ms);
        let same_width = self.recent.back().is_none_or(|r| r.len() == relative.len());
        if !follows || !same_width {
            self.recent.clear();
        }
        self.last_end_ms = Some(end_ms);
        if self.recent.len() == self.len {
            self.recent.pop_front();
        }
        self.recent.push_back(relative.to_vec());
        (self.recent.len() == self.len).then(|| {
            (0..relative.len())
                .map(|d| {
                    self.recent
                        .iter()
                        .map(|r| r[d])
                        .fold(f64::INFINITY, f64::min)
                })
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rolling_min_needs_len_values() {
        let v = [3.0, 1.0, 4.0, 5.0, 2.0];
        assert_eq!(
            rolling_min(&v, 2),
            [None, Some(1.0), Some(1.0), Some(4.0), Some(2.0)]
        );
        assert_eq!(rolling_min(&v, 5), [None, None, None, None, Some(1.0)]);
        assert!(rolling_min(&v, 6).iter().all(Option::is_none));
        assert!(rolling_min(&v, 1).iter().all(Option::is_none));
    }

    #[test]
    fn a_hold_is_the_least_of_consecutive_windows_and_a_gap_restarts_it() {
        let mut h = Hold::new(3, 1000);
        assert_eq!(h.push(1000, &[2.0, 0.5]), None);
        assert_eq!(h.push(2000, &[3.0, 0.7]), None);
        assert_eq!(h.push(3000, &[1.5, 0.9]), Some(vec![1.5, 0.5]));
        assert_eq!(h.push(4000, &[4.0, 2.0]), Some(vec![1.5, 0.7]));
        // A skipped window (5000): the next one starts a new run.
        assert_eq!(h.push(6000, &[9.0, 9.0]), None);
        assert_eq!(h.push(7000, &[9.0, 9.0]), None);
        assert_eq!(h.push(8000, &[8.0, 9.0]), Some(vec![8.0, 9.0]));
        // A refit with another number of detectors starts afresh too.
        assert_eq!(h.push(9000, &[1.0]), None);
        // Off.
        assert_eq!(Hold::new(1, 1000).push(1000, &[5.0]), None);
    }
}
