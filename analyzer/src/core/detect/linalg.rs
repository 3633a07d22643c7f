//! The dense linear algebra the PCA detectors need, on ndarray.
//!
//! Products go through ndarray's `dot` (matrixmultiply, SIMD). The symmetric
//! eigen-decomposition and the covariance product behind it go through
//! `faer` (blocked Householder tridiagonalization, then divide and conquer):
//! the literal PCA decomposes the full covariance of every used feature
//! (2,100 × 2,100 on an hour of windows), where a textbook unblocked
//! tridiagonalization with QL rotations took 16–18 s and faer about 1.1 s
//! on one core (the whole literal fit, 1.6–1.8 s CPU: `benches/detectors.rs`). faer is built without its default features (no rayon,
//! no sparse solvers, no rand), so everything stays on the caller's thread
//! and the build adds only its dense core.

use faer::linalg::matmul::triangular::{matmul, BlockStructure};
use faer::{Accum, Mat, MatRef, Par, Side};
use ndarray::{Array1, Array2, ArrayView2};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Eigen-decomposition of a symmetric matrix: eigenvalues in descending
/// order, eigenvectors as the *rows* of the second array. Only the lower
/// triangle is read.
pub fn symmetric_eigen(a: ArrayView2<f64>) -> (Array1<f64>, Array2<f64>) {
    let n = a.nrows();
    assert_eq!(n, a.ncols(), "square matrix");
    let a = a.as_standard_layout();
    let slice = a.as_slice().expect("as_standard_layout() is contiguous");
    // Row-major A read as column-major is Aᵀ = A: its lower triangle is ours.
    eigen_lower(MatRef::from_column_major_slice(slice, n, n))
}

/// Eigen-decomposition of the sample covariance `zᵀz / denom` of the centred
/// rows of `z` (as [`symmetric_eigen`] orders it). Only the lower triangle of
/// the covariance is formed: half the product's work.
pub fn covariance_eigen(z: ArrayView2<f64>, denom: f64) -> (Array1<f64>, Array2<f64>) {
    let (n, p) = z.dim();
    let z = z.as_standard_layout();
    let zf = MatRef::from_row_major_slice(
        z.as_slice().expect("as_standard_layout() is contiguous"),
        n,
        p,
    );
    let mut cov = Mat::<f64>::zeros(p, p);
    matmul(
        cov.as_mut(),
        BlockStructure::TriangularLower,
        Accum::Replace,
        zf.transpose(),
        BlockStructure::Rectangular,
        zf,
        BlockStructure::Rectangular,
        1.0 / denom,
        Par::Seq,
    );
    eigen_lower(cov.as_ref())
}

fn eigen_lower(a: MatRef<'_, f64>) -> (Array1<f64>, Array2<f64>) {
    let n = a.nrows();
    if n == 0 {
        return (Array1::zeros(0), Array2::zeros((0, 0)));
    }
    match a.self_adjoint_eigen(Side::Lower) {
        Ok(evd) => {
            // faer sorts ascending, with eigenvectors as columns.
            let (s, u) = (evd.S().column_vector(), evd.U());
            let values = (0..n).rev().map(|i| s[i]).collect();
            let vectors = Array2::from_shape_fn((n, n), |(r, c)| u[(c, n - 1 - r)]);
            (values, vectors)
        }
        // Only non-finite input keeps the iteration from converging; callers
        // pass finite, capped values. No component then, rather than a panic:
        // the detector scores every window 0 (and its model reports no components).
        Err(_) => (Array1::zeros(0), Array2::zeros((0, n))),
    }
}

/// Orthonormal basis of the columns of `y` (modified Gram–Schmidt, twice for
/// stability); columns that vanish are dropped.
pub fn orthonormalize(y: &Array2<f64>) -> Array2<f64> {
    let mut cols: Vec<Array1<f64>> = Vec::with_capacity(y.ncols());
    for c in y.columns() {
        let mut v = c.to_owned();
        let n0 = v.dot(&v).sqrt();
        for _ in 0..2 {
            for q in &cols {
                let proj = q.dot(&v);
                v.scaled_add(-proj, q);
            }
        }
        let n1 = v.dot(&v).sqrt();
        if n1 > 1e-10 * n0.max(f64::MIN_POSITIVE) {
            cols.push(v / n1);
        }
    }
    let mut q = Array2::zeros((y.nrows(), cols.len()));
    for (j, c) in cols.iter().enumerate() {
        q.column_mut(j).assign(c);
    }
    q
}

