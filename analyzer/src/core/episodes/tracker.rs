//! Online episodes: consecutive flagged windows of a host merge into one episode, so one
//! incident is one alert, opened once and resolved once (DESIGN "Analyzer", step 6).
//!
//! Windows arrive one stride apart. A window counts when at least `min_agreement` detectors
//! flag it (one detector at its 99th percentile flags about one window in a hundred by design;
//! requiring agreement keeps that out of Alertmanager). An episode opens after `open_after`
//! consecutive counted windows when each of them is *clear* — one of the agreeing detectors at
//! least `clear` times its threshold, or the window critical (all three detectors agree, or
//! two at [`STRONG`] times their thresholds) — and otherwise after `confirm_after`: a marginal deviation
//! must hold longer than the host's ordinary transients (a write-back, a burst of reads or
//! I/O wait lasts a few seconds, and is in at most six or seven windows) before it becomes an
//! alert. The episode extends while windows keep counting, and closes after `close_after`
//! windows in a row that do not.

use std::collections::BTreeMap;

use crate::core::episodes::recurring::{History, Signature};
use crate::core::episodes::OpenEpisode;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrackerParams {
    pub min_agreement: u32,
    pub open_after: u32,
    /// Consecutive counted windows that open an episode when they are not all clear.
    pub confirm_after: u32,
    /// Score / threshold that one detector of a counted window must reach for the window to
    /// be clear.
    pub clear: f64,
    pub close_after: u32,
    /// Window length, to date an episode from the start of its first window.
    pub window_ms: i64,
}

/// What the analysis says about one window of one host.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub instance: String,
    pub end_ms: i64,
    pub agreement: u32,
    /// Names of the detectors that flagged it.
    pub detectors: Vec<String>,
    /// The smallest score / threshold among them ([`strength`]).
    pub strength: f64,
    /// Score / threshold of every detector, flagging or not.
    pub ratios: Vec<f64>,
    /// Share of the window's attribution per subsystem (sums to 1 when flagged).
    pub subsystems: Vec<(String, f64)>,
    /// The top claim, and the evidence behind it.
    pub summary: String,
    pub description: String,
    /// (subsystem, its strongest claim), strongest subsystem first.
    pub claims: Vec<(String, String)>,
    /// (subsystem, remediation hint of its strongest claim), where there is one.
    pub hints: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Opened(OpenEpisode),
    Extended(OpenEpisode),
    /// The episode and the end of its last flagged window.
    Closed(OpenEpisode),
}

#[derive(Debug, Default)]
struct HostState {
    /// Flagged windows not yet part of an episode (fewer than `open_after`).
    pending: Vec<Verdict>,
    open: Option<OpenEpisode>,
    quiet: u32,
    /// A subsystem not yet alerted on that was the heaviest of the open episode's last
    /// flagged windows, and in how many of them in a row.
    joining: Option<(String, u32)>,
    /// Its latest episodes, to recognize one that recurs ([`crate::core::episodes::recurring`]).
    history: History,
}

/// Share of an episode's attribution (over its opening windows) from which a subsystem gets
/// an alert of its own; the heaviest subsystem always does.
pub const ALERT_SHARE: f64 = 0.25;

/// Two agreeing detectors that are each at least this many times above their thresholds
/// are as strong evidence as three.
pub const STRONG: f64 = 3.0;

/// Severity label from agreement and magnitude: one detector is `info`, two `warning`, three
/// `critical`, and so are two that each score at least [`STRONG`] times their threshold.
/// `strength` is the smallest score / threshold among the flagging detectors.
pub fn severity(agreement: u32, strength: f64) -> &'static str {
    match agreement {
        0 | 1 => "info",
        2 if strength.is_nan() || strength < STRONG => "warning",
        _ => "critical",
    }
}

/// Rank of a severity label, for keeping an episode's highest.
pub(crate) fn rank(severity: &str) -> u8 {
    match severity {
        "critical" => 2,
        "warning" => 1,
        _ => 0,
    }
}

/// The smallest score / threshold among the detectors that flagged a window (0 if none).
pub fn strength(scores: &[(impl AsRef<str>, f64)], flagging: &[String]) -> f64 {
    scores
        .iter()
        .filter(|(n, _)| flagging.iter().any(|f| f == n.as_ref()))
        .map(|(_, s)| *s)
        .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.min(s))))
        .unwrap_or(0.0)
}

