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

use super::{Collector, Settings};
use crate::error::Excerpt;
use crate::error::{CollectError, ParseError};
use crate::read::KeptFile;
use crate::scrape::{index_str, Desc, Scrape, Unit};
use std::collections::HashMap;

/// Flags of the interrupts collector.
#[derive(Debug, Clone, clap::Args)]
pub struct InterruptsArgs {
    /// Number of IRQ lines, the busiest since boot, exposed one by one in
    /// reveal_cpu_irq_line_interrupts_total (0 turns the per-line series off).
    #[arg(long = "collector.interrupts.top", default_value_t = DEFAULT_TOP)]
    pub top: usize,
}

/// Enough to show the few vectors of an IRQ storm without a series per line of a big host.
pub const DEFAULT_TOP: usize = 16;

impl Default for InterruptsArgs {
    fn default() -> Self {
        InterruptsArgs { top: DEFAULT_TOP }
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

pub static METRICS: &[&Desc] = &[&CPU_INTERRUPTS, &LINE_INTERRUPTS];

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

/// The parsed file: CPU numbers from the header, and every line's counts in one flat vector.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Interrupts<'a> {
    pub cpus: Vec<u32>,
    pub lines: Vec<IrqLine<'a>>,
    pub counts: Vec<u64>,
}

impl Interrupts<'_> {
    pub fn counts_of(&self, line: &IrqLine<'_>) -> &[u64] {
        &self.counts[line.start..line.start + line.len]
    }
}

/// Largest CPU number accepted in the header (Linux's `NR_CPUS` is at most 8192).
const MAX_CPU: u32 = 65_535;

/// Parses the text of `/proc/interrupts`.
///
/// Numbered IRQ lines must have one count per CPU of the header (anything else is a layout
/// this parser does not know). Named lines may have fewer: those are system-wide counts.
pub fn parse_interrupts(text: &str) -> Result<Interrupts<'_>, ParseError> {
    let mut lines = text.lines().enumerate();
    let Some((_, header)) = lines.next() else {
        return Err(ParseError::new(0, "empty file"));
    };
    let mut out = Interrupts::default();
    for name in header.split_ascii_whitespace() {
        let cpu = name
            .strip_prefix("CPU")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| {
                ParseError::new(1, format!("header column {:?} is not CPUn", Excerpt(name)))
            })?;
        // The collector keeps one slot per CPU number up to the largest: a garbage header
        // (`CPU4000000000`) must not allocate gigabytes.
        if cpu > MAX_CPU {
            return Err(ParseError::new(
                1,
                format!(
                    "header column {:?}: CPU number above {MAX_CPU}",
                    Excerpt(name)
                ),
            ));
        }
        out.cpus.push(cpu);
    }
    if out.cpus.is_empty() {
        return Err(ParseError::new(1, "header names no CPU"));
    }
    let ncpu = out.cpus.len();
    for (i, line) in lines {
        let lineno = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let (irq, mut rest) = line
            .split_once(':')
            .ok_or_else(|| ParseError::new(lineno, "no ':' after the IRQ name"))?;
        let irq = irq.trim();
        if irq.is_empty() || irq.contains(char::is_whitespace) {
            return Err(ParseError::new(
                lineno,
                format!("bad IRQ name {irq:?}", irq = Excerpt(irq)),
            ));
        }
        let start = out.counts.len();
        // Take leading integers, at most one per CPU; the description may itself hold numbers
        // (`IO-APIC 5-edge`, `GICv3 27 Level`), which is why the count is bounded.
        while out.counts.len() - start < ncpu {
            let trimmed = rest.trim_start();
            let end = trimmed
                .find(|c: char| c.is_ascii_whitespace())
                .unwrap_or(trimmed.len());
            let Ok(v) = trimmed[..end].parse::<u64>() else {
                break;
            };
            out.counts.push(v);
            rest = &trimmed[end..];
        }
        let len = out.counts.len() - start;
        let numbered = irq.bytes().all(|b| b.is_ascii_digit());
        if numbered && len != ncpu {
            return Err(ParseError::new(
                lineno,
                format!("IRQ {irq} has {len} counts for {ncpu} CPUs: unknown layout"),
            ));
        }
        if len == 0 {
            return Err(ParseError::new(lineno, format!("IRQ {irq} has no count")));
        }
        out.lines.push(IrqLine {
            irq,
            device: rest.trim(),
            start,
            len,
            per_cpu: len == ncpu,
        });
    }
    if out.lines.is_empty() {
        return Err(ParseError::new(0, "no IRQ lines"));
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
    irq: String,
    /// The description as the file prints it, to recognise the line on the next scrape.
    raw_device: String,
    /// The description with runs of blanks collapsed, as the label shows it.
    device: String,
    /// Indexed by CPU number for per-CPU lines, by position for system-wide ones.
    prev: Vec<u64>,
    total: u64,
}

