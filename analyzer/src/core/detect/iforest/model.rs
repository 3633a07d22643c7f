use ndarray::{ArrayView1, ArrayView2, Axis};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::tree::Tree;
use super::{average_path_length, ForestInput, IForestParams};
use crate::core::detect::residual::Standardizer;
use crate::core::detect::{percentile, Attribution, ColumnStatus, Detector, ROWS_AT_ONCE};

/// A fitted Isolation Forest.
#[derive(Debug, Clone)]
pub struct IForestModel {
    std: Standardizer,
    input: ForestInput,
    trees: Vec<Tree>,
    /// Per embedded coordinate, the baseline median that lower values are
    /// raised to (empty: none).
    floor: Vec<f64>,
    /// `Channels` input: per used column, its coordinate; and the number of coordinates.
    groups: Vec<usize>,
    n_groups: usize,
    /// c(ψ) for the subsample size used.
    norm: f64,
    threshold: f64,
}

impl IForestModel {
    /// The forest grown on `x`, and its scores of `x`, from which the threshold is taken.
    pub(super) fn fit(
        p: &IForestParams,
        std: Standardizer,
        x: ArrayView2<f64>,
    ) -> (IForestModel, ndarray::Array1<f64>) {
        let mut model = IForestModel {
            std,
            input: p.input,
            trees: Vec::with_capacity(p.n_trees),
            floor: Vec::new(),
            groups: Vec::new(),
            n_groups: 0,
            norm: 1.0,
            threshold: 0.0,
        };
        if let ForestInput::Channels = p.input {
            (model.groups, model.n_groups) =
                coordinates(model.std.used(), p.column_groups.as_deref());
        }
        let n = x.nrows();
        let width = model.width();
        let mut data = Vec::with_capacity(n * width);
        let mut row = Vec::new();
        // A block of rows standardized at a time: no copy of the whole baseline.
        for block in x.axis_chunks_iter(Axis(0), ROWS_AT_ONCE) {
            for z in model.std.transform(block).rows() {
                model.embed_z(z, &mut row, None);
                data.extend_from_slice(&row);
            }
        }
        // Top-|z| inputs are magnitudes: a window calmer than usual is no
        // anomaly, yet isolation is two-sided and would isolate it as early
        // as a deviating one. Raising each coordinate to its baseline median
        // makes the calm half one dense mass that never isolates, so only
        // the upper tail shortens paths.
        if !matches!(p.input, ForestInput::Features) && width > 0 {
            let mut col = Vec::with_capacity(n);
            for j in 0..width {
                col.clear();
                col.extend(data.iter().skip(j).step_by(width).copied());
                col.sort_by(f64::total_cmp);
                model.floor.push(col[col.len() / 2]);
            }
            for (i, v) in data.iter_mut().enumerate() {
                *v = v.max(model.floor[i % width]);
            }
        }
        let psi = p.max_samples.min(n);
        model.norm = average_path_length(psi).max(f64::MIN_POSITIVE);
        let max_depth = (psi as f64).log2().ceil().max(1.0) as usize;
        let mut all: Vec<usize> = (0..n).collect();
        for t in 0..p.n_trees {
            // One stream per tree, so a forest does not depend on build order.
            let mut rng = ChaCha8Rng::seed_from_u64(p.seed);
            rng.set_stream(t as u64);
            // Partial Fisher–Yates: the first ψ entries are the subsample.
            for i in 0..psi {
                let j = rand::RngExt::random_range(&mut rng, i..n);
                all.swap(i, j);
            }
            let mut rows = all[..psi].to_vec();
            model
                .trees
                .push(Tree::grow(&data, width, &mut rows, max_depth, &mut rng));
        }
        let scores: Vec<f64> = data
            .chunks(width.max(1))
            .map(|r| model.score_embedded(r))
            .collect();
        model.threshold = percentile(&scores, p.threshold_percentile);
        (model, scores.into())
    }

    fn width(&self) -> usize {
        let used = self.std.used().len();
        match self.input {
            ForestInput::Features => used,
            ForestInput::TopZ { m } | ForestInput::TopZEvidence { m } => m.min(used),
            ForestInput::Channels => self.n_groups,
        }
    }

