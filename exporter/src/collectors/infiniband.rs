//! InfiniBand (and RoCE) port state, rate and counters from `/sys/class/infiniband`.
//!
//! Layout (<https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-class-infiniband>):
//! ```text
//! /sys/class/infiniband/mlx5_0/ports/1/state          "4: ACTIVE"
//! /sys/class/infiniband/mlx5_0/ports/1/phys_state     "5: LinkUp"
//! /sys/class/infiniband/mlx5_0/ports/1/rate           "100 Gb/sec (4X EDR)"
//! /sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data   "123456"
//! /sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_buffer "0"
//! ```
//! `port_rcv_data` and `port_xmit_data` count 4-byte words (the ABI document says "divided by
//! 4"), converted to bytes here. A counter file that reads "N/A" (not supported by the HCA) or
//! cannot be read is skipped; the other counters of the port are still exposed.
//!
//! The link rate is exposed in bytes per second, not bits: the traffic counters are bytes, so
//! `rate(..._receive_bytes_total) / ..._port_rate_bytes_per_second` is the link utilization
//! with no conversion factor.

use super::sysfs_attr::{Attr, Budget};
use super::sysfs_scan::{found_any, Rescan};
use super::{Collector, Settings};
use crate::error::{CollectError, ParseError};
use crate::read::dir_names;
use crate::scrape::{Desc, Scrape, Unit};
use std::path::PathBuf;
use std::time::Duration;

/// How often devices, ports and counter files are looked up again (a read failure also
/// triggers a new lookup).
const REDISCOVER: Duration = Duration::from_secs(60);

/// The share of the descriptor limit this collector may keep open (see `sysfs_attr`).
const FD_SHARE: usize = 16;

const PORT: &[&str] = &["device", "port"];
const COUNTER: &[&str] = &["device", "port", "counter"];

pub static RX_BYTES: Desc = Desc::counter(
    "reveal_network_infiniband_receive",
    Unit::Bytes,
    PORT,
    "Data bytes received on the port (port_rcv_data x 4).",
);
pub static TX_BYTES: Desc = Desc::counter(
    "reveal_network_infiniband_transmit",
    Unit::Bytes,
    PORT,
    "Data bytes transmitted on the port (port_xmit_data x 4).",
);
pub static RX_PACKETS: Desc = Desc::counter(
    "reveal_network_infiniband_receive_packets",
    Unit::None,
    PORT,
    "Packets received on the port (port_rcv_packets).",
);
pub static TX_PACKETS: Desc = Desc::counter(
    "reveal_network_infiniband_transmit_packets",
    Unit::None,
    PORT,
    "Packets transmitted on the port (port_xmit_packets).",
);
pub static PORT_COUNTER: Desc = Desc::counter(
    "reveal_network_infiniband_port_events",
    Unit::None,
    COUNTER,
    "Other standard port counters (ports/N/counters/*, e.g. symbol_error, link_downed, \
     port_rcv_errors, port_xmit_discards, port_xmit_wait), label counter = file name.",
);
pub static HW_COUNTER: Desc = Desc::counter(
    "reveal_network_infiniband_hw_events",
    Unit::None,
    COUNTER,
    "Driver-specific port counters (ports/N/hw_counters/*, e.g. out_of_buffer, \
     out_of_sequence, rnr_nak_retry_err), label counter = file name.",
);
pub static STATE: Desc = Desc::gauge(
    "reveal_network_infiniband_port_state",
    Unit::None,
    PORT,
    "Logical port state: 1 down, 2 init, 3 armed, 4 active, 5 active defer.",
);
pub static PHYS_STATE: Desc = Desc::gauge(
    "reveal_network_infiniband_port_physical_state",
    Unit::None,
    PORT,
    "Physical port state: 1 sleep, 2 polling, 3 disabled, 4 port configuration training, \
     5 link up, 6 link error recovery, 7 phy test.",
);
pub static RATE: Desc = Desc::gauge(
    "reveal_network_infiniband_port_rate_bytes_per_second",
    Unit::None,
    PORT,
    "Data rate of the port's link (the rate attribute, converted from Gb/s to bytes/s).",
);

pub static METRICS: &[&Desc] = &[
    &RX_BYTES,
    &TX_BYTES,
    &RX_PACKETS,
    &TX_PACKETS,
    &PORT_COUNTER,
    &HW_COUNTER,
    &STATE,
    &PHYS_STATE,
    &RATE,
];

