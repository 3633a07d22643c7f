//! IP, ICMP, TCP, UDP and extended protocol counters from `/proc/net/snmp`,
//! `/proc/net/netstat` and `/proc/net/snmp6`.
//!
//! Formats (RFC 1213 / RFC 4293 MIB names; the kernel documents the files in
//! <https://docs.kernel.org/networking/snmp_counter.html>):
//! ```text
//! /proc/net/snmp, /proc/net/netstat: a header line and a value line per protocol
//!   Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens ... RetransSegs ...
//!   Tcp: 1 200 120000 -1 2015 ... 34 ...
//! /proc/net/snmp6: one "name value" line per counter, the protocol prefixed to the name
//!   Ip6InReceives                       1
//! ```
//! All fields are counters except the few levels and constants in [`VALUE_FIELDS`], which go
//! to `reveal_network_protocol_value` (Tcp MaxConn is -1 when there is no limit).

use super::{Collector, Settings};
use crate::error::Excerpt;
use crate::error::{CollectError, ParseError};
use crate::read::KeptFile;
use crate::scrape::{Desc, Scrape, Unit};

pub static EVENTS: Desc = Desc::counter(
    "reveal_network_protocol_events",
    Unit::None,
    &["protocol", "field"],
    "Protocol counters of the kernel's MIBs (protocol Ip, Icmp, IcmpMsg, Tcp, Udp, UdpLite, \
     TcpExt, IpExt, MPTcpExt, Ip6, Icmp6, Udp6, UdpLite6; field as the kernel names it, e.g. \
     Tcp RetransSegs, TcpExt ListenDrops, TcpExt TCPTimeouts).",
);
pub static VALUES: Desc = Desc::gauge(
    "reveal_network_protocol_value",
    Unit::None,
    &["protocol", "field"],
    "Protocol levels and settings that are not counters: Tcp CurrEstab (connections now \
     established or closing), RtoAlgorithm, RtoMin and RtoMax (milliseconds), MaxConn (-1: no \
     limit); Ip Forwarding (1 yes, 2 no) and DefaultTTL.",
);

pub static METRICS: &[&Desc] = &[&EVENTS, &VALUES];

/// (protocol, field) pairs that are levels or constants, not counters.
pub const VALUE_FIELDS: &[(&str, &str)] = &[
    ("Tcp", "CurrEstab"),
    ("Tcp", "RtoAlgorithm"),
    ("Tcp", "RtoMin"),
    ("Tcp", "RtoMax"),
    ("Tcp", "MaxConn"),
    ("Ip", "Forwarding"),
    ("Ip", "DefaultTTL"),
];

/// One protocol counter or value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field<'a> {
    pub protocol: &'a str,
    pub field: &'a str,
    pub value: i64,
}

impl Field<'_> {
    /// Whether this field is a level or setting rather than a counter.
    pub fn is_value(&self) -> bool {
        VALUE_FIELDS
            .iter()
            .any(|(p, f)| *p == self.protocol && *f == self.field)
    }
}

fn parse_i64(s: &str, line: usize) -> Result<i64, ParseError> {
    s.parse()
        .map_err(|_| ParseError::new(line, format!("{s:?} is not an integer", s = Excerpt(s))))
}

/// Parses `/proc/net/snmp` or `/proc/net/netstat`: pairs of `Proto: names` / `Proto: values`
/// lines, appending to `out`.
pub fn parse_snmp<'a>(text: &'a str, out: &mut Vec<Field<'a>>) -> Result<(), ParseError> {
    let mut protocols = Vec::new();
    parse_snmp_selected(text, |_, _| true, &mut protocols, out)
}

