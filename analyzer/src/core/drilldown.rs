//! Which devices, asked after the fact. A wide host's analyzer reads some per-device metrics
//! only as PromQL aggregates — the busiest CPU's interrupt rate is
//! `max without (cpu) (rate(reveal_cpu_interrupts_total[1s]))`, one series where 96 would
//! cost every pass — so its evidence names no device. When an alert's evidence is such a
//! channel, the service asks Prometheus once, at the alert, for the expression inside the
//! aggregation device by device, and the alert names the devices that stand apart from the
//! rest: "cpu 0 at 24612/s, cpu 1 at 24580/s … while the median of 96 CPUs is 41/s".
//!
//! Pure: the expression's shape ([`PerDevice::parse`]), the questions to ask
//! ([`PerDevice::queries`]), which devices stand apart in the answers ([`standouts`]) and
//! the words ([`Standouts::sentence`]). The asking is `commands::run::drilldown`.

use crate::core::families::format_value;
use crate::core::labels::parse_channel;

/// Devices listed at most.
pub const MAX_NAMED: usize = 8;

/// The aggregation over devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agg {
    Max,
    Min,
    Sum,
    Avg,
}

/// A metric-set expression of the form `AGG without (LABEL) (INNER)`: `INNER` is the same
/// quantity per device, `LABEL` names the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerDevice {
    pub agg: Agg,
    pub label: String,
    pub inner: String,
}

impl PerDevice {
    /// `AGG without (LABEL) (INNER)` with one label and nothing after the aggregation's
    /// closing parenthesis; anything else (a `by` grouping, an arithmetic on the aggregate,
    /// several labels) is not read, and names no device.
    pub fn parse(expr: &str) -> Option<PerDevice> {
        let s = expr.trim();
        let (word, rest) = s.split_once(|c: char| c.is_whitespace() || c == '(')?;
        let agg = match word {
            "max" => Agg::Max,
            "min" => Agg::Min,
            "sum" => Agg::Sum,
            "avg" => Agg::Avg,
            _ => return None,
        };
        // `split_once` ate the character after the word; put a `(` back.
        let rest = if s.as_bytes()[word.len()] == b'(' {
            &s[word.len()..]
        } else {
            rest
        };
        let rest = rest.trim_start().strip_prefix("without")?.trim_start();
        let rest = rest.strip_prefix('(')?;
        let (label, rest) = rest.split_once(')')?;
        let label = label.trim();
        if label.is_empty() || !label.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        let rest = rest.trim();
        let body = rest.strip_prefix('(')?;
        // The parenthesis that closes the body must be the expression's last character.
        let close = matching_close(body)?;
        if close + 1 != body.len() {
            return None;
        }
        let inner = body[..close].trim();
        (!inner.is_empty()).then(|| PerDevice {
            agg,
            label: label.to_string(),
            inner: inner.to_string(),
        })
    }

    /// Whether the standing-apart devices are the highest (`max`, or a total that rose) or
    /// the lowest.
    pub fn looks_up(&self, rose: bool) -> bool {
        match self.agg {
            Agg::Max => true,
            Agg::Min => false,
            Agg::Sum | Agg::Avg => rose,
        }
    }

    /// The three questions, each answered once per host (`host_label`) and per label set the
    /// aggregate keeps (`keep`: a busy-cores channel per mode keeps `mode`): the extreme
    /// [`MAX_NAMED`] devices, the median and the count.
    pub fn queries(&self, host_label: &str, keep: &[&str], up: bool) -> [String; 3] {
        let mut by = vec![host_label];
        by.extend(
            keep.iter()
                .filter(|k| **k != host_label && **k != self.label),
        );
        let by = by.join(", ");
        let extreme = if up { "topk" } else { "bottomk" };
        let inner = &self.inner;
        [
            format!("{extreme} by ({by}) ({MAX_NAMED}, {inner})"),
            format!("quantile by ({by}) (0.5, {inner})"),
            format!("count by ({by}) ({inner})"),
        ]
    }

    /// Whether `inner` is a per-second rate (its values read "/s", or "%" of a time).
    pub fn per_second(&self) -> bool {
        ["rate(", "irate(", "deriv("]
            .iter()
            .any(|f| self.inner.contains(f))
    }
}

