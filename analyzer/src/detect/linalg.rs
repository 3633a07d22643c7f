//! The little dense linear algebra the PCA detector needs, on ndarray.
//!
//! Written here rather than pulling a linear-algebra crate: the sizes are
//! small (a covariance of a few hundred features for the literal PCA, a
//! sketch of ~100 columns for the randomized one), matrix products go through
//! ndarray's `dot` (matrixmultiply, SIMD), and the shared build stays light.
//! The symmetric eigensolver is the classic Householder tridiagonalization
//! followed by implicit QL with Wilkinson shifts (Golub & Van Loan §8.3).

use ndarray::{Array1, Array2, ArrayView2, Axis, Slice};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Eigen-decomposition of a symmetric matrix: eigenvalues in descending
/// order, eigenvectors as the *rows* of the second array.
pub fn symmetric_eigen(a: ArrayView2<f64>) -> (Array1<f64>, Array2<f64>) {
    let n = a.nrows();
    assert_eq!(n, a.ncols(), "square matrix");
    if n == 0 {
        return (Array1::zeros(0), Array2::zeros((0, 0)));
    }
    let mut m = a.to_owned();
    let (mut d, mut e, vs) = tridiagonalize(&mut m);
    // zt's rows start as the columns of Q (A = Q T Qᵀ); QL's rotations then
    // act on pairs of rows, which is contiguous memory.
    let mut zt = householder_q_transposed(n, &vs);
    tridiagonal_ql(&mut d, &mut e, &mut zt);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| d[j].total_cmp(&d[i]));
    let values = order.iter().map(|&i| d[i]).collect();
    let vectors = zt.select(Axis(0), &order);
    (values, vectors)
}

/// Reduces `m` (symmetric, overwritten) to tridiagonal form: diagonal,
/// subdiagonal (last entry 0), and the Householder vectors (unit, with their
/// start row).
#[allow(clippy::type_complexity)] // a private helper's three outputs
fn tridiagonalize(m: &mut Array2<f64>) -> (Vec<f64>, Vec<f64>, Vec<(usize, Array1<f64>)>) {
    let n = m.nrows();
    let mut d = vec![0.0; n];
    let mut e = vec![0.0; n];
    let mut vs = Vec::new();
    for k in 0..n.saturating_sub(2) {
        d[k] = m[[k, k]];
        let x = m
            .column(k)
            .slice_axis(Axis(0), Slice::from(k + 1..))
            .to_owned();
        let norm = x.dot(&x).sqrt();
        if norm == 0.0 {
            e[k] = 0.0;
            continue;
        }
        let alpha = if x[0] > 0.0 { -norm } else { norm };
        let mut v = x;
        v[0] -= alpha;
        let vn = v.dot(&v).sqrt();
        v /= vn;
        e[k] = alpha;
        // Trailing block A ← H A H with H = I − 2vvᵀ: p = Av, w = p − (vᵀp)v,
        // A ← A − 2(vwᵀ + wvᵀ).
        let mut a22 = m.slice_each_axis_mut(|_| Slice::from(k + 1..));
        let p = a22.dot(&v);
        let w = &p - &(&v * v.dot(&p));
        for (i, mut row) in a22.rows_mut().into_iter().enumerate() {
            let (vi, wi) = (2.0 * v[i], 2.0 * w[i]);
            row.zip_mut_with(&w, |r, &wj| *r -= vi * wj);
            row.zip_mut_with(&v, |r, &vj| *r -= wi * vj);
        }
        vs.push((k + 1, v));
    }
    if n >= 2 {
        d[n - 2] = m[[n - 2, n - 2]];
        e[n - 2] = m[[n - 1, n - 2]];
    }
    d[n - 1] = m[[n - 1, n - 1]];
    (d, e, vs)
}

/// Qᵀ for Q = H₀H₁⋯, each H = I − 2vvᵀ acting on rows/columns from its start.
fn householder_q_transposed(n: usize, vs: &[(usize, Array1<f64>)]) -> Array2<f64> {
    // Q = H₀H₁⋯ by M ← M·H in order (each touches columns start..), then
    // transposed.
    let mut q = Array2::<f64>::eye(n);
    for (start, v) in vs {
        let mut block = q.slice_axis_mut(Axis(1), Slice::from(*start..));
        let mv = block.dot(v);
        for (mut row, &c) in block.rows_mut().into_iter().zip(mv.iter()) {
            let c2 = 2.0 * c;
            row.zip_mut_with(v, |r, &vj| *r -= c2 * vj);
        }
    }
    q.reversed_axes().as_standard_layout().into_owned()
}

/// Implicit QL on a symmetric tridiagonal matrix (`d` diagonal, `e`
/// subdiagonal with e[i] between i and i+1); rotations applied to rows of `zt`.
fn tridiagonal_ql(d: &mut [f64], e: &mut [f64], zt: &mut Array2<f64>) {
    let n = d.len();
    for l in 0..n {
        for _iter in 0..64 {
            let mut m = l;
            while m + 1 < n {
                let dd = d[m].abs() + d[m + 1].abs();
                if e[m].abs() <= f64::EPSILON * dd {
                    break;
                }
                m += 1;
            }
            if m == l {
                break;
            }
            let mut g = (d[l + 1] - d[l]) / (2.0 * e[l]);
            let mut r = g.hypot(1.0);
            g = d[m] - d[l] + e[l] / (g + r.copysign(g));
            let (mut s, mut c, mut p) = (1.0, 1.0, 0.0);
            let mut deflated = false;
            for i in (l..m).rev() {
                let f = s * e[i];
                let b = c * e[i];
                r = f.hypot(g);
                e[i + 1] = r;
                if r == 0.0 {
                    d[i + 1] -= p;
                    e[m] = 0.0;
                    deflated = true;
                    break;
                }
                s = f / r;
                c = g / r;
                g = d[i + 1] - p;
                r = (d[i] - g) * s + 2.0 * c * b;
                p = s * r;
                d[i + 1] = g + p;
                g = c * r - b;
                rotate_rows(zt, i, s, c);
            }
            if deflated {
                continue;
            }
            d[l] -= p;
            e[l] = g;
            e[m] = 0.0;
        }
    }
}

/// Rows i and i+1 of `zt` ← the plane rotation (c, s) of the pair.
fn rotate_rows(zt: &mut Array2<f64>, i: usize, s: f64, c: f64) {
    let n = zt.ncols();
    let flat = zt.as_slice_mut().expect("standard layout");
    let (head, tail) = flat.split_at_mut((i + 1) * n);
    for (ai, bi) in head[i * n..].iter_mut().zip(&mut tail[..n]) {
        let (x, y) = (*ai, *bi);
        *ai = c * x - s * y;
        *bi = s * x + c * y;
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
