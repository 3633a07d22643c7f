//! A parse error quotes at most an excerpt of the bad input. Each case takes a real fixture
//! file, replaces one line, or one field of it, by a megabyte of junk, and parses it: where
//! the parser refuses, its message must not quote more than [`EXCERPT_CHARS`] characters of
//! the junk. Quoting all of it would cost about a second per scrape on a 6 MB line (escaping
//! each character) before the message is cut to its few hundred bytes.

mod common;

use common::fixture;
use reveal_exporter::collectors as c;
use reveal_exporter::error::ParseError;
use reveal_schema::excerpt::EXCERPT_CHARS;

const JUNK_LEN: usize = 1_000_000;

/// The fixture file with line `i` replaced (`whole`) or its last field replaced by junk.
fn damaged(text: &str, i: usize, whole: bool, junk: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(k, l)| {
            if k != i {
                return l.to_string();
            }
            match (whole, l.rfind([' ', '\t'])) {
                (false, Some(cut)) => format!("{}{junk}", &l[..=cut]),
                _ => junk.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// The longest run of `ch` in `s`, in characters.
fn longest_run(s: &str, ch: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for c in s.chars() {
        run = if c == ch { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

type Parser = fn(&str) -> Result<(), ParseError>;

fn parsers() -> Vec<(&'static str, Parser)> {
    vec![
        ("proc/stat", |t| c::stat::parse_stat(t).map(drop)),
        ("proc/interrupts", |t| {
            c::interrupts::parse_interrupts(t).map(drop)
        }),
        ("proc/softirqs", |t| {
            c::softirqs::parse_softirqs(t).map(drop)
        }),
        ("proc/meminfo", |t| c::meminfo::parse_meminfo(t).map(drop)),
        ("proc/vmstat", |t| c::vmstat::parse_vmstat(t).map(drop)),
        ("proc/diskstats", |t| {
            c::diskstats::parse_diskstats(t).map(drop)
        }),
        ("proc/net/dev", |t| c::netdev::parse_netdev(t).map(drop)),
        ("proc/net/snmp", |t| {
            c::netstat::parse_snmp(t, &mut Vec::new())
        }),
        ("proc/net/netstat", |t| {
            c::netstat::parse_snmp(t, &mut Vec::new())
        }),
        ("proc/net/snmp6", |t| {
            c::netstat::parse_snmp6(t, &mut Vec::new())
        }),
        ("proc/net/sockstat", |t| {
            c::sockstat::parse_sockstat(t, &mut Vec::new())
        }),
        ("proc/net/tcp", |t| {
            c::tcpstat::parse_tcp_states(t, &mut [0; 11])
        }),
        ("sys/devices/system/node/node0/numastat", |t| {
            c::numa::parse_numastat(t).map(drop)
        }),
        ("sys/devices/system/node/node0/meminfo", |t| {
            c::numa::parse_node_meminfo(t).map(drop)
        }),
    ]
}

#[test]
fn a_parse_error_quotes_only_an_excerpt_of_a_megabyte_of_junk() {
    let mut refused = 0;
    for (rel, parse) in parsers() {
        let text = std::fs::read_to_string(fixture("vm-debian").join(rel))
            .unwrap_or_else(|e| panic!("{rel}: {e}"));
        let lines = text.lines().count();
        // A letter where a number or a name belongs, and a printable non-ASCII character
        // (escaping is slowest for those), in the header, the first record and the last.
        for ch in ['x', '\u{fffd}'] {
            let junk = ch.to_string().repeat(JUNK_LEN);
            for i in [0, 1, lines - 1] {
                for whole in [false, true] {
                    let Err(e) = parse(&damaged(&text, i, whole, &junk)) else {
                        continue;
                    };
                    refused += 1;
                    let quoted = longest_run(&e.msg, ch);
                    assert!(
                        quoted <= EXCERPT_CHARS,
                        "{rel}, line {} {}: the message quotes {quoted} characters of junk: {:.200}",
                        i + 1,
                        if whole { "replaced" } else { "last field replaced" },
                        e.msg
                    );
                }
            }
        }
    }
    // Most of these damages must be refused, or the test checks nothing.
    assert!(refused >= 60, "only {refused} damaged files were refused");
}
