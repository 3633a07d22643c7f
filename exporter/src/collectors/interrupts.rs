//! Hardware interrupts per CPU, and the busiest IRQ lines, from `/proc/interrupts`.
//!
//! Format (<https://docs.kernel.org/filesystems/proc.html>, section 1.2 "/proc/interrupts"):
//! ```text
//!            CPU0       CPU1       CPU3
//!  24:          1          0          7  IO-APIC   5-edge      ACPI:Ged
//! LOC:      18769      19559      20011   Local timer interrupts
//! ERR:          0
//! ```
//! The header names the online CPUs (an offline CPU has no column, so positions are not CPU
//! numbers). Each line is an IRQ name, one count per online CPU, then a free-form description
//! (chip, hardware IRQ, trigger, device). A few architecture lines (`ERR`, `MIS`) hold one
//! count for the whole system instead of one per CPU: they count towards their line only.
//!
//! Why the collector keeps state: every cell of the file is an `unsigned int` in the kernel and
//! wraps at 2^32 (a 100 k/s NVMe or NIC vector wraps in half a day). One wrapping cell would
//! make a *sum* over lines or CPUs drop by 4 Gi, which Prometheus reads as a counter reset and
//! turns into a huge false rate. So each cell's previous value is kept and the exposed sums
//! grow by each cell's delta modulo 2^32, which keeps them monotonic. A line whose device
//! changes (IRQ number freed and reused) starts from zero again.
//!
//! Cost on a wide host: the file has a line per vector and a column per online CPU, about
//! 1,200 lines and 115,000 counts (1.3 MB) on a 96-CPU node with 8 NVMe disks (a queue per CPU
//! each) and 4 mlx5 HCAs (a completion vector per CPU each). All of it is read and folded on
//! each read: the per-CPU sums need every cell's delta, and each line's total comes with
//! them at no extra cost, so reading the per-line detail at a slower cadence than the sums
//! would save nothing. The parse is one pass over the bytes (no UTF-8 check of the digits): a
//! line in the kernel's layout has its counts in fixed 11-character columns, each read where
//! it must be without searching and independently of the one before (a column of `0`, most
//! of them, by one comparison); other spacing is read token by token. A line's counts go
//! through one reused buffer straight into the sums, and a line is matched with the state at
//! the same position of the previous read, so nothing is allocated while the set of lines
//! stays the same. Only the top lines are exposed one by one. What remains is the kernel's
//! own printing of the file: reads are spaced so that they take at most
//! `--collector.interrupts.max-cpu-percent` of a core (`read_budget`; every scrape on a small
//! host) and at least `--collector.interrupts.min-interval-ms` apart.
//!
//! Bad input is counted, not fatal: a line whose counts do not match the header (a CPU went
//! online or offline while the kernel printed the file, which it does without holding CPU
//! hotplug off), without a `:` or without a count, or beyond [`MAX_LINES`], is left out of
//! the sums and counted in `reveal_cpu_irq_lines_skipped_total`; a skipped line keeps its
//! state, so its interrupts are counted when it is next read whole. Lines that appear start
//! from their count (the interrupts since the vector was set up), lines that vanish are
//! forgotten, and a header whose columns change (hotplug between scrapes) is read by CPU number.
//! Only a file whose header is not `CPUn` columns, or that has no usable line, fails the update.

use super::read_budget::{thread_cpu, ReadBudget};
use super::{Collector, Settings};
use crate::error::Excerpt;
use crate::error::{CollectError, ParseError};
use crate::read::KeptFile;
use crate::scrape::{index_str, Desc, Scrape, Unit};
use std::collections::HashMap;
use std::ops::Range;
use std::time::{Duration, Instant};

/// Flags of the interrupts collector.
#[derive(Debug, Clone, clap::Args)]
pub struct InterruptsArgs {
    /// Number of IRQ lines, the busiest since boot, exposed one by one in
    /// reveal_cpu_irq_line_interrupts_total (0 turns the per-line series off). Every line is
    /// read either way: the per-CPU sums need all of them.
    #[arg(long = "collector.interrupts.top", default_value_t = DEFAULT_TOP)]
    pub top: usize,
    /// Read /proc/interrupts at most once per this many milliseconds; the scrapes in between
    /// expose the values of the last read (0: as often as
    /// --collector.interrupts.max-cpu-percent allows). On a host with many CPUs and vectors
    /// the kernel's printing of the file, a count per line and CPU, can cost more than the
    /// rest of the scrape: 1000 reads it once a second under 100 ms scraping.
    #[arg(long = "collector.interrupts.min-interval-ms", default_value_t = 0)]
    pub min_interval_ms: u64,
    /// Read /proc/interrupts no more often than keeps its reads within this percent of one
    /// core, from how long the last reads took (the median of five); the scrapes in between
    /// expose the values of the last read (0: no bound). A small host reads it on every
    /// scrape; a wide one, whose file has a count per vector and CPU, less often.
    #[arg(long = "collector.interrupts.max-cpu-percent", default_value_t = DEFAULT_MAX_CPU_PERCENT)]
    pub max_cpu_percent: f64,
}

/// A quarter of the exporter's 2 % of a core on a wide host (`read_budget`).
pub const DEFAULT_MAX_CPU_PERCENT: f64 = 0.5;

/// Enough to show the few vectors of an IRQ storm without a series per line of a big host.
pub const DEFAULT_TOP: usize = 16;

impl Default for InterruptsArgs {
    fn default() -> Self {
        InterruptsArgs {
            top: DEFAULT_TOP,
            min_interval_ms: 0,
            max_cpu_percent: DEFAULT_MAX_CPU_PERCENT,
        }
    }
}

pub static CPU_INTERRUPTS: Desc = Desc::counter(
    "reveal_cpu_interrupts",
    Unit::None,
    &["cpu"],
    "Hardware interrupts handled by each CPU, summed over all IRQ lines.",
);
pub static LINE_INTERRUPTS: Desc = Desc::counter(
    "reveal_cpu_irq_line_interrupts",
    Unit::None,
    &["irq", "device"],
    "Interrupts of each of the busiest IRQ lines (by count since boot), summed over CPUs.",
);
pub static LINES: Desc = Desc::gauge(
    "reveal_cpu_irq_lines",
    Unit::None,
    &[],
    "IRQ lines of /proc/interrupts summed into reveal_cpu_interrupts_total at the last scrape \
     (the busiest of them are also exposed one by one).",
);
pub static LINES_SKIPPED: Desc = Desc::counter(
    "reveal_cpu_irq_lines_skipped",
    Unit::None,
    &[],
    "Lines of /proc/interrupts left out of the sums: counts that do not match the header \
     (a CPU went online or offline while the file was read), no count, or beyond the \
     collector's bound on lines. A skipped line is counted when next read whole.",
);

pub static METRICS: &[&Desc] = &[&CPU_INTERRUPTS, &LINE_INTERRUPTS, &LINES, &LINES_SKIPPED];

/// Largest CPU number accepted in the header (Linux's `NR_CPUS` is at most 8192).
const MAX_CPU: u32 = 65_535;

/// Most IRQ lines the collector keeps state for; further lines are skipped and counted. A big
/// host has a few thousand; the state costs 8 bytes per line and CPU.
pub const MAX_LINES: usize = 16_384;

/// Most counts kept (lines × CPUs seen), 64 MiB of state: 4,096 lines on a 2,048-CPU host.
/// Lines past it are skipped and counted, as past [`MAX_LINES`].
pub const MAX_CELLS: usize = 1 << 23;

/// Most different CPU numbers the collector keeps sums for (Linux's `NR_CPUS` is at most 8192):
/// a file whose header would go past it fails the update.
const MAX_SLOTS: usize = 8192;

const NO_SLOT: u32 = u32::MAX;

/// Why a line of the body was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// No `NAME:` at the start of the line.
    NoName,
    /// A name but no count after it.
    NoCount,
    /// Neither one count per CPU of the header nor a single system-wide count (a numbered
    /// line is always per CPU): the CPU set changed while the file was printed, or a layout
    /// this parser does not know. Holds the number of counts found (up to one past the header).
    Columns(usize),
    /// Beyond [`MAX_LINES`] or [`MAX_CELLS`].
    TooMany,
}

