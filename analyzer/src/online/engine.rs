//! Per-host online analysis: new windows → features → scores against a baseline fitted on
//! the trailing history, refitted every `refit_every`; attribution of flagged windows.
//!
//! Each host has its own feature layout (the columns it has ever had, by name, so a channel
//! that appears later gets a new column and one that vanishes reads NaN), its own ring of
//! baseline rows, and its own fitted detectors. Until the ring spans `warmup`, windows are
//! skipped with reason `warmup`.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use ndarray::Array2;

use crate::config::{AnalysisConfig, EpisodeConfig};
use crate::core::detect::DetectorsConfig;
use crate::core::episodes::tracker::{Event, Tracker, TrackerParams};
use crate::core::episodes::OpenEpisode;
use crate::core::families::{fold, FamilyParams, Folded, KnownDevices};
use crate::core::features::{
    least_change, single, Extractor, Feature, FeatureConfig, FeatureMatrix,
};
use crate::core::fit::{fit_with_alerts, Baseline, Fitted};
use crate::core::matrix::{HostMatrix, Kind, Subsystem};
use crate::core::presence::{MissingDevice, Presence};
use crate::core::regime::{LeftOut, RegimeChange, RegimeParams, RegimeTracker, RegimeWindow};
use crate::core::score::Scorer;
use crate::core::window::{plan_windows, SkipReason, WindowConfig};
use crate::online::group::{FullCol, FullRow, GroupOutput, GroupStage, RegimeEvent};
use crate::online::Outcome;
use crate::outputs::metrics::SelfMetrics;
use ring::Ring;
use verdict::score_window;

#[derive(Debug, Clone, PartialEq)]
pub struct EngineParams {
    pub window: WindowConfig,
    /// Which features; the ADF test takes the form `detectors` scores (`DetectorsConfig::features`).
    pub features: FeatureConfig,
    pub baseline_ms: i64,
    pub refit_ms: i64,
    pub warmup_ms: i64,
    pub seed: u64,
    /// A host without series for this long is forgotten ([`Engine::sweep`]).
    pub forget_host_ms: i64,
    /// Episodes: windows flagged by at least `min_agreement` detectors count as flagged (for
    /// episodes and regime changes, and kept out of the baseline by a detector set that does
    /// not trim); `open_after` of them in a row open an episode, `close_after` quiet ones
    /// close it.
    pub episodes: EpisodeConfig,
    /// Detector parameters; `None` for the defaults (docs/detection.md).
    pub detectors: Option<DetectorsConfig>,
    /// How thresholds are calibrated: `Trailing` (new windows are out of sample) for the
    /// service; `WholeRun` scores the windows fitted on, as `analyze` does.
    pub calibration: Baseline,
    /// Device families ([`crate::core::families`]): per-device channels folded.
    pub families: FamilyParams,
}

impl EngineParams {
    pub fn from_config(a: &AnalysisConfig) -> EngineParams {
        let ms = |d: crate::config::PromDuration| d.0.as_millis() as i64;
        EngineParams {
            window: WindowConfig {
                step_ms: ms(a.step),
                window_ms: ms(a.window),
                stride_ms: ms(a.stride),
                ..WindowConfig::default()
            },
            features: FeatureConfig::default(),
            baseline_ms: ms(a.baseline),
            refit_ms: ms(a.refit_every),
            warmup_ms: ms(a.warmup),
            seed: a.seed,
            forget_host_ms: ms(a.forget_host_after),
            episodes: a.episodes,
            detectors: a.detectors.clone(),
            calibration: Baseline::Trailing,
            families: a.families.params(),
        }
    }

    /// Adds labels that name a device (a metric set's `device_label`s) to the families'.
    pub fn add_device_labels(&mut self, labels: &[String]) {
        for l in labels {
            if !self.families.device_labels.contains(l) {
                self.families.device_labels.push(l.clone());
            }
        }
    }
}

/// One feature column of a host's layout.
#[derive(Debug, Clone)]
struct Col {
    channel: String,
    feature: Feature,
    subsystem: Subsystem,
    kind: Kind,
    /// The column's least meaningful change (`features::least_change`).
    least: f64,
}

