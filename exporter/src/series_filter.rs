//! Which series of one family the page being scraped serves, tested on label values.
//!
//! A page's rules for a family (the selection's `match:` rule, the fast cadence's rule, and
//! for the slow page the fast rule negated: it serves what the fast page does not) are
//! resolved once, at start, against the family's label names: each matcher's label name becomes
//! the label's position in the descriptor. The collector then pushes label values in that
//! order (`Scrape::push_values`) and a series the page does not serve is
//! dropped before any label is copied — without this, every series of `/proc/net/netstat` or
//! `/proc/vmstat` was copied and then tested by label name at encoding, on a page that serves
//! four of them (a fifth of the exporter's CPU on the 100 ms page).
//!
//! A filter also answers for a partial series ([`SeriesFilter::may_keep`]): whether any series
//! with these values of some labels could be served, so that a collector skips a file none of
//! whose series the page serves (`/proc/net/snmp6` on a page that serves TCP counters only).
//!
//! Most patterns are a list of names (`'RetransSegs|TCPTimeouts|ListenDrops'`): such a
//! pattern is tested by comparing the value with each name, which is what its anchored regex
//! matches (the regex search was about 4 % of the 100 ms page's CPU on the development VM,
//! where `/proc/vmstat` and `/proc/net/netstat` push a few hundred series to keep eleven;
//! docs/benchmarks.md, "Names compared, not searched").

use regex::Regex;
use reveal_schema::selection::Rule;

/// One matcher of a rule: the label's position in the descriptor (`None`: a label the family
/// does not have, which reads as empty, as in [`Rule::keeps`]) and the pattern.
type Matcher = (Option<usize>, Pattern);

/// A rule's anchored regex, or the names it is a list of.
#[derive(Debug, Clone)]
enum Pattern {
    Names(Vec<Box<str>>),
    Regex(Regex),
}

impl Pattern {
    /// `re` is `^(?:P)$`, as a selection compiles its patterns: when every alternative of P
    /// is a plain name (ASCII letters, digits and `_ - : / ,`, none of which a regex reads
    /// as anything but itself), the names; else the regex.
    fn of(re: &Regex) -> Pattern {
        let names = re
            .as_str()
            .strip_prefix("^(?:")
            .and_then(|s| s.strip_suffix(")$"))
            .filter(|inner| {
                inner.chars().all(|c| {
                    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':' | '/' | ',' | '|')
                })
            });
        match names {
            Some(inner) => Pattern::Names(inner.split('|').map(Box::from).collect()),
            None => Pattern::Regex(re.clone()),
        }
    }

    fn is_match(&self, value: &str) -> bool {
        match self {
            Pattern::Names(names) => names.iter().any(|n| **n == *value),
            Pattern::Regex(re) => re.is_match(value),
        }
    }
}

/// A rule, resolved: series matching any of the sets (each: all its matchers) are kept, or
/// with `negated` the others.
#[derive(Debug, Clone)]
struct Term {
    sets: Vec<Vec<Matcher>>,
    negated: bool,
}

/// Series kept by every term.
#[derive(Debug, Clone)]
pub struct SeriesFilter {
    terms: Vec<Term>,
}

impl SeriesFilter {
    /// The filter of a page that serves the series every rule of `keep` keeps and no rule of
    /// `drop` keeps. `None` when that is every series (each `keep` is [`Rule::All`], no `drop`).
    pub fn new(labels: &[&str], keep: &[&Rule], drop: &[&Rule]) -> Option<SeriesFilter> {
        let resolve = |rule: &Rule, negated: bool| -> Option<Term> {
            match rule {
                Rule::All if !negated => None,
                // Negated, every series matches the one empty set: the page serves none.
                Rule::All => Some(Term {
                    sets: vec![Vec::new()],
                    negated,
                }),
                Rule::Any(sets) => Some(Term {
                    sets: sets
                        .iter()
                        .map(|set| {
                            set.iter()
                                .map(|(name, re)| {
                                    (labels.iter().position(|l| l == name), Pattern::of(re))
                                })
                                .collect()
                        })
                        .collect(),
                    negated,
                }),
            }
        };
        let terms: Vec<Term> = keep
            .iter()
            .filter_map(|r| resolve(r, false))
            .chain(drop.iter().filter_map(|r| resolve(r, true)))
            .collect();
        (!terms.is_empty()).then_some(SeriesFilter { terms })
    }

