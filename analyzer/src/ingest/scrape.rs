//! The direct-scrape source: `GET /metrics` of each exporter every `interval` (100 ms by
//! default) into memory, for one host without Prometheus.
//!
//! Each scrape is kept as text with the time it started, for the last few windows only (the
//! detectors keep their own baseline of features, not raw samples). A fetch stamps every
//! sample line of the kept scrapes with its scrape time and hands the text to the recording
//! parser ([`super::openmetrics::parse_openmetrics`]), so a live scrape and a recorded file
//! become matrices by the same code: same channel names, kinds and counter handling.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::core::matrix::HostMatrix;
use crate::http::HttpClient;
use crate::ingest::kinds::MetricSet;
use crate::ingest::openmetrics::{parse_openmetrics, parse_timestamp};
use crate::ingest::{Source, SourceError, SourceOptions, TimeRange};

/// A label no exporter sets, so every series belongs to the target's host.
const NO_HOST_LABEL: &str = "__reveal_scrape_target__";

/// Scrapes of one target, oldest first.
#[derive(Debug, Default)]
struct Buffer {
    scrapes: VecDeque<(i64, String)>,
    failures: u64,
    /// Samples dropped for a timestamp of their own outside the scrapes' time ([`stamp`]).
    out_of_window: u64,
}

#[derive(Debug, Clone)]
struct Target {
    url: String,
    host: String,
    buffer: Arc<Mutex<Buffer>>,
}

pub struct ScrapeSource {
    targets: Vec<Target>,
    step_ms: i64,
    metric_set: MetricSet,
}

/// `http://node-7:19190/metrics` → `node-7:19190`, the name Prometheus would give it.
pub fn host_of(url: &str) -> String {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|u| Some(format!("{}:{}", u.host_str()?, u.port_or_known_default()?)))
        .unwrap_or_else(|| url.to_string())
}

/// Appends ` <ts_ms>` to every sample line that has no timestamp, and drops `# EOF` (the
/// text becomes Prometheus text format with integer-millisecond timestamps). A sample that
/// carries a timestamp of its own is kept only when it falls in `window`, the time the
/// scrapes being read were taken: one stamped hours or days away (a stale cached value, a
/// target's clock off) would otherwise stretch this fetch's grid over all that time, up to
/// gigabytes of empty cells, or past the grid's limit, losing the target's data. Prometheus
/// likewise drops samples outside the time it accepts. Returns how many were dropped.
pub fn stamp(text: &str, ts_ms: i64, window: std::ops::Range<i64>, out: &mut String) -> usize {
    let mut dropped = 0;
    for line in text.lines() {
        let l = line.trim_end();
        if l.is_empty() || l == "# EOF" {
            continue;
        }
        // A sample line's value, its own timestamp, and whether more follows.
        let (value, own, more) = if l.starts_with('#') {
            (None, None, None)
        } else {
            let mut f = fields_after_labels(l);
            (f.next(), f.next(), f.next())
        };
        if let (Some(own), None) = (own, more) {
            if parse_timestamp(Some(own), false).is_ok_and(|t| !window.contains(&t)) {
                dropped += 1;
                continue;
            }
        }
        out.push_str(l);
        if value.is_some() && own.is_none() {
            out.push(' ');
            out.push_str(&ts_ms.to_string());
        }
        out.push('\n');
    }
    dropped
}