pub struct InterruptsCollector {
    path: KeptFile,
    buf: String,
    top: usize,
    /// In the order of the file's lines at the last scrape, so lookups are positional.
    lines: Vec<LineState>,
    /// Unwrapped interrupt count per CPU number (kept for offline CPUs, which may return).
    per_cpu: Vec<u64>,
    /// Scratch for choosing the top lines, reused across scrapes.
    order: Vec<usize>,
}

impl InterruptsCollector {
    pub fn new(s: &Settings) -> Self {
        InterruptsCollector {
            path: KeptFile::new(s.paths.proc("interrupts")),
            buf: String::new(),
            top: s.interrupts.top,
            lines: Vec::new(),
            per_cpu: Vec::new(),
            order: Vec::new(),
        }
    }

    /// Folds one parsed file into the monotonic state.
    fn account(&mut self, parsed: &Interrupts<'_>) {
        let same_layout = self.lines.len() == parsed.lines.len()
            && self
                .lines
                .iter()
                .zip(&parsed.lines)
                .all(|(s, l)| s.irq == l.irq && s.raw_device == l.device);
        if !same_layout {
            // Lines appeared, went or changed device: rebuild the order, keeping the state of
            // lines that are still there.
            let mut old: HashMap<(String, String), LineState> = self
                .lines
                .drain(..)
                .map(|s| ((s.irq.clone(), s.raw_device.clone()), s))
                .collect();
            for l in &parsed.lines {
                let st = old
                    .remove(&(l.irq.to_string(), l.device.to_string()))
                    .unwrap_or_else(|| LineState {
                        irq: l.irq.to_string(),
                        raw_device: l.device.to_string(),
                        device: l
                            .device
                            .split_ascii_whitespace()
                            .collect::<Vec<_>>()
                            .join(" "),
                        prev: Vec::new(),
                        total: 0,
                    });
                self.lines.push(st);
            }
        }
        let max_cpu = parsed.cpus.iter().copied().max().unwrap_or(0) as usize;
        if self.per_cpu.len() <= max_cpu {
            self.per_cpu.resize(max_cpu + 1, 0);
        }
        for (st, l) in self.lines.iter_mut().zip(&parsed.lines) {
            let counts = parsed.counts_of(l);
            let width = if l.per_cpu { max_cpu + 1 } else { counts.len() };
            if st.prev.len() < width {
                st.prev.resize(width, 0);
            }
            for (pos, &cur) in counts.iter().enumerate() {
                let slot = if l.per_cpu {
                    parsed.cpus[pos] as usize
                } else {
                    pos
                };
                let d = delta(st.prev[slot], cur);
                st.prev[slot] = cur;
                st.total = st.total.saturating_add(d);
                if l.per_cpu {
                    self.per_cpu[slot] = self.per_cpu[slot].saturating_add(d);
                }
            }
        }
    }