#[derive(Debug)]
pub struct Tracker {
    params: TrackerParams,
    hosts: BTreeMap<String, HostState>,
}

impl Tracker {
    pub fn new(params: TrackerParams) -> Tracker {
        Tracker {
            params,
            hosts: BTreeMap::new(),
        }
    }

    /// Re-opens episodes saved in a checkpoint, so their next windows extend them.
    pub fn restore(&mut self, episodes: &[OpenEpisode]) {
        for e in episodes {
            let h = self.hosts.entry(e.instance.clone()).or_default();
            h.history
                .record(&e.id, e.start_ms, e.last_flagged_ms, signature(e));
            h.open = Some(e.clone());
        }
    }

    /// Episodes open now.
    pub fn open(&self) -> Vec<OpenEpisode> {
        self.hosts.values().filter_map(|h| h.open.clone()).collect()
    }

    /// Ends the open episode of a host that stopped sending series (its last flagged window
    /// stays its end) and drops flagged windows still waiting to open one.
    pub fn end(&mut self, instance: &str) -> Option<Event> {
        let h = self.hosts.get_mut(instance)?;
        h.pending.clear();
        h.quiet = 0;
        h.joining = None;
        h.open.take().map(Event::Closed)
    }

    /// Forgets a host entirely (after [`Tracker::end`]).
    pub fn forget(&mut self, instance: &str) {
        self.hosts.remove(instance);
    }

    /// Feeds one window (windows of a host in time order) and says what changed.
    pub fn observe(&mut self, v: Verdict) -> Option<Event> {
        let p = self.params;
        let flagged = v.agreement >= p.min_agreement.max(1);
        let h = self.hosts.entry(v.instance.clone()).or_default();
        if let Some(ep) = h.open.as_mut() {
            if v.end_ms <= ep.last_flagged_ms {
                return None; // already seen (a restart re-analyzing an overlap)
            }
            if flagged {
                h.quiet = 0;
                ep.last_flagged_ms = v.end_ms;
                let sev = severity(v.agreement, v.strength);
                if v.agreement >= ep.peak_agreement || rank(sev) > rank(&ep.severity) {
                    ep.peak_agreement = ep.peak_agreement.max(v.agreement);
                    if rank(sev) >= rank(&ep.severity) {
                        ep.severity = sev.to_string();
                    }
                    ep.summary = v.summary;
                    ep.description = v.description;
                    ep.detectors = v.detectors.join(",");
                    for (sub, claim) in &v.claims {
                        if ep.subsystems.contains(sub) {
                            set_claim(ep, &v.hints, sub, claim);
                        }
                    }
                }
                // A subsystem the fault reaches later (a write burst first seen as I/O wait)
                // joins the episode's alerts once it is the heaviest for as many windows in a
                // row as an episode needs to open.
                let heaviest = v
                    .subsystems
                    .iter()
                    .filter(|(_, s)| s.is_finite() && *s > 0.0)
                    .max_by(|a, b| a.1.total_cmp(&b.1))
                    .map(|(s, _)| s.clone());
                h.joining = match (heaviest, h.joining.take()) {
                    (Some(s), _) if ep.subsystems.contains(&s) => None,
                    (Some(s), Some((j, n))) if s == j => Some((j, n + 1)),
                    (Some(s), _) => Some((s, 1)),
                    (None, _) => None,
                };
                if let Some((s, n)) = &h.joining {
                    if *n >= p.open_after.max(1) {
                        if let Some((_, claim)) = v.claims.iter().find(|(c, _)| c == s) {
                            set_claim(ep, &v.hints, s, claim);
                        }
                        ep.subsystems.push(s.clone());
                        h.joining = None;
                    }
                }
                h.history
                    .record(&ep.id, ep.start_ms, ep.last_flagged_ms, signature(ep));
                if ep
                    .recurring
                    .as_ref()
                    .is_some_and(|r| r.outlasted(ep.last_flagged_ms - ep.start_ms))
                {
                    ep.recurring = None;
                }
                return Some(Event::Extended(ep.clone()));
            }
            h.quiet += 1;
            h.joining = None;
            if h.quiet >= p.close_after.max(1) {
                h.quiet = 0;
                return h.open.take().map(Event::Closed);
            }
            return None;
        }
        if !flagged {
            h.pending.clear();
            return None;
        }
        h.pending.push(v);
        let n = h.pending.len() as u32;
        let open_after = p.open_after.max(1);
        // Clear: one detector far above its bar, or a critical window (every detector agrees,
        // or two do at STRONG): such evidence does not wait out the confirmation.
        let clear = |w: &Verdict| {
            w.ratios.iter().any(|r| *r >= p.clear)
                || rank(severity(w.agreement, w.strength)) == rank("critical")
        };
        let clear_run = n >= open_after && h.pending[(n - open_after) as usize..].iter().all(clear);
        if !clear_run && n < p.confirm_after.max(open_after) {
            return None;
        }
        let pending = std::mem::take(&mut h.pending);
        let mut ep = open_episode(&pending, p.window_ms);
        ep.recurring = h.history.recognize(ep.start_ms, signature(&ep));
        h.history
            .record(&ep.id, ep.start_ms, ep.last_flagged_ms, signature(&ep));
        h.open = Some(ep.clone());
        Some(Event::Opened(ep))
    }
}

