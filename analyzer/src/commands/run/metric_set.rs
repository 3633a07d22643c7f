//! The metric set against the Prometheus source: every expression is checked once at start
//! (one the server refuses stops the start, naming it), and the entries that return no series
//! are watched pass after pass (counted, and logged once per change).

use super::{now_ms, Input, Service, ServiceError};
use crate::ingest::prometheus::check::Rejections;
use crate::ingest::prometheus::entries::describe;
use crate::ingest::prometheus::PrometheusSource;

/// Checks every expression against the server once ([`PrometheusSource::check_exprs`]). A
/// refused one is an error naming it; a server that cannot be reached, or fails otherwise,
/// is only logged: the passes wait for it and report what fails, as they would without the
/// check.
pub(super) async fn check_at_start(source: &PrometheusSource) -> Result<(), ServiceError> {
    let c = source.check_exprs(now_ms()).await;
    if !c.rejected.is_empty() {
        return Err(ServiceError::Rejected(Rejections(c.rejected)));
    }
    match c.first_error {
        Some(error) => tracing::warn!(
            unchecked = c.unchecked,
            %error,
            "could not check every metric-set expression against Prometheus; starting anyway \
             (an expression it refuses fails every pass, and the log names it)"
        ),
        None => tracing::info!(
            entries = source.entries(),
            empty_now = c.empty.len(),
            "Prometheus accepts every metric-set expression"
        ),
    }
    Ok(())
}

impl Service {
    /// Counts the metric-set entries that returned no series in the latest pass, and logs
    /// those that became empty or returned series since the pass before.
    pub(super) fn watch_empty_entries(&mut self) {
        let Input::Prometheus(p) = &self.input else {
            return;
        };
        let c = self.empty_entries.update(&p.last_series);
        self.metrics.metric_entries_empty.set(c.empty_now as i64);
        let specs = &self.config.metrics;
        if !c.became_empty.is_empty() {
            tracing::warn!(
                entries = %describe(specs, &c.became_empty),
                "metric-set entries return no series: nothing of them is analyzed until they \
                 do (a metric these hosts lack, one an exporter's selection leaves out, a \
                 misspelt name or label)"
            );
        }
        if !c.returned.is_empty() {
            tracing::info!(
                entries = %describe(specs, &c.returned),
                "metric-set entries return series again"
            );
        }
    }
}
