//! Regime changes (DESIGN pipeline step 8): a workload starting or stopping is one event,
//! not an anomaly storm. A *persistent, stable* shift of a host's features is reported once
//! as a [`RegimeChange`], and the caller leaves the shifted columns out of scoring until its
//! trailing baseline has learned their new level ([`LeftOut`]).
//!
//! # The test
//! The tracker keeps a host's last `history` windows (feature rows, and whether the detectors
//! flagged them). It looks for a change only while windows are being flagged, and then:
//! 1. **Candidates**: columns whose mean over the last `min_regime` windows differs from
//!    their mean over the first `min_reference` windows by at least `shift_z` reference
//!    standard deviations.
//! 2. **Change point**: the split p maximizing Σ_c p(N−p)/N · (mean_before − mean_after)² / σ_c²
//!    over the candidate columns (the likelihood-ratio statistic of one shift in mean,
//!    as binary segmentation uses), with at least `min_reference` windows before; a change
//!    is only considered once `min_regime` windows follow the split.
//! 3. **Shifted and stable**: for each candidate, on the windows before/after p: the shift is
//!    at least `shift_z` σ_before; the new level stands out of the new regime's own spread
//!    too (its standard deviation at most the shift: a busier workload is often noisier, so
//!    the old regime's σ alone would be too strict), and it does not drift (the means of its
//!    two halves differ by at most a quarter of the shift: a ramp such as a leak moves by
//!    half).
//! 4. A regime change needs at least `min_flagged` of the windows since p flagged (the
//!    detectors see it as anomalous against the old baseline), and at least one shifted
//!    column, with the stable ones at least half of the shifted ones.
//!
//! # What a fault leaves behind (the settle rule)
//! A fault can leave a level behind when it ends: a memory hog drops the page cache, and free
//! memory stays high for minutes. The detectors flag every window against the old baseline,
//! and the fault's alert would stay open until the minute of the rule above had passed. So a
//! second, faster test, while windows are flagged:
//! 1. The flagged run that ends now (lulls of up to 4 windows inside it) began after the
//!    reference windows.
//! 2. The fault is over: of the columns that had moved `shift_z` σ in the run's first 5
//!    windows after the `ramp` (the first windows of any change mix two levels, and their
//!    spread and slope come back whatever follows), at least half are back within `shift_z`
//!    σ of the reference over the last `settle` windows.
//! 3. What is still shifted is either *returning* (the medians of the three thirds of those
//!    windows come nearer to the reference, on one side of it) or *steady* (a spread below
//!    half its shift, halves that differ by at most a quarter of it); one column still moving
//!    away means the fault goes on, and so does one of the fault's *leading* columns (moved
//!    at onset at least half as far as the most any column moved) still where the onset put
//!    it. A lesser column that stays where the onset put it is a level the fault left (fio
//!    drops its file's page cache as it opens it). Most of the windows are flagged.
//!
//! The change then starts `settle` windows ago, lists the steady columns (a level the fault
//! left behind), and names every column still shifted as *left out* ([`LeftOut`]): the caller
//! scores without them until each is back near its old level or past it, or for a few
//! minutes at most, by when the trailing baseline has learned a level that stays. Nothing is
//! learned from the settle rule itself: a column taken for steady may still be drifting back
//! (free memory refills over a minute after a hog), and a level learned too early is a fault
//! of its own once the column is back. A fault that holds its level (a hog that stays) keeps
//! its onset columns where it put them, and only the minute's rule can make it a regime.
//!
//! For 30 s (`AFTERMATH_MS`) after the rule found a fault over, a column the fault never moved that
//! steps away from its level before the fault, and then holds or returns over `settle`
//! windows, is left out too (another settled change, without the onset test, that reports no
//! level: such a step is only likely the fault's doing); one still moving away is left to
//! the detectors.
//!
//! After a change the windows before p are forgotten: the new regime is the reference for the
//! next change, and none can be reported until `min_reference + min_regime` windows of it
//! exist. A column with no variance before the change is scaled by 1% of its level, so a
//! constant that steps to a new constant is a shift, and float noise is not.
//!
//! Defaults (1 s stride): 30 windows of reference, 60 of new regime (the shift must hold a
//! minute: a workload that starts runs for longer, while a fault of a few seconds to tens of
//! seconds is an episode, not the host's new normal), 4σ, 80% flagged, 120 windows of
//! history; a left-behind level settles after 10 windows.
//!
//! # Online use
//! Per host, call [`RegimeTracker::observe`] with every scored window's feature row (in a
//! layout whose column indices are stable; new columns may be appended) and whether it was
//! flagged. On `Some(change)`: send one `RevealRegimeChange` alert (instance, start) when it
//! lists columns, and leave `change.left_out` out of scoring until each column is back near
//! its old level or the trailing baseline has held the new one long enough to learn it. The
//! baseline is never cut to the new regime's windows: those are the windows of the alert that
//! preceded the change (a fault and its aftermath as often as a workload's start), and a
//! baseline of a minute or two that holds a fault sets bars no later fault passes.

