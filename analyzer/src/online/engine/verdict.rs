//! One window's verdict: its scores, the detectors that flag it, and the evidence a person
//! reads (claims per subsystem, subsystem shares, remediation hints).

use std::collections::BTreeMap;

use ndarray::Array1;

use super::Col;
use crate::core::attribution::{by_channel, clear_subsystems, TOP_CHANNELS};
use crate::core::episodes::Evidence;
use crate::core::features::Feature;
use crate::core::fit::Fitted;
use crate::core::matrix::Subsystem;
use crate::core::score::Scorer;
use crate::online::WindowScore;

/// Which way the channel of evidence `col` (deviation `z`) moved in the window `x`, for its
/// remediation hint: a level feature's own sign; for a spread or shape (one flow where there
/// were two: the transmit rate's standard deviation rose while the rate fell), the sign of the
/// channel's mean level (event count for an event channel) as a detector's own scaling
/// measures it; the feature's own sign when no detector says.
pub(super) fn level_moved_up(
    col: &Col,
    z: f64,
    x: ndarray::ArrayView1<f64>,
    f: &Fitted,
    layout: &[Col],
) -> bool {
    if col.feature.is_level() {
        return z >= 0.0;
    }
    [Feature::Mean, Feature::SumValues]
        .iter()
        .find_map(|&level| {
            let j = layout
                .iter()
                .position(|c| c.channel == col.channel && c.feature == level)?;
            let v = *x.get(j)?;
            f.detectors.iter().find_map(|d| d.model.deviation(j, v))
        })
        .map_or(z >= 0.0, |d| d >= 0.0)
}

/// Names the device behind a family channel that moved up (`true`) or down: the device's own
/// channel and the sentence comparing it with its siblings (`core::families::Folded::siblings`).
pub(super) type Namer<'a> = dyn Fn(&str, bool) -> Option<(String, String)> + 'a;

/// Evidence kept per window in [`WindowScore::evidence`]: the claims' channels and as many
/// again.
const EVIDENCE_KEPT: usize = 2 * TOP_CHANNELS;

