//! The workload model: what the baseline's correlated channels predict.
//!
//! Host telemetry moves mostly together: a training step raises CPU time,
//! memory traffic and network throughput on many channels at once, so a
//! channel's own spread over a run is dominated by the workload's phases. A
//! fault shows as a few channels leaving their usual relation to the others.
//! This model keeps the principal components that stand above noise (the
//! workload), and scores each feature's residual off them, robustly scaled,
//! with the single-feature test of `FaultIsolation`: a "fault z" of 5 means
//! "5 σ away from what the other features predict", which a marginal z of
//! 1.5 can hide, and a move of one feature is not blamed on the features its
//! residual leaks into.

use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis};

use super::linalg::{covariance_eigen, randomized_pca};
use super::scale::{median_spread, Scaler, Scaling};
use super::{ColumnStatus, DetectError};

/// Above this many used features, the randomized solver is used.
const FULL_EIGEN_MAX_FEATURES: usize = 400;
/// Extra sketch columns of the randomized solver beyond the wanted rank.
const OVERSAMPLE: usize = 10;
/// Power iterations of the randomized solver (Halko et al. recommend 1–2
/// when the spectrum decays slowly, more cost no better subspace here).
pub(crate) const POWER_ITERS: usize = 2;
/// Robust z values are clipped to ±this while the components are estimated,
/// so a few extreme windows in the baseline (offline, the baseline is the
/// whole run, anomalies included) cannot become a component of their own and
/// hide themselves. At ±4 a normal feature loses 0.006% of its values.
pub(crate) const CLIP: f64 = 4.0;
/// A component whose variance is below this fraction of the total is
/// numerically null; whitening by it would amplify rounding noise.
pub(crate) const NULL_VARIANCE: f64 = 1e-12;
/// A residual spread below this (in robust-z units) means the feature is a
/// combination of others: nothing of its own to watch.
const NULL_RESIDUAL: f64 = 1e-9;

/// Robust scaling, the workload's components, and residual scales.
#[derive(Debug, Clone)]
pub struct WorkloadModel {
    pub(crate) scaler: Scaler,
    pub(crate) mean: Array1<f64>,
    /// Workload components as rows (k × used columns), unit length.
    pub(crate) components: Array2<f64>,
    /// Variance of each component (divisor n − 1).
    pub(crate) variances: Array1<f64>,
    pub(crate) res_center: Array1<f64>,
    /// 0 leaves the column's residual out.
    pub(crate) res_scale: Array1<f64>,
    /// Set once the residual scales are known.
    pub(crate) isolation: Option<FaultIsolation>,
    /// What it was fitted with, so a PCA detector asking for the same can share it.
    pub(crate) max_rank: usize,
    pub(crate) seed: u64,
    /// Least scale per column it was fitted with ([`Scaler::fit_floored`]).
    pub(crate) floors: Option<crate::core::detect::scale::Floors>,
}

impl WorkloadModel {
    /// Fits on a baseline; at most `max_rank` components, only those above
    /// the noise edge (see `signal_rank`).
    pub fn fit(
        x: ArrayView2<f64>,
        max_rank: usize,
        seed: u64,
        floors: Option<crate::core::detect::scale::Floors>,
    ) -> Result<Self, DetectError> {
        if x.nrows() < 3 {
            return Err(DetectError::TooFewWindows {
                rows: x.nrows(),
                min: 3,
            });
        }
        let scaler = Scaler::fit_floored(x, Scaling::Robust, floors.as_deref())?;
        let mut z = scaler.transform(x);
        let (n, q) = z.dim();
        let mut clipped = z.mapv(|v| v.clamp(-CLIP, CLIP));
        let mean = clipped.mean_axis(Axis(0)).expect("rows checked above");
        clipped -= &mean;
        z -= &mean;
        let denom = (n - 1) as f64;
        let total = clipped.iter().map(|v| v * v).sum::<f64>() / denom;
        let rank = max_rank.min(q).min(n - 1);
        let (values, vectors) = if q > FULL_EIGEN_MAX_FEATURES {
            randomized_pca(clipped.view(), rank, OVERSAMPLE, POWER_ITERS, seed)
        } else {
            full_eigen(&clipped, denom)
        };
        drop(clipped);
        let k = signal_rank(&values, total, q, n, max_rank);
        // Leave out numerically null directions (as the PCA detector does).
        let k = values
            .iter()
            .take(k)
            .take_while(|&&v| v > NULL_VARIANCE * total)
            .count();
        let components = vectors.slice_axis(Axis(0), (0..k).into()).to_owned();
        let variances = values.slice_axis(Axis(0), (0..k).into()).to_owned();
        let mut model = WorkloadModel {
            scaler,
            mean,
            components,
            variances,
            max_rank,
            seed,
            floors,
            res_center: Array1::zeros(q),
            res_scale: Array1::ones(q),
            isolation: None,
        };
        let r = model.project_out(z);
        let mut buf = Vec::with_capacity(n);
        for (j, col) in r.axis_iter(Axis(1)).enumerate() {
            buf.clear();
            buf.extend(col.iter().copied());
            let (c, s) = median_spread(&mut buf);
            model.res_center[j] = c;
            model.res_scale[j] = if s > NULL_RESIDUAL { s } else { 0.0 };
        }
        model.isolation = Some(FaultIsolation::new(&model.components, &model.res_scale));
        Ok(model)
    }

