//! Order statistics, once for the crate: the median and numpy's linear-interpolation
//! quantile. Every median here is the midpoint of the two middle values for an even count,
//! and every quantile interpolates linearly between order statistics (numpy's default
//! `method="linear"`), so detector thresholds match scikit-learn's and a median is the same
//! number whichever function computed it.
//!
//! Two entry points per statistic differ only in what the caller already has: an ascending
//! slice ([`median_sorted`], [`quantile_sorted`]) or values in any order ([`median`], which
//! selects in place without sorting; [`percentile`], which drops non-finite values first).

use ndarray::Array2;

/// Median of a non-empty slice, by selection (O(n)); reorders it.
pub fn median(v: &mut [f64]) -> f64 {
    let n = v.len();
    let mid = n / 2;
    let (_, &mut upper, _) = v.select_nth_unstable_by(mid, f64::total_cmp);
    if n % 2 == 1 {
        upper
    } else {
        let lower = v[..mid].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lower + upper) / 2.0
    }
}

/// Median of a non-empty ascending slice.
pub fn median_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// numpy's linear-interpolation quantile (`p` in [0, 1]) of a non-empty ascending slice.
pub fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    let pos = p.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// The `q`-th percentile (0–100) with linear interpolation between order
/// statistics, numpy's default, so thresholds match scikit-learn's.
/// Non-finite values are ignored; an empty input gives 0.
pub fn percentile(values: &[f64], q: f64) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    quantile_sorted(&v, q.clamp(0.0, 100.0) / 100.0)
}

/// Median of each column's finite values (NaN when there are none).
pub fn column_medians(x: &Array2<f64>) -> Vec<f64> {
    x.columns()
        .into_iter()
        .map(|c| {
            let mut v: Vec<f64> = c.iter().copied().filter(|v| v.is_finite()).collect();
            if v.is_empty() {
                return f64::NAN;
            }
            median(&mut v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn medians_agree_whatever_the_input_order() {
        for v in [
            vec![3.0],
            vec![2.0, 1.0],
            vec![5.0, -1.0, 3.0, 0.5],
            vec![1e300, -1e300, 7.0, 7.0, 2.0],
        ] {
            let mut sorted = v.clone();
            sorted.sort_by(f64::total_cmp);
            let mut scratch = v.clone();
            assert_eq!(median(&mut scratch), median_sorted(&sorted), "{v:?}");
            assert_eq!(
                quantile_sorted(&sorted, 0.5),
                median_sorted(&sorted),
                "{v:?}"
            );
        }
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn percentile_matches_numpy_linear() {
        // numpy.percentile([1, 2, 3, 4, 10], [0, 25, 50, 90, 100])
        let v = [10.0, 2.0, f64::NAN, 4.0, 1.0, 3.0];
        assert_eq!(percentile(&v, 0.0), 1.0);
        assert_eq!(percentile(&v, 25.0), 2.0);
        assert_eq!(percentile(&v, 50.0), 3.0);
        assert!((percentile(&v, 90.0) - 7.6).abs() < 1e-12);
        assert_eq!(percentile(&v, 100.0), 10.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
        assert_eq!(
            quantile_sorted(&[1.0, 2.0, 3.0, 4.0, 10.0], 0.9),
            percentile(&v, 90.0)
        );
    }

    #[test]
    fn column_medians_skip_missing_values() {
        let x = array![
            [1.0, f64::NAN],
            [f64::INFINITY, f64::NAN],
            [3.0, f64::NAN],
            [2.0, f64::NAN]
        ];
        let m = column_medians(&x);
        assert_eq!(m[0], 2.0);
        assert!(m[1].is_nan());
    }
}