use std::collections::VecDeque;

use serde::Serialize;

/// Settings; see the module docs.
///
/// Deserializes from the analyzer configuration (every key optional, unknown keys refused);
/// call `check()` after loading.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RegimeParams {
    pub history: usize,
    pub min_reference: usize,
    pub min_regime: usize,
    pub shift_z: f64,
    pub min_flagged: f64,
    /// Shifted columns listed in a change.
    pub max_columns: usize,
    /// Windows a level left behind by a fault must hold before it is the new normal (the
    /// settle rule, module docs); 0 turns the rule off.
    pub settle: usize,
    /// Windows a change takes to fill a window (window length / stride): the first windows
    /// after a change mix the two levels, and their spread and slope say only that a change
    /// happened.
    pub ramp: usize,
}

impl Default for RegimeParams {
    fn default() -> Self {
        RegimeParams {
            history: 120,
            min_reference: 30,
            min_regime: 60,
            shift_z: 4.0,
            min_flagged: 0.8,
            max_columns: 10,
            settle: 10,
            ramp: 3,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("regime settings: {0}")]
pub struct ParamError(String);

impl RegimeParams {
    pub fn check(&self) -> Result<(), ParamError> {
        let bad = |m: &str| Err(ParamError(m.to_string()));
        if self.min_reference < 3 || self.min_regime < 4 {
            return bad("need at least 3 reference and 4 regime windows");
        }
        if self.history < self.min_reference + self.min_regime {
            return bad("history must hold min_reference + min_regime windows");
        }
        if self.settle != 0 && (self.settle < 4 || self.settle >= self.min_regime) {
            return bad("settle must be 0 (off), or at least 4 and fewer than min_regime");
        }
        if !(self.shift_z > 0.0 && self.shift_z.is_finite()) {
            return bad("shift_z must be positive");
        }
        if !(0.0..=1.0).contains(&self.min_flagged) {
            return bad("min_flagged must be in [0, 1]");
        }
        Ok(())
    }
}

/// One scored window of a host.
#[derive(Debug, Clone, Copy)]
pub struct RegimeWindow<'a> {
    pub end_ms: i64,
    pub flagged: bool,
    /// Feature values by column (NaN where missing).
    pub row: &'a [f64],
}

/// A column that moved to a new level and stayed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShiftedColumn {
    pub column: usize,
    pub before: f64,
    pub after: f64,
    /// Shift in standard deviations of the old regime.
    pub z: f64,
}

/// A persistent, stable shift: report once, leave `left_out` out of scoring until learned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegimeChange {
    /// End of the first window of the new regime.
    pub start_ms: i64,
    /// End of the window where the change was recognized.
    pub detected_ms: i64,
    /// Windows of the new regime so far, and how many were flagged.
    pub windows: usize,
    pub flagged: usize,
    /// Shifted and stable columns, largest |z| first (at most `max_columns`), and the count.
    pub columns: Vec<ShiftedColumn>,
    pub shifted: usize,
    /// A level a fault left behind (the settle rule), rather than a workload's new regime.
    pub settled: bool,
    /// Columns away from the level they had before: a fault's aftermath or a level it left
    /// behind (the settle rule), or every shifted column of a new regime; in either case not
    /// a fault. The caller leaves them out of scoring until they are back (see [`LeftOut`])
    /// or its baseline has learned where they are.
    #[serde(skip)]
    pub left_out: Vec<LeftOut>,
}

