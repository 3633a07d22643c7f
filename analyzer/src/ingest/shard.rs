//! Which hosts one analyzer owns when several split a cluster between them (`--shard i/k`,
//! `source.prometheus.shard`).
//!
//! A host belongs to shard `hashmod(host, k)`, computed exactly as Prometheus' `hashmod`
//! relabeling does (the last 8 bytes of the MD5 of the value, big-endian, modulo `k`), so a
//! replica started with `--shard i/k` owns the same hosts as a scrape job that relabels
//! `instance` (or its `__address__`) with `modulus: k` to shard `i`: the two ways of sharding
//! never disagree.

use std::fmt;
use std::str::FromStr;

use md5::{Digest, Md5};
use serde::{Deserialize, Deserializer};

/// Shard `index` of `count` (`0 ≤ index < count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// The whole cluster: one analyzer owns every host.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Whether this shard owns `host` (the host label's value).
    pub fn owns(&self, host: &str) -> bool {
        self.count <= 1 || hashmod(host, self.count) == self.index
    }
}

/// Prometheus' `hashmod`: the last 8 bytes of MD5(`value`), big-endian, modulo `modulus`.
pub fn hashmod(value: &str, modulus: u64) -> u64 {
    let digest = Md5::digest(value.as_bytes());
    let mut tail = [0u8; 8];
    tail.copy_from_slice(&digest[8..16]);
    u64::from_be_bytes(tail) % modulus.max(1)
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    /// `i/k`: shard `i` (from 0) of `k`.
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || {
            format!("{s:?} is not a shard: expected INDEX/COUNT with 0 ≤ INDEX < COUNT, e.g. 0/3")
        };
        let (i, k) = s.trim().split_once('/').ok_or_else(bad)?;
        let index: u64 = i.trim().parse().map_err(|_| bad())?;
        let count: u64 = k.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl<'de> Deserialize<'de> for Shard {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Shard, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shards Prometheus 2.42 assigned to these `__address__` values with `action: hashmod`
    /// (read from its `/api/v1/targets`), for moduli 3 and 1 000 003.
    const PROMETHEUS: &[(&str, u64, u64)] = &[
        ("node-0:9100", 2, 667_406),
        ("node-1:9100", 0, 951_918),
        ("node-2:9100", 1, 980_034),
        ("gpu-17.rack3:9100", 2, 104_361),
        ("10.0.0.5:19190", 0, 945_749),
        ("a", 1, 616_428),
        ("localhost:9100", 1, 59_902),
    ];

    #[test]
    fn agrees_with_prometheus_hashmod() {
        for &(v, m3, big) in PROMETHEUS {
            assert_eq!(hashmod(v, 3), m3, "{v} mod 3");
            assert_eq!(hashmod(v, 1_000_003), big, "{v} mod 1000003");
        }
    }

    #[test]
    fn every_host_has_exactly_one_owner() {
        let shards: Vec<Shard> = (0..3).map(|i| Shard { index: i, count: 3 }).collect();
        let mut per_shard = [0usize; 3];
        for n in 0..300 {
            let host = format!("host-{n}:9100");
            let owners: Vec<u64> = shards
                .iter()
                .filter(|s| s.owns(&host))
                .map(|s| s.index)
                .collect();
            assert_eq!(owners.len(), 1, "{host}: {owners:?}");
            per_shard[owners[0] as usize] += 1;
        }
        // MD5 spreads hosts evenly: each third within 60–140 of 300.
        assert!(
            per_shard.iter().all(|&n| (60..=140).contains(&n)),
            "{per_shard:?}"
        );
        assert!(Shard::ALL.owns("anything"));
    }

    #[test]
    fn parses_and_refuses() {
        assert_eq!("1/3".parse(), Ok(Shard { index: 1, count: 3 }));
        assert_eq!(" 0 / 1 ".parse(), Ok(Shard::ALL));
        for bad in ["3/3", "1/0", "-1/3", "1", "a/b", "1/3/5", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        assert_eq!(Shard { index: 2, count: 5 }.to_string(), "2/5");
    }
}
