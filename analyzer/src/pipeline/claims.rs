//! Plain-language claims from templates (paper table 4): what moved, in which direction,
//! what the feature means, and how far from the baseline.

use crate::features::Feature;
use crate::matrix::Subsystem;

/// "reveal_cpu_busy_ratio{cpu="3"} (cpu) varies more within the window than its baseline:
/// standard deviation 0.21 vs 0.03 (z = +6.2)."
pub fn claim(
    channel: &str,
    subsystem: Subsystem,
    feature: Feature,
    value: f64,
    baseline: f64,
    z: f64,
) -> String {
    let up = z >= 0.0;
    let pick = |a: &'static str, b: &'static str| if up { a } else { b };
    let what = match feature {
        Feature::Mean => pick("runs at a higher level", "runs at a lower level"),
        Feature::Variance | Feature::StandardDeviation => pick(
            "varies more within the window",
            "varies less within the window",
        ),
        Feature::Minimum => pick("has a higher floor", "dips lower"),
        Feature::Maximum => pick("peaks higher (a spike)", "peaks lower"),
        Feature::Skewness => pick("is skewed further upward", "is skewed further downward"),
        Feature::Kurtosis => pick("is burstier (heavier tails)", "is less bursty"),
        Feature::LinearTrendSlope => pick("trends upward", "trends downward"),
        Feature::LinearTrendIntercept => {
            pick("starts the window higher", "starts the window lower")
        }
        Feature::LinearTrendRvalue => pick(
            "follows a steadier rising trend",
            "follows a steadier falling trend",
        ),
        Feature::AutocorrelationLag1 => pick(
            "shows a higher lag-1 autocorrelation (smoother)",
            "shows a lower lag-1 autocorrelation (choppier)",
        ),
        Feature::MeanAbsChange => pick(
            "changes more from sample to sample",
            "changes less from sample to sample",
        ),
        Feature::AdfTeststat => pick("is less stationary", "is more stationary"),
        Feature::SumValues => pick("counts more events", "counts fewer events"),
    };
    format!(
        "{channel} ({subsystem}) {what} than its baseline: {} {} vs {} (z = {z:+.1})",
        feature.meaning(),
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

    #[test]
    fn claims_read_as_sentences() {
        let c = claim("Busy%", Subsystem::Cpu, Feature::Variance, 4.0, 1.0, 5.24);
        assert_eq!(
            c,
            "Busy% (cpu) varies more within the window than its baseline: within-window variance 4 vs 1 (z = +5.2)"
        );
        let c = claim(
            "x",
            Subsystem::Storage,
            Feature::Maximum,
            2.5e7,
            1200.0,
            9.0,
        );
        assert!(
            c.contains("peaks higher") && c.contains("2.50e7 vs 1200"),
            "{c}"
        );
        assert_eq!(num(f64::NAN), "n/a");
        assert_eq!(num(-0.0001), "-1.00e-4");
    }
}
