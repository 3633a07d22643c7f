//! Seeded synthetic telemetry, windowed into features, with injected shifts:
//! the benchmark and quality-test data for the detectors.
//!
//! Channels are sampled every step (30 samples per window) and summarized per
//! window as mean, standard deviation and least-squares slope, the layout of
//! the analyzer's feature matrix for 3 features per channel. What makes a
//! channel move is what moves real host telemetry: a few shared workload
//! factors (slow AR(1) processes, one per group of channels plus one global),
//! a level of the channel's own that drifts per window, and sample noise
//! (Gaussian, or Laplace for a tenth of the channels). Units and offsets differ
//! per channel. An anomalous window has `shifted` channels offset by `shift`
//! times the channel's standard deviation over the run, on all its samples.

use ndarray::Array2;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::linalg::standard_normal;

/// Shape and anomaly of a synthetic run.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticSpec {
    pub windows: usize,
    pub channels: usize,
    pub samples_per_window: usize,
    /// Channel groups, each with its own workload factor.
    pub groups: usize,
    /// Fraction of windows that are anomalous.
    pub anomaly_fraction: f64,
    /// Channels shifted in an anomalous window.
    pub shifted: usize,
    /// Shift in units of the channel's standard deviation over the run.
    pub shift: f64,
    pub seed: u64,
}

impl SyntheticSpec {
    /// The shape: 3,600 windows × 700 channels (2,100 features), 1%
    /// anomalous windows.
    pub fn hour(shifted: usize, shift: f64, seed: u64) -> Self {
        SyntheticSpec {
            windows: 3600,
            channels: 700,
            samples_per_window: 30,
            groups: 10,
            anomaly_fraction: 0.01,
            shifted,
            shift,
            seed,
        }
    }
}

/// A generated matrix: rows are windows, columns `3c` (mean), `3c + 1`
/// (standard deviation) and `3c + 2` (slope) of channel `c`.
#[derive(Debug, Clone)]
pub struct Synthetic {
    pub features: Array2<f64>,
    pub labels: Vec<bool>,
    /// Shifted channels of each anomalous window (empty for normal ones).
    pub shifted: Vec<Vec<usize>>,
}

struct Channel {
    group: usize,
    group_load: f64,
    global_load: f64,
    own_load: f64,
    noise: f64,
    laplace: bool,
    unit: f64,
    offset: f64,
}