#[derive(Default)]
struct HostState {
    layout: Vec<Col>,
    index: HashMap<(String, Feature), usize>,
    ring: Ring,
    fitted: Option<Fitted>,
    /// Scores the host's windows in order (held scores need the windows before).
    scorer: Option<Scorer>,
    /// Columns still away from their level after a fault (the settle rule), and until when
    /// at most they are left out of scoring.
    left_out: Vec<(LeftOut, i64)>,
    /// The refit running in the background (`refit`), if any.
    pending: Option<refit::Pending>,
    /// Regime changes of this host (DESIGN step 8), over its scored rows.
    regime: Option<RegimeTracker>,
    /// End of the latest pass that had series of this host.
    seen_until_ms: i64,
    /// The devices of its families, so that one gone for a whole pass is still named.
    known: KnownDevices,
    /// When each CPU, GPU and NUMA node last reported ([`Engine::missing_devices`]).
    presence: Presence,
}

/// Hosts without series in the latest pass ([`Engine::sweep`]).
#[derive(Debug, Default)]
pub struct Sweep {
    /// Episodes ended because their host has been silent for `close_after` strides.
    pub ended: Vec<Event>,
    /// Hosts known but absent from the latest pass.
    pub silent: usize,
    /// Hosts forgotten now, after `forget_host_ms` without series.
    pub forgotten: Vec<String>,
}

/// What the service reports about warm-up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Status {
    /// No host has a fitted baseline yet: the analyzer as a whole is not ready.
    pub warming_up: bool,
    /// Hosts still collecting their first baseline (a host that appears later warms up alone
    /// while the others are analyzed).
    pub hosts_warming_up: usize,
    /// Until every host is fitted.
    pub warmup_remaining_ms: i64,
    pub baseline_windows: usize,
    /// Feature columns of every host's layout together: the channel-feature pairs its
    /// detectors score.
    pub feature_columns: usize,
}

pub struct Engine {
    params: EngineParams,
    /// Spans whose learned windows count as flagged (see [`Engine::learn`]).
    exclude: Vec<(i64, i64)>,
    extractor: Extractor,
    hosts: BTreeMap<String, HostState>,
    /// Full feature rows of the windows scored since the last [`Engine::cross_host`].
    full_rows: Vec<FullRow>,
    /// Cross-host comparison of all hosts (DESIGN step 7).
    group: Option<GroupStage>,
    /// Regime changes since the last [`Engine::take_regime_changes`].
    regime_events: Vec<RegimeEvent>,
    /// Every host's episode (DESIGN step 6).
    tracker: Tracker,
    /// Where scored windows' refits run: inline (`None`), or in the background.
    background: Option<refit::Background>,
}

impl Engine {
    pub fn new(params: EngineParams) -> Engine {
        let tracker = Tracker::new(TrackerParams {
            min_agreement: params.episodes.min_agreement,
            open_after: params.episodes.open_after,
            confirm_after: params.episodes.confirm_after,
            clear: params.episodes.clear,
            close_after: params.episodes.close_after,
            window_ms: params.window.window_ms,
        });
        Engine {
            tracker,
            extractor: Extractor::new(
                params
                    .detectors
                    .clone()
                    .unwrap_or_default()
                    .features(params.features),
                params.window,
            ),
            params,
            exclude: Vec::new(),
            hosts: BTreeMap::new(),
            full_rows: Vec::new(),
            group: GroupStage::new(crate::core::crosshost::CrossHostParams::default()).ok(),
            regime_events: Vec::new(),
            background: None,
        }
    }

    /// The CPUs, GPUs and NUMA nodes of each host that have sent nothing for a window's length
    /// while their siblings went on, as of the host's latest pass ([`crate::core::presence`]).
    pub fn missing_devices(&self) -> Vec<(String, MissingDevice)> {
        let gone_ms = self.params.window.window_ms;
        self.hosts
            .iter()
            .flat_map(|(name, h)| {
                h.presence
                    .missing(h.seen_until_ms, gone_ms)
                    .into_iter()
                    .map(move |m| (name.clone(), m))
            })
            .collect()
    }

