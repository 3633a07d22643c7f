//! CPUs, GPUs and NUMA nodes that stopped reporting ([`crate::core::presence`]) to the
//! outputs: one `RevealDeviceMissing` alert per host and device, firing while the device
//! sends nothing and its siblings go on, resolved when it reports again or is forgotten
//! (gone longer than the baseline).

use std::collections::BTreeSet;
use std::time::SystemTime;

use super::{at, Service};
use crate::core::presence::MissingDevice;
use crate::outputs::alertmanager::Finding;

/// What to check first when fixed hardware stops reporting.
const HINT: &str = "check the kernel log (dmesg) for the device: a GPU that fell off the bus \
logs Xid 79 and needs a reset or a reboot; a CPU or NUMA node taken offline shows in \
/sys/devices/system/";

impl Service {
    pub(super) fn device_outputs(&mut self) {
        let now = SystemTime::now();
        let mut open = BTreeSet::new();
        for (host, m) in self.engine.missing_devices() {
            let key = missing_key(&host, &m.device);
            if !self.devices_missing.contains(&key) {
                tracing::warn!(
                    %host,
                    device = %m.device,
                    subsystem = m.subsystem.as_str(),
                    summary = %m.summary(),
                    "a device stopped reporting"
                );
            }
            if let Some(tx) = self.alerts.as_mut() {
                tx.upsert(&key, missing_finding(&host, &m), now);
            }
            open.insert(key);
        }
        for key in self.devices_missing.difference(&open) {
            tracing::info!(alert = %key, "a missing device reports again, or is forgotten");
            if let Some(tx) = self.alerts.as_mut() {
                tx.resolve(key, now);
            }
        }
        self.devices_missing = open;
    }
}

/// The alert key of a host's missing device.
pub(super) fn missing_key(host: &str, device: &str) -> String {
    format!("missing/{host}/{device}")
}

/// A `RevealDeviceMissing` alert, labelled with the device.
pub(super) fn missing_finding(host: &str, m: &MissingDevice) -> Finding {
    Finding {
        alertname: "RevealDeviceMissing",
        instance: host.to_string(),
        subsystem: m.subsystem.as_str().to_string(),
        severity: "critical",
        summary: m.summary(),
        description: m.description(),
        detectors: "presence".to_string(),
        hint: Some(HINT.to_string()),
        cgroup: None,
        cgroups: None,
        device: Some(m.device.clone()),
        recurrence: None,
        start: at(m.last_ms),
        last_window_end: at(m.last_ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::matrix::Subsystem;

    #[test]
    fn a_missing_gpu_is_a_critical_alert_named_by_its_device() {
        let m = MissingDevice {
            device: "gpu 7".into(),
            subsystem: Subsystem::Gpu,
            last_ms: 75_483_000,
            metrics: vec![
                "reveal_gpu_power_watts".into(),
                "reveal_gpu_utilization_ratio".into(),
            ],
            reporting: 7,
            known: 8,
        };
        let f = missing_finding("node-a:9100", &m);
        assert_eq!(f.alertname, "RevealDeviceMissing");
        assert_eq!(f.subsystem, "gpu");
        assert_eq!(f.severity, "critical");
        assert_eq!(f.device.as_deref(), Some("gpu 7"));
        assert_eq!(
            f.summary,
            "gpu 7 not reporting since 20:58:03 UTC: 7 of 8 devices report"
        );
        assert_eq!(
            f.description,
            "gpu 7 stopped sending reveal_gpu_power_watts, reveal_gpu_utilization_ratio."
        );
        assert_eq!(
            missing_key("node-a:9100", "gpu 7"),
            "missing/node-a:9100/gpu 7"
        );
    }
}
