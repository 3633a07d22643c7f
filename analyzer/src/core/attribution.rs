//! A flagging detector's attribution as evidence: the channels it names, each once, by its
//! heaviest feature (paper §4.4, DESIGN "Analyzer" step 5). `analyze` (`core/pipeline.rs`) and
//! the service (`online/engine/verdict.rs`) both rank and word what this returns.

use crate::core::detect::{Attribution, Detector};

/// Channels one detector's attribution names per window, by default.
pub const TOP_CHANNELS: usize = 5;

/// Least |z| (baseline spreads from its centre) of a subsystem's strongest evidence for that
/// subsystem to keep its share of a window's attribution beside one whose evidence reaches it.
pub const EVIDENCE_Z: f64 = 3.0;

/// Features asked of a detector per channel it is to name: one channel's features move
/// together, so its heaviest few features can all be one channel's.
const FEATURES_PER_CHANNEL: usize = 4;

/// The `top` channels detector `d` holds heaviest in window `x`, each as its heaviest feature,
/// heaviest first. `channel_of` maps a feature column to its channel (`None`: a column the
/// caller does not know, left out).
///
/// A channel is one piece of evidence however many of its features moved: a dynamic channel
/// has a dozen features that all move when its level does, an event channel two, and counting
/// features would weigh a rate's move six times an event count's in the subsystem shares (a
/// packet loss seen as the retransmission count and as the timer softirqs the retransmissions
/// raise was a CPU finding).
///
/// A feature with no value in `x` (its series vanished in the window) is no evidence: it is
/// left out whatever weight a detector gives it.
pub fn by_channel<K: PartialEq>(
    d: &dyn Detector,
    x: ndarray::ArrayView1<f64>,
    top: usize,
    channel_of: impl Fn(usize) -> Option<K>,
) -> Vec<Attribution> {
    let present = |j: usize| x.get(j).is_some_and(|v| v.is_finite());
    heaviest_per_channel(
        d.attribute(x, FEATURES_PER_CHANNEL * top),
        top,
        |j: usize| present(j).then(|| channel_of(j)).flatten(),
    )
}

/// The subsystems that keep their share of a window's attribution, of `evidence` given as
/// (subsystem, z of one piece of its evidence): those with a piece at least [`EVIDENCE_Z`]
/// away from its baseline, or every subsystem when none has one.
///
/// A detector spreads its weight over every feature it reads, and the channels of a
/// subsystem at rest each get a slice: beside a memory fault at z = 78, four idle CPUs at
/// |z| ≤ 2.5 took a quarter of the shares and raised an alert of their own on the CPU. A
/// subsystem whose every piece of evidence is within its usual spread says nothing of its
/// own while another subsystem's evidence is clear; when none is clear (a broken
/// correlation seen only by the PCA residual), the shares stand as the detectors gave them.
pub fn clear_subsystems<S: PartialEq + Copy>(
    evidence: impl IntoIterator<Item = (S, f64)>,
) -> Vec<S> {
    let mut all: Vec<S> = Vec::new();
    let mut clear: Vec<S> = Vec::new();
    for (s, z) in evidence {
        if !all.contains(&s) {
            all.push(s);
        }
        if z.abs() >= EVIDENCE_Z && !clear.contains(&s) {
            clear.push(s);
        }
    }
    if clear.is_empty() {
        all
    } else {
        clear
    }
}