    /// The vector the trees see, from a row's standardized used columns;
    /// `ranks` receives, per dimension, the used column it came from.
    fn embed_z(&self, z: ArrayView1<f64>, out: &mut Vec<f64>, ranks: Option<&mut Vec<usize>>) {
        out.clear();
        out.extend(z.iter().copied());
        match self.input {
            ForestInput::Features => {
                if let Some(r) = ranks {
                    r.clear();
                    r.extend(0..out.len());
                }
            }
            ForestInput::Channels => {
                // Per coordinate, its largest |z| and the used column that holds it.
                let mut best = vec![(0.0f64, usize::MAX); self.n_groups];
                for (k, &v) in z.iter().enumerate() {
                    let b = &mut best[self.groups[k]];
                    if b.1 == usize::MAX || v.abs() > b.0 {
                        *b = (v.abs(), k);
                    }
                }
                out.clear();
                out.extend(best.iter().map(|b| b.0));
                for (v, f) in out.iter_mut().zip(&self.floor) {
                    *v = v.max(*f);
                }
                if let Some(r) = ranks {
                    r.clear();
                    r.extend(best.iter().map(|b| b.1));
                }
            }
            ForestInput::TopZ { m } | ForestInput::TopZEvidence { m } => {
                let m = m.min(out.len());
                let mut idx: Vec<usize> = (0..out.len()).collect();
                let key = |&i: &usize| out[i].abs();
                if m < idx.len() {
                    idx.select_nth_unstable_by(m - 1, |a, b| key(b).total_cmp(&key(a)));
                }
                idx.truncate(m);
                idx.sort_by(|a, b| key(b).total_cmp(&key(a)));
                let mut top: Vec<f64> = idx.iter().map(key).collect();
                if let ForestInput::TopZEvidence { .. } = self.input {
                    let mut acc = 0.0;
                    for v in top.iter_mut() {
                        acc += *v * *v;
                        *v = acc;
                    }
                }
                for (v, f) in top.iter_mut().zip(&self.floor) {
                    *v = v.max(*f);
                }
                *out = top;
                if let Some(r) = ranks {
                    *r = idx;
                }
            }
        }
    }

    fn score_embedded(&self, v: &[f64]) -> f64 {
        if self.trees.is_empty() {
            return 0.0;
        }
        let mean =
            self.trees.iter().map(|t| t.path_length(v)).sum::<f64>() / self.trees.len() as f64;
        (-mean / self.norm).exp2()
    }
}

/// Coordinates of `Channels` input: per used column (original indices `used`), the index of
/// its channel among the channels of the used columns, numbered in order of appearance, and
/// how many there are. Without `groups` (or of another width), each column is its own channel.
fn coordinates(used: &[usize], groups: Option<&[usize]>) -> (Vec<usize>, usize) {
    let mut ids: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    let of = |j: usize| match groups {
        Some(g) if j < g.len() => g[j],
        _ => j,
    };
    let coords: Vec<usize> = used
        .iter()
        .map(|&j| {
            let next = ids.len();
            *ids.entry(of(j)).or_insert(next)
        })
        .collect();
    (coords, ids.len())
}