/// A column away from its level after a fault (the settle rule) or in a new regime.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LeftOut {
    pub column: usize,
    /// Its level before the fault.
    pub level: f64,
    /// It is back when within this of `level` (`shift_z` σ of the reference).
    pub band: f64,
    /// The side of `level` it is on: 1 above, −1 below.
    pub side: f64,
}

impl LeftOut {
    /// Whether `value` is back near the level, or past it (a column that overshoots is
    /// moving again, and is scored again); a value that is not a number is not back.
    pub fn is_back(&self, value: f64) -> bool {
        let d = value - self.level;
        d.abs() < self.band || (d.is_finite() && d.signum() != self.side)
    }
}

impl RegimeChange {
    /// "A new regime since 10:32:05: 14 features moved and stayed (top: CPU user time mean,
    /// 0.12 → 0.85, 9.1σ)."; `name` names a column.
    pub fn describe(&self, name: impl Fn(usize) -> String) -> String {
        let top = self.columns.first().map_or(String::new(), |c| {
            format!(
                " (largest: {}, {:.4} → {:.4}, {:.1}σ)",
                name(c.column),
                c.before,
                c.after,
                c.z
            )
        });
        format!(
            "A new regime since {}: {} features moved to a new level and stayed there{top}.",
            crate::core::clock::clock(self.start_ms),
            self.shifted
        )
    }
}

/// Windows at the start of a flagged run that show what the fault moved (the settle rule).
const ONSET: usize = 5;
/// A column is among a fault's leading evidence when its onset moved it at least this
/// fraction of the most any column moved (in reference scales).
const LEADING_DIV: f64 = 2.0;
/// Windows without a flag that a flagged run may hold and still be one run (an episode's
/// lull, `close_after` − 1 at the default).
const GAP: usize = 4;

/// Per-host tracker of regime changes.
#[derive(Debug, Clone)]
pub struct RegimeTracker {
    params: RegimeParams,
    ring: VecDeque<(i64, bool, Vec<f64>)>,
    /// After the settle rule found a fault over: its aftermath ([`Aftermath`]).
    aftermath: Option<Aftermath>,
}

/// How long after the settle rule found a fault over a feature that steps away from its level
/// before the fault, and holds there or comes back, is still the fault's doing (the kernel
/// writing back after a memory hog starts within seconds of its end).
const AFTERMATH_MS: i64 = 30_000;

/// The reference before a fault, kept for its aftermath.
#[derive(Debug, Clone)]
struct Aftermath {
    /// Per column, its level and scale before the fault (`None`: not enough of it).
    reference: Vec<Option<(f64, f64)>>,
    /// End of the aftermath.
    until_ms: i64,
    /// Columns already left out.
    left: Vec<usize>,
}

/// Mean and population standard deviation of the finite values; `None` if fewer than half
/// of the values are finite (or fewer than 2).
fn mean_sd(v: impl Iterator<Item = f64> + Clone) -> Option<(f64, f64)> {
    let total = v.clone().count();
    let (mut n, mut s) = (0usize, 0.0);
    for x in v.clone().filter(|x| x.is_finite()) {
        n += 1;
        s += x;
    }
    if n < 2 || 2 * n < total {
        return None;
    }
    let m = s / n as f64;
    let var = v
        .filter(|x| x.is_finite())
        .map(|x| (x - m).powi(2))
        .sum::<f64>()
        / n as f64;
    Some((m, var.sqrt()))
}

