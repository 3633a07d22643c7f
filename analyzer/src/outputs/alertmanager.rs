//! Alerts to Alertmanager's API v2 (`POST /api/v2/alerts`,
//! <https://github.com/prometheus/alertmanager/blob/main/api/v2/openapi.yaml>), the way
//! Prometheus sends them: an open alert is re-sent every `resend_interval` with `endsAt` four
//! intervals ahead (so it resolves by itself if the analyzer dies), and a closed one is sent
//! once more with `endsAt` at its end.
//!
//! Each Alertmanager has its own bounded queue. While one is unreachable its alerts wait;
//! a newer state of the same alert replaces the queued one, and beyond the capacity the
//! oldest are dropped — counted, never silently.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::http::{HttpClient, HttpError};

mod time;
pub use time::rfc3339;

/// One alert as the API takes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alert {
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    #[serde(rename = "startsAt", serialize_with = "ser_time")]
    pub starts_at: SystemTime,
    #[serde(rename = "endsAt", serialize_with = "ser_time")]
    pub ends_at: SystemTime,
    #[serde(rename = "generatorURL", skip_serializing_if = "String::is_empty")]
    pub generator_url: String,
}

fn ser_time<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&rfc3339(*t))
}

/// What the analyzer knows about a finding; [`AlertSender`] turns it into [`Alert`]s.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// `RevealAnomaly`, `RevealHostDeviation`, `RevealRegimeChange` or `RevealDeviceMissing`.
    pub alertname: &'static str,
    pub instance: String,
    pub subsystem: String,
    /// `info`, `warning` or `critical`.
    pub severity: &'static str,
    /// The top claim, in plain language.
    pub summary: String,
    /// Evidence: the pairs behind the claim and their values against the baseline.
    pub description: String,
    /// Detectors that flagged, comma-separated.
    pub detectors: String,
    /// What to check first, for a known signature of the evidence (`core::hints`): the
    /// `remediation` annotation, left out when there is none.
    pub hint: Option<String>,
    /// The cgroup that took more of the subsystem during the finding (`core::culprit`): the
    /// alert's `cgroup` label, absent when none did or the host has no cgroup series.
    pub cgroup: Option<String>,
    /// What the cgroups say, in words (the cause and the cgroups that stalled): the
    /// `cgroups` annotation, also appended to the summary.
    pub cgroups: Option<String>,
    /// The device the finding is about (`gpu 7`): the alert's `device` label, so that two
    /// devices of one host are two alerts. Absent for findings about the host.
    pub device: Option<String>,
    /// How the finding recurs, in words (`recurring about every 30 min, 4th time`): the
    /// `recurrence` annotation and the label `recurring="true"`, for routing the host's
    /// routine apart from its faults. Absent for a finding that does not recur.
    pub recurrence: Option<String>,
    pub start: SystemTime,
    /// End of the latest flagged window.
    pub last_window_end: SystemTime,
}

impl Finding {
    pub(crate) fn labels(&self) -> BTreeMap<String, String> {
        [
            ("alertname", self.alertname),
            ("instance", self.instance.as_str()),
            ("subsystem", self.subsystem.as_str()),
            ("severity", self.severity),
        ]
        .into_iter()
        .chain(self.cgroup.as_deref().map(|c| ("cgroup", c)))
        .chain(self.device.as_deref().map(|d| ("device", d)))
        .chain(self.recurrence.as_ref().map(|_| ("recurring", "true")))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }
}

/// Counters for the service's /metrics.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SenderStats {
    /// Alerts accepted by an Alertmanager (each Alertmanager counts).
    pub sent: u64,
    /// Alerts dropped because a queue was full.
    pub dropped: u64,
    /// Failed POSTs.
    pub failed_requests: u64,
    /// Alerts waiting in all queues now.
    pub queued: u64,
}

struct Open {
    finding: Finding,
    last_sent: Option<SystemTime>,
}

struct Target {
    url: String,
    queue: VecDeque<Alert>,
}

pub struct AlertSender {
    client: HttpClient,
    targets: Vec<Target>,
    open: HashMap<String, Open>,
    resend: Duration,
    capacity: usize,
    generator_url: String,
    stats: SenderStats,
}

impl AlertSender {
    /// `urls` are Alertmanager base URLs; `/api/v2/alerts` is appended.
    pub fn new(client: HttpClient, urls: &[String], resend: Duration, capacity: usize) -> Self {
        let targets = urls
            .iter()
            .map(|u| Target {
                url: format!("{}/api/v2/alerts", u.trim_end_matches('/')),
                queue: VecDeque::new(),
            })
            .collect();
        AlertSender {
            client,
            targets,
            open: HashMap::new(),
            resend,
            capacity: capacity.max(1),
            generator_url: String::new(),
            stats: SenderStats::default(),
        }
    }