fn open_episode(windows: &[Verdict], window_ms: i64) -> OpenEpisode {
    let first = &windows[0];
    let last = &windows[windows.len() - 1];
    // The strongest window speaks for the episode; the latest among equals.
    let best = windows
        .iter()
        .rev()
        .max_by_key(|w| w.agreement)
        .unwrap_or(last);
    let mut weight: BTreeMap<&str, f64> = BTreeMap::new();
    for w in windows {
        for (s, share) in &w.subsystems {
            if share.is_finite() {
                *weight.entry(s.as_str()).or_default() += share;
            }
        }
    }
    // Every subsystem with a substantial share gets its own alert (a write burst is a storage
    // finding and, through I/O wait, a CPU one); the heaviest comes first.
    let total: f64 = weight.values().sum();
    let mut ranked: Vec<(&str, f64)> = weight.into_iter().filter(|(_, w)| *w > 0.0).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    let subsystems: Vec<String> = ranked
        .iter()
        .enumerate()
        .filter(|(i, (_, w))| *i == 0 || *w >= ALERT_SHARE * total)
        .map(|(_, (s, _))| s.to_string())
        .collect();
    let subsystem = subsystems
        .first()
        .cloned()
        .unwrap_or_else(|| "other".to_string());
    let mut claims = BTreeMap::new();
    let mut hints = BTreeMap::new();
    for w in windows.iter().rev() {
        for (sub, claim) in &w.claims {
            if subsystems.contains(sub) && !claims.contains_key(sub) {
                claims.insert(sub.clone(), claim.clone());
                if let Some((_, h)) = w.hints.iter().find(|(s, _)| s == sub) {
                    hints.insert(sub.clone(), h.clone());
                }
            }
        }
    }
    let start_ms = first.end_ms - window_ms;
    OpenEpisode {
        id: format!("{}@{start_ms}", first.instance),
        instance: first.instance.clone(),
        start_ms,
        last_flagged_ms: last.end_ms,
        peak_agreement: best.agreement,
        subsystem,
        subsystems,
        claims,
        hints,
        severity: windows
            .iter()
            .map(|w| severity(w.agreement, w.strength))
            .max_by_key(|s| rank(s))
            .unwrap_or("info")
            .to_string(),
        summary: best.summary.clone(),
        description: best.description.clone(),
        detectors: best.detectors.join(","),
        recurring: None,
    }
}

/// An episode's signature: its subsystems, and the channels its claims lead with (a claim is
/// `channel (subsystem): what moved`).
fn signature(ep: &OpenEpisode) -> Signature<'_> {
    fn channel(claim: &str) -> &str {
        claim.split(" (").next().unwrap_or("")
    }
    Signature {
        heaviest: &ep.subsystem,
        alerted: &ep.subsystems,
        lead: ep.claims.get(&ep.subsystem).map_or("", |c| channel(c)),
        channels: ep.claims.values().map(|c| channel(c)).collect(),
    }
}

