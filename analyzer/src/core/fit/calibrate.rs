//! Each detector of a set fitted and calibrated ([`super::fit_with_alerts`]), as tasks that
//! run side by side: a detector's first fit and its trimming come first; then its fit on the
//! trimmed baseline and its out-of-sample folds, which are independent of each other. The
//! slowest detector's chain (PCA's) no longer sets the wall time alone: its folds run on the
//! threads the other detectors are done with. What is computed, and so every result, is the
//! same however the tasks are spread.

use std::sync::{Mutex, OnceLock};

use ndarray::{ArrayView2, Axis};

use super::{
    folds, forward_split, held_scores, most_held, out_of_sample_gap, tasks, trimmed, trimmed_rows,
    Baseline, Calibrated, FOLDS, FORWARD, HELD_MIN_BLOCKS,
};
use crate::core::detect::{percentile, DetectError, Detector, DetectorsConfig, Fit};

/// A model and its scores of the rows it was fitted on.
type Scored = (Box<dyn Detector>, Vec<f64>);

/// One detector of `set`, by name, fitted on `t`, with its scores of `t`.
fn fit_one(set: &DetectorsConfig, name: &str, t: ArrayView2<f64>) -> Result<Scored, DetectError> {
    fn boxed<M: Detector + 'static>((m, s): (M, ndarray::Array1<f64>)) -> Scored {
        (Box::new(m), s.to_vec())
    }
    Ok(match name {
        "zscore" => boxed(set.zscore.fit_scored(t)?),
        "pca" => boxed(set.pca.fit_scored(t)?),
        _ => boxed(set.iforest.fit_scored(t)?),
    })
}

/// A detector's first fit, on every baseline window, and what trimming kept of them.
struct Trim {
    first: Scored,
    /// The rows kept, when trimming dropped any. Their copy is made where a task needs it and
    /// dropped after: each detector holding one for the whole fit was most of its memory.
    kept: Option<Vec<usize>>,
}

/// One fold of the out-of-sample calibration: its rows' scores by a model fitted on the other
/// folds, and that model's scores of its own rows.
struct Fold {
    rows: Vec<usize>,
    unseen: Vec<f64>,
    seen: Vec<f64>,
}

/// Fold `f` (the interleaved ones, or [`FORWARD`]) of the baseline made of `x`'s rows `base`
/// (every row of `x`: `None`); `None` when it is empty, too little is left to fit on, or the
/// fit fails. The fold's rows are positions in that baseline.
fn fold(
    set: &DetectorsConfig,
    name: &str,
    x: ArrayView2<f64>,
    base: Option<&[usize]>,
    f: usize,
) -> Option<Fold> {
    let n = base.map_or(x.nrows(), <[usize]>::len);
    let (rows, train): (Vec<usize>, Vec<usize>) = if f == FORWARD {
        let (rows, train) = forward_split(n);
        (rows.collect(), train.collect())
    } else {
        let fold = folds(n);
        (
            (0..n).filter(|&i| fold[i] == f).collect(),
            (0..n).filter(|&i| fold[i] != f).collect(),
        )
    };
    if rows.is_empty() || train.len() < 2 {
        return None;
    }
    let of_x = |v: &[usize]| -> Vec<usize> {
        base.map_or(v.to_vec(), |b| v.iter().map(|&i| b[i]).collect())
    };
    let (m, seen) = fit_one(set, name, x.select(Axis(0), &of_x(&train)).view()).ok()?;
    let unseen = m
        .score_many(x.select(Axis(0), &of_x(&rows)).view())
        .to_vec();
    Some(Fold { rows, unseen, seen })
}

#[derive(Clone, Copy)]
enum Task {
    /// Fit on every window, score them, trim.
    First(usize),
    /// Fit on the trimmed rows.
    Trimmed(usize),
    /// One out-of-sample fold of the baseline the detector ends up on.
    Fold(usize, usize),
}

