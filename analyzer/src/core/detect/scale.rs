//! Column standardization shared by the detectors.
//!
//! `Standard` is scikit-learn's `StandardScaler` (mean, population standard
//! deviation), the paper's literal choice. `Robust` uses the median and the
//! normal-consistent MAD, so the baseline's own anomalies and heavy-tailed
//! features do not inflate the scale that later hides them.

use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis};
use serde::{Deserialize, Serialize};

use super::{ColumnStatus, DetectError};

/// How columns are centred and scaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scaling {
    /// Mean and population standard deviation (scikit-learn `StandardScaler`).
    Standard,
    /// Median and 1.4826 × MAD; where the MAD is zero (a mostly flat column
    /// with rare moves), 1.2533 × the mean absolute deviation from the median.
    Robust,
    /// `Robust`, then each feature's residual off the workload's principal components (at
    /// most `max_rank`, only those above noise), robustly standardized: see
    /// [`crate::core::detect::residual`].
    Residual { max_rank: usize },
    /// The default: median centre, and on each side of it the larger of the normal-consistent
    /// MAD and the spread of the baseline's *bulk* on that side, `(reach − median) / 2.054`
    /// (2.054 = Φ⁻¹(0.98), so it is σ for normal data). The reach is the q98 (q2 below), or
    /// the level the baseline reached on [`RECURRING`] separate excursions if that is
    /// further. A value the bulk of the baseline reaches, or one it reached time and again,
    /// is within about 2 of the centre; a burst seen once or twice sets nothing.
    /// Deviations are linear up to |z| = [`Z_KNEE`] and logarithmic beyond ([`compress`]), so
    /// a larger load always scores higher. A column that moves in fewer than 2% of windows gets the sparse-column
    /// scale of `Robust`. No scale is below [`LEVEL_RESOLUTION`] of the median's magnitude.
    Bulk,
}

/// 1 / Φ⁻¹(3/4): makes the MAD a consistent estimate of σ for normal data.
const MAD_TO_SIGMA: f64 = 1.482_602_218_505_602;
/// √(π/2): makes the mean absolute deviation a consistent estimate of σ.
const MEAN_AD_TO_SIGMA: f64 = 1.253_314_137_315_500_3;
/// |z| beyond which deviations are compressed logarithmically (see [`compress`]).
pub const Z_KNEE: f64 = 10.0;
/// Quantile that bounds the bulk of a column on each side (`Scaling::Bulk`): 2% of the
/// baseline windows may lie beyond it without moving the scale.
pub const BULK_QUANTILE: f64 = 0.98;
/// `Scaling::Bulk`: least scale as a fraction of a column's baseline level. Host telemetry
/// drifts by a few percent without any fault (page cache, unevictable memory, the softirq
/// rates of a busy host); a move that small is never more than 1σ, however steady the
/// baseline was. Faults move what they touch by far more (a CPU from 5% to 100%, dirty
/// pages from megabytes to gigabytes, throughput by half).
pub const LEVEL_RESOLUTION: f64 = 0.02;
/// Φ⁻¹([`BULK_QUANTILE`]): the bulk's reach in σ for normal data.
const BULK_SIGMAS: f64 = 2.053_748_910_631_823;
/// A spread below this fraction of a column's magnitude is rounding noise.
const RELATIVE_NOISE: f64 = 1e-12;

/// The least scale of one column, known from what it measures rather than from the baseline.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Floor {
    /// No scale of the column is below this (0: none). A deviation smaller than the least
    /// change the column can show (one page, one event per second) is not evidence, however
    /// steady the baseline was: a write trickle of one page a second that pauses for a second
    /// is a deviation of one unit, not fifty of its baseline's spreads.
    pub scale: f64,
    /// Whether a column constant in the baseline is kept, with `scale`, so that its first move
    /// is seen (errors, drops and retransmissions are zero on a healthy host). Otherwise such a
    /// column stays out, as without a floor.
    pub keeps_constant: bool,
    /// With `keeps_constant`: a column that left its level in one excursion only is constant
    /// too, that excursion no measure of its spread. For a baseline that holds the windows it
    /// scores (`analyze`'s whole recording), where that excursion is the event being looked
    /// for; a trailing baseline keeps the move it saw as a known one.
    pub one_move_is_new: bool,
}

/// Least scales of a detector's columns, shared between detectors.
pub type Floors = std::sync::Arc<[Floor]>;

