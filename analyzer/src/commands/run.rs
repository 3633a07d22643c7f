//! `reveal-analyzer run`: the online service. Every stride it fetches the new telemetry of
//! every host, analyzes the new windows ([`crate::online::Engine`]), writes the anomaly
//! series, tracks episodes, sends alerts, and checkpoints how far it got.
//!
//! Failures of the world are reported, not fatal: a pass whose fetch fails analyzes nothing
//! and the next one catches up from the checkpointed time (up to one baseline of history);
//! undelivered anomaly samples and alerts wait in bounded queues.

mod alerts;
mod cgroups;
mod devices;
mod drilldown;
mod group;
mod metric_set;
mod start;
mod steady;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::config::Config;
use crate::core::episodes::tracker::Event;
use crate::core::matrix::HostMatrix;
use crate::ingest::prometheus::PrometheusSource;
use crate::ingest::scrape::ScrapeSource;
use crate::ingest::{Source, SourceError, TimeRange};
use crate::online::{Engine, Outcome};
use crate::outputs::alertmanager::AlertSender;
use crate::outputs::checkpoint::{Checkpoint, Store};
use crate::outputs::remote_write::{Batch, RemoteWriter, WindowPoint};

pub use crate::outputs::metrics::SelfMetrics;
pub use crate::outputs::server::{Health, Server};

