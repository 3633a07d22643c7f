//! Softirqs per CPU and type, from `/proc/softirqs`.
//!
//! Format (<https://docs.kernel.org/filesystems/proc.html>, section 1.2 "/proc/softirqs"):
//! ```text
//!                     CPU0       CPU1
//!           HI:          0          0
//!        TIMER:       6146       5416
//!       NET_RX:       2689       3978
//! ```
//! The header names the online CPUs (an offline CPU has no column, so positions are not CPU
//! numbers); every row has one count per listed CPU.
//!
//! Each cell is an `unsigned int` in the kernel and wraps at 2^32. Unlike the sums of the
//! interrupts collector, each series here is one kernel counter, so a wrap looks to Prometheus
//! like an ordinary counter reset and costs at most one step of undercounted rate; no state is
//! kept for it.

use super::{Collector, Settings};
use crate::error::Excerpt;
use crate::error::{CollectError, ParseError};
use crate::read::KeptFile;
use crate::scrape::{index_str, Desc, Scrape, Unit};

pub static SOFTIRQS: Desc = Desc::counter(
    "reveal_cpu_softirqs",
    Unit::None,
    &["cpu", "type"],
    "Softirqs handled by each CPU, by softirq type (NET_RX, TIMER, BLOCK, ...).",
);

pub static METRICS: &[&Desc] = &[&SOFTIRQS];

/// The parsed file: `counts[row * cpus.len() + column]`.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Softirqs<'a> {
    pub cpus: Vec<u32>,
    pub types: Vec<&'a str>,
    pub counts: Vec<u64>,
}

impl Softirqs<'_> {
    pub fn row(&self, i: usize) -> &[u64] {
        let n = self.cpus.len();
        &self.counts[i * n..(i + 1) * n]
    }
}

/// Parses the text of `/proc/softirqs`. A row without exactly one count per CPU of the header
/// is an unknown layout, hence an error.
pub fn parse_softirqs(text: &str) -> Result<Softirqs<'_>, ParseError> {
    let mut lines = text.lines().enumerate();
    let Some((_, header)) = lines.next() else {
        return Err(ParseError::new(0, "empty file"));
    };
    let mut out = Softirqs::default();
    for name in header.split_ascii_whitespace() {
        let cpu = name
            .strip_prefix("CPU")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| {
                ParseError::new(1, format!("header column {:?} is not CPUn", Excerpt(name)))
            })?;
        out.cpus.push(cpu);
    }
    if out.cpus.is_empty() {
        return Err(ParseError::new(1, "header names no CPU"));
    }
    for (i, line) in lines {
        let lineno = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let (kind, rest) = line
            .split_once(':')
            .ok_or_else(|| ParseError::new(lineno, "no ':' after the softirq type"))?;
        let kind = kind.trim();
        if kind.is_empty() || kind.contains(char::is_whitespace) {
            return Err(ParseError::new(
                lineno,
                format!("bad softirq type {kind:?}", kind = Excerpt(kind)),
            ));
        }
        let start = out.counts.len();
        for field in rest.split_ascii_whitespace() {
            let v = field.parse().map_err(|_| {
                ParseError::new(
                    lineno,
                    format!(
                        "{field:?} is not an unsigned integer",
                        field = Excerpt(field)
                    ),
                )
            })?;
            out.counts.push(v);
        }
        let n = out.counts.len() - start;
        if n != out.cpus.len() {
            return Err(ParseError::new(
                lineno,
                format!(
                    "{kind} has {n} counts for {} CPUs: unknown layout",
                    out.cpus.len()
                ),
            ));
        }
        out.types.push(kind);
    }
    if out.types.is_empty() {
        return Err(ParseError::new(0, "no softirq rows"));
    }
    Ok(out)
}

pub struct SoftirqsCollector {
    path: KeptFile,
    buf: String,
}

impl SoftirqsCollector {
    pub fn new(s: &Settings) -> Self {
        SoftirqsCollector {
            path: KeptFile::new(s.paths.proc("softirqs")),
            buf: String::new(),
        }
    }
}

impl Collector for SoftirqsCollector {
    fn name(&self) -> &'static str {
        "softirqs"
    }

    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError> {
        self.path.read_into(&mut self.buf)?;
        let p = parse_softirqs(&self.buf).map_err(|e| CollectError::parse(&self.path, e))?;
        for (col, cpu) in p.cpus.iter().enumerate() {
            let mut b = [0; 20];
            let cpu = index_str(u64::from(*cpu), &mut b);
            for (row, kind) in p.types.iter().enumerate() {
                out.push_values(&SOFTIRQS, &[cpu, kind], p.row(row)[col] as f64);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // CPU1 offline: the header skips it.
    const SAMPLE: &str = "                    CPU0       CPU2       \n\
          HI:          0          1\n\
       TIMER:       6146       5416\n\
      NET_TX:          4          0\n\
      NET_RX:       2689       3978\n\
       BLOCK:          0      43041\n\
    IRQ_POLL:          0          0\n\
     TASKLET:        113          3\n\
       SCHED:      11659      11286\n\
     HRTIMER:          0          0\n\
         RCU:      11368      12700\n";

    #[test]
    fn parses_rows_by_named_cpu() {
        let p = parse_softirqs(SAMPLE).unwrap();
        assert_eq!(p.cpus, vec![0, 2]);
        assert_eq!(p.types.len(), 10);
        assert_eq!(p.types[3], "NET_RX");
        assert_eq!(p.row(3), &[2689, 3978]);
        assert_eq!(p.row(0), &[0, 1]);
    }

    #[test]
    fn rejects_unknown_layouts() {
        assert!(parse_softirqs("  CPU0 CPU1\n HI: 1\n").is_err());
        assert!(parse_softirqs("  CPU0\n HI: 1 2\n").is_err());
        assert!(parse_softirqs("  CPU0\n HI: x\n").is_err());
        assert!(parse_softirqs("  CPU0\n HI 1\n").is_err());
        assert!(parse_softirqs("  CPU0\n").is_err());
        assert!(parse_softirqs("  cpu0\n HI: 1\n").is_err());
        assert!(parse_softirqs("").is_err());
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,300}") {
            let _ = parse_softirqs(&s);
        }

        #[test]
        fn never_panics_on_near_misses(lines in proptest::collection::vec("[ 0-9A-Z_:]{0,30}", 0..8)) {
            let text = format!("   CPU0   CPU1\n{}", lines.join("\n"));
            if let Ok(p) = parse_softirqs(&text) {
                for i in 0..p.types.len() {
                    prop_assert_eq!(p.row(i).len(), 2);
                }
            }
        }
    }
}
