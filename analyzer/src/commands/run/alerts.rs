//! From episodes to Alertmanager alerts: one alert per alerted subsystem of an episode,
//! keyed `episode-id/subsystem`, so restarts and re-sends address the same alert.

use std::time::SystemTime;

use super::at;
use crate::core::episodes::OpenEpisode;
use crate::outputs::alertmanager::{AlertSender, Finding};

/// The subsystems an episode alerts on (checkpoints from before per-subsystem alerts hold
/// only the heaviest).
pub(super) fn alerted(ep: &OpenEpisode) -> Vec<&str> {
    if ep.subsystems.is_empty() {
        vec![ep.subsystem.as_str()]
    } else {
        ep.subsystems.iter().map(String::as_str).collect()
    }
}

pub(super) fn alert_key(ep: &OpenEpisode, subsystem: &str) -> String {
    format!("{}/{subsystem}", ep.id)
}

/// One alert per alerted subsystem of the episode.
pub(super) fn upsert_alerts(tx: &mut AlertSender, ep: &OpenEpisode, now: SystemTime) {
    for sub in alerted(ep) {
        tx.upsert(&alert_key(ep, sub), finding(ep, sub), now);
    }
}

fn finding(ep: &OpenEpisode, subsystem: &str) -> Finding {
    Finding {
        alertname: "RevealAnomaly",
        instance: ep.instance.clone(),
        subsystem: subsystem.to_string(),
        severity: match ep.severity.as_str() {
            "critical" => "critical",
            "warning" => "warning",
            _ => "info",
        },
        summary: ep
            .claims
            .get(subsystem)
            .cloned()
            .unwrap_or_else(|| ep.summary.clone()),
        description: ep.description.clone(),
        detectors: ep.detectors.clone(),
        hint: ep.hints.get(subsystem).cloned(),
        start: at(ep.start_ms),
        last_window_end: at(ep.last_flagged_ms),
    }
}