/// [`parse_snmp`] of the counters `keep` selects: `keep(protocol, None)` says whether a
/// protocol's pair of lines is read at all, `keep(protocol, Some(field))` whether one of its
/// fields is. Every protocol the file holds is appended to `protocols`, read or not. What is
/// not read is not checked: a protocol's names and values are counted against each other, and
/// a value parsed, only where it is read (the 100 ms page reads four of the 312 counters of
/// `snmp` and `netstat`).
pub fn parse_snmp_selected<'a>(
    text: &'a str,
    keep: impl Fn(&str, Option<&str>) -> bool,
    protocols: &mut Vec<&'a str>,
    out: &mut Vec<Field<'a>>,
) -> Result<(), ParseError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let mut pairs = 0;
    while let Some((i, names)) = lines.next() {
        let lineno = i + 1;
        let Some((i2, values)) = lines.next() else {
            return Err(ParseError::new(lineno, "header line without a value line"));
        };
        let split = |line: &'a str, n: usize| {
            line.split_once(':')
                .map(|(p, rest)| (p.trim(), rest))
                .ok_or_else(|| {
                    ParseError::new(
                        n,
                        format!("no 'Protocol:' in {line:?}", line = Excerpt(line)),
                    )
                })
        };
        let (proto, names) = split(names, lineno)?;
        let (proto2, values) = split(values, i2 + 1)?;
        if proto != proto2 || proto.is_empty() {
            return Err(ParseError::new(
                i2 + 1,
                format!(
                    "values of {proto2:?} after names of {proto:?}",
                    proto2 = Excerpt(proto2),
                    proto = Excerpt(proto)
                ),
            ));
        }
        pairs += 1;
        protocols.push(proto);
        if !keep(proto, None) {
            continue;
        }
        let mut names = names.split_ascii_whitespace();
        let mut values = values.split_ascii_whitespace();
        loop {
            match (names.next(), values.next()) {
                (Some(field), Some(v)) => {
                    if keep(proto, Some(field)) {
                        out.push(Field {
                            protocol: proto,
                            field,
                            value: parse_i64(v, i2 + 1)?,
                        })
                    }
                }
                (None, None) => break,
                _ => {
                    return Err(ParseError::new(
                        i2 + 1,
                        format!("{proto}: names and values differ in number"),
                    ))
                }
            }
        }
    }
    if pairs == 0 {
        return Err(ParseError::new(0, "no counters"));
    }
    Ok(())
}

/// Parses `/proc/net/snmp6`, appending to `out`. The protocol is the name up to and
/// including its first `6` (`Ip6`, `Icmp6`, `Udp6`, `UdpLite6`); names without one are
/// not of a known protocol and are skipped.
pub fn parse_snmp6<'a>(text: &'a str, out: &mut Vec<Field<'a>>) -> Result<(), ParseError> {
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let mut it = line.split_ascii_whitespace();
        let Some(name) = it.next() else { continue };
        let (Some(v), None) = (it.next(), it.next()) else {
            return Err(ParseError::new(
                lineno,
                format!("expected 'name value', got {line:?}", line = Excerpt(line)),
            ));
        };
        let value = parse_i64(v, lineno)?;
        let Some(pos) = name.find('6').filter(|p| *p > 0 && p + 1 < name.len()) else {
            continue;
        };
        out.push(Field {
            protocol: &name[..=pos],
            field: &name[pos + 1..],
            value,
        });
    }
    Ok(())
}

pub struct NetstatCollector {
    /// `/proc/net/snmp` (required), `/proc/net/netstat` and `/proc/net/snmp6`.
    files: [KeptFile; 3],
    bufs: [String; 3],
    /// Per file, the protocols its last read held: a file none of whose protocols the page
    /// serves is not read (the 100 ms page serves TCP counters, none of `snmp6`'s). Empty
    /// until read.
    protocols: [Vec<String>; 3],
    capacity: usize,
}

impl NetstatCollector {
    pub fn new(s: &Settings) -> Self {
        NetstatCollector {
            files: ["net/snmp", "net/netstat", "net/snmp6"].map(|f| KeptFile::new(s.paths.proc(f))),
            bufs: Default::default(),
            protocols: Default::default(),
            capacity: 0,
        }
    }
}

/// Reads an optional file: `Ok(false)` when the host does not have it (no IPv6, old kernel).
fn read_optional(path: &KeptFile, buf: &mut String) -> Result<bool, CollectError> {
    match path.read_into(buf) {
        Ok(()) => Ok(true),
        Err(e) if e.is_unsupported() => Ok(false),
        Err(e) => Err(e),
    }
}

impl Collector for NetstatCollector {
    fn name(&self) -> &'static str {
        "netstat"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        // The parsed fields borrow the buffers, so the vector is per scrape, sized from the last.
        let mut fields = Vec::with_capacity(self.capacity);
        let mut held = Vec::new();
        let keep = |protocol: &str, field: Option<&str>| {
            let of = |i: usize| [Some(protocol), field][i];
            out.may_want(&EVENTS, of) || out.may_want(&VALUES, of)
        };
        for (i, ((file, buf), protocols)) in self
            .files
            .iter()
            .zip(&mut self.bufs)
            .zip(&mut self.protocols)
            .enumerate()
        {
            if !protocols.is_empty() && !protocols.iter().any(|p| keep(p, None)) {
                continue;
            }
            let present = if i == 0 {
                file.read_into(buf).map(|()| true)?
            } else {
                read_optional(file, buf)?
            };
            if !present {
                continue;
            }
            held.clear();
            let parsed = if i == 2 {
                let from = fields.len();
                let parsed = parse_snmp6(buf, &mut fields);
                // Its protocols, in order and once each.
                let f = &fields[from..];
                held.extend(
                    f.iter()
                        .enumerate()
                        .filter(|(i, x)| *i == 0 || f[i - 1].protocol != x.protocol)
                        .map(|(_, x)| x.protocol),
                );
                parsed
            } else {
                parse_snmp_selected(buf, keep, &mut held, &mut fields)
            };
            parsed.map_err(|e| CollectError::parse(file, e))?;
            // They change only when the kernel's MIBs do: copied only then.
            if !held
                .iter()
                .copied()
                .eq(protocols.iter().map(String::as_str))
            {
                *protocols = held.iter().map(|p| p.to_string()).collect();
            }
        }
        for f in &fields {
            let labels = [f.protocol, f.field];
            if f.is_value() {
                out.push_values(&VALUES, &labels, f.value as f64);
            } else if f.value >= 0 {
                // A negative counter is not a count of anything; leave it out rather than
                // expose a counter that goes backwards.
                out.push_values(&EVENTS, &labels, f.value as f64);
            }
        }
        self.capacity = fields.len();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectors::test_util::value;
    use proptest::prelude::*;