    /// Fits the baselines of scored windows in the background from now on (`refit`): the
    /// service's passes never wait for a fit. Learned history is still fitted inline, as are
    /// replays, whose results must not depend on how long a fit takes.
    pub fn fit_in_background(&mut self) {
        self.background = Some(refit::Background::new());
    }

    /// Episodes open now (for the checkpoint).
    pub fn open_episodes(&self) -> Vec<OpenEpisode> {
        self.tracker.open()
    }

    /// Episodes that were open when the checkpoint was written: windows that extend them do
    /// not open new ones.
    pub fn restore_episodes(&mut self, episodes: &[OpenEpisode]) {
        self.tracker.restore(episodes);
    }

    /// Compares the hosts' windows scored since the last call (see [`crate::online::group`]).
    pub fn cross_host(&mut self) -> GroupOutput {
        let rows = std::mem::take(&mut self.full_rows);
        match self.group.as_mut() {
            Some(g) => g.observe(&rows),
            None => GroupOutput::default(),
        }
    }

    /// Regime changes recognized since the last call; each is reported once.
    pub fn take_regime_changes(&mut self) -> Vec<RegimeEvent> {
        std::mem::take(&mut self.regime_events)
    }

    /// Keeps every feature of the pass's windows, static channels included, for
    /// [`Engine::cross_host`]; at most the last [`FULL_ROWS_SPAN`] strides of them.
    fn keep_full_rows(&mut self, fm: &crate::core::features::FeatureMatrix) {
        let columns: std::sync::Arc<[FullCol]> = fm
            .columns
            .iter()
            .map(|c| FullCol {
                channel: fm.channels[c.channel].name.clone(),
                feature: c.feature,
                subsystem: c.subsystem,
            })
            .collect();
        for (wi, w) in fm.windows.iter().enumerate() {
            self.full_rows.push(FullRow {
                host: fm.host.clone(),
                end_ms: w.end_ms,
                columns: columns.clone(),
                values: fm.values.row(wi).to_vec(),
            });
        }
        let newest = self.full_rows.iter().map(|r| r.end_ms).max().unwrap_or(0);
        let oldest = newest - FULL_ROWS_SPAN * self.params.window.stride_ms;
        self.full_rows.retain(|r| r.end_ms > oldest);
    }

    /// After a pass that ended at `until`: the hosts that had no series in it. A host silent
    /// for `close_after` strides has its episode ended (a node that went away mid-fault
    /// leaves no alert open for ever: `RevealExporterDown` and `RevealAnalysisStale` say
    /// what happened to it); one silent for `forget_host_ms` is forgotten, its baseline freed.
    pub fn sweep(&mut self, until: i64) -> Sweep {
        let p = &self.params;
        let close_ms = i64::from(p.episodes.close_after.max(1)) * p.window.stride_ms;
        let mut out = Sweep::default();
        let mut gone = Vec::new();
        for (name, h) in &self.hosts {
            let silent_ms = until - h.seen_until_ms;
            if silent_ms <= 0 {
                continue;
            }
            out.silent += 1;
            if silent_ms >= close_ms {
                out.ended.extend(self.tracker.end(name));
            }
            if silent_ms >= p.forget_host_ms {
                gone.push(name.clone());
            }
        }
        // An episode restored from a checkpoint whose host sent nothing since the restart.
        for ep in self.tracker.open() {
            if !self.hosts.contains_key(&ep.instance) {
                out.ended.extend(self.tracker.end(&ep.instance));
            }
        }
        for name in &gone {
            self.hosts.remove(name);
            self.tracker.forget(name);
            self.full_rows.retain(|r| &r.host != name);
        }
        out.silent -= gone.len();
        out.forgotten = gone;
        out
    }