fn heaviest_per_channel<K: PartialEq>(
    mut attributions: Vec<Attribution>,
    top: usize,
    channel_of: impl Fn(usize) -> Option<K>,
) -> Vec<Attribution> {
    attributions.sort_by(|a, b| b.contribution.total_cmp(&a.contribution));
    let mut out: Vec<(K, Attribution)> = Vec::with_capacity(top);
    // Heaviest first: the first of each channel is its heaviest.
    for a in attributions {
        if out.len() == top {
            break;
        }
        let Some(k) = channel_of(a.feature) else {
            continue;
        };
        if !out.iter().any(|(seen, _)| *seen == k) {
            out.push((k, a));
        }
    }
    out.into_iter().map(|(_, a)| a).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(feature: usize, contribution: f64) -> Attribution {
        Attribution {
            feature,
            contribution,
            z: 1.0,
        }
    }

    #[test]
    fn a_channel_counts_once_by_its_heaviest_feature() {
        // A packet loss: the timer softirq rate moves in five features (columns 0–4: its
        // level, spread, trend), the retransmission count (5) in one, the receive rate (6) in
        // one. Out of order on purpose: heaviest first is this rule's job.
        let channel = |j: usize| {
            Some(match j {
                0..=4 => "softirq_hrtimer",
                5 => "retrans_segs",
                _ => "rx_bytes",
            })
        };
        let attributions = vec![
            at(2, 0.15),
            at(0, 0.2),
            at(5, 0.18),
            at(1, 0.17),
            at(3, 0.12),
            at(4, 0.1),
            at(6, 0.08),
        ];
        let kept = heaviest_per_channel(attributions.clone(), 5, channel);
        let cols: Vec<usize> = kept.iter().map(|a| a.feature).collect();
        assert_eq!(
            cols,
            vec![0, 5, 6],
            "each channel once, its heaviest feature"
        );
        let share = |cpu: bool| -> f64 {
            kept.iter()
                .filter(|a| (a.feature < 5) == cpu)
                .map(|a| a.contribution)
                .sum()
        };
        assert!(share(false) > share(true), "the loss is a network finding");
        assert_eq!(heaviest_per_channel(attributions, 2, channel).len(), 2);
    }

    #[test]
    fn a_channel_without_samples_is_never_evidence() {
        use crate::core::detect::linalg::standard_normal;
        use crate::core::detect::pca::PcaParams;
        use crate::core::detect::Fit;
        use rand::SeedableRng;
        // 300 baseline windows of 12 features driven by one factor; feature 4 is skewed (a
        // rate that idles and bursts), so its baseline centre and its mean standardized value
        // differ: read as "missing = 0 z", a vanished series would sit off the detector's
        // centre and be named (a stale CPU series led a memory alert, z = 0.0).
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let x = ndarray::Array2::from_shape_fn((300, 12), |(_, j)| {
            let v = standard_normal(&mut rng);
            if j == 4 {
                (2.0 * v).exp()
            } else {
                v
            }
        });
        let m = PcaParams::default().fit(x.view()).unwrap();
        let mut row = x.row(10).to_owned();
        row[4] = f64::NAN;
        row[9] += 40.0;
        let named: Vec<usize> = by_channel(&m, row.view(), 12, Some)
            .iter()
            .map(|a| a.feature)
            .collect();
        assert!(named.contains(&9), "{named:?}");
        assert!(
            !named.contains(&4),
            "the missing feature is named: {named:?}"
        );
        // Missing alone is no anomaly: the row without its feature scores as the baseline does.
        let mut quiet = x.row(10).to_owned();
        quiet[4] = f64::NAN;
        assert!(!m.flags(quiet.view()) || m.flags(x.row(10)));
    }

    #[test]
    fn subsystems_at_rest_keep_no_share_beside_a_clear_one() {
        let ev = [
            ("cpu", -2.5),
            ("memory", 78.0),
            ("cpu", 0.1),
            ("memory", 2.0),
        ];
        assert_eq!(clear_subsystems(ev), vec!["memory"]);
        // A write burst: storage and CPU (I/O wait) both clear, both kept.
        assert_eq!(
            clear_subsystems([("storage", 40.0), ("cpu", -6.0)]),
            vec!["storage", "cpu"]
        );
        // None clear: every subsystem keeps its share.
        assert_eq!(
            clear_subsystems([("network", 1.5), ("cpu", 2.0)]),
            vec!["network", "cpu"]
        );
        assert!(clear_subsystems(std::iter::empty::<(&str, f64)>()).is_empty());
    }

    #[test]
    fn columns_of_no_known_channel_are_left_out() {
        let got = heaviest_per_channel(vec![at(9, 0.9), at(0, 0.1)], 5, |j: usize| {
            (j == 0).then_some(0)
        });
        assert_eq!(got.iter().map(|a| a.feature).collect::<Vec<_>>(), vec![0]);
    }
}
