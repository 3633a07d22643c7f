//! Recurring events: an episode that comes back at a steady interval is the host's routine
//! (a training job's checkpoint every 30 minutes, a cron job), not a new fault each time.
//!
//! Each host keeps the start, end and subsystems of its latest episodes. When an episode
//! opens, its start is compared with the earlier starts of the *same event* — each one's
//! heaviest subsystem among the other's alerted ones (a checkpoint is a storage alert with
//! memory beside it one time, a memory alert with storage beside it the next), and each one's
//! leading channel among the other's claimed ones (`Signature::same`) — and when
//! it and at least [`RECOGNIZE_AFTER`] of them lie on one rhythm — every gap between
//! consecutive ones the same period, within a twentieth of it (at least [`MIN_TOLERANCE_MS`])
//! — the episode is *recurring*. An episode of the same event off the rhythm in between is
//! passed over; a missed beat ends the rhythm (bridging missed beats let three unrelated
//! episodes fit some period too easily: 5, 24 and 52 minutes fit 9.3 with skipped beats). The
//! period is at least [`MIN_EVERY_MS`]: a fault that comes and goes
//! every few seconds is one flapping fault, not a routine.
//!
//! What recurring changes (`online::engine`, `commands::run::alerts`): the episode is still
//! an alert of its own severity, with `recurring="true"`, its claim says how often and
//! how many times, and its windows and those of the earlier occurrences enter the baseline
//! (an alert's windows are otherwise kept out: a fault is not learned), so a routine that
//! recurs within the baseline's span is learned and stops being flagged at all. An occurrence
//! that lasts much longer than the earlier ones ([`Recurrence::outlasted`]) is something
//! else: it stops being recurring and alerts as any episode does.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// Earlier occurrences on the rhythm needed to call an episode recurring (so the third one
/// is the first recognized).
pub const RECOGNIZE_AFTER: usize = 2;

/// The shortest period that counts as a routine.
pub const MIN_EVERY_MS: i64 = 120_000;

/// Least tolerance of a gap (an episode's start moves by a window or two with its first
/// flagged window).
pub const MIN_TOLERANCE_MS: i64 = 10_000;

/// Episodes remembered per host.
const HISTORY: usize = 32;

/// How an episode recurs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recurrence {
    /// The period.
    pub every_ms: i64,
    /// Occurrences on the rhythm, this one included.
    pub seen: u32,
    /// The longest of the earlier occurrences (start to last flagged window).
    pub longest_ms: i64,
    /// The earlier occurrences (start, last flagged window end), for the baseline to take
    /// back; not kept in checkpoints or reports.
    #[serde(skip)]
    pub earlier: Vec<(i64, i64)>,
}

impl Recurrence {
    /// An occurrence open for `elapsed_ms` has outlasted the earlier ones: more than twice
    /// the longest of them and 30 s more.
    pub fn outlasted(&self, elapsed_ms: i64) -> bool {
        elapsed_ms > (2 * self.longest_ms).max(self.longest_ms + 30_000)
    }

    /// In words, for the alert: `recurring about every 30 min, 4th time`.
    pub fn sentence(&self) -> String {
        let min = self.every_ms as f64 / 60_000.0;
        let every = if min >= 10.0 {
            format!("{min:.0} min")
        } else {
            format!("{min:.1} min")
        };
        format!("recurring about every {every}, {} time", ordinal(self.seen))
    }
}

fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[derive(Debug, Clone)]
struct Past {
    id: String,
    start_ms: i64,
    end_ms: i64,
    subsystem: String,
    subsystems: Vec<String>,
    lead: String,
    channels: Vec<String>,
}

/// What an episode is about: its heaviest subsystem and the subsystems it alerts on, the
/// channel its heaviest subsystem's claim leads with and those of all its claims.
#[derive(Debug, Clone)]
pub struct Signature<'a> {
    pub heaviest: &'a str,
    pub alerted: &'a [String],
    pub lead: &'a str,
    pub channels: Vec<&'a str>,
}