    /// Number of workload components.
    pub fn rank(&self) -> usize {
        self.components.nrows()
    }

    pub fn scaler(&self) -> &Scaler {
        &self.scaler
    }

    fn project_out(&self, mut zc: Array2<f64>) -> Array2<f64> {
        let t = zc.dot(&self.components.t());
        zc -= &t.dot(&self.components);
        zc
    }

    /// Fault z (see `FaultIsolation::fault_z`) of every used column of every row.
    pub fn transform(&self, x: ArrayView2<f64>) -> Array2<f64> {
        let mut z = self.scaler.transform(x);
        z -= &self.mean;
        self.scaler.zero_missing_rows(x, z.view_mut());
        let mut r = self.project_out(z);
        r -= &self.res_center;
        match &self.isolation {
            Some(iso) => iso.fault_z(&self.components, r.view()),
            None => r,
        }
    }

    /// Fault z of one row's used columns.
    /// (Matrix–vector products here: a one-row matrix product would repack
    /// the components on every call.)
    pub fn transform_row(&self, x: ArrayView1<f64>) -> Array1<f64> {
        let mut z = self.scaler.transform_row(x);
        z -= &self.mean;
        self.scaler.zero_missing(x, z.view_mut());
        let t = self.components.dot(&z);
        let mut r = z - t.dot(&self.components);
        r -= &self.res_center;
        match &self.isolation {
            Some(iso) => iso.fault_z_row(&self.components, r),
            None => r,
        }
    }

    /// Per used column, Tᵢ = fault z²: how well "this feature alone moved"
    /// explains the row's residual (see `FaultIsolation`).
    pub fn contributions(&self, x: ArrayView1<f64>) -> Array1<f64> {
        self.transform_row(x).mapv(|v| v * v)
    }
}

pub(crate) fn full_eigen(z: &Array2<f64>, denom: f64) -> (Array1<f64>, Array2<f64>) {
    covariance_eigen(z.view(), denom)
}

/// Components above the Marchenko–Pastur edge σ²(1 + √(q/n))² of pure noise
/// (at most `max_rank`). σ² is the mean variance outside the components kept
/// so far, from the total (the trace), so the eigenvalues the solver did not
/// compute still count; starting from none kept, the count grows to a fixed
/// point.
pub(crate) fn signal_rank(
    values: &Array1<f64>,
    total: f64,
    q: usize,
    n: usize,
    max_rank: usize,
) -> usize {
    let l = values.len().min(max_rank).min(q.saturating_sub(1));
    let factor = (1.0 + (q as f64 / n as f64).sqrt()).powi(2);
    let mut k = 0;
    loop {
        let rest = (total - values.iter().take(k).sum::<f64>()).max(0.0);
        let noise = rest / (q - k) as f64;
        let next = values
            .iter()
            .take(l)
            .take_while(|&&v| v > noise * factor)
            .count();
        if next <= k {
            return k;
        }
        k = next;
    }
}

/// Which single feature best explains a residual: for each feature i, the
/// likelihood-ratio statistic of "feature i alone moved" given the residual
/// r, with independent residual noise of variance sᵢ² (the residual scales):
/// Tᵢ = (aᵢᵀ W r)² / (aᵢᵀ W aᵢ), aᵢ = (I − VᵀV)eᵢ the trace a move of feature
/// i leaves in the residual, W = diag(1/s²). A move of one feature leaks into
/// the residuals of the features it correlates with, so the largest residual
/// z can name a bystander; this statistic (reconstruction-based contribution,
/// Alcala & Qin 2009, weighted by the residual noise) compares the
/// candidates on the same footing. Features left out of the residual count 0.
#[derive(Debug, Clone)]
pub(crate) struct FaultIsolation {
    weights: Array1<f64>,
    denominators: Array1<f64>,
}

impl FaultIsolation {
    pub fn new(components: &Array2<f64>, scale: &Array1<f64>) -> Self {
        let weights = scale.mapv(|s| if s > 0.0 { 1.0 / (s * s) } else { 0.0 });
        // aᵢᵀWaᵢ = wᵢ − 2wᵢ‖vᵢ‖² + vᵢᵀ (V W Vᵀ) vᵢ, vᵢ column i of V.
        let g = (components * &weights).dot(&components.t());
        let gv = g.dot(components);
        let mut denominators = weights.clone();
        for (i, d) in denominators.iter_mut().enumerate() {
            let vi = components.column(i);
            let norm2 = vi.dot(&vi);
            *d += -2.0 * weights[i] * norm2 + vi.dot(&gv.column(i));
        }
        FaultIsolation {
            weights,
            denominators,
        }
    }

