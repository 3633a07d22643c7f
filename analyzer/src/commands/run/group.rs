//! A pass's cross-host comparison and regime changes to the outputs (see
//! [`crate::online::group`]): `reveal_host_deviation` samples, `RevealHostDeviation` alerts
//! opened, re-sent and resolved with the findings, and one `RevealRegimeChange` alert per
//! change.

use std::time::SystemTime;

use super::{at, Service};
use crate::online::group::{deviation_finding, deviation_key, regime_finding, regime_key};
use crate::outputs::remote_write::Batch;

impl Service {
    pub(super) fn group_outputs(&mut self, batch: &mut Batch) {
        let out = self.engine.cross_host();
        for (host, subsystem, end_ms, score) in &out.scores {
            batch.add_deviation(host, subsystem.as_str(), *end_ms, *score);
        }
        let now = SystemTime::now();
        for f in &out.open {
            if let Some(tx) = self.alerts.as_mut() {
                tx.upsert(
                    &deviation_key(&f.host, f.subsystem),
                    deviation_finding(f),
                    now,
                );
            }
        }
        for (host, subsystem, end_ms) in &out.resolved {
            tracing::info!(%host, %subsystem, "host deviation ended");
            if let Some(tx) = self.alerts.as_mut() {
                tx.resolve(&deviation_key(host, *subsystem), at(*end_ms));
            }
        }
        for ev in self.engine.take_regime_changes() {
            tracing::info!(host = %ev.host, summary = %ev.summary, "regime change");
            if let Some(tx) = self.alerts.as_mut() {
                // Sent once, firing until it ends by itself: an event, not a state.
                let key = regime_key(&ev);
                let (finding, ends) = regime_finding(&ev);
                tx.upsert(&key, finding, now);
                tx.resolve(&key, ends);
            }
        }
    }
}
