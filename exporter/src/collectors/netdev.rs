//! Per-interface traffic and error counters from `/proc/net/dev`.
//!
//! Format (<https://docs.kernel.org/networking/statistics.html>, "procfs"):
//! ```text
//! Inter-|   Receive                                                |  Transmit
//!  face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
//!   eth0: 190264568    6668    0    0    0     0          0         0   474531    4057    0    0    0     0       0          0
//! ```
//! The column names are read from the second header line, so a kernel that adds, drops or
//! reorders a column is detected (an unknown name or a count mismatch is an error) instead of
//! having its numbers assigned to the wrong metric.

use super::{Collector, Settings};
use crate::device_filter::DeviceFilter;
use crate::error::Excerpt;
use crate::error::{CollectError, ParseError};
use crate::read::KeptFile;
use crate::scrape::{Desc, Scrape, Unit};

/// Flags of the netdev collector.
#[derive(Debug, Clone, clap::Args)]
pub struct NetdevArgs {
    /// Regular expression of network interfaces to leave out (empty: keep all).
    #[arg(
        id = "collector.netdev.device-exclude",
        long = "collector.netdev.device-exclude",
        value_name = "REGEX",
        default_value = "",
        value_parser = DeviceFilter::parse_flag
    )]
    pub device_exclude: DeviceFilter,
}

impl Default for NetdevArgs {
    fn default() -> Self {
        NetdevArgs {
            device_exclude: DeviceFilter::none(),
        }
    }
}

const LABELS: &[&str] = &["device"];

macro_rules! counter {
    ($name:literal, $unit:expr, $help:literal) => {
        Desc::counter($name, $unit, LABELS, $help)
    };
}

pub static RX_BYTES: Desc = counter!("reveal_network_receive", Unit::Bytes, "Bytes received.");
pub static RX_PACKETS: Desc = counter!(
    "reveal_network_receive_packets",
    Unit::None,
    "Packets received."
);
pub static RX_ERRORS: Desc = counter!(
    "reveal_network_receive_errors",
    Unit::None,
    "Receive errors of any kind."
);
pub static RX_DROPS: Desc = counter!(
    "reveal_network_receive_drops",
    Unit::None,
    "Received packets dropped (no buffer space, unknown protocol, filtered)."
);
pub static RX_FIFO: Desc = counter!(
    "reveal_network_receive_fifo_errors",
    Unit::None,
    "Receive FIFO (ring buffer) overruns."
);
pub static RX_FRAME: Desc = counter!(
    "reveal_network_receive_frame_errors",
    Unit::None,
    "Received frames with bad alignment, length or CRC."
);
pub static RX_COMPRESSED: Desc = counter!(
    "reveal_network_receive_compressed",
    Unit::None,
    "Compressed packets received (CSLIP, PPP)."
);
pub static RX_MULTICAST: Desc = counter!(
    "reveal_network_receive_multicast",
    Unit::None,
    "Multicast packets received."
);
pub static TX_BYTES: Desc = counter!("reveal_network_transmit", Unit::Bytes, "Bytes transmitted.");
pub static TX_PACKETS: Desc = counter!(
    "reveal_network_transmit_packets",
    Unit::None,
    "Packets transmitted."
);
pub static TX_ERRORS: Desc = counter!(
    "reveal_network_transmit_errors",
    Unit::None,
    "Transmit errors of any kind."
);
pub static TX_DROPS: Desc = counter!(
    "reveal_network_transmit_drops",
    Unit::None,
    "Packets dropped on transmit."
);
pub static TX_FIFO: Desc = counter!(
    "reveal_network_transmit_fifo_errors",
    Unit::None,
    "Transmit FIFO underruns."
);
pub static TX_COLLISIONS: Desc = counter!(
    "reveal_network_transmit_collisions",
    Unit::None,
    "Collisions detected on the medium."
);
pub static TX_CARRIER: Desc = counter!(
    "reveal_network_transmit_carrier_errors",
    Unit::None,
    "Transmit carrier losses (link down, bad cable)."
);
pub static TX_COMPRESSED: Desc = counter!(
    "reveal_network_transmit_compressed",
    Unit::None,
    "Compressed packets transmitted (CSLIP, PPP)."
);