    pub fn status(&self) -> Status {
        let need = self.params.warmup_ms;
        let mut st = Status::default();
        for h in self.hosts.values() {
            st.baseline_windows += h.ring.len();
            st.feature_columns += h.layout.len();
            if h.fitted.is_none() {
                st.hosts_warming_up += 1;
                let span = h.ring.span_ms(self.params.window.stride_ms);
                st.warmup_remaining_ms = st.warmup_remaining_ms.max(need - span);
            }
        }
        st.warming_up = st.hosts_warming_up == self.hosts.len();
        if self.hosts.is_empty() {
            st.warming_up = true;
            st.warmup_remaining_ms = need;
        }
        st
    }

    /// Analyzes the windows of `m` that end in `(after, until]` on the stride grid.
    pub fn process(
        &mut self,
        m: &HostMatrix,
        after: i64,
        until: i64,
        metrics: &SelfMetrics,
    ) -> Vec<Outcome> {
        self.run(m, after, until, false, metrics)
    }

    /// Adds the windows of `m` ending in `(after, until]` to the baseline without scoring
    /// them: history from before the analyzer (re)started, so it needs no warm-up in real
    /// time and raises no findings about the past.
    /// Windows ending inside one of `exclude` (`(start, end]` spans of episodes that were
    /// open) are kept out of the baseline like flagged windows.
    pub fn learn(
        &mut self,
        m: &HostMatrix,
        after: i64,
        until: i64,
        exclude: &[(i64, i64)],
        metrics: &SelfMetrics,
    ) {
        self.exclude = exclude.to_vec();
        self.run(m, after, until, true, metrics);
        self.exclude.clear();
    }

    /// Fits running in the background now.
    pub fn fits_running(&self) -> usize {
        self.hosts
            .values()
            .filter(|h| h.pending.as_ref().is_some_and(|p| p.running()))
            .count()
    }

    /// Refits every host now (after learning history, so the first model sees all of it
    /// rather than only the warm-up's worth).
    pub fn refit_all(&mut self, metrics: &SelfMetrics) {
        for (name, host) in self.hosts.iter_mut() {
            let Some(last) = host.ring.last_end_ms() else {
                continue;
            };
            // A fit still running was given less than this one is.
            host.pending = None;
            force_refit(host);
            maybe_fit(name, host, &self.params, last, metrics, None);
        }
    }