/// Fitted per-column centre and scale; only used columns are kept.
#[derive(Debug, Clone)]
pub struct Scaler {
    status: Vec<ColumnStatus>,
    used: Vec<usize>,
    center: Array1<f64>,
    scale: Array1<f64>,
    /// Per used column, for `Bulk` only: the scale below the centre (`scale` is the one above).
    scale_lo: Option<Array1<f64>>,
}

impl Scaler {
    /// Fits on the baseline; fails only when no column is usable.
    /// `Residual` scales as `Robust` here (the residual is the workload model's).
    pub fn fit(x: ArrayView2<f64>, scaling: Scaling) -> Result<Self, DetectError> {
        Self::fit_floored(x, scaling, None)
    }

    /// [`Scaler::fit`] with a least scale per column (`floors[j]`, see [`Floor`]): the
    /// smallest change the column can show, known from what it measures. Robust scalings only
    /// (the paper's `Standard` uses none).
    pub fn fit_floored(
        x: ArrayView2<f64>,
        scaling: Scaling,
        floors: Option<&[Floor]>,
    ) -> Result<Self, DetectError> {
        let floors = floors.filter(|f| f.len() == x.ncols() && scaling != Scaling::Standard);
        let n = x.nrows();
        let mut status = Vec::with_capacity(x.ncols());
        let (mut used, mut center, mut scale) = (Vec::new(), Vec::new(), Vec::new());
        let mut buf = Vec::with_capacity(n);
        let mut scratch = Vec::with_capacity(n);
        let bulk = scaling == Scaling::Bulk;
        let mut scale_lo = Vec::new();
        for (j, col) in x.axis_iter(Axis(1)).enumerate() {
            buf.clear();
            buf.extend(col.iter().copied().filter(|v| v.is_finite()));
            let bad = n - buf.len();
            if buf.is_empty() || bad * 2 > n {
                status.push(ColumnStatus::NonFinite { count: bad });
                continue;
            }
            if bulk {
                scratch.clear();
                scratch.extend_from_slice(&buf);
            }
            let (c, s, lo) = match scaling {
                Scaling::Standard => {
                    let (c, s) = mean_std(&buf);
                    (c, s, s)
                }
                Scaling::Robust | Scaling::Residual { .. } => {
                    let (c, s) = median_spread(&mut buf);
                    (c, s, s)
                }
                Scaling::Bulk => bulk_spread(&mut scratch, &mut buf, col),
            };
            let floor = floors.map_or(Floor::default(), |f| f[j]);
            // Left its level once only (`bulk_spread`).
            let (s, lo) = if lo.is_nan() {
                if floor.keeps_constant && floor.one_move_is_new && floor.scale > 0.0 {
                    (0.0, 0.0)
                } else {
                    scratch.clear();
                    scratch.extend(col.iter().copied().filter(|v| v.is_finite()));
                    let (_, s) = median_spread(&mut scratch);
                    let s = s.max(LEVEL_RESOLUTION * c.abs());
                    (s, s)
                }
            } else {
                (s, lo)
            };
            let moved = s > RELATIVE_NOISE * c.abs();
            let (s, lo) = if floor.scale > 0.0
                && floor.scale.is_finite()
                && (moved || floor.keeps_constant)
            {
                (s.max(floor.scale), lo.max(floor.scale))
            } else {
                (s, lo)
            };
            // A column that only ever moves upward (a rate resting at zero) has no spread
            // below its centre: a fall is measured with the spread above it.
            let lo = if lo > RELATIVE_NOISE * c.abs() { lo } else { s };
            // Written so that a NaN spread (overflowing sums) also counts as unusable.
            let spread_ok = s.is_finite() && s > RELATIVE_NOISE * c.abs();
            if !spread_ok {
                status.push(ColumnStatus::Constant);
                continue;
            }
            status.push(ColumnStatus::Used);
            used.push(j);
            center.push(c);
            scale.push(s);
            scale_lo.push(lo);
        }
        if used.is_empty() {
            return Err(DetectError::NoUsableFeature { total: x.ncols() });
        }
        Ok(Scaler {
            status,
            used,
            center: Array1::from(center),
            scale: Array1::from(scale),
            scale_lo: bulk.then(|| Array1::from(scale_lo)),
        })
    }

    /// Per original column: used or why not.
    pub fn status(&self) -> &[ColumnStatus] {
        &self.status
    }

