//! How often a file whose cost grows with the host is read: at most a share of one core.
//!
//! `/proc/interrupts` has a count per vector and CPU: 36 lines on a 2-CPU VM, about 1,200
//! lines and 115,000 counts on a 96-CPU node with NVMe and InfiniBand queues on every CPU.
//! Reading and folding it costs 0.07 ms on the first and 0.75 ms on the big-host fixture (a
//! copy there; on a real node the kernel also prints every count anew). Scraped every 100 ms,
//! that is 0.07 % of a core on the one and 0.75 % or more on the other, for one collector of
//! twenty. So the collector times its reads and spaces them so that they take at most
//! `--collector.interrupts.max-cpu-percent` of one core (0.5 by default, a quarter of the
//! exporter's whole 2 % on a wide host): the next read is due when the last read's CPU time
//! (the thread's own, [`thread_cpu`], so that a read preempted on a busy host is not taken
//! for a costly one; the median of the last five, so that one odd read does not move it)
//! divided by that share has passed; the scrapes in between expose the last read's values.
//! Where a read costs little (every small host) every scrape reads; on the fixture every other
//! one does; on a node where the kernel's printing takes 3 ms, one every 600 ms. What the
//! analyzer reads of the file, each CPU's interrupts per second over the last second
//! (`rate(reveal_cpu_interrupts_total[1s])`), still sees several reads in every second up to
//! 2 ms a read. `--collector.interrupts.min-interval-ms` sets a least interval of its own.
//!
//! The reads keep one rhythm. Between reads the scrapes repeat the last values, so the
//! spacing of the reads is part of what `rate()` gives the analyzer: reads every second
//! scrape make a steady ripple in each CPU's rate, which the baseline learns; reads that
//! switch between every second and every third scrape as the cost of a read wanders (a read
//! taking 0.9 then 1.1 ms) change that ripple, and the analyzer saw the change as an anomaly
//! of every CPU's interrupts (big-host case 12). So the interval moves only when the median
//! cost has left a band around the cost it was set for (a factor [`BAND`] either way), and
//! reads fall due on a fixed schedule, one interval after the time the last was due rather
//! than after the scrape that made it: they average one per interval, whatever the scrape
//! period, without drifting onto a slower multiple of it.

use std::time::{Duration, Instant};

/// Reads timed for the median.
const KEPT: usize = 5;

/// How far the median cost may move, as a factor either way, before the interval follows it.
pub const BAND: f64 = 1.5;

#[derive(Debug)]
pub struct ReadBudget {
    /// The time between reads per unit of a read's time: 100 / the percent of one core they
    /// may take (200 for 0.5 %); 0: no bound.
    per_read: f64,
    /// The least interval between reads, whatever they cost.
    min_interval: Duration,
    /// The last reads' durations, the latest at `(timed - 1) % KEPT`.
    took: [Duration; KEPT],
    timed: usize,
    /// When the next read is due: one interval after the last was due.
    next_due: Option<Instant>,
    /// The time between reads: set by the first read from its cost, and again by a read
    /// whose median cost has left the band around the one that set it (a scrape only
    /// compares with it).
    interval: Duration,
    /// Whether a read has set `interval` (before one, it is the least interval).
    set: bool,
    /// The interval last written to the log (said when it first spaces reads, and whenever
    /// it doubles or halves).
    said: Duration,
}

impl ReadBudget {
    /// `percent` of one core (0: no bound), and a least interval.
    pub fn new(percent: f64, min_interval: Duration) -> ReadBudget {
        ReadBudget {
            per_read: if percent.is_finite() && percent > 0.0 {
                100.0 / percent
            } else {
                0.0
            },
            min_interval,
            took: [Duration::ZERO; KEPT],
            timed: 0,
            next_due: None,
            interval: min_interval,
            set: false,
            said: Duration::ZERO,
        }
    }

