//! A flagging detector's attribution as evidence: the channels it names, each once, by its
//! heaviest feature (paper §4.4, DESIGN "Analyzer" step 5). `analyze` (`core/pipeline.rs`) and
//! the service (`online/engine/verdict.rs`) both rank and word what this returns.

use crate::core::detect::{Attribution, Detector};

/// Channels one detector's attribution names per window, by default.
pub const TOP_CHANNELS: usize = 5;

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
pub fn by_channel<K: PartialEq>(
    d: &dyn Detector,
    x: ndarray::ArrayView1<f64>,
    top: usize,
    channel_of: impl Fn(usize) -> Option<K>,
) -> Vec<Attribution> {
    heaviest_per_channel(d.attribute(x, FEATURES_PER_CHANNEL * top), top, channel_of)
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
    fn columns_of_no_known_channel_are_left_out() {
        let got = heaviest_per_channel(vec![at(9, 0.9), at(0, 0.1)], 5, |j: usize| {
            (j == 0).then_some(0)
        });
        assert_eq!(got.iter().map(|a| a.feature).collect::<Vec<_>>(), vec![0]);
    }
}