    const SNMP: &str = "Ip: Forwarding DefaultTTL InReceives\n\
Ip: 2 64 6693\n\
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens CurrEstab RetransSegs\n\
Tcp: 1 200 120000 -1 2015 3 34\n\
IcmpMsg: InType3\n\
IcmpMsg: 1\n";

    #[test]
    fn parses_pairs() {
        let mut v = Vec::new();
        parse_snmp(SNMP, &mut v).unwrap();
        assert_eq!(v.len(), 11);
        let get = |p: &str, f: &str| *v.iter().find(|x| x.protocol == p && x.field == f).unwrap();
        assert_eq!(get("Ip", "InReceives").value, 6693);
        assert_eq!(get("Tcp", "MaxConn").value, -1);
        assert!(get("Tcp", "MaxConn").is_value());
        assert!(get("Tcp", "CurrEstab").is_value());
        assert!(get("Ip", "Forwarding").is_value());
        assert_eq!(get("Tcp", "RetransSegs").value, 34);
        assert!(!get("Tcp", "RetransSegs").is_value());
        assert_eq!(get("IcmpMsg", "InType3").value, 1);
    }

    #[test]
    fn rejects_mismatches() {
        let mut v = Vec::new();
        assert!(parse_snmp("Tcp: A B\nTcp: 1\n", &mut v).is_err());
        assert!(parse_snmp("Tcp: A\nTcp: 1 2\n", &mut v).is_err());
        assert!(parse_snmp("Tcp: A\nUdp: 1\n", &mut v).is_err());
        assert!(parse_snmp("Tcp: A\n", &mut v).is_err());
        assert!(parse_snmp("Tcp: A\nTcp: x\n", &mut v).is_err());
        assert!(parse_snmp("Tcp A\nTcp 1\n", &mut v).is_err());
        assert!(parse_snmp("", &mut v).is_err());
    }

    #[test]
    fn reads_only_the_counters_selected_and_names_every_protocol() {
        // Ip's value line is broken and has one value too many: it is not read, so not checked.
        let tcp_on = &SNMP[SNMP.find("Tcp:").unwrap()..];
        let text = format!("Ip: Forwarding DefaultTTL\nIp: 2 x 9\n{tcp_on}");
        let keep = |p: &str, f: Option<&str>| p == "Tcp" && f.is_none_or(|f| f == "RetransSegs");
        let (mut protocols, mut v) = (Vec::new(), Vec::new());
        parse_snmp_selected(&text, keep, &mut protocols, &mut v).unwrap();
        assert_eq!(protocols, ["Ip", "Tcp", "IcmpMsg"]);
        assert_eq!(
            v,
            [Field {
                protocol: "Tcp",
                field: "RetransSegs",
                value: 34
            }]
        );
        // What is read is checked as before.
        let tcp = |p: &str, _: Option<&str>| p == "Tcp";
        let mut v = Vec::new();
        assert!(parse_snmp_selected("Tcp: A B\nTcp: 1\n", tcp, &mut protocols, &mut v).is_err());
        assert!(parse_snmp_selected("Tcp: A\nUdp: 1\n", tcp, &mut protocols, &mut v).is_err());
        assert!(parse_snmp_selected("", tcp, &mut protocols, &mut v).is_err());
        // A file of protocols none of which is read is a file of counters all the same.
        v.clear();
        parse_snmp_selected("Udp: A\nUdp: 1\n", tcp, &mut protocols, &mut v).unwrap();
        assert!(v.is_empty());
    }