/// The `max` columns shifted most (largest |z| first, then by column).
fn strongest(mut columns: Vec<ShiftedColumn>, max: usize) -> Vec<ShiftedColumn> {
    columns.sort_by(|a, b| {
        b.z.abs()
            .total_cmp(&a.z.abs())
            .then(a.column.cmp(&b.column))
    });
    columns.truncate(max);
    columns
}

/// Median of the finite values; `None` if fewer than half of the values are finite.
fn median(v: impl Iterator<Item = f64> + Clone) -> Option<f64> {
    let total = v.clone().count();
    let finite: Vec<f64> = v.filter(|x| x.is_finite()).collect();
    (!finite.is_empty() && 2 * finite.len() >= total)
        .then(|| crate::core::stats::percentile(&finite, 50.0))
}

/// The scale a shift is measured in: the old regime's spread, at least 1% of its level.
fn scale(mean: f64, sd: f64) -> f64 {
    sd.max(0.01 * mean.abs()).max(f64::MIN_POSITIVE)
}

impl RegimeTracker {
    pub fn new(params: RegimeParams) -> Result<RegimeTracker, ParamError> {
        params.check()?;
        Ok(RegimeTracker {
            params,
            ring: VecDeque::with_capacity(params.history + 1),
            aftermath: None,
        })
    }

    /// Windows held (the current regime's, up to `history`).
    pub fn len(&self) -> usize {
        self.ring.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    /// Columns of the widest row held.
    fn width(&self) -> usize {
        self.ring.iter().map(|r| r.2.len()).max().unwrap_or(0)
    }

    /// Column `c` of the windows in `range` (NaN where a row is narrower).
    fn col(
        &self,
        c: usize,
        range: std::ops::Range<usize>,
    ) -> impl Iterator<Item = f64> + Clone + '_ {
        self.ring
            .range(range)
            .map(move |r| r.2.get(c).copied().unwrap_or(f64::NAN))
    }

    /// Adds a window; returns a change the first time a new regime is recognized.
    pub fn observe(&mut self, w: RegimeWindow<'_>) -> Option<RegimeChange> {
        let p = self.params;
        self.ring.push_back((w.end_ms, w.flagged, w.row.to_vec()));
        while self.ring.len() > p.history {
            self.ring.pop_front();
        }
        let n = self.ring.len();
        if !w.flagged {
            return None;
        }
        if let Some(c) = self.after_fault(w.end_ms) {
            return Some(c);
        }
        if p.settle > 0 && n >= p.min_reference + p.ramp + ONSET + p.settle {
            if let Some(c) = self.settled(w.end_ms) {
                return Some(c);
            }
        }
        if n < p.min_reference + p.min_regime {
            return None;
        }
        let width = self.width();
        // 1. Candidates: last min_regime windows against the first min_reference.
        let mut cand = Vec::new();
        for c in 0..width {
            let (Some((mr, sr)), Some((mn, _))) = (
                mean_sd(self.col(c, 0..p.min_reference)),
                mean_sd(self.col(c, n - p.min_regime..n)),
            ) else {
                continue;
            };
            let s = scale(mr, sr);
            if (mn - mr).abs() >= p.shift_z * s && (mn - mr).abs() > 1e-9 * mr.abs().max(mn.abs()) {
                cand.push((c, s));
            }
        }
        if cand.is_empty() {
            return None;
        }
        // 2. Change point by the one-shift statistic over prefix sums (NaN as the column's
        //    reference mean, i.e. no evidence either way).
        let split = self.change_point(&cand);
        if n - split < p.min_regime {
            // The shift is younger than a regime: wait for it to persist.
            return None;
        }
        // 3. Shifted and stable columns at the split.
        let mut shifted = 0usize;
        let mut stable = Vec::new();
        let mut left_out = Vec::new();
        let half = split + (n - split) / 2;
        for &(c, _) in &cand {
            let (Some((mb, sb)), Some((ma, sa)), Some((m1, _)), Some((m2, _))) = (
                mean_sd(self.col(c, 0..split)),
                mean_sd(self.col(c, split..n)),
                mean_sd(self.col(c, split..half)),
                mean_sd(self.col(c, half..n)),
            ) else {
                continue;
            };
            let shift = ma - mb;
            let z = shift / scale(mb, sb);
            if z.abs() < p.shift_z {
                continue;
            }
            shifted += 1;
            // A column at a new level is left out until learned; one still moving is scored.
            if sa <= shift.abs() && (m2 - m1).abs() <= shift.abs() / 4.0 {
                left_out.push(LeftOut {
                    column: c,
                    level: mb,
                    band: p.shift_z * scale(mb, sb),
                    side: shift.signum(),
                });
                stable.push(ShiftedColumn {
                    column: c,
                    before: mb,
                    after: ma,
                    z,
                });
            }
        }
        // 4. Flagged share of the new regime, and mostly stable shifts.
        let flagged = self.ring.range(split..).filter(|r| r.1).count();
        let windows = n - split;
        if (flagged as f64) < p.min_flagged * windows as f64
            || stable.is_empty()
            || 2 * stable.len() < shifted
        {
            return None;
        }
        stable.sort_by(|a, b| {
            b.z.abs()
                .total_cmp(&a.z.abs())
                .then(a.column.cmp(&b.column))
        });
        let count = stable.len();
        stable.truncate(p.max_columns);
        let change = RegimeChange {
            start_ms: self.ring[split].0,
            detected_ms: w.end_ms,
            windows,
            flagged,
            columns: stable,
            shifted: count,
            settled: false,
            left_out,
        };
        self.ring.drain(..split);
        Some(change)
    }