    /// Original indices of the used columns, in order.
    pub fn used(&self) -> &[usize] {
        &self.used
    }

    /// Number of original columns.
    pub fn n_features(&self) -> usize {
        self.status.len()
    }

    /// z of used column `k` (an index into [`Scaler::used`]) for raw value `v`;
    /// non-finite values give 0 (the baseline centre); |z| beyond [`Z_KNEE`] is compressed
    /// ([`compress`]).
    #[inline]
    pub fn z(&self, k: usize, v: f64) -> f64 {
        if !v.is_finite() {
            return 0.0;
        }
        let d = v - self.center[k];
        if let Some(lo) = &self.scale_lo {
            let s = if d >= 0.0 { self.scale[k] } else { lo[k] };
            return compress(d / s);
        }
        compress(d / self.scale[k])
    }

    /// Sets to 0 each used column of `v` (a centred or residual row of the used columns) whose
    /// raw input in `x` is not finite. A channel without samples in a window (a series that
    /// vanished) then sits exactly at the detector's centre and adds no deviation of its own.
    /// (Its z alone is 0, the scaler's centre, which a detector's own centring, the mean of the
    /// baseline's z, would still shift.) Its residual off the components is what the present
    /// features predict for it, so a PCA residual can still lean on it: attribution leaves it
    /// out by name (`core::attribution::by_channel`).
    pub fn zero_missing(&self, x: ArrayView1<f64>, mut v: ndarray::ArrayViewMut1<f64>) {
        for (&j, o) in self.used.iter().zip(v.iter_mut()) {
            if !x[j].is_finite() {
                *o = 0.0;
            }
        }
    }

    /// [`Scaler::zero_missing`] for each row of `x` and of `v`.
    pub fn zero_missing_rows(&self, x: ArrayView2<f64>, mut v: ndarray::ArrayViewMut2<f64>) {
        for (row, out) in x.rows().into_iter().zip(v.rows_mut()) {
            self.zero_missing(row, out);
        }
    }

    /// Standardized used columns of one row, written into `out`.
    pub fn transform_row_into(&self, x: ArrayView1<f64>, out: &mut [f64]) {
        for (k, (&j, o)) in self.used.iter().zip(out.iter_mut()).enumerate() {
            *o = self.z(k, x[j]);
        }
    }

    /// Standardized used columns of one row.
    pub fn transform_row(&self, x: ArrayView1<f64>) -> Array1<f64> {
        let mut out = Array1::zeros(self.used.len());
        self.transform_row_into(x, out.as_slice_mut().expect("fresh array is contiguous"));
        out
    }

    /// Standardized used columns of every row (rows × used columns).
    pub fn transform(&self, x: ArrayView2<f64>) -> Array2<f64> {
        let mut out = Array2::zeros((x.nrows(), self.used.len()));
        for (row, mut o) in x.rows().into_iter().zip(out.rows_mut()) {
            self.transform_row_into(row, o.as_slice_mut().expect("row of a standard array"));
        }
        out
    }
}

/// Order-preserving compression of extreme deviations: identity up to |z| = [`Z_KNEE`], then
/// `knee · (1 + ln(|z| / knee))`. A hard cap would make every extreme window equal: once the
/// baseline itself holds one capped feature (a rare burst in an otherwise flat column), a far
/// larger fault scores no higher than the threshold. Compressed, a deviation a thousand times
/// larger still scores higher (1e6 → 125, 3e9 → 205), and sums over thousands of features stay
/// finite. An overflowing division (1e308 / 1e-3) counts as the largest finite deviation.
#[inline]
pub fn compress(z: f64) -> f64 {
    let a = if z.is_finite() { z.abs() } else { f64::MAX };
    if a <= Z_KNEE {
        return z;
    }
    (Z_KNEE * (1.0 + (a / Z_KNEE).ln())).copysign(z)
}

fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// `Scaling::Bulk`: the median, and the scale above and below it (see the variant).
/// `values` and `buf` each hold the column's finite values (both are reordered); `col` the
/// column in time order.
fn bulk_spread(values: &mut [f64], buf: &mut [f64], col: ArrayView1<f64>) -> (f64, f64, f64) {
    let (med, mad) = median_spread(buf);
    let (hi, lo) = (
        quantile_by_selection(values, BULK_QUANTILE),
        quantile_by_selection(values, 1.0 - BULK_QUANTILE),
    );
    // A level the baseline reached on `RECURRING` separate occasions is routine, however
    // few windows each lasted (a write-back every few minutes): the bulk reaches it too.
    let hi = hi.max(recurring_peak(col, hi, 1.0).unwrap_or(hi));
    let lo = lo.min(recurring_peak(col, lo, -1.0).unwrap_or(lo));
    let up = (hi - med) / BULK_SIGMAS;
    let down = (med - lo) / BULK_SIGMAS;
    if mad.max(up).max(down).is_nan() || mad.max(up).max(down) <= 0.0 {
        return (med, 0.0, 0.0); // never moved: constant, left out by the caller
    }
    // A column that left its level once only — an error counter at zero but for one burst —
    // has no known move: in `analyze` that one move is the event itself, and scaled by it,
    // a link's first errors read as 1σ. Marked by a NaN lower scale: the caller scores it
    // with its least scale where the floor says so (`Floor::one_move_is_new`: event channels
    // in `analyze`), and otherwise by that one move.
    if up <= 0.0 && down <= 0.0 && excursions(col, med) == 1 {
        return (med, 0.0, f64::NAN);
    }
    let level = LEVEL_RESOLUTION * med.abs();
    (med, mad.max(up).max(level), mad.max(down).max(level))
}

/// The `q` quantile of the non-empty `v` with linear interpolation between the two order
/// statistics around it (numpy's default), found by selection rather than a sort: the fit
/// takes two quantiles of every column of the baseline, and sorting each column was the
/// largest cost of fitting a wide host. Reorders `v`.
fn quantile_by_selection(v: &mut [f64], q: f64) -> f64 {
    let pos = q * (v.len() - 1) as f64;
    let (i, f) = (pos.floor() as usize, pos.fract());
    let (_, &mut below, above) = v.select_nth_unstable_by(i, f64::total_cmp);
    let next = above
        .iter()
        .copied()
        .min_by(f64::total_cmp)
        .unwrap_or(below);
    below + (next - below) * f
}

/// Runs of consecutive finite values of `col` away from `level`.
fn excursions(col: ArrayView1<f64>, level: f64) -> usize {
    let mut runs = 0;
    let mut inside = false;
    for &v in col.iter() {
        let away = v.is_finite() && v != level;
        if away && !inside {
            runs += 1;
        }
        inside = away;
    }
    runs
}

/// Separate excursions a level must have reached to count as routine (`Scaling::Bulk`).
pub const RECURRING: usize = 3;

/// The peak of the [`RECURRING`]-th largest excursion of `col` (in time order) beyond
/// `level`, upward for `sign` 1 and downward for −1: an excursion is a run of consecutive
/// finite values beyond `level`. `None` with fewer excursions.
fn recurring_peak(col: ArrayView1<f64>, level: f64, sign: f64) -> Option<f64> {
    let mut peaks: Vec<f64> = Vec::new();
    let mut current: Option<f64> = None;
    for &v in col.iter() {
        if v.is_finite() && sign * (v - level) > 0.0 {
            current = Some(current.map_or(v, |p: f64| if sign * (v - p) > 0.0 { v } else { p }));
        } else if let Some(p) = current.take() {
            peaks.push(p);
        }
    }
    peaks.extend(current);
    if peaks.len() < RECURRING {
        return None;
    }
    // The RECURRING-th largest excursion (lowest, below the level).
    let (_, &mut peak, _) =
        peaks.select_nth_unstable_by(RECURRING - 1, |a, b| (sign * b).total_cmp(&(sign * a)));
    Some(peak)
}

/// Median and a robust σ estimate; reorders `v`.
pub(crate) fn median_spread(v: &mut [f64]) -> (f64, f64) {
    let med = median(v);
    for x in v.iter_mut() {
        *x = (*x - med).abs();
    }
    let mad = median(v) * MAD_TO_SIGMA;
    if mad > 0.0 {
        return (med, mad);
    }
    let mean_ad = v.iter().sum::<f64>() / v.len() as f64;
    (med, sparse_floor(med, mean_ad * MEAN_AD_TO_SIGMA, v))
}

