//! Sliding windows over a [`HostMatrix`] (paper §4.2: 3 s windows, 1 s stride, 100 ms
//! samples), and the rule that keeps junk out of the detectors.
//!
//! Window `id` starts at `matrix.start_ms + id · stride`, so an id names the same span in
//! every report. A window is **skipped** (counted, never scored) when no scored channel has
//! a sample in it, or when the channels present in it hold fewer than `min_fraction` of
//! their samples (a scrape outage, stale markers). A channel that is absent from a window
//! (appeared later, vanished earlier) does not count against it; inside a kept window, a
//! channel with fewer than `min_fraction` samples gets NaN features, which the detectors
//! treat as "at baseline".

use serde::Serialize;

use crate::core::matrix::{HostMatrix, Kind};

/// Window geometry and the completeness rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowConfig {
    /// Sample spacing; the matrix must be on this grid.
    pub step_ms: i64,
    /// Window length.
    pub window_ms: i64,
    /// Distance between window starts.
    pub stride_ms: i64,
    /// Least fraction of finite samples a window (and a channel within it) must have.
    pub min_fraction: f64,
}

impl Default for WindowConfig {
    fn default() -> Self {
        WindowConfig {
            step_ms: 100,
            window_ms: 3000,
            stride_ms: 1000,
            min_fraction: 0.8,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum WindowError {
    #[error("window settings: {0}")]
    Config(String),
    #[error("the data is on a {got} ms grid, the windows expect {want} ms")]
    Step { got: i64, want: i64 },
}

impl WindowConfig {
    /// Rejects settings that cannot make windows: non-positive durations, a window or stride
    /// that is not a whole number of steps, a fraction outside (0, 1].
    pub fn check(&self) -> Result<(), WindowError> {
        let bad = |m: String| Err(WindowError::Config(m));
        if self.step_ms <= 0 || self.window_ms <= 0 || self.stride_ms <= 0 {
            return bad(format!(
                "step, window and stride must be positive (got {} / {} / {} ms)",
                self.step_ms, self.window_ms, self.stride_ms
            ));
        }
        if self.window_ms % self.step_ms != 0 || self.stride_ms % self.step_ms != 0 {
            return bad(format!(
                "window ({} ms) and stride ({} ms) must be multiples of the step ({} ms)",
                self.window_ms, self.stride_ms, self.step_ms
            ));
        }
        if self.window_ms / self.step_ms < 2 {
            return bad("a window needs at least 2 samples".to_string());
        }
        if !(self.min_fraction > 0.0 && self.min_fraction <= 1.0) {
            return bad(format!(
                "min_fraction must be in (0, 1], got {}",
                self.min_fraction
            ));
        }
        Ok(())
    }

    /// Samples per window.
    pub fn samples(&self) -> usize {
        (self.window_ms / self.step_ms) as usize
    }

    /// Steps between window starts.
    pub fn stride(&self) -> usize {
        (self.stride_ms / self.step_ms) as usize
    }

    /// Least finite samples a channel needs in a window to get features.
    pub fn min_samples(&self) -> usize {
        ((self.min_fraction * self.samples() as f64).ceil() as usize).max(1)
    }
}

/// One window of a host's matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Window {
    pub id: usize,
    /// Index of the first step in the matrix.
    pub first_step: usize,
    pub start_ms: i64,
    /// Exclusive end.
    pub end_ms: i64,
}

/// Why a window was not scored.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum SkipReason {
    /// No scored channel has a sample in the window.
    NoData,
    /// The channels present hold too few of their samples.
    TooFewSamples { fraction: f64 },
}

/// The windows of one host: those to score, and those skipped with the reason.
#[derive(Debug, Clone, Default)]
pub struct WindowPlan {
    pub windows: Vec<Window>,
    pub skipped: Vec<(Window, SkipReason)>,
}

/// Lays windows over `m`, judging completeness on dynamic and event channels (static ones
/// are not scored by single-host detectors).
pub fn plan_windows(m: &HostMatrix, cfg: &WindowConfig) -> Result<WindowPlan, WindowError> {
    cfg.check()?;
    if m.step_ms != cfg.step_ms {
        return Err(WindowError::Step {
            got: m.step_ms,
            want: cfg.step_ms,
        });
    }
    let (len, stride) = (cfg.samples(), cfg.stride());
    let scored: Vec<usize> = (0..m.n_channels())
        .filter(|&c| m.channels[c].kind != Kind::Static)
        .collect();
    let mut plan = WindowPlan::default();
    let mut id = 0;
    while id * stride + len <= m.n_steps() {
        let first = id * stride;
        let w = Window {
            id,
            first_step: first,
            start_ms: m.time_ms(first),
            end_ms: m.time_ms(first + len),
        };
        let (mut present, mut finite) = (0usize, 0usize);
        for &c in &scored {
            let row = m.values.row(c);
            let k = (first..first + len).filter(|&t| row[t].is_finite()).count();
            if k > 0 {
                present += 1;
                finite += k;
            }
        }
        if present == 0 {
            plan.skipped.push((w, SkipReason::NoData));
        } else {
            let fraction = finite as f64 / (present * len) as f64;
            if fraction < cfg.min_fraction {
                plan.skipped
                    .push((w, SkipReason::TooFewSamples { fraction }));
            } else {
                plan.windows.push(w);
            }
        }
        id += 1;
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use ndarray::Array2;

    use super::*;
    use crate::core::matrix::{Channel, MetricType, Subsystem};

    fn matrix(rows: Vec<Vec<f64>>) -> HostMatrix {
        let n = rows[0].len();
        let channels = (0..rows.len())
            .map(|i| Channel {
                name: format!("c{i}"),
                metric: format!("c{i}"),
                subsystem: Subsystem::Cpu,
                kind: Kind::Dynamic,
                metric_type: MetricType::Gauge,
                resolution: 0.0,
                per_second: false,
                max_rate: None,
            })
            .collect();
        let flat: Vec<f64> = rows.into_iter().flatten().collect();
        HostMatrix {
            host: "h".into(),
            start_ms: 0,
            step_ms: 100,
            channels,
            values: Array2::from_shape_vec((flat.len() / n, n), flat).unwrap(),
            non_finite_samples: 0,
        }
    }

    #[test]
    fn windows_skip_gaps_but_not_vanished_channels() {
        // 60 steps = 6 s: windows start at 0,1,2,3 s. Channel 0 has a 1.2 s outage from
        // 4.5 s; channel 1 vanishes at 2 s. Window 1 loses too much of channel 1 as it
        // vanishes; window 2 no longer counts it; window 3 has the outage.
        let a: Vec<f64> = (0..60)
            .map(|t| {
                if (45..57).contains(&t) {
                    f64::NAN
                } else {
                    t as f64
                }
            })
            .collect();
        let b: Vec<f64> = (0..60)
            .map(|t| if t < 20 { 1.0 } else { f64::NAN })
            .collect();
        let m = matrix(vec![a, b]);
        let plan = plan_windows(&m, &WindowConfig::default()).unwrap();
        let kept: Vec<usize> = plan.windows.iter().map(|w| w.id).collect();
        assert_eq!(kept, [0, 2]);
        let skipped: Vec<usize> = plan.skipped.iter().map(|(w, _)| w.id).collect();
        assert_eq!(skipped, [1, 3]);
        assert_eq!(plan.windows[1].start_ms, 2000);
        assert_eq!(plan.windows[1].end_ms, 5000);
        let all_gap = matrix(vec![vec![f64::NAN; 40]]);
        let plan = plan_windows(&all_gap, &WindowConfig::default()).unwrap();
        assert!(plan.windows.is_empty());
        assert!(matches!(plan.skipped[0].1, SkipReason::NoData));
    }

    #[test]
    fn bad_settings_are_refused() {
        let ok = WindowConfig::default();
        for cfg in [
            WindowConfig { stride_ms: 0, ..ok },
            WindowConfig {
                window_ms: 3050,
                ..ok
            },
            WindowConfig {
                window_ms: 100,
                ..ok
            },
            WindowConfig {
                min_fraction: 0.0,
                ..ok
            },
            WindowConfig {
                min_fraction: f64::NAN,
                ..ok
            },
        ] {
            assert!(cfg.check().is_err(), "{cfg:?}");
        }
        let m = matrix(vec![vec![1.0; 40]]);
        let cfg = WindowConfig { step_ms: 200, ..ok };
        assert!(matches!(
            plan_windows(&m, &cfg),
            Err(WindowError::Step { .. })
        ));
    }
}
