use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis};

use super::{Components, PcaParams, PcaScore, Solver};
use crate::core::detect::linalg::randomized_pca;
use crate::core::detect::residual::{
    full_eigen, signal_rank, FaultIsolation, WorkloadModel, CLIP, NULL_VARIANCE,
};
use crate::core::detect::scale::{median_spread, Scaler, Scaling};
use crate::core::detect::{percentile, Attribution, ColumnStatus, Detector, ROWS_AT_ONCE};

/// Above this many used features, `Signal` components use the randomized solver.
const FULL_EIGEN_MAX_FEATURES: usize = 400;
/// Least residual scale with `Scaling::Bulk`, in units of the feature's own scale: the
/// relations between features that the components capture (a standard deviation and its
/// variance, a mean and a trend's intercept) hold only roughly outside the range they were
/// fitted on, so a residual is never measured more finely than a fifth of the feature's
/// spread (new windows would otherwise score far above the baseline's own).
const MIN_RESIDUAL_SCALE: f64 = 0.2;
/// Extra sketch columns of the randomized solver beyond the wanted rank.
const OVERSAMPLE: usize = 10;

/// A fitted PCA detector.
#[derive(Debug, Clone)]
pub struct PcaModel {
    scaler: Scaler,
    score_kind: PcaScore,
    /// Mean of the standardized used columns (PCA centres its input).
    mean: Array1<f64>,
    /// Kept components as rows (k × used columns), unit length.
    components: Array2<f64>,
    /// Variance of each kept component (divisor n − 1, as scikit-learn).
    variances: Array1<f64>,
    /// Residual centre and scale per used column (`TopK` only); a scale of
    /// 0 leaves the column's residual out (fully explained by the components).
    residual: Option<(Array1<f64>, Array1<f64>)>,
    /// Which feature explains a residual (`TopK` only).
    isolation: Option<FaultIsolation>,
    threshold: f64,
}

impl PcaModel {
    /// The model fitted on `x`, and its scores of `x` (its baseline), from which the
    /// threshold is taken.
    pub(super) fn fit(
        p: &PcaParams,
        scaler: Scaler,
        x: ArrayView2<f64>,
    ) -> (PcaModel, Array1<f64>) {
        // With robust scaling, components come from clipped z (see
        // `residual::CLIP`); the literal configuration keeps scikit-learn's
        // plain covariance. One copy of the baseline at a time: the clipped z for the
        // components, then z again for the scores.
        let mut est = scaler.transform(x);
        let (n, q) = est.dim();
        if p.scaling != Scaling::Standard {
            est.mapv_inplace(|v| v.clamp(-CLIP, CLIP));
        }
        let mean = est
            .mean_axis(Axis(0))
            .expect("PcaParams::fit refuses fewer than 3 rows");
        est -= &mean;
        let denom = (n - 1) as f64;
        let total: f64 = est.iter().map(|v| v * v).sum::<f64>() / denom;

        let (values, vectors) = match p.components {
            Components::Variance(_) => full_eigen(&est, denom),
            Components::Signal { max_rank } => {
                let rank = max_rank.min(q).min(n - 1);
                match p.solver {
                    Solver::Randomized { power_iters } if q > FULL_EIGEN_MAX_FEATURES => {
                        randomized_pca(est.view(), rank, OVERSAMPLE, power_iters, p.seed)
                    }
                    _ => full_eigen(&est, denom),
                }
            }
        };
        let keep = match p.components {
            Components::Variance(f) => variance_rank(&values, total, f),
            Components::Signal { max_rank } => signal_rank(&values, total, q, n, max_rank),
        };
        // Leave out numerically null directions.
        let keep = values
            .iter()
            .take(keep)
            .take_while(|&&v| v > NULL_VARIANCE * total)
            .count();
        let components = vectors.slice_axis(Axis(0), (0..keep).into()).to_owned();
        let variances = values.slice_axis(Axis(0), (0..keep).into()).to_owned();
        drop(est);
        let mut z = scaler.transform(x);
        z -= &mean;

        let mut model = PcaModel {
            scaler,
            score_kind: p.score,
            mean,
            components,
            variances,
            residual: None,
            isolation: None,
            threshold: 0.0,
        };
        // The baseline's component scores and residuals, computed once: the residual
        // scales come from them, and so do the baseline's scores.
        let t = z.dot(&model.components.t());
        let r = matches!(p.score, PcaScore::TopK(_)).then(|| {
            let zero: Vec<bool> = z
                .axis_iter(Axis(1))
                .map(|c| c.iter().all(|v| v.abs() <= 1e-12))
                .collect();
            // The residuals in place of z, a block of rows at a time.
            for (mut zb, tb) in z
                .axis_chunks_iter_mut(Axis(0), ROWS_AT_ONCE)
                .zip(t.axis_chunks_iter(Axis(0), ROWS_AT_ONCE))
            {
                zb -= &tb.dot(&model.components);
            }
            (z, zero)
        });
        if let Some((r, zero)) = &r {
            let mut center = Array1::zeros(q);
            let mut scale = Array1::zeros(q);
            let mut buf = Vec::with_capacity(n);
            for (j, col) in r.axis_iter(Axis(1)).enumerate() {
                buf.clear();
                buf.extend(col.iter().copied());
                let constant = buf.iter().all(|v| v.abs() <= 1e-12);
                let (c, s) = median_spread(&mut buf);
                center[j] = c;
                // A residual at rounding level means the feature is a
                // combination of others: nothing of its own to watch. A column
                // that never moved in the baseline but is kept by its least
                // scale (an event channel) is watched in that unit: its first
                // event is a residual of one.
                scale[j] = if s > 1e-9 {
                    if p.scaling == Scaling::Bulk {
                        s.max(MIN_RESIDUAL_SCALE)
                    } else {
                        s
                    }
                } else if constant && zero[j] {
                    1.0
                } else {
                    0.0
                };
            }
            model.isolation = Some(FaultIsolation::new(&model.components, &scale));
            model.residual = Some((center, scale));
        }
        let scores = model.scores_projected(t, r.map(|(r, _)| r));
        model.threshold = percentile(&scores.to_vec(), p.threshold_percentile);
        (model, scores)
    }