/// The calibration of the detectors `names` of `set` on `x`, task by task.
pub(super) struct Plan<'a> {
    set: &'a DetectorsConfig,
    names: &'a [&'static str],
    x: ArrayView2<'a, f64>,
    alerted: &'a [bool],
    baseline: Baseline,
    trims: Vec<OnceLock<Result<Trim, String>>>,
    trimmed: Vec<Mutex<Option<Result<Scored, DetectError>>>>,
    folds: Vec<Mutex<Vec<Option<Fold>>>>,
}

impl<'a> Plan<'a> {
    pub(super) fn new(
        set: &'a DetectorsConfig,
        names: &'a [&'static str],
        x: ArrayView2<'a, f64>,
        alerted: &'a [bool],
        baseline: Baseline,
    ) -> Self {
        let d = names.len();
        Plan {
            set,
            names,
            x,
            alerted,
            baseline,
            trims: (0..d).map(|_| OnceLock::new()).collect(),
            trimmed: (0..d).map(|_| Mutex::new(None)).collect(),
            folds: (0..d)
                .map(|_| Mutex::new((0..=FORWARD).map(|_| None).collect()))
                .collect(),
        }
    }

    /// Runs every task on up to `threads` threads; then each detector's result, in the
    /// order of `names`.
    pub(super) fn run(mut self, threads: usize) -> Vec<Result<Calibrated, String>> {
        // PCA's chain is the longest, then the forest's: their tasks go first.
        let weight = |d: usize| match self.names[d] {
            "pca" => 0,
            "iforest" => 1,
            _ => 2,
        };
        let rank = |t: &Task| match *t {
            Task::First(d) => weight(d),
            Task::Trimmed(d) | Task::Fold(d, _) => 3 + weight(d),
        };
        let roots = (0..self.names.len()).map(Task::First).collect();
        tasks::run(threads, roots, rank, |t| self.work(t));
        (0..self.names.len()).map(|d| self.finish(d)).collect()
    }

    /// The folds each detector is calibrated on: the interleaved ones, and the forward one
    /// when the set asks for it.
    fn fold_indices(&self) -> impl Iterator<Item = usize> {
        let forward = self.set.forward.then_some(FORWARD);
        (0..FOLDS).chain(forward)
    }

    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn work(&self, task: Task) -> Vec<Task> {
        let (set, x) = (self.set, self.x);
        match task {
            Task::First(d) => {
                let name = self.names[d];
                let trim = fit_one(set, name, x)
                    .map_err(|e| e.to_string())
                    .map(|first| {
                        let keep = if set.trim {
                            trimmed_rows(&first.1)
                        } else {
                            (0..x.nrows()).collect()
                        };
                        let kept = (keep.len() < x.nrows()).then_some(keep);
                        Trim { first, kept }
                    });
                let mut next = Vec::new();
                if let Ok(t) = &trim {
                    if t.kept.is_some() {
                        next.push(Task::Trimmed(d));
                    }
                    if self.baseline == Baseline::Trailing {
                        next.extend(self.fold_indices().map(|f| Task::Fold(d, f)));
                    }
                }
                let _ = self.trims[d].set(trim);
                next
            }
            Task::Trimmed(d) => {
                if let Some(Ok(Trim {
                    kept: Some(keep), ..
                })) = self.trims[d].get()
                {
                    let r = fit_one(set, self.names[d], x.select(Axis(0), keep).view());
                    *Self::lock(&self.trimmed[d]) = Some(r);
                }
                Vec::new()
            }
            Task::Fold(d, f) => {
                if let Some(Ok(trim)) = self.trims[d].get() {
                    // Folds of the trimmed rows, where the detector will most likely end up.
                    let r = fold(set, self.names[d], x, trim.kept.as_deref(), f);
                    Self::lock(&self.folds[d])[f] = r;
                }
                Vec::new()
            }
        }
    }

    /// Detector `d` with its bars, from its tasks' results.
    fn finish(&mut self, d: usize) -> Result<Calibrated, String> {
        let (set, name, x) = (self.set, self.names[d], self.x);
        let trim = match self.trims[d].take() {
            Some(Ok(t)) => t,
            Some(Err(e)) => return Err(e),
            // Every task ran (or the pool panicked and never returned here).
            None => unreachable!("a detector's first task always runs"),
        };
        let trimmed_fit = Self::lock(&self.trimmed[d]).take();
        let mut folds = std::mem::take(&mut *Self::lock(&self.folds[d]));
        let all = || (0..x.nrows()).collect::<Vec<usize>>();
        // The model, its scores of the baseline it ends up fitted on, and the rows of `x` that
        // baseline holds.
        let ((model, own), kept) = match (trim.kept, trimmed_fit) {
            (Some(keep), Some(Ok(m))) => (m, keep),
            (Some(_), _) => {
                // The trimmed rows could not be fitted: the first model stays, and the folds
                // are those of every window (rare enough to run here).
                if self.baseline == Baseline::Trailing {
                    for f in self.fold_indices() {
                        folds[f] = fold(set, name, x, None, f);
                    }
                }
                (trim.first, all())
            }
            (None, _) => (trim.first, all()),
        };
        let is_alerted = |i: usize| self.alerted.get(i).copied().unwrap_or(false);
        // Scores of the alert's windows set no held bar (NaN ends a held stretch); `v[0]` is
        // the score of row `from` of the baseline.
        let unheld = |mut v: Vec<f64>, from: usize| {
            for (s, &i) in v.iter_mut().zip(&kept[from..]) {
                if is_alerted(i) {
                    *s = f64::NAN;
                }
            }
            v
        };
        // Out-of-sample calibration: each baseline window's score by a model fitted on the
        // other folds (NaN where none could be fitted), and those models' in-sample scores.
        let forward = folds.pop().flatten().map(|f| f.unseen).unwrap_or_default();
        let mut unseen = vec![f64::NAN; kept.len()];
        let mut seen = Vec::new();
        for f in folds.into_iter().flatten() {
            for (&i, &s) in f.rows.iter().zip(&f.unseen) {
                unseen[i] = s;
            }
            seen.extend(f.seen);
        }
        let held_out: Vec<f64> = unseen.iter().copied().filter(|v| v.is_finite()).collect();
        let gap = out_of_sample_gap(&seen, &held_out);
        // The out-of-sample floors are at the detector's own percentile, as its in-sample bar.
        let q = set.threshold_percentile(name);
        // With the forward fold, also at least that percentile of the newest quarter's scores
        // by a model of the older ones (empty, when there is none: its percentile is 0).
        let threshold = (model.threshold() * gap)
            .max(percentile(&held_out, q))
            .max(percentile(&forward, q));
        // The held bar: the most the trimmed baseline's scores held over `hold` consecutive
        // windows (their minimum there), itself trimmed ([`most_held`]), raised by the same
        // gap, and at least the same percentile of the same out of sample and of the forward
        // fold's (each trimmed too); none on a short baseline ([`HELD_MIN_BLOCKS`]). The most,
        // not a percentile: a held score varies little, and its 99th percentile sits just above
        // the host's ordinary level.
        let own = held_scores(&unheld(own, 0), set.hold);
        let held = (set.hold >= 2 && own.len() >= HELD_MIN_BLOCKS * set.hold).then(|| {
            let unseen = held_scores(&unheld(unseen, 0), set.hold);
            let ahead = held_scores(
                &unheld(forward, forward_split(kept.len()).0.start),
                set.hold,
            );
            (most_held(&own) * gap)
                .max(percentile(&trimmed(&unseen), q))
                .max(percentile(&trimmed(&ahead), q))
        });
        Ok(Calibrated {
            model,
            threshold,
            held,
        })
    }
}