/// Generates the run described by `spec`.
pub fn generate(spec: &SyntheticSpec) -> Synthetic {
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let (w, c, s) = (spec.windows, spec.channels, spec.samples_per_window);
    let channels: Vec<Channel> = (0..c)
        .map(|i| {
            let own: f64 = rng.random_range(0.05..0.3);
            let global = 0.2 * (1.0 - own);
            Channel {
                group: i % spec.groups.max(1),
                group_load: (1.0 - own - global).sqrt()
                    * if rng.random::<bool>() { 1.0 } else { -1.0 },
                global_load: global.sqrt(),
                own_load: own.sqrt(),
                noise: rng.random_range(0.2..1.0),
                laplace: rng.random::<f64>() < 0.1,
                unit: 10f64.powf(rng.random_range(-1.0..2.0)),
                offset: rng.random_range(-100.0..1000.0),
            }
        })
        .collect();

    // Factors at sample resolution: AR(1), unit variance, ~10 s memory.
    let rho: f64 = 0.99;
    let innov = (1.0 - rho * rho).sqrt();
    let factors = spec.groups.max(1) + 1;
    let mut f = vec![0.0; factors];
    for v in f.iter_mut() {
        *v = standard_normal(&mut rng);
    }
    let mut factor_path = Array2::zeros((w * s, factors));
    for t in 0..w * s {
        for (k, v) in f.iter_mut().enumerate() {
            *v = rho * *v + innov * standard_normal(&mut rng);
            factor_path[[t, k]] = *v;
        }
    }

    let n_anom = ((w as f64) * spec.anomaly_fraction).round() as usize;
    let mut labels = vec![false; w];
    let mut shifted = vec![Vec::new(); w];
    let mut order: Vec<usize> = (0..w).collect();
    for i in 0..n_anom.min(w) {
        let j = rng.random_range(i..w);
        order.swap(i, j);
        labels[order[i]] = true;
        let mut chans: Vec<usize> = (0..c).collect();
        for k in 0..spec.shifted.min(c) {
            let j = rng.random_range(k..c);
            chans.swap(k, j);
        }
        chans.truncate(spec.shifted.min(c));
        shifted[order[i]] = chans;
    }

    // Raw samples, channel by channel (one channel's run fits in cache).
    let mut raw = vec![0.0; w * s];
    let mut features = Array2::zeros((w, 3 * c));
    let noise_rho: f64 = 0.5;
    let noise_innov = (1.0 - noise_rho * noise_rho).sqrt();
    for (ci, ch) in channels.iter().enumerate() {
        let mut e = 0.0;
        for win in 0..w {
            let own = ch.own_load * standard_normal(&mut rng);
            for t in 0..s {
                let idx = win * s + t;
                let draw = if ch.laplace {
                    laplace(&mut rng)
                } else {
                    standard_normal(&mut rng)
                };
                e = noise_rho * e + noise_innov * draw;
                let level = ch.group_load * factor_path[[idx, ch.group]]
                    + ch.global_load * factor_path[[idx, factors - 1]]
                    + own;
                raw[idx] = level + ch.noise * e;
            }
        }
        let sd = std_dev(&raw);
        for win in 0..w {
            let seg = &mut raw[win * s..(win + 1) * s];
            if shifted[win].contains(&ci) {
                for v in seg.iter_mut() {
                    *v += spec.shift * sd;
                }
            }
            let (mean, std, slope) = summarize(seg);
            features[[win, 3 * ci]] = ch.offset + ch.unit * mean;
            features[[win, 3 * ci + 1]] = ch.unit * std;
            features[[win, 3 * ci + 2]] = ch.unit * slope;
        }
    }
    Synthetic {
        features,
        labels,
        shifted,
    }
}

/// Unit-variance Laplace draw.
fn laplace(rng: &mut ChaCha8Rng) -> f64 {
    let u: f64 = rng.random::<f64>() - 0.5;
    -u.signum() * (1.0 - 2.0 * u.abs()).max(f64::MIN_POSITIVE).ln() / std::f64::consts::SQRT_2
}

fn std_dev(v: &[f64]) -> f64 {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n).sqrt()
}

/// Mean, population standard deviation, least-squares slope per sample.
fn summarize(v: &[f64]) -> (f64, f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let tm = (n - 1.0) / 2.0;
    let (mut sxx, mut sxy, mut ss) = (0.0, 0.0, 0.0);
    for (i, &y) in v.iter().enumerate() {
        let dt = i as f64 - tm;
        sxx += dt * dt;
        sxy += dt * (y - mean);
        ss += (y - mean) * (y - mean);
    }
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (mean, (ss / n).sqrt(), slope)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_labels_and_reproducibility() {
        let spec = SyntheticSpec {
            windows: 200,
            channels: 20,
            samples_per_window: 30,
            groups: 4,
            anomaly_fraction: 0.05,
            shifted: 3,
            shift: 3.0,
            seed: 1,
        };
        let a = generate(&spec);
        assert_eq!(a.features.dim(), (200, 60));
        assert_eq!(a.labels.iter().filter(|&&l| l).count(), 10);
        assert!(a
            .shifted
            .iter()
            .zip(&a.labels)
            .all(|(s, &l)| s.len() == if l { 3 } else { 0 }));
        assert!(a.features.iter().all(|v| v.is_finite()));
        assert_eq!(generate(&spec).features, a.features);
    }
}
