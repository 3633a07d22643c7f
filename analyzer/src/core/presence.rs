//! Devices that stop reporting: a CPU, GPU or NUMA node that sent its series before and has
//! sent nothing for a while, though its siblings go on.
//!
//! Such hardware does not come and go while a host runs, so its disappearance is a finding by
//! itself — a GPU fallen off the bus (NVIDIA's Xid 79), a CPU taken offline, a NUMA node's
//! memory gone — whatever the detectors make of the windows around it. The families
//! ([`crate::core::families`]) already say which series are per device and which devices are
//! siblings; this module remembers, per family of fixed hardware
//! ([`crate::core::families::FIXED_DEVICE_LABELS`]),
//! when each device last had a sample, and calls a device missing when it has had none for
//! `gone_ms` while at least one sibling had one within that time. A family silent as a whole
//! is a gap in the host's samples (an exporter restarting, a slow scrape), not a device gone,
//! and names nobody. A device missing from several families (a GPU's utilization, power and
//! clocks) is one finding that lists them.
//!
//! A device is forgotten once it has been gone longer than the baseline ([`Presence::observe`]'s
//! `forget_before_ms`): hardware removed on purpose stops being reported by itself then.

use std::collections::BTreeMap;

use crate::core::labels::parse_channel;
use crate::core::matrix::{HostMatrix, Subsystem};

/// One family of fixed hardware in one pass: its devices and the time of each one's last
/// sample in the pass (`None`: none in it).
#[derive(Debug, Clone, PartialEq)]
pub struct FixedFamily {
    /// The family key (`reveal_gpu_utilization_ratio{gpu="*"}`).
    pub key: String,
    pub subsystem: Subsystem,
    pub devices: Vec<(String, Option<i64>)>,
}

impl FixedFamily {
    /// The family `key` over `members` (rows of `m` and their device names), with each
    /// device's last sample in `m`.
    pub fn new(key: &str, m: &HostMatrix, members: &[(usize, String)]) -> FixedFamily {
        let devices = members
            .iter()
            .map(|(row, d)| {
                let last = m
                    .row(*row)
                    .iter()
                    .rposition(|v| v.is_finite())
                    .map(|t| m.time_ms(t));
                (d.clone(), last)
            })
            .collect();
        FixedFamily {
            key: key.to_string(),
            subsystem: members
                .first()
                .map_or(Subsystem::Other, |(r, _)| m.channels[*r].subsystem),
            devices,
        }
    }
}

/// A device that stopped reporting ([`Presence::missing`]).
#[derive(Debug, Clone, PartialEq)]
pub struct MissingDevice {
    /// `gpu 7`, `cpu 95`, `node 1`.
    pub device: String,
    pub subsystem: Subsystem,
    /// Its last sample in any of the families below.
    pub last_ms: i64,
    /// The metrics it stopped sending (each family's metric name), in name order.
    pub metrics: Vec<String>,
    /// Devices of its largest family that still report, and how many that family has had.
    pub reporting: usize,
    pub known: usize,
}

impl MissingDevice {
    /// "gpu 7 not reporting since 20:58:03 UTC: 7 of 8 devices report".
    pub fn summary(&self) -> String {
        let since = crate::core::clock::clock(self.last_ms);
        format!(
            "{} not reporting since {since} UTC: {} of {} devices report",
            self.device, self.reporting, self.known
        )
    }

    /// The metrics it stopped sending, the first few by name.
    pub fn description(&self) -> String {
        const SHOWN: usize = 6;
        let mut s = self.metrics[..self.metrics.len().min(SHOWN)].join(", ");
        if self.metrics.len() > SHOWN {
            s.push_str(&format!(" and {} more", self.metrics.len() - SHOWN));
        }
        format!("{} stopped sending {s}.", self.device)
    }
}

#[derive(Debug, Clone)]
struct Tracked {
    subsystem: Subsystem,
    /// Each device's last sample.
    devices: BTreeMap<String, i64>,
}

/// The devices of one host's families of fixed hardware, and when each last reported.
#[derive(Debug, Default, Clone)]
pub struct Presence(BTreeMap<String, Tracked>);

impl Presence {
    /// Records a pass's families, and forgets devices without a sample since
    /// `forget_before_ms`.
    pub fn observe(&mut self, families: &[FixedFamily], forget_before_ms: i64) {
        for f in families {
            let t = self.0.entry(f.key.clone()).or_insert_with(|| Tracked {
                subsystem: f.subsystem,
                devices: BTreeMap::new(),
            });
            for (device, last) in &f.devices {
                if let Some(last) = *last {
                    let seen = t.devices.entry(device.clone()).or_insert(last);
                    *seen = (*seen).max(last);
                }
            }
        }
        for t in self.0.values_mut() {
            t.devices.retain(|_, seen| *seen >= forget_before_ms);
        }
        self.0.retain(|_, t| !t.devices.is_empty());
    }

    /// The devices without a sample for `gone_ms` at `now_ms` in a family where a sibling had
    /// one, one finding per device, in subsystem and device order.
    pub fn missing(&self, now_ms: i64, gone_ms: i64) -> Vec<MissingDevice> {
        let mut found: BTreeMap<(&'static str, &str), MissingDevice> = BTreeMap::new();
        for (key, t) in &self.0 {
            let gone = |seen: i64| now_ms - seen >= gone_ms;
            let reporting = t.devices.values().filter(|s| !gone(**s)).count();
            if reporting == 0 {
                continue;
            }
            let metric = parse_channel(key).0.to_string();
            for (device, &seen) in t.devices.iter().filter(|(_, s)| gone(**s)) {
                let m = found
                    .entry((t.subsystem.as_str(), device.as_str()))
                    .or_insert_with(|| MissingDevice {
                        device: device.clone(),
                        subsystem: t.subsystem,
                        last_ms: seen,
                        metrics: Vec::new(),
                        reporting,
                        known: t.devices.len(),
                    });
                m.last_ms = m.last_ms.max(seen);
                if !m.metrics.contains(&metric) {
                    m.metrics.push(metric.clone());
                }
                if t.devices.len() > m.known {
                    m.known = t.devices.len();
                    m.reporting = reporting;
                }
            }
        }
        let mut out: Vec<MissingDevice> = found.into_values().collect();
        for m in &mut out {
            m.metrics.sort();
        }
        out
    }
}

#[cfg(test)]
mod tests;
