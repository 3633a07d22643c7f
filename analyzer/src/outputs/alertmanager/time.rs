//! RFC 3339 timestamps (`2026-11-21T05:32:16.123Z`) for the API's `startsAt`/`endsAt`,
//! without a date-time dependency: the civil date is [`civil_from_days`], the one calendar
//! of the crate.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::core::clock::civil_from_days;

/// UTC, millisecond precision. Times before 1970 are clamped to the epoch (never sent).
pub fn rfc3339(t: SystemTime) -> String {
    let ms = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0) as i64;
    let (days, rem) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (y, m, d) = civil_from_days(days);
    let (h, min, s, frac) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{frac:03}Z")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats_known_instants() {
        let at = |ms: u64| rfc3339(UNIX_EPOCH + Duration::from_millis(ms));
        assert_eq!(at(0), "1970-01-01T00:00:00.000Z");
        // `date -u -d @951782400` → Tue Feb 29 00:00:00 UTC 2000 (a leap day).
        assert_eq!(at(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(at(1_795_239_136_123), "2026-11-21T05:32:16.123Z");
        assert_eq!(at(4_102_444_799_999), "2099-12-31T23:59:59.999Z");
    }
}