    /// Whether the series whose label at position `i` is `value(i)` is served.
    pub fn keeps<'a>(&self, value: impl Fn(usize) -> &'a str) -> bool {
        self.eval(|i| Some(value(i))) == Some(true)
    }

    /// Whether some series whose known labels have these values (`value(i)`: `None` for a
    /// label not known yet) could be served; false only when none can.
    pub fn may_keep<'a>(&self, value: impl Fn(usize) -> Option<&'a str>) -> bool {
        self.eval(value) != Some(false)
    }

    /// Three-valued: `Some(kept)`, or `None` where it depends on a label not known.
    fn eval<'a>(&self, value: impl Fn(usize) -> Option<&'a str>) -> Option<bool> {
        let matches = |(at, re): &Matcher| match at {
            None => Some(re.is_match("")),
            Some(i) => value(*i).map(|v| re.is_match(v)),
        };
        all(self.terms.iter().map(|t| {
            any(t.sets.iter().map(|set| all(set.iter().map(matches)))).map(|m| m != t.negated)
        }))
    }
}

/// Kleene conjunction: false if any is false, true if all are true, else unknown.
fn all(values: impl Iterator<Item = Option<bool>>) -> Option<bool> {
    let mut known = true;
    for v in values {
        match v {
            Some(false) => return Some(false),
            None => known = false,
            Some(true) => {}
        }
    }
    known.then_some(true)
}