impl Signature<'_> {
    /// Whether `p` is the same event: each one's heaviest subsystem among the other's
    /// alerted ones, and each one's leading channel among the other's claimed ones (where
    /// known). Subsystems alone are too coarse: on a small host nearly every episode has `cpu`
    /// among them, and chance rhythms of unrelated CPU episodes took two real faults for a
    /// routine (live run 41).
    fn same(&self, p: &Past) -> bool {
        let among = |s: &str, set: &[String]| set.is_empty() || set.iter().any(|x| x == s);
        among(self.heaviest, &p.subsystems)
            && among(&p.subsystem, self.alerted)
            && (self.lead.is_empty() || p.channels.iter().any(|c| c == self.lead))
            && (p.lead.is_empty() || self.channels.iter().any(|c| *c == p.lead))
    }
}

/// A host's latest episodes.
#[derive(Debug, Default)]
pub struct History {
    past: VecDeque<Past>,
}

impl History {
    /// How an episode `sig` opening at `start_ms` recurs, if it does.
    pub fn recognize(&self, start_ms: i64, sig: Signature<'_>) -> Option<Recurrence> {
        // Earlier starts of the same event, newest first.
        let same: Vec<&Past> = self
            .past
            .iter()
            .rev()
            .filter(|p| sig.same(p) && p.start_ms < start_ms)
            .collect();
        if same.len() < RECOGNIZE_AFTER {
            return None;
        }
        // Candidate periods: the gap to each earlier start.
        let mut best: Option<(usize, i64)> = None;
        for p in &same {
            let every = start_ms - p.start_ms;
            if every < MIN_EVERY_MS {
                continue;
            }
            let n = chain(start_ms, &same, every).len();
            let better = match best {
                None => true,
                Some((m, e)) => n > m || (n == m && every > e),
            };
            if better {
                best = Some((n, every));
            }
        }
        let (n, every) = best?;
        if n < RECOGNIZE_AFTER {
            return None;
        }
        let earlier: Vec<(i64, i64)> = chain(start_ms, &same, every)
            .iter()
            .map(|p| (p.start_ms, p.end_ms))
            .collect();
        let oldest = earlier.last().map_or(start_ms, |e| e.0);
        Some(Recurrence {
            // The period over the whole chain, not its first gap alone.
            every_ms: (start_ms - oldest) / earlier.len().max(1) as i64,
            seen: earlier.len() as u32 + 1,
            longest_ms: earlier.iter().map(|(s, e)| e - s).max().unwrap_or(0),
            earlier,
        })
    }

    /// Remembers an episode as it opens, and again as it goes on (its end, and subsystems
    /// that joined).
    pub fn record(&mut self, id: &str, start_ms: i64, end_ms: i64, sig: Signature<'_>) {
        if let Some(p) = self.past.iter_mut().rev().find(|p| p.id == id) {
            p.end_ms = end_ms;
            p.subsystems = sig.alerted.to_vec();
            p.channels = sig.channels.iter().map(|c| c.to_string()).collect();
            return;
        }
        self.past.push_back(Past {
            id: id.to_string(),
            start_ms,
            end_ms,
            subsystem: sig.heaviest.to_string(),
            subsystems: sig.alerted.to_vec(),
            lead: sig.lead.to_string(),
            channels: sig.channels.iter().map(|c| c.to_string()).collect(),
        });
        while self.past.len() > HISTORY {
            self.past.pop_front();
        }
    }
}