    fn run(
        &mut self,
        m: &HostMatrix,
        after: i64,
        until: i64,
        learn_only: bool,
        metrics: &SelfMetrics,
    ) -> Vec<Outcome> {
        let w = self.params.window;
        let first_end = after.div_euclid(w.stride_ms) * w.stride_ms + w.stride_ms;
        if first_end > until {
            return Vec::new();
        }
        let start = first_end - w.window_ms;
        let folded = fold(&realign(m, start, until), &self.params.families);
        let aligned = &folded.matrix;
        let plan = match plan_windows(aligned, &w) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(host = %m.host, error = %e, "cannot lay windows");
                return Vec::new();
            }
        };
        let mut out: Vec<Outcome> = plan
            .skipped
            .iter()
            .map(|(win, reason)| Outcome::Skipped {
                end_ms: win.end_ms,
                reason: match reason {
                    SkipReason::NoData => "no_data",
                    SkipReason::TooFewSamples { .. } => "too_few_samples",
                },
            })
            .collect();
        let t0 = Instant::now();
        let fm = self.extractor.extract(aligned, &plan);
        metrics.phase("features", t0.elapsed().as_secs_f64());
        // Learned history counts too: after a start or restart, hosts are compared at once.
        if self.group.is_some() {
            self.keep_full_rows(&fm);
        }
        if !learn_only && !self.hosts.is_empty() && !self.hosts.contains_key(&m.host) {
            tracing::info!(host = %m.host, "a new host: it warms up alone, the others go on");
        }
        let background = self.background.as_ref().filter(|_| !learn_only);
        let host = self.hosts.entry(m.host.clone()).or_default();
        host.seen_until_ms = host.seen_until_ms.max(until);
        host.known
            .observe(&folded, until, until - self.params.baseline_ms);
        host.presence
            .observe(&folded.fixed, until - self.params.baseline_ms);
        // Map this pass's columns into the host's layout, growing it for new channels.
        let map = map_columns(host, &fm, &self.params);
        // History read again (a read that failed part way, history that came late) brings
        // windows the baseline already holds: each is learned once, in time order.
        let learned_until = host.ring.last_end_ms().filter(|_| learn_only);
        for (wi, win) in fm.windows.iter().enumerate() {
            if learned_until.is_some_and(|l| win.end_ms <= l) {
                continue;
            }
            let mut row = vec![f64::NAN; host.layout.len()];
            for &(c, idx) in &map {
                // As precise as the baseline keeps it.
                row[idx] = single(fm.values[[wi, c]]);
            }
            // A column left out whose time is up is scored again against a baseline that has
            // learned where it is now: the baseline is refitted first.
            if expire_left_out(&mut host.left_out, win.end_ms) {
                force_refit(host);
            }
            maybe_fit(&m.host, host, &self.params, win.end_ms, metrics, background);
            let fitted = host.fitted.as_ref().filter(|_| !learn_only);
            let Some(fitted) = fitted else {
                let excluded = self
                    .exclude
                    .iter()
                    .any(|(s, e)| win.end_ms > *s && win.end_ms <= *e);
                // Reference for regime changes (never one itself: it was not scored).
                observe_regime(host, &self.params, win.end_ms, false, &row);
                host.ring.push(win.end_ms, &row, excluded, excluded);
                trim(host, &self.params, win.end_ms);
                out.push(Outcome::Skipped {
                    end_ms: win.end_ms,
                    reason: "warmup",
                });
                continue;
            };
            let t1 = Instant::now();
            let scorer = host.scorer.get_or_insert_with(|| Scorer::new(w.stride_ms));
            let scored_row = without_left_out(&row, win.end_ms, &mut host.left_out, &host.layout);
            let window_start = win.end_ms - w.window_ms;
            let mut score = score_window(
                &m.host,
                win.end_ms,
                &scored_row,
                fitted,
                scorer,
                &host.layout,
                &device_namer(&folded, Some(&host.known), window_start, win.end_ms),
                None,
            );
            metrics.phase("score", t1.elapsed().as_secs_f64());
            let flagged = score.agreement >= self.params.episodes.min_agreement;
            let change = observe_regime(host, &self.params, win.end_ms, flagged, &row);
            host.ring.push(win.end_ms, &row, flagged, false);
            trim(host, &self.params, win.end_ms);
            score.event = self.tracker.observe(score.verdict()).map(Box::new);
            match score.event.as_deref() {
                // A recurring event is the host's routine: its windows, and those of its
                // earlier occurrences, are the baseline's to learn.
                Some(Event::Opened(ep)) if ep.recurring.is_some() => {
                    for (start, end) in ep.recurring.iter().flat_map(|r| &r.earlier) {
                        host.ring.unmark_alerted(start + w.window_ms, *end);
                    }
                }
                Some(Event::Opened(ep) | Event::Extended(ep)) if ep.recurring.is_none() => {
                    // The episode's windows stay out of the baseline: a fault is not learned
                    // as the host's normal.
                    host.ring
                        .mark_alerted(ep.start_ms + w.window_ms, ep.last_flagged_ms);
                }
                _ => {}
            }
            if let Some(c) = change {
                let until = win.end_ms + LEFT_OUT_MS;
                host.left_out.extend(c.left_out.iter().map(|l| (*l, until)));
                // A fault's aftermath with no level left behind is not a regime change.
                if !(c.settled && c.columns.is_empty()) {
                    let ev = regime_changed(&m.host, host, c);
                    self.regime_events.push(ev);
                }
            }
            out.push(Outcome::Scored(score));
        }
        // Fit as soon as the baseline is long enough, not only when the next window comes.
        if let Some(last) = fm.windows.last() {
            maybe_fit(
                &m.host,
                host,
                &self.params,
                last.end_ms,
                metrics,
                background,
            );
        }
        out.sort_by_key(|o| o.end_ms());
        out
    }
}

/// Strides of full rows kept for cross-host comparison between two calls.
const FULL_ROWS_SPAN: i64 = 60;