/// One line of the body as byte ranges of the text; its counts are in the caller's buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct LineRef {
    /// The first column without its colon: `24`, `LOC`, `ERR`.
    pub irq: Range<usize>,
    /// The text after the counts, trimmed; empty when there is none.
    pub device: Range<usize>,
    /// Whether the line has one count per online CPU (false for system-wide lines like `ERR`).
    pub per_cpu: bool,
}

/// What one line of the body holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// Nothing but blanks.
    Blank,
    Line(LineRef),
    /// Left out; `irq` is the line's name when it has one.
    Skip {
        irq: Option<Range<usize>>,
        problem: Problem,
    },
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// The first byte at or after `i` that is not a blank (or `b.len()`). The count columns are
/// padded to 11 characters, most of them spaces, so spaces are skipped sixteen at a time.
fn skip_blanks(b: &[u8], mut i: usize) -> usize {
    const SPACES: u128 = u128::from_le_bytes([b' '; 16]);
    while let Some(chunk) = b.get(i..).and_then(|r| r.first_chunk::<16>()) {
        let x = u128::from_le_bytes(*chunk) ^ SPACES;
        if x != 0 {
            // The first byte that is not a space, in memory order.
            i += (x.trailing_zeros() / 8) as usize;
            break;
        }
        i += 16;
    }
    while i < b.len() && is_blank(b[i]) {
        i += 1;
    }
    i
}

