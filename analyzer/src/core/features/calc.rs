//! tsfresh's feature calculators on one series, computed the way numpy, pandas and scipy
//! compute them so values agree to rounding (tsfresh 0.21
//! `tsfresh/feature_extraction/feature_calculators.py`):
//!
//! | feature | tsfresh | computed as |
//! | --- | --- | --- |
//! | mean, sum_values | `np.mean`, `np.sum` | numpy's pairwise sum ([`np_sum`]) |
//! | variance, standard_deviation | `np.var`, `np.std` | two passes, pairwise sums, `/ n` |
//! | skewness, kurtosis | `pd.Series.skew/kurtosis` | central moments of deviations from the first value, bias-adjusted (G1, G2); NaN below 3 / 4 samples or with zero spread |
//! | linear_trend | `scipy.stats.linregress(range(n), x)` | `np.cov(bias=1)` moments; NaN for n ≤ 1 |
//! | autocorrelation lag 1 | own code | NaN when `np.isclose(var, 0)`, i.e. var ≤ 1e-8 |
//! | mean_abs_change | `np.mean(np.abs(np.diff(x)))` | pairwise sum; NaN for n ≤ 1 |
//!
//! Why several short passes rather than one fused pass of raw power sums: agreement with
//! numpy to rounding needs numpy's order of operations (mean first, then deviations), and
//! raw sums (`E[x²] − E[x]²`) lose every digit on a series like 1e12 ± 1. The passes run
//! over one window's ~30 values while they sit in L1 and allocate nothing: the whole set
//! costs about 0.13 ms for 700 channels (`benches/features.rs`).

/// numpy's `add.reduce` over a contiguous float64 array (`pairwise_sum` in
/// `numpy/_core/src/umath/loops_utils.h.src`): 8 interleaved partial sums for blocks of
/// up to 128, halves above. Same order, so the same rounding as `np.sum`.
#[inline]
pub fn np_sum(n: usize, f: impl Fn(usize) -> f64 + Copy) -> f64 {
    np_sum_from(0, n, f)
}

