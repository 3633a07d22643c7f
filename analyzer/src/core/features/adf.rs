//! The augmented Dickey–Fuller test statistic as tsfresh computes it:
//! `statsmodels.tsa.stattools.adfuller(x, regression="c", autolag="AIC")[0]`, NaN where
//! statsmodels raises (constant series, too few samples).
//!
//! statsmodels (0.14–0.15) does, for `n` samples:
//! 1. `maxlag = min(ceil(12 (n/100)^¼), n/2 − 2)`; below 0: error → NaN.
//! 2. For every lag count `p = 0..=maxlag`, OLS of `Δx[t]` on `[1, x[t], Δx[t−1] … Δx[t−p]]`
//!    over the same rows `t = maxlag..n−2`, AIC `= n_obs·(ln 2π + ln(SSR/n_obs) + 1) + 2·rank`;
//!    the smallest (AIC, p) wins.
//! 3. The OLS with the chosen `p` again, now over all rows `t = p..n−2`; the statistic is the
//!    t-value of the `x[t]` coefficient.
//!
//! `add_trend(has_constant="skip")` adds no constant when a column already is a non-zero
//! constant; that is reproduced. The level regressor is shifted by `x[0]` when a constant
//! is in the model (the statistic is unchanged in exact arithmetic): statsmodels does not
//! shift, and on series like 1e12 ± 1 its pseudo-inverse drops the level direction as
//! rank-deficient and returns a meaningless value (the reference script documents where). The regressions are solved by Householder QR instead of
//! statsmodels' pseudo-inverse: the nested models of step 2 are the prefixes of one QR, so
//! the lag search costs one factorization, and with `x[t]` as the last column of step 3 its
//! t-value is `z_k · sign(R_kk) / σ`. Both give the least-squares solution; they differ
//! only in rounding, and where the `x[t]` column is collinear with the others (the
//! coefficient is then not identified and NaN is returned). A perfect fit (residual at
//! rounding level, e.g. a strictly alternating series) also gives NaN: statsmodels returns
//! a statistic of ~1e16 made of rounding noise there.
//! Source: <https://github.com/statsmodels/statsmodels/blob/main/statsmodels/tsa/stattools/_stattools.py>

/// Reusable buffers, so a window of hundreds of channels allocates nothing.
#[derive(Debug, Default, Clone)]
pub struct Adf {
    a: Vec<f64>,
    y: Vec<f64>,
    ssr: Vec<f64>,
    rank: Vec<usize>,
    /// `‖y‖²` of the last factorization, before it was overwritten by `Qᵀy`.
    y_norm2: f64,
}

impl Adf {
    pub fn new() -> Self {
        Self::default()
    }

