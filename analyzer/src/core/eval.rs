//! Detector evaluation against known labels.

/// Area under the ROC curve of `scores` for binary `labels` (true =
/// anomalous): the probability that a random anomalous window scores above a
/// random normal one, ties counting one half (the Mann–Whitney statistic, as
/// scikit-learn's `roc_auc_score`). `None` when a class is empty or a score
/// is NaN.
pub fn roc_auc(scores: &[f64], labels: &[bool]) -> Option<f64> {
    if scores.len() != labels.len() || scores.iter().any(|s| s.is_nan()) {
        return None;
    }
    let pos = labels.iter().filter(|&&l| l).count();
    let neg = labels.len() - pos;
    if pos == 0 || neg == 0 {
        return None;
    }
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    // Sum of the positive class's ranks, tied scores sharing their mean rank.
    let mut rank_sum = 0.0;
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && scores[idx[j + 1]] == scores[idx[i]] {
            j += 1;
        }
        let mean_rank = (i + j) as f64 / 2.0 + 1.0;
        rank_sum += mean_rank * idx[i..=j].iter().filter(|&&k| labels[k]).count() as f64;
        i = j + 1;
    }
    let (p, n) = (pos as f64, neg as f64);
    Some((rank_sum - p * (p + 1.0) / 2.0) / (p * n))
}

#[cfg(test)]
mod tests {
    use super::roc_auc;

    #[test]
    fn matches_scikit_learn_examples() {
        // sklearn.metrics.roc_auc_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == 0.75
        let auc = roc_auc(&[0.1, 0.4, 0.35, 0.8], &[false, false, true, true]).unwrap();
        assert!((auc - 0.75).abs() < 1e-12);
        // All tied: 0.5.
        assert_eq!(roc_auc(&[1.0; 4], &[false, true, false, true]), Some(0.5));
        assert_eq!(roc_auc(&[1.0, 2.0], &[true, true]), None);
        assert_eq!(roc_auc(&[f64::NAN, 2.0], &[true, false]), None);
    }
}
