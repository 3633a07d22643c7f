//! Heavy-tail-aware standardization of one column's deviations from its centre.
//!
//! Host telemetry features are often heavy-tailed: the variance of a disk's read rate is zero
//! in most windows and spans four decades in the rest, the skewness of a quantized counter
//! jumps between 0 and √n. Divided by a robust scale fitted on the bulk, the baseline's own
//! largest values become "z = 150", every quiet window holds a few of them, and a real fault
//! (a CPU saturated, z = 30 on a dense column) scores below the threshold those set.
//!
//! So a deviation is measured against what the baseline itself showed, per side:
//! - inside the baseline's range, |z| is at most the normal score of the same empirical
//!   quantile (the baseline maximum of n windows maps to Φ⁻¹(1 − 0.5/n), 2.4 for a minute
//!   of windows, 3.5 for half an hour); in the bulk of a well-behaved column the linear z is
//!   the smaller one, so nothing changes there;
//! - beyond the baseline's range, z grows linearly again from there, at the pace of the
//!   baseline's own upper tail (the distance from its 1σ quantile to its extreme, per σ of
//!   normal score) or of the robust scale, whichever is slower.
//!
//! A value far outside everything the baseline showed still scores far higher than anything
//! in it; a value the baseline already reached scores like the rare value it is, not like a
//! fault.

/// Normal scores of the quantiles used as knots on each side: the median, 1σ, 2σ.
const KNOT_SCORES: [f64; 3] = [0.0, 1.0, 2.0];
/// Φ(1) and Φ(2): the probabilities of the 1σ and 2σ knots.
const KNOT_PROBS: [f64; 3] = [0.5, 0.841_344_746_068_542_9, 0.977_249_868_051_820_8];

/// One side of a column: knots (distance from the centre, normal score), ascending in both,
/// the last one the baseline's extreme, and the scale beyond it.
#[derive(Debug, Clone, PartialEq)]
pub struct Side {
    knots: Vec<(f64, f64)>,
    beyond_scale: f64,
}

/// Both sides of a column.
#[derive(Debug, Clone, PartialEq)]
pub struct Tails {
    upper: Side,
    lower: Side,
}

impl Tails {
    /// From the column's finite baseline values sorted ascending, its centre and its robust
    /// scale (`scale > 0`).
    pub fn fit(sorted: &[f64], center: f64, scale: f64) -> Tails {
        let n = sorted.len();
        let extreme = probit(1.0 - 0.5 / n as f64);
        let side = |quantile: &dyn Fn(f64) -> f64, sign: f64| {
            let mut knots = Vec::with_capacity(KNOT_SCORES.len() + 1);
            for (&z, &p) in KNOT_SCORES.iter().zip(&KNOT_PROBS) {
                // Only quantiles inside the sample (the 2σ one needs 22 windows).
                if z < extreme {
                    knots.push(((sign * (quantile(p) - center)).max(0.0), z));
                }
            }
            knots.push(((sign * (quantile(1.0) - center)).max(0.0), extreme));
            // Ascending distances (quantiles are monotone; `max(0)` keeps the median's side).
            for i in 1..knots.len() {
                knots[i].0 = knots[i].0.max(knots[i - 1].0);
            }
            let (d_ext, _) = knots[knots.len() - 1];
            let (d_one, _) = knots[1.min(knots.len() - 1)];
            let tail = if extreme > 1.0 {
                (d_ext - d_one) / (extreme - 1.0)
            } else {
                0.0
            };
            Side {
                knots,
                beyond_scale: scale.max(tail),
            }
        };
        let upper = side(&|p| quantile_sorted(sorted, p), 1.0);
        let lower = side(&|p| quantile_sorted(sorted, 1.0 - p), -1.0);
        Tails { upper, lower }
    }

    /// Standardized deviation of `d = value − centre` given the linear `z = d / scale`.
    #[inline]
    pub fn z(&self, d: f64, linear: f64) -> f64 {
        if d >= 0.0 {
            self.upper.z(d, linear)
        } else {
            -self.lower.z(-d, -linear)
        }
    }
}

impl Side {
    /// `d ≥ 0`, `linear ≥ 0`.
    #[inline]
    fn z(&self, d: f64, linear: f64) -> f64 {
        let (d_ext, _) = self.knots[self.knots.len() - 1];
        if d > d_ext {
            let at_extreme = self.empirical(d_ext).min(linear * d_ext / d);
            return at_extreme + (d - d_ext) / self.beyond_scale;
        }
        linear.min(self.empirical(d))
    }