fn observe_regime(
    host: &mut HostState,
    p: &EngineParams,
    end_ms: i64,
    flagged: bool,
    row: &[f64],
) -> Option<RegimeChange> {
    if host.regime.is_none() {
        let ramp = usize::try_from(p.window.window_ms / p.window.stride_ms.max(1)).unwrap_or(3);
        host.regime = RegimeTracker::new(RegimeParams {
            ramp,
            ..RegimeParams::default()
        })
        .ok();
    }
    host.regime.as_mut().and_then(|r| {
        r.observe(RegimeWindow {
            end_ms,
            flagged,
            row,
        })
    })
}

/// A regime change, reported. Its columns (a workload's new regime, or a level a fault left
/// behind) are left out of scoring by the caller until they are back near their old level, or
/// until [`LEFT_OUT_MS`] has passed and the baseline is refitted on a trailing history that
/// holds the new level ([`expire_left_out`]). The baseline is never cut to the new regime:
/// its first windows are an alert's, and a fault among them would set every bar.
fn regime_changed(host_name: &str, host: &HostState, mut change: RegimeChange) -> RegimeEvent {
    let layout = &host.layout;
    // The report says features "moved to a new level": its columns name levels first (a
    // mean, an extreme, a count), each group still by the size of its shift. After a memory
    // hog the largest shift was memory utilization's mean absolute change, a spread.
    change
        .columns
        .sort_by_key(|c| !layout.get(c.column).is_some_and(|l| l.feature.is_level()));
    let name = |j: usize| {
        layout.get(j).map_or_else(String::new, |c| {
            format!("{}__{}", c.channel, c.feature.suffix())
        })
    };
    let description = change
        .columns
        .iter()
        .map(|c| {
            format!(
                "{}: {:.4} → {:.4} ({:.1}σ)",
                name(c.column),
                c.before,
                c.after,
                c.z
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let subsystem = change
        .columns
        .first()
        .and_then(|c| layout.get(c.column))
        .map_or(Subsystem::Other, |c| c.subsystem);
    tracing::info!(host = %host_name, start_ms = change.start_ms, shifted = change.shifted, settled = change.settled, "regime change");
    RegimeEvent {
        host: host_name.to_string(),
        subsystem,
        summary: change.describe(name),
        description,
        change,
    }
}

fn trim(host: &mut HostState, p: &EngineParams, end: i64) {
    host.ring.forget_until(end - p.baseline_ms);
}

/// The host's model is refitted at its next window, whatever its age; a fit running in the
/// background is followed by another.
fn force_refit(host: &mut HostState) {
    if let Some(f) = host.fitted.as_mut() {
        f.at_ms = i64::MIN / 2;
    }
    if let Some(p) = host.pending.as_mut() {
        p.again = true;
    }
}

/// Fits when warm-up is over and no model exists, or when the model is `refit_every` old:
/// inline, or in the `background` (a finished background fit is installed first).
fn maybe_fit(
    host_name: &str,
    host: &mut HostState,
    p: &EngineParams,
    end: i64,
    metrics: &SelfMetrics,
    background: Option<&refit::Background>,
) {
    if let Some(pending) = host.pending.take() {
        let again = pending.again;
        match pending.finished() {
            Err(running) => {
                host.pending = Some(running);
                return;
            }
            Ok(done) => {
                install(host_name, host, done, metrics);
                if again {
                    force_refit(host);
                }
            }
        }
    }
    let due = match &host.fitted {
        None => host.ring.span_ms(p.window.stride_ms) >= p.warmup_ms,
        Some(f) => end - f.at_ms >= p.refit_ms,
    };
    if !due {
        return;
    }
    // Every background slot taken: the model in place goes on, the fit waits.
    let slot = match background {
        Some(b) => match b.slot() {
            Some(s) => Some(s),
            None => return,
        },
        None => None,
    };
    let set = detector_set(p, &host.layout);
    // A trimming detector set fits on every window of the trailing baseline: each detector
    // drops what the baseline saw only once or twice (a fault, a burst) at fit time, and what
    // recurs is the host's routine — a write-back every few minutes that was flagged the first
    // time it was seen is learned, where keeping flagged windows out would flag it forever.
    // Without trimming, flagged windows stay out, unless they are most of the baseline: a
    // shift that persists that long is the new normal, and the baseline follows it.
    let total = host.ring.len();
    let calm = host.ring.calm();
    let keep_flagged = set.trim || calm * 2 < total;
    if keep_flagged && !set.trim {
        tracing::info!(
            flagged = total - calm,
            total,
            "most of the baseline is flagged: refitting on the shifted regime"
        );
    }
    // An alert's windows stay out once settled ([`Ring::fit_rows`]); until then they are
    // fitted on, but set no held bar.
    let rows = host.ring.fit_rows(end, LEFT_OUT_MS, keep_flagged);
    let alerted: Vec<bool> = rows.iter().map(|(_, a)| *a).collect();
    let width = host.layout.len();
    let mut x = Array2::from_elem((rows.len(), width), f64::NAN);
    for (i, (r, _)) in rows.iter().enumerate() {
        for (j, v) in r.iter().enumerate() {
            x[[i, j]] = f64::from(*v);
        }
    }
    if let Some(slot) = slot {
        host.pending = refit::Background::spawn(slot, x, alerted, set, p.seed, end, p.calibration);
        return;
    }
    let t0 = Instant::now();
    let fitted = fit_with_alerts(x.view(), &alerted, &set, p.seed, end, p.calibration);
    let done = refit::Done {
        fitted,
        seconds: t0.elapsed().as_secs_f64(),
        windows: rows.len(),
        width,
    };
    install(host_name, host, done, metrics);
}

/// Puts a finished fit in place (or says why there is none).
fn install(host_name: &str, host: &mut HostState, done: refit::Done, metrics: &SelfMetrics) {
    metrics.phase("fit", done.seconds);
    let fitted = match done.fitted {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!(host = %host_name, error = %e, "baseline not fitted");
            return;
        }
    };
    for (detector, why) in &fitted.not_fitted {
        tracing::warn!(host = %host_name, detector, error = %why, "detector not fitted");
    }
    metrics.fits.inc();
    metrics
        .last_fit_timestamp_seconds
        .set(fitted.at_ms as f64 / 1000.0);
    if host.fitted.is_none() {
        tracing::info!(host = %host_name, windows = done.windows, features = done.width, "baseline fitted; warm-up over");
    }
    host.fitted = Some(fitted);
}

/// How long at most a column still away from its level (after a fault, the settle rule, or in
/// a new regime) is left out of scoring: by then the trailing baseline has held a level that
/// stays for a sixth of its length, well inside its bulk, and is refitted on it
/// ([`expire_left_out`]); a column that is still moving is scored again.
const LEFT_OUT_MS: i64 = 5 * 60 * 1000;

/// Drops the left-out columns whose time is up at `end_ms`; whether any was dropped.
fn expire_left_out(left_out: &mut Vec<(LeftOut, i64)>, end_ms: i64) -> bool {
    let before = left_out.len();
    left_out.retain(|(_, until)| end_ms <= *until);
    left_out.len() < before
}

/// `row` with the channels left out after a fault set to NaN (the detectors read them as the
/// baseline's centre): every column of a channel whose level column is still away. While a
/// level returns, its channel's trend, extremes and spread move with it, and they are the
/// fault's aftermath, not a new fault. A channel whose level is back near it or past it, or
/// whose time is up, is scored again from this window on.
fn without_left_out(
    row: &[f64],
    end_ms: i64,
    left_out: &mut Vec<(LeftOut, i64)>,
    layout: &[Col],
) -> Vec<f64> {
    left_out
        .retain(|(l, until)| end_ms <= *until && row.get(l.column).is_some_and(|&v| !l.is_back(v)));
    let mut out = row.to_vec();
    for (l, _) in left_out.iter() {
        out[l.column] = f64::NAN;
        let Some(channel) = layout.get(l.column).map(|c| c.channel.as_str()) else {
            continue;
        };
        for (o, c) in out.iter_mut().zip(layout) {
            if c.channel == channel {
                *o = f64::NAN;
            }
        }
    }
    out
}

/// Maps the scored columns of `fm` into the host's layout, growing it for new channels:
/// (column of `fm`, column of the layout) for each.
fn map_columns(host: &mut HostState, fm: &FeatureMatrix, p: &EngineParams) -> Vec<(usize, usize)> {
    let set = p.detectors.clone().unwrap_or_default();
    let scored: Vec<usize> = fm
        .scored_columns()
        .into_iter()
        .filter(|&c| set.scores(fm.columns[c].feature))
        .collect();
    let mut map = Vec::with_capacity(scored.len());
    for &c in &scored {
        let col = &fm.columns[c];
        let name = &fm.channels[col.channel].name;
        let key = (name.clone(), col.feature);
        let idx = *host.index.entry(key).or_insert_with(|| {
            host.layout.push(Col {
                channel: name.clone(),
                feature: col.feature,
                subsystem: col.subsystem,
                kind: fm.channels[col.channel].kind,
                least: least_change(col.feature, &fm.channels[col.channel], &p.window),
            });
            host.layout.len() - 1
        });
        map.push((c, idx));
    }
    map
}

/// The detectors fitted on a host's layout: each column's kind, channel and least change,
/// and for a baseline that holds the windows it scores, a column that moved once is new.
fn detector_set(p: &EngineParams, layout: &[Col]) -> DetectorsConfig {
    let set = p.detectors.clone().unwrap_or_default().for_columns(
        &layout.iter().map(|c| c.kind).collect::<Vec<_>>(),
        &channel_ids(layout),
        &layout.iter().map(|c| c.least).collect::<Vec<_>>(),
    );
    match p.calibration {
        Baseline::WholeRun => set.whole_run(),
        Baseline::Trailing => set,
    }
}

/// Names the device behind a family channel in the window `(start_ms, end_ms]`: one that is
/// not reporting (also one `known` remembers that this matrix lacks), else the one that moved
/// furthest from its siblings the way the channel moved.
fn device_namer<'a>(
    folded: &'a Folded,
    known: Option<&'a KnownDevices>,
    start_ms: i64,
    end_ms: i64,
) -> impl Fn(&str, bool) -> Option<(String, String)> + 'a {
    move |channel: &str, up: bool| {
        if let Some(named) = folded.missing_known(channel, start_ms, end_ms, known) {
            return Some(named);
        }
        folded.siblings(channel, start_ms, end_ms, up).map(|v| {
            let (metric, _) = crate::core::claim::parse_channel(&v.channel);
            let per_second = folded
                .members
                .channels
                .iter()
                .find(|c| c.name == v.channel)
                .is_some_and(|c| c.per_second);
            (v.channel.clone(), v.sentence(metric, per_second))
        })
    }
}

