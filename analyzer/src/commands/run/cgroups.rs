//! Which job, asked of Prometheus when an alert is about to go out: each cgroup's usage and
//! pressure (the exporter's `cgroups` collector) before the episode and during it, for
//! [`crate::core::culprit::find`]. Two instant questions per measure, once per alerted
//! subsystem of an episode; a host without the collector answers with no series and its
//! alerts name no cgroup.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::core::culprit::{self, CgroupChange, Culprit, Resource};
use crate::core::episodes::OpenEpisode;
use crate::ingest::promapi::{PromClient, PromError};

/// How far back "before the episode" reaches.
const BEFORE_MS: i64 = 60_000;
/// The shortest span "during the episode" is measured over: a few scrapes at 1 s.
const MIN_DURING_MS: i64 = 3_000;
/// The span asked again when the shortest holds too few samples for a rate (cgroups
/// scraped every few seconds by a second job, docs/cgroups.md).
const SLOW_SCRAPE_DURING_MS: i64 = 15_000;
/// The longest: the evidence of a long episode is its recent part.
const MAX_DURING_MS: i64 = 300_000;
/// How long the questions may take before the alert goes out without them.
pub const TIMEOUT: Duration = Duration::from_secs(2);

/// A PromQL string literal.
fn literal(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The usage and pressure expressions of `resource` for one host, over `range_ms`; `during`
/// asks for the peak of a level (memory) rather than its mean.
fn exprs(resource: Resource, selector: &str, range_ms: i64, during: bool) -> (String, String) {
    let r = format!("[{range_ms}ms]");
    let rate = |m: &str| format!("sum by (cgroup) (rate({m}{{{selector}}}{r}))");
    let pressure = |m: &str| format!("sum by (cgroup) (rate({m}{{{selector},kind=\"some\"}}{r}))");
    match resource {
        Resource::Cpu => (
            rate("reveal_cpu_cgroup_usage_seconds_total"),
            pressure("reveal_cpu_cgroup_pressure_stalled_seconds_total"),
        ),
        Resource::Memory => {
            let f = if during {
                "max_over_time"
            } else {
                "avg_over_time"
            };
            (
                format!("sum by (cgroup) ({f}(reveal_memory_cgroup_usage_bytes{{{selector}}}{r}))"),
                pressure("reveal_memory_cgroup_pressure_stalled_seconds_total"),
            )
        }
        Resource::Storage => (
            format!(
                "{} + {}",
                rate("reveal_storage_cgroup_read_bytes_total"),
                rate("reveal_storage_cgroup_written_bytes_total")
            ),
            pressure("reveal_storage_cgroup_pressure_stalled_seconds_total"),
        ),
    }
}

/// `expr` at `at_ms`: one value per cgroup.
async fn instant(
    client: &PromClient,
    expr: &str,
    at_ms: i64,
) -> Result<BTreeMap<String, f64>, PromError> {
    let m = client.query_range(expr, at_ms, at_ms, 1000).await?;
    Ok(m.series
        .into_iter()
        .filter_map(|s| {
            let cgroup = s.labels.get("cgroup")?.clone();
            let v = s.samples.last()?.1;
            v.is_finite().then_some((cgroup, v))
        })
        .collect())
}

/// Usage and pressure of every cgroup of `host` over `range_ms` ending at `at_ms`.
async fn measure(
    client: &PromClient,
    resource: Resource,
    selector: &str,
    at_ms: i64,
    range_ms: i64,
    during: bool,
) -> Result<(BTreeMap<String, f64>, BTreeMap<String, f64>), PromError> {
    let (usage, pressure) = exprs(resource, selector, range_ms, during);
    Ok((
        instant(client, &usage, at_ms).await?,
        instant(client, &pressure, at_ms).await?,
    ))
}

/// The cgroups behind `subsystem`'s alert of episode `ep` on its host (labelled
/// `host_label`), or `None` when the subsystem has no per-cgroup usage or the host no
/// cgroup series.
pub async fn lookup(
    client: &PromClient,
    host_label: &str,
    ep: &OpenEpisode,
    subsystem: &str,
) -> Result<Option<Culprit>, PromError> {
    let Some(resource) = Resource::of_subsystem(subsystem) else {
        return Ok(None);
    };
    let selector = format!("{host_label}={}", literal(&ep.instance));
    let end = ep.last_flagged_ms;
    let during_ms = (end - ep.start_ms).clamp(MIN_DURING_MS, MAX_DURING_MS);
    let (mut usage_d, mut pressure_d) =
        measure(client, resource, &selector, end, during_ms, true).await?;
    if usage_d.is_empty() && during_ms < SLOW_SCRAPE_DURING_MS {
        (usage_d, pressure_d) = measure(
            client,
            resource,
            &selector,
            end,
            SLOW_SCRAPE_DURING_MS,
            true,
        )
        .await?;
    }
    if usage_d.is_empty() {
        return Ok(None);
    }
    let (usage_b, pressure_b) =
        measure(client, resource, &selector, ep.start_ms, BEFORE_MS, false).await?;
    let changes: Vec<CgroupChange> = usage_d
        .iter()
        .map(|(cgroup, &during)| CgroupChange {
            cgroup: cgroup.clone(),
            // A cgroup created during the episode used nothing before it.
            usage_before: usage_b.get(cgroup).copied().unwrap_or(0.0),
            usage_during: during,
            pressure_before: pressure_b
                .get(cgroup)
                .copied()
                .or(pressure_d.get(cgroup).map(|_| 0.0)),
            pressure_during: pressure_d.get(cgroup).copied(),
        })
        .collect();
    Ok(Some(culprit::find(resource, &changes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_values_are_quoted_as_promql_strings() {
        assert_eq!(literal(r#"a"b\c"#), r#""a\"b\\c""#);
        let (usage, pressure) = exprs(Resource::Cpu, "instance=\"h:1\"", 4000, true);
        assert_eq!(
            usage,
            "sum by (cgroup) (rate(reveal_cpu_cgroup_usage_seconds_total{instance=\"h:1\"}[4000ms]))"
        );
        assert!(pressure.contains("kind=\"some\""), "{pressure}");
        let (mem_d, _) = exprs(Resource::Memory, "x=\"y\"", 4000, true);
        let (mem_b, _) = exprs(Resource::Memory, "x=\"y\"", 4000, false);
        assert!(mem_d.contains("max_over_time") && mem_b.contains("avg_over_time"));
    }
}