    /// The test statistic of `x` (finite values), or NaN.
    pub fn teststat(&mut self, x: &[f64]) -> f64 {
        let n = x.len();
        if n < 2 {
            return f64::NAN;
        }
        let (lo, hi) = x
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
                (l.min(v), h.max(v))
            });
        if lo == hi {
            return f64::NAN;
        }
        let maxlag = (12.0 * (n as f64 / 100.0).powf(0.25)).ceil() as i64;
        let maxlag = maxlag.min(n as i64 / 2 - 1 - 1);
        if maxlag < 0 {
            return f64::NAN;
        }
        let maxlag = maxlag as usize;
        let dx = |t: usize| x[t + 1] - x[t];

        // Step 2: lag search on rows t = maxlag..=n-2.
        let nobs = n - 1 - maxlag;
        let first_row = maxlag;
        let raw = |j: usize, r: usize| -> f64 {
            let t = first_row + r;
            if j == 0 {
                x[t]
            } else {
                dx(t - j)
            }
        };
        let with_const = !(0..=maxlag).any(|j| nonzero_constant(nobs, |r| raw(j, r)));
        // With a constant in the model, shifting the level regressor by x[0] changes only
        // the constant's coefficient; it keeps a series like 1e12 ± 1 well conditioned.
        let shift = if with_const { x[0] } else { 0.0 };
        let lagcols = |j: usize, r: usize| -> f64 {
            if j == 0 {
                raw(0, r) - shift
            } else {
                raw(j, r)
            }
        };
        // Columns in statsmodels' order: [const,] level, Δx lags 1..maxlag.
        let k = maxlag + 1 + usize::from(with_const);
        self.fill(nobs, k, |c, r| {
            if with_const {
                if c == 0 {
                    1.0
                } else {
                    lagcols(c - 1, r)
                }
            } else {
                lagcols(c, r)
            }
        });
        self.y.clear();
        self.y.extend((0..nobs).map(|r| dx(first_row + r)));
        self.factor(nobs, k);
        // Model with p lags uses the first (const + level + p) columns.
        let base = 1 + usize::from(with_const);
        let nf = nobs as f64;
        let mut best: Option<(f64, usize)> = None;
        for p in 0..=maxlag {
            let cols = base + p;
            let aic = aic(nf, self.ssr[cols], self.rank[cols]);
            // NaN AIC never wins; ties go to the smaller lag, as Python's min of tuples.
            if aic.is_nan() {
                continue;
            }
            match best {
                Some((b, _)) if aic >= b => {}
                _ => best = Some((aic, p)),
            }
        }
        let Some((_, p)) = best else {
            return f64::NAN;
        };

        // Step 3: rows t = p..=n-2, columns [const,] Δx lags 1..p, level (last).
        let nobs = n - 1 - p;
        let row0 = p;
        let lag = |j: usize, r: usize| dx(row0 + r - j);
        let with_const = !(nonzero_constant(nobs, |r| x[row0 + r])
            || (1..=p).any(|j| nonzero_constant(nobs, |r| lag(j, r))));
        let shift = if with_const { x[0] } else { 0.0 };
        let level = |r: usize| x[row0 + r] - shift;
        let c0 = usize::from(with_const);
        let k = c0 + p + 1;
        self.fill(nobs, k, |c, r| {
            if c < c0 {
                1.0
            } else if c < k - 1 {
                lag(c - c0 + 1, r)
            } else {
                level(r)
            }
        });
        self.y.clear();
        self.y.extend((0..nobs).map(|r| dx(row0 + r)));
        let Some(z_over_r) = self.factor(nobs, k) else {
            return f64::NAN;
        };
        let rank = self.rank[k];
        if nobs <= rank {
            return f64::NAN;
        }
        let sigma = (self.ssr[k] / (nobs - rank) as f64).sqrt();
        // A perfect fit (a strictly alternating or otherwise deterministic series): the
        // residual is rounding noise and so would be the statistic (|t| ~ 1e16).
        let rms_y = (self.y_norm2 / nobs as f64).sqrt();
        if sigma <= 1e-10 * rms_y {
            return f64::NAN;
        }
        z_over_r / sigma
    }

    /// Column-major `nobs × k` design from `f(column, row)`.
    fn fill(&mut self, nobs: usize, k: usize, f: impl Fn(usize, usize) -> f64) {
        self.a.clear();
        for c in 0..k {
            self.a.extend((0..nobs).map(|r| f(c, r)));
        }
    }

    /// Householder QR of the design with `y` carried along. Afterwards `ssr[j]` and
    /// `rank[j]` describe the least-squares fit on the first `j` columns. Returns
    /// `z_k · sign(R_kk)` of the last column when it is independent of the others.
    fn factor(&mut self, nobs: usize, k: usize) -> Option<f64> {
        self.ssr.clear();
        self.rank.clear();
        let yy: f64 = self.y.iter().map(|v| v * v).sum();
        self.y_norm2 = yy;
        self.ssr.push(yy);
        self.rank.push(0);
        // Rank tolerance in the spirit of numpy's matrix_rank: k·eps relative to the
        // design's size (Frobenius norm bounds the largest singular value).
        let fro = self.a.iter().map(|v| v * v).sum::<f64>().sqrt();
        let tol = fro * k.max(nobs) as f64 * f64::EPSILON;
        let mut r = 0; // rows already used by accepted columns
        let mut last = None;
        for j in 0..k {
            let col = j * nobs;
            let norm = self.a[col + r..col + nobs]
                .iter()
                .map(|v| v * v)
                .sum::<f64>()
                .sqrt();
            if norm <= tol || r >= nobs {
                // Dependent column: same fit, same rank as without it.
                self.ssr.push(*self.ssr.last().unwrap_or(&yy));
                self.rank.push(r);
                last = None;
                continue;
            }
            // Reflector v = x − α e₁ with α = −sign(x₀)‖x‖, stored in place.
            let x0 = self.a[col + r];
            let alpha = if x0 >= 0.0 { -norm } else { norm };
            self.a[col + r] = x0 - alpha;
            let vtv = self.a[col + r..col + nobs]
                .iter()
                .map(|v| v * v)
                .sum::<f64>();
            for jj in j + 1..k {
                let other = jj * nobs;
                let dot: f64 = (r..nobs).map(|i| self.a[col + i] * self.a[other + i]).sum();
                let s = 2.0 * dot / vtv;
                for i in r..nobs {
                    self.a[other + i] -= s * self.a[col + i];
                }
            }
            let dot: f64 = (r..nobs).map(|i| self.a[col + i] * self.y[i]).sum();
            let s = 2.0 * dot / vtv;
            for i in r..nobs {
                self.y[i] -= s * self.a[col + i];
            }
            // R_jj = alpha; z_r = y[r].
            last = Some(self.y[r] * alpha.signum());
            r += 1;
            let ssr: f64 = self.y[r..nobs].iter().map(|v| v * v).sum();
            self.ssr.push(ssr);
            self.rank.push(r);
        }
        last
    }
}