    #[test]
    fn parses_snmp6() {
        let mut v = Vec::new();
        let text =
            "Ip6InReceives                   \t1\nIcmp6InType133 4\nUdpLite6InDatagrams 0\nOdd 5\n";
        parse_snmp6(text, &mut v).unwrap();
        assert_eq!(
            v,
            vec![
                Field {
                    protocol: "Ip6",
                    field: "InReceives",
                    value: 1
                },
                Field {
                    protocol: "Icmp6",
                    field: "InType133",
                    value: 4
                },
                Field {
                    protocol: "UdpLite6",
                    field: "InDatagrams",
                    value: 0
                },
            ]
        );
        assert!(parse_snmp6("Ip6InReceives\n", &mut v).is_err());
        assert!(parse_snmp6("Ip6InReceives x\n", &mut v).is_err());
    }

    #[test]
    fn on_this_host() {
        let mut c = NetstatCollector::new(&Settings::default());
        let mut out = Scrape::new();
        c.update(&mut out).expect("/proc/net/snmp of this host");
        let ev = "reveal_network_protocol_events_total";
        assert!(value(&out, ev, &[("protocol", "Tcp"), ("field", "RetransSegs")]).is_some());
        assert!(value(
            &out,
            ev,
            &[("protocol", "TcpExt"), ("field", "ListenDrops")]
        )
        .is_some());
        // Linux reports no connection limit as -1.
        let max = value(
            &out,
            "reveal_network_protocol_value",
            &[("protocol", "Tcp"), ("field", "MaxConn")],
        );
        assert_eq!(max, Some(-1.0));
    }

    /// A page that serves none of a file's protocols does not read it: here a broken
    /// `snmp6` fails the update of a page that serves IPv6 counters, not of one that serves
    /// TCP's only, once the file's protocols are known.
    #[test]
    fn a_file_none_of_whose_protocols_the_page_serves_is_not_read() {
        use crate::scrape::Page;
        use crate::series_filter::SeriesFilter;
        use reveal_schema::selection::Selection;
        use std::sync::Arc;
        let dir = std::env::temp_dir().join(format!("reveal-netstat-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("net")).unwrap();
        std::fs::write(dir.join("net/snmp"), SNMP).unwrap();
        std::fs::write(dir.join("net/snmp6"), "Ip6InReceives 7\nUdp6InErrors 1\n").unwrap();
        let s = Settings {
            paths: crate::paths::Paths::new(&dir, &dir),
            ..Default::default()
        };
        let sel = Selection::parse(
            "metrics:\n  - name: reveal_network_protocol_events_total\n    match: {protocol: Tcp}\n",
        )
        .unwrap();
        let tcp = sel.rule("reveal_network_protocol_events_total").unwrap();
        let tcp_page = |out: &mut Scrape| {
            out.set_page(Arc::new(Page {
                skip: vec![&VALUES],
                filters: vec![(
                    &EVENTS,
                    SeriesFilter::new(EVENTS.labels, &[tcp], &[]).unwrap(),
                )],
                ..Page::default()
            }))
        };
        let mut c = NetstatCollector::new(&s);
        let mut out = Scrape::new();
        tcp_page(&mut out);
        c.update(&mut out).unwrap();
        let ev = "reveal_network_protocol_events_total";
        assert_eq!(
            value(&out, ev, &[("protocol", "Tcp"), ("field", "RetransSegs")]),
            Some(34.0)
        );
        assert_eq!(
            value(&out, ev, &[("protocol", "Ip6")]),
            None,
            "the page serves Tcp only"
        );
        std::fs::write(dir.join("net/snmp6"), "Ip6InReceives x\n").unwrap();
        out.clear();
        c.update(&mut out).expect("snmp6 is not read for this page");
        assert_eq!(
            value(&out, ev, &[("protocol", "Tcp"), ("field", "RetransSegs")]),
            Some(34.0)
        );
        // A page that serves every series reads it, and says it is broken.
        let mut all = Scrape::new();
        let err = c.update(&mut all).unwrap_err();
        assert!(err.to_string().contains("snmp6"), "{err}");
        std::fs::write(dir.join("net/snmp6"), "Ip6InReceives 8\n").unwrap();
        c.update(&mut all).unwrap();
        assert_eq!(
            value(&all, ev, &[("protocol", "Ip6"), ("field", "InReceives")]),
            Some(8.0)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC*") {
            let mut v = Vec::new();
            let _ = parse_snmp(&s, &mut v);
            let _ = parse_snmp6(&s, &mut v);
        }

        #[test]
        fn never_panics_on_near_misses(s in "((Tcp|Ip6?|6): ?[A-Za-z6 ]{0,12}\n(Tcp|Ip): ?[-0-9x ]{0,12}\n){0,3}") {
            let mut v = Vec::new();
            let _ = parse_snmp(&s, &mut v);
            let _ = parse_snmp6(&s, &mut v);
        }
    }
}