    /// The settle rule (module docs): the flagged run that ends now began after the
    /// reference; at least half of the columns that had moved in its first [`ONSET`] windows
    /// after the `ramp` are back near the reference, and every column still shifted has held
    /// one level for the last `settle` windows.
    fn settled(&mut self, end_ms: i64) -> Option<RegimeChange> {
        let p = self.params;
        let n = self.ring.len();
        // Start of the flagged run: back from now until more than GAP windows in a row
        // are not flagged.
        let mut start = n;
        let mut quiet = 0;
        for i in (0..n).rev() {
            if self.ring[i].1 {
                start = i;
                quiet = 0;
            } else {
                quiet += 1;
                if quiet > GAP {
                    break;
                }
            }
        }
        let tail = n - p.settle;
        let onset = start + p.ramp..start + p.ramp + ONSET;
        if start < p.min_reference || onset.end > tail {
            return None;
        }
        let flagged = self.ring.range(tail..).filter(|r| r.1).count();
        if (flagged as f64) < p.min_flagged * p.settle as f64 {
            return None;
        }
        let width = self.width();
        let mid = tail + p.settle / 2;
        // How far the fault's first windows moved each column (in its reference scales), and
        // whether that scale is a real one: a column at exactly zero before the fault (an
        // error counter) moves infinitely far by this measure, and would make every other
        // column lesser evidence. Such a column still leads (its own move is that large);
        // it only sets no bar for the others.
        let onset_z = |c: usize| {
            let (mr, sr) = mean_sd(self.col(c, 0..p.min_reference))?;
            let mo = median(self.col(c, onset.clone()))?;
            let s = scale(mr, sr);
            Some(((mo - mr).abs() / s, s > f64::MIN_POSITIVE))
        };
        let onset_z: Vec<Option<(f64, bool)>> = (0..width).map(onset_z).collect();
        let leading = onset_z
            .iter()
            .flatten()
            .filter(|&&(_, real)| real)
            .fold(0.0_f64, |m, &(z, _)| m.max(z));
        let (mut moved, mut back) = (0usize, 0usize);
        let mut stable = Vec::new();
        let mut left_out = Vec::new();
        for (c, oz) in onset_z.iter().enumerate() {
            let Some((mr, sr)) = mean_sd(self.col(c, 0..p.min_reference)) else {
                continue;
            };
            let s = scale(mr, sr);
            let shifted = |m: f64| (m - mr).abs() >= p.shift_z * s;
            // Medians: one odd window (a stationarity statistic of a near-constant window)
            // neither makes a column shifted nor hides that it is back.
            let now = median(self.col(c, tail..n));
            let at_onset = median(self.col(c, onset.clone()));
            // Only what the fault moved is judged: on a busy host some other column is always
            // on the move (a routine job starting), and it says nothing about this fault.
            if !at_onset.is_some_and(shifted) {
                continue;
            }
            moved += 1;
            // Back in both halves: windows of the fault's end are no longer in view.
            let near =
                |r: std::ops::Range<usize>| median(self.col(c, r)).is_some_and(|m| !shifted(m));
            if near(tail..mid) && near(mid..n) {
                back += 1;
                continue;
            }
            let Some(mt) = now.filter(|&mt| shifted(mt)) else {
                continue;
            };
            let shift = mt - mr;
            // Where the run's onset put it, and among the fault's leading evidence: the fault
            // holds. A lesser column that stays where the onset put it, once the leading ones
            // are back, is a level the fault left (fio drops its file's page cache as it
            // opens it: the cache is 1 GB lower from the burst's first window on, for good).
            let leads = oz.is_some_and(|(z, _)| z >= leading / LEADING_DIV);
            if leads && at_onset.is_some_and(|mo| (mo - mt).abs() <= shift.abs() / 4.0) {
                return None;
            }
            // Moving away, or swinging across its level: the fault is not over.
            let (level, left) = self.left_behind(c, tail, mr, s, mt)?;
            stable.extend(level);
            left_out.push(left);
        }
        if moved == 0 || 2 * back < moved || left_out.is_empty() {
            return None;
        }
        let count = stable.len();
        let stable = strongest(stable, p.max_columns);
        let change = RegimeChange {
            start_ms: self.ring[tail].0,
            detected_ms: end_ms,
            windows: p.settle,
            flagged,
            columns: stable,
            shifted: count,
            settled: true,
            left_out,
        };
        let reference = (0..width)
            .map(|c| mean_sd(self.col(c, 0..p.min_reference)).map(|(m, sd)| (m, scale(m, sd))))
            .collect();
        self.aftermath = Some(Aftermath {
            reference,
            until_ms: end_ms + AFTERMATH_MS,
            left: change.left_out.iter().map(|l| l.column).collect(),
        });
        self.ring.drain(..tail);
        Some(change)
    }

