//! Which devices, asked of Prometheus when an alert is about to go out
//! ([`crate::core::drilldown`]): the first channel of the alert's evidence that the metric
//! set reads as `AGG without (LABEL) (INNER)` is asked again device by device — the devices
//! that moved most from the minute before the episode to the episode, their two means and
//! the count, four instant questions at the episode's last flagged window — and the devices
//! that moved while their siblings did not are named in the alert. Once per alert; a
//! question that fails names nothing.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::core::drilldown::{channels_in, standouts, Answers, PerDevice};
use crate::core::episodes::OpenEpisode;
use crate::ingest::kinds::MetricSpec;
use crate::ingest::promapi::{PromClient, PromError, Series};

/// How long the questions may take before the alert goes out without them.
pub const TIMEOUT: Duration = Duration::from_secs(2);

/// Whether `s` is of `host` and carries every label of the channel (`keep`).
fn matches(s: &Series, host_label: &str, host: &str, keep: &[(String, String)]) -> bool {
    s.labels.get(host_label).map(String::as_str) == Some(host)
        && keep
            .iter()
            .all(|(k, v)| s.labels.get(k).map(String::as_str) == Some(v))
}

/// `expr` at `at_ms`: the matching series, each with its last value.
async fn instant(
    client: &PromClient,
    expr: &str,
    at_ms: i64,
    host_label: &str,
    host: &str,
    keep: &[(String, String)],
) -> Result<Vec<(BTreeMap<String, String>, f64)>, PromError> {
    let m = client.query_range(expr, at_ms, at_ms, 1000).await?;
    Ok(m.series
        .into_iter()
        .filter(|s| matches(s, host_label, host, keep))
        .filter_map(|s| Some((s.labels, s.samples.last()?.1)))
        .collect())
}

/// What [`lookup`] found: the channel and the devices behind the alert in words, and what
/// each channel asked answered (for the log when nobody is named).
#[derive(Debug, Default)]
pub struct Found {
    pub named: Option<(String, String)>,
    /// `channel: N devices answered, the largest change X` for each channel asked.
    pub asked: Vec<String>,
}

/// The channel asked and the devices behind `subsystem`'s alert of `ep`, in words, where
/// its evidence is a channel the metric set aggregates over devices and some of them moved
/// alone. The claim's own channel is asked first, then the episode's other channels.
pub async fn lookup(
    client: &PromClient,
    host_label: &str,
    metrics: &[MetricSpec],
    ep: &OpenEpisode,
    subsystem: &str,
) -> Result<Found, PromError> {
    let mut found = Found::default();
    let claim = ep.claims.get(subsystem).unwrap_or(&ep.summary);
    let text = format!("{claim}; {}", ep.description);
    let mut asked = std::collections::BTreeSet::new();
    for (name, keep, rose) in channels_in(&text, subsystem) {
        let Some((spec, p)) = metrics.iter().find_map(|m| {
            (m.channel_name() == name)
                .then(|| PerDevice::parse(&m.expr).map(|p| (m, p)))
                .flatten()
        }) else {
            continue;
        };
        let up = p.looks_up(rose);
        if !asked.insert((name, keep.clone(), up)) {
            continue;
        }
        let keys: Vec<&str> = keep.iter().map(|(k, _)| k.as_str()).collect();
        let at = ep.last_flagged_ms;
        let [during, before, count, _] =
            p.queries(host_label, &keys, up, at - ep.start_ms, at - ep.start_ms);
        let host = ep.instance.as_str();
        let (during, before, count) = tokio::try_join!(
            instant(client, &during, at, host_label, host, &keep),
            instant(client, &before, at, host_label, host, &keep),
            instant(client, &count, at, host_label, host, &keep),
        )?;
        let before: BTreeMap<String, f64> = before
            .into_iter()
            .filter_map(|(labels, v)| Some((labels.get(&p.label)?.clone(), v)))
            .collect();
        let largest = during
            .iter()
            .filter_map(|(labels, v)| Some(v - before.get(labels.get(&p.label)?)?))
            .map(|c| if up { c } else { -c })
            .fold(f64::NAN, f64::max);
        found.asked.push(format!(
            "{name}: {} devices answered, the largest change {largest:.4}",
            during.len()
        ));
        let answers = Answers {
            moved: during
                .into_iter()
                .filter_map(|(labels, v)| {
                    let d = labels.get(&p.label)?;
                    Some((d.clone(), v, *before.get(d)?))
                })
                .collect(),
            count: count.first().map_or(0, |c| c.1 as usize),
        };
        // The metric the inner expression reads gives the unit.
        let inner = MetricSpec {
            expr: p.inner.clone(),
            name: None,
            ..spec.clone()
        };
        if let Some(s) = standouts(&p, up, answers, &inner.channel_name()) {
            found.named = Some((name.to_string(), s.sentence()));
            return Ok(found);
        }
    }
    Ok(found)
}
