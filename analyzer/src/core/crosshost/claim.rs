//! Plain-language claims of cross-host deviations, in the words of the single-host claims
//! (channel descriptions from [`crate::core::claim`]).

use super::{ColumnKey, Comparison, Method};
use crate::core::claim::describe_channel;
use crate::core::features::Feature;

/// "HugePages (state free) on node1 is far below the other hosts' median
/// (robust z = −8.3)."
pub fn claim(host: &str, key: &ColumnKey, c: &Comparison, pair_other: Option<&str>) -> String {
    let what = match key.feature {
        Feature::Mean => describe_channel(&key.channel),
        f => format!("the {} of {}", f.meaning(), describe_channel(&key.channel)),
    };
    let what = capitalize(&what);
    let dir = if c.value >= c.median {
        "above"
    } else {
        "below"
    };
    match c.method {
        Method::RobustZ => format!(
            "{what} on {host} is far {dir} the other hosts' median ({} vs {}; robust z = {}).",
            num(c.value),
            num(c.median),
            z_text(c.z.unwrap_or(f64::NAN))
        ),
        Method::IdenticalOthers => format!(
            "{what} on {host} is {} where the other {} hosts all have {}.",
            num(c.value),
            c.hosts - 1,
            num(c.median)
        ),
        Method::Pair => format!(
            "{what} differs between the two hosts of the group: {} on {host}, {} on {}; \
             two hosts cannot tell which one is off.",
            num(c.value),
            num(c.median),
            pair_other.unwrap_or("the other")
        ),
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// One decimal and a true minus sign, as the single-host claims write z.
fn z_text(z: f64) -> String {
    if !z.is_finite() {
        return "n/a".to_string();
    }
    let r = (z * 10.0).round() / 10.0;
    if r < 0.0 {
        format!("−{:.1}", -r)
    } else {
        format!("{:.1}", r.abs())
    }
}

/// A value as people read it: integers whole, others to four significant digits.
fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else if x != 0.0 && (x.abs() >= 1e6 || x.abs() < 1e-3) {
        format!("{x:.3e}")
    } else {
        let s = format!("{x:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}
