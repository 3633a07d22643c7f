//! From detector attributions (feature columns) to evidence a person reads:
//! metric–feature pairs, ranked across detectors, and subsystem shares
//! (paper §4.4, DESIGN "Analyzer" step 5).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::core::detect::{Attribution, DetectError};
use crate::core::matrix::Subsystem;

/// What a feature column is: which channel, which feature of it.
pub trait ColumnMeta {
    /// Channel name with its labels: `reveal_cpu_time_seconds_total{cpu="3",mode="user"}`.
    fn channel(&self) -> &str;
    /// tsfresh-style feature name: `value__variance`.
    fn feature(&self) -> &str;
    fn subsystem(&self) -> Subsystem;
}

/// A plain [`ColumnMeta`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Column {
    pub channel: String,
    pub feature: String,
    pub subsystem: Subsystem,
}

impl ColumnMeta for Column {
    fn channel(&self) -> &str {
        &self.channel
    }
    fn feature(&self) -> &str {
        &self.feature
    }
    fn subsystem(&self) -> Subsystem {
        self.subsystem
    }
}

/// One metric–feature pair behind a flagged window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// Column of the feature matrix.
    pub column: usize,
    pub channel: String,
    pub feature: String,
    pub subsystem: Subsystem,
    /// Detectors whose attribution names this pair.
    pub detectors: Vec<&'static str>,
    /// Sum of the pair's shares over those detectors (each detector's shares
    /// sum to at most 1), so a pair named by several detectors ranks first.
    pub weight: f64,
    /// The signed z with the largest magnitude the detectors reported.
    pub z: f64,
}

/// Merges the attributions of the detectors that flagged a window into
/// ranked evidence, the `top_n` heaviest first.
pub fn rank_evidence<C: ColumnMeta>(
    per_detector: &[(&'static str, Vec<Attribution>)],
    columns: &[C],
    top_n: usize,
) -> Result<Vec<Evidence>, DetectError> {
    let mut by_column: BTreeMap<usize, Evidence> = BTreeMap::new();
    for (name, attributions) in per_detector {
        for a in attributions {
            let Some(meta) = columns.get(a.feature) else {
                return Err(DetectError::MetaMismatch {
                    expected: a.feature + 1,
                    got: columns.len(),
                });
            };
            if !(a.contribution.is_finite() && a.z.is_finite()) {
                continue; // never turn a non-finite value into evidence
            }
            let e = by_column.entry(a.feature).or_insert_with(|| Evidence {
                column: a.feature,
                channel: meta.channel().to_string(),
                feature: meta.feature().to_string(),
                subsystem: meta.subsystem(),
                detectors: Vec::new(),
                weight: 0.0,
                z: 0.0,
            });
            if !e.detectors.contains(name) {
                e.detectors.push(name);
            }
            e.weight += a.contribution;
            if a.z.abs() > e.z.abs() {
                e.z = a.z;
            }
        }
    }
    let mut out: Vec<Evidence> = by_column.into_values().filter(|e| e.weight > 0.0).collect();
    out.sort_by(|a, b| b.weight.total_cmp(&a.weight).then(a.column.cmp(&b.column)));
    out.truncate(top_n);
    Ok(out)
}

/// Share of the evidence's weight per subsystem, largest first; sums to 1
/// when there is any evidence.
pub fn subsystem_shares(evidence: &[Evidence]) -> Vec<(Subsystem, f64)> {
    let total: f64 = evidence.iter().map(|e| e.weight).sum();
    if total <= 0.0 {
        return Vec::new();
    }
    let mut acc: BTreeMap<Subsystem, f64> = BTreeMap::new();
    for e in evidence {
        *acc.entry(e.subsystem).or_default() += e.weight / total;
    }
    let mut out: Vec<(Subsystem, f64)> = acc.into_iter().collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols() -> Vec<Column> {
        let c = |ch: &str, f: &str, s| Column {
            channel: ch.into(),
            feature: f.into(),
            subsystem: s,
        };
        vec![
            c(
                "reveal_cpu_frequency_hertz{cpu=\"0\"}",
                "value__mean",
                Subsystem::Cpu,
            ),
            c(
                "reveal_storage_read_bytes_total{device=\"sda\"}",
                "value__maximum",
                Subsystem::Storage,
            ),
            c(
                "reveal_network_receive_bytes_total{device=\"eth0\"}",
                "value__variance",
                Subsystem::Network,
            ),
        ]
    }

    fn at(feature: usize, contribution: f64, z: f64) -> Attribution {
        Attribution {
            feature,
            contribution,
            z,
        }
    }

    #[test]
    fn pairs_named_by_several_detectors_rank_first() {
        let per = vec![
            ("zscore", vec![at(1, 0.6, 4.0), at(0, 0.4, -3.0)]),
            ("iforest", vec![at(0, 0.5, -3.5), at(2, 0.1, 2.0)]),
        ];
        let ev = rank_evidence(&per, &cols(), 10).unwrap();
        assert_eq!(ev[0].column, 0);
        assert_eq!(ev[0].detectors, vec!["zscore", "iforest"]);
        assert!((ev[0].weight - 0.9).abs() < 1e-12);
        assert_eq!(ev[0].z, -3.5);
        let shares = subsystem_shares(&ev);
        assert_eq!(shares[0].0, Subsystem::Cpu);
        assert!((shares.iter().map(|s| s.1).sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn bad_input_is_an_error_or_skipped() {
        let per = vec![("pca", vec![at(7, 0.5, 1.0)])];
        assert!(rank_evidence(&per, &cols(), 3).is_err());
        let per = vec![("pca", vec![at(0, f64::NAN, 1.0)])];
        assert!(rank_evidence(&per, &cols(), 3).unwrap().is_empty());
        assert!(subsystem_shares(&[]).is_empty());
    }
}
