//! `reveal-analyzer analyze` through the service's engine: a recording's windows all in one
//! baseline, one fit on them, and every window scored against it by the service's own layout,
//! detectors, verdict and claims (paper §4.2: the offline analysis fits on the whole run and
//! scores the windows it was fitted on).
//!
//! The service scores each window against a model of its trailing history; here the history
//! is the recording itself, so the model has seen every window it scores and the thresholds
//! are calibrated for that ([`Baseline::WholeRun`]). Everything after the fit — attribution,
//! the device behind a family channel, the words of a claim — is the service's.

use ndarray::Array2;

use super::{detector_set, device_namer, map_columns, Engine, EngineParams};
use crate::core::detect::DetectorsConfig;
use crate::core::families::{FamilyParams, Folded};
use crate::core::features::{single, FeatureConfig};
use crate::core::fit::{fit_with, Baseline};
use crate::core::score::Scorer;
use crate::core::stats::column_medians;
use crate::core::window::{WindowConfig, WindowPlan};
use crate::online::WindowScore;

/// What [`Engine::score_in_sample`] found on one host's recording.
pub struct InSample {
    /// One per planned window, in order.
    pub windows: Vec<WindowScore>,
    /// Each window's feature row, in the layout's columns: what the model was fitted on.
    pub rows: Array2<f64>,
    /// The layout's columns, `channel__feature`.
    pub columns: Vec<String>,
    /// The fitted detectors, and those of the set that could not be fitted with the reason.
    pub detectors: Vec<String>,
    pub not_fitted: Vec<(&'static str, String)>,
    /// Columns no fitted detector scores (constant or mostly missing in the run).
    pub columns_left_out: usize,
}

impl EngineParams {
    /// The engine as `analyze` runs it: one baseline, the whole recording, never refitted.
    pub fn in_sample(
        window: WindowConfig,
        features: FeatureConfig,
        seed: u64,
        detectors: Option<DetectorsConfig>,
        families: FamilyParams,
    ) -> EngineParams {
        let never = i64::MAX / 4;
        EngineParams {
            window,
            features,
            baseline_ms: never,
            refit_ms: never,
            warmup_ms: never,
            seed,
            forget_host_ms: never,
            episodes: Default::default(),
            detectors,
            calibration: Baseline::WholeRun,
            families,
        }
    }
}

impl Engine {
    /// Fits one model on every window of `plan` over the folded recording `folded` and scores
    /// each of those windows against it. An error says why no detector could be fitted.
    pub fn score_in_sample(
        &mut self,
        folded: &Folded,
        plan: &WindowPlan,
    ) -> Result<InSample, String> {
        let m = &folded.matrix;
        let fm = self.extractor.extract(m, plan);
        let host = self.hosts.entry(m.host.clone()).or_default();
        let map = map_columns(host, &fm, &self.params);
        let mut rows = Array2::from_elem((fm.windows.len(), host.layout.len()), f64::NAN);
        for wi in 0..fm.windows.len() {
            for &(c, idx) in &map {
                // As precise as the service's baseline keeps it.
                rows[[wi, idx]] = single(fm.values[[wi, c]]);
            }
        }
        let set = detector_set(&self.params, &host.layout);
        let last = fm.windows.last().map_or(0, |w| w.end_ms);
        let fitted = fit_with(
            rows.view(),
            &set,
            self.params.seed,
            last,
            self.params.calibration,
        )
        .map_err(|e| format!("{e} on this host's windows"))?;
        let width = host.layout.len();
        let columns_left_out = (0..width)
            .filter(|&j| {
                fitted.detectors.iter().all(|c| {
                    c.model
                        .columns()
                        .get(j)
                        .is_some_and(|c| c.reason().is_some())
                })
            })
            .count();
        let baseline = column_medians(&rows);
        let mut scorer = Scorer::new(self.params.window.stride_ms);
        let windows = fm
            .windows
            .iter()
            .enumerate()
            .map(|(wi, w)| {
                let namer = device_namer(folded, None, w.start_ms, w.end_ms);
                let row = rows.row(wi).to_vec();
                super::score_window(
                    &m.host,
                    w.end_ms,
                    &row,
                    &fitted,
                    &mut scorer,
                    &host.layout,
                    &namer,
                    Some(&baseline),
                )
            })
            .collect();
        Ok(InSample {
            windows,
            columns: host
                .layout
                .iter()
                .map(|c| format!("{}__{}", c.channel, c.feature.suffix()))
                .collect(),
            rows,
            detectors: fitted
                .detectors
                .iter()
                .map(|c| c.model.name().to_string())
                .collect(),
            not_fitted: fitted.not_fitted.clone(),
            columns_left_out,
        })
    }
}