pub static METRICS: &[&Desc] = &[
    &RX_BYTES,
    &RX_PACKETS,
    &RX_ERRORS,
    &RX_DROPS,
    &RX_FIFO,
    &RX_FRAME,
    &RX_COMPRESSED,
    &RX_MULTICAST,
    &TX_BYTES,
    &TX_PACKETS,
    &TX_ERRORS,
    &TX_DROPS,
    &TX_FIFO,
    &TX_COLLISIONS,
    &TX_CARRIER,
    &TX_COMPRESSED,
];

/// The metric of a receive column, by its header name.
fn rx_column(name: &str) -> Option<&'static Desc> {
    Some(match name {
        "bytes" => &RX_BYTES,
        "packets" => &RX_PACKETS,
        "errs" => &RX_ERRORS,
        "drop" => &RX_DROPS,
        "fifo" => &RX_FIFO,
        "frame" => &RX_FRAME,
        "compressed" => &RX_COMPRESSED,
        "multicast" => &RX_MULTICAST,
        _ => return None,
    })
}

/// The metric of a transmit column, by its header name.
fn tx_column(name: &str) -> Option<&'static Desc> {
    Some(match name {
        "bytes" => &TX_BYTES,
        "packets" => &TX_PACKETS,
        "errs" => &TX_ERRORS,
        "drop" => &TX_DROPS,
        "fifo" => &TX_FIFO,
        "colls" => &TX_COLLISIONS,
        "carrier" => &TX_CARRIER,
        "compressed" => &TX_COMPRESSED,
        _ => return None,
    })
}

/// `/proc/net/dev`: the metric of each column, and per interface one value per column.
#[derive(Debug, Default, PartialEq)]
pub struct NetDev<'a> {
    pub columns: Vec<&'static Desc>,
    pub devices: Vec<(&'a str, Vec<u64>)>,
}

/// Parses `/proc/net/dev`.
pub fn parse_netdev(text: &str) -> Result<NetDev<'_>, ParseError> {
    let mut lines = text.lines();
    let (Some(_), Some(header)) = (lines.next(), lines.next()) else {
        return Err(ParseError::new(1, "missing the two header lines"));
    };
    let mut parts = header.split('|');
    let (Some(_), Some(rx), Some(tx), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ParseError::new(
            2,
            format!(
                "header is not 'face |receive|transmit': {header:?}",
                header = Excerpt(header)
            ),
        ));
    };
    let mut nd = NetDev::default();
    for (names, lookup) in [(rx, rx_column as fn(&str) -> _), (tx, tx_column)] {
        for name in names.split_ascii_whitespace() {
            let desc = lookup(name)
                .ok_or_else(|| ParseError::new(2, format!("unknown column {:?}", Excerpt(name))))?;
            if nd.columns.contains(&desc) {
                return Err(ParseError::new(
                    2,
                    format!("column {:?} twice", Excerpt(name)),
                ));
            }
            nd.columns.push(desc);
        }
    }
    for (i, line) in lines.enumerate() {
        let lineno = i + 3;
        if line.trim().is_empty() {
            continue;
        }
        // Counters never contain ':', so the last one ends the interface name (which is not
        // always followed by a space when the first number is wide).
        let (name, rest) = line.rsplit_once(':').ok_or_else(|| {
            ParseError::new(lineno, format!("no ':' in {line:?}", line = Excerpt(line)))
        })?;
        let name = name.trim();
        let mut values = Vec::with_capacity(nd.columns.len());
        for f in rest.split_ascii_whitespace() {
            values.push(f.parse::<u64>().map_err(|_| {
                ParseError::new(
                    lineno,
                    format!("{name}: {f:?} is not a count", f = Excerpt(f)),
                )
            })?);
        }
        if values.len() != nd.columns.len() || name.is_empty() {
            return Err(ParseError::new(
                lineno,
                format!(
                    "{name:?}: {} values for {} columns",
                    values.len(),
                    nd.columns.len(),
                    name = Excerpt(name)
                ),
            ));
        }
        nd.devices.push((name, values));
    }
    Ok(nd)
}

pub struct NetdevCollector {
    path: KeptFile,
    exclude: DeviceFilter,
    buf: String,
}

impl NetdevCollector {
    pub fn new(s: &Settings) -> Self {
        NetdevCollector {
            path: KeptFile::new(s.paths.proc("net/dev")),
            exclude: s.netdev.device_exclude.clone(),
            buf: String::new(),
        }
    }
}

