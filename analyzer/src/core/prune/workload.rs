//! One workload's correlations from its runs (paper §4.1: "for each workload, we compute the
//! average Pearson correlation matrix"): a channel pair's |r| in one run of a training job
//! can be an accident of that run's phases; averaged over the workload's runs, it is what
//! the workload does.
//!
//! The channels are the union of the runs' channels; a channel is judged where some run
//! judged it (enough samples, not constant). A pair's correlation is the mean over the runs
//! that judged both; a pair no run judged together is 0 (treated as uncorrelated, so nothing
//! is dropped on no evidence), as within one run.

use std::collections::{BTreeMap, BTreeSet};

use ndarray::Array2;

use super::{ranking, select, CurvePoint, CurveSums, RunCorrelation};
use crate::core::matrix::Channel;

/// The average correlation of `runs` (one workload), labelled `label`. Channels are in name
/// order, so the result does not depend on the order of the runs.
pub fn average(label: &str, runs: &[RunCorrelation]) -> RunCorrelation {
    let mut channels: BTreeMap<&str, &Channel> = BTreeMap::new();
    let mut judged_names: BTreeMap<&str, usize> = BTreeMap::new();
    for rc in runs {
        for c in &rc.channels {
            channels.entry(c.name.as_str()).or_insert(c);
        }
        for &j in &rc.judged {
            judged_names.insert(rc.channels[j].name.as_str(), 0);
        }
    }
    let channels: Vec<Channel> = channels.into_values().cloned().collect();
    let position: BTreeMap<&str, usize> = channels
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.as_str(), i))
        .collect();
    for (k, (_, slot)) in judged_names.iter_mut().enumerate() {
        *slot = k;
    }
    let k = judged_names.len();
    let (mut sum, mut count) = (Array2::<f64>::zeros((k, k)), Array2::<f64>::zeros((k, k)));
    for rc in runs {
        let slots: Vec<usize> = rc
            .judged
            .iter()
            .map(|&j| judged_names[rc.channels[j].name.as_str()])
            .collect();
        for (a, &sa) in slots.iter().enumerate() {
            for (b, &sb) in slots.iter().enumerate() {
                sum[[sa, sb]] += rc.r[[a, b]];
                count[[sa, sb]] += 1.0;
            }
        }
    }
    let mut r = Array2::<f64>::zeros((k, k));
    for a in 0..k {
        for b in 0..k {
            r[[a, b]] = if a == b {
                1.0
            } else if count[[a, b]] > 0.0 {
                sum[[a, b]] / count[[a, b]]
            } else {
                0.0
            };
        }
    }
    RunCorrelation {
        run: label.to_string(),
        judged: judged_names.keys().map(|n| position[n]).collect(),
        channels,
        r,
    }
}

