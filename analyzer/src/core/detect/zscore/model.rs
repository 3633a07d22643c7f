use ndarray::{ArrayView1, ArrayView2};

use super::Aggregate;
use crate::core::detect::residual::Standardizer;
use crate::core::detect::{percentile, Attribution, ColumnStatus, Detector, ROWS_AT_ONCE};

/// A fitted z-score detector.
#[derive(Debug, Clone)]
pub struct ZScoreModel {
    std: Standardizer,
    aggregate: Aggregate,
    threshold: f64,
}

impl ZScoreModel {
    /// The model on baseline `x`, and its scores of `x`, from which the threshold is taken.
    pub(super) fn new(
        std: Standardizer,
        aggregate: Aggregate,
        x: ArrayView2<f64>,
        q: f64,
    ) -> (Self, ndarray::Array1<f64>) {
        let mut m = ZScoreModel {
            std,
            aggregate,
            threshold: 0.0,
        };
        // A block of rows at a time: no copy of the whole baseline.
        let mut scores = Vec::with_capacity(x.nrows());
        for block in x.axis_chunks_iter(ndarray::Axis(0), ROWS_AT_ONCE) {
            let z = m.std.transform(block);
            scores.extend(z.rows().into_iter().map(|r| m.score_z(r)));
        }
        m.threshold = percentile(&scores, q);
        (m, scores.into())
    }

    /// Signed z of every used column, paired with its original index.
    fn zs(&self, z: ArrayView1<f64>) -> Vec<(usize, f64)> {
        self.std
            .used()
            .iter()
            .copied()
            .zip(z.iter().copied())
            .collect()
    }

    fn score_z(&self, z: ArrayView1<f64>) -> f64 {
        let mut z = self.zs(z);
        let k = self.support(z.len());
        select_top(&mut z, k);
        z[..k].iter().map(|(_, v)| v.abs()).sum::<f64>() / k as f64
    }

    /// How many of the largest |z| make up the score.
    fn support(&self, n: usize) -> usize {
        match self.aggregate {
            Aggregate::Mean => n,
            Aggregate::TopK(k) => k.min(n),
            Aggregate::Max => 1.min(n),
        }
    }
}

/// Attributions from non-negative per-used-column weights.
pub(crate) fn ranked_by(
    weights: &ndarray::Array1<f64>,
    z: &ndarray::Array1<f64>,
    used: &[usize],
    top_k: usize,
) -> Vec<Attribution> {
    let total: f64 = weights.iter().filter(|w| w.is_finite()).sum();
    let mut out: Vec<Attribution> = weights
        .iter()
        .enumerate()
        .filter(|(_, &w)| w > 0.0 && w.is_finite())
        .map(|(k, &w)| Attribution {
            feature: used[k],
            contribution: w / total,
            z: z[k],
        })
        .collect();
    out.sort_by(|a, b| b.contribution.total_cmp(&a.contribution));
    out.truncate(top_k);
    out
}

/// Moves the `k` largest |z| to the front (unordered).
fn select_top(z: &mut [(usize, f64)], k: usize) {
    if k > 0 && k < z.len() {
        z.select_nth_unstable_by(k - 1, |a, b| b.1.abs().total_cmp(&a.1.abs()));
    }
}

impl Detector for ZScoreModel {
    fn name(&self) -> &'static str {
        "zscore"
    }

    fn n_features(&self) -> usize {
        self.std.n_features()
    }

    fn score(&self, x: ArrayView1<f64>) -> f64 {
        assert_eq!(x.len(), self.n_features(), "row width");
        self.score_z(self.std.transform_row(x).view())
    }

    fn score_many(&self, x: ArrayView2<f64>) -> ndarray::Array1<f64> {
        assert_eq!(x.ncols(), self.n_features(), "row width");
        let z = self.std.transform(x);
        z.rows().into_iter().map(|r| self.score_z(r)).collect()
    }

    fn threshold(&self) -> f64 {
        self.threshold
    }

    /// Marginal: the largest |z|, each its share of the score. Residual: by
    /// reconstruction-based contribution, so a feature's move is not blamed on
    /// the correlated features its residual leaks into.
    fn attribute(&self, x: ArrayView1<f64>, top_k: usize) -> Vec<Attribution> {
        assert_eq!(x.len(), self.n_features(), "row width");
        let zrow = self.std.transform_row(x);
        if let Some(rbc) = self.std.contributions(x) {
            return ranked_by(&rbc, &zrow, self.std.used(), top_k);
        }
        let mut z = self.zs(zrow.view());
        let k = self.support(z.len());
        select_top(&mut z, k);
        let support = &mut z[..k];
        let total: f64 = support.iter().map(|(_, v)| v.abs()).sum();
        support.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
        support
            .iter()
            .take(top_k)
            .map(|&(feature, z)| Attribution {
                feature,
                contribution: if total > 0.0 { z.abs() / total } else { 0.0 },
                z,
            })
            .collect()
    }

    fn columns(&self) -> &[ColumnStatus] {
        self.std.status()
    }

    fn deviation(&self, column: usize, v: f64) -> Option<f64> {
        let Standardizer::Marginal(scaler) = &self.std else {
            return None;
        };
        let k = scaler.used().binary_search(&column).ok()?;
        v.is_finite().then(|| scaler.z(k, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::detect::zscore::ZScoreParams;
    use crate::core::detect::Fit;
    use ndarray::{arr1, Array2};

    fn baseline() -> Array2<f64> {
        Array2::from_shape_fn((300, 4), |(i, j)| {
            ((i * 31 + j * 17) % 23) as f64 + j as f64
        })
    }

    #[test]
    fn literal_score_is_mean_abs_z() {
        let x = baseline();
        let m = ZScoreParams::literal().fit(x.view()).unwrap();
        let row = x.row(5);
        let col = |j: usize| x.column(j).to_vec();
        let mut expect = 0.0;
        for j in 0..4 {
            let c = col(j);
            let mean = c.iter().sum::<f64>() / 300.0;
            let sd = (c.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 300.0).sqrt();
            expect += ((row[j] - mean) / sd).abs() / 4.0;
        }
        assert!((m.score(row) - expect).abs() < 1e-12);
    }

    #[test]
    fn top_k_attribution_names_the_moved_feature() {
        // Marginal robust z: the top-k attribution itself (residual
        // attribution is covered in `agreement` and `residual`).
        let p = ZScoreParams::default().scaling(crate::core::detect::scale::Scaling::Robust);
        let m = p.fit(baseline().view()).unwrap();
        let row = arr1(&[11.0, -40.0, 12.0, 14.0]);
        let a = m.attribute(row.view(), 2);
        assert_eq!(a[0].feature, 1);
        assert!(a[0].z < -3.0);
        assert!(a[0].contribution > a[1].contribution);
        assert!(m.flags(row.view()));
    }

    #[test]
    fn nan_rows_score_finite() {
        let m = ZScoreParams::default().fit(baseline().view()).unwrap();
        let row = arr1(&[f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e308]);
        assert!(m.score(row.view()).is_finite());
    }
}