    /// The aftermath of a fault the settle rule found over: within [`AFTERMATH_MS`] of it, a
    /// feature that has stepped away from its level before the fault over the last `settle`
    /// windows, and holds there or comes back, is left out as the fault's features were.
    /// Unlike the settle rule, a feature still moving away vetoes nothing: it is scored.
    fn after_fault(&mut self, end_ms: i64) -> Option<RegimeChange> {
        let p = self.params;
        let a = self.aftermath.as_ref()?;
        if end_ms > a.until_ms {
            self.aftermath = None;
            return None;
        }
        let n = self.ring.len();
        if p.settle == 0 || n < p.settle {
            return None;
        }
        let tail = n - p.settle;
        let mut left_out = Vec::new();
        for (c, r) in a.reference.iter().enumerate() {
            let Some((mr, s)) = *r else { continue };
            if a.left.contains(&c) {
                continue;
            }
            let Some(mt) = median(self.col(c, tail..n)).filter(|m| (m - mr).abs() >= p.shift_z * s)
            else {
                continue;
            };
            // Still moving away: scored, as anything else is.
            if let Some((_, left)) = self.left_behind(c, tail, mr, s, mt) {
                left_out.push(left);
            }
        }
        if left_out.is_empty() {
            return None;
        }
        if let Some(a) = self.aftermath.as_mut() {
            a.left.extend(left_out.iter().map(|l| l.column));
        }
        // Left out, but no level is reported: the fault never moved these columns, so a step
        // within its aftermath is only likely its doing (write-back after a memory hog); the
        // routine job landing in those 30 s steps the same way and is no level the fault left.
        Some(RegimeChange {
            start_ms: self.ring[tail].0,
            detected_ms: end_ms,
            windows: p.settle,
            flagged: self.ring.range(tail..).filter(|r| r.1).count(),
            columns: Vec::new(),
            shifted: 0,
            settled: true,
            left_out,
        })
    }

