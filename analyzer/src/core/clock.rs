//! Times as people read them, from milliseconds since the epoch (UTC): pure formatting, so
//! that what core reports (regime changes, cross-host findings) can name a time without
//! reading a clock. The calendar arithmetic is H. Hinnant's days-to-civil algorithm
//! (<https://howardhinnant.github.io/date_algorithms.html#civil_from_days>), here once for
//! the Markdown reports and the Alertmanager timestamps.

/// `HH:MM:SS` (UTC) of a time in ms since the epoch, with tenths when not whole.
pub fn clock(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let tenths = ms.rem_euclid(1000) / 100;
    let day = secs.rem_euclid(86_400);
    let base = format!("{:02}:{:02}:{:02}", day / 3600, day % 3600 / 60, day % 60);
    if tenths == 0 {
        base
    } else {
        format!("{base}.{tenths}")
    }
}

/// `YYYY-MM-DD` (UTC).
pub fn date(ms: i64) -> String {
    let (y, m, d) = civil_from_days(ms.div_euclid(86_400_000));
    format!("{y:04}-{m:02}-{d:02}")
}

/// (year, month, day) of a day count since 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_render_in_utc() {
        assert_eq!(clock(1_700_000_000_000), "22:13:20");
        assert_eq!(clock(1_700_000_000_500), "22:13:20.5");
        assert_eq!(date(1_700_000_000_000), "2023-11-14");
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(951_782_400_000), "2000-02-29");
        assert_eq!(clock(-1000), "23:59:59");
    }

    #[test]
    fn civil_dates_around_leap_days_and_eras() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(47_481), (2099, 12, 31));
    }
}