fn np_sum_from(start: usize, n: usize, f: impl Fn(usize) -> f64 + Copy) -> f64 {
    if n < 8 {
        let mut r = 0.0;
        for i in start..start + n {
            r += f(i);
        }
        r
    } else if n <= 128 {
        let mut r = [0.0f64; 8];
        for (j, rj) in r.iter_mut().enumerate() {
            *rj = f(start + j);
        }
        let full = n - n % 8;
        let mut i = 8;
        while i < full {
            for (j, rj) in r.iter_mut().enumerate() {
                *rj += f(start + i + j);
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        while i < n {
            res += f(start + i);
            i += 1;
        }
        res
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        np_sum_from(start, n2, f) + np_sum_from(start + n2, n - n2, f)
    }
}

/// Every non-ADF dynamic feature of one series of finite values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    pub mean: f64,
    pub variance: f64,
    pub standard_deviation: f64,
    pub minimum: f64,
    pub maximum: f64,
    pub skewness: f64,
    pub kurtosis: f64,
    pub slope: f64,
    pub intercept: f64,
    pub rvalue: f64,
    pub autocorrelation_lag_1: f64,
    pub mean_abs_change: f64,
    pub sum_values: f64,
}

impl Stats {
    /// All features of `x`; an empty series gives NaN everywhere except `sum_values = 0`
    /// (`np.sum([])`).
    pub fn of(x: &[f64]) -> Stats {
        let n = x.len();
        let nf = n as f64;
        let mut minimum = f64::NAN;
        let mut maximum = f64::NAN;
        if let Some(&first) = x.first() {
            (minimum, maximum) = (first, first);
            for &v in x {
                minimum = minimum.min(v);
                maximum = maximum.max(v);
            }
        }
        let sum_values = np_sum(n, |i| x[i]);
        // A constant series: its mean is the value itself (numpy's rounded sum may miss it
        // by an ulp, which then shows as a variance of 1e-34: see the features docs).
        let mean = if n > 0 && minimum == maximum {
            minimum
        } else {
            sum_values / nf
        };
        let variance = np_sum(n, |i| {
            let d = x[i] - mean;
            d * d
        }) / nf;
        let (skewness, kurtosis) = pandas_skew_kurt(x);
        let (slope, intercept, rvalue) = linregress(x, mean);
        let autocorrelation_lag_1 = if n < 1 || variance.abs() <= 1e-8 {
            f64::NAN
        } else {
            let s = np_sum(n - 1, |i| (x[i] - mean) * (x[i + 1] - mean));
            s / ((nf - 1.0) * variance)
        };
        let mean_abs_change = if n < 2 {
            f64::NAN
        } else {
            np_sum(n - 1, |i| (x[i + 1] - x[i]).abs()) / (nf - 1.0)
        };
        Stats {
            mean,
            variance,
            standard_deviation: variance.sqrt(),
            minimum,
            maximum,
            skewness,
            kurtosis,
            slope,
            intercept,
            rvalue,
            autocorrelation_lag_1,
            mean_abs_change,
            sum_values,
        }
    }
}

/// pandas 3 `Series.skew()` / `.kurt()`: the bias-adjusted G1 and G2 of the central
/// moments (`pandas/_libs/algos.pxd` `calc_skew`, `calc_kurt`). pandas gets these moments
/// essentially exactly, even for a series of 1 ± 1e-9 or 1e12 ± 1 where a rounded mean
/// would shift every deviation; the same accuracy comes from taking deviations from the
/// first value (exact for nearby values), then from their mean. NaN below 3 (skew) or 4
/// (kurtosis) samples, and for zero spread (0/0), as pandas 3 returns.
pub fn pandas_skew_kurt(x: &[f64]) -> (f64, f64) {
    let n = x.len();
    let Some(&x0) = x.first() else {
        return (f64::NAN, f64::NAN);
    };
    let nf = n as f64;
    let m = np_sum(n, |i| x[i] - x0) / nf;
    let (mut m2, mut m3, mut m4) = (0.0f64, 0.0f64, 0.0f64);
    for &v in x {
        let d = (v - x0) - m;
        let d2 = d * d;
        m2 += d2;
        m3 += d2 * d;
        m4 += d2 * d2;
    }
    let skew = if n < 3 {
        f64::NAN
    } else {
        (m3 / (m2 * m2.sqrt())) * ((nf * (nf - 1.0).sqrt()) / (nf - 2.0))
    };
    let kurt = if n < 4 {
        f64::NAN
    } else {
        let inner = nf * (nf + 1.0) * (m4 / (m2 * m2)) - 3.0 * (nf - 1.0);
        ((nf - 1.0) / ((nf - 2.0) * (nf - 3.0))) * inner
    };
    (skew, kurt)
}

/// `scipy.stats.linregress(range(n), x)` → (slope, intercept, rvalue). `ymean` is
/// `np.mean(x)`. Fewer than two samples: NaN (scipy's `too_small`).
fn linregress(x: &[f64], ymean: f64) -> (f64, f64, f64) {
    let n = x.len();
    if n < 2 {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let nf = n as f64;
    let xmean = (nf - 1.0) / 2.0;
    // np.cov(bias=1) multiplies the dot products by 1/n.
    let inv = 1.0 / nf;
    let mut sxx = 0.0;
    let mut sxy = 0.0;
    let mut syy = 0.0;
    for (i, &v) in x.iter().enumerate() {
        let dx = i as f64 - xmean;
        let dy = v - ymean;
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    let (ssxm, ssxym, ssym) = (sxx * inv, sxy * inv, syy * inv);
    let r = if ssxm == 0.0 || ssym == 0.0 {
        if ssxym == 0.0 {
            f64::NAN
        } else {
            0.0
        }
    } else {
        (ssxym / (ssxm * ssym).sqrt()).clamp(-1.0, 1.0)
    };
    let slope = ssxym / ssxm;
    (slope, ymean - slope * xmean, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairwise_sum_orders_like_numpy() {
        // 1e16 + 1 + 1 + ... loses the ones sequentially but not in numpy's 8 lanes when
        // the ones share a lane: a sum that depends on the order.
        let x: Vec<f64> = (0..17).map(|i| if i == 0 { 1e16 } else { 1.0 }).collect();
        let seq: f64 = x.iter().sum();
        let pw = np_sum(x.len(), |i| x[i]);
        assert_eq!(seq, 1e16);
        assert_eq!(pw, 1e16 + 16.0);
        assert_eq!(np_sum(0, |_| 1.0), 0.0);
        assert_eq!(np_sum(300, |_| 1.0), 300.0);
    }

    #[test]
    fn textbook_values() {
        let s = Stats::of(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(s.mean, 2.5);
        assert_eq!(s.variance, 1.25);
        assert_eq!((s.slope, s.intercept, s.rvalue), (1.0, 1.0, 1.0));
        assert_eq!(s.mean_abs_change, 1.0);
        assert!(s.skewness.abs() < 1e-15);
        assert!((s.kurtosis + 1.2).abs() < 1e-12);
        // autocorrelation of 1..4: sum((-1.5*-0.5) + (-0.5*0.5) + (0.5*1.5)) / (3 * 1.25)
        assert!((s.autocorrelation_lag_1 - 1.25 / 3.75).abs() < 1e-15);
    }

    #[test]
    fn degenerate_series() {
        let c = Stats::of(&[0.1; 30]);
        assert_eq!((c.mean, c.variance), (0.1, 0.0));
        assert!(c.skewness.is_nan() && c.kurtosis.is_nan() && c.rvalue.is_nan());
        assert!(c.autocorrelation_lag_1.is_nan());
        assert_eq!((c.slope, c.intercept), (0.0, 0.1));
        let e = Stats::of(&[]);
        assert!(e.mean.is_nan() && e.minimum.is_nan() && e.slope.is_nan());
        assert_eq!(e.sum_values, 0.0);
        let one = Stats::of(&[3.0]);
        assert_eq!((one.mean, one.variance, one.maximum), (3.0, 0.0, 3.0));
        assert!(one.mean_abs_change.is_nan() && one.slope.is_nan());
    }
}