/// The whitespace-separated fields after the name and label set (value, then timestamp),
/// none when the label set is not closed.
fn fields_after_labels(line: &str) -> impl Iterator<Item = &str> {
    let rest = match line.find('{') {
        Some(open) if line[..open].find(char::is_whitespace).is_none() => {
            // Skip the label block, honouring quotes and escapes inside label values.
            let mut in_quotes = false;
            let mut escaped = false;
            let mut end = None;
            for (i, c) in line[open..].char_indices() {
                match c {
                    _ if escaped => escaped = false,
                    '\\' if in_quotes => escaped = true,
                    '"' => in_quotes = !in_quotes,
                    '}' if !in_quotes => {
                        end = Some(open + i + 1);
                        break;
                    }
                    _ => {}
                }
            }
            match end {
                Some(e) => &line[e..],
                None => "",
            }
        }
        _ => line.split_once(char::is_whitespace).map_or("", |(_, r)| r),
    };
    rest.split_whitespace().take_while(|f| !f.starts_with('#'))
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl ScrapeSource {
    pub fn new(urls: &[String], step_ms: i64, metric_set: MetricSet) -> ScrapeSource {
        let targets = urls
            .iter()
            .map(|u| Target {
                url: u.clone(),
                host: host_of(u),
                buffer: Arc::default(),
            })
            .collect();
        ScrapeSource {
            targets,
            step_ms: step_ms.max(1),
            metric_set,
        }
    }

    /// Starts one scrape loop per target on the current runtime. Scrapes are kept for
    /// `retention`; a failed scrape leaves a gap (and is counted), as in Prometheus.
    pub fn spawn(&self, client: HttpClient, interval: Duration, retention: Duration) {
        for t in self.targets.clone() {
            let client = client.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(interval);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
                loop {
                    tick.tick().await;
                    let started = now_ms();
                    let res = match client.request(reqwest::Method::GET, &t.url) {
                        Ok(rb) => {
                            client
                                .send(&t.url, rb.header("Accept", "text/plain;version=0.0.4"))
                                .await
                        }
                        Err(e) => Err(e),
                    };
                    let mut b = t.buffer.lock().unwrap_or_else(|p| p.into_inner());
                    match res.map(|body| String::from_utf8_lossy(&body).into_owned()) {
                        Ok(text) => b.scrapes.push_back((started, text)),
                        Err(e) => {
                            b.failures += 1;
                            tracing::debug!(target = %t.url, error = %e, "scrape failed");
                        }
                    }
                    let horizon = started - retention.as_millis() as i64;
                    while b.scrapes.front().is_some_and(|(ts, _)| *ts < horizon) {
                        b.scrapes.pop_front();
                    }
                }
            });
        }
    }

    /// Failed scrapes so far, all targets.
    pub fn failures(&self) -> u64 {
        self.targets
            .iter()
            .map(|t| t.buffer.lock().map_or(0, |b| b.failures))
            .sum()
    }

    /// Adds a scrape by hand (tests, and replaying captured text).
    pub fn record(&self, target: usize, ts_ms: i64, text: String) {
        if let Some(t) = self.targets.get(target) {
            t.buffer
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .scrapes
                .push_back((ts_ms, text));
        }
    }
}