/// Anomaly samples kept while remote write is failing (oldest dropped beyond).
pub(crate) const MAX_PENDING_SAMPLES: usize = 1_000_000;

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("listening on {addr}: {source}")]
    Listen {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    Http(#[from] crate::http::HttpError),
    #[error(transparent)]
    Checkpoint(#[from] crate::outputs::checkpoint::CheckpointError),
    #[error(transparent)]
    Source(#[from] crate::ingest::SourceError),
    #[error("{0}")]
    Setup(String),
    /// The server refused expressions of the metric set (checked at start).
    #[error("{0}")]
    Rejected(crate::ingest::prometheus::check::Rejections),
}

pub(crate) enum Input {
    // Boxed: it keeps the previous pass's answers and is much larger than the scrape source.
    Prometheus(Box<PrometheusSource>),
    Scrape(ScrapeSource),
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

pub(crate) fn at(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)
}

/// Everything the loop owns.
pub struct Service {
    config: Config,
    input: Input,
    engine: Engine,
    writer: Option<RemoteWriter>,
    alerts: Option<AlertSender>,
    store: Store,
    checkpoint: Checkpoint,
    metrics: SelfMetrics,
    health: Arc<Health>,
    reports: Option<crate::online::reports::Reports>,
    last_warmup_log: Option<Instant>,
    /// Whether the baseline was filled from history since start.
    learned: bool,
    /// Whether a history read found the source empty. It is not read again pass after pass
    /// (one baseline of history every second, thousands of requests, was the analyzer's own
    /// start in the telemetry it learns); the first pass whose windows hold series reads it.
    history_empty: bool,
    /// What alerts are stamped with: never back in time ([`steady`]).
    clock: steady::SteadyClock,
    /// Since when the wall clock has been behind the last analyzed window (it stepped back).
    clock_behind_since: Option<Instant>,
    /// Windows skipped since the last warm-up log line, by reason.
    skipped_since_log: std::collections::BTreeMap<&'static str, u64>,
    /// Hosts already reported as shared by several targets (logged once each).
    duplicates_reported: std::collections::BTreeSet<String>,
    /// Metric-set entries that returned no series ([`metric_set`]).
    empty_entries: crate::ingest::prometheus::entries::EmptyEntries,
    /// What the cgroups said of each open alert ([`cgroups`]), asked once per alert.
    culprits: alerts::Culprits,
    /// Which devices each open alert's evidence points at ([`drilldown`]), asked once per
    /// alert.
    named: alerts::Named,
    /// Episode events of this pass, for the alerts and reports, in order.
    pending: Vec<Event>,
    /// Alert keys of the devices missing now ([`devices`]).
    devices_missing: std::collections::BTreeSet<String>,
}

impl Service {
    /// Runs passes every stride until `shutdown` resolves, then checkpoints once more.
    pub async fn run(mut self, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        let stride = self.config.analysis.stride.0.as_millis().max(1) as i64;
        let delay = self.config.analysis.delay.0.as_millis() as i64;
        loop {
            // The newest window ends on the stride grid, `delay` behind real time.
            let target = (now_ms() - delay).div_euclid(stride) * stride;
            if target < self.checkpoint.analyzed_until_ms {
                self.clock_behind(self.checkpoint.analyzed_until_ms - target)
                    .await;
            } else {
                self.clock_caught_up();
                if target > self.checkpoint.analyzed_until_ms {
                    self.pass(target).await;
                }
            }
            let wake = self.checkpoint.analyzed_until_ms.max(target) + stride + delay;
            let sleep = Duration::from_millis((wake - now_ms()).clamp(1, stride * 2) as u64);
            tokio::select! {
                _ = &mut shutdown => break,
                _ = tokio::time::sleep(sleep) => {}
            }
        }
        self.save();
        tracing::info!("stopped");
    }

    /// One pass: analyze every window that ends in `(analyzed_until, target]`.
    pub async fn pass(&mut self, target: i64) {
        let a = &self.config.analysis;
        let stride = a.stride.0.as_millis() as i64;
        let baseline = a.baseline.0.as_millis() as i64;
        let resumed = self.checkpoint.analyzed_until_ms;
        // Scoring starts after the checkpoint (the gap is analyzed), or now on a first start.
        let mut after = if resumed == 0 {
            target - stride
        } else {
            resumed
        };
        // Catch up at most one baseline: older windows could not be scored against a
        // baseline that is fitted on the recent past anyway.
        let oldest = target - baseline;
        if after < oldest {
            let lost = (oldest - after) / stride;
            self.metrics.skipped("catch_up_limit", lost.max(0) as u64);
            tracing::warn!(
                windows = lost,
                "analysis fell more than one baseline behind; skipping ahead"
            );
            after = oldest;
        }
        if !self.learned && !self.history_empty {
            match self.learn_history(oldest, after).await {
                Err(e) => {
                    self.fetch_failed(e).await;
                    return;
                }
                // A source that has no series yet (a Prometheus that has just come up and
                // not yet taken the first scrape or remote write) is read again once the
                // passes find series, so history that arrives late still fills the baseline.
                Ok(0) => self.history_empty = true,
                Ok(_) => self.learned = true,
            }
        }
        let hosts = match self.fetch(after, target).await {
            Ok(h) => h,
            Err(e) => {
                self.fetch_failed(e).await;
                return;
            }
        };
        // Series arrived between the history's reading and now: the history is read once
        // more before these windows are analyzed, and not after (it would learn them twice).
        if !self.learned && !hosts.is_empty() {
            if let Err(e) = self.learn_history(oldest, after).await {
                self.fetch_failed(e).await;
                return;
            }
            self.learned = true;
        }
        self.watch_empty_entries();
        if let Input::Prometheus(p) = &self.input {
            for w in &p.last_warnings {
                tracing::debug!(warning = %w, "query warning");
            }
            self.metrics
                .hosts_duplicated
                .set(p.last_duplicates.len() as i64);
            for (host, jobs) in &p.last_duplicates {
                if self.duplicates_reported.insert(host.clone()) {
                    let jobs: Vec<&str> = jobs.iter().map(String::as_str).collect();
                    tracing::warn!(
                        %host,
                        jobs = %jobs.join(","),
                        "several scrape targets share this host label value: their series are \
                         analyzed as one host (told apart only by `job`); give each target its \
                         own host label value"
                    );
                }
            }
        }
        self.metrics.hosts.set(hosts.len() as i64);

        let mut batch = Batch::default();
        for m in &hosts {
            let outcomes = self.engine.process(m, after, target, &self.metrics);
            for o in outcomes {
                match o {
                    Outcome::Skipped { reason, .. } => {
                        self.metrics.skipped(reason, 1);
                        *self.skipped_since_log.entry(reason).or_default() += 1;
                    }
                    Outcome::Scored(w) => {
                        self.metrics.windows_analyzed.inc();
                        if w.agreement > 0 {
                            self.metrics.windows_flagged.inc();
                        }
                        let scores: Vec<(&str, f64)> =
                            w.scores.iter().map(|(d, s)| (*d, *s)).collect();
                        let subs: Vec<(&str, f64)> =
                            w.subsystems.iter().map(|(s, v)| (s.as_str(), *v)).collect();
                        batch.add_window(&WindowPoint {
                            instance: &w.host,
                            end_ms: w.end_ms,
                            scores: &scores,
                            agreement: w.agreement,
                            subsystems: &subs,
                        });
                        if let Some(r) = self.reports.as_mut() {
                            r.window(&w);
                        }
                        if let Some(ev) = w.event {
                            self.on_event(*ev);
                        }
                    }
                }
            }
        }
        self.sweep_silent_hosts(target);
        // Hosts against each other (persistent deviations, DESIGN step 7) and regime changes.
        self.group_outputs(&mut batch);
        // CPUs, GPUs and NUMA nodes that stopped reporting while their siblings go on.
        self.device_outputs();
        self.report_warmup();
        self.checkpoint.analyzed_until_ms = target;
        self.checkpoint.open_episodes = self.engine.open_episodes();
        self.metrics
            .episodes_open
            .set(self.checkpoint.open_episodes.len() as i64);
        if let Some(w) = self.writer.as_mut() {
            if let Err(e) = w.write(batch).await {
                self.metrics.delivery_failed("remote_write");
                tracing::warn!(error = %e, "remote write failed; samples wait for the next pass");
            }
        }
        self.deliver().await;
        self.save();
        self.health
            .ready
            .store(!self.engine.status().warming_up, Ordering::Relaxed);
        self.metrics
            .lag_seconds
            .set((now_ms() - target) as f64 / 1000.0);
    }

    /// Hosts with no series in this pass: their episodes end, and long-silent ones are
    /// forgotten ([`Engine::sweep`]).
    fn sweep_silent_hosts(&mut self, target: i64) {
        let sweep = self.engine.sweep(target);
        self.metrics.hosts_silent.set(sweep.silent as i64);
        for ev in sweep.ended {
            if let Event::Closed(ep) = &ev {
                tracing::info!(
                    host = %ep.instance,
                    episode = %ep.id,
                    "the host has no series any more; its episode ends"
                );
            }
            self.on_event(ev);
        }
        for host in sweep.forgotten {
            self.metrics.hosts_forgotten.inc();
            tracing::info!(
                %host,
                after = %self.config.analysis.forget_host_after,
                "forgot a host without series (its baseline is freed; if it comes back it warms up again)"
            );
        }
    }

    /// The hosts' matrices for the windows ending in `(after, until]`: one window length
    /// before, plus one step so counter increases exist at the first window's start.
    async fn fetch(&mut self, after: i64, until: i64) -> Result<Vec<HostMatrix>, SourceError> {
        let a = &self.config.analysis;
        let (window, stride, step) = (
            a.window.0.as_millis() as i64,
            a.stride.0.as_millis() as i64,
            a.step.0.as_millis() as i64,
        );
        let range = TimeRange {
            start_ms: after + stride - window - step,
            end_ms: until + step,
        };
        let t0 = Instant::now();
        let fetched = match &mut self.input {
            Input::Prometheus(p) => p.fetch_async(range).await,
            Input::Scrape(s) => s.fetch(Some(range)),
        };
        self.metrics
            .query_duration_seconds
            .observe(t0.elapsed().as_secs_f64());
        fetched
    }

    /// Fills the baseline from the history before the first scored window, a minute at a
    /// time so a long baseline never sits in memory as raw samples. A chunk that fails (a
    /// store too slow to answer a minute of many hosts within the timeout) is asked for again
    /// in halves, down to 5 s, before the pass fails.
    /// Returns how many host matrices the history held.
    async fn learn_history(&mut self, from: i64, until: i64) -> Result<usize, SourceError> {
        const MIN_CHUNK_MS: i64 = 5_000;
        const CHUNK_MS: i64 = 60_000;
        // A stretch with no series is asked for in chunks twice as long each time, up to
        // what a range query may return (Prometheus refuses more than 11,000 points a
        // series): a baseline of history before a new Prometheus's first scrape is a few
        // requests per expression, not one a minute.
        let step = self.config.analysis.step.0.as_millis() as i64;
        let longest = (step * 10_000).max(CHUNK_MS);
        let mut chunk = CHUNK_MS;
        let mut a = from;
        let mut seen = 0;
        while a < until {
            let b = (a + chunk).min(until);
            let fetched = match self.fetch(a, b).await {
                Ok(f) if f.is_empty() => {
                    chunk = (chunk * 2).min(longest);
                    a = b;
                    continue;
                }
                Ok(f) => {
                    chunk = chunk.min(CHUNK_MS);
                    f
                }
                Err(e) if chunk > MIN_CHUNK_MS => {
                    self.metrics.query_failures.inc();
                    chunk /= 2;
                    tracing::warn!(
                        error = %e,
                        chunk_seconds = chunk / 1000,
                        "reading history failed; asking for smaller chunks"
                    );
                    continue;
                }
                Err(e) => return Err(e),
            };
            seen += fetched.len();
            for m in fetched {
                let spans: Vec<(i64, i64)> = self
                    .checkpoint
                    .open_episodes
                    .iter()
                    .filter(|e| e.instance == m.host)
                    .map(|e| (e.start_ms, until))
                    .collect();
                self.engine.learn(&m, a, b, &spans, &self.metrics);
            }
            a = b;
        }
        if seen == 0 {
            tracing::debug!(
                "the source holds no history yet; read again once the passes find series"
            );
            return Ok(0);
        }
        let st = self.engine.status();
        tracing::info!(
            baseline_windows = st.baseline_windows,
            warming_up = st.warming_up,
            "history learned"
        );
        Ok(seen)
    }

    /// The wall clock is `behind_ms` behind the last analyzed window: it stepped back. No
    /// window is analyzed twice, so analysis waits until the clock passes that window again;
    /// open alerts are still re-sent meanwhile, so Alertmanager does not resolve them.
    async fn clock_behind(&mut self, behind_ms: i64) {
        if self.clock_behind_since.is_none() {
            self.clock_behind_since = Some(Instant::now());
            self.metrics.clock_steps_back.inc();
            tracing::warn!(
                behind_seconds = behind_ms as f64 / 1000.0,
                "the clock stepped back behind the last analyzed window; analysis waits until \
                 it passes that window again (no window is analyzed twice), alerts are still re-sent"
            );
        }
        self.metrics.lag_seconds.set(-(behind_ms as f64) / 1000.0);
        self.deliver().await;
    }

    fn clock_caught_up(&mut self) {
        if let Some(since) = self.clock_behind_since.take() {
            tracing::info!(
                waited_seconds = since.elapsed().as_secs_f64().round(),
                "the clock passed the last analyzed window; analysis resumes"
            );
        }
    }

    async fn fetch_failed(&mut self, e: SourceError) {
        self.metrics.query_failures.inc();
        self.health.ready.store(false, Ordering::Relaxed);
        tracing::warn!(error = %e, "fetch failed; the next pass catches up");
        self.deliver().await;
        self.metrics
            .lag_seconds
            .set((now_ms() - self.checkpoint.analyzed_until_ms) as f64 / 1000.0);
    }

    fn on_event(&mut self, ev: Event) {
        match &ev {
            Event::Opened(ep) => {
                self.metrics.episodes_opened.inc();
                tracing::info!(episode = %ep.id, subsystem = %ep.subsystem, severity = %ep.severity, summary = %ep.summary, "episode opened");
            }
            Event::Extended(_) => {}
            Event::Closed(ep) => tracing::info!(episode = %ep.id, "episode closed"),
        }
        if self.alerts.is_some() || self.reports.is_some() {
            self.pending.push(ev);
        }
    }

    /// The pass's episode events to the alerts and reports, in order. An alert not yet
    /// sent first asks Prometheus which cgroup is behind it ([`cgroups`]); the answer is
    /// kept for the alert's life, so its labels do not change.
    async fn flush_events(&mut self) {
        for ev in std::mem::take(&mut self.pending) {
            match ev {
                Event::Opened(ep) | Event::Extended(ep) => {
                    self.ask_cgroups(&ep).await;
                    self.ask_devices(&ep).await;
                    let now = self.clock.now();
                    if let Some(tx) = self.alerts.as_mut() {
                        alerts::upsert_alerts(tx, &ep, now, &self.culprits, &self.named);
                    }
                }
                Event::Closed(ep) => {
                    self.ask_cgroups(&ep).await;
                    self.ask_devices(&ep).await;
                    if let Some(r) = self.reports.as_mut() {
                        r.episode(&alerts::with_cgroups(&ep, &self.culprits, &self.named));
                    }
                    for sub in alerts::alerted(&ep) {
                        let key = alerts::alert_key(&ep, sub);
                        if let Some(tx) = self.alerts.as_mut() {
                            tx.resolve(&key, at(ep.last_flagged_ms));
                        }
                        self.culprits.remove(&key);
                        self.named.remove(&key);
                    }
                }
            }
        }
    }

    /// Asks once per alerted subsystem of `ep` which cgroups are behind it. Only a
    /// Prometheus source can be asked; a question that fails or takes longer than
    /// [`cgroups::TIMEOUT`] is answered with nothing (logged), and the alert goes out
    /// without a cgroup.
    async fn ask_cgroups(&mut self, ep: &crate::core::episodes::OpenEpisode) {
        let Input::Prometheus(p) = &self.input else {
            return;
        };
        let (client, host_label) = (p.client().clone(), p.host_label().to_string());
        for sub in alerts::alerted(ep) {
            let key = alerts::alert_key(ep, sub);
            if self.culprits.contains_key(&key) {
                continue;
            }
            let asked = tokio::time::timeout(
                cgroups::TIMEOUT,
                cgroups::lookup(&client, &host_label, ep, sub),
            )
            .await;
            let culprit = match asked {
                Ok(Ok(c)) => c,
                Ok(Err(e)) => {
                    tracing::warn!(episode = %ep.id, subsystem = sub, error = %e, "could not ask which cgroup is behind the alert");
                    None
                }
                Err(_) => {
                    tracing::warn!(episode = %ep.id, subsystem = sub, "asking which cgroup is behind the alert took too long");
                    None
                }
            };
            if let Some(c) = culprit.as_ref().filter(|c| !c.is_empty()) {
                tracing::info!(episode = %ep.id, subsystem = sub, cgroups = %c.sentence(), "cgroups behind the alert");
            }
            self.culprits.insert(key, culprit);
        }
    }

    /// Asks once per alerted subsystem of `ep` which devices its evidence points at, where
    /// the evidence is a channel the metric set aggregates over devices ([`drilldown`]).
    /// Only a Prometheus source can be asked; a question that fails or takes longer than
    /// [`drilldown::TIMEOUT`] names nothing (logged).
    async fn ask_devices(&mut self, ep: &crate::core::episodes::OpenEpisode) {
        let Input::Prometheus(p) = &self.input else {
            return;
        };
        let (client, host_label) = (p.client().clone(), p.host_label().to_string());
        for sub in alerts::alerted(ep) {
            let key = alerts::alert_key(ep, sub);
            if self.named.contains_key(&key) {
                continue;
            }
            let asked = tokio::time::timeout(
                drilldown::TIMEOUT,
                drilldown::lookup(&client, &host_label, &self.config.metrics, ep, sub),
            )
            .await;
            let named = match asked {
                Ok(Ok(found)) => {
                    if found.named.is_none() && !found.asked.is_empty() {
                        tracing::info!(episode = %ep.id, subsystem = sub, asked = %found.asked.join("; "), "no device stands apart behind the alert");
                    }
                    found.named
                }
                Ok(Err(e)) => {
                    tracing::warn!(episode = %ep.id, subsystem = sub, error = %e, "could not ask which devices are behind the alert");
                    None
                }
                Err(_) => {
                    tracing::warn!(episode = %ep.id, subsystem = sub, "asking which devices are behind the alert took too long");
                    None
                }
            };
            if let Some((channel, n)) = &named {
                tracing::info!(episode = %ep.id, subsystem = sub, %channel, devices = %n, "devices behind the alert");
            }
            self.named.insert(key, named);
        }
    }

    /// Alert delivery and the output metrics.
    async fn deliver(&mut self) {
        self.flush_events().await;
        if let Some(tx) = self.alerts.as_mut() {
            if tx.tick(self.clock.now()).await.is_err() {
                self.metrics.delivery_failed("alertmanager");
            }
            let s = tx.stats();
            set_counter(&self.metrics.alerts_sent, s.sent);
            set_counter(&self.metrics.alerts_dropped, s.dropped);
            self.metrics.alerts_queued.set(s.queued as i64);
        }
        if let Some(w) = self.writer.as_ref() {
            let s = w.stats();
            set_counter(&self.metrics.remote_write_samples_sent, s.samples_sent);
            set_counter(
                &self.metrics.remote_write_samples_dropped,
                s.samples_dropped,
            );
            self.metrics
                .remote_write_samples_pending
                .set(s.pending_samples as i64);
        }
    }

    fn report_warmup(&mut self) {
        let st = self.engine.status();
        self.metrics.warming_up.set(i64::from(st.warming_up));
        self.metrics
            .hosts_warming_up
            .set(st.hosts_warming_up as i64);
        self.metrics
            .warmup_remaining_seconds
            .set(st.warmup_remaining_ms as f64 / 1000.0);
        self.metrics
            .baseline_windows
            .set(st.baseline_windows as i64);
        if st.warming_up
            && self
                .last_warmup_log
                .is_none_or(|t| t.elapsed() >= Duration::from_secs(10))
        {
            self.last_warmup_log = Some(Instant::now());
            let skipped = std::mem::take(&mut self.skipped_since_log)
                .iter()
                .map(|(r, n)| format!("{r}: {n}"))
                .collect::<Vec<_>>()
                .join(", ");
            let hosts = self.metrics.hosts.get();
            if hosts == 0 {
                // Nothing to learn from: say so, rather than count down a warm-up that
                // cannot end.
                tracing::warn!(
                    baseline_windows = st.baseline_windows,
                    "warming up, but the source returned no series for the newest windows: is \
                     the exporter scraped (`up` of its job is 1; a scrape of ?cadence=fast needs \
                     the exporter's --metrics.fast), and is the newest data queryable? \
                     (VictoriaMetrics hides the last 30 s unless started with \
                     -search.latencyOffset=1s; or raise analysis.delay)"
                );
            } else {
                tracing::info!(
                    remaining_s = st.warmup_remaining_ms / 1000,
                    baseline_windows = st.baseline_windows,
                    hosts,
                    skipped = %skipped,
                    "warming up: collecting baseline windows before the first fit"
                );
            }
        }
    }

    fn save(&mut self) {
        if let Err(e) = self.store.save(&self.checkpoint) {
            self.metrics.checkpoint_failures.inc();
            tracing::error!(error = %e, "checkpoint not written");
        }
    }
}

/// Counters only go up; the outputs keep their own totals, copied here.
fn set_counter(c: &prometheus_client::metrics::counter::Counter, total: u64) {
    let cur = c.get();
    if total > cur {
        c.inc_by(total - cur);
    }
}

/// Loads the config, starts the service and runs it until SIGINT or SIGTERM.
pub async fn run(config: Config) -> Result<(), ServiceError> {
    let (service, server) = Service::start(config).await?;
    let shutdown = async {
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term => {}
        }
        tracing::info!("shutting down");
    };
    service.run(shutdown).await;
    server.abort();
    Ok(())
}
