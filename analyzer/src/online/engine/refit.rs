//! Fits in the background: the service scores every window with the model it has while the
//! next one is fitted on a thread of its own, and installs that model at the first window
//! after it is done.
//!
//! A fit takes seconds (one host of a few hundred channels here) to minutes (a 96-CPU host of
//! thousands). Fitted inline, every refit stalls the pass: windows wait, alerts with them,
//! and the analysis lags the host by the fit's length every `refit_every`. In the background
//! nothing waits; the windows scored meanwhile are scored against the model of `refit_every`
//! ago, as every window before the refit was.
//!
//! At most [`Background::limit`] fits run at once (each fits its three detectors side by
//! side, [`crate::core::fit`]): a host whose refit is due while others fit waits for a free
//! slot and goes on with its model meanwhile. The first fit of a host runs in the background
//! too: the host stays in warm-up until it lands.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use ndarray::Array2;

use crate::core::detect::DetectorsConfig;
use crate::core::fit::{fit_with_alerts, Baseline, Fitted, NotFitted};

/// What one fit was given and what it gave.
pub(super) struct Done {
    pub fitted: Result<Fitted, NotFitted>,
    pub seconds: f64,
    pub windows: usize,
    pub width: usize,
}

/// A fit running on its own thread.
pub(super) struct Pending {
    handle: JoinHandle<Done>,
    /// A refit was asked for after this one started (a left-out column's time ran out): the
    /// model it gives is refitted again at once, on the windows since.
    pub again: bool,
}

impl Pending {
    pub fn running(&self) -> bool {
        !self.handle.is_finished()
    }

    /// The finished fit, or the pending one back if it still runs.
    pub fn finished(self) -> Result<Done, Pending> {
        if !self.handle.is_finished() {
            return Err(self);
        }
        Ok(self.handle.join().unwrap_or_else(|_| Done {
            fitted: Err(NotFitted(vec![("fit", "the fit panicked".to_string())])),
            seconds: 0.0,
            windows: 0,
            width: 0,
        }))
    }
}

/// The slots for fits running in the background.
#[derive(Debug, Clone)]
pub(super) struct Background {
    running: Arc<AtomicUsize>,
    limit: usize,
}

impl Background {
    /// One fit at a time for every three CPUs (a fit keeps three busy), at least one.
    pub fn new() -> Background {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        Background {
            running: Arc::new(AtomicUsize::new(0)),
            limit: (cpus / 3).max(1),
        }
    }

    /// A free slot, or `None` when every slot is taken (the fit waits for a later window).
    pub fn slot(&self) -> Option<Slot> {
        self.running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.limit).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(self.running.clone()))
    }

    /// Fits `x` on a thread of its own, holding `slot` until it ends. `None` when no thread
    /// can be started (said in the log; the fit is tried again at a later window).
    pub fn spawn(
        slot: Slot,
        x: Array2<f64>,
        alerted: Vec<bool>,
        set: DetectorsConfig,
        seed: u64,
        at_ms: i64,
        calibration: Baseline,
    ) -> Option<Pending> {
        let spawned = std::thread::Builder::new()
            .name("reveal-fit".into())
            .spawn(move || {
                let _slot = slot;
                let t0 = Instant::now();
                let fitted = fit_with_alerts(x.view(), &alerted, &set, seed, at_ms, calibration);
                Done {
                    fitted,
                    seconds: t0.elapsed().as_secs_f64(),
                    windows: x.nrows(),
                    width: x.ncols(),
                }
            });
        match spawned {
            Ok(handle) => Some(Pending {
                handle,
                again: false,
            }),
            Err(e) => {
                tracing::warn!(error = %e, "cannot start a fit thread; the fit is tried again");
                None
            }
        }
    }
}

/// Frees its slot when the fit ends, however it ends.
pub(super) struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
