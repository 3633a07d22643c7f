//! Claims for the offline report: the words an alert uses for the same evidence
//! ([`crate::core::claim::evidence`], [`crate::core::claim::device_evidence`]), plus the size
//! against the baseline that the report has at hand (paper table 4: "exceeds the baseline
//! reference").

/// "reveal_cpu_time_seconds_total{cpu="3",mode="user"} (cpu): within-window variance higher
/// than its baseline (z = 6.2). 0.21 in this window, baseline 0.03." — `claim` being the
/// alert's words, up to "(z = 6.2)".
pub fn with_size(claim: &str, value: f64, baseline: f64) -> String {
    format!(
        "{claim}. {} in this window, baseline {}.",
        num(value),
        num(baseline)
    )
}

/// Compact numbers: 3 significant digits, exponent for very large or small magnitudes.
pub(crate) fn num(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".to_string();
    }
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e6).contains(&a) {
        format!("{v:.2e}")
    } else {
        let s = format!("{v:.3}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s == "-0" {
            "0".to_string()
        } else {
            s.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::features::Feature;
    use crate::core::matrix::Subsystem;

    #[test]
    fn claims_carry_size_against_baseline() {
        let said = crate::core::claim::evidence(
            "reveal_storage_read_bytes_total{device=\"sda\"}",
            Subsystem::Storage,
            Feature::Maximum,
            9.0,
        );
        let c = with_size(&said, 2.5e7, 1200.0);
        assert_eq!(
            c,
            "reveal_storage_read_bytes_total{device=\"sda\"} (storage): maximum higher than its \
             baseline (z = 9.0). 2.50e7 in this window, baseline 1200."
        );
        assert_eq!(num(f64::NAN), "n/a");
        assert_eq!(num(-0.0001), "-1.00e-4");
        assert_eq!(num(0.5), "0.5");
    }
}
