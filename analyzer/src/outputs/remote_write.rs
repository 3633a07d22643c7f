//! Prometheus remote write, protocol 1.0
//! (<https://prometheus.io/docs/specs/remote_write_spec/>): a protobuf `WriteRequest`,
//! snappy block-compressed, POSTed with the three headers the spec requires.
//!
//! The messages are declared here with `prost` derives rather than generated from
//! `prompb/remote.proto`, so the build needs no `protoc`; the field numbers are the spec's.
//!
//! The series written are few and bounded: per host, one `reveal_anomaly_score` per detector,
//! one `reveal_anomaly_agreement`, and one `reveal_anomaly_subsystem` and
//! `reveal_host_deviation` per subsystem (five at most) — never a label per feature or window.

use std::collections::{BTreeMap, VecDeque};

use crate::core::matrix::SUBSYSTEMS;
use crate::http::{retry, Backoff, HttpClient, HttpError};

/// The bits of Prometheus' staleness marker, a NaN with this payload (`value.StaleNaN`).
const STALE_NAN: u64 = 0x7ff0_0000_0000_0002;

/// `prometheus.WriteRequest`; metadata (field 3) is not sent.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// Sorted by name, `__name__` included, no duplicates (the spec's requirement).
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    /// In increasing timestamp order.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
}

#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, prost::Message)]
pub struct Label {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// Samples collected for one request, grouped by series.
#[derive(Debug, Default, Clone)]
pub struct Batch {
    series: BTreeMap<Vec<Label>, Vec<Sample>>,
}

/// What one analyzed window of one host contributes to the anomaly series.
#[derive(Debug, Clone)]
pub struct WindowPoint<'a> {
    pub instance: &'a str,
    /// Window end, ms since the epoch: the sample timestamp.
    pub end_ms: i64,
    /// (detector, score / threshold): above 1 is anomalous.
    pub scores: &'a [(&'a str, f64)],
    /// How many detectors flagged the window.
    pub agreement: u32,
    /// (subsystem, share of the window's attribution), zero for an unflagged window.
    pub subsystems: &'a [(&'a str, f64)],
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    pub fn samples(&self) -> usize {
        self.series.values().map(Vec::len).sum()
    }

    /// Adds one sample; non-finite values are dropped (Prometheus would store them, but a NaN
    /// score is never a finding).
    pub fn add(&mut self, name: &str, labels: &[(&str, &str)], timestamp_ms: i64, value: f64) {
        if !value.is_finite() {
            return;
        }
        self.push(name, labels, timestamp_ms, value);
    }

    /// Prometheus' staleness marker for the series at `timestamp_ms`: it ends there, and
    /// queries stop returning its last value, as when Prometheus marks the series of a target
    /// that went away.
    pub fn add_stale(&mut self, name: &str, labels: &[(&str, &str)], timestamp_ms: i64) {
        self.push(name, labels, timestamp_ms, f64::from_bits(STALE_NAN));
    }

    fn push(&mut self, name: &str, labels: &[(&str, &str)], timestamp_ms: i64, value: f64) {
        let mut ls: Vec<Label> = labels
            .iter()
            .map(|(n, v)| Label {
                name: n.to_string(),
                value: v.to_string(),
            })
            .chain(std::iter::once(Label {
                name: "__name__".into(),
                value: name.into(),
            }))
            .collect();
        ls.sort_by(|a, b| a.name.cmp(&b.name));
        ls.dedup_by(|a, b| a.name == b.name);
        self.series.entry(ls).or_default().push(Sample {
            value,
            timestamp: timestamp_ms,
        });
    }

    /// The anomaly series of one window.
    pub fn add_window(&mut self, w: &WindowPoint<'_>) {
        for (detector, score) in w.scores {
            self.add(
                "reveal_anomaly_score",
                &[("instance", w.instance), ("detector", detector)],
                w.end_ms,
                *score,
            );
        }
        self.add(
            "reveal_anomaly_agreement",
            &[("instance", w.instance)],
            w.end_ms,
            f64::from(w.agreement),
        );
        for (subsystem, share) in w.subsystems {
            if SUBSYSTEMS.contains(subsystem) {
                self.add(
                    "reveal_anomaly_subsystem",
                    &[("instance", w.instance), ("subsystem", subsystem)],
                    w.end_ms,
                    *share,
                );
            }
        }
    }

    /// Cross-host deviation of one host's subsystem (robust z, largest over its channels).
    pub fn add_deviation(&mut self, instance: &str, subsystem: &str, end_ms: i64, value: f64) {
        if SUBSYSTEMS.contains(&subsystem) {
            self.add(
                "reveal_host_deviation",
                &[("instance", instance), ("subsystem", subsystem)],
                end_ms,
                value,
            );
        }
    }

    /// Moves another batch's samples into this one.
    pub fn merge(&mut self, other: Batch) {
        for (labels, samples) in other.series {
            self.series.entry(labels).or_default().extend(samples);
        }
    }

    /// The protobuf message, samples of each series in timestamp order.
    pub fn to_request(&self) -> WriteRequest {
        let timeseries = self
            .series
            .iter()
            .map(|(labels, samples)| {
                let mut samples = samples.clone();
                samples.sort_by_key(|s| s.timestamp);
                samples.dedup_by_key(|s| s.timestamp);
                TimeSeries {
                    labels: labels.clone(),
                    samples,
                }
            })
            .collect();
        WriteRequest { timeseries }
    }

    /// The request body: protobuf, then snappy's block format (not the framed format).
    pub fn encode(&self) -> Vec<u8> {
        let proto = prost::Message::encode_to_vec(&self.to_request());
        // Compressing a byte slice into a Vec cannot fail except beyond snappy's 4 GiB input
        // limit, which a bounded batch never reaches.
        snap::raw::Encoder::new()
            .compress_vec(&proto)
            .unwrap_or_default()
    }
}

