//! Socket counts and socket buffer memory per protocol.
//!
//! Format (documented only by its source, `sockstat_seq_show` in
//! <https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git/tree/net/ipv4/proc.c>
//! and `sockstat6_seq_show` in `net/ipv6/proc.c`):
//! ```text
//! /proc/net/sockstat (and sockstat6 with TCP6, UDP6...):
//!   sockets: used 14
//!   TCP: inuse 5 orphan 0 tw 2 alloc 7 mem 1
//!   FRAG: inuse 0 memory 0
//! ```
//! `mem` counts pages; `memory` (FRAG) counts bytes. The page size comes from the auxiliary
//! vector the kernel gave this process (`<procfs>/self/auxv`, `AT_PAGESZ`): it needs no
//! `unsafe` libc call and follows `--path.procfs`; without it, page-based memory is omitted.
//! TCP connections per state are the tcpstat collector's (off by default: they cost a walk of
//! the kernel's whole connection hash table).

use super::{Collector, Settings};
use crate::error::Excerpt;
use crate::error::{CollectError, ParseError};
use crate::read::KeptFile;
use crate::scrape::{Desc, Scrape, Unit};

pub static SOCKETS: Desc = Desc::gauge(
    "reveal_network_sockets",
    Unit::None,
    &["protocol", "state"],
    "Sockets per protocol (TCP, UDP, RAW, FRAG and their IPv6 forms) and state: inuse, orphan \
     (no longer attached to a process), tw (TIME_WAIT), alloc (allocated, incl. not yet in use).",
);
pub static SOCKETS_USED: Desc = Desc::gauge(
    "reveal_network_sockets_used",
    Unit::None,
    &[],
    "Sockets in use, all protocols and families.",
);
pub static SOCKET_MEMORY: Desc = Desc::gauge(
    "reveal_network_socket_memory",
    Unit::Bytes,
    &["protocol"],
    "Memory used by socket buffers per protocol (for FRAG: by IP reassembly queues).",
);

pub static METRICS: &[&Desc] = &[&SOCKETS_USED, &SOCKETS, &SOCKET_MEMORY];

/// The auxiliary vector key of the page size (`include/uapi/linux/auxvec.h`).
const AT_PAGESZ: usize = 6;

/// One `key value` pair of a sockstat line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SockStat<'a> {
    pub protocol: &'a str,
    pub key: &'a str,
    pub value: u64,
}

/// Parses `/proc/net/sockstat` or `sockstat6`, appending each `PROTO: key value ...` pair.
pub fn parse_sockstat<'a>(text: &'a str, out: &mut Vec<SockStat<'a>>) -> Result<(), ParseError> {
    let start = out.len();
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let (protocol, rest) = line.split_once(':').ok_or_else(|| {
            ParseError::new(lineno, format!("no ':' in {line:?}", line = Excerpt(line)))
        })?;
        let mut it = rest.split_ascii_whitespace();
        while let Some(key) = it.next() {
            let v = it.next().ok_or_else(|| {
                ParseError::new(lineno, format!("{protocol}: {key} has no value"))
            })?;
            let value = v.parse().map_err(|_| {
                ParseError::new(
                    lineno,
                    format!("{protocol} {key}: {:?} is not a count", Excerpt(v)),
                )
            })?;
            out.push(SockStat {
                protocol: protocol.trim(),
                key,
                value,
            });
        }
    }
    if out.len() == start {
        return Err(ParseError::new(0, "no socket counts"));
    }
    Ok(())
}

/// Finds `AT_PAGESZ` in an auxiliary vector: native-endian (type, value) word pairs, ended
/// by type 0. The words are this process's `usize`, since `self/auxv` is our own.
pub fn parse_auxv_page_size(auxv: &[u8]) -> Result<u64, ParseError> {
    const W: usize = std::mem::size_of::<usize>();
    let word = |b: &[u8]| usize::from_ne_bytes(b.try_into().unwrap_or([0; W]));
    for pair in auxv.chunks_exact(2 * W) {
        let (key, value) = (word(&pair[..W]), word(&pair[W..]));
        match key {
            0 => break,
            AT_PAGESZ if value.is_power_of_two() => return Ok(value as u64),
            AT_PAGESZ => {
                return Err(ParseError::new(
                    0,
                    format!("page size {value} is not a power of two"),
                ))
            }
            _ => {}
        }
    }
    Err(ParseError::new(0, "no AT_PAGESZ entry"))
}

pub struct SockstatCollector {
    sockstat: KeptFile,
    sockstat6: KeptFile,
    /// Bytes per page for `mem`; `None` when the auxiliary vector could not be read.
    page_size: Option<u64>,
    bufs: [String; 2],
}