/// The episode's claim for `sub` becomes `claim`, and its hint the hint that goes with it
/// (none when that window's evidence has none: a hint always speaks for the claim beside it).
fn set_claim(ep: &mut OpenEpisode, hints: &[(String, String)], sub: &str, claim: &str) {
    ep.claims.insert(sub.to_string(), claim.to_string());
    match hints.iter().find(|(s, _)| s == sub) {
        Some((_, h)) => ep.hints.insert(sub.to_string(), h.clone()),
        None => ep.hints.remove(sub),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: TrackerParams = TrackerParams {
        min_agreement: 2,
        open_after: 2,
        confirm_after: 2,
        clear: 1.0,
        close_after: 3,
        window_ms: 3000,
    };

    fn v(end_s: i64, agreement: u32, sub: &str) -> Verdict {
        Verdict {
            instance: "h".into(),
            end_ms: end_s * 1000,
            agreement,
            detectors: ["zscore", "pca", "iforest"][..agreement as usize]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            strength: 1.5,
            ratios: (0..3)
                .map(|i| if i < agreement { 1.5 } else { 0.5 })
                .collect(),
            subsystems: vec![(sub.into(), 1.0)],
            summary: format!("claim {end_s}"),
            description: String::new(),
            claims: vec![(sub.into(), format!("{sub} ({sub}): claim {end_s}"))],
            hints: vec![(sub.into(), format!("{sub} hint {end_s}"))],
        }
    }

    fn kinds(t: &mut Tracker, vs: Vec<Verdict>) -> Vec<&'static str> {
        vs.into_iter()
            .map(|x| match t.observe(x) {
                None => "-",
                Some(Event::Opened(_)) => "open",
                Some(Event::Extended(_)) => "ext",
                Some(Event::Closed(_)) => "close",
            })
            .collect()
    }

    #[test]
    fn lone_flags_do_not_open_and_persistent_ones_do() {
        let mut t = Tracker::new(P);
        let seq = vec![
            v(1, 1, "cpu"),
            v(2, 2, "cpu"),
            v(3, 0, "cpu"),
            v(4, 3, "cpu"),
            v(5, 2, "cpu"),
            v(6, 2, "cpu"),
        ];
        assert_eq!(kinds(&mut t, seq), ["-", "-", "-", "-", "open", "ext"]);
        let ep = &t.open()[0];
        assert_eq!(ep.start_ms, 1000, "dated from the first window's start");
        assert_eq!(ep.peak_agreement, 3);
        assert_eq!(ep.severity, "critical");
        assert_eq!(ep.id, "h@1000");
    }

    #[test]
    fn a_clear_deviation_opens_soon_and_a_marginal_one_must_hold() {
        let p = TrackerParams {
            open_after: 4,
            confirm_after: 8,
            clear: STRONG,
            ..P
        };
        // Two detectors just over their bars, the third below.
        let marginal = |t: i64| Verdict {
            ratios: vec![1.2, 1.1, 0.5],
            ..v(t, 2, "storage")
        };
        // One at least three times its bar.
        let clear = |t: i64| Verdict {
            ratios: vec![1.1, 3.2, 0.4],
            ..v(t, 2, "cpu")
        };
        // A transient: seven marginal windows, then quiet. No alert.
        let mut t = Tracker::new(p);
        let mut seq: Vec<Verdict> = (1..=7).map(marginal).collect();
        seq.push(v(8, 0, "storage"));
        assert!(kinds(&mut t, seq).iter().all(|k| *k == "-"));
        // A marginal deviation that holds opens at its eighth window, dated from its first.
        let mut t = Tracker::new(p);
        let k = kinds(&mut t, (1..=9).map(marginal).collect());
        assert_eq!(k[..7], ["-"; 7]);
        assert_eq!(k[7..], ["open", "ext"]);
        assert_eq!(t.open()[0].start_ms, -2000);
        // A clear one opens at its fourth.
        let mut t = Tracker::new(p);
        let k = kinds(&mut t, (1..=4).map(clear).collect());
        assert_eq!(k, ["-", "-", "-", "open"]);
        // Clear windows count toward the longer wait too, and a clear run of four that
        // follows marginal windows opens at once.
        let mut t = Tracker::new(p);
        let seq = vec![
            marginal(1),
            clear(2),
            clear(3),
            clear(4),
            marginal(5),
            clear(6),
        ];
        assert_eq!(kinds(&mut t, seq), ["-"; 6]);
        let mut t = Tracker::new(p);
        let seq = vec![
            marginal(1),
            marginal(2),
            clear(3),
            clear(4),
            clear(5),
            clear(6),
        ];
        assert_eq!(kinds(&mut t, seq), ["-", "-", "-", "-", "-", "open"]);
        // Every detector agreeing is a critical window, as clear as one detector far above
        // its bar: it opens at the fourth too. Two just over their bars still wait.
        let mut t = Tracker::new(p);
        let three = |t: i64| Verdict {
            ratios: vec![1.3, 1.05, 1.2],
            strength: 1.05,
            ..v(t, 3, "cpu")
        };
        assert_eq!(
            kinds(&mut t, (1..=5).map(three).collect()),
            ["-", "-", "-", "open", "ext"]
        );
        let mut t = Tracker::new(p);
        let two = |t: i64| Verdict {
            ratios: vec![1.3, 1.05, 0.7],
            strength: 1.05,
            ..v(t, 2, "cpu")
        };
        assert_eq!(
            kinds(&mut t, (1..=8).map(two).collect())[3..],
            ["-", "-", "-", "-", "open"]
        );
    }

    #[test]
    fn severity_grows_with_agreement_and_magnitude() {
        assert_eq!(severity(1, 50.0), "info");
        assert_eq!(severity(2, 1.5), "warning");
        assert_eq!(severity(2, STRONG), "critical");
        assert_eq!(severity(3, 1.1), "critical");
        assert_eq!(severity(2, f64::NAN), "warning");
        let scores = [("zscore", 4.0), ("pca", 3.2), ("iforest", 0.8)];
        let flagging = ["zscore".to_string(), "pca".to_string()];
        assert_eq!(strength(&scores, &flagging), 3.2);
        assert_eq!(strength(&scores, &[]), 0.0);
        // An episode keeps its highest severity: two strong detectors raise it.
        let mut t = Tracker::new(P);
        let mut strong = v(3, 2, "cpu");
        strong.strength = 5.0;
        kinds(
            &mut t,
            vec![v(1, 2, "cpu"), v(2, 2, "cpu"), strong, v(4, 2, "cpu")],
        );
        assert_eq!(t.open()[0].severity, "critical");
    }

    #[test]
    fn closes_after_quiet_windows_with_the_last_flagged_end() {
        let mut t = Tracker::new(P);
        let seq = vec![
            v(1, 2, "storage"),
            v(2, 2, "storage"),
            v(3, 0, "cpu"),
            v(4, 2, "cpu"),
            v(5, 0, ""),
            v(6, 1, ""),
            v(7, 0, ""),
        ];
        let got: Vec<_> = seq.into_iter().filter_map(|x| t.observe(x)).collect();
        match got.last() {
            Some(Event::Closed(ep)) => {
                assert_eq!(ep.last_flagged_ms, 4000);
                assert_eq!(ep.subsystem, "storage", "the subsystem is fixed at open");
            }
            other => panic!("{other:?}"),
        }
        assert!(t.open().is_empty());
    }

    #[test]
    fn restored_episodes_extend_instead_of_reopening() {
        let mut t = Tracker::new(P);
        let _ = kinds(&mut t, vec![v(1, 2, "cpu"), v(2, 2, "cpu")]);
        let saved = t.open();
        let mut t2 = Tracker::new(P);
        t2.restore(&saved);
        // The overlap already analyzed before the restart changes nothing.
        assert_eq!(
            kinds(&mut t2, vec![v(2, 2, "cpu"), v(3, 2, "cpu")]),
            ["-", "ext"]
        );
        assert_eq!(t2.open()[0].id, saved[0].id);
    }

    #[test]
    fn subsystem_is_the_heaviest_over_the_opening_windows() {
        let mut t = Tracker::new(P);
        let mut a = v(1, 2, "cpu");
        a.subsystems = vec![("cpu".into(), 0.4), ("storage".into(), 0.6)];
        let mut b = v(2, 2, "cpu");
        b.subsystems = vec![("cpu".into(), 0.1), ("storage".into(), 0.9)];
        t.observe(a);
        match t.observe(b) {
            Some(Event::Opened(ep)) => {
                assert_eq!(ep.subsystem, "storage");
                // cpu holds 0.5 of 2.0 (25%): it is alerted on too, storage first.
                assert_eq!(ep.subsystems, ["storage", "cpu"]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_subsystem_reached_later_joins_the_alerts() {
        let mut t = Tracker::new(P);
        let _ = kinds(&mut t, vec![v(1, 2, "cpu"), v(2, 2, "cpu")]);
        // One window where storage is heaviest is not enough, and a cpu one in between resets
        // the count.
        let _ = kinds(&mut t, vec![v(3, 2, "storage"), v(4, 2, "cpu")]);
        assert_eq!(t.open()[0].subsystems, ["cpu"]);
        match kinds(&mut t, vec![v(5, 2, "storage"), v(6, 2, "storage")])[..] {
            ["ext", "ext"] => {}
            ref other => panic!("{other:?}"),
        }
        let ep = &t.open()[0];
        assert_eq!(
            ep.subsystem, "cpu",
            "the primary subsystem is fixed at open"
        );
        assert_eq!(ep.subsystems, ["cpu", "storage"]);
        // The joining subsystem's claim and its hint come from the same window.
        assert_eq!(ep.claims["storage"], "storage (storage): claim 6");
        assert_eq!(ep.hints["storage"], "storage hint 6");
    }

    #[test]
    fn an_episode_on_a_rhythm_is_recurring_until_it_outlasts_the_earlier_ones() {
        let mut t = Tracker::new(P);
        // A 10 s event every 5 minutes: windows flagged for 10 s, then quiet.
        let occurrence = |t: &mut Tracker, at_s: i64, len_s: i64, sub: &str| -> Vec<Event> {
            (at_s..at_s + len_s + 3)
                .filter_map(|s| t.observe(v(s, if s < at_s + len_s { 2 } else { 0 }, sub)))
                .collect()
        };
        let opened = |evs: &[Event]| match &evs[0] {
            Event::Opened(ep) => ep.clone(),
            other => panic!("{other:?}"),
        };
        assert!(opened(&occurrence(&mut t, 600, 10, "storage"))
            .recurring
            .is_none());
        assert!(opened(&occurrence(&mut t, 900, 10, "storage"))
            .recurring
            .is_none());
        // A cpu episode in between is another event.
        assert!(opened(&occurrence(&mut t, 1000, 10, "cpu"))
            .recurring
            .is_none());
        let third = occurrence(&mut t, 1200, 10, "storage");
        let r = opened(&third).recurring.expect("the third on the rhythm");
        assert_eq!((r.every_ms, r.seen), (300_000, 3));
        // Each from its first window's start (3 s before the first flagged end) to its last.
        assert_eq!(r.longest_ms, 12_000);
        assert_eq!(r.earlier, [(897_000, 909_000), (597_000, 609_000)]);
        assert!(matches!(third.last(), Some(Event::Closed(ep)) if ep.recurring.is_some()));
        // The fourth goes on for a minute: past twice the longest and 30 s (42 s), it is not
        // the routine any more.
        let fourth = occurrence(&mut t, 1500, 60, "storage");
        assert!(opened(&fourth).recurring.is_some());
        let last_recurring = fourth
            .iter()
            .filter_map(|e| match e {
                Event::Extended(ep) if ep.recurring.is_some() => Some(ep.last_flagged_ms),
                _ => None,
            })
            .max();
        assert_eq!(last_recurring, Some(1_497_000 + 42_000));
        assert!(matches!(fourth.last(), Some(Event::Closed(ep)) if ep.recurring.is_none()));
    }

    #[test]
    fn a_hint_always_speaks_for_the_claim_beside_it() {
        let mut t = Tracker::new(P);
        let _ = kinds(&mut t, vec![v(1, 2, "cpu"), v(2, 2, "cpu")]);
        assert_eq!(t.open()[0].hints["cpu"], "cpu hint 2");
        // A stronger window whose evidence has no hint: its claim replaces the old one, and the
        // old claim's hint goes with it.
        let mut w = v(3, 3, "cpu");
        w.hints.clear();
        let _ = t.observe(w);
        let ep = &t.open()[0];
        assert_eq!(ep.claims["cpu"], "cpu (cpu): claim 3");
        assert!(ep.hints.is_empty(), "{:?}", ep.hints);
    }
}
