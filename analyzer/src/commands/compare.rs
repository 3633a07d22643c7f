//! Agreement between two sets of anomaly intervals (paper §5.5): length-based IoU and the
//! hit rates *byCount* and *byLength*, as `reveal-analyzer compare A B` prints them.
//!
//! With `I_A`, `I_B` the merged intervals of each side and `L(·)` the total covered length:
//! - `IoU = L(I_A ∩ I_B) / (L(I_A) + L(I_B) − L(I_A ∩ I_B))`;
//! - `byCount(A→B)`: the fraction of A's merged segments that overlap any segment of B;
//! - `byLength(A→B) = L(I_A ∩ I_B) / L(I_A)`.
//!
//! Intervals are half-open `[start, end)` in ms, so segments that only touch do not overlap
//! (window `[0, 3000)` and window `[3000, 6000)` share no instant). Each side is merged first
//! (overlapping or touching intervals become one), as the paper compares *merged* intervals;
//! without the merge, one long episode split into windows would count many times in byCount.
//!
//! Inputs ([`parse_intervals`]) are either the analyzer's JSON-lines report (its `episode`
//! lines; a report without episodes falls back to its flagged `window` lines) or CSV
//! `start,end[,host]` (ms since the epoch, or seconds with a fraction; a header line is
//! allowed). Intervals carry a host, and the comparison is made per host and over all hosts
//! (lengths summed over hosts: host `a`'s episode never overlaps host `b`'s).
//!
//! Undefined ratios (IoU of two empty sets, hit rates of an empty A) are `None`, printed
//! `n/a`: "no anomalies on either side" is agreement of a kind, but not a number to average.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

/// A half-open time interval `[start_ms, end_ms)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Interval {
    pub start_ms: i64,
    pub end_ms: i64,
}

impl Interval {
    pub fn len(&self) -> i64 {
        (self.end_ms - self.start_ms).max(0)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Sorts and merges overlapping or touching intervals; drops empty ones.
pub fn merge(mut v: Vec<Interval>) -> Vec<Interval> {
    v.retain(|i| i.end_ms > i.start_ms);
    v.sort();
    let mut out: Vec<Interval> = Vec::with_capacity(v.len());
    for i in v {
        match out.last_mut() {
            Some(last) if i.start_ms <= last.end_ms => last.end_ms = last.end_ms.max(i.end_ms),
            _ => out.push(i),
        }
    }
    out
}

fn total(v: &[Interval]) -> i64 {
    v.iter().map(Interval::len).sum()
}

/// Length of the intersection of two merged (sorted, disjoint) sets, by a linear sweep.
fn intersection(a: &[Interval], b: &[Interval]) -> i64 {
    let (mut i, mut j, mut sum) = (0, 0, 0i64);
    while i < a.len() && j < b.len() {
        let lo = a[i].start_ms.max(b[j].start_ms);
        let hi = a[i].end_ms.min(b[j].end_ms);
        sum += (hi - lo).max(0);
        if a[i].end_ms < b[j].end_ms {
            i += 1;
        } else {
            j += 1;
        }
    }
    sum
}

/// Segments of merged `a` that overlap some segment of merged `b` by a positive length.
fn hits(a: &[Interval], b: &[Interval]) -> usize {
    a.iter()
        .filter(|x| {
            // First segment of b ending after x starts; it overlaps x iff it starts before x ends.
            let k = b.partition_point(|y| y.end_ms <= x.start_ms);
            k < b.len() && b[k].start_ms < x.end_ms
        })
        .count()
}

/// The measures of §5.5 for one pair of interval sets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Agreement {
    /// Merged segments on each side.
    pub segments_a: usize,
    pub segments_b: usize,
    /// A's segments that overlap B, and B's that overlap A.
    pub hits_a: usize,
    pub hits_b: usize,
    /// Covered lengths (ms) and their intersection.
    pub length_a_ms: i64,
    pub length_b_ms: i64,
    pub intersection_ms: i64,
    pub iou: Option<f64>,
    /// Hit rates of A's segments against B, and the reverse direction.
    pub hit_by_count: Option<f64>,
    pub hit_by_length: Option<f64>,
    pub hit_by_count_b: Option<f64>,
    pub hit_by_length_b: Option<f64>,
}

fn ratio(num: f64, den: f64) -> Option<f64> {
    (den > 0.0).then(|| num / den)
}

/// Compares two interval sets (merged here; the inputs need not be sorted or disjoint).
pub fn agreement(a: Vec<Interval>, b: Vec<Interval>) -> Agreement {
    let (a, b) = (merge(a), merge(b));
    let (la, lb, li) = (total(&a), total(&b), intersection(&a, &b));
    measures(
        (a.len(), b.len()),
        (hits(&a, &b), hits(&b, &a)),
        (la, lb, li),
    )
}

fn measures(segments: (usize, usize), hit: (usize, usize), len: (i64, i64, i64)) -> Agreement {
    let (la, lb, li) = len;
    Agreement {
        segments_a: segments.0,
        segments_b: segments.1,
        hits_a: hit.0,
        hits_b: hit.1,
        length_a_ms: la,
        length_b_ms: lb,
        intersection_ms: li,
        iou: ratio(li as f64, (la + lb - li) as f64),
        hit_by_count: ratio(hit.0 as f64, segments.0 as f64),
        hit_by_length: ratio(li as f64, la as f64),
        hit_by_count_b: ratio(hit.1 as f64, segments.1 as f64),
        hit_by_length_b: ratio(li as f64, lb as f64),
    }
}

/// Per-host and overall agreement of two reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Hosts present on either side, in name order.
    pub hosts: Vec<(String, Agreement)>,
    /// All hosts together (a host's intervals only meet the same host's).
    pub overall: Agreement,
}

