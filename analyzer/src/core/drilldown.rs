//! Which devices, asked after the fact. A wide host's analyzer reads some per-device metrics
//! only as PromQL aggregates — the busiest CPU's interrupt rate is
//! `max without (cpu) (rate(reveal_cpu_interrupts_total[1s]))`, one series where 96 would
//! cost every pass — so its evidence names no device. When an alert's evidence is such a
//! channel, the service asks Prometheus once, at the alert, for the expression inside the
//! aggregation device by device, during the episode and in the minute before it, and the
//! alert names the devices that moved: "cpu 3 at 60507/s (899/s before), cpu 2 at 60099/s
//! (901/s before) … of 96 CPUs". A device that is always the busiest is not named for it.
//!
//! Pure: the expression's shape ([`PerDevice::parse`]), the questions to ask
//! ([`PerDevice::queries`]), which devices moved in the answers ([`standouts`]) and the
//! words ([`Standouts::sentence`]). The asking is `commands::run::drilldown`.

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

    /// The four questions, each answered per host (`host_label`) and per label set the
    /// aggregate keeps (`keep`: a busy-cores channel per mode keeps `mode`), asked at the
    /// episode's last flagged window: the [`MAX_NAMED`] devices that rose most (fell most
    /// when not `up`) from their mean over the minute before the episode (`start_ms_ago`
    /// before the question) to their mean during it (over `during_ms`), their two means,
    /// and how many devices answer.
    pub fn queries(
        &self,
        host_label: &str,
        keep: &[&str],
        up: bool,
        during_ms: i64,
        start_ms_ago: i64,
    ) -> [String; 4] {
        let mut by = vec![host_label];
        by.extend(
            keep.iter()
                .filter(|k| **k != host_label && **k != self.label),
        );
        let by = by.join(", ");
        let inner = &self.inner;
        let during = format!("avg_over_time(({inner})[{}ms:1s])", during_ms.max(1000));
        let before = format!(
            "avg_over_time(({inner})[{BEFORE_MS}ms:1s] offset {}ms)",
            start_ms_ago.max(0)
        );
        let extreme = if up { "topk" } else { "bottomk" };
        let moved = format!("{extreme} by ({by}) ({MAX_NAMED}, {during} - {before})");
        let of_moved = format!("on ({by}, {}) ({moved})", self.label);
        [
            format!("{during} and {of_moved}"),
            format!("{before} and {of_moved}"),
            format!("count by ({by}) ({inner})"),
            moved,
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

/// How far back "before the episode" reaches.
pub const BEFORE_MS: i64 = 60_000;

/// What Prometheus answered for one host: the devices that moved most, each with its mean
/// during the episode and before it, and how many devices answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answers {
    /// (device, during, before), any order.
    pub moved: Vec<(String, f64, f64)>,
    pub count: usize,
}

/// The devices that moved while their siblings did not.
#[derive(Debug, Clone, PartialEq)]
pub struct Standouts {
    /// The device label (`cpu`).
    pub label: String,
    /// (device, during, before), the largest move first.
    pub devices: Vec<(String, f64, f64)>,
    /// Devices answering.
    pub count: usize,
    /// Unit: the metric read and whether per second.
    pub metric: String,
    pub per_second: bool,
}

/// From the answers (the metric read, `metric`, gives the unit): the devices that moved in
/// the direction `up` by more than a quarter of the larger of their two means (0 → anything,
/// 900 → 60,000 interrupts a second; not 4,000 → 4,200) and by at least half the largest
/// such move. `None` when no device moved so, when more than half of them did (the family
/// moved as a whole: a load on every CPU), for a family of one or two, or for no answer.
pub fn standouts(p: &PerDevice, up: bool, a: Answers, metric: &str) -> Option<Standouts> {
    let sign = if up { 1.0 } else { -1.0 };
    let mut moved: Vec<(String, f64, f64)> = a
        .moved
        .into_iter()
        .filter(|(_, d, b)| {
            d.is_finite() && b.is_finite() && sign * (d - b) > 0.25 * d.abs().max(b.abs())
        })
        .collect();
    if a.count < 3 || moved.is_empty() {
        return None;
    }
    let change = |x: &(String, f64, f64)| sign * (x.1 - x.2);
    moved.sort_by(|x, y| change(y).total_cmp(&change(x)).then(x.0.cmp(&y.0)));
    let largest = change(&moved[0]);
    let devices: Vec<(String, f64, f64)> = moved
        .into_iter()
        .filter(|x| change(x) >= 0.5 * largest)
        .take(MAX_NAMED)
        .collect();
    if devices.len() * 2 > a.count {
        return None;
    }
    Some(Standouts {
        label: p.label.clone(),
        devices,
        count: a.count,
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

    /// "cpu 3 at 60507/s (899/s before), cpu 2 at 60099/s (901/s before) of 96 CPUs".
    pub fn sentence(&self) -> String {
        let f = |v: f64| format_value(&self.metric, v, self.per_second);
        let named: Vec<String> = self
            .devices
            .iter()
            .map(|(d, now, before)| {
                format!("{} at {} ({} before)", self.device(d), f(*now), f(*before))
            })
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
        format!("{}{more} of {} {plural}", named.join(", "), self.count)
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