impl Source for ScrapeSource {
    fn name(&self) -> &'static str {
        "scrape"
    }

    fn fetch(&mut self, range: Option<TimeRange>) -> Result<Vec<HostMatrix>, SourceError> {
        let mut out = Vec::new();
        for t in &self.targets {
            let mut text = String::new();
            {
                let mut b = t.buffer.lock().unwrap_or_else(|p| p.into_inner());
                let window = match range {
                    Some(r) => r.start_ms..r.end_ms,
                    None => match (b.scrapes.front(), b.scrapes.back()) {
                        (Some((first, _)), Some((last, _))) => *first..*last + 1,
                        _ => 0..0,
                    },
                };
                let mut dropped = 0;
                for (ts, body) in &b.scrapes {
                    if window.contains(ts) {
                        dropped += stamp(body, *ts, window.clone(), &mut text);
                    }
                }
                if dropped > 0 {
                    if b.out_of_window == 0 {
                        tracing::warn!(
                            target = %t.url,
                            "the target exposes samples with timestamps outside the time it was \
                             scraped; they are dropped (later ones are logged at debug level)"
                        );
                    }
                    b.out_of_window += dropped as u64;
                    tracing::debug!(target = %t.url, dropped, total = b.out_of_window, "samples out of the scrape window");
                }
            }
            let opts = SourceOptions {
                step_ms: self.step_ms,
                host_label: NO_HOST_LABEL.to_string(),
                default_host: t.host.clone(),
                metric_set: self.metric_set.clone(),
            };
            match parse_openmetrics(&text, &opts) {
                Ok(hosts) => out.extend(hosts),
                Err(SourceError::Empty) => {}
                // One target serving junk must not hide the others.
                Err(e) => tracing::warn!(target = %t.url, error = %e, "unreadable scrape"),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_sample_lines_only() {
        let text = "# HELP x_total Things.\n# TYPE x_total counter\nx_total{a=\"b c\",d=\"}\"} 5\ny 1 1700000000000\nz 2\n# EOF\n";
        let mut out = String::new();
        assert_eq!(stamp(text, 42, 0..i64::MAX, &mut out), 0);
        assert_eq!(
            out,
            "# HELP x_total Things.\n# TYPE x_total counter\nx_total{a=\"b c\",d=\"}\"} 5 42\ny 1 1700000000000\nz 2 42\n"
        );
    }

    #[test]
    fn scrapes_become_one_host_matrix_with_counter_increases() {
        let mut src = ScrapeSource::new(
            &["http://node-7:19190/metrics".into()],
            100,
            MetricSet::default(),
        );
        for i in 0..5i64 {
            let text = format!(
                "# TYPE reveal_cpu_context_switches_total counter\nreveal_cpu_context_switches_total {}\n# TYPE reveal_cpu_procs_running gauge\nreveal_cpu_procs_running {}\n",
                1000 + 50 * i,
                i
            );
            // Scrapes land a few ms off the 100 ms grid, as real ones do.
            src.record(0, 1_700_000_000_000 + i * 100 + (i % 2) * 7, text);
        }
        let hosts = src.fetch(None).unwrap();
        assert_eq!(hosts.len(), 1);
        let h = &hosts[0];
        assert_eq!(h.host, "node-7:19190");
        assert_eq!(h.n_steps(), 5);
        let cs = h
            .channels
            .iter()
            .position(|c| c.metric == "reveal_cpu_context_switches_total")
            .unwrap();
        assert_eq!(h.row(cs).to_vec()[1..], [50.0, 50.0, 50.0, 50.0]);
        let range = TimeRange {
            start_ms: 1_700_000_000_200,
            end_ms: 1_700_000_000_400,
        };
        assert_eq!(src.fetch(Some(range)).unwrap()[0].n_steps(), 2);
    }

    #[test]
    fn a_sample_stamped_far_from_its_scrape_is_dropped_not_a_days_long_grid() {
        let mut src = ScrapeSource::new(&["http://a:1/metrics".into()], 100, MetricSet::default());
        let t0 = 1_700_000_000_000i64;
        let day_before = t0 - 86_400_000;
        for i in 0..5i64 {
            // A gauge of its own scrape time, and a cached value stamped a day earlier.
            let text =
                format!("reveal_cpu_procs_running {i}\nstale_value{{a=\"}}\"}} 7 {day_before}\n");
            src.record(0, t0 + i * 100, text);
        }
        let mut out = String::new();
        let text = format!("x 1\ny 2 {day_before}\ny 3 {t0}\n");
        assert_eq!(stamp(&text, t0, t0..t0 + 1, &mut out), 1);
        assert_eq!(out, format!("x 1 {t0}\ny 3 {t0}\n"));
        let hosts = src.fetch(None).unwrap();
        assert_eq!(hosts.len(), 1);
        assert_eq!(hosts[0].start_ms, t0);
        assert_eq!(
            hosts[0].n_steps(),
            5,
            "the grid spans the scrapes, not the day before"
        );
        assert!(hosts[0].channels.iter().all(|c| c.metric != "stale_value"));
        assert_eq!(src.targets[0].buffer.lock().unwrap().out_of_window, 5);
    }

    #[test]
    fn junk_from_a_target_costs_only_that_target() {
        let mut src = ScrapeSource::new(
            &["http://a:1/metrics".into(), "http://b:1/metrics".into()],
            100,
            MetricSet::default(),
        );
        src.record(0, 1000, "<html>oops</html>".into());
        src.record(1, 1000, "up 1\n".into());
        let hosts = src.fetch(None).unwrap();
        assert_eq!(
            hosts.iter().map(|h| h.host.as_str()).collect::<Vec<_>>(),
            ["b:1"]
        );
    }

    #[test]
    fn host_names_follow_prometheus() {
        assert_eq!(host_of("http://node-7:19190/metrics"), "node-7:19190");
        assert_eq!(host_of("https://node-7/metrics"), "node-7:443");
        assert_eq!(host_of("not a url"), "not a url");
    }
}