/// The end of the line that holds `i`: the index of its `\n`, or `b.len()`. Eight bytes at a
/// time: a line left out is skipped whole, and on a wide host a line is a kilobyte.
fn line_end(b: &[u8], mut i: usize) -> usize {
    const NEWLINES: u64 = u64::from_le_bytes([b'\n'; 8]);
    const LOW: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_le_bytes([0x80; 8]);
    while let Some(chunk) = b.get(i..).and_then(|r| r.first_chunk::<8>()) {
        let x = u64::from_le_bytes(*chunk) ^ NEWLINES;
        // The lowest byte that is zero (a newline) sets the lowest flagged bit; borrows only
        // flag bytes above it.
        let zero = x.wrapping_sub(LOW) & !x & HIGH;
        if zero != 0 {
            return i + (zero.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < b.len() && b[i] != b'\n' {
        i += 1;
    }
    i.min(b.len())
}

/// A count at `i`: its value and where it ends, when the token there is all digits (and fits
/// in 64 bits) up to a blank or the end of the line.
fn count_at(b: &[u8], i: usize) -> Option<(u64, usize)> {
    if let Some(chunk) = b.get(i..).and_then(|r| r.first_chunk::<8>()) {
        if let Some(found) = short_count(u64::from_le_bytes(*chunk)) {
            return found.map(|(v, len)| (v, i + len));
        }
    }
    let start = i;
    let mut i = i;
    let mut v: u64 = 0;
    while let Some(&c) = b.get(i) {
        if !c.is_ascii_digit() {
            break;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
        i += 1;
    }
    let ends = match b.get(i) {
        None => true,
        Some(&c) => is_blank(c) || c == b'\n',
    };
    (i > start && ends).then_some((v, i))
}

/// A count of at most seven digits at the start of the eight bytes `w` (little-endian):
/// `Some(Some((value, digits)))`, `Some(None)` when they start with no count, and `None`
/// when all eight are digits (the caller reads on byte by byte). Most counts of a big host's
/// file are a single `0`.
fn short_count(w: u64) -> Option<Option<(u64, usize)>> {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    // Digits become 0..=9, and only digits do.
    let t = w ^ (ONES * u64::from(b'0'));
    // The high bit of each byte that is not a digit: 0x7f + 0x76 carries into the high bit
    // exactly for 10..=0x7f, never into the next byte; bytes with the high bit set keep it.
    let not_digit = (((t & (ONES * 0x7f)) + ONES * 0x76) | t) & (ONES * 0x80);
    if not_digit == 0 {
        return None;
    }
    let len = (not_digit.trailing_zeros() / 8) as usize;
    let after = (w >> (8 * len)) as u8;
    if len == 0 || !(is_blank(after) || after == b'\n') {
        return Some(None);
    }
    if len == 1 {
        return Some(Some((t & 0xf, 1)));
    }
    // The digits, most significant first in memory, moved to the top bytes so the bytes
    // below them are leading zeros.
    let d = (t << (8 * (8 - len))) & (ONES * 0x0f);
    Some(Some((eight_digits(d), len)))
}

/// The counts of a line printed as the kernel prints them: each count right-aligned in a
/// column of 11 characters after the colon (`": "` then `"%10u "` per CPU, or `":"` then
/// `" %10u"` in newer kernels; the header's `CPU%-8d` columns line up with them). Each column
/// is read where it must be, without searching, and independently of the one before, which
/// is most of the parse's cost on a wide host. Pushes `ncpu` counts and returns the end of
/// the last column, or `None` (and pushes nothing) when a column is not blanks then digits
/// (other spacing, a tab, a count wider than 10 digits): the caller reads token by token.
fn fixed_counts(b: &[u8], colon: usize, ncpu: usize, counts: &mut Vec<u64>) -> Option<usize> {
    const ONES: u128 = u128::from_le_bytes([0x01; 16]);
    const HIGH: u128 = ONES * 0x80;
    // The 11 bytes of a column, and their high bits.
    const CELL: u128 = (1 << 88) - 1;
    const CELL_HIGH: u128 = HIGH & CELL;
    const ZERO: u128 = u128::from_le_bytes(*b"          0\0\0\0\0\0");
    let first = colon + 1;
    let end = first + 11 * ncpu;
    // The last column is read as 16 bytes.
    if end + 5 > b.len() {
        return None;
    }
    let mut ok = true;
    for k in 0..ncpu {
        let p = first + 11 * k;
        let chunk = b.get(p..).and_then(|r| r.first_chunk::<16>())?;
        let w = u128::from_le_bytes(*chunk) & CELL;
        if w == ZERO {
            // Most columns of a wide host: a vector is bound to one CPU and 0 on the others.
            counts.push(0);
            continue;
        }
        // Digits become 0..=9 and spaces 0x10: both are their value after `& 0x0f`.
        let t = w ^ (ONES * u128::from(b'0'));
        let digit = !((((t & (ONES * 0x7f)) + ONES * 0x76) | t) & HIGH) & CELL_HIGH;
        let x = w ^ (ONES * u128::from(b' '));
        let space = !((((x & (ONES * 0x7f)) + ONES * 0x7f) | x) & HIGH) & CELL_HIGH;
        // Blanks then digits: the first byte a space, the last a digit, every byte one of the
        // two, and no space after a digit.
        ok &= (digit | space) == CELL_HIGH
            && space & 0x80 != 0
            && digit & (0x80 << 80) != 0
            && (digit << 8) & space == 0;
        let d = t & (ONES * 0x0f);
        // Bytes 3..=10 as eight digits, most significant first; bytes 1 and 2 above them.
        let low = eight_digits((d >> 24) as u64);
        let high = ((d >> 8) as u64 & 0xf) * 1_000_000_000 + ((d >> 16) as u64 & 0xf) * 100_000_000;
        counts.push(high + low);
    }
    if !ok {
        counts.clear();
        return None;
    }
    Some(end)
}

/// The number written by eight digit values (0..=9), one per byte, the most significant in
/// the lowest byte: pairs, then quads, then all eight are combined by multiplications.
fn eight_digits(d: u64) -> u64 {
    let d = (d.wrapping_mul(10 * 256 + 1) >> 8) & 0x00ff_00ff_00ff_00ff;
    let d = (d.wrapping_mul(100 * 65_536 + 1) >> 16) & 0x0000_ffff_0000_ffff;
    d.wrapping_mul(10_000 * (1 << 32) + 1) >> 32
}

/// Parses the header line: the CPU number of each count column, into `cpus` (cleared first).
pub fn parse_header(line: &[u8], cpus: &mut Vec<u32>) -> Result<(), ParseError> {
    cpus.clear();
    for name in line
        .split(|c| c.is_ascii_whitespace())
        .filter(|t| !t.is_empty())
    {
        let cpu = name
            .strip_prefix(b"CPU")
            .filter(|n| !n.is_empty() && n.iter().all(u8::is_ascii_digit))
            .and_then(|n| std::str::from_utf8(n).ok()?.parse::<u32>().ok());
        let name = String::from_utf8_lossy(name);
        let Some(cpu) = cpu else {
            return Err(ParseError::new(
                1,
                format!("header column {:?} is not CPUn", Excerpt(&name)),
            ));
        };
        // The collector keeps one slot per CPU number up to the largest: a garbage header
        // (`CPU4000000000`) must not allocate gigabytes.
        if cpu > MAX_CPU {
            return Err(ParseError::new(
                1,
                format!(
                    "header column {:?}: CPU number above {MAX_CPU}",
                    Excerpt(&name)
                ),
            ));
        }
        cpus.push(cpu);
    }
    if cpus.is_empty() {
        return Err(ParseError::new(1, "header names no CPU"));
    }
    Ok(())
}

/// Parses the line of the body that starts at `start`, for a header of `ncpu` columns, its
/// counts into `counts` (cleared first). Returns what the line holds and where the next
/// line starts.
///
/// Leading counts are taken up to one past the header's: the description may hold numbers
/// too (`IO-APIC 5-edge`, `GICv3 27 Level`), but the kernel starts it with the chip's name,
/// so a count in the place of the name means the line has more columns than the header.
pub fn parse_line(b: &[u8], start: usize, ncpu: usize, counts: &mut Vec<u64>) -> (Body, usize) {
    counts.clear();
    // The line's end is found on the way: blanks and counts stop at a newline.
    let next = |end: usize| (end + 1).min(b.len());
    let name_start = skip_blanks(b, start);
    if name_start >= b.len() || b[name_start] == b'\n' {
        return (Body::Blank, next(name_start));
    }
    let mut i = name_start;
    while i < b.len() && b[i] != b':' && b[i] != b'\n' && !is_blank(b[i]) {
        i += 1;
    }
    if i == name_start || b.get(i) != Some(&b':') {
        let problem = Problem::NoName;
        return (Body::Skip { irq: None, problem }, next(line_end(b, i)));
    }
    let irq = name_start..i;
    if let Some(after) = fixed_counts(b, i, ncpu, counts) {
        i = after;
    } else {
        i += 1;
    }
    // Token by token: all the counts, or after the fixed columns one more if there is one.
    while counts.len() <= ncpu {
        let at = skip_blanks(b, i);
        let Some((v, after)) = count_at(b, at) else {
            break;
        };
        counts.push(v);
        i = after;
    }
    let numbered = b[irq.clone()].iter().all(u8::is_ascii_digit);
    let per_cpu = counts.len() == ncpu;
    let system_wide = counts.len() == 1 && !numbered;
    if !per_cpu && !system_wide {
        let problem = match counts.len() {
            0 => Problem::NoCount,
            n => Problem::Columns(n),
        };
        let irq = Some(irq);
        return (Body::Skip { irq, problem }, next(line_end(b, i)));
    }
    let d0 = skip_blanks(b, i);
    let end = line_end(b, d0);
    let mut d1 = end;
    while d1 > d0 && b[d1 - 1].is_ascii_whitespace() {
        d1 -= 1;
    }
    let line = LineRef {
        irq,
        device: d0..d1,
        per_cpu,
    };
    (Body::Line(line), next(end))
}

/// One line of `/proc/interrupts`; its counts are `Interrupts::counts[start..start + len]`.
#[derive(Debug, Clone, PartialEq)]
pub struct IrqLine<'a> {
    /// The first column without its colon: `24`, `LOC`, `ERR`.
    pub irq: &'a str,
    /// The text after the counts, trimmed; empty when there is none.
    pub device: &'a str,
    pub start: usize,
    pub len: usize,
    /// Whether the line has one count per online CPU (false for system-wide lines like `ERR`).
    pub per_cpu: bool,
}

/// The parsed file: CPU numbers from the header, every usable line's counts in one flat
/// vector, and the lines left out (1-based line number and why).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Interrupts<'a> {
    pub cpus: Vec<u32>,
    pub lines: Vec<IrqLine<'a>>,
    pub counts: Vec<u64>,
    pub skipped: Vec<(usize, Problem)>,
}

impl Interrupts<'_> {
    pub fn counts_of(&self, line: &IrqLine<'_>) -> &[u64] {
        &self.counts[line.start..line.start + line.len]
    }
}

/// The message of a file with no usable line, from its first skipped one.
fn no_usable_line(first: Option<(usize, &str, Problem)>, ncpu: usize) -> ParseError {
    let Some((lineno, irq, problem)) = first else {
        return ParseError::new(0, "no IRQ lines");
    };
    let irq = Excerpt(irq);
    let msg = match problem {
        Problem::NoName => "no IRQ name and ':' at the start of the line".to_string(),
        Problem::NoCount => format!("IRQ {irq:?} has no count"),
        Problem::Columns(n) => {
            format!("IRQ {irq:?} has {n} counts for {ncpu} CPUs: unknown layout")
        }
        Problem::TooMany => format!("IRQ {irq:?}: more than {MAX_LINES} lines"),
    };
    ParseError::new(lineno, format!("no usable IRQ line; {msg}"))
}

/// Parses the text of `/proc/interrupts` (the collector folds the same lines as it parses
/// them, without collecting them).
///
/// A line must have one count per CPU of the header, or (a named line like `ERR`) a single
/// system-wide count; other lines are left out and listed in `skipped`. The header must name
/// CPUs, and at least one line must be usable.
pub fn parse_interrupts(text: &str) -> Result<Interrupts<'_>, ParseError> {
    let b = text.as_bytes();
    if b.is_empty() {
        return Err(ParseError::new(0, "empty file"));
    }
    let header_end = line_end(b, 0);
    let mut out = Interrupts::default();
    parse_header(&b[..header_end], &mut out.cpus)?;
    let ncpu = out.cpus.len();
    let mut counts = Vec::with_capacity(ncpu + 1);
    let mut first_skip = None;
    let (mut at, mut lineno) = (header_end + 1, 1);
    while at < b.len() {
        lineno += 1;
        let (body, next) = parse_line(b, at, ncpu, &mut counts);
        at = next;
        match body {
            Body::Blank => {}
            Body::Skip { irq, problem } => {
                out.skipped.push((lineno, problem));
                let irq = irq.map_or("", |r| &text[r]);
                first_skip.get_or_insert((lineno, irq, problem));
            }
            Body::Line(l) => {
                let start = out.counts.len();
                out.counts.extend_from_slice(&counts);
                out.lines.push(IrqLine {
                    irq: &text[l.irq],
                    device: &text[l.device],
                    start,
                    len: counts.len(),
                    per_cpu: l.per_cpu,
                });
            }
        }
    }
    if out.lines.is_empty() {
        return Err(no_usable_line(first_skip, ncpu));
    }
    Ok(out)
}

/// A kernel counter's movement since `prev`. A decrease is read as a wrap of the kernel's 32-bit
/// `unsigned int` only when the wrapped distance is under half the range (serial number
/// arithmetic, RFC 1982): no IRQ line moves 2 Gi between two scrapes. Otherwise the counter
/// was reset (IRQ descriptor freed and allocated again, e.g. a driver reloaded) and all of
/// `cur` is new. A reset from above 2 Gi is indistinguishable from a wrap and is read as one.
fn delta(prev: u64, cur: u64) -> u64 {
    if cur >= prev {
        return cur - prev;
    }
    // Only a previous value inside 32 bits can have wrapped; `cur < prev` then also keeps
    // the sum below from overflowing on a garbage count near `u64::MAX`.
    if prev > u64::from(u32::MAX) {
        return cur;
    }
    let wrapped = (cur + (1u64 << 32)) - prev;
    if wrapped < (1u64 << 31) {
        wrapped
    } else {
        cur
    }
}