/// Channel of each layout column, numbered in order of appearance.
fn channel_ids(layout: &[Col]) -> Vec<usize> {
    let mut ids: HashMap<&str, usize> = HashMap::new();
    layout
        .iter()
        .map(|c| {
            let next = ids.len();
            *ids.entry(c.channel.as_str()).or_insert(next)
        })
        .collect()
}

/// `m` on the grid `[start, until)`: cut, or padded with NaN where the host had no samples.
pub fn realign(m: &HostMatrix, start: i64, until: i64) -> HostMatrix {
    let step = m.step_ms.max(1);
    let n = ((until - start) / step).max(0) as usize;
    let offset = ((m.start_ms - start) as f64 / step as f64).round() as i64;
    let mut values = Array2::from_elem((m.n_channels(), n), f64::NAN);
    for t in 0..n as i64 {
        let src = t - offset;
        if src >= 0 && (src as usize) < m.n_steps() {
            values
                .column_mut(t as usize)
                .assign(&m.values.column(src as usize));
        }
    }
    HostMatrix {
        host: m.host.clone(),
        start_ms: start,
        step_ms: step,
        channels: m.channels.clone(),
        values,
        non_finite_samples: 0,
    }
}

pub mod in_sample;
mod refit;
mod ring;
#[cfg(test)]
mod tests;
mod verdict;