/// Host-keyed intervals, as read from one report.
pub type HostIntervals = BTreeMap<String, Vec<Interval>>;

pub fn compare(a: &HostIntervals, b: &HostIntervals) -> Comparison {
    let names: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let get = |m: &HostIntervals, h: &String| m.get(h).cloned().unwrap_or_default();
    let hosts: Vec<(String, Agreement)> = names
        .iter()
        .map(|h| ((*h).clone(), agreement(get(a, h), get(b, h))))
        .collect();
    let sum = |f: fn(&Agreement) -> i64| hosts.iter().map(|(_, g)| f(g)).sum::<i64>();
    let sumc = |f: fn(&Agreement) -> usize| hosts.iter().map(|(_, g)| f(g)).sum::<usize>();
    let (la, lb, li) = (
        sum(|g| g.length_a_ms),
        sum(|g| g.length_b_ms),
        sum(|g| g.intersection_ms),
    );
    let overall = measures(
        (sumc(|g| g.segments_a), sumc(|g| g.segments_b)),
        (sumc(|g| g.hits_a), sumc(|g| g.hits_b)),
        (la, lb, li),
    );
    Comparison { hosts, overall }
}

/// Why an interval file could not be read.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("line {line}: {msg}")]
pub struct ParseError {
    pub line: usize,
    pub msg: String,
}

/// Host name for CSV rows without a host column.
pub const DEFAULT_HOST: &str = "local";

/// Reads intervals from a JSON-lines report or a `start,end[,host]` CSV (decided by the
/// first non-blank character: `{` is JSON). Never panics.
pub fn parse_intervals(text: &str) -> Result<HostIntervals, ParseError> {
    let first = text.trim_start().chars().next();
    if first == Some('{') {
        parse_report(text)
    } else {
        parse_csv(text)
    }
}

#[derive(serde::Deserialize)]
struct ReportLine {
    #[serde(rename = "type")]
    kind: Option<String>,
    host: Option<String>,
    start_ms: Option<i64>,
    end_ms: Option<i64>,
}

fn parse_report(text: &str) -> Result<HostIntervals, ParseError> {
    let mut episodes = HostIntervals::new();
    let mut windows = HostIntervals::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let err = |msg: String| ParseError { line: i + 1, msg };
        let l: ReportLine = serde_json::from_str(line)
            .map_err(|e| err(reveal_schema::excerpt::library_message(&e)))?;
        let target = match l.kind.as_deref() {
            Some("episode") => &mut episodes,
            Some("window") => &mut windows,
            _ => continue,
        };
        let (Some(s), Some(e)) = (l.start_ms, l.end_ms) else {
            return Err(err(
                "an episode or window line needs start_ms and end_ms".into()
            ));
        };
        if e < s {
            return Err(err(format!("end_ms {e} is before start_ms {s}")));
        }
        let host = l.host.unwrap_or_else(|| DEFAULT_HOST.to_string());
        target.entry(host).or_default().push(Interval {
            start_ms: s,
            end_ms: e,
        });
    }
    // Episodes are the merged findings; a report that has none (an older or filtered one)
    // still has its flagged windows, which merge into the same intervals.
    Ok(if episodes.is_empty() {
        windows
    } else {
        episodes
    })
}