impl SockstatCollector {
    pub fn new(s: &Settings) -> Self {
        let auxv = s.paths.proc("self/auxv");
        // Without a page size, page-based memory is left out and everything else still works.
        let page_size = std::fs::read(&auxv)
            .ok()
            .and_then(|b| parse_auxv_page_size(&b).ok());
        if page_size.is_none() {
            tracing::info!(path = %auxv.display(), "no page size: socket memory in pages is not exposed");
        }
        SockstatCollector {
            sockstat: KeptFile::new(s.paths.proc("net/sockstat")),
            sockstat6: KeptFile::new(s.paths.proc("net/sockstat6")),
            page_size,
            bufs: Default::default(),
        }
    }
}

/// Reads a file the host may lack (no IPv6): `Ok(false)` when it is missing.
fn read_optional(path: &KeptFile, buf: &mut String) -> Result<bool, CollectError> {
    match path.read_into(buf) {
        Ok(()) => Ok(true),
        Err(e) if e.is_unsupported() => Ok(false),
        Err(e) => Err(e),
    }
}

impl Collector for SockstatCollector {
    fn name(&self) -> &'static str {
        "sockstat"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        let [b4, b6] = &mut self.bufs;
        self.sockstat.read_into(b4)?;
        let has6 = read_optional(&self.sockstat6, b6)?;
        let mut stats = Vec::with_capacity(32);
        parse_sockstat(b4, &mut stats).map_err(|e| CollectError::parse(&self.sockstat, e))?;
        if has6 {
            parse_sockstat(b6, &mut stats).map_err(|e| CollectError::parse(&self.sockstat6, e))?;
        }
        for s in &stats {
            match (s.protocol, s.key) {
                ("sockets", "used") => out.push1(&SOCKETS_USED, s.value as f64),
                (_, "mem") => {
                    if let Some(page) = self.page_size {
                        out.push_values(
                            &SOCKET_MEMORY,
                            &[s.protocol],
                            s.value as f64 * page as f64,
                        );
                    }
                }
                (_, "memory") => out.push_values(&SOCKET_MEMORY, &[s.protocol], s.value as f64),
                (p, k) => out.push_values(&SOCKETS, &[p, k], s.value as f64),
            }
        }

        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectors::test_util::value;
    use proptest::prelude::*;

    #[test]
    fn sockstat() {
        let text =
            "sockets: used 14\nTCP: inuse 5 orphan 0 tw 2 alloc 7 mem 1\nUDP: inuse 0 mem 0\n\
                    FRAG: inuse 0 memory 0\n";
        let mut v = Vec::new();
        parse_sockstat(text, &mut v).unwrap();
        assert_eq!(v.len(), 10);
        assert_eq!(
            v[0],
            SockStat {
                protocol: "sockets",
                key: "used",
                value: 14
            }
        );
        assert_eq!(
            v[3],
            SockStat {
                protocol: "TCP",
                key: "tw",
                value: 2
            }
        );
        assert_eq!(
            v[5],
            SockStat {
                protocol: "TCP",
                key: "mem",
                value: 1
            }
        );
        parse_sockstat("TCP6: inuse 3\n", &mut v).unwrap();
        assert_eq!(
            v[10],
            SockStat {
                protocol: "TCP6",
                key: "inuse",
                value: 3
            }
        );
        for bad in [
            "",
            "TCP inuse 1\n",
            "TCP: inuse\n",
            "TCP: inuse x\n",
            "TCP: inuse -1\n",
        ] {
            assert!(parse_sockstat(bad, &mut Vec::new()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn auxv() {
        let mut v: Vec<u8> = Vec::new();
        for (k, val) in [
            (33usize, 0x7fffusize),
            (16, 0xbfff),
            (AT_PAGESZ, 4096),
            (0, 0),
        ] {
            v.extend_from_slice(&k.to_ne_bytes());
            v.extend_from_slice(&val.to_ne_bytes());
        }
        assert_eq!(parse_auxv_page_size(&v), Ok(4096));
        assert!(parse_auxv_page_size(&v[..32]).is_err());
        assert!(parse_auxv_page_size(&[]).is_err());
        let real = std::fs::read(crate::paths::Paths::default().proc("self/auxv"))
            .expect("procfs is mounted");
        let page = parse_auxv_page_size(&real).unwrap();
        assert!(page >= 4096 && page.is_power_of_two());
    }

    /// The value of the sample named `name` whose labels include every pair of `labels`.
    #[test]
    fn on_this_host() {
        let mut c = SockstatCollector::new(&Settings::default());
        assert!(c.page_size.is_some(), "AT_PAGESZ from this process's auxv");
        let mut out = Scrape::new();
        c.update(&mut out).expect("/proc/net/sockstat of this host");
        assert!(value(&out, "reveal_network_sockets_used", &[]).unwrap() > 0.0);
        assert!(value(
            &out,
            "reveal_network_sockets",
            &[("protocol", "TCP"), ("state", "inuse")]
        )
        .is_some());
        assert!(value(
            &out,
            "reveal_network_socket_memory_bytes",
            &[("protocol", "TCP")]
        )
        .is_some());
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC*", b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse_sockstat(&s, &mut Vec::new());
            let _ = parse_auxv_page_size(&b);
        }

    }
}