/// Truncated PCA of a centred matrix `x` (n × p) by randomized range finding
/// (Halko, Martinsson & Tropp 2011, alg. 4.4): the `rank` leading eigenvalues
/// of the sample covariance (divisor n − 1, descending) and their unit
/// eigenvectors as rows.
pub fn randomized_pca(
    x: ArrayView2<f64>,
    rank: usize,
    oversample: usize,
    power_iters: usize,
    seed: u64,
) -> (Array1<f64>, Array2<f64>) {
    let (n, p) = x.dim();
    let l = (rank + oversample).min(n).min(p);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let omega = Array2::from_shape_fn((p, l), |_| standard_normal(&mut rng));
    let mut q = orthonormalize(&x.dot(&omega));
    for _ in 0..power_iters {
        let z = orthonormalize(&x.t().dot(&q));
        q = orthonormalize(&x.dot(&z));
    }
    // B = Qᵀ X (l × p); B Bᵀ's eigenpairs give X's leading singular values
    // and, through Bᵀ u / σ, its right singular vectors.
    let b = q.t().dot(&x);
    let (vals, u) = symmetric_eigen(b.dot(&b.t()).view());
    let k = rank.min(vals.len());
    let denom = (n.max(2) - 1) as f64;
    let mut values = Array1::zeros(k);
    let mut vectors = Array2::zeros((k, p));
    for i in 0..k {
        let sigma2 = vals[i].max(0.0);
        values[i] = sigma2 / denom;
        if sigma2 > 0.0 {
            let v = u.row(i).dot(&b) / sigma2.sqrt();
            vectors.row_mut(i).assign(&v);
        }
    }
    (values, vectors)
}

/// A standard normal draw (Box–Muller; one of the pair is discarded, which
/// keeps the stream simple and is cheap next to the products).
pub fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Axis;

    fn random_matrix(n: usize, p: usize, seed: u64) -> Array2<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        Array2::from_shape_fn((n, p), |_| standard_normal(&mut rng))
    }

    #[test]
    fn eigen_reconstructs_symmetric_matrices() {
        for &n in &[1usize, 2, 3, 7, 40] {
            let x = random_matrix(n + 5, n, n as u64);
            let a = x.t().dot(&x);
            let (vals, vecs) = symmetric_eigen(a.view());
            for i in 0..n {
                let v = vecs.row(i);
                let av = a.dot(&v);
                let err = (&av - &(&v * vals[i])).mapv(f64::abs).sum();
                assert!(err < 1e-9 * vals[0].max(1.0), "n={n} i={i} err={err}");
                assert!((v.dot(&v) - 1.0).abs() < 1e-10);
                if i > 0 {
                    assert!(vals[i] <= vals[i - 1]);
                    assert!(v.dot(&vecs.row(i - 1)).abs() < 1e-10);
                }
            }
            assert!((vals.sum() - a.diag().sum()).abs() < 1e-9 * a.diag().sum());
        }
    }

    #[test]
    fn covariance_eigen_is_the_eigen_of_the_covariance() {
        let mut x = random_matrix(60, 9, 4);
        x.column_mut(2).mapv_inplace(|v| 3.0 * v);
        let (vals, vecs) = covariance_eigen(x.view(), 59.0);
        let cov = x.t().dot(&x) / 59.0;
        let (want, _) = symmetric_eigen(cov.view());
        for i in 0..9 {
            assert!((vals[i] - want[i]).abs() < 1e-12 * want[0]);
            let v = vecs.row(i);
            let err = (&cov.dot(&v) - &(&v * vals[i])).mapv(f64::abs).sum();
            assert!(err < 1e-10 * want[0], "i={i} err={err}");
        }
    }

    #[test]
    fn eigen_handles_diagonal_and_repeated() {
        let a = Array2::from_diag(&ndarray::arr1(&[1.0, 3.0, 3.0, 0.0]));
        let (vals, _) = symmetric_eigen(a.view());
        assert_eq!(vals.to_vec(), vec![3.0, 3.0, 1.0, 0.0]);
    }

    #[test]
    fn randomized_pca_finds_leading_components() {
        // Rank-3 signal plus small noise.
        let f = random_matrix(300, 3, 1) * 10.0;
        let l = random_matrix(3, 50, 2);
        let mut x = f.dot(&l) + random_matrix(300, 50, 3) * 0.1;
        let mean = x.mean_axis(Axis(0)).unwrap();
        x -= &mean;
        let cov = x.t().dot(&x) / 299.0;
        let (full, fvec) = symmetric_eigen(cov.view());
        let (vals, vecs) = randomized_pca(x.view(), 3, 10, 2, 7);
        for i in 0..3 {
            assert!(
                (vals[i] - full[i]).abs() < 1e-6 * full[i],
                "{} {}",
                vals[i],
                full[i]
            );
            assert!((vecs.row(i).dot(&fvec.row(i)).abs() - 1.0).abs() < 1e-6);
        }
    }
}
