//! TCP connections per state, as `ss -tan` counts them, from `/proc/net/tcp` and `tcp6`.
//!
//! Format (<https://docs.kernel.org/networking/proc_net_tcp.html>), one line per socket,
//! `st` the state in hex:
//! ```text
//!   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
//!    0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1149 1 ...
//! ```
//! Off by default, as node_exporter's tcpstat is: every read of these files walks the
//! kernel's whole established-connection hash table, however few sockets there are
//! (`tcp_ehash_entries`, sized from RAM: 262144 buckets take about 5 ms per file on a 24 GiB
//! VM), which alone exceeds a 100 ms scrape's budget. The netlink `sock_diag` dump walks the
//! same table, so it would save the text formatting but not the walk. On a busy host the
//! files have a line per socket and reach megabytes: they are read into a buffer reused across
//! scrapes and scanned without allocating.

use super::{Collector, Settings};
use crate::error::Excerpt;
use crate::error::{CollectError, ParseError};
use crate::read::KeptFile;
use crate::scrape::{Desc, Scrape, Unit};

pub static TCP_CONNECTIONS: Desc = Desc::gauge(
    "reveal_network_tcp_connections",
    Unit::None,
    &["state"],
    "TCP sockets (IPv4 and IPv6) per state, as `ss` shows them; every state is always present.",
);

pub static METRICS: &[&Desc] = &[&TCP_CONNECTIONS];

/// TCP states in kernel numbering (`include/net/tcp_states.h`): index + 1 is the `st` value.
pub const TCP_STATES: [&str; 11] = [
    "established",
    "syn_sent",
    "syn_recv",
    "fin_wait1",
    "fin_wait2",
    "time_wait",
    "close",
    "close_wait",
    "last_ack",
    "listen",
    "closing",
];

/// Counts the sockets of `/proc/net/tcp` or `tcp6` per state, adding to `counts`
/// (index = state - 1, see [`TCP_STATES`]).
pub fn parse_tcp_states(text: &str, counts: &mut [u64; 11]) -> Result<(), ParseError> {
    let mut lines = text.lines();
    let header = lines
        .next()
        .ok_or_else(|| ParseError::new(1, "empty file"))?;
    if header.split_ascii_whitespace().nth(3) != Some("st") {
        return Err(ParseError::new(
            1,
            format!(
                "the fourth column is not 'st': {header:?}",
                header = Excerpt(header)
            ),
        ));
    }
    for (i, line) in lines.enumerate() {
        let Some(st) = line.split_ascii_whitespace().nth(3) else {
            if line.trim().is_empty() {
                continue;
            }
            return Err(ParseError::new(
                i + 2,
                format!("short line {line:?}", line = Excerpt(line)),
            ));
        };
        // Request sockets (NEW_SYN_RECV inside the kernel) are printed as SYN_RECV, so any
        // other value is a format this parser does not know.
        let state = u8::from_str_radix(st, 16)
            .ok()
            .filter(|s| (1..=11).contains(s));
        let state = state.ok_or_else(|| {
            ParseError::new(i + 2, format!("unknown TCP state {st:?}", st = Excerpt(st)))
        })?;
        counts[usize::from(state) - 1] += 1;
    }
    Ok(())
}

pub struct TcpstatCollector {
    tcp: KeptFile,
    tcp6: KeptFile,
    buf: String,
}

impl TcpstatCollector {
    pub fn new(s: &Settings) -> Self {
        TcpstatCollector {
            tcp: KeptFile::new(s.paths.proc("net/tcp")),
            tcp6: KeptFile::new(s.paths.proc("net/tcp6")),
            buf: String::new(),
        }
    }
}

impl Collector for TcpstatCollector {
    fn name(&self) -> &'static str {
        "tcpstat"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        let mut counts = [0u64; 11];
        self.tcp.read_into(&mut self.buf)?;
        parse_tcp_states(&self.buf, &mut counts).map_err(|e| CollectError::parse(&self.tcp, e))?;
        match self.tcp6.read_into(&mut self.buf) {
            Ok(()) => parse_tcp_states(&self.buf, &mut counts)
                .map_err(|e| CollectError::parse(&self.tcp6, e))?,
            // A host without IPv6 has no tcp6: its IPv4 counts are the whole answer.
            Err(e) if e.is_unsupported() => {}
            Err(e) => return Err(e),
        }
        for (state, n) in TCP_STATES.iter().zip(counts) {
            out.push(
                &TCP_CONNECTIONS,
                vec![("state", (*state).to_string())],
                n as f64,
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectors::test_util::value;
    use proptest::prelude::*;

    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1149 1 0 100 0 0 10 0\n\
   1: 0100007F:A1B2 0100007F:07E8 01 00000000:00000000 00:00000000 00000000     0        0 2211 1 0 20 4 30 10 -1\n\
   2: 0100007F:A1B4 0100007F:07E8 06 00000000:00000000 03:00001234 00000000     0        0 0 3 0\n\
   3: 0100007F:A1B6 0100007F:07E8 0B 00000000:00000000 00:00000000 00000000     0        0 2212 1 0\n";

    #[test]
    fn counts_states() {
        let mut c = [0; 11];
        parse_tcp_states(TCP, &mut c).unwrap();
        assert_eq!(c, [1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1]);
        parse_tcp_states(TCP, &mut c).unwrap();
        assert_eq!(c[9], 2, "tcp6 adds to tcp");
        assert_eq!(TCP_STATES[0x0A - 1], "listen");
        assert_eq!(TCP_STATES[0x0B - 1], "closing");
        let header = TCP.lines().next().unwrap();
        assert!(
            parse_tcp_states(&format!("{header}\n"), &mut c).is_ok(),
            "no sockets"
        );
        for bad in [
            "",
            "sl local rem tx\n",
            &format!("{header}\n 0: a b 0C x\n"),
            &format!("{header}\n 0: a b\n"),
        ] {
            assert!(parse_tcp_states(bad, &mut c).is_err(), "{bad:?}");
        }
    }

    /// The value of the sample named `name` whose labels include every pair of `labels`.
    #[test]
    fn on_this_host() {
        // A socket this test owns, so at least one is in LISTEN.
        let _l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpstatCollector::new(&Settings::default());
        let mut out = Scrape::new();
        c.update(&mut out).expect("/proc/net/tcp of this host");
        assert_eq!(out.sample_count(), 11);
        assert!(
            value(
                &out,
                "reveal_network_tcp_connections",
                &[("state", "listen")]
            )
            .unwrap()
                >= 1.0
        );
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC*") {
            let _ = parse_tcp_states(&s, &mut [0; 11]);
        }

        #[test]
        fn never_panics_after_a_good_header(
            s in "( +[0-9]+: [0-9A-F:]{0,13} [0-9A-F:]{0,13} [0-9A-Fa-z]{0,3}( .{0,10})?\n){0,4}"
        ) {
            let _ = parse_tcp_states(&format!("{}\n{s}", TCP.lines().next().unwrap()), &mut [0; 11]);
        }
    }
}
