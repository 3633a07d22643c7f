//! A host's trailing baseline: the feature rows of its windows in time order, what the
//! detectors and the episodes said of each, and which of them a refit is fitted on.

use std::collections::VecDeque;

use crate::core::features::single;

/// The most of a baseline that alerts keep out of it: one part in this many.
const ALERTED_OUT_DIV: usize = 4;

/// One window of the baseline.
struct Row {
    end_ms: i64,
    /// Features in the host's layout order at the time, in single precision: the baseline is
    /// most of what the analyzer holds for a host (a wide host's 1,500 features over 1,800
    /// windows: 22 MB in double precision), and every row is scored at that precision too
    /// ([`single`]), so a feature steady through the baseline is steady to the bit.
    values: Box<[f32]>,
    /// Flagged by enough detectors.
    flagged: bool,
    /// Part of an episode (an alert).
    alerted: bool,
}

#[derive(Default)]
pub(super) struct Ring {
    rows: VecDeque<Row>,
}

impl Ring {
    /// Appends the window ending at `end_ms` (windows come in time order), its values rounded
    /// to single precision.
    pub fn push(&mut self, end_ms: i64, values: &[f64], flagged: bool, alerted: bool) {
        self.rows.push_back(Row {
            end_ms,
            values: values.iter().map(|&v| single(v) as f32).collect(),
            flagged,
            alerted,
        });
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Ends of the windows, oldest first.
    #[cfg(test)]
    pub fn ends(&self) -> impl Iterator<Item = i64> + '_ {
        self.rows.iter().map(|r| r.end_ms)
    }

    /// End of the newest window.
    pub fn last_end_ms(&self) -> Option<i64> {
        self.rows.back().map(|r| r.end_ms)
    }

    /// Time the windows cover, `stride_ms` apart.
    pub fn span_ms(&self, stride_ms: i64) -> i64 {
        match (self.rows.front(), self.rows.back()) {
            (Some(a), Some(b)) => b.end_ms - a.end_ms + stride_ms,
            _ => 0,
        }
    }

    /// Drops the windows that end at or before `end_ms`.
    pub fn forget_until(&mut self, end_ms: i64) {
        while self.rows.front().is_some_and(|r| r.end_ms <= end_ms) {
            self.rows.pop_front();
        }
    }

    /// Marks the windows ending in `[from_ms, to_ms]` as part of an alert.
    pub fn mark_alerted(&mut self, from_ms: i64, to_ms: i64) {
        for r in self.rows.iter_mut().rev() {
            if r.end_ms < from_ms {
                break;
            }
            r.alerted |= r.end_ms <= to_ms;
        }
    }

    /// Takes the mark back from the windows ending in `[from_ms, to_ms]`: an event found to
    /// recur is the host's routine, not a fault.
    pub fn unmark_alerted(&mut self, from_ms: i64, to_ms: i64) {
        for r in self.rows.iter_mut().rev() {
            if r.end_ms < from_ms {
                break;
            }
            if r.end_ms <= to_ms {
                r.alerted = false;
            }
        }
    }

    /// Windows marked as part of an alert.
    #[cfg(test)]
    pub fn alerted(&self) -> usize {
        self.rows.iter().filter(|r| r.alerted).count()
    }

    /// Windows not flagged.
    pub fn calm(&self) -> usize {
        self.rows.iter().filter(|r| !r.flagged).count()
    }

    /// The rows a fit at `now_ms` is fitted on: flagged ones only with `keep_flagged`, and
    /// none of an alert that ended at least `settled_ms` before `now_ms`.
    ///
    /// The windows of an alert stay out, trimming or not, once its after-effects have had
    /// `settled_ms` to pass: a fault that comes back ten minutes later is found again, where
    /// a baseline that held the first one would have learned it. Until then they stay in: the
    /// host is still settling (write-back, a stream regaining its pace), and a baseline
    /// without the fault would flag that as a fault of its own. At most a quarter of the
    /// baseline is kept out this way, the newest alerts first: a host alerting more than that
    /// has a new normal, and its oldest alerts count again.
    ///
    /// Each row comes with whether it is a window of an alert not settled yet: such windows
    /// set no held bar ([`crate::core::fit::fit_with_alerts`]).
    pub fn fit_rows(
        &self,
        now_ms: i64,
        settled_ms: i64,
        keep_flagged: bool,
    ) -> Vec<(&[f32], bool)> {
        let mut room = self.rows.len() / ALERTED_OUT_DIV;
        let mut out = vec![false; self.rows.len()];
        for (i, r) in self.rows.iter().enumerate().rev() {
            if r.alerted && r.end_ms <= now_ms - settled_ms && room > 0 {
                out[i] = true;
                room -= 1;
            }
        }
        self.rows
            .iter()
            .zip(&out)
            .filter(|(r, out)| !**out && (keep_flagged || !r.flagged))
            .map(|(r, _)| (&*r.values, r.alerted && r.end_ms > now_ms - settled_ms))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alert_windows_leave_the_fit_once_settled_and_at_most_a_quarter() {
        let mut ring = Ring::default();
        for t in 0..100 {
            ring.push(t, &[t as f64], false, false);
        }
        // Two alerts: windows 10–39 (30 rows) and 90–94 (5 rows).
        ring.mark_alerted(10, 39);
        ring.mark_alerted(90, 94);
        assert_eq!(ring.alerted(), 35);
        let firsts =
            |rows: Vec<(&[f32], bool)>| rows.iter().map(|r| r.0[0] as i64).collect::<Vec<_>>();
        // At 99, with 50 to settle: the first alert is settled, the second is not; the
        // quarter (25 rows) is spent on the newest settled windows, 15–39.
        let kept = firsts(ring.fit_rows(99, 50, true));
        assert_eq!(kept.len(), 75);
        assert!(kept.contains(&14) && !kept.contains(&15) && !kept.contains(&39));
        assert!(kept.contains(&90), "not settled yet");
        assert_eq!(single(0.1), 0.1f32 as f64);
        assert_eq!(single(1e300), f32::MAX as f64);
        assert!(single(f64::NAN).is_nan());
        // Kept in, but known as an alert's that has not settled: it sets no held bar. The
        // oldest alert's windows that count again (10–14) are the baseline's like any other.
        let marked = ring.fit_rows(99, 50, true);
        assert!(marked
            .iter()
            .all(|(r, a)| *a == (r[0] >= 90.0 && r[0] <= 94.0)));
        // An event found to recur takes its mark back: the first alert is fitted on again.
        ring.unmark_alerted(10, 39);
        assert_eq!(ring.alerted(), 5);
        assert_eq!(ring.fit_rows(99, 50, true).len(), 100);
    }
}