    /// The normal score interpolated between knots, for `0 ≤ d ≤ extreme`.
    #[inline]
    fn empirical(&self, d: f64) -> f64 {
        let mut prev = self.knots[0];
        for &k in &self.knots[1..] {
            if d <= k.0 {
                if k.0 <= prev.0 {
                    // Tied knots (a column sitting on one value): the lower score.
                    return prev.1;
                }
                return prev.1 + (k.1 - prev.1) * (d - prev.0) / (k.0 - prev.0);
            }
            prev = k;
        }
        prev.1
    }
}

/// numpy's linear-interpolation quantile of an ascending slice: see [`crate::core::stats`].
pub use crate::core::stats::quantile_sorted;

/// Φ⁻¹(p) for p in (0, 1): Acklam's rational approximation (relative error below 1.2e-9),
/// precise far beyond what a knot's normal score needs.
pub fn probit(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const LOW: f64 = 0.024_25;
    let p = p.clamp(f64::MIN_POSITIVE, 1.0 - f64::EPSILON);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - LOW {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probit_matches_known_quantiles() {
        assert!(probit(0.5).abs() < 1e-9);
        assert!((probit(KNOT_PROBS[1]) - 1.0).abs() < 1e-8);
        assert!((probit(KNOT_PROBS[2]) - 2.0).abs() < 1e-8);
        assert!((probit(0.001) + 3.090_232_306_167_813_5).abs() < 1e-8);
        assert!((probit(0.999) - 3.090_232_306_167_813_5).abs() < 1e-8);
    }

    fn sorted(mut v: Vec<f64>) -> Vec<f64> {
        v.sort_by(f64::total_cmp);
        v
    }

    #[test]
    fn a_heavy_tail_seen_in_the_baseline_is_not_extreme() {
        // 60 windows: 54 at zero, bursts of 1e3 … 1e6 in the rest, robust scale 1e3.
        let mut v = vec![0.0; 54];
        v.extend([1e3, 5e3, 2e4, 1e5, 4e5, 1e6]);
        let t = Tails::fit(&sorted(v), 0.0, 1e3);
        // The baseline's largest burst scores like the maximum of 60 windows (≈ 2.4), not 1000.
        let at_max = t.z(1e6, 1e3);
        assert!((2.0..2.5).contains(&at_max), "{at_max}");
        // Twice the largest burst is a little more; a hundred times is far more.
        let twice = t.z(2e6, 2e3);
        let far = t.z(1e8, 1e5);
        assert!(twice > at_max && twice < 5.0, "{twice}");
        assert!(far > 50.0, "{far}");
    }

    #[test]
    fn a_dense_column_keeps_its_linear_z_and_far_values_stay_far() {
        // A quiet CPU's utilization: normal around 0.02 with σ = 0.004 (its quantiles).
        let v: Vec<f64> = (0..60)
            .map(|i| 0.02 + 0.004 * probit((i as f64 + 0.5) / 60.0))
            .collect();
        let t = Tails::fit(&v, 0.02, 0.004);
        // In the bulk the linear z is kept (up to the knots' interpolation).
        assert!((t.z(0.002, 0.5) - 0.5).abs() < 0.03, "{}", t.z(0.002, 0.5));
        assert!((t.z(0.008, 2.0) - 2.0).abs() < 0.1, "{}", t.z(0.008, 2.0));
        // A saturated CPU is far beyond anything seen.
        let busy = t.z(0.98, 0.98 / 0.004);
        assert!(busy > 50.0, "{busy}");
        // Symmetric below.
        assert!((t.z(-0.002, -0.5) + 0.5).abs() < 0.03);
        assert!(t.z(-0.5, -0.5 / 0.004) < -20.0);
        // Monotone throughout.
        let mut last = f64::NEG_INFINITY;
        for i in -100..=100 {
            let d = i as f64 * 0.002;
            let z = t.z(d, d / 0.004);
            assert!(z >= last, "not monotone at {d}");
            last = z;
        }
    }

    #[test]
    fn a_short_baseline_uses_the_knots_it_has() {
        // Five windows: the maximum is the 90th percentile's normal score (1.28), no 2σ knot;
        // beyond it, the pace of the upper tail (from the 1σ quantile, 4.37, to 5).
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        let t = Tails::fit(&v, 3.0, 1.0);
        let extreme = probit(0.9);
        assert!((t.z(2.0, 2.0) - extreme).abs() < 1e-9);
        let one_sigma = quantile_sorted(&v, KNOT_PROBS[1]) - 3.0;
        let pace = (2.0 - one_sigma) / (extreme - 1.0);
        assert!((t.z(10.0, 10.0) - (extreme + 8.0 / pace)).abs() < 1e-9);
    }
}