/// Monotonic state of one IRQ line: last raw value per column, and the unwrapped total.
#[derive(Debug, Clone)]
struct LineState {
    /// The name and the description as the file prints them, to recognise the line.
    raw_irq: Box<[u8]>,
    raw_device: Box<[u8]>,
    /// The labels: the name, and the description with runs of blanks collapsed.
    irq: String,
    device: String,
    per_cpu: bool,
    /// Indexed by CPU number for per-CPU lines, by position for system-wide ones.
    prev: Vec<u64>,
    total: u64,
}

impl LineState {
    fn new(irq: &[u8], device: &[u8], per_cpu: bool) -> Self {
        let label = String::from_utf8_lossy(device);
        LineState {
            raw_irq: irq.into(),
            raw_device: device.into(),
            irq: String::from_utf8_lossy(irq).into_owned(),
            device: label.split_ascii_whitespace().collect::<Vec<_>>().join(" "),
            per_cpu,
            prev: Vec::new(),
            total: 0,
        }
    }
}

pub struct InterruptsCollector {
    path: KeptFile,
    buf: Vec<u8>,
    top: usize,
    /// In the order of the file's lines at the last scrape, so lookups are positional.
    lines: Vec<LineState>,
    /// Unwrapped interrupt count per CPU slot (kept for offline CPUs, which may return).
    per_cpu: Vec<u64>,
    /// The slot of each CPU number seen so far (`NO_SLOT` for the others): slots are given in
    /// the order CPUs are first seen, so the state is as wide as the CPUs a host has, not as
    /// its largest CPU number.
    slot_of: Vec<u32>,
    /// The last header's CPU numbers and their slots, and one line's counts: scratch reused
    /// across scrapes.
    cpus: Vec<u32>,
    slots: Vec<u32>,
    counts: Vec<u64>,
    /// Whether the last header's slots are 0, 1, 2, … (its CPUs are the first ones seen, in
    /// order: every CPU online, or none back from offline).
    contiguous: bool,
    /// Scratch for choosing the top lines, reused across scrapes.
    order: Vec<usize>,
    /// Lines summed at the last scrape, and lines skipped since the start.
    summed: usize,
    skipped: u64,
    /// When the file is read: `--collector.interrupts.min-interval-ms` and
    /// `--collector.interrupts.max-cpu-percent`.
    budget: ReadBudget,
}

/// Where the lines of this scrape find their state: at the same position as on the last
/// scrape while the file's lines are the same, else (from the first difference on) by name.
struct Matcher {
    /// The next position of `lines` to compare while in order.
    pos: usize,
    /// The states not yet matched once out of order, by IRQ name.
    by_name: Option<HashMap<Box<[u8]>, LineState>>,
}

impl Matcher {
    /// Leaves positional matching: every state from `pos` on can now only be found by name.
    fn by_name(&mut self, lines: &mut Vec<LineState>) {
        let pos = self.pos;
        self.by_name
            .get_or_insert_with(|| lines.drain(pos..).map(|s| (s.raw_irq.clone(), s)).collect());
    }
}

impl InterruptsCollector {
    pub fn new(s: &Settings) -> Self {
        InterruptsCollector {
            path: KeptFile::new(s.paths.proc("interrupts")),
            buf: Vec::new(),
            top: s.interrupts.top,
            lines: Vec::new(),
            per_cpu: Vec::new(),
            slot_of: Vec::new(),
            slots: Vec::new(),
            cpus: Vec::new(),
            counts: Vec::new(),
            contiguous: false,
            order: Vec::new(),
            summed: 0,
            skipped: 0,
            budget: ReadBudget::new(
                s.interrupts.max_cpu_percent,
                Duration::from_millis(s.interrupts.min_interval_ms),
            ),
        }
    }

    /// Reads one file's text into the monotonic state; the per-CPU sums are then those of
    /// `self.cpus`, the header's CPUs.
    fn account(&mut self, b: &[u8]) -> Result<(), ParseError> {
        if b.is_empty() {
            return Err(ParseError::new(0, "empty file"));
        }
        let header_end = line_end(b, 0);
        parse_header(&b[..header_end], &mut self.cpus)?;
        self.slot_cpus()?;
        let ncpu = self.cpus.len();
        let mut m = Matcher {
            pos: 0,
            by_name: None,
        };
        let (mut at, mut lineno) = (header_end + 1, 1);
        let mut first_skip: Option<(usize, String, Problem)> = None;
        self.summed = 0;
        while at < b.len() {
            lineno += 1;
            let (body, next) = parse_line(b, at, ncpu, &mut self.counts);
            at = next;
            // A line left out: its name, why, and whether its state is already in place.
            let (irq, problem, placed) = match body {
                Body::Blank => continue,
                Body::Skip { irq, problem } => (irq, problem, false),
                Body::Line(l) if !self.room_for_one_more(&m) => {
                    (Some(l.irq), Problem::TooMany, false)
                }
                Body::Line(l) => {
                    let (irq, device) = (&b[l.irq.clone()], &b[l.device]);
                    if let Some(idx) = self.find(&mut m, irq, device, l.per_cpu) {
                        self.fold(idx);
                        self.summed += 1;
                        continue;
                    }
                    // Per CPU on one scrape and system-wide on the other (or the reverse):
                    // the CPU set changed while the file was printed.
                    (Some(l.irq), Problem::Columns(self.counts.len()), true)
                }
            };
            let irq: &[u8] = irq.map_or(&[], |r| &b[r]);
            if !placed && !irq.is_empty() {
                // Kept as it was, so its interrupts are counted on a later read.
                self.keep(&mut m, irq);
            }
            self.skipped += 1;
            if first_skip.is_none() {
                let name = String::from_utf8_lossy(irq).into_owned();
                first_skip = Some((lineno, name, problem));
            }
        }
        if m.by_name.is_none() {
            // The states after the last line of this file are of lines that have vanished.
            self.lines.truncate(m.pos);
        }
        if self.summed == 0 {
            let first = first_skip
                .as_ref()
                .map(|(n, irq, p)| (*n, irq.as_str(), *p));
            return Err(no_usable_line(first, ncpu));
        }
        Ok(())
    }

    /// The slot of each of the header's CPUs, giving new CPUs the next ones.
    fn slot_cpus(&mut self) -> Result<(), ParseError> {
        self.slots.clear();
        for &cpu in &self.cpus {
            let cpu = cpu as usize;
            if self.slot_of.len() <= cpu {
                self.slot_of.resize(cpu + 1, NO_SLOT);
            }
            if self.slot_of[cpu] == NO_SLOT {
                if self.per_cpu.len() >= MAX_SLOTS {
                    let msg = format!("more than {MAX_SLOTS} different CPUs since the start");
                    return Err(ParseError::new(1, msg));
                }
                self.slot_of[cpu] = self.per_cpu.len() as u32;
                self.per_cpu.push(0);
            }
            self.slots.push(self.slot_of[cpu]);
        }
        self.contiguous = self.slots.iter().enumerate().all(|(i, &s)| s as usize == i);
        Ok(())
    }

    /// Pushes the per-CPU sums of the last header's CPUs.
    fn push_cpus(&self, out: &mut Scrape) {
        for (&cpu, &slot) in self.cpus.iter().zip(&self.slots) {
            let mut b = [0; 20];
            let label = index_str(u64::from(cpu), &mut b);
            out.push_values(
                &CPU_INTERRUPTS,
                &[label],
                self.per_cpu[slot as usize] as f64,
            );
        }
    }

    /// Whether a line may have state: within [`MAX_LINES`] lines, and [`MAX_CELLS`] counts
    /// kept for them (a line keeps one per CPU slot).
    fn room_for_one_more(&self, m: &Matcher) -> bool {
        let placed = if m.by_name.is_some() {
            self.lines.len()
        } else {
            m.pos
        };
        placed < MAX_LINES && (placed + 1) * self.per_cpu.len().max(1) <= MAX_CELLS
    }

    /// Keeps the state of a line that this scrape leaves out, in its place.
    fn keep(&mut self, m: &mut Matcher, irq: &[u8]) {
        if m.by_name.is_none() {
            if self.lines.get(m.pos).is_some_and(|s| *s.raw_irq == *irq) {
                m.pos += 1;
                return;
            }
            m.by_name(&mut self.lines);
        }
        if let Some(s) = m.by_name.as_mut().and_then(|map| map.remove(irq)) {
            self.lines.push(s);
        }
    }

