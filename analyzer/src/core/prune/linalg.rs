//! The multiple R² of removed channels on the selected set, from the correlation matrix:
//! R²ᵢ = r_iSᵀ R_SS⁻¹ r_iS, by a Cholesky factorization of R_SS.
//!
//! Correlations from gapped data need not form a positive-definite matrix, and selected
//! channels at a high threshold can be nearly collinear; a ridge (starting at 1e-10 and
//! growing tenfold until the factorization succeeds) keeps the solve defined, and results
//! are clamped to [0, 1].

use ndarray::Array2;

/// Lower-triangular Cholesky factor of `a + ridge·I`, or `None` if not positive definite.
fn cholesky(a: &Array2<f64>, ridge: f64) -> Option<Array2<f64>> {
    let n = a.nrows();
    let mut l = Array2::<f64>::zeros((n, n));
    for j in 0..n {
        let mut d = a[[j, j]] + ridge;
        for k in 0..j {
            d -= l[[j, k]] * l[[j, k]];
        }
        if !(d > 0.0 && d.is_finite()) {
            return None;
        }
        let d = d.sqrt();
        l[[j, j]] = d;
        for i in j + 1..n {
            let mut s = a[[i, j]];
            for k in 0..j {
                s -= l[[i, k]] * l[[j, k]];
            }
            l[[i, j]] = s / d;
        }
    }
    Some(l)
}

/// R² of each channel in `targets` regressed on the channels in `predictors` (indices
/// into the square correlation matrix `r`). Empty predictors explain nothing.
pub fn multi_r2(r: &Array2<f64>, predictors: &[usize], targets: &[usize]) -> Vec<f64> {
    let p = predictors.len();
    if p == 0 || targets.is_empty() {
        return vec![0.0; targets.len()];
    }
    let rss = Array2::from_shape_fn((p, p), |(a, b)| r[[predictors[a], predictors[b]]]);
    let mut ridge = 1e-10;
    let l = loop {
        if let Some(l) = cholesky(&rss, ridge) {
            break l;
        }
        ridge *= 10.0;
        if ridge > 1.0 {
            return vec![f64::NAN; targets.len()];
        }
    };
    let mut y = vec![0.0; p];
    targets
        .iter()
        .map(|&t| {
            // Forward substitution L y = r_S,t; then R² = r_tᵀ R⁻¹ r_t = |y|².
            for i in 0..p {
                let mut s = r[[predictors[i], t]];
                for k in 0..i {
                    s -= l[[i, k]] * y[k];
                }
                y[i] = s / l[[i, i]];
            }
            y.iter().map(|v| v * v).sum::<f64>().clamp(0.0, 1.0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::arr2;

    #[test]
    fn r2_by_hand() {
        // One predictor: R² = r². Two uncorrelated predictors: R² = r₁² + r₂².
        let r = arr2(&[[1.0, 0.0, 0.6], [0.0, 1.0, 0.5], [0.6, 0.5, 1.0]]);
        let one = multi_r2(&r, &[0], &[2])[0];
        assert!((one - 0.36).abs() < 1e-9);
        let two = multi_r2(&r, &[0, 1], &[2])[0];
        assert!((two - 0.61).abs() < 1e-9);
        assert_eq!(multi_r2(&r, &[], &[2]), vec![0.0]);
        // Collinear predictors (r = 1) still solve, through the ridge.
        let r = arr2(&[[1.0, 1.0, 0.8], [1.0, 1.0, 0.8], [0.8, 0.8, 1.0]]);
        let v = multi_r2(&r, &[0, 1], &[2])[0];
        assert!((v - 0.64).abs() < 1e-6, "{v}");
    }
}