    /// [`FaultIsolation::fault_z`] of one row, with matrix–vector products.
    pub fn fault_z_row(&self, components: &Array2<f64>, r: Array1<f64>) -> Array1<f64> {
        let wr = r * &self.weights;
        let back = components.dot(&wr).dot(components);
        let mut out = wr - back;
        ndarray::Zip::from(&mut out)
            .and(&self.denominators)
            .and(&self.weights)
            .for_each(|v, &den, &w| {
                *v = if w > 0.0 && den > NULL_RESIDUAL * w {
                    *v / den.sqrt()
                } else {
                    0.0
                };
            });
        out
    }

    /// Signed √Tᵢ (the "fault z") of centred residual rows (robust-z
    /// units, residual centre removed): about N(0, 1) per feature in the
    /// baseline, and for a move δ of feature i alone, δ·√(aᵢᵀWaᵢ) at i, the
    /// most a single-feature test can see.
    pub fn fault_z(&self, components: &Array2<f64>, r: ArrayView2<f64>) -> Array2<f64> {
        let wr = &r * &self.weights;
        let back = wr.dot(&components.t()).dot(components);
        let mut out = wr - back;
        for mut row in out.rows_mut() {
            ndarray::Zip::from(&mut row)
                .and(&self.denominators)
                .and(&self.weights)
                .for_each(|v, &den, &w| {
                    *v = if w > 0.0 && den > NULL_RESIDUAL * w {
                        *v / den.sqrt()
                    } else {
                        0.0
                    };
                });
        }
        out
    }
}

/// Column standardization as a detector's input: marginal (a [`Scaler`]) or
/// off-workload residual (a [`WorkloadModel`]).
#[derive(Debug, Clone)]
pub enum Standardizer {
    Marginal(Box<Scaler>),
    Residual(Box<WorkloadModel>),
}

impl Standardizer {
    /// The workload model behind a residual standardization.
    pub(crate) fn workload(&self) -> Option<&WorkloadModel> {
        match self {
            Standardizer::Marginal(_) => None,
            Standardizer::Residual(w) => Some(w),
        }
    }

    /// Fits the standardization `scaling` names; `seed` feeds the randomized solver.
    /// `floors`: least scale per column ([`Scaler::fit_floored`]).
    pub fn fit(
        x: ArrayView2<f64>,
        scaling: Scaling,
        seed: u64,
        floors: Option<&crate::core::detect::scale::Floors>,
    ) -> Result<Self, DetectError> {
        Ok(match scaling {
            Scaling::Residual { max_rank } => Standardizer::Residual(Box::new(WorkloadModel::fit(
                x,
                max_rank,
                seed,
                floors.cloned(),
            )?)),
            other => Standardizer::Marginal(Box::new(Scaler::fit_floored(
                x,
                other,
                floors.map(|f| &f[..]),
            )?)),
        })
    }

    fn scaler(&self) -> &Scaler {
        match self {
            Standardizer::Marginal(s) => s,
            Standardizer::Residual(w) => w.scaler(),
        }
    }

    pub fn status(&self) -> &[ColumnStatus] {
        self.scaler().status()
    }

    pub fn used(&self) -> &[usize] {
        self.scaler().used()
    }

    pub fn n_features(&self) -> usize {
        self.scaler().n_features()
    }

    /// Standardized used columns of every row.
    pub fn transform(&self, x: ArrayView2<f64>) -> Array2<f64> {
        match self {
            Standardizer::Marginal(s) => s.transform(x),
            Standardizer::Residual(w) => w.transform(x),
        }
    }

    /// Standardized used columns of one row.
    pub fn transform_row(&self, x: ArrayView1<f64>) -> Array1<f64> {
        match self {
            Standardizer::Marginal(s) => s.transform_row(x),
            Standardizer::Residual(w) => w.transform_row(x),
        }
    }

    /// Reconstruction-based contributions per used column (residual only).
    pub fn contributions(&self, x: ArrayView1<f64>) -> Option<Array1<f64>> {
        match self {
            Standardizer::Marginal(_) => None,
            Standardizer::Residual(w) => Some(w.contributions(x)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::detect::linalg::standard_normal;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn residual_exposes_a_broken_correlation() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let f = Array2::from_shape_fn((500, 1), |_| standard_normal(&mut rng));
        let mut x = Array2::from_shape_fn((500, 10), |(i, _)| f[[i, 0]]);
        x += &Array2::from_shape_fn((500, 10), |_| 0.1 * standard_normal(&mut rng));
        let w = WorkloadModel::fit(x.view(), 5, 0, None).unwrap();
        assert!((1..=2).contains(&w.rank()), "{}", w.rank());
        // Feature 3 follows the others' factor with a 1-unit offset: a
        // marginal z of about 1, a residual z near 10.
        let mut row = x.row(0).to_owned();
        row[3] += 1.0;
        let r = w.transform_row(row.view());
        assert!(r[3] > 6.0, "{r}");
        assert!(r.iter().enumerate().all(|(j, v)| j == 3 || v.abs() < 4.0));
        let batch = w.transform(row.view().insert_axis(Axis(0)));
        for (a, b) in batch.row(0).iter().zip(r.iter()) {
            assert!((a - b).abs() < 1e-9);
        }
    }
}