    /// The index in `lines` of the state of this line, new when the line is new or its device
    /// changed; `None` when its state has the other shape (per CPU or system-wide).
    fn find(&mut self, m: &mut Matcher, irq: &[u8], device: &[u8], per_cpu: bool) -> Option<usize> {
        if m.by_name.is_none() {
            if let Some(s) = self.lines.get_mut(m.pos) {
                if *s.raw_irq == *irq {
                    if *s.raw_device != *device {
                        *s = LineState::new(irq, device, per_cpu);
                    } else if s.per_cpu != per_cpu {
                        m.pos += 1;
                        return None;
                    }
                    m.pos += 1;
                    return Some(m.pos - 1);
                }
            } else {
                // Past the last line of the previous scrape: the rest are new.
                m.pos += 1;
                self.lines.push(LineState::new(irq, device, per_cpu));
                return Some(m.pos - 1);
            }
            m.by_name(&mut self.lines);
        }
        let old = m.by_name.as_mut().and_then(|map| map.remove(irq));
        let state = match old {
            Some(s) if *s.raw_device == *device => s,
            _ => LineState::new(irq, device, per_cpu),
        };
        let same_shape = state.per_cpu == per_cpu;
        self.lines.push(state);
        same_shape.then(|| self.lines.len() - 1)
    }

    /// Adds the deltas of the line's counts (in `self.counts`) to its total and, per CPU, to
    /// the per-CPU sums.
    fn fold(&mut self, idx: usize) {
        let st = &mut self.lines[idx];
        let counts = &self.counts;
        let mut total = st.total;
        if st.per_cpu {
            if st.prev.len() < self.per_cpu.len() {
                st.prev.resize(self.per_cpu.len(), 0);
            }
            let n = counts.len();
            if self.contiguous && n <= st.prev.len() && n <= self.per_cpu.len() {
                // CPUs 0..n, none offline: column i is CPU i. Most cells have not moved since
                // the last scrape (a vector is 0 on every CPU but its own).
                let cells = st.prev[..n].iter_mut().zip(&mut self.per_cpu[..n]);
                for ((prev, sum), &cur) in cells.zip(counts) {
                    if cur != *prev {
                        let d = delta(*prev, cur);
                        *prev = cur;
                        total = total.saturating_add(d);
                        *sum = sum.saturating_add(d);
                    }
                }
            } else {
                for (&slot, &cur) in self.slots.iter().zip(counts) {
                    let slot = slot as usize;
                    let d = delta(st.prev[slot], cur);
                    st.prev[slot] = cur;
                    total = total.saturating_add(d);
                    self.per_cpu[slot] = self.per_cpu[slot].saturating_add(d);
                }
            }
        } else {
            if st.prev.len() < counts.len() {
                st.prev.resize(counts.len(), 0);
            }
            for (prev, &cur) in st.prev.iter_mut().zip(counts) {
                total = total.saturating_add(delta(*prev, cur));
                *prev = cur;
            }
        }
        st.total = total;
    }

    /// Pushes the busiest lines, busiest first; ties go by file order so the set does not flap.
    fn push_top(&mut self, out: &mut Scrape) {
        let n = self.top.min(self.lines.len());
        if n == 0 {
            return;
        }
        self.order.clear();
        self.order.extend(0..self.lines.len());
        let lines = &self.lines;
        let busier = |a: &usize, b: &usize| lines[*b].total.cmp(&lines[*a].total).then(a.cmp(b));
        if n < self.order.len() {
            self.order.select_nth_unstable_by(n - 1, busier);
        }
        self.order[..n].sort_unstable_by(busier);
        for &i in &self.order[..n] {
            let l = &self.lines[i];
            out.push_values(&LINE_INTERRUPTS, &[&l.irq, &l.device], l.total as f64);
        }
    }
}

impl Collector for InterruptsCollector {
    fn name(&self) -> &'static str {
        "interrupts"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        let now = Instant::now();
        // Within the interval of a read that succeeded, its values are exposed again.
        if self.budget.due(now) {
            let cpu0 = thread_cpu();
            let mut buf = std::mem::take(&mut self.buf);
            let res = self.path.read_bytes_into(&mut buf).and_then(|range| {
                self.account(&buf[range])
                    .map_err(|e| CollectError::parse(&self.path, e))
            });
            self.buf = buf;
            res?;
            // Without the thread clock (never on Linux), the wall time.
            let took = match (cpu0, thread_cpu()) {
                (Some(a), Some(b)) => b.saturating_sub(a),
                _ => now.elapsed(),
            };
            if let Some(every) = self.budget.read(now, took) {
                tracing::info!(
                    path = %self.path.path().display(),
                    lines = self.summed,
                    cpus = self.cpus.len(),
                    "read every {} ms, to keep its reads within \
                     --collector.interrupts.max-cpu-percent of a core",
                    every.as_millis()
                );
            }
        }
        self.push_cpus(out);
        // The top lines are chosen only for a page that serves them (not the fast cadence's).
        if out.wants(&LINE_INTERRUPTS) {
            self.push_top(out);
        }
        out.push_values(&LINES, &[], self.summed as f64);
        out.push_values(&LINES_SKIPPED, &[], self.skipped as f64);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectors::test_util::{samples, value};
    use crate::paths::Paths;
    use proptest::prelude::*;

    // An x86 host with CPU2 offline: the header skips it.
    const X86: &str = "           CPU0       CPU1       CPU3       \n\
  0:         44          0          0  IO-APIC   2-edge      timer\n\
 24:          1          0          7  IO-APIC   5-edge      ACPI:Ged\n\
 36:          0      43041          0  PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n\
 40:          0          0          0  PCI-MSIX-0000:00:04.0   0-edge\n\
NMI:          0          0          0   Non-maskable interrupts\n\
LOC:      18769      19559      20011   Local timer interrupts\n\
ERR:          3\n\
MIS:          0\n";

    // arm64 with a GIC: the description holds numbers too.
    const ARM: &str = "           CPU0       CPU1\n\
 11:     123456     654321     GICv3  27 Level     arch_timer\n\
IPI0:        10         20       Rescheduling interrupts\n\
Err:          0\n";

    #[test]
    fn parses_x86_with_offline_cpu() {
        let p = parse_interrupts(X86).unwrap();
        assert_eq!(p.cpus, vec![0, 1, 3]);
        assert_eq!(p.lines.len(), 8);
        assert!(p.skipped.is_empty());
        let l24 = &p.lines[1];
        assert_eq!(
            (l24.irq, l24.device),
            ("24", "IO-APIC   5-edge      ACPI:Ged")
        );
        assert_eq!(p.counts_of(l24), &[1, 0, 7]);
        assert_eq!(p.lines[3].device, "PCI-MSIX-0000:00:04.0   0-edge");
        let loc = &p.lines[5];
        assert_eq!(
            (loc.irq, loc.device, loc.per_cpu),
            ("LOC", "Local timer interrupts", true)
        );
        let err = &p.lines[6];
        assert_eq!((err.irq, err.device, err.per_cpu), ("ERR", "", false));
        assert_eq!(p.counts_of(err), &[3]);
    }

    #[test]
    fn parses_arm_descriptions_with_numbers() {
        let p = parse_interrupts(ARM).unwrap();
        assert_eq!(p.counts_of(&p.lines[0]), &[123456, 654321]);
        assert_eq!(p.lines[0].device, "GICv3  27 Level     arch_timer");
        assert_eq!(p.lines[1].irq, "IPI0");
    }