    /// Link shown by Alertmanager next to each alert (the analyzer's own address).
    pub fn set_generator_url(&mut self, url: String) {
        self.generator_url = url;
    }

    pub fn stats(&self) -> SenderStats {
        SenderStats {
            queued: self.targets.iter().map(|t| t.queue.len() as u64).sum(),
            ..self.stats
        }
    }

    /// Keys of the findings currently open.
    pub fn open_keys(&self) -> impl Iterator<Item = &str> {
        self.open.keys().map(String::as_str)
    }

    /// Opens or updates the finding `key` (an episode id); a new alert, or one whose labels
    /// changed, is queued at the next [`AlertSender::tick`].
    pub fn upsert(&mut self, key: &str, finding: Finding, now: SystemTime) {
        let Some(prev) = self.open.get(key) else {
            self.open.insert(
                key.to_string(),
                Open {
                    finding,
                    last_sent: None,
                },
            );
            return;
        };
        if prev.finding.labels() != finding.labels() {
            // Labels are the alert's identity: the old one is resolved, not left to expire.
            let old = self.alert(&prev.finding, now);
            self.enqueue(old);
            self.open.insert(
                key.to_string(),
                Open {
                    finding,
                    last_sent: None,
                },
            );
        } else if let Some(o) = self.open.get_mut(key) {
            // Newer evidence goes out with the next re-send; re-posting every window would
            // only load Alertmanager.
            o.finding = finding;
        }
    }

    /// Closes the finding `key`: one last alert with `endsAt = end` is queued.
    pub fn resolve(&mut self, key: &str, end: SystemTime) {
        if let Some(o) = self.open.remove(key) {
            let a = self.alert(&o.finding, end);
            self.enqueue(a);
        }
    }

    /// Queues open alerts that are new, changed, or due for a re-send, then delivers every
    /// queue. Returns the first delivery error (the queues keep what was not delivered).
    pub async fn tick(&mut self, now: SystemTime) -> Result<(), HttpError> {
        let due: Vec<Alert> = self
            .open
            .values_mut()
            .filter(|o| {
                // A `now` before the last send (a clock that stepped back) is due too: an
                // alert not re-sent expires in Alertmanager while its episode is open.
                o.last_sent
                    .is_none_or(|t| now.duration_since(t).map_or(true, |d| d >= self.resend))
            })
            .map(|o| {
                o.last_sent = Some(now);
                o.finding.clone()
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|f| self.alert(&f, now + self.resend * 4))
            .collect();
        for a in due {
            self.enqueue(a);
        }
        self.flush().await
    }

    fn alert(&self, f: &Finding, ends_at: SystemTime) -> Alert {
        let annotations = [
            ("summary", f.summary.clone()),
            ("description", f.description.clone()),
            ("detectors", f.detectors.clone()),
            ("window_start", rfc3339(f.start)),
            ("window_end", rfc3339(f.last_window_end)),
        ]
        .into_iter()
        .chain(f.hint.clone().map(|h| ("remediation", h)))
        .chain(f.cgroups.clone().map(|c| ("cgroups", c)))
        .chain(f.recurrence.clone().map(|r| ("recurrence", r)))
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        Alert {
            labels: f.labels(),
            annotations,
            starts_at: f.start,
            // Alertmanager refuses an alert that ends before it starts.
            ends_at: ends_at.max(f.start),
            generator_url: self.generator_url.clone(),
        }
    }

    fn enqueue(&mut self, a: Alert) {
        for t in &mut self.targets {
            // A newer state of the same alert supersedes the queued one.
            t.queue.retain(|q| q.labels != a.labels);
            t.queue.push_back(a.clone());
            while t.queue.len() > self.capacity {
                t.queue.pop_front();
                self.stats.dropped += 1;
                tracing::warn!(url = %t.url, "alert queue full; dropped the oldest alert");
            }
        }
    }

    async fn flush(&mut self) -> Result<(), HttpError> {
        let mut first_err = None;
        for t in &mut self.targets {
            if t.queue.is_empty() {
                continue;
            }
            let batch: Vec<&Alert> = t.queue.iter().collect();
            let res = match self.client.request(reqwest::Method::POST, &t.url) {
                Ok(rb) => self.client.send(&t.url, rb.json(&batch)).await.map(|_| ()),
                Err(e) => Err(e),
            };
            match res {
                Ok(()) => {
                    self.stats.sent += t.queue.len() as u64;
                    t.queue.clear();
                }
                Err(e) => {
                    self.stats.failed_requests += 1;
                    if !e.is_retryable() {
                        // Alertmanager refused the alerts themselves (400): retrying cannot help.
                        self.stats.dropped += t.queue.len() as u64;
                        t.queue.clear();
                    }
                    tracing::warn!(error = %e, queued = t.queue.len(), "alert delivery failed");
                    first_err.get_or_insert(e);
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests;