/// The test's approximate p-value, as statsmodels reports it next to the statistic
/// (`mackinnonp(teststat, regression="c", N=1)`; tsfresh's `attr_"pvalue"`): MacKinnon's
/// (1994) normal-quantile polynomial in the statistic, 1 above 2.74 and 0 below −18.83; NaN
/// for NaN. It saturates where the evidence does: a statistic of −40 and one of −400 (a
/// quantized, near-idle series the regression fits almost exactly) are both p = 0.
pub fn pvalue(teststat: f64) -> f64 {
    // Coefficients of the constant-only regression with one variable (statsmodels
    // `adfvalues.py`: `tau_c_smallp[0]`, `tau_c_largep[0]` with their scalings applied).
    const MAX: f64 = 2.74;
    const MIN: f64 = -18.83;
    const STAR: f64 = -1.61;
    const SMALL: [f64; 3] = [2.1659, 1.4412, 0.038269];
    const LARGE: [f64; 4] = [1.7339, 0.93202, -0.12745, -0.010368];
    if teststat.is_nan() {
        return f64::NAN;
    }
    if teststat > MAX {
        return 1.0;
    }
    if teststat < MIN {
        return 0.0;
    }
    let coef: &[f64] = if teststat <= STAR { &SMALL } else { &LARGE };
    let q = coef.iter().rev().fold(0.0, |acc, c| acc * teststat + c);
    // Φ(q) = erfc(−q/√2) / 2
    0.5 * libm::erfc(-q / std::f64::consts::SQRT_2)
}

fn aic(nobs: f64, ssr: f64, rank: usize) -> f64 {
    let nobs2 = nobs / 2.0;
    let llf = -ssr.ln() * nobs2 - (1.0 + (std::f64::consts::PI / nobs2).ln()) * nobs2;
    -2.0 * llf + 2.0 * rank as f64
}

/// statsmodels `add_trend`'s test: `ptp == 0` and the value is not zero.
fn nonzero_constant(n: usize, f: impl Fn(usize) -> f64) -> bool {
    if n == 0 {
        return false;
    }
    let first = f(0);
    first != 0.0 && (1..n).all(|r| f(r) == first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pvalue_is_statsmodels_mackinnonp() {
        // statsmodels 0.15.0: `mackinnonp(t, "c", 1)`.
        let cases = [
            (-40.0, 0.0),
            (-18.9, 0.0),
            (-18.83, 2.022123723345286e-30),
            (-10.0, 1.8953190533444514e-17),
            (-5.0, 2.2193154713956276e-05),
            (-3.43, 0.009977709398779726),
            (-2.86, 0.05020109988200309),
            (-1.61, 0.4779756525941893),
            (-1.6, 0.4835934696535866),
            (-1.0, 0.7532643012005655),
            (0.0, 0.958532086060056),
            (1.0, 0.9942659485477608),
            (2.7, 0.9990870192563208),
            (3.0, 1.0),
        ];
        for (t, want) in cases {
            let got = pvalue(t);
            assert!(
                (got - want).abs() <= 1e-12 * want.max(1e-300),
                "t = {t}: {got:e}, statsmodels {want:e}"
            );
        }
        assert!(pvalue(f64::NAN).is_nan());
        // Monotone: a more negative statistic is never less significant.
        let mut last = 0.0;
        for i in 0..=600 {
            let p = pvalue(-20.0 + i as f64 * 0.05);
            assert!(p >= last, "not monotone at {}", -20.0 + i as f64 * 0.05);
            last = p;
        }
    }

    #[test]
    fn degenerate_inputs_are_nan() {
        let mut adf = Adf::new();
        assert!(adf.teststat(&[]).is_nan());
        assert!(adf.teststat(&[1.0, 2.0, 3.0]).is_nan(), "maxlag < 0");
        assert!(adf.teststat(&[4.0; 30]).is_nan(), "constant");
        // Every short length, with ties, zeros and a constant tail: no panic, never inf.
        for n in 0..16 {
            for pattern in 0..4u32 {
                let x: Vec<f64> = (0..n)
                    .map(|i| match pattern {
                        0 => (i % 3) as f64,
                        1 => {
                            if i < n / 2 {
                                i as f64
                            } else {
                                5.0
                            }
                        }
                        2 => ((i * 7919) % 11) as f64 - 5.0,
                        _ => {
                            if i == 0 {
                                1e12
                            } else {
                                0.0
                            }
                        }
                    })
                    .collect();
                assert!(!adf.teststat(&x).is_infinite(), "n={n} pattern={pattern}");
            }
        }
    }

    #[test]
    fn white_noise_is_strongly_stationary_and_walk_is_not() {
        // A deterministic pseudo-random sequence (LCG), so the test needs no RNG crate.
        let mut s = 12345u64;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        let noise: Vec<f64> = (0..200).map(|_| next()).collect();
        let mut walk = vec![0.0];
        for v in &noise[1..] {
            walk.push(walk.last().unwrap() + v);
        }
        let mut adf = Adf::new();
        assert!(adf.teststat(&noise) < -5.0);
        assert!(adf.teststat(&walk) > -3.0);
    }
}