    #[test]
    fn rejects_unknown_layouts() {
        // A numbered line with a missing CPU column, and nothing else.
        assert!(parse_interrupts("  CPU0 CPU1\n 5: 1 IO-APIC 5-edge x\n").is_err());
        assert!(parse_interrupts("  CPU0 CPU1\n 5 1 2\n").is_err());
        assert!(parse_interrupts("  CPUx\n 5: 1\n").is_err());
        assert!(parse_interrupts("  CPU0\n").is_err());
        assert!(parse_interrupts("").is_err());
        assert!(parse_interrupts("  CPU0\nLOC: timer\n").is_err());
        let err = parse_interrupts("  CPU0 CPU1\n 5: 1 IO-APIC 5-edge x\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.msg.contains("1 counts for 2 CPUs"), "{err:?}");
    }

    #[test]
    fn lines_that_do_not_match_the_header_are_left_out_and_listed() {
        // A CPU went offline (one count short) and another came online (one count more)
        // while the file was printed; a line with no colon; an empty line.
        let text = "  CPU0 CPU1\n 1: 5 6 dev-a\n 2: 7 dev-b\n 3: 1 2 3 dev-c\n\
                    garbage\n\n 4: 8 9 dev-d\nERR: 2\n";
        let p = parse_interrupts(text).unwrap();
        let names: Vec<&str> = p.lines.iter().map(|l| l.irq).collect();
        assert_eq!(names, ["1", "4", "ERR"]);
        assert_eq!(
            p.skipped,
            [
                (3, Problem::Columns(1)),
                (4, Problem::Columns(3)),
                (5, Problem::NoName)
            ]
        );
    }

    #[test]
    fn rejects_cpu_numbers_beyond_any_host() {
        let err = parse_interrupts("  CPU0 CPU4000000000\n 5: 1 2 IO-APIC x\n").unwrap_err();
        assert!(err.msg.contains("CPU number above"), "{err:?}");
        assert!(parse_interrupts("  CPU65535\n 5: 1 IO-APIC x\n").is_ok());
    }

    #[test]
    fn blanks_are_skipped_across_chunk_edges() {
        let b = b"   \t      x   ";
        assert_eq!(skip_blanks(b, 0), 10);
        assert_eq!(skip_blanks(b, 11), b.len());
        assert_eq!(skip_blanks(b"        \t       7", 0), 16);
        assert_eq!(count_at(b"123 ", 0), Some((123, 3)));
        assert_eq!(count_at(b"5-edge", 0), None);
        assert_eq!(count_at(b"99999999999999999999", 0), None);
        assert_eq!(count_at(b"18446744073709551615\n", 0), Some((u64::MAX, 20)));
    }

    #[test]
    fn wraps_are_unwrapped() {
        assert_eq!(delta(10, 15), 5);
        assert_eq!(delta(u64::from(u32::MAX) - 1, 3), 5);
        // Counts near `u64::MAX` (a garbage file) are a reset, not an overflow.
        assert_eq!(delta(u64::MAX, u64::MAX - 1), u64::MAX - 1);
        assert_eq!(delta(1 << 40, 7), 7);
        // A line that restarts from a low count was reset, not wrapped.
        assert_eq!(delta(1000, 7), 7);
    }

    fn collector(top: usize) -> InterruptsCollector {
        let mut s = Settings {
            paths: Paths::new("/nonexistent", "/nonexistent"),
            ..Default::default()
        };
        s.interrupts.top = top;
        InterruptsCollector::new(&s)
    }

    /// The per-line series of the collector's state, busiest first.
    fn top_lines(c: &mut InterruptsCollector) -> Vec<(String, f64)> {
        let mut out = Scrape::new();
        c.push_top(&mut out);
        samples(&out)
            .into_iter()
            .map(|(_, labels, v)| (labels[0].clone(), v))
            .collect()
    }

    #[test]
    fn top_flag_reaches_the_collector() {
        let cli = crate::cli::parse_from(["x", "--collector.interrupts.top", "3"]).unwrap();
        assert_eq!(cli.settings.interrupts.top, 3);
        let cli = crate::cli::parse_from(["x"]).unwrap();
        assert_eq!(cli.settings.interrupts.top, DEFAULT_TOP);
        let mut c = collector(3);
        c.account(X86.as_bytes()).unwrap();
        let want = [("LOC", 58339.0), ("36", 43041.0), ("0", 44.0)];
        assert_eq!(top_lines(&mut c), want.map(|(i, v)| (i.to_string(), v)));
        let mut c = collector(0);
        c.account(X86.as_bytes()).unwrap();
        assert!(top_lines(&mut c).is_empty());
    }

    #[test]
    fn sums_stay_monotonic_across_wraps_and_hotplug() {
        let mut c = collector(2);
        let near_wrap = u32::MAX - 9;
        let a = format!("  CPU0 CPU1\n 1: {near_wrap} 5 dev-a\n 2: 1 1 dev-b\nERR: 4\n");
        c.account(a.as_bytes()).unwrap();
        assert_eq!(c.per_cpu, vec![u64::from(near_wrap) + 1, 6]);
        // CPU0's IRQ 1 wraps by 20; CPU1 goes offline and CPU2 comes online.
        let b = "  CPU0 CPU2\n 1: 10 3 dev-a\n 2: 1 0 dev-b\nERR: 4\n";
        c.account(b.as_bytes()).unwrap();
        assert_eq!(c.per_cpu, vec![u64::from(near_wrap) + 21, 6, 3]);
        assert_eq!(c.lines[0].total, u64::from(near_wrap) + 5 + 20 + 3);
        // IRQ 2 is reused by another device: its count starts over, and a new line appears.
        let d = "  CPU0 CPU2\n 1: 10 3 dev-a\n 2: 2 0 dev-c\n 3: 9 9 dev-d\nERR: 5\n";
        c.account(d.as_bytes()).unwrap();
        assert_eq!(c.lines[1].device, "dev-c");
        assert_eq!(c.lines[1].total, 2);
        assert_eq!(c.lines[2].total, 18);
        assert_eq!(c.lines[3].total, 5);
        assert_eq!(c.per_cpu, vec![u64::from(near_wrap) + 21 + 2 + 9, 6, 3 + 9]);
    }

    /// A file of `cpus` (CPU numbers) and `lines` (name, counts per CPU, device).
    fn file(cpus: &[u32], lines: &[(&str, Vec<u64>, &str)]) -> String {
        let mut s = String::from("    ");
        for c in cpus {
            s.push_str(&format!("{:>11}", format!("CPU{c}")));
        }
        s.push('\n');
        for (irq, counts, dev) in lines {
            s.push_str(&format!("{irq:>4}:"));
            for v in counts {
                s.push_str(&format!("{v:>11}"));
            }
            s.push_str(&format!("  {dev}\n"));
        }
        s
    }

    /// Runs the collector's `update` on `text` written as `root/proc/interrupts`.
    fn update(c: &mut InterruptsCollector, root: &std::path::Path, text: &str) -> Scrape {
        std::fs::write(root.join("proc/interrupts"), text).unwrap();
        let mut out = Scrape::new();
        c.update(&mut out).unwrap();
        out
    }

    fn temp_root(tag: &str) -> (std::path::PathBuf, InterruptsCollector) {
        let root =
            std::env::temp_dir().join(format!("reveal-interrupts-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("proc")).unwrap();
        let mut s = Settings {
            paths: Paths::new(root.join("proc"), root.join("sys")),
            ..Default::default()
        };
        s.interrupts.top = 4;
        // Every update reads the file (the spacing has its own tests, in `read_budget`).
        s.interrupts.max_cpu_percent = 0.0;
        (root, InterruptsCollector::new(&s))
    }

    fn cpu(out: &Scrape, n: &str) -> Option<f64> {
        value(out, "reveal_cpu_interrupts_total", &[("cpu", n)])
    }

    fn skipped(out: &Scrape) -> f64 {
        value(out, "reveal_cpu_irq_lines_skipped_total", &[]).unwrap()
    }

    #[test]
    fn thousands_of_lines_are_summed_and_few_exposed() {
        let (root, mut c) = temp_root("many");
        let cpus = [0, 1, 2, 3];
        let lines: Vec<(String, Vec<u64>, String)> = (0..5000u64)
            .map(|i| {
                let dev = format!("PCI-MSIX-0000:5e:00.0 {i}-edge nvme0q{i}");
                (format!("{}", 100 + i), vec![i, 1, 0, 2], dev)
            })
            .collect();
        let refs: Vec<(&str, Vec<u64>, &str)> = lines
            .iter()
            .map(|(a, b, c)| (a.as_str(), b.clone(), c.as_str()))
            .collect();
        let out = update(&mut c, &root, &file(&cpus, &refs));
        assert_eq!(cpu(&out, "0"), Some((0..5000).sum::<u64>() as f64));
        assert_eq!(cpu(&out, "1"), Some(5000.0));
        assert_eq!(cpu(&out, "3"), Some(10000.0));
        assert_eq!(value(&out, "reveal_cpu_irq_lines", &[]), Some(5000.0));
        assert_eq!(skipped(&out), 0.0);
        let top = samples(&out)
            .into_iter()
            .filter(|s| s.0 == "reveal_cpu_irq_line_interrupts")
            .map(|s| s.1[0].clone())
            .collect::<Vec<_>>();
        assert_eq!(top, ["5099", "5098", "5097", "5096"]);
        assert_eq!(out.sample_count(), 4 + 4 + 2);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn lines_beyond_the_bound_are_skipped_and_counted() {
        let mut c = collector(2);
        let mut text = String::from("  CPU0\n");
        for i in 0..MAX_LINES + 10 {
            text.push_str(&format!("{i}: 1 dev{i}\n"));
        }
        c.account(text.as_bytes()).unwrap();
        assert_eq!((c.summed, c.skipped), (MAX_LINES, 10));
        assert_eq!(c.lines.len(), MAX_LINES);
        assert_eq!(c.per_cpu, [MAX_LINES as u64]);
        c.account(text.as_bytes()).unwrap();
        assert_eq!((c.summed, c.skipped), (MAX_LINES, 20));
        assert_eq!(c.per_cpu, [MAX_LINES as u64]);
    }

    #[test]
    fn state_is_as_wide_as_the_cpus_seen_not_the_largest_number() {
        let mut c = collector(2);
        c.account(b"  CPU0 CPU65535\n 1: 1 2 dev\n 2: 3 4 dev\n")
            .unwrap();
        assert_eq!(c.per_cpu, [4, 6]);
        assert!(c.lines.iter().all(|l| l.prev.len() == 2));
        // A header that would bring the CPUs seen past the bound fails, and changes no sum.
        let mut text = String::new();
        for cpu in 1..=MAX_SLOTS {
            text.push_str(&format!(" CPU{cpu}"));
        }
        text.push_str("\n 1:");
        text.push_str(&" 1".repeat(MAX_SLOTS));
        text.push_str(" dev\n");
        let err = c.account(text.as_bytes()).unwrap_err();
        assert!(err.msg.contains("different CPUs"), "{err:?}");
        assert_eq!(&c.per_cpu[..2], [4, 6]);
        assert!(c.per_cpu[2..].iter().all(|&v| v == 0));
    }

    #[test]
    fn counts_kept_are_bounded() {
        let mut c = collector(2);
        let ncpu = 4096;
        let mut text = String::new();
        for cpu in 0..ncpu {
            text.push_str(&format!(" CPU{cpu}"));
        }
        text.push('\n');
        let lines = MAX_CELLS / ncpu + 3;
        for i in 0..lines {
            text.push_str(&format!("{i}:{} dev\n", " 0".repeat(ncpu)));
        }
        c.account(text.as_bytes()).unwrap();
        assert_eq!((c.summed, c.skipped), (MAX_CELLS / ncpu, 3));
        assert_eq!(c.lines.len(), MAX_CELLS / ncpu);
    }

    #[test]
    fn lines_appear_and_vanish_between_scrapes() {
        let (root, mut c) = temp_root("come-and-go");
        let cpus = [0, 1];
        let a = |v: u64| ("30", vec![v, 0], "PCI-MSI 1-edge eth0");
        let b = |v: u64| ("31", vec![0, v], "PCI-MSI 2-edge eth0-rx");
        let d = |v: u64| ("32", vec![v, v], "PCI-MSI 3-edge nvme0q1");
        let loc = |v: u64| ("LOC", vec![v, v], "Local timer interrupts");
        let out = update(&mut c, &root, &file(&cpus, &[a(10), b(20), loc(100)]));
        assert_eq!((cpu(&out, "0"), cpu(&out, "1")), (Some(110.0), Some(120.0)));
        // 31 goes (its driver freed it), 32 comes: counted from its count so far.
        let out = update(&mut c, &root, &file(&cpus, &[a(15), d(7), loc(150)]));
        assert_eq!((cpu(&out, "0"), cpu(&out, "1")), (Some(172.0), Some(177.0)));
        assert_eq!(value(&out, "reveal_cpu_irq_lines", &[]), Some(3.0));
        let labels: Vec<Vec<String>> = samples(&out)
            .into_iter()
            .filter(|s| s.0 == "reveal_cpu_irq_line_interrupts")
            .map(|s| s.1)
            .collect();
        assert_eq!(labels.len(), 3);
        assert!(labels.iter().all(|l| l[0] != "31"), "{labels:?}");
        // 31 comes back, set up again: from zero. Every series stays monotonic.
        let out = update(&mut c, &root, &file(&cpus, &[a(15), b(3), d(7), loc(160)]));
        assert_eq!((cpu(&out, "0"), cpu(&out, "1")), (Some(182.0), Some(190.0)));
        assert_eq!(value(&out, "reveal_cpu_irq_lines", &[]), Some(4.0));
        assert_eq!(skipped(&out), 0.0);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn cpus_going_offline_and_online_between_scrapes() {
        let (root, mut c) = temp_root("hotplug");
        let l = |irq: &'static str, counts: Vec<u64>| (irq, counts, "PCI-MSI x");
        let out = update(
            &mut c,
            &root,
            &file(
                &[0, 1, 2, 3],
                &[l("1", vec![1, 2, 3, 4]), l("2", vec![1, 1, 1, 1])],
            ),
        );
        assert_eq!(cpu(&out, "2"), Some(4.0));
        // CPU2 goes offline: its column goes, and so does its series.
        let out = update(
            &mut c,
            &root,
            &file(&[0, 1, 3], &[l("1", vec![2, 2, 4]), l("2", vec![1, 1, 5])]),
        );
        assert_eq!(cpu(&out, "2"), None);
        assert_eq!(cpu(&out, "3"), Some(9.0));
        assert_eq!(cpu(&out, "0"), Some(3.0));
        // It comes back with the counts it had plus what it handled since; CPU 7 comes online.
        let out = update(
            &mut c,
            &root,
            &file(
                &[0, 1, 2, 3, 7],
                &[l("1", vec![2, 2, 6, 4, 1]), l("2", vec![1, 1, 1, 5, 1])],
            ),
        );
        assert_eq!(cpu(&out, "2"), Some(7.0));
        assert_eq!(cpu(&out, "7"), Some(2.0));
        assert_eq!(skipped(&out), 0.0);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_cpu_set_changing_while_the_file_is_printed_defers_the_line() {
        let (root, mut c) = temp_root("hotplug-race");
        let cpus = [0, 1, 2];
        let l = |irq: &'static str, counts: Vec<u64>| (irq, counts, "PCI-MSI x");
        let sys = |v: u64| ("ERR", vec![v], "");
        let out = update(
            &mut c,
            &root,
            &file(
                &cpus,
                &[l("1", vec![1, 1, 1]), l("2", vec![5, 5, 5]), sys(1)],
            ),
        );
        assert_eq!(cpu(&out, "0"), Some(6.0));
        // CPU3 came online after the header and the first line were printed: line 2 has four
        // counts. It is left out and counted; the others are summed.
        let out = update(
            &mut c,
            &root,
            &file(
                &cpus,
                &[l("1", vec![2, 2, 2]), l("2", vec![6, 6, 6, 6]), sys(1)],
            ),
        );
        assert_eq!(cpu(&out, "0"), Some(7.0));
        assert_eq!(skipped(&out), 1.0);
        assert_eq!(value(&out, "reveal_cpu_irq_lines", &[]), Some(2.0));
        // The next read is whole: line 2's interrupts since the first scrape are all counted.
        let out = update(
            &mut c,
            &root,
            &file(
                &[0, 1, 2, 3],
                &[l("1", vec![2, 2, 2, 0]), l("2", vec![7, 7, 7, 7]), sys(1)],
            ),
        );
        assert_eq!(cpu(&out, "0"), Some(9.0));
        assert_eq!(cpu(&out, "3"), Some(7.0));
        assert_eq!(skipped(&out), 1.0);
        // A line read once per CPU and once with a single count keeps its first shape.
        let out = update(
            &mut c,
            &root,
            &file(
                &[0, 1, 2, 3],
                &[l("1", vec![3, 2, 2, 0]), ("ERR", vec![1, 1, 1, 1], "")],
            ),
        );
        assert_eq!(cpu(&out, "0"), Some(10.0));
        assert_eq!(skipped(&out), 2.0);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn between_reads_the_last_read_is_exposed() {
        let (root, mut c) = temp_root("interval");
        let l = |v: u64| ("5", vec![v, v], "PCI-MSI x");
        c.budget = ReadBudget::new(0.0, Duration::from_secs(3600));
        let out = update(&mut c, &root, &file(&[0, 1], &[l(1)]));
        assert_eq!(cpu(&out, "1"), Some(1.0));
        // Not read again within the interval: the same series and values.
        let again = update(&mut c, &root, &file(&[0, 1], &[l(9)]));
        assert_eq!(samples(&again), samples(&out));
        // Read on every scrape without one.
        c.budget = ReadBudget::new(0.0, Duration::ZERO);
        let out = update(&mut c, &root, &file(&[0, 1], &[l(9)]));
        assert_eq!(cpu(&out, "1"), Some(9.0));
        // A read that took a second, at 0.5 % of a core: the next is 200 s away.
        c.budget = ReadBudget::new(0.5, Duration::ZERO);
        c.budget.read(Instant::now(), Duration::from_secs(1));
        let again = update(&mut c, &root, &file(&[0, 1], &[l(20)]));
        assert_eq!(cpu(&again, "1"), Some(9.0), "the last read's values");
        let cli = crate::cli::parse_from(["x", "--collector.interrupts.min-interval-ms", "1000"])
            .unwrap();
        assert_eq!(cli.settings.interrupts.min_interval_ms, 1000);
        assert_eq!(
            cli.settings.interrupts.max_cpu_percent,
            DEFAULT_MAX_CPU_PERCENT
        );
        let cli =
            crate::cli::parse_from(["x", "--collector.interrupts.max-cpu-percent", "0"]).unwrap();
        assert_eq!(cli.settings.interrupts.max_cpu_percent, 0.0);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_device_name_that_is_not_utf8_is_shown_lossily() {
        let mut c = collector(1);
        let text = b"  CPU0\n 5: 9 PCI-MSI dev\xff\n";
        c.account(text).unwrap();
        assert_eq!(c.lines[0].device, "PCI-MSI dev\u{fffd}");
        assert_eq!(c.per_cpu, [9]);
    }

    #[test]
    fn a_bad_scrape_changes_nothing() {
        let mut c = collector(2);
        c.account(X86.as_bytes()).unwrap();
        let before = (c.per_cpu.clone(), c.lines.len());
        assert!(c.account(b"  CPU0 CPUx\n 5: 1 2\n").is_err());
        assert!(c.account(b"").is_err());
        assert_eq!((c.per_cpu.clone(), c.lines.len()), before);
    }

    /// A file for the property tests: `cpus` online, and each line of `lines` present when its
    /// flag is set, with counts drawn from `base` and the line's growth.
    fn random_file(cpus: &[u32], lines: &[(bool, u64, u8)], step: u64, race: usize) -> String {
        let mut s = String::from(" ");
        for c in cpus {
            s.push_str(&format!(" CPU{c}"));
        }
        s.push('\n');
        for (i, &(present, rate, shape)) in lines.iter().enumerate() {
            if !present {
                continue;
            }
            let n = match shape % 8 {
                0 if i == race => cpus.len() + 1,
                1 if i == race => cpus.len().saturating_sub(1),
                _ => cpus.len(),
            };
            s.push_str(&format!("{}:", 10 + i));
            for c in 0..n {
                // Near the 32-bit wrap for some lines.
                let v = (u64::from(u32::MAX) - 50 + rate * step + c as u64) % (1 << 32);
                s.push_str(&format!(" {v}"));
            }
            s.push_str(&format!(" PCI-MSI {i}-edge dev{i}\n"));
        }
        s
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,300}") {
            let _ = parse_interrupts(&s);
            let _ = collector(3).account(s.as_bytes());
        }

        #[test]
        fn never_panics_on_near_misses(
            lines in proptest::collection::vec("[ 0-9A-Z:a-z-]{0,40}", 0..8),
        ) {
            let text = format!("   CPU0   CPU1\n{}", lines.join("\n"));
            let _ = parse_interrupts(&text);
            let mut c = collector(3);
            let _ = c.account(text.as_bytes());
            let _ = c.account(text.as_bytes());
        }

        #[test]
        fn counts_read_eight_bytes_at_a_time_as_one_by_one(s in "[0-9 x\t\n]{0,24}") {
            let b = s.as_bytes();
            let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
            let ends = b.get(digits).is_none_or(|&c| is_blank(c) || c == b'\n');
            let want = if digits > 0 && ends {
                s[..digits].parse::<u64>().ok().map(|v| (v, digits))
            } else {
                None
            };
            prop_assert_eq!(count_at(b, 0), want);
        }

        /// A line in the kernel's fixed columns reads the same as token by token.
        #[test]
        fn fixed_columns_read_as_tokens(
            counts in proptest::collection::vec(
                prop_oneof![Just(0u64), 0u64..1000, 0u64..=u64::from(u32::MAX), 0u64..10_000_000_000],
                1..40,
            ),
            name in "[0-9]{1,4}|[A-Z]{3}",
            desc in "( [A-Za-z0-9:.-]{1,12}){0,4}",
            extra in any::<bool>(),
        ) {
            let mut line = format!("{name:>4}:");
            for v in &counts {
                line.push_str(&format!("{v:>11}"));
            }
            let mut got = Vec::new();
            let ncpu = counts.len() - usize::from(extra);
            let text = format!("{line}  IR-PCI-MSIX{desc}\n");
            let (body, next) = parse_line(text.as_bytes(), 0, ncpu, &mut got);
            prop_assert_eq!(next, text.len());
            if extra && ncpu > 0 {
                let columns = matches!(body, Body::Skip { problem: Problem::Columns(n), .. } if n == ncpu + 1);
                let ok = columns || (ncpu == 0 && matches!(body, Body::Skip { .. }));
                prop_assert!(ok, "{:?}", body);
            } else if !extra {
                prop_assert!(matches!(body, Body::Line(_)), "{:?}", body);
                prop_assert_eq!(&got, &counts);
            }
            let mut slow = Vec::new();
            let (body_slow, _) = parse_line(text.replace(':', ": \t").as_bytes(), 0, ncpu, &mut slow);
            prop_assert_eq!(matches!(body_slow, Body::Line(_)), matches!(body, Body::Line(_)));
            if !extra {
                prop_assert_eq!(&slow, &counts);
            }
        }

        /// Whatever lines come and go and however the CPU set changes, the per-CPU sums never
        /// decrease and the series stay bounded.
        #[test]
        fn sums_are_monotonic_and_series_bounded(
            scrapes in proptest::collection::vec(
                (
                    proptest::collection::btree_set(0u32..12, 1..6),
                    proptest::collection::vec((any::<bool>(), 0u64..40, any::<u8>()), 0..30),
                    0usize..30,
                ),
                1..8,
            ),
        ) {
            let mut c = collector(5);
            let mut last: Vec<u64> = Vec::new();
            for (step, (cpus, lines, race)) in scrapes.iter().enumerate() {
                let cpus: Vec<u32> = cpus.iter().copied().collect();
                let text = random_file(&cpus, lines, step as u64, *race);
                let mut out = Scrape::new();
                if c.account(text.as_bytes()).is_ok() {
                    c.push_cpus(&mut out);
                    c.push_top(&mut out);
                    prop_assert!(out.sample_count() <= cpus.len() + 5);
                }
                prop_assert!(c.lines.len() <= lines.len());
                for (i, &v) in last.iter().enumerate() {
                    prop_assert!(c.per_cpu[i] >= v, "CPU {} went from {} to {}", i, v, c.per_cpu[i]);
                }
                last = c.per_cpu.clone();
            }
        }
    }
}
