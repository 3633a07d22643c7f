//! Building the service from a checked configuration: self-metrics and HTTP listener,
//! checkpoint, source (with the Prometheus source, its expressions checked against the
//! server: [`super::metric_set`]), outputs, and the episodes restored from the checkpoint.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::registry::Registry;

use super::{at, Health, Input, SelfMetrics, Server, Service, ServiceError, MAX_PENDING_SAMPLES};
use crate::config::Config;
use crate::http::HttpClient;
use crate::ingest::kinds::MetricSet;
use crate::ingest::promapi::PromClient;
use crate::ingest::prometheus::PrometheusSource;
use crate::ingest::scrape::ScrapeSource;
use crate::ingest::shard::Shard;
use crate::online::{Engine, EngineParams};
use crate::outputs::alertmanager::AlertSender;
use crate::outputs::checkpoint::{Checkpoint, Store};
use crate::outputs::remote_write::RemoteWriter;

impl Service {
    /// Builds the service from a checked config: clients, checkpoint, HTTP listener.
    pub async fn start(
        config: Config,
    ) -> Result<(Service, tokio::task::JoinHandle<()>), ServiceError> {
        let mut registry = Registry::default();
        let metrics = SelfMetrics::new(&mut registry);
        let health = Arc::new(Health::default());
        let addr = config.listen_address;
        let listener = Server::bind(addr)
            .await
            .map_err(|source| ServiceError::Listen { addr, source })?;
        // With port 0 the system picks the port; the log must say which, or nobody can reach it.
        let bound = listener.local_addr().unwrap_or(addr);
        let server = Arc::new(Server {
            registry: Arc::new(registry),
            health: health.clone(),
        });
        let server_task = tokio::spawn(server.serve(listener));
        tracing::info!(addr = %bound, "serving /metrics, /-/healthy, /-/ready");

        let store = Store::open(&config.state_dir)?;
        let checkpoint = match store.load() {
            Ok(Some(c)) => {
                tracing::info!(
                    analyzed_until = %crate::outputs::alertmanager::rfc3339(at(c.analyzed_until_ms)),
                    open_episodes = c.open_episodes.len(),
                    "resuming from checkpoint"
                );
                c
            }
            Ok(None) => Checkpoint::default(),
            Err(e @ crate::outputs::checkpoint::CheckpointError::Corrupt { .. }) => {
                let aside = store.set_aside()?;
                tracing::error!(error = %e, kept = %aside.display(), "unreadable checkpoint set aside; starting fresh");
                Checkpoint::default()
            }
            Err(e) => return Err(e.into()),
        };

        let a = &config.analysis;
        let step_ms = a.step.0.as_millis() as i64;
        let input = if let Some(p) = &config.source.prometheus {
            let client = PromClient::new(HttpClient::new(&p.http_client())?, &p.url);
            let shard = p.shard.unwrap_or(Shard::ALL);
            metrics.set_shard(shard.index, shard.count);
            if shard != Shard::ALL {
                tracing::info!(%shard, host_label = %p.host_label, "analyzing one shard of the hosts");
            }
            let source = PrometheusSource::new(client, &config.metrics, step_ms, &p.host_label)?
                .with_shard(shard)
                .with_settle(2 * a.delay.0.as_millis() as i64);
            super::metric_set::check_at_start(&source).await?;
            Input::Prometheus(Box::new(source))
        } else if let Some(s) = &config.source.scrape {
            let set = MetricSet::new(&config.metrics, "metrics")
                .map_err(|e| ServiceError::Setup(e.to_string()))?;
            metrics.set_shard(0, 1);
            let src = ScrapeSource::new(&s.targets, step_ms, set);
            // Enough raw history for the windows of a few passes; the baseline keeps features.
            let retention = a.window.0 + a.stride.0 * 4 + a.delay.0 + Duration::from_secs(5);
            src.spawn(HttpClient::new(&s.http_client())?, s.interval.0, retention);
            Input::Scrape(src)
        } else {
            return Err(ServiceError::Setup("no source configured".into()));
        };

        let writer = match &config.outputs.remote_write {
            Some(rw) => Some(RemoteWriter::new(
                HttpClient::new(&rw.http_client())?,
                rw.url.clone(),
                MAX_PENDING_SAMPLES,
            )),
            None => None,
        };
        let mut alerts = match &config.outputs.alertmanager {
            Some(am) => Some(AlertSender::new(
                HttpClient::new(&am.http_client())?,
                &am.urls,
                am.resend_interval.0,
                am.queue_capacity,
            )),
            None => None,
        };
        if let Some(tx) = alerts.as_mut() {
            tx.set_generator_url(format!("http://{addr}/metrics"));
        }
        let mut params = EngineParams::from_config(a);
        // Labels the metric set's entries declare as naming a device join the known ones.
        params.add_device_labels(&config.device_labels());
        let mut engine = Engine::new(params);
        // A refit never holds a pass back: windows go on being scored while it runs.
        engine.fit_in_background();
        engine.restore_episodes(&checkpoint.open_episodes);
        // Same key and labels as before the restart: Alertmanager sees the same alert, with
        // the same cgroup asked again at the first delivery.
        let pending = match alerts {
            Some(_) => checkpoint
                .open_episodes
                .iter()
                .cloned()
                .map(crate::core::episodes::tracker::Event::Extended)
                .collect(),
            None => Vec::new(),
        };
        let reports = match &config.outputs.reports_dir {
            Some(d) => Some(
                crate::online::reports::Reports::open(d)
                    .map_err(|e| ServiceError::Setup(e.to_string()))?,
            ),
            None => None,
        };
        metrics
            .episodes_open
            .set(checkpoint.open_episodes.len() as i64);
        Ok((
            Service {
                config,
                input,
                engine,
                writer,
                alerts,
                store,
                checkpoint,
                metrics,
                health,
                reports,
                last_warmup_log: None,
                learned: false,
                history_empty: false,
                clock: super::steady::SteadyClock::new(),
                clock_behind_since: None,
                skipped_since_log: Default::default(),
                duplicates_reported: Default::default(),
                empty_entries: Default::default(),
                culprits: Default::default(),
                named: Default::default(),
                pending,
                devices_missing: Default::default(),
            },
            server_task,
        ))
    }
}