/// The earlier episodes (newest first in `same`) on the rhythm `every` back from `start_ms`:
/// each gap one period within tolerance, the walk ending at the first gap longer than that
/// (a missed beat). An episode off the rhythm in between is passed over.
fn chain<'a>(start_ms: i64, same: &[&'a Past], every: i64) -> Vec<&'a Past> {
    let tolerance = (every / 20).max(MIN_TOLERANCE_MS);
    let mut out = Vec::new();
    let mut at = start_ms;
    for p in same {
        let gap = at - p.start_ms;
        if gap > every + tolerance {
            break;
        }
        if (gap - every).abs() <= tolerance {
            out.push(*p);
            at = p.start_ms;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    fn sig<'a>(heaviest: &'a str, alerted: &'a [String]) -> Signature<'a> {
        Signature {
            heaviest,
            alerted,
            lead: "",
            channels: vec![],
        }
    }

    fn led<'a>(alerted: &'a [String], channels: &[&'a str]) -> Signature<'a> {
        Signature {
            heaviest: &alerted[0],
            alerted,
            lead: channels[0],
            channels: channels.to_vec(),
        }
    }

    #[test]
    fn the_same_event_leads_with_a_channel_the_other_claims() {
        let cpu = one("cpu");
        let (hrtimer, block, busy) = ("softirqs{type=HRTIMER}", "softirqs{type=BLOCK}", "busy");
        // Two unrelated CPU episodes 47 minutes apart and a CPU saturation on that beat
        // (live run 41): one subsystem, three different leads.
        let mut h = History::default();
        h.record("a", at(0.0), at(0.0) + 9_000, led(&cpu, &[hrtimer]));
        h.record("b", at(47.0), at(47.0) + 9_000, led(&cpu, &[block]));
        assert!(h.recognize(at(94.0), led(&cpu, &[busy])).is_none());
        // A checkpoint led by its writes one time and by its dirty pages the next, each
        // claiming both: one event.
        let (sm, ms) = (
            vec!["storage".to_string(), "memory".to_string()],
            vec!["memory".to_string(), "storage".to_string()],
        );
        let mut h = History::default();
        h.record(
            "a",
            at(10.0),
            at(10.0) + 20_000,
            led(&sm, &["written", "dirty"]),
        );
        h.record(
            "b",
            at(20.0),
            at(20.0) + 20_000,
            led(&ms, &["dirty", "written"]),
        );
        assert!(h
            .recognize(at(30.0), led(&sm, &["written", "dirty"]))
            .is_some());
        assert!(h
            .recognize(at(30.0), led(&sm, &["read", "dirty"]))
            .is_none());
    }

    fn one(sub: &str) -> Vec<String> {
        vec![sub.to_string()]
    }

    fn history(starts_min: &[(f64, &str)]) -> History {
        let mut h = History::default();
        for (i, (s, sub)) in starts_min.iter().enumerate() {
            let start = at(*s);
            h.record(&format!("e{i}"), start, start + 20_000, sig(sub, &one(sub)));
        }
        h
    }

    fn recognize(h: &History, min: f64, sub: &str) -> Option<Recurrence> {
        h.recognize(at(min), sig(sub, &one(sub)))
    }

    fn at(min: f64) -> i64 {
        (min * MIN as f64).round() as i64
    }

    #[test]
    fn the_third_occurrence_on_a_rhythm_is_recognized() {
        let h = history(&[(40.0, "storage")]);
        assert_eq!(recognize(&h, 70.0, "storage"), None, "two are not a rhythm");
        let h = history(&[(40.0, "storage"), (70.0, "storage")]);
        let r = recognize(&h, 100.2, "storage").unwrap();
        assert_eq!(r.seen, 3);
        assert_eq!(r.every_ms, at(30.1));
        assert_eq!(r.longest_ms, 20_000);
        assert_eq!(
            r.earlier,
            [(at(70.0), at(70.0) + 20_000), (at(40.0), at(40.0) + 20_000)]
        );
        assert_eq!(r.sentence(), "recurring about every 30 min, 3rd time");
        // Off the rhythm by more than a twentieth of the period, or another subsystem: not it.
        assert_eq!(recognize(&h, 104.0, "storage"), None);
        assert_eq!(recognize(&h, 100.0, "cpu"), None);
    }

    #[test]
    fn an_episode_in_between_is_passed_over_and_a_missed_beat_ends_the_rhythm() {
        // 10-minute checkpoints, a fault at 37 between two.
        let h = history(&[
            (20.0, "storage"),
            (30.0, "storage"),
            (37.0, "storage"),
            (40.0, "storage"),
        ]);
        let r = recognize(&h, 50.0, "storage").unwrap();
        assert_eq!((r.every_ms, r.seen), (at(10.0), 4));
        assert!(!r.earlier.iter().any(|(s, _)| *s == at(37.0)));
        // The one at minute 30 not flagged: 10, 20, 40, 50 is no rhythm yet.
        let h = history(&[(10.0, "storage"), (20.0, "storage"), (40.0, "storage")]);
        assert_eq!(recognize(&h, 50.0, "storage"), None);
    }

    #[test]
    fn the_same_event_shares_its_heaviest_subsystems_both_ways() {
        let sm = vec!["storage".to_string(), "memory".to_string()];
        let ms = vec!["memory".to_string(), "storage".to_string()];
        let smc = vec!["storage".into(), "memory".into(), "cpu".into()];
        let mut h = History::default();
        h.record("a", at(10.0), at(10.0) + 20_000, sig("storage", &sm));
        h.record("b", at(20.0), at(20.0) + 20_000, sig("memory", &ms));
        // A checkpoint seen as storage, then memory, then storage beside memory: one event.
        assert!(h.recognize(at(30.0), sig("storage", &sm)).is_some());
        assert!(h
            .recognize(at(30.0), sig("memory", &one("memory")))
            .is_none());
        // A CPU hog, a write flood with I/O wait, an IRQ storm: cpu in each, not one event.
        let mut h = History::default();
        h.record("a", at(10.0), at(10.0) + 20_000, sig("cpu", &one("cpu")));
        h.record("b", at(20.0), at(20.0) + 20_000, sig("storage", &smc));
        assert!(h.recognize(at(30.0), sig("cpu", &one("cpu"))).is_none());
    }

    #[test]
    fn a_fast_flapping_fault_is_not_a_routine() {
        let h = history(&[(1.0, "network"), (1.5, "network"), (2.0, "network")]);
        assert_eq!(recognize(&h, 2.5, "network"), None);
    }

    #[test]
    fn irregular_episodes_are_not_recurring() {
        let h = history(&[(5.0, "cpu"), (17.0, "cpu"), (24.0, "cpu"), (41.0, "cpu")]);
        assert_eq!(recognize(&h, 50.0, "cpu"), None);
        assert_eq!(recognize(&h, 52.0, "cpu"), None);
    }

    #[test]
    fn an_occurrence_far_longer_than_the_earlier_ones_is_something_else() {
        let r = Recurrence {
            every_ms: at(30.0),
            seen: 3,
            longest_ms: 20_000,
            earlier: vec![],
        };
        assert!(!r.outlasted(50_000));
        assert!(r.outlasted(51_000));
        let long = Recurrence {
            longest_ms: 100_000,
            ..r
        };
        assert!(!long.outlasted(200_000));
        assert!(long.outlasted(201_000));
    }

    #[test]
    fn history_is_bounded_and_updates_an_episode_in_place() {
        let mut h = History::default();
        for i in 0..40 {
            h.record(
                &format!("e{i}"),
                i * MIN,
                i * MIN + 1,
                sig("cpu", &one("cpu")),
            );
        }
        assert_eq!(h.past.len(), HISTORY);
        h.record("e39", 39 * MIN, 39 * MIN + 5_000, sig("cpu", &one("cpu")));
        assert_eq!(h.past.len(), HISTORY);
        assert_eq!(h.past.back().unwrap().end_ms, 39 * MIN + 5_000);
        assert_eq!(ordinal(1), "1st");
        assert_eq!(ordinal(12), "12th");
        assert_eq!(ordinal(22), "22nd");
    }
}