/// Scale of a column that sits at one value in most baseline windows (MAD zero) and moves
/// only now and then. The mean absolute deviation of such a column can be tiny — a page of
/// Unevictable memory on a multi-gigabyte level, averaged into one window in a thousand —
/// and would turn the next ordinary move into a "z" of millions. Two floors keep such
/// columns honest:
/// - a move as large as the ones the baseline already showed (the median of its non-zero
///   deviations) is a 3σ event, not an extreme one: those moves are known to happen;
/// - a change below 0.1% of the column's usual level is not resolved by host telemetry
///   (rounding of averaged gauges), so it is never more than 1σ.
///
/// `dev` holds the absolute deviations from the median (it is reordered).
fn sparse_floor(med: f64, spread: f64, dev: &mut [f64]) -> f64 {
    const KNOWN_MOVE_SIGMAS: f64 = 3.0;
    const LEVEL_RESOLUTION: f64 = 1e-3;
    if spread <= 0.0 {
        // Never moved in the baseline: the column is constant and is left out by the caller.
        return spread;
    }
    let mut nonzero: Vec<f64> = dev.iter().copied().filter(|d| *d > 0.0).collect();
    let typical_move = if nonzero.is_empty() {
        0.0
    } else {
        median(&mut nonzero)
    };
    spread
        .max(typical_move / KNOWN_MOVE_SIGMAS)
        .max(LEVEL_RESOLUTION * med.abs())
}