    /// The time between reads now: the least interval, or the median read's time divided
    /// by the share when that is longer.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    fn spaced(&self) -> Duration {
        if self.per_read == 0.0 || self.timed == 0 {
            return self.min_interval;
        }
        let mut took = self.took;
        let took = &mut took[..self.timed.min(KEPT)];
        took.sort_unstable();
        let median = took[took.len() / 2];
        let spaced = (median.as_nanos() as f64 * self.per_read).round();
        self.min_interval
            .max(Duration::from_nanos(spaced.min(u64::MAX as f64) as u64))
    }

    /// Whether a read is due at `now`.
    pub fn due(&self, now: Instant) -> bool {
        self.next_due.is_none_or(|t| now >= t)
    }

    /// A read that started at `at` and took `took`. Returns the new interval when the log
    /// should say it: the first time reads are spaced beyond every scrape's (100 ms), and
    /// after that whenever it has doubled or halved.
    pub fn read(&mut self, at: Instant, took: Duration) -> Option<Duration> {
        self.took[self.timed % KEPT] = took;
        self.timed += 1;
        let spaced = self.spaced();
        let (now, was) = (spaced.as_secs_f64(), self.interval.as_secs_f64());
        if !self.set || now > was * BAND || now * BAND < was {
            self.interval = spaced;
            self.set = true;
        }
        // On schedule from when the last read was due; from this read where the schedule
        // has fallen more than an interval behind (no scrape came for a while), so that
        // missed reads are not made up in a burst.
        let next = self.next_due.map_or(at, |t| t + self.interval);
        self.next_due = Some(if next <= at { at + self.interval } else { next });
        let now = self.interval;
        let first = self.said.is_zero() && now > Duration::from_millis(100);
        let moved = !self.said.is_zero() && (now >= self.said * 2 || now * 2 <= self.said);
        (first || moved).then(|| {
            self.said = now;
            now
        })
    }
}