    /// The default model from a workload model fitted with the same scaling,
    /// rank limit, solver and seed: the same components, so they are not
    /// computed twice when the detectors of one set share them.
    pub(crate) fn from_workload(p: &PcaParams, w: &WorkloadModel, x: ArrayView2<f64>) -> PcaModel {
        let mut model = PcaModel {
            scaler: w.scaler.clone(),
            score_kind: p.score,
            mean: w.mean.clone(),
            components: w.components.clone(),
            variances: w.variances.clone(),
            residual: Some((w.res_center.clone(), w.res_scale.clone())),
            isolation: w.isolation.clone(),
            threshold: 0.0,
        };
        let scores = model.score_many(x);
        model.threshold = percentile(&scores.to_vec(), p.threshold_percentile);
        model
    }

    /// Number of kept components.
    pub fn n_components(&self) -> usize {
        self.variances.len()
    }

    /// Variance of each kept component.
    pub fn variances(&self) -> ArrayView1<'_, f64> {
        self.variances.view()
    }

    fn center(&self, x: ArrayView2<f64>) -> Array2<f64> {
        let mut z = self.scaler.transform(x);
        z -= &self.mean;
        self.scaler.zero_missing_rows(x, z.view_mut());
        z
    }

    /// Whitened component scores tₖ/√λₖ of centred rows.
    fn whitened(&self, zc: ArrayView2<f64>) -> Array2<f64> {
        let mut t = zc.dot(&self.components.t());
        let inv = self.variances.mapv(|v| 1.0 / v.sqrt());
        t *= &inv;
        t
    }

    /// Fault z of off-subspace residuals `r` (see `residual::FaultIsolation`).
    fn residual_z(&self, mut r: Array2<f64>) -> Array2<f64> {
        let (Some((center, _)), Some(iso)) = (&self.residual, &self.isolation) else {
            return Array2::zeros(r.dim());
        };
        r -= center;
        iso.fault_z(&self.components, r.view())
    }

    fn scores_centered(&self, zc: ArrayView2<f64>) -> Array1<f64> {
        let t = zc.dot(&self.components.t());
        let r = match self.score_kind {
            PcaScore::TopK(_) => Some(&zc - &t.dot(&self.components)),
            PcaScore::Mahalanobis => None,
        };
        self.scores_projected(t, r)
    }

    /// Scores of centred rows from their component scores `t` and, for `TopK`, their
    /// off-subspace residuals `r`.
    fn scores_projected(&self, t: Array2<f64>, r: Option<Array2<f64>>) -> Array1<f64> {
        // Whitened: tₖ/√λₖ.
        let mut w = t;
        w *= &self.variances.mapv(|v| 1.0 / v.sqrt());
        match self.score_kind {
            PcaScore::Mahalanobis => w.rows().into_iter().map(|r| r.dot(&r).sqrt()).collect(),
            PcaScore::TopK(k) => {
                let mut buf = Vec::with_capacity(w.ncols() + self.mean.len());
                let mut out = Vec::with_capacity(w.nrows());
                for (i, wb) in w.axis_chunks_iter(Axis(0), ROWS_AT_ONCE).enumerate() {
                    let rows = i * ROWS_AT_ONCE..i * ROWS_AT_ONCE + wb.nrows();
                    let rz = match &r {
                        Some(r) => self.residual_z(r.slice_axis(Axis(0), rows.into()).to_owned()),
                        None => Array2::zeros((wb.nrows(), self.mean.len())),
                    };
                    out.extend(wb.rows().into_iter().zip(rz.rows()).map(|(a, b)| {
                        buf.clear();
                        buf.extend(a.iter().chain(b.iter()).map(|v| v.abs()));
                        top_k_mean(&mut buf, k)
                    }));
                }
                out.into()
            }
        }
    }

    /// Per used column: its part in the score of one centred row (≥ 0).
    fn parts(&self, zc: ArrayView1<f64>) -> Array1<f64> {
        let zc2 = zc.insert_axis(Axis(0));
        let w = self.whitened(zc2);
        let w = w.row(0);
        match self.score_kind {
            // T² = Σⱼ zⱼ·(Σₖ Vₖⱼ tₖ/λₖ): each feature's term of the distance.
            PcaScore::Mahalanobis => {
                let inv = self.variances.mapv(|v| 1.0 / v.sqrt());
                let weights = (&w * &inv).dot(&self.components);
                (&zc * &weights).mapv(f64::abs)
            }
            // Each selected item's |value|: a residual's fault z to its own
            // feature, a component spread over features by |Vₖⱼ zⱼ|.
            PcaScore::TopK(k) => {
                let t = zc2.dot(&self.components.t());
                let rz = self.residual_z(&zc2 - &t.dot(&self.components));
                let mut items: Vec<(usize, f64)> = w
                    .iter()
                    .chain(rz.row(0).iter())
                    .map(|v| v.abs())
                    .enumerate()
                    .collect();
                let k = k.min(items.len());
                if k > 0 && k < items.len() {
                    items.select_nth_unstable_by(k - 1, |a, b| b.1.total_cmp(&a.1));
                }
                let nc = w.len();
                let mut parts = Array1::zeros(zc.len());
                for &(i, v) in &items[..k] {
                    if i >= nc {
                        parts[i - nc] += v;
                    } else {
                        let spread = (&self.components.row(i) * &zc).mapv(f64::abs);
                        let total = spread.sum();
                        if total > 0.0 {
                            parts.scaled_add(v / total, &spread);
                        }
                    }
                }
                parts
            }
        }
    }
}