/// Byte offset of the `)` that closes an already opened `(`, skipping quoted strings.
fn matching_close(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 1usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'"' | b'\'' | b'`') => {
                i += 1;
                while i < b.len() && b[i] != q {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The devices that stand apart from their siblings, in the answers' terms.
#[derive(Debug, Clone, PartialEq)]
pub struct Standouts {
    /// The device label (`cpu`).
    pub label: String,
    /// (device, value), the most extreme first.
    pub devices: Vec<(String, f64)>,
    /// Devices answering, and their median.
    pub count: usize,
    pub median: f64,
    pub up: bool,
    /// Unit: the metric read and whether per second.
    pub metric: String,
    pub per_second: bool,
}

/// What Prometheus answered for one host: the extreme devices (any order), the median of
/// all of them, and how many answered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answers {
    pub extremes: Vec<(String, f64)>,
    pub median: f64,
    pub count: usize,
}

/// From the answers (the metric read, `metric`, gives the unit): the devices
/// at least halfway from the median to the most extreme one, when that one is apart from
/// the median by more than a quarter of the larger of the two (an idle CPU at 0 beside
/// busy ones; 25,000 interrupts a second beside 40). `None` when nothing stands apart — a
/// load on every device, a family of one or two — or the answers are empty.
pub fn standouts(p: &PerDevice, up: bool, a: Answers, metric: &str) -> Option<Standouts> {
    let Answers {
        mut extremes,
        median,
        count,
    } = a;
    extremes.retain(|(_, v)| v.is_finite());
    // Two devices have no median to stand apart from: each is as far from it as the other.
    if count < 3 || !median.is_finite() || extremes.is_empty() {
        return None;
    }
    let sign = if up { 1.0 } else { -1.0 };
    extremes.sort_by(|a, b| (sign * b.1).total_cmp(&(sign * a.1)).then(a.0.cmp(&b.0)));
    let top = extremes[0].1;
    let spread = sign * (top - median);
    if spread <= 0.25 * top.abs().max(median.abs()) {
        return None;
    }
    let devices: Vec<(String, f64)> = extremes
        .into_iter()
        .filter(|(_, v)| sign * (v - median) >= 0.5 * spread)
        .take(MAX_NAMED)
        .collect();
    // More than half the devices apart from their own median cannot happen; a named set
    // that large says the family moved as a whole.
    if devices.len() * 2 > count {
        return None;
    }
    Some(Standouts {
        label: p.label.clone(),
        devices,
        count,
        median,
        up,
        metric: metric.to_string(),
        per_second: p.per_second(),
    })
}

impl Standouts {
    /// A device as the families name it: `cpu 3`, `gpu 5`, `node 1`; a disk or a port by
    /// its own name.
    fn device(&self, v: &str) -> String {
        match self.label.as_str() {
            "cpu" | "gpu" | "node" | "core" => format!("{} {v}", self.label),
            _ => v.to_string(),
        }
    }

    /// "cpu 0 at 24612/s, cpu 1 at 24580/s while the median of 96 CPUs is 41/s".
    pub fn sentence(&self) -> String {
        let f = |v: f64| format_value(&self.metric, v, self.per_second);
        let named: Vec<String> = self
            .devices
            .iter()
            .map(|(d, v)| format!("{} at {}", self.device(d), f(*v)))
            .collect();
        let more = if self.devices.len() == MAX_NAMED {
            " and maybe more"
        } else {
            ""
        };
        let plural = match self.label.as_str() {
            "cpu" | "gpu" => format!("{}s", self.label.to_uppercase()),
            "node" => "NUMA nodes".to_string(),
            "device" => "devices".to_string(),
            other => format!("{other}s"),
        };
        format!(
            "{}{more} while the median of {} {plural} is {}",
            named.join(", "),
            self.count,
            f(self.median)
        )
    }
}

/// The channels named in `text` (a claim, or an episode's description of several claims
/// joined by "; "), in order, that are tagged with `subsystem` (claims read
/// `CHANNEL (subsystem): WORDS`): each with its labels and whether its words say it rose.
pub fn channels_in<'a>(
    text: &'a str,
    subsystem: &str,
) -> impl Iterator<Item = (&'a str, Vec<(String, String)>, bool)> + 'a {
    let tag = format!(" ({subsystem}): ");
    let mut rest = text;
    std::iter::from_fn(move || loop {
        let at = rest.find(&tag)?;
        let head = &rest[..at];
        rest = &rest[at + tag.len()..];
        // The channel starts after the previous claim's "; " (label values may hold spaces).
        let start = head.rfind("; ").map_or(0, |i| i + 2);
        let channel = head[start..].trim();
        if channel.is_empty() {
            continue;
        }
        let words = rest.split("; ").next().unwrap_or("");
        let (name, labels) = parse_channel(channel);
        return Some((name, labels, !words.contains(" lower than")));
    })
}

#[cfg(test)]
mod tests;