impl Detector for IForestModel {
    fn name(&self) -> &'static str {
        "iforest"
    }

    fn n_features(&self) -> usize {
        self.std.n_features()
    }

    /// scikit-learn's `-score_samples(x)`: in (0, 1], higher is more anomalous.
    fn score(&self, x: ArrayView1<f64>) -> f64 {
        assert_eq!(x.len(), self.n_features(), "row width");
        let mut v = Vec::new();
        self.embed_z(self.std.transform_row(x).view(), &mut v, None);
        self.score_embedded(&v)
    }

    fn threshold(&self) -> f64 {
        self.threshold
    }

    /// Splits on the window's paths, each weighted by how much of the
    /// baseline it cut away from the window (see `Tree::walk`): the features
    /// that isolate the window, early and in large steps, get the most.
    fn attribute(&self, x: ArrayView1<f64>, top_k: usize) -> Vec<Attribution> {
        assert_eq!(x.len(), self.n_features(), "row width");
        let (mut v, mut ranks) = (Vec::new(), Vec::new());
        let z = self.std.transform_row(x);
        self.embed_z(z.view(), &mut v, Some(&mut ranks));
        let mut weight = vec![0.0; self.std.used().len()];
        let evidence = matches!(self.input, ForestInput::TopZEvidence { .. });
        for t in &self.trees {
            t.walk(&v, |dim, isolation| {
                if evidence && v[dim] > 0.0 {
                    // Coordinate `dim` sums the squares of ranks 0..=dim:
                    // the split's credit is shared by each rank's square.
                    let mut below = 0.0;
                    for (i, &rank) in ranks[..=dim].iter().enumerate() {
                        let sq = v[i] - below;
                        below = v[i];
                        weight[rank] += isolation * sq / v[dim];
                    }
                } else if let Some(&k) = ranks.get(dim).filter(|k| **k != usize::MAX) {
                    weight[k] += isolation;
                }
            });
        }
        // On residual input, a split on a rank isolates the window through
        // that rank's residual; which feature explains it is the
        // reconstruction-based contribution, so weights are shared out by it.
        if let Some(rbc) = self.std.contributions(x) {
            let isolating: f64 = weight.iter().sum();
            for (w, c) in weight.iter_mut().zip(rbc.iter()) {
                *w *= c;
            }
            if weight.iter().sum::<f64>() <= 0.0 && isolating > 0.0 {
                weight = rbc.to_vec(); // the isolating ranks carry no residual
            }
        }
        let total: f64 = weight.iter().sum();
        let used = self.std.used();
        let mut out: Vec<Attribution> = weight
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

    fn columns(&self) -> &[ColumnStatus] {
        self.std.status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::detect::iforest::{ForestInput, IForestParams};
    use crate::core::detect::linalg::standard_normal;
    use crate::core::detect::Fit;
    use ndarray::Array2;

    fn gaussian(n: usize, p: usize) -> Array2<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        Array2::from_shape_fn((n, p), |_| standard_normal(&mut rng))
    }

    #[test]
    fn outlier_scores_high_and_is_reproducible() {
        let mut x = gaussian(500, 4);
        x.row_mut(0).fill(6.0);
        for p in [IForestParams::literal(), IForestParams::default()] {
            let a = p.clone().seed(3).fit(x.view()).unwrap();
            let b = p.seed(3).fit(x.view()).unwrap();
            let s = a.score_many(x.view());
            assert_eq!(s, b.score_many(x.view()));
            assert!(s[0] > a.threshold());
            assert!(s.iter().all(|v| *v > 0.0 && *v <= 1.0));
        }
    }

    #[test]
    fn attribution_names_the_isolating_feature() {
        let mut x = gaussian(500, 6);
        x[[0, 2]] = 9.0;
        let m = IForestParams::literal().fit(x.view()).unwrap();
        assert_eq!(m.attribute(x.row(0), 1)[0].feature, 2);
        // Ranks of the window's top |z| map back to its features.
        let top_z = IForestParams::default()
            .scaling(crate::core::detect::scale::Scaling::Robust)
            .input(ForestInput::TopZEvidence { m: 5 });
        let m = top_z.fit(x.view()).unwrap();
        assert_eq!(m.attribute(x.row(0), 1)[0].feature, 2);
    }

    #[test]
    fn evidence_embedding_sums_squares_of_the_largest() {
        let mut x = gaussian(300, 8);
        x[[0, 5]] = 7.0;
        x[[0, 1]] = -5.0;
        let p = IForestParams::default()
            .scaling(crate::core::detect::scale::Scaling::Robust)
            .input(ForestInput::TopZEvidence { m: 5 });
        let m = p.fit(x.view()).unwrap();
        let (mut v, mut ranks) = (Vec::new(), Vec::new());
        let z = m.std.transform_row(x.row(0));
        m.embed_z(z.view(), &mut v, Some(&mut ranks));
        assert_eq!(v.len(), 5);
        assert_eq!(&ranks[..2], &[5, 1]);
        assert!((v[0] - z[5] * z[5]).abs() < 1e-12);
        assert!((v[1] - v[0] - z[1] * z[1]).abs() < 1e-9);
        assert!(v.windows(2).all(|w| w[1] >= w[0]));
        let a = m.attribute(x.row(0), 2);
        assert_eq!(a[0].feature, 5);
        assert_eq!(a[1].feature, 1);
    }

    #[test]
    fn calmer_than_usual_is_not_anomalous() {
        // Top-|z| input: a window with every deviation near zero is rare in
        // the embedding, but must not score above the usual windows.
        let x = gaussian(500, 40);
        let m = IForestParams::default()
            .scaling(crate::core::detect::scale::Scaling::Robust)
            .fit(x.view())
            .unwrap();
        let calm = ndarray::Array1::zeros(40);
        let scores = m.score_many(x.view());
        let median = crate::core::detect::percentile(&scores.to_vec(), 50.0);
        assert!(
            m.score(calm.view()) <= median,
            "{} {median}",
            m.score(calm.view())
        );
    }

    #[test]
    fn channel_input_takes_each_channels_largest_deviation() {
        // Six columns in three channels (0,0,1,1,2,2); one window moves channel 1's second
        // column far out.
        let mut x = gaussian(400, 6);
        x[[0, 3]] = 12.0;
        let groups: std::sync::Arc<[usize]> = vec![0, 0, 1, 1, 2, 2].into();
        let p = IForestParams {
            column_groups: Some(groups),
            ..IForestParams::default()
        };
        let m = p.fit(x.view()).unwrap();
        let (mut v, mut ranks) = (Vec::new(), Vec::new());
        let z = m.std.transform_row(x.row(0));
        m.embed_z(z.view(), &mut v, Some(&mut ranks));
        assert_eq!(v.len(), 3);
        assert_eq!(ranks[1], 3);
        assert!((v[1] - z[3].abs()).abs() < 1e-12);
        assert!(m.score(x.row(0)) > m.threshold());
        assert_eq!(m.attribute(x.row(0), 1)[0].feature, 3);
        // Without groups, each column is its own coordinate.
        let alone = IForestParams::default().fit(x.view()).unwrap();
        alone.embed_z(z.view(), &mut v, None);
        assert_eq!(v.len(), 6);
    }

    #[test]
    fn c_of_n_matches_scikit_learn() {
        // sklearn.ensemble._iforest._average_path_length([256]) = 10.244770920119917
        assert!((super::average_path_length(256) - 10.244_770_920_119_917).abs() < 1e-12);
    }
}