/// Decodes a request body; used by tests and by anyone debugging what was sent.
pub fn decode(body: &[u8]) -> Result<WriteRequest, String> {
    let proto = snap::raw::Decoder::new()
        .decompress_vec(body)
        .map_err(|e| format!("snappy: {e}"))?;
    prost::Message::decode(proto.as_slice()).map_err(|e| format!("protobuf: {e}"))
}

/// Counters of the writer, exported by the service's /metrics.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WriterStats {
    pub samples_sent: u64,
    pub samples_dropped: u64,
    pub failed_requests: u64,
    pub pending_samples: u64,
}

/// Sends batches; a batch that fails for a retryable reason waits (bounded by
/// `max_pending_samples`, oldest dropped first and counted) and goes out before newer data.
pub struct RemoteWriter {
    client: HttpClient,
    url: String,
    pending: VecDeque<Batch>,
    max_pending_samples: usize,
    stats: WriterStats,
}

impl RemoteWriter {
    pub fn new(client: HttpClient, url: String, max_pending_samples: usize) -> Self {
        RemoteWriter {
            client,
            url,
            pending: VecDeque::new(),
            max_pending_samples,
            stats: WriterStats::default(),
        }
    }

    pub fn stats(&self) -> WriterStats {
        WriterStats {
            pending_samples: self.pending.iter().map(|b| b.samples() as u64).sum(),
            ..self.stats
        }
    }

    /// One POST of one batch, with a few quick retries for transport errors and 5xx.
    pub async fn send(&self, batch: &Batch) -> Result<(), HttpError> {
        let body = batch.encode();
        retry(Backoff::default(), 3, || async {
            let rb = self
                .client
                .request(reqwest::Method::POST, &self.url)?
                .header("Content-Encoding", "snappy")
                .header("Content-Type", "application/x-protobuf")
                .header("X-Prometheus-Remote-Write-Version", "0.1.0")
                .body(body.clone());
            self.client.send(&self.url, rb).await.map(|_| ())
        })
        .await
    }

    /// Queues `batch` behind anything still pending and sends in order until a retryable
    /// failure. A batch refused for good (4xx: out-of-order or malformed samples) is dropped
    /// and counted, as Prometheus' own remote-write queue does.
    pub async fn write(&mut self, batch: Batch) -> Result<(), HttpError> {
        if !batch.is_empty() {
            self.pending.push_back(batch);
        }
        self.trim();
        while let Some(next) = self.pending.front() {
            match self.send(next).await {
                Ok(()) => {
                    self.stats.samples_sent += next.samples() as u64;
                    self.pending.pop_front();
                }
                Err(e) if e.is_retryable() => {
                    self.stats.failed_requests += 1;
                    return Err(e);
                }
                Err(e) => {
                    self.stats.failed_requests += 1;
                    self.stats.samples_dropped += next.samples() as u64;
                    self.pending.pop_front();
                    tracing::warn!(error = %e, "remote write refused a batch; dropped");
                }
            }
        }
        Ok(())
    }

    fn trim(&mut self) {
        let mut total: usize = self.pending.iter().map(Batch::samples).sum();
        while total > self.max_pending_samples && self.pending.len() > 1 {
            if let Some(old) = self.pending.pop_front() {
                total -= old.samples();
                self.stats.samples_dropped += old.samples() as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_staleness_marker_keeps_its_payload() {
        let mut b = Batch::default();
        b.add("x", &[("a", "1")], 5, 1.0);
        b.add_stale("x", &[("a", "1")], 6);
        let req = decode(&b.encode()).unwrap();
        let bits: Vec<u64> = req.timeseries[0]
            .samples
            .iter()
            .map(|s| s.value.to_bits())
            .collect();
        assert_eq!(bits, [1.0f64.to_bits(), STALE_NAN]);
    }

    #[test]
    fn encodes_sorted_labels_and_ordered_samples() {
        let mut b = Batch::default();
        let scores = [("zscore", 0.5), ("pca", 2.0)];
        let subs = [("cpu", 0.8), ("storage", 0.2), ("bogus", 1.0)];
        for end in [2000, 1000] {
            b.add_window(&WindowPoint {
                instance: "h:1",
                end_ms: end,
                scores: &scores,
                agreement: 1,
                subsystems: &subs,
            });
        }
        b.add("x", &[], 5, f64::NAN);
        let req = decode(&b.encode()).unwrap();
        // 2 scores + agreement + 2 valid subsystems; "bogus" and the NaN are left out.
        assert_eq!(req.timeseries.len(), 5);
        for ts in &req.timeseries {
            let names: Vec<_> = ts.labels.iter().map(|l| l.name.as_str()).collect();
            let mut sorted = names.clone();
            sorted.sort();
            assert_eq!(names, sorted);
            assert_eq!(names[0], "__name__");
            assert_eq!(
                ts.samples.iter().map(|s| s.timestamp).collect::<Vec<_>>(),
                vec![1000, 2000]
            );
        }
        let pca = req
            .timeseries
            .iter()
            .find(|t| t.labels.iter().any(|l| l.value == "pca"))
            .unwrap();
        assert_eq!(pca.samples[0].value, 2.0);
    }

    #[test]
    fn decode_rejects_garbage() {
        assert!(decode(b"\xff\x00garbage").is_err());
        assert!(decode(
            &snap::raw::Encoder::new()
                .compress_vec(b"\xff\xff\xff")
                .unwrap()
        )
        .is_err());
    }
}