// Median of a non-empty slice; reorders it (see `crate::core::stats`).
pub(crate) use crate::core::stats::median;

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn quantiles_by_selection_are_the_sorted_ones() {
        // Ties, negative zero, extremes: the same value as interpolating the sorted column.
        let mut seed = 11u64;
        for n in [1usize, 2, 3, 50, 1800] {
            let v: Vec<f64> = (0..n)
                .map(|i| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    match i % 7 {
                        0 => 0.0,
                        1 => -0.0,
                        2 => 1e300,
                        _ => ((seed >> 33) % 100) as f64 - 50.0,
                    }
                })
                .collect();
            let mut sorted = v.clone();
            sorted.sort_unstable_by(f64::total_cmp);
            for q in [0.0, 0.02, 0.25, 0.5, 0.98, 1.0] {
                let pos = q * (n - 1) as f64;
                let (i, f) = (pos.floor() as usize, pos.fract());
                let want = sorted[i] + (sorted[(i + 1).min(n - 1)] - sorted[i]) * f;
                let got = quantile_by_selection(&mut v.clone(), q);
                assert_eq!(got.to_bits(), want.to_bits(), "n {n}, q {q}");
            }
        }
    }

    #[test]
    fn extreme_deviations_keep_their_order() {
        assert_eq!(compress(3.0), 3.0);
        assert_eq!(compress(-10.0), -10.0);
        let (a, b) = (compress(1e6), compress(3e9));
        assert!(a < b && b < 250.0, "{a} {b}");
        assert!((compress(-1e6) + a).abs() < 1e-12);
        assert!(compress(f64::INFINITY).is_finite() && compress(f64::NEG_INFINITY) < 0.0);
    }

    #[test]
    fn sparse_columns_get_a_scale_from_the_moves_they_showed() {
        // 999 windows at 0, one at 4096 bytes: another 4096-byte move is about 3σ, not 800σ.
        let mut v = vec![0.0; 999];
        v.push(4096.0);
        let (c, s) = median_spread(&mut v);
        assert_eq!(c, 0.0);
        assert!((s - 4096.0 / 3.0).abs() < 1e-9, "scale {s}");
        // A level of 5e7 bytes that moved by one page in one window: a one-page move is
        // below the level's resolution, so the scale is 0.1% of the level.
        let mut v = vec![5e7; 999];
        v.push(5e7 + 4096.0 / 30.0);
        let (c, s) = median_spread(&mut v);
        assert_eq!(c, 5e7);
        assert!((s - 5e4).abs() < 1e-6, "scale {s}");
        // A column with a real spread keeps its MAD.
        let mut v: Vec<f64> = (0..101).map(f64::from).collect();
        let (_, s) = median_spread(&mut v);
        assert!((s - 25.0 * MAD_TO_SIGMA).abs() < 1e-9);
    }

    #[test]
    fn bad_columns_are_left_out_with_a_reason() {
        let nan = f64::NAN;
        let x = array![
            [1.0, 5.0, nan, 1e9, 2.0],
            [2.0, 5.0, nan, 1e9 + 1e-6, nan],
            [3.0, 5.0, 1.0, 1e9, 4.0],
            [4.0, 5.0, nan, 1e9, 5.0],
        ];
        let s = Scaler::fit(x.view(), Scaling::Standard).unwrap();
        assert_eq!(s.used(), &[0, 4]);
        assert_eq!(s.status()[1], ColumnStatus::Constant);
        assert_eq!(s.status()[2], ColumnStatus::NonFinite { count: 3 });
        // A 1e-6 jitter on 1e9 is 4e-16 relative: rounding noise.
        assert_eq!(s.status()[3], ColumnStatus::Constant);
        let z = s.transform_row(array![nan, 0.0, 0.0, 0.0, f64::INFINITY].view());
        assert_eq!(z.to_vec(), vec![0.0, 0.0]);
    }

    #[test]
    fn robust_scale_ignores_outliers_and_handles_zero_mad() {
        let x = array![
            [1.0, 0.0],
            [2.0, 0.0],
            [3.0, 0.0],
            [4.0, 0.0],
            [1000.0, 8.0]
        ];
        let s = Scaler::fit(x.view(), Scaling::Robust).unwrap();
        assert_eq!(s.used(), &[0, 1]);
        assert!((s.z(0, 3.0)).abs() < 1e-12);
        assert!((s.z(0, 4.0) - 1.0 / MAD_TO_SIGMA).abs() < 1e-12);
        // Column 1: MAD 0 and one move of 8 in the baseline: another move of 8 is 3σ
        // (the mean absolute deviation, 1.6, would have made it 4σ).
        assert!((s.z(1, 8.0) - 3.0).abs() < 1e-12);
    }

    #[test]
    fn a_floor_keeps_a_column_that_was_constant_in_the_baseline() {
        // Column 1 counts events: none in the baseline.
        let x = array![[1.0, 0.0], [2.0, 0.0], [3.0, 0.0], [4.0, 0.0]];
        let plain = Scaler::fit(x.view(), Scaling::Robust).unwrap();
        assert_eq!(plain.status()[1], ColumnStatus::Constant);
        let event = Floor {
            scale: 1.0,
            keeps_constant: true,
            one_move_is_new: false,
        };
        let floors = [Floor::default(), event];
        let floored = Scaler::fit_floored(x.view(), Scaling::Robust, Some(&floors)).unwrap();
        assert_eq!(floored.used(), &[0, 1]);
        // Three events are three units of the floor; none is nothing.
        assert!((floored.z(1, 3.0) - 3.0).abs() < 1e-12);
        assert_eq!(floored.z(1, 0.0), 0.0);
        // A resolution that does not keep constant columns leaves the column out.
        let resolution = [
            Floor::default(),
            Floor {
                keeps_constant: false,
                ..event
            },
        ];
        let plain_again =
            Scaler::fit_floored(x.view(), Scaling::Robust, Some(&resolution)).unwrap();
        assert_eq!(plain_again.used(), &[0]);
        // The paper's standard scaling keeps its rule.
        let standard = Scaler::fit_floored(x.view(), Scaling::Standard, Some(&floors)).unwrap();
        assert_eq!(standard.status()[1], ColumnStatus::Constant);
    }

    #[test]
    fn a_trickle_that_pauses_is_one_unit_of_its_resolution_away() {
        // A window minimum of a write rate: one 4 KiB page a second (4551 B/s as a 1 s rate
        // at 100 ms, with Prometheus' extrapolation), steady to a few bytes for 1000 windows.
        // Then a window in which no page was written for a second: a minimum of 0.
        let col: Vec<f64> = (0..1000).map(|i| 4546.0 + (i % 3) as f64 * 5.0).collect();
        let x = Array2::from_shape_vec((1000, 1), col).unwrap();
        let bare = Scaler::fit(x.view(), Scaling::Bulk).unwrap();
        // Its own spread is the 2% level floor (91 B/s): the pause is 50σ, compressed to 26.
        assert!(bare.z(0, 0.0) < -25.0, "{}", bare.z(0, 0.0));
        let page = [Floor {
            scale: 4096.0,
            keeps_constant: false,
            one_move_is_new: false,
        }];
        let floored = Scaler::fit_floored(x.view(), Scaling::Bulk, Some(&page)).unwrap();
        let z = floored.z(0, 0.0);
        assert!((-1.2..-1.0).contains(&z), "{z}");
        // A burst of a hundred pages a second is still far out.
        assert!(floored.z(0, 409_600.0) > 30.0);
    }

    #[test]
    fn bulk_scale_follows_each_side_of_the_baseline() {
        // 1000 windows: a level of 100 ± 1, with a routine excursion to 130 in 10% of them
        // and one burst to 500 over 1% (ten windows in a row).
        let mut col: Vec<f64> = (0..1000)
            .map(|i| 100.0 + ((i * 7919) % 21) as f64 / 10.0 - 1.0)
            .collect();
        for v in col.iter_mut().step_by(10) {
            *v = 130.0;
        }
        for v in &mut col[505..515] {
            *v = 500.0;
        }
        let x = Array2::from_shape_vec((1000, 1), col).unwrap();
        let s = Scaler::fit(x.view(), Scaling::Bulk).unwrap();
        // The routine is within about 2σ above; the burst set nothing.
        assert!(
            (s.z(0, 130.0) - BULK_SIGMAS).abs() < 0.1,
            "{}",
            s.z(0, 130.0)
        );
        // Below, the level's own spread (floored at 2% of it): a fall to 90 is 5σ.
        assert!((s.z(0, 90.0) + 5.0).abs() < 0.5, "{}", s.z(0, 90.0));
        // A load four times the routine's excursion scores about four times higher, before
        // the logarithmic compression past |z| = 10 (which keeps the order).
        assert!(s.z(0, 220.0) > s.z(0, 130.0) * 2.5);
        assert!(s.z(0, 2000.0) > s.z(0, 600.0));
    }

    #[test]
    fn a_level_reached_three_times_is_routine_and_once_is_not() {
        let base = |events: &[usize]| {
            let mut col: Vec<f64> = (0..1800).map(|i| 10.0 + (i % 7) as f64 * 0.1).collect();
            for &e in events {
                for v in &mut col[e..e + 4] {
                    *v = 60.0; // a write-back, four windows long
                }
            }
            Array2::from_shape_vec((1800, 1), col).unwrap()
        };
        // Six write-backs in half an hour (1.3% of the windows): the next is about 2σ.
        let routine = base(&[100, 400, 700, 1000, 1300, 1600]);
        let s = Scaler::fit(routine.view(), Scaling::Bulk).unwrap();
        assert!((s.z(0, 60.0) - BULK_SIGMAS).abs() < 0.1, "{}", s.z(0, 60.0));
        // Seen once or twice, it sets nothing: the next is far out.
        let once = base(&[100, 900]);
        let s = Scaler::fit(once.view(), Scaling::Bulk).unwrap();
        assert!(s.z(0, 60.0) > 10.0, "{}", s.z(0, 60.0));
    }

    #[test]
    fn all_bad_is_an_error() {
        let x = array![[1.0, f64::NAN], [1.0, f64::NAN]];
        assert_eq!(
            Scaler::fit(x.view(), Scaling::Robust).unwrap_err(),
            DetectError::NoUsableFeature { total: 2 }
        );
    }

    #[test]
    fn a_column_that_moved_once_is_scaled_by_its_floor_not_by_that_move() {
        // 1,000 windows of an error count at zero, one burst of 15 windows at 60: the burst
        // is the only move, so it is not "a move known to happen" (z would be 3).
        let mut v = vec![0.0; 1000];
        v[500..515].iter_mut().for_each(|x| *x = 60.0);
        let x = ndarray::Array2::from_shape_vec((1000, 1), v.clone()).unwrap();
        let floor = [Floor {
            scale: 1.0,
            keeps_constant: true,
            one_move_is_new: true,
        }];
        let s = Scaler::fit_floored(x.view(), Scaling::Bulk, Some(&floor)).unwrap();
        assert!(s.z(0, 60.0) > 20.0, "{}", s.z(0, 60.0));
        // A column that keeps no constant (a dynamic channel) is scaled by that move, as
        // before: left out, it would hide the next.
        let s = Scaler::fit_floored(x.view(), Scaling::Bulk, None).unwrap();
        assert!((s.z(0, 60.0) - 3.0).abs() < 1e-9, "{}", s.z(0, 60.0));
        // Three bursts are routine: scaled by their typical move.
        for start in [100, 300] {
            v[start..start + 15].iter_mut().for_each(|x| *x = 60.0);
        }
        let x = ndarray::Array2::from_shape_vec((1000, 1), v).unwrap();
        let s = Scaler::fit_floored(x.view(), Scaling::Bulk, Some(&floor)).unwrap();
        assert!(s.z(0, 60.0) <= 3.0 + 1e-9, "{}", s.z(0, 60.0));
    }
}