    /// Pushes the busiest lines, busiest first; ties go by file order so the set does not flap.
    fn push_top(&mut self, out: &mut Scrape) {
        self.order.clear();
        self.order.extend(0..self.lines.len());
        let lines = &self.lines;
        self.order
            .sort_unstable_by(|&a, &b| lines[b].total.cmp(&lines[a].total).then(a.cmp(&b)));
        for &i in self.order.iter().take(self.top) {
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
        let mut buf = std::mem::take(&mut self.buf);
        let res = self.path.read_into(&mut buf).and_then(|()| {
            let parsed = parse_interrupts(&buf).map_err(|e| CollectError::parse(&self.path, e))?;
            self.account(&parsed);
            for &cpu in &parsed.cpus {
                let mut b = [0; 20];
                let label = index_str(u64::from(cpu), &mut b);
                out.push_values(&CPU_INTERRUPTS, &[label], self.per_cpu[cpu as usize] as f64);
            }
            Ok(())
        });
        self.buf = buf;
        res?;
        self.push_top(out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        // A numbered line with a missing CPU column.
        assert!(parse_interrupts("  CPU0 CPU1\n 5: 1 IO-APIC 5-edge x\n").is_err());
        assert!(parse_interrupts("  CPU0 CPU1\n 5 1 2\n").is_err());
        assert!(parse_interrupts("  CPUx\n 5: 1\n").is_err());
        assert!(parse_interrupts("  CPU0\n").is_err());
        assert!(parse_interrupts("").is_err());
        assert!(parse_interrupts("  CPU0\nLOC: timer\n").is_err());
    }

    #[test]
    fn rejects_cpu_numbers_beyond_any_host() {
        let err = parse_interrupts("  CPU0 CPU4000000000\n 5: 1 2 IO-APIC x\n").unwrap_err();
        assert!(err.msg.contains("CPU number above"), "{err:?}");
        assert!(parse_interrupts("  CPU65535\n 5: 1 IO-APIC x\n").is_ok());
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

    #[test]
    fn top_flag_reaches_the_collector() {
        let cli = crate::cli::parse_from(["x", "--collector.interrupts.top", "3"]).unwrap();
        assert_eq!(cli.settings.interrupts.top, 3);
        let cli = crate::cli::parse_from(["x"]).unwrap();
        assert_eq!(cli.settings.interrupts.top, DEFAULT_TOP);
        let mut c = collector(3);
        c.account(&parse_interrupts(X86).unwrap());
        let mut out = Scrape::new();
        c.push_top(&mut out);
        let top: Vec<(String, f64)> = out
            .families()
            .flat_map(|f| f.samples.iter().map(|s| (s.labels[0].1.clone(), s.value)))
            .collect();
        let want = [("LOC", 58339.0), ("36", 43041.0), ("0", 44.0)];
        assert_eq!(top, want.map(|(i, v)| (i.to_string(), v)));
    }

    fn collector(top: usize) -> InterruptsCollector {
        let mut s = Settings {
            paths: Paths::new("/nonexistent", "/nonexistent"),
            ..Default::default()
        };
        s.interrupts.top = top;
        InterruptsCollector::new(&s)
    }

    #[test]
    fn sums_stay_monotonic_across_wraps_and_hotplug() {
        let mut c = collector(2);
        let near_wrap = u32::MAX - 9;
        let a = format!("  CPU0 CPU1\n 1: {near_wrap} 5 dev-a\n 2: 1 1 dev-b\nERR: 4\n");
        c.account(&parse_interrupts(&a).unwrap());
        assert_eq!(c.per_cpu, vec![u64::from(near_wrap) + 1, 6]);
        // CPU0's IRQ 1 wraps by 20; CPU1 goes offline and CPU2 comes online.
        let b = "  CPU0 CPU2\n 1: 10 3 dev-a\n 2: 1 0 dev-b\nERR: 4\n";
        c.account(&parse_interrupts(b).unwrap());
        assert_eq!(c.per_cpu, vec![u64::from(near_wrap) + 21, 6, 3]);
        assert_eq!(c.lines[0].total, u64::from(near_wrap) + 5 + 20 + 3);
        // IRQ 2 is reused by another device: its count starts over, and a new line appears.
        let d = "  CPU0 CPU2\n 1: 10 3 dev-a\n 2: 2 0 dev-c\n 3: 9 9 dev-d\nERR: 5\n";
        c.account(&parse_interrupts(d).unwrap());
        assert_eq!(c.lines[1].device, "dev-c");
        assert_eq!(c.lines[1].total, 2);
        assert_eq!(c.lines[2].total, 18);
        assert_eq!(c.lines[3].total, 5);
        assert_eq!(c.per_cpu, vec![u64::from(near_wrap) + 21 + 2 + 9, 6, 3 + 9]);
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,300}") {
            let _ = parse_interrupts(&s);
        }

        #[test]
        fn never_panics_on_near_misses(
            lines in proptest::collection::vec("[ 0-9A-Z:a-z-]{0,40}", 0..8),
        ) {
            let text = format!("   CPU0   CPU1\n{}", lines.join("\n"));
            if let Ok(p) = parse_interrupts(&text) {
                let mut c = collector(3);
                c.account(&p);
                c.account(&p);
            }
        }
    }
}