/// Figure 4's curves when runs are grouped in workloads: each workload's selection at a
/// threshold comes from its averaged matrix ([`average`], what pruning does), and is judged
/// on each of its runs' own matrices — the multi-R² proxy and the strongest |r| of a removed
/// channel with a kept one, over the channels that run judged — so the regression is always
/// on a true correlation matrix (an average of several runs' matrices, with pairs from
/// different runs, need not be one). Ratios are per run; every run weighs the same. The
/// union ratio is that of [`super::union`] over the averaged workloads.
pub fn curves(
    workloads: &[(RunCorrelation, Vec<RunCorrelation>)],
    thresholds: &[f64],
) -> Vec<CurvePoint> {
    let orders: Vec<Vec<usize>> = workloads.iter().map(|(avg, _)| ranking(avg)).collect();
    let averaged: Vec<RunCorrelation> = workloads.iter().map(|(avg, _)| avg.clone()).collect();
    thresholds
        .iter()
        .map(|&t| {
            let mut sums = CurveSums::default();
            for ((avg, runs), order) in workloads.iter().zip(&orders) {
                let sel = select(avg, order, t);
                let kept: BTreeSet<&str> = sel
                    .selected()
                    .map(|a| avg.channels[avg.judged[a]].name.as_str())
                    .collect();
                for rc in runs {
                    if rc.judged.is_empty() {
                        continue;
                    }
                    let (s, removed): (Vec<usize>, Vec<usize>) = (0..rc.judged.len())
                        .partition(|&a| kept.contains(rc.channels[rc.judged[a]].name.as_str()));
                    sums.add(rc, &s, &removed);
                }
            }
            sums.point(t, &averaged)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::matrix::{Kind, MetricType, Subsystem};

    fn channel(name: &str) -> Channel {
        Channel {
            name: name.to_string(),
            metric: name.to_string(),
            subsystem: Subsystem::Cpu,
            kind: Kind::Dynamic,
            metric_type: MetricType::Gauge,
            resolution: 0.0,
            per_second: false,
            max_rate: None,
        }
    }

    fn run(names: &[&str], judged: Vec<usize>, r: Vec<f64>) -> RunCorrelation {
        let k = judged.len();
        RunCorrelation {
            run: "r".into(),
            channels: names.iter().map(|n| channel(n)).collect(),
            judged,
            r: Array2::from_shape_vec((k, k), r).unwrap(),
        }
    }

    #[test]
    fn pairs_average_over_the_runs_that_judged_both() {
        // Run 1 judges a, b, c; run 2 has c constant (not judged) and lists them in another
        // order; run 3 has no c at all.
        let r1 = run(
            &["a", "b", "c"],
            vec![0, 1, 2],
            vec![1.0, 0.9, 0.2, 0.9, 1.0, -0.4, 0.2, -0.4, 1.0],
        );
        let r2 = run(&["b", "a", "c"], vec![0, 1], vec![1.0, 0.5, 0.5, 1.0]);
        let r3 = run(&["a", "b"], vec![0, 1], vec![1.0, 0.1, 0.1, 1.0]);
        let w = average("w", &[r1, r2, r3]);
        let names: Vec<&str> = w
            .judged
            .iter()
            .map(|&j| w.channels[j].name.as_str())
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!((w.r[[0, 1]] - 0.5).abs() < 1e-12, "{}", w.r[[0, 1]]);
        assert!((w.r[[1, 0]] - 0.5).abs() < 1e-12);
        // c was judged only in run 1: its pairs are that run's.
        assert!((w.r[[0, 2]] - 0.2).abs() < 1e-12);
        assert!((w.r[[1, 2]] + 0.4).abs() < 1e-12);
        assert_eq!(w.r[[2, 2]], 1.0);
    }

    #[test]
    fn a_pair_never_judged_together_is_uncorrelated() {
        let r1 = run(&["a", "b"], vec![0], vec![1.0]);
        let r2 = run(&["a", "b"], vec![1], vec![1.0]);
        let w = average("w", &[r1, r2]);
        assert_eq!(w.judged.len(), 2);
        assert_eq!(w.r[[0, 1]], 0.0);
        assert_eq!(w.r[[1, 1]], 1.0);
    }

    #[test]
    fn a_workload_of_one_run_has_that_runs_curves() {
        let r = vec![1.0, 0.9, 0.1, 0.9, 1.0, 0.2, 0.1, 0.2, 1.0];
        let one = run(&["a", "b", "c"], vec![0, 1, 2], r);
        let t = [0.3, 0.5, 0.95];
        let plain = crate::core::prune::curves(std::slice::from_ref(&one), &t);
        let grouped = curves(&[(one.clone(), vec![one.clone()])], &t);
        // Equal, an undefined value (no removed channel: NaN) included.
        let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
        for (p, q) in plain.iter().zip(&grouped) {
            assert!(
                same(p.avg_multi_r2, q.avg_multi_r2)
                    && same(p.avg_max_abs_r, q.avg_max_abs_r)
                    && same(p.selected_ratio, q.selected_ratio)
                    && same(p.union_selected_ratio, q.union_selected_ratio),
                "{p:?} {q:?}"
            );
        }
        // Two identical runs: the same again, each run weighing the same.
        let twice = curves(
            &[(
                average("w", &[one.clone(), one.clone()]),
                vec![one.clone(), one],
            )],
            &t,
        );
        for (p, q) in plain.iter().zip(&twice) {
            assert!(
                (p.avg_multi_r2 - q.avg_multi_r2).abs() < 1e-12,
                "{p:?} {q:?}"
            );
            assert!((p.selected_ratio - q.selected_ratio).abs() < 1e-12);
        }
    }
}