impl Collector for NetdevCollector {
    fn name(&self) -> &'static str {
        "netdev"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        self.path.read_into(&mut self.buf)?;
        let nd = parse_netdev(&self.buf).map_err(|e| CollectError::parse(&self.path, e))?;
        for (name, values) in nd.devices.iter().filter(|(n, _)| !self.exclude.matches(n)) {
            for (desc, v) in nd.columns.iter().zip(values) {
                out.push_values(desc, &[name], *v as f64);
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

    const HEADER: &str = "Inter-|   Receive                                                |  Transmit\n \
face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n";

    #[test]
    fn parses_by_header() {
        let text = format!(
            "{HEADER}    lo:    3193      29    0    0    0     0          0         0     3193      29    0    0    0     0       0          0\n  \
             eth0:190264568    6668    1    2    3     4          5         6   474531    4057    7    8    9    10      11         12\n"
        );
        let nd = parse_netdev(&text).unwrap();
        assert_eq!(nd.columns.len(), 16);
        assert_eq!(nd.devices.len(), 2);
        let (name, v) = &nd.devices[1];
        assert_eq!(*name, "eth0");
        let get = |d: &Desc| v[nd.columns.iter().position(|c| std::ptr::eq(*c, d)).unwrap()];
        assert_eq!(get(&RX_BYTES), 190264568);
        assert_eq!(get(&RX_MULTICAST), 6);
        assert_eq!(get(&TX_BYTES), 474531);
        assert_eq!(get(&TX_COLLISIONS), 10);
        assert_eq!(get(&TX_CARRIER), 11);
        assert_eq!(get(&TX_COMPRESSED), 12);
        assert_eq!(
            TX_COLLISIONS.sample_name(),
            "reveal_network_transmit_collisions_total"
        );
        assert_eq!(RX_BYTES.sample_name(), "reveal_network_receive_bytes_total");
    }

    #[test]
    fn follows_a_reordered_header_and_rejects_changed_ones() {
        let text = "x\n face |packets bytes|bytes packets\n  eth0: 1 2 3 4\n";
        let nd = parse_netdev(text).unwrap();
        assert!(std::ptr::eq(nd.columns[0], &RX_PACKETS));
        assert_eq!(nd.devices[0].1, vec![1, 2, 3, 4]);
        assert!(parse_netdev("x\n face |bytes newcol|bytes\n eth0: 1 2 3\n").is_err());
        assert!(parse_netdev("x\n face |bytes|bytes\n eth0: 1 2 3\n").is_err());
        assert!(parse_netdev("x\n face |bytes|bytes\n eth0: 1\n").is_err());
        assert!(parse_netdev("x\n face |bytes bytes|bytes\n eth0: 1 2 3\n").is_err());
        assert!(parse_netdev("x\n face |bytes|bytes\n eth0 1 2\n").is_err());
        assert!(parse_netdev("x\n face |bytes|bytes\n eth0: 1 -2\n").is_err());
        assert!(parse_netdev("x\n face bytes bytes\n").is_err());
        assert!(parse_netdev("").is_err());
    }

    #[test]
    fn filter() {
        let f = DeviceFilter::new("^(lo|veth.*)$").unwrap();
        assert!(f.matches("lo") && f.matches("veth12") && !f.matches("eth0"));
        assert!(!NetdevArgs::default().device_exclude.matches("lo"));
    }

    #[test]
    fn on_this_host() {
        let mut c = NetdevCollector::new(&Settings::default());
        let mut out = Scrape::new();
        c.update(&mut out).expect("/proc/net/dev of this host");
        // Loopback exists in every network namespace.
        assert!(value(
            &out,
            "reveal_network_receive_bytes_total",
            &[("device", "lo")]
        )
        .is_some());
        assert!(value(
            &out,
            "reveal_network_transmit_collisions_total",
            &[("device", "lo")]
        )
        .is_some());
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC*") {
            let _ = parse_netdev(&s);
        }

        #[test]
        fn never_panics_after_a_good_header(s in "[a-z0-9: -]{0,80}(\n[a-z0-9: ]{0,80}){0,4}") {
            let _ = parse_netdev(&format!("{HEADER}{s}"));
        }
    }
}