/// hw_counters entries that are settings, not counters.
const NOT_COUNTERS: &[&str] = &["lifespan"];

/// Parses a `state` or `phys_state` attribute, `"4: ACTIVE"`, into its number.
pub fn parse_state(text: &str) -> Result<u64, ParseError> {
    let t = text.trim();
    t.split_once(':')
        .and_then(|(n, _)| n.trim().parse().ok())
        .ok_or_else(|| {
            ParseError::new(
                1,
                format!("{:?} is not 'N: NAME'", crate::error::Excerpt(t)),
            )
        })
}

/// Parses a `rate` attribute, `"100 Gb/sec (4X EDR)"` or `"2.5 Gb/sec (1X SDR)"`, into bytes
/// per second.
pub fn parse_rate(text: &str) -> Result<f64, ParseError> {
    let t = text.trim();
    let bad = || {
        ParseError::new(
            1,
            format!("{:?} is not 'N Gb/sec (...)'", crate::error::Excerpt(t)),
        )
    };
    let mut it = t.split_ascii_whitespace();
    let (Some(n), Some("Gb/sec")) = (it.next(), it.next()) else {
        return Err(bad());
    };
    let gbit: f64 = n.parse().map_err(|_| bad())?;
    if !gbit.is_finite() || gbit < 0.0 {
        return Err(bad());
    }
    Ok(gbit * 1e9 / 8.0)
}

/// Parses a counter file: `Ok(None)` for "N/A" (counter not supported by this HCA).
pub fn parse_counter(text: &str) -> Result<Option<u64>, ParseError> {
    let t = text.trim();
    if t == "N/A" {
        return Ok(None);
    }
    t.parse()
        .map(Some)
        .map_err(|_| ParseError::new(1, format!("{:?} is not a count", crate::error::Excerpt(t))))
}

/// What a counter file becomes.
#[derive(Clone, Copy)]
enum Kind {
    /// A fixed metric, value times the factor.
    Fixed(&'static Desc, f64),
    /// `port_events_total` or `hw_events_total` with the file name as `counter` (a family name
    /// may not contain "counter": promtool rejects a type in the name).
    Named(&'static Desc),
}

struct CounterFile {
    attr: Attr,
    name: String,
    kind: Kind,
}

struct Port {
    device: String,
    port: String,
    state: Attr,
    phys_state: Attr,
    rate: Attr,
    counters: Vec<CounterFile>,
}

pub struct InfinibandCollector {
    root: PathBuf,
    ports: Vec<Port>,
    /// Looks the ports up every [`REDISCOVER`], at once after a failed read.
    rescan: Rescan,
    buf: String,
}

fn standard_kind(name: &str) -> Kind {
    match name {
        // 4-byte words per the ABI document.
        "port_rcv_data" => Kind::Fixed(&RX_BYTES, 4.0),
        "port_xmit_data" => Kind::Fixed(&TX_BYTES, 4.0),
        "port_rcv_packets" => Kind::Fixed(&RX_PACKETS, 1.0),
        "port_xmit_packets" => Kind::Fixed(&TX_PACKETS, 1.0),
        _ => Kind::Named(&PORT_COUNTER),
    }
}

impl InfinibandCollector {
    pub fn new(s: &Settings) -> Self {
        let mut c = InfinibandCollector {
            root: s.paths.sys("class/infiniband"),
            ports: Vec::new(),
            rescan: Rescan::new(REDISCOVER, Duration::ZERO),
            buf: String::new(),
        };
        // A failure here (no InfiniBand on this host) is reported by the first update.
        if c.discover().is_ok() {
            c.rescan.scanned();
        }
        c
    }

    fn discover(&mut self) -> Result<(), CollectError> {
        // Dropping the old ports closes their files before the new ones are opened.
        self.ports.clear();
        // Counters are kept open and re-read with pread (`sysfs_attr`): dozens per port.
        let mut budget = Budget::share_of_limit(FD_SHARE);
        for device in dir_names(&self.root)? {
            let ports_dir = self.root.join(&device).join("ports");
            // A device without ports is being torn down; skip it.
            let Ok(ports) = dir_names(&ports_dir) else {
                continue;
            };
            for port in ports {
                let dir = ports_dir.join(&port);
                let mut counters = Vec::new();
                for (sub, hw) in [("counters", false), ("hw_counters", true)] {
                    let Ok(names) = dir_names(&dir.join(sub)) else {
                        continue;
                    };
                    for name in names
                        .into_iter()
                        .filter(|n| !NOT_COUNTERS.contains(&n.as_str()))
                    {
                        let kind = if hw {
                            Kind::Named(&HW_COUNTER)
                        } else {
                            standard_kind(&name)
                        };
                        counters.push(CounterFile {
                            attr: budget.attr(dir.join(sub).join(&name)),
                            name,
                            kind,
                        });
                    }
                }
                self.ports.push(Port {
                    device: device.clone(),
                    port,
                    state: budget.attr(dir.join("state")),
                    phys_state: budget.attr(dir.join("phys_state")),
                    rate: budget.attr(dir.join("rate")),
                    counters,
                });
            }
        }
        found_any(&self.ports, || self.root.clone(), "no InfiniBand ports")
    }
}

/// Reads and parses one attribute; `None` when it is missing, unreadable or malformed, which
/// only costs this one value (sysfs attributes of a port can fail one by one).
fn read_attr<T>(
    attr: &Attr,
    buf: &mut String,
    parse: fn(&str) -> Result<T, ParseError>,
) -> Option<T> {
    attr.read(buf).ok()?;
    let path = attr.path();
    match parse(buf) {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "skipping malformed attribute");
            None
        }
    }
}

