//! Which devices, asked of Prometheus when an alert is about to go out
//! ([`crate::core::drilldown`]): the first channel of the alert's evidence that the metric
//! set reads as `AGG without (LABEL) (INNER)` is asked again device by device — the extreme
//! devices, their median and count, three instant questions at the episode's last flagged
//! window — and the devices that stand apart are named in the alert. Once per alert; a
//! question that fails names nothing.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::core::drilldown::{channels_in, standouts, Answers, PerDevice, Standouts};
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

/// The devices behind `subsystem`'s alert of `ep`, where its evidence is a channel the
/// metric set aggregates over devices and some of them stand apart.
pub async fn lookup(
    client: &PromClient,
    host_label: &str,
    metrics: &[MetricSpec],
    ep: &OpenEpisode,
    subsystem: &str,
) -> Result<Option<Standouts>, PromError> {
    let claim = ep.claims.get(subsystem).unwrap_or(&ep.summary);
    let text = format!("{claim}; {}", ep.description);
    for (name, keep, rose) in channels_in(&text, subsystem) {
        let Some((spec, p)) = metrics.iter().find_map(|m| {
            (m.channel_name() == name)
                .then(|| PerDevice::parse(&m.expr).map(|p| (m, p)))
                .flatten()
        }) else {
            continue;
        };
        let up = p.looks_up(rose);
        let keys: Vec<&str> = keep.iter().map(|(k, _)| k.as_str()).collect();
        let [extreme, median, count] = p.queries(host_label, &keys, up);
        let at = ep.last_flagged_ms;
        let host = ep.instance.as_str();
        let (extreme, median, count) = tokio::try_join!(
            instant(client, &extreme, at, host_label, host, &keep),
            instant(client, &median, at, host_label, host, &keep),
            instant(client, &count, at, host_label, host, &keep),
        )?;
        let answers = Answers {
            extremes: extreme
                .into_iter()
                .filter_map(|(labels, v)| Some((labels.get(&p.label)?.clone(), v)))
                .collect(),
            median: median.first().map_or(f64::NAN, |m| m.1),
            count: count.first().map_or(0, |c| c.1 as usize),
        };
        // The metric the inner expression reads gives the unit.
        let inner = MetricSpec {
            expr: p.inner.clone(),
            name: None,
            ..spec.clone()
        };
        if let Some(s) = standouts(&p, up, answers, &inner.channel_name()) {
            return Ok(Some(s));
        }
    }
    Ok(None)
}