/// The calling thread's CPU time so far (user and kernel), or `None` where the clock cannot
/// be read.
pub fn thread_cpu() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid one it is given.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn reads_are_spaced_by_their_median_cost_over_the_share() {
        let t0 = Instant::now();
        let mut b = ReadBudget::new(0.5, Duration::ZERO);
        assert!(b.due(t0), "the first read is always due");
        // 0.75 ms a read at 0.5 % of a core: one read per 150 ms.
        let said = b.read(t0, MS * 3 / 4);
        assert_eq!(b.interval(), MS * 150);
        assert_eq!(
            said,
            Some(MS * 150),
            "the first spacing beyond 100 ms is said"
        );
        assert!(!b.due(t0 + MS * 100) && b.due(t0 + MS * 150));
        // One slow read (a busy host) does not move the median of five.
        for k in 1..5 {
            let took = if k == 2 { MS * 30 } else { MS * 3 / 4 };
            assert_eq!(b.read(t0 + MS * 150 * k, took), None);
            assert_eq!(b.interval(), MS * 150, "read {k}");
        }
    }

    /// Scrapes every 100 ms from `t0` for `secs`, reading when due at `cost(i)` the i-th
    /// read; the reads made in each second.
    fn scraped(
        b: &mut ReadBudget,
        t0: Instant,
        secs: u32,
        cost: impl Fn(u32) -> Duration,
    ) -> Vec<u32> {
        let mut per_second = vec![0; secs as usize];
        let mut reads = 0;
        for k in 0..secs * 10 {
            let at = t0 + MS * 100 * k;
            if b.due(at) {
                b.read(at, cost(reads));
                reads += 1;
                per_second[(k / 10) as usize] += 1;
            }
        }
        per_second
    }

    #[test]
    fn reads_keep_one_rhythm_while_their_cost_wanders_within_the_band() {
        let t0 = Instant::now();
        let mut b = ReadBudget::new(0.5, Duration::ZERO);
        // 0.9 to 1.1 ms a read at 0.5 % of a core: 180 to 220 ms, either side of two scrapes.
        let wander = |i: u32| Duration::from_micros([900, 1100, 1000, 1050, 950][i as usize % 5]);
        let per_second = scraped(&mut b, t0, 60, wander);
        assert_eq!(
            b.interval(),
            MS * 180,
            "set by the first read, kept within the band"
        );
        // On schedule, not after each read: 1000 / 180 reads a second on average, the same
        // every second within one read (a read after each scrape that found the last due
        // would make them every 200 ms, five a second, or 300 ms, three).
        let total: u32 = per_second.iter().sum();
        assert!((332..=334).contains(&total), "{total} reads in 60 s");
        assert!(
            per_second.iter().all(|n| (5..=6).contains(n)),
            "{per_second:?}"
        );
        // A cost out of the band (twice as high) moves it, once.
        let per_second = scraped(&mut b, t0 + MS * 60_000, 10, |_| MS * 2);
        assert_eq!(b.interval(), MS * 400);
        assert!(
            per_second[5..].iter().all(|n| (2..=3).contains(n)),
            "{per_second:?}"
        );
    }

    #[test]
    fn a_schedule_left_behind_is_not_made_up_in_a_burst() {
        let t0 = Instant::now();
        let mut b = ReadBudget::new(0.5, Duration::ZERO);
        b.read(t0, MS * 3 / 4); // every 150 ms
                                // No scrape for ten seconds: one read is due, and the next an interval after it.
        let later = t0 + MS * 10_000;
        assert!(b.due(later));
        b.read(later, MS * 3 / 4);
        assert!(!b.due(later + MS * 100) && b.due(later + MS * 150));
    }

    #[test]
    fn a_cheap_read_is_made_every_scrape_and_no_share_means_no_bound() {
        let t0 = Instant::now();
        // 0.07 ms a read (the 2-CPU VM): due again after 14 ms, before any next scrape.
        let mut b = ReadBudget::new(0.5, Duration::ZERO);
        assert_eq!(
            b.read(t0, Duration::from_micros(70)),
            None,
            "nothing to say"
        );
        assert_eq!(b.interval(), MS * 14);
        assert!(b.due(t0 + MS * 100));
        for percent in [0.0, -1.0, f64::NAN] {
            let mut b = ReadBudget::new(percent, MS * 7);
            b.read(t0, Duration::from_secs(1));
            assert_eq!(b.interval(), MS * 7, "{percent}: the least interval only");
        }
        // The least interval holds when reads are cheap.
        let mut b = ReadBudget::new(0.5, MS * 1000);
        b.read(t0, Duration::from_micros(70));
        assert_eq!(b.interval(), MS * 1000);
        assert!(!b.due(t0 + MS * 999) && b.due(t0 + MS * 1000));
    }

    #[test]
    fn the_thread_cpu_clock_counts_work_not_sleep() {
        let t0 = thread_cpu().expect("a Linux thread CPU clock");
        std::thread::sleep(MS * 30);
        let slept = thread_cpu().unwrap() - t0;
        let mut x = 0u64;
        let started = Instant::now();
        while started.elapsed() < MS * 30 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let worked = thread_cpu().unwrap() - t0 - slept;
        assert!(slept < MS * 10, "sleeping took {slept:?} of CPU");
        assert!(worked > MS * 5, "30 ms of work counted {worked:?}");
    }

    #[test]
    fn a_change_is_said_when_the_interval_doubles_or_halves() {
        let t0 = Instant::now();
        let mut b = ReadBudget::new(1.0, Duration::ZERO);
        assert_eq!(b.read(t0, MS * 2), Some(MS * 200));
        assert_eq!(b.read(t0, MS * 2), None);
        // The median of (2, 2, 4) is still 2 ms; of (2, 2, 4, 4), 4 ms: 400 ms, twice.
        assert_eq!(b.read(t0, MS * 4), None);
        assert_eq!(b.read(t0, MS * 4), Some(MS * 400));
        // Cheap reads again: the median falls to 2 ms (half: said), then stays, then to
        // 0.5 ms, 50 ms, a quarter of what was said.
        assert_eq!(b.read(t0, MS / 2), Some(MS * 200));
        assert_eq!(b.read(t0, MS / 2), None);
        assert_eq!(b.read(t0, MS / 2), Some(MS * 50));
    }
}