/// scikit-learn's rule: the smallest k whose cumulative explained variance
/// ratio exceeds `fraction` (`searchsorted(cumsum, f, side="right") + 1`).
fn variance_rank(values: &Array1<f64>, total: f64, fraction: f64) -> usize {
    let mut cum = 0.0;
    for (i, v) in values.iter().enumerate() {
        cum += v / total;
        if cum > fraction {
            return i + 1;
        }
    }
    values.len()
}

fn top_k_mean(v: &mut [f64], k: usize) -> f64 {
    let k = k.min(v.len());
    if k == 0 {
        return 0.0;
    }
    if k < v.len() {
        v.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
    }
    v[..k].iter().sum::<f64>() / k as f64
}

impl Detector for PcaModel {
    fn name(&self) -> &'static str {
        "pca"
    }

    fn n_features(&self) -> usize {
        self.scaler.n_features()
    }

    /// Matrix–vector products: a one-row matrix product would repack the
    /// components on every call.
    fn score(&self, x: ArrayView1<f64>) -> f64 {
        assert_eq!(x.len(), self.n_features(), "row width");
        let mut zc = self.scaler.transform_row(x);
        zc -= &self.mean;
        self.scaler.zero_missing(x, zc.view_mut());
        let t = self.components.dot(&zc);
        let w = &t / &self.variances.mapv(f64::sqrt);
        match self.score_kind {
            PcaScore::Mahalanobis => w.dot(&w).sqrt(),
            PcaScore::TopK(k) => {
                let mut buf: Vec<f64> = w.iter().map(|v| v.abs()).collect();
                if let (Some((center, _)), Some(iso)) = (&self.residual, &self.isolation) {
                    let r = zc - t.dot(&self.components) - center;
                    let f = iso.fault_z_row(&self.components, r);
                    buf.extend(f.iter().map(|v| v.abs()));
                }
                top_k_mean(&mut buf, k)
            }
        }
    }

    fn score_many(&self, x: ArrayView2<f64>) -> Array1<f64> {
        assert_eq!(x.ncols(), self.n_features(), "row width");
        self.scores_centered(self.center(x).view())
    }

    fn threshold(&self) -> f64 {
        self.threshold
    }

    fn attribute(&self, x: ArrayView1<f64>, top_k: usize) -> Vec<Attribution> {
        assert_eq!(x.len(), self.n_features(), "row width");
        let zc = self.center(x.insert_axis(Axis(0)));
        let parts = self.parts(zc.row(0));
        let total = parts.sum();
        let used = self.scaler.used();
        let mut out: Vec<Attribution> = parts
            .iter()
            .enumerate()
            .filter(|(_, &p)| p > 0.0)
            .map(|(k, &p)| Attribution {
                feature: used[k],
                contribution: if total > 0.0 { p / total } else { 0.0 },
                z: self.scaler.z(k, x[used[k]]),
            })
            .collect();
        out.sort_by(|a, b| b.contribution.total_cmp(&a.contribution));
        out.truncate(top_k);
        out
    }

    fn columns(&self) -> &[ColumnStatus] {
        self.scaler.status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::detect::linalg::standard_normal;
    use crate::core::detect::pca::PcaParams;
    use crate::core::detect::Fit;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// 400 windows, 30 features driven by 2 factors plus small noise.
    fn correlated() -> Array2<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let f = Array2::from_shape_fn((400, 2), |_| standard_normal(&mut rng));
        let l = Array2::from_shape_fn((2, 30), |_| standard_normal(&mut rng));
        let e = Array2::from_shape_fn((400, 30), |_| 0.2 * standard_normal(&mut rng));
        f.dot(&l) + e
    }

    #[test]
    fn literal_keeps_95_percent_and_scores_mahalanobis() {
        let x = correlated();
        let m = PcaParams::literal().fit(x.view()).unwrap();
        let var = m.variances();
        assert!(m.n_components() >= 2);
        // Mahalanobis over whitened scores: the baseline's mean squared score
        // is the number of components (E[tₖ²/λₖ] = 1 with divisor n − 1).
        let s = m.score_many(x.view());
        let mean_sq = s.mapv(|v| v * v).sum() / 399.0;
        assert!((mean_sq - var.len() as f64).abs() < 1e-6, "{mean_sq}");
    }

    #[test]
    fn default_sees_a_broken_correlation_and_names_it() {
        let x = correlated();
        let m = PcaParams::default().fit(x.view()).unwrap();
        assert!(m.n_components() >= 2);
        let mut row = x.row(7).to_owned();
        // Moves feature 4 by 1 marginal σ: small alone, large off the factors.
        let sd = x.column(4).std(0.0);
        row[4] += 1.5 * sd;
        assert!(m.flags(row.view()));
        assert_eq!(m.attribute(row.view(), 3)[0].feature, 4);
        let lit = PcaParams::literal().fit(x.view()).unwrap();
        let a = lit.attribute(row.view(), 3);
        assert!(a[0].contribution > 0.0 && a[0].contribution <= 1.0);
    }

    #[test]
    fn row_and_batch_scores_agree() {
        let x = correlated();
        for p in [PcaParams::literal(), PcaParams::default()] {
            let m = p.fit(x.view()).unwrap();
            let batch = m.score_many(x.view());
            for i in [0, 17, 399] {
                let one = m.score(x.row(i));
                assert!(
                    (one - batch[i]).abs() <= 1e-9 * one.max(1.0),
                    "{one} {}",
                    batch[i]
                );
            }
        }
    }

    #[test]
    fn nan_and_constant_columns_never_give_nan() {
        let mut x = correlated();
        x.column_mut(3).fill(2.0);
        x.column_mut(5).fill(f64::NAN);
        for p in [PcaParams::literal(), PcaParams::default()] {
            let m = p.fit(x.view()).unwrap();
            assert_eq!(m.columns()[3], ColumnStatus::Constant);
            let row = Array1::from_elem(30, f64::NAN);
            assert!(m.score(row.view()).is_finite());
            assert!(m.score_many(x.view()).iter().all(|v| v.is_finite()));
        }
    }
}