/// Kleene disjunction: true if any is true, false if all are false, else unknown.
fn any(values: impl Iterator<Item = Option<bool>>) -> Option<bool> {
    all(values.map(|v| v.map(|b| !b))).map(|b| !b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reveal_schema::selection::Selection;

    const EVENTS: &[&str] = &["protocol", "field"];

    fn rule(text: &str) -> Rule {
        let sel = Selection::parse(&format!(
            "metrics:\n  - name: reveal_network_protocol_events_total\n    {text}\n"
        ))
        .unwrap();
        sel.rule("reveal_network_protocol_events_total")
            .unwrap()
            .clone()
    }

    #[test]
    fn keeps_what_the_rules_keep_by_position() {
        let fast = rule("match: {protocol: 'Tcp|TcpExt', field: 'RetransSegs|ListenDrops'}");
        let f = SeriesFilter::new(EVENTS, &[&fast], &[]).unwrap();
        let labels = |p: &'static str, fl: &'static str| move |i: usize| [p, fl][i];
        assert!(f.keeps(labels("Tcp", "RetransSegs")));
        assert!(f.keeps(labels("TcpExt", "ListenDrops")));
        assert!(!f.keeps(labels("Tcp", "InSegs")));
        assert!(!f.keeps(labels("Udp", "RetransSegs")));
        // Anchored, as a selection's matchers are.
        assert!(!f.keeps(labels("Tcp6", "RetransSegs")));
        for (p, fl) in [
            ("Tcp", "RetransSegs"),
            ("Ip", "InReceives"),
            ("Tcp", "InSegs"),
        ] {
            let pairs = [("protocol", p), ("field", fl)];
            assert_eq!(f.keeps(labels(p, fl)), fast.keeps(&pairs), "{p} {fl}");
        }
        // The slow page: the fast rule negated.
        let slow = SeriesFilter::new(EVENTS, &[], &[&fast]).unwrap();
        assert!(!slow.keeps(labels("Tcp", "RetransSegs")));
        assert!(slow.keeps(labels("Tcp", "InSegs")));
    }

    #[test]
    fn a_partial_series_is_refused_only_when_no_series_could_be_kept() {
        let fast = rule("match: {protocol: 'Tcp|TcpExt', field: 'RetransSegs'}");
        let f = SeriesFilter::new(EVENTS, &[&fast], &[]).unwrap();
        let protocol = |p: &'static str| move |i: usize| (i == 0).then_some(p);
        assert!(f.may_keep(protocol("Tcp")));
        assert!(!f.may_keep(protocol("Ip6")));
        // The slow page serves Tcp's other fields, and every Ip6 series.
        let slow = SeriesFilter::new(EVENTS, &[], &[&fast]).unwrap();
        assert!(slow.may_keep(protocol("Tcp")) && slow.may_keep(protocol("Ip6")));
        // A rule on the protocol alone decides for the whole protocol.
        let tcp_only = rule("match: {protocol: 'Tcp'}");
        let slow = SeriesFilter::new(EVENTS, &[], &[&tcp_only]).unwrap();
        assert!(!slow.may_keep(protocol("Tcp")) && slow.may_keep(protocol("Udp")));
        // Several sets: kept if any set could keep it.
        let two = Selection::parse(
            "metrics:\n  - name: reveal_network_protocol_events_total\n    match: {protocol: Udp}\n  \
             - name: reveal_network_protocol_events_total\n    match: {field: RetransSegs}\n",
        )
        .unwrap();
        let two = two.rule("reveal_network_protocol_events_total").unwrap();
        assert!(matches!(two, Rule::Any(sets) if sets.len() == 2));
        let f = SeriesFilter::new(EVENTS, &[two], &[]).unwrap();
        assert!(
            f.may_keep(protocol("Ip6")),
            "a field could still match the second set"
        );
    }

    #[test]
    fn a_list_of_names_matches_what_its_regex_matches() {
        let anchored = |p: &str| Regex::new(&format!("^(?:{p})$")).unwrap();
        let patterns = [
            "Tcp|TcpExt",
            "RetransSegs",
            "",
            "a|",
            "nvme0n1|sd-a:1/2,3",
            "numa_.*",
            "Tcp.",
            "(Tcp)|Udp",
            "[a-z]+",
            "Tcp|TcpExt?",
            "x\\.y",
        ];
        let values = [
            "Tcp",
            "TcpExt",
            "TcpEx",
            "Tcp6",
            "",
            "a",
            "RetransSegs",
            "retranssegs",
            "numa_hit",
            "nvme0n1",
            "sd-a:1/2,3",
            "x.y",
            "xzy",
            "Udp",
            "TcpE",
        ];
        for p in patterns {
            let re = anchored(p);
            let pattern = Pattern::of(&re);
            let plain = p
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-:/,|".contains(c));
            assert_eq!(matches!(pattern, Pattern::Names(_)), plain, "{p:?}");
            for v in values {
                assert_eq!(pattern.is_match(v), re.is_match(v), "{p:?} on {v:?}");
            }
        }
    }

    #[test]
    fn every_series_or_none() {
        assert!(SeriesFilter::new(EVENTS, &[&Rule::All], &[]).is_none());
        let none = SeriesFilter::new(EVENTS, &[&Rule::All], &[&Rule::All]).unwrap();
        assert!(!none.keeps(|_| "Tcp") && !none.may_keep(|_| None));
        // A label the family does not have reads as empty.
        let anchored = |p: &str| Regex::new(&format!("^(?:{p})$")).unwrap();
        let other = Rule::Any(vec![vec![
            ("protocol", anchored("Tcp")),
            ("device", anchored("")),
        ]]);
        let f = SeriesFilter::new(EVENTS, &[&other], &[]).unwrap();
        assert!(f.keeps(|i| ["Tcp", "X"][i]));
    }
}