/// Scores one window and, when detectors flag it, says why. `baseline` holds each column's
/// median over the baseline where the caller has it (`analyze`: the whole run), for the
/// evidence's [`Evidence::baseline`]; the service passes none.
#[allow(clippy::too_many_arguments)]
pub(super) fn score_window(
    host: &str,
    end_ms: i64,
    row: &[f64],
    f: &Fitted,
    scorer: &mut Scorer,
    layout: &[Col],
    namer: &Namer,
    baseline: Option<&[f64]>,
) -> WindowScore {
    // Columns born after the fit are not in the model until the next refit.
    let x = Array1::from_iter((0..f.width).map(|j| row.get(j).copied().unwrap_or(f64::NAN)));
    let verdict = scorer.score(f, end_ms, x.view());
    let mut flagged = Vec::new();
    let mut share: BTreeMap<&'static str, f64> = BTreeMap::new();
    // Per feature: the flagging detectors that cite it, their summed and largest shares, its z.
    let mut pairs: Vec<Pair> = Vec::new();
    for &i in &verdict.flagging {
        let d = &f.detectors[i].model;
        flagged.push(d.name().to_string());
        let channel_of = |j: usize| layout.get(j).map(|c| c.channel.as_str());
        for a in by_channel(d.as_ref(), x.view(), TOP_CHANNELS, channel_of) {
            if let Some(col) = layout.get(a.feature) {
                *share.entry(col.subsystem.as_str()).or_default() += a.contribution;
            }
            // A pair whose value or attribution is not finite, or that adds nothing to the
            // score, is no evidence.
            let value = x.get(a.feature).copied().unwrap_or(f64::NAN);
            if !(value.is_finite() && a.z.is_finite() && a.contribution.is_finite())
                || a.contribution <= 0.0
            {
                continue;
            }
            match pairs.iter_mut().find(|p| p.column == a.feature) {
                Some(p) => {
                    p.detectors.push(d.name());
                    p.sum += a.contribution;
                    p.max = p.max.max(a.contribution);
                    if a.z.abs() > p.z.abs() {
                        p.z = a.z;
                    }
                }
                None => pairs.push(Pair {
                    column: a.feature,
                    detectors: vec![d.name()],
                    sum: a.contribution,
                    max: a.contribution,
                    z: a.z,
                }),
            }
        }
    }

    let clear = clear_subsystems(
        pairs
            .iter()
            .filter_map(|p| layout.get(p.column).map(|c| (c.subsystem.as_str(), p.z))),
    );
    share.retain(|s, _| clear.contains(s));
    let total: f64 = share.values().sum();
    let subsystems = Subsystem::ALL
        .iter()
        .filter(|s| **s != Subsystem::Other)
        .map(|s| {
            let v = share.get(s.as_str()).copied().unwrap_or(0.0);
            (
                s.as_str().to_string(),
                if total > 0.0 { v / total } else { 0.0 },
            )
        })
        .collect();
    // Evidence that several detectors cite leads: one detector's flag on one feature (a
    // heavy-tailed statistic of a near-idle channel) does not speak for the window.
    pairs.sort_by(|a, b| {
        b.detectors
            .len()
            .cmp(&a.detectors.len())
            .then(b.sum.total_cmp(&a.sum))
    });
    // Evidence on a device family's channel names the device behind it
    // (`crate::core::families`), and its hint is the device's.
    let evidence: Vec<(Evidence, &Col)> = pairs
        .iter()
        .filter_map(|p| layout.get(p.column).map(|c| (p, c)))
        .map(|(p, c)| {
            let (claim, channel) = match namer(&c.channel, p.z >= 0.0) {
                Some((device, sentence)) => (
                    crate::core::claim::device_evidence(
                        &device,
                        c.subsystem,
                        &sentence,
                        &c.channel,
                        c.feature,
                        p.z,
                    ),
                    device,
                ),
                None => (claim(c, p.z), c.channel.clone()),
            };
            let e = Evidence {
                channel,
                subsystem: c.subsystem,
                feature: c.feature,
                feature_name: c.feature.tsfresh_name(),
                detectors: p.detectors.iter().map(|d| d.to_string()).collect(),
                contribution: p.max,
                z: p.z,
                value: x[p.column],
                baseline: baseline
                    .and_then(|b| b.get(p.column).copied())
                    .unwrap_or(f64::NAN),
                claim,
            };
            (e, c)
        })
        .collect();
    let claims: Vec<String> = evidence
        .iter()
        .take(TOP_CHANNELS)
        .map(|(e, _)| e.claim.clone())
        .collect();
    // The strongest claim of each subsystem, for alerts that name one subsystem each, and
    // the remediation hint of that evidence where the table has one.
    let mut by_subsystem: Vec<(String, String)> = Vec::new();
    let mut hints: Vec<(String, String)> = Vec::new();
    for (e, col) in &evidence {
        let sub = e.subsystem.as_str();
        if !by_subsystem.iter().any(|(s, _)| s == sub) {
            let up = level_moved_up(col, e.z, x.view(), f, layout);
            if let Some(h) = crate::core::hints::hint(sub, &e.channel, up) {
                hints.push((sub.to_string(), h));
            }
            by_subsystem.push((sub.to_string(), e.claim.clone()));
        }
    }
    // Every subsystem has its claim above; the window keeps the strongest pairs.
    let mut evidence: Vec<Evidence> = evidence.into_iter().map(|(e, _)| e).collect();
    evidence.truncate(EVIDENCE_KEPT);
    WindowScore {
        host: host.to_string(),
        end_ms,
        agreement: flagged.len() as u32,
        event: None,
        scores: verdict.scores,
        detectors: flagged,
        subsystems,
        summary: claims.first().cloned().unwrap_or_default(),
        description: claims.join("; "),
        claims: by_subsystem,
        hints,
        evidence,
    }
}

/// One feature the flagging detectors cite.
struct Pair {
    column: usize,
    detectors: Vec<&'static str>,
    /// Summed and largest share of a detector's score.
    sum: f64,
    max: f64,
    z: f64,
}

/// The evidence's words ([`crate::core::claim::evidence`], shared with `analyze`).
fn claim(c: &Col, z: f64) -> String {
    crate::core::claim::evidence(&c.channel, c.subsystem, c.feature, z)
}
