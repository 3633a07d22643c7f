//! Durations in Prometheus syntax: `1h30m`, `100ms`, `0` — units `y w d h m s ms` in that
//! order, each at most once (<https://prometheus.io/docs/prometheus/latest/configuration/configuration/#duration>).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct PromDuration(pub Duration);

impl<'de> Deserialize<'de> for PromDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_duration(&s)
            .map(PromDuration)
            .map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for PromDuration {
    /// Prints back in the same syntax (`1m30s`, `100ms`), so messages quote what users write.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut ms = self.0.as_millis();
        if ms == 0 {
            return f.write_str("0s");
        }
        for (unit, size) in UNITS {
            if ms >= size && (ms / size > 0) {
                write!(f, "{}{unit}", ms / size)?;
                ms %= size;
            }
        }
        Ok(())
    }
}

const UNITS: [(&str, u128); 7] = [
    ("y", 365 * 86_400_000),
    ("w", 7 * 86_400_000),
    ("d", 86_400_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// Parses a Prometheus duration. Never panics; overflow is an error.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("{s:?} is not a duration (like 100ms, 30s, 5m, 1h30m)");
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err(bad());
    }
    let mut rest = s;
    let mut next_unit = 0;
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        let n: u128 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        // "ms" must be tried before "m".
        let (idx, unit) = UNITS
            .iter()
            .enumerate()
            .skip(next_unit)
            .filter(|(_, (u, _))| rest.starts_with(u))
            .max_by_key(|(_, (u, _))| u.len())
            .ok_or_else(bad)?;
        rest = &rest[unit.0.len()..];
        next_unit = idx + 1;
        total = n
            .checked_mul(unit.1)
            .and_then(|v| v.checked_add(total))
            .ok_or_else(bad)?;
    }
    let ms = u64::try_from(total).map_err(|_| bad())?;
    Ok(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_prometheus_durations() {
        let ms = |s| parse_duration(s).map(|d| d.as_millis() as u64);
        assert_eq!(ms("100ms"), Ok(100));
        assert_eq!(ms("3s"), Ok(3000));
        assert_eq!(ms("1h30m"), Ok(5_400_000));
        assert_eq!(ms("1m500ms"), Ok(60_500));
        assert_eq!(ms("2w1d"), Ok(15 * 86_400_000));
        assert_eq!(ms("0"), Ok(0));
        for bad in [
            "",
            "5",
            "s",
            "1.5s",
            "30m1h",
            "1s1s",
            "-1s",
            "1x",
            "10 s",
            "99999999999999999999999y",
            "1ms1s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn display_round_trips() {
        for s in ["100ms", "3s", "1h30m", "1m500ms", "30m", "1d"] {
            assert_eq!(PromDuration(parse_duration(s).unwrap()).to_string(), s);
        }
    }

    #[test]
    fn garbage_never_panics() {
        for s in [
            "\u{0}",
            "1ms\u{fffd}",
            "9".repeat(400).as_str(),
            "1y2w3d4h5m6s7ms8",
            "mmm",
            "1µs",
        ] {
            let _ = parse_duration(s);
        }
    }
}