/// A time cell as a number; `seconds` says whether the file's times are seconds.
fn parse_time(s: &str, seconds: bool) -> Option<i64> {
    let v: f64 = s.trim().parse().ok()?;
    let ms = if seconds {
        (v * 1000.0).round()
    } else {
        v.round()
    };
    (ms.is_finite() && ms.abs() < 9.0e15).then_some(ms as i64)
}

fn parse_csv(text: &str) -> Result<HostIntervals, ParseError> {
    // Seconds when any time has a fraction or exponent, else integer ms: decided for the
    // whole file, never by the size of one number.
    let seconds = text.lines().any(|l| {
        l.split(',')
            .take(2)
            .any(|c| c.contains(['.', 'e', 'E']) && c.trim().parse::<f64>().is_ok())
    });
    let mut out = HostIntervals::new();
    let mut header_allowed = true;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let err = |msg: String| ParseError { line: i + 1, msg };
        if !(2..=3).contains(&cells.len()) {
            return Err(err(format!(
                "expected start,end[,host], got {} cells",
                cells.len()
            )));
        }
        let first_row = std::mem::replace(&mut header_allowed, false);
        let (s, e) = match (parse_time(cells[0], seconds), parse_time(cells[1], seconds)) {
            (Some(s), Some(e)) => (s, e),
            // A header line (`start,end,host`) is allowed before the first interval.
            _ if first_row && cells[0].parse::<f64>().is_err() => continue,
            _ => return Err(err(format!("bad time in {line:?}"))),
        };
        if e < s {
            return Err(err(format!("end {e} is before start {s}")));
        }
        let host = cells
            .get(2)
            .filter(|h| !h.is_empty())
            .copied()
            .unwrap_or(DEFAULT_HOST);
        out.entry(host.to_string()).or_default().push(Interval {
            start_ms: s,
            end_ms: e,
        });
    }
    Ok(out)
}

fn fmt(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".to_string(), |v| format!("{v:.3}"))
}

/// The comparison as a Markdown table, one row per host and one for all.
pub fn markdown(c: &Comparison, name_a: &str, name_b: &str) -> String {
    let mut s = format!(
        "A = {name_a}\nB = {name_b}\n\n| Host | Segments A / B | IoU | Hit byCount A→B | Hit byLength A→B | Hit byCount B→A | Hit byLength B→A |\n\
         | --- | --- | --- | --- | --- | --- | --- |\n"
    );
    let rows = c
        .hosts
        .iter()
        .map(|(h, g)| (h.as_str(), g))
        .chain(std::iter::once(("(all)", &c.overall)));
    for (h, g) in rows {
        s.push_str(&format!(
            "| {h} | {} / {} | {} | {} | {} | {} | {} |\n",
            g.segments_a,
            g.segments_b,
            fmt(g.iou),
            fmt(g.hit_by_count),
            fmt(g.hit_by_length),
            fmt(g.hit_by_count_b),
            fmt(g.hit_by_length_b)
        ));
    }
    s
}

/// `reveal-analyzer compare A B`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// First interval set: a JSON-lines report of `analyze`, or CSV `start,end[,host]`.
    pub a: std::path::PathBuf,
    /// Second interval set, same formats.
    pub b: std::path::PathBuf,
    /// Print JSON instead of a Markdown table.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command: reads both files and prints the comparison.
pub fn run_cli(args: &CompareArgs) -> Result<String, String> {
    let read = |p: &std::path::Path| -> Result<HostIntervals, String> {
        let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
        parse_intervals(&text).map_err(|e| format!("{}: {e}", p.display()))
    };
    let c = compare(&read(&args.a)?, &read(&args.b)?);
    if args.json {
        serde_json::to_string_pretty(&c).map_err(|e| e.to_string())
    } else {
        Ok(markdown(
            &c,
            &args.a.display().to_string(),
            &args.b.display().to_string(),
        ))
    }
}

#[cfg(test)]
mod tests;
