//! From episodes to Alertmanager alerts: one alert per alerted subsystem of an episode,
//! keyed `episode-id/subsystem`, so restarts and re-sends address the same alert.

use std::collections::BTreeMap;
use std::time::SystemTime;

use super::at;
use crate::core::culprit::Culprit;
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

/// What the cgroups said of each alert, by alert key (`None`: nothing to say).
pub(super) type Culprits = BTreeMap<String, Option<Culprit>>;

/// The devices each alert's evidence points at, by alert key ([`super::drilldown`]): the
/// channel asked and the devices in words (`None`: nothing stands apart, or nothing to ask).
pub(super) type Named = BTreeMap<String, Option<(String, String)>>;

/// The claim of `subsystem` with the devices it points at, where there are.
fn claim_with_devices(ep: &OpenEpisode, subsystem: &str, named: &Named) -> String {
    let claim = ep
        .claims
        .get(subsystem)
        .cloned()
        .unwrap_or_else(|| ep.summary.clone());
    match named.get(&alert_key(ep, subsystem)) {
        // The claim may have moved to another channel since the question: the devices then
        // say whose they are.
        Some(Some((channel, devices))) => {
            let own = claim
                .strip_prefix(channel.as_str())
                .is_some_and(|rest| rest.starts_with(['{', ' ', ':']));
            if own {
                format!("{claim} — by device: {devices}")
            } else {
                format!("{claim} — by device: {channel}: {devices}")
            }
        }
        _ => claim,
    }
}

/// One alert per alerted subsystem of the episode, naming the devices (`named`) and the
/// cgroup (`culprits`) behind it where there are.
pub(super) fn upsert_alerts(
    tx: &mut AlertSender,
    ep: &OpenEpisode,
    now: SystemTime,
    culprits: &Culprits,
    named: &Named,
) {
    for sub in alerted(ep) {
        let key = alert_key(ep, sub);
        let culprit = culprits.get(&key).and_then(Option::as_ref);
        let claim = claim_with_devices(ep, sub, named);
        tx.upsert(&key, finding(ep, sub, claim, culprit), now);
    }
}

/// The episode as its report records it: each alerted subsystem's claim followed by the
/// devices it points at and what the cgroups said.
pub(super) fn with_cgroups(ep: &OpenEpisode, culprits: &Culprits, named: &Named) -> OpenEpisode {
    let mut ep = ep.clone();
    for sub in alerted(&ep)
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>()
    {
        let mut claim = claim_with_devices(&ep, &sub, named);
        if let Some(Some(c)) = culprits.get(&alert_key(&ep, &sub)) {
            if !c.is_empty() {
                claim = format!("{claim} — {}", c.sentence());
            }
        }
        if ep.claims.contains_key(&sub) || claim != ep.summary {
            ep.claims.insert(sub, claim);
        }
    }
    ep
}

fn finding(ep: &OpenEpisode, subsystem: &str, claim: String, culprit: Option<&Culprit>) -> Finding {
    let culprit = culprit.filter(|c| !c.is_empty());
    let cgroups = culprit.map(Culprit::sentence);
    let recurrence = ep.recurring.as_ref().map(|r| r.sentence());
    let mut summary = claim;
    for said in [&cgroups, &recurrence].into_iter().flatten() {
        summary = format!("{summary} — {said}");
    }
    Finding {
        alertname: "RevealAnomaly",
        instance: ep.instance.clone(),
        subsystem: subsystem.to_string(),
        // A recurring episode keeps its severity: it is labelled and told as recurring, and
        // Alertmanager's routes decide. A rhythm is found by timing alone, and on a noisy host
        // a real fault can fall on one by chance (live run 41: two of six faults did).
        severity: match ep.severity.as_str() {
            "critical" => "critical",
            "warning" => "warning",
            _ => "info",
        },
        summary,
        description: ep.description.clone(),
        detectors: ep.detectors.clone(),
        hint: ep.hints.get(subsystem).cloned(),
        cgroup: culprit.and_then(Culprit::cause_cgroup).map(str::to_string),
        cgroups,
        device: None,
        recurrence,
        start: at(ep.start_ms),
        last_window_end: at(ep.last_flagged_ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn episode(claim: &str) -> OpenEpisode {
        OpenEpisode {
            id: "h@1".into(),
            instance: "h".into(),
            start_ms: 0,
            last_flagged_ms: 3000,
            peak_agreement: 3,
            subsystem: "cpu".into(),
            subsystems: vec!["cpu".into()],
            claims: [("cpu".to_string(), claim.to_string())].into(),
            hints: BTreeMap::new(),
            severity: "critical".into(),
            summary: claim.into(),
            description: claim.into(),
            detectors: "zscore, pca".into(),
            recurring: None,
        }
    }

    #[test]
    fn a_recurring_episode_keeps_its_severity_and_says_how_often() {
        let mut ep = episode("reveal_memory_dirty_bytes (memory): mean higher");
        let f = finding(&ep, "cpu", ep.summary.clone(), None);
        assert_eq!((f.severity, f.recurrence.as_deref()), ("critical", None));
        assert!(!f.labels().contains_key("recurring"));
        ep.recurring = Some(crate::core::episodes::recurring::Recurrence {
            every_ms: 1_800_000,
            seen: 4,
            longest_ms: 20_000,
            earlier: vec![],
        });
        let f = finding(&ep, "cpu", ep.summary.clone(), None);
        assert_eq!(f.severity, "critical");
        assert_eq!(f.labels()["recurring"], "true");
        assert_eq!(
            f.summary,
            "reveal_memory_dirty_bytes (memory): mean higher — recurring about every 30 min, \
             4th time"
        );
    }

    #[test]
    fn devices_follow_the_claim_and_say_whose_they_are_when_it_moved() {
        let irq = "reveal_cpu_interrupts_rate_busiest_cpu{job=\"reveal\"} (cpu): maximum higher";
        let named: Named = [(
            "h@1/cpu".to_string(),
            Some((
                "reveal_cpu_interrupts_rate_busiest_cpu".to_string(),
                "cpu 3 at 900/s (10/s before) of 4 CPUs".to_string(),
            )),
        )]
        .into();
        assert_eq!(
            claim_with_devices(&episode(irq), "cpu", &named),
            format!("{irq} — by device: cpu 3 at 900/s (10/s before) of 4 CPUs")
        );
        // A later, stronger window's claim is another channel (a prefix of the name is not it).
        let total = "reveal_cpu_interrupts_rate{job=\"reveal\"} (cpu): standard deviation higher";
        assert_eq!(
            claim_with_devices(&episode(total), "cpu", &named),
            format!(
                "{total} — by device: reveal_cpu_interrupts_rate_busiest_cpu: cpu 3 at 900/s \
                 (10/s before) of 4 CPUs"
            )
        );
        assert_eq!(claim_with_devices(&episode(irq), "cpu", &Named::new()), irq);
    }
}