    /// Column `c`, shifted from its reference level `mr` (scale `s`) to `mt` over the last
    /// `settle` windows (from `tail`): on its way back (free memory refilling after a hog) or
    /// one level left behind (steady: spread below half its shift, halves within a quarter of
    /// it), it is left out, and a level is also reported; `None` when it is neither.
    fn left_behind(
        &self,
        c: usize,
        tail: usize,
        mr: f64,
        s: f64,
        mt: f64,
    ) -> Option<(Option<ShiftedColumn>, LeftOut)> {
        let (p, n) = (self.params, self.ring.len());
        let mid = tail + (n - tail) / 2;
        let (Some((_, st)), Some(m1), Some(m2)) = (
            mean_sd(self.col(c, tail..n)),
            median(self.col(c, tail..mid)),
            median(self.col(c, mid..n)),
        ) else {
            return None;
        };
        let shift = mt - mr;
        let returning = self.returning(c, tail, mr);
        let steady = !returning && st <= shift.abs() / 2.0 && (m2 - m1).abs() <= shift.abs() / 4.0;
        if !returning && !steady {
            return None;
        }
        let level = steady.then_some(ShiftedColumn {
            column: c,
            before: mr,
            after: mt,
            z: shift / s,
        });
        let left = LeftOut {
            column: c,
            level: mr,
            band: p.shift_z * s,
            side: shift.signum(),
        };
        Some((level, left))
    }

    /// Whether column `c` has come closer to `level` through the windows from `tail` on, on
    /// one side of it: the medians of their three thirds are each nearer than the one before
    /// (a column that jumps between two levels is not returning, whatever its halves say).
    fn returning(&self, c: usize, tail: usize, level: f64) -> bool {
        let n = self.ring.len();
        let third = (n - tail) / 3;
        if third == 0 {
            return false;
        }
        let parts = [tail..tail + third, tail + third..n - third, n - third..n];
        let Some(devs) = parts
            .into_iter()
            .map(|r| median(self.col(c, r)).map(|m| m - level))
            .collect::<Option<Vec<f64>>>()
        else {
            return false;
        };
        devs.iter().all(|d| d.signum() == devs[0].signum())
            && devs.windows(2).all(|w| w[1].abs() < w[0].abs())
    }

    /// The split maximizing Σ_c p(N−p)/N · (mean_before − mean_after)² / σ_c².
    fn change_point(&self, cand: &[(usize, f64)]) -> usize {
        let p = self.params;
        let n = self.ring.len();
        let mut stat = vec![0.0; n + 1];
        for &(c, s) in cand {
            let vals: Vec<f64> = self
                .ring
                .iter()
                .map(|r| r.2.get(c).copied().unwrap_or(f64::NAN))
                .collect();
            let finite: Vec<f64> = vals.iter().copied().filter(|v| v.is_finite()).collect();
            let fill = finite.iter().sum::<f64>() / finite.len().max(1) as f64;
            let mut prefix = vec![0.0; n + 1];
            for (i, v) in vals.iter().enumerate() {
                prefix[i + 1] = prefix[i] + if v.is_finite() { *v } else { fill };
            }
            let total = prefix[n];
            for k in p.min_reference..=n - 2 {
                let before = prefix[k] / k as f64;
                let after = (total - prefix[k]) / (n - k) as f64;
                let w = (k * (n - k)) as f64 / n as f64;
                stat[k] += w * ((before - after) / s).powi(2);
            }
        }
        (p.min_reference..=n - 2)
            .max_by(|&a, &b| stat[a].total_cmp(&stat[b]).then(b.cmp(&a)))
            .unwrap_or(p.min_reference)
    }
}

#[cfg(test)]
mod tests;