impl Collector for InfinibandCollector {
    fn name(&self) -> &'static str {
        "infiniband"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        let scanned = self.rescan.due().then(|| self.discover());
        self.rescan.check(scanned)?;
        let mut missing = false;
        for p in &self.ports {
            let labels = [p.device.as_str(), p.port.as_str()];
            // Only what the page serves is read (the fast cadence's page serves the traffic).
            if out.wants(&STATE) {
                match read_attr(&p.state, &mut self.buf, parse_state) {
                    Some(v) => out.push_values(&STATE, &labels, v as f64),
                    None => missing = true,
                }
            }
            if out.wants(&PHYS_STATE) {
                if let Some(v) = read_attr(&p.phys_state, &mut self.buf, parse_state) {
                    out.push_values(&PHYS_STATE, &labels, v as f64);
                }
            }
            if out.wants(&RATE) {
                if let Some(v) = read_attr(&p.rate, &mut self.buf, parse_rate) {
                    out.push_values(&RATE, &labels, v);
                }
            }
            for c in &p.counters {
                let desc = match c.kind {
                    Kind::Fixed(desc, _) | Kind::Named(desc) => desc,
                };
                if !out.wants(desc) {
                    continue;
                }
                if c.attr.read(&mut self.buf).is_err() {
                    missing = true;
                    continue;
                }
                // "N/A" and garbage both skip this counter only.
                let Ok(Some(v)) = parse_counter(&self.buf) else {
                    continue;
                };
                match c.kind {
                    Kind::Fixed(desc, factor) => out.push_values(desc, &labels, v as f64 * factor),
                    Kind::Named(desc) => out.push_values(
                        desc,
                        &[p.device.as_str(), p.port.as_str(), c.name.as_str()],
                        v as f64,
                    ),
                }
            }
        }
        if missing {
            // A port or counter went away (driver reload, hotplug): look again next scrape.
            self.rescan.retry_soon();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn states() {
        assert_eq!(parse_state("4: ACTIVE\n"), Ok(4));
        assert_eq!(parse_state("5: LinkUp\n"), Ok(5));
        assert_eq!(parse_state("1: DOWN"), Ok(1));
        assert!(parse_state("ACTIVE\n").is_err());
        assert!(parse_state("x: ACTIVE\n").is_err());
        assert!(parse_state("").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100 Gb/sec (4X EDR)\n"), Ok(12.5e9));
        assert_eq!(parse_rate("2.5 Gb/sec (1X SDR)\n"), Ok(312.5e6));
        assert_eq!(parse_rate("400 Gb/sec (4X NDR)\n"), Ok(50e9));
        assert!(parse_rate("100 Mb/sec\n").is_err());
        assert!(parse_rate("fast Gb/sec\n").is_err());
        assert!(parse_rate("NaN Gb/sec\n").is_err());
        assert!(parse_rate("-1 Gb/sec\n").is_err());
        assert!(parse_rate("").is_err());
    }

    #[test]
    fn counters() {
        assert_eq!(parse_counter("123456\n"), Ok(Some(123456)));
        assert_eq!(parse_counter("N/A\n"), Ok(None));
        assert!(parse_counter("-1\n").is_err());
        assert!(parse_counter("").is_err());
        assert!(
            matches!(standard_kind("port_rcv_data"), Kind::Fixed(d, f) if std::ptr::eq(d, &RX_BYTES) && f == 4.0)
        );
        assert!(
            matches!(standard_kind("symbol_error"), Kind::Named(d) if std::ptr::eq(d, &PORT_COUNTER))
        );
        assert_eq!(
            RATE.family_name(),
            "reveal_network_infiniband_port_rate_bytes_per_second"
        );
    }

    #[test]
    fn no_infiniband_is_unsupported() {
        let dir = std::env::temp_dir().join(format!("reveal-ib-{}", std::process::id()));
        let s = Settings {
            paths: crate::paths::Paths::new(&dir, &dir),
            ..Settings::default()
        };
        let mut c = InfinibandCollector::new(&s);
        let err = c.update(&mut Scrape::new()).unwrap_err();
        assert!(err.is_unsupported(), "{err}");
        // Repeated from the cached lookup, with the same message (so it is logged once).
        let again = c.update(&mut Scrape::new()).unwrap_err();
        assert_eq!(again.to_string(), err.to_string());
    }

    #[test]
    fn reads_a_port_tree() {
        let root = std::env::temp_dir().join(format!("reveal-ib-tree-{}", std::process::id()));
        let port = root.join("class/infiniband/mlx5_0/ports/1");
        let files = [
            ("state", "4: ACTIVE\n"),
            ("phys_state", "5: LinkUp\n"),
            ("rate", "100 Gb/sec (4X EDR)\n"),
            ("counters/port_rcv_data", "1000\n"),
            ("counters/port_xmit_packets", "7\n"),
            ("counters/symbol_error", "2\n"),
            ("counters/VL15_dropped", "N/A\n"),
            ("hw_counters/out_of_buffer", "3\n"),
            ("hw_counters/lifespan", "10\n"),
        ];
        for (f, text) in files {
            std::fs::create_dir_all(port.join(f).parent().unwrap()).unwrap();
            std::fs::write(port.join(f), text).unwrap();
        }
        let s = Settings {
            paths: crate::paths::Paths::new(&root, &root),
            ..Settings::default()
        };
        let mut c = InfinibandCollector::new(&s);
        let mut out = Scrape::new();
        c.update(&mut out).unwrap();
        let _ = std::fs::remove_dir_all(&root);
        let mut got = Vec::new();
        for f in out.families() {
            for smp in &f.samples {
                let labels: Vec<String> =
                    smp.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                got.push(format!(
                    "{} {} {}",
                    f.desc.sample_name(),
                    labels.join(","),
                    smp.value
                ));
            }
        }
        got.sort();
        let want = [
            "reveal_network_infiniband_hw_events_total device=mlx5_0,port=1,counter=out_of_buffer 3",
            "reveal_network_infiniband_port_events_total device=mlx5_0,port=1,counter=symbol_error 2",
            "reveal_network_infiniband_port_physical_state device=mlx5_0,port=1 5",
            "reveal_network_infiniband_port_rate_bytes_per_second device=mlx5_0,port=1 12500000000",
            "reveal_network_infiniband_port_state device=mlx5_0,port=1 4",
            "reveal_network_infiniband_receive_bytes_total device=mlx5_0,port=1 4000",
            "reveal_network_infiniband_transmit_packets_total device=mlx5_0,port=1 7",
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn on_this_host() {
        let mut c = InfinibandCollector::new(&Settings::default());
        match c.update(&mut Scrape::new()) {
            Ok(()) => {}
            Err(e) if e.is_unsupported() => eprintln!("no InfiniBand on this host: {e}"),
            Err(e) => panic!("{e}"),
        }
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC*") {
            let _ = parse_state(&s);
            let _ = parse_rate(&s);
            let _ = parse_counter(&s);
        }
    }
}
