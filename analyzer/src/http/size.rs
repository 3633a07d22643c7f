//! Sizes in the syntax of Prometheus' `body_size_limit`: a number of bytes with an optional
//! unit, `B`, `KB`, `MB`, `GB`, `TB` (powers of 1024, as Prometheus reads them) or the same
//! with an `i` (`KiB`, `MiB`, …); `0` means no limit.

use std::fmt;

use serde::{Deserialize, Deserializer};

/// A size in bytes; 0 is "no limit" where a limit is meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

impl ByteSize {
    pub const fn mib(n: u64) -> Self {
        ByteSize(n << 20)
    }

    /// The limit it sets: `None` for 0.
    pub fn limit(self) -> Option<u64> {
        (self.0 > 0).then_some(self.0)
    }
}

const UNITS: [(&str, u32); 5] = [("T", 40), ("G", 30), ("M", 20), ("K", 10), ("", 0)];

impl fmt::Display for ByteSize {
    /// The largest unit that divides it exactly (`512MiB`, `1GiB`, `1000B`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.write_str("0");
        }
        for (unit, shift) in UNITS {
            if self.0.is_multiple_of(1u64 << shift) {
                let i = if unit.is_empty() { "" } else { "i" };
                return write!(f, "{}{unit}{i}B", self.0 >> shift);
            }
        }
        unreachable!("a shift of 0 divides every size")
    }
}

/// Parses `512MB`, `1GiB`, `65536`, `0`. Never panics; overflow is an error.
pub fn parse_size(s: &str) -> Result<ByteSize, String> {
    let bad = || format!("{s:?} is not a size (like 0, 65536, 512KB, 64MB, 1GiB)");
    let t = s.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(bad());
    }
    let n: u64 = t[..digits].parse().map_err(|_| bad())?;
    let unit = t[digits..].trim_start();
    let shift = match unit {
        "" | "B" => 0,
        _ => {
            let stem = unit
                .strip_suffix("iB")
                .or_else(|| unit.strip_suffix('B'))
                .ok_or_else(bad)?;
            UNITS
                .iter()
                .find(|(u, _)| !u.is_empty() && *u == stem)
                .map(|(_, s)| *s)
                .ok_or_else(bad)?
        }
    };
    n.checked_mul(1u64 << shift)
        .map(ByteSize)
        .ok_or_else(|| format!("{s:?} is too large"))
}

impl<'de> Deserialize<'de> for ByteSize {
    /// A string with a unit, or a plain number of bytes.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Bytes(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Bytes(n) => Ok(ByteSize(n)),
            Raw::Text(s) => parse_size(&s).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_powers_of_1024_with_or_without_the_i() {
        assert_eq!(parse_size("0"), Ok(ByteSize(0)));
        assert_eq!(parse_size("65536"), Ok(ByteSize(65536)));
        assert_eq!(parse_size("100B"), Ok(ByteSize(100)));
        assert_eq!(parse_size("512KB"), Ok(ByteSize(512 << 10)));
        assert_eq!(parse_size("64MB"), parse_size("64MiB"));
        assert_eq!(parse_size("1GiB"), Ok(ByteSize(1 << 30)));
        assert_eq!(parse_size("2TB"), Ok(ByteSize(2 << 40)));
        assert_eq!(ByteSize(0).limit(), None);
        assert_eq!(ByteSize::mib(1).limit(), Some(1 << 20));
    }

    #[test]
    fn bad_sizes_say_what_is_expected() {
        for s in ["", "MB", "-1MB", "1.5MB", "10 parsecs", "1Mb", "1XB"] {
            let e = parse_size(s).unwrap_err();
            assert!(e.contains("is not a size"), "{s:?}: {e}");
        }
        assert!(parse_size("99999999999TB")
            .unwrap_err()
            .contains("too large"));
    }

    #[test]
    fn printed_in_the_largest_exact_unit() {
        assert_eq!(ByteSize::mib(512).to_string(), "512MiB");
        assert_eq!(ByteSize(1 << 30).to_string(), "1GiB");
        assert_eq!(ByteSize(1000).to_string(), "1000B");
        assert_eq!(ByteSize(0).to_string(), "0");
        for s in ["512MiB", "1GiB", "1000B", "3KiB"] {
            assert_eq!(parse_size(s).unwrap().to_string(), s);
        }
    }
}
