//! What a collector emits during one scrape: metric descriptors and samples.
//!
//! Descriptors are `const`s beside the collector that emits them, so names, units, kinds and
//! HELP texts are fixed at compile time and the metric list of docs/metrics.md is generated
//! from them.
//! A [`Scrape`] is a reusable buffer: the runner gives each collector its own and clears it,
//! keeping the allocations, before every update. Samples pushed with [`Scrape::push_values`]
//! reuse the label strings of the samples cleared, so a steady scrape allocates nothing for
//! them (per-sample `Vec` and `String` allocations and frees were a third of a scrape's
//! user-space instructions).

use crate::series_filter::SeriesFilter;
use std::sync::Arc;

/// Whether a metric is a monotonically increasing counter or a gauge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
}

/// The base unit of a metric, appended to its name as Prometheus conventions ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    None,
    Seconds,
    Bytes,
    Joules,
    Hertz,
    Celsius,
    Ratio,
    Watts,
    Volts,
}

impl Unit {
    pub const fn as_str(self) -> &'static str {
        match self {
            Unit::None => "",
            Unit::Seconds => "seconds",
            Unit::Bytes => "bytes",
            Unit::Joules => "joules",
            Unit::Hertz => "hertz",
            Unit::Celsius => "celsius",
            Unit::Ratio => "ratio",
            Unit::Watts => "watts",
            Unit::Volts => "volts",
        }
    }
}

/// A metric family's description. `name` excludes the unit and the `_total` suffix, which the
/// encoder appends (`reveal_cpu_time` + seconds + counter = `reveal_cpu_time_seconds_total`).
#[derive(Debug, PartialEq, Eq)]
pub struct Desc {
    pub name: &'static str,
    pub unit: Unit,
    pub kind: Kind,
    pub help: &'static str,
    /// Label names, in the order the collector emits them.
    pub labels: &'static [&'static str],
}

impl Desc {
    pub const fn counter(
        name: &'static str,
        unit: Unit,
        labels: &'static [&'static str],
        help: &'static str,
    ) -> Desc {
        Desc {
            name,
            unit,
            kind: Kind::Counter,
            help,
            labels,
        }
    }

    pub const fn gauge(
        name: &'static str,
        unit: Unit,
        labels: &'static [&'static str],
        help: &'static str,
    ) -> Desc {
        Desc {
            name,
            unit,
            kind: Kind::Gauge,
            help,
            labels,
        }
    }

    /// The family name as it appears in `# TYPE` lines: name plus unit suffix.
    pub fn family_name(&self) -> String {
        match self.unit {
            Unit::None => self.name.to_string(),
            u => format!("{}_{}", self.name, u.as_str()),
        }
    }

    /// The sample name as it appears in the exposition (counters end in `_total`).
    pub fn sample_name(&self) -> String {
        match self.kind {
            Kind::Counter => format!("{}_total", self.family_name()),
            Kind::Gauge => self.family_name(),
        }
    }
}

/// Writes `n` in decimal into `buf` and returns it: a CPU or node label value without an
/// allocation, for [`Scrape::push_values`].
pub fn index_str(n: u64, buf: &mut [u8; 20]) -> &str {
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    std::str::from_utf8(&buf[i..]).unwrap_or("")
}

/// Label pairs of one sample, in the order of the descriptor's `labels`.
pub type Labels = Vec<(&'static str, String)>;

#[derive(Debug)]
pub struct Sample {
    pub labels: Labels,
    pub value: f64,
}

#[derive(Debug)]
pub struct Family {
    pub desc: &'static Desc,
    pub samples: Vec<Sample>,
    /// Samples of earlier updates, kept for their label allocations.
    spare: Vec<Sample>,
    /// Not served by the page being scraped ([`Scrape::skip_only`]): pushes are dropped.
    skipped: bool,
    /// The page serves only the series this keeps ([`Scrape::filter_only`]).
    filter: Option<Arc<SeriesFilter>>,
}

/// The samples one collector produced in one update.
#[derive(Debug, Default)]
pub struct Scrape {
    families: Vec<Family>,
    /// Families the page being scraped does not serve, by address ([`Scrape::skip_only`]).
    skip: Vec<usize>,
    /// Families the page serves some series of, by address ([`Scrape::filter_only`]).
    filters: Vec<(usize, Arc<SeriesFilter>)>,
}

/// A descriptor's address: descriptors are statics, so this identifies the family.
fn addr(desc: &Desc) -> usize {
    desc as *const Desc as usize
}

fn find_filter(filters: &[(usize, Arc<SeriesFilter>)], desc: &Desc) -> Option<Arc<SeriesFilter>> {
    let at = addr(desc);
    filters
        .iter()
        .find(|(a, _)| *a == at)
        .map(|(_, f)| f.clone())
}

impl Scrape {
    pub fn new() -> Self {
        Scrape::default()
    }

    /// Forgets all samples, keeping allocations for the next scrape: as many spare samples
    /// per family as the last scrape produced. Samples pushed with owned labels ([`push`],
    /// [`push1`]) never take a spare, so without the bound the pool grew by them on every
    /// scrape (a few kilobytes a scrape: 240 MB in ten minutes under ten scrapers).
    ///
    /// [`push`]: Scrape::push
    /// [`push1`]: Scrape::push1
    pub fn clear(&mut self) {
        for f in &mut self.families {
            let used = f.samples.len();
            f.spare.append(&mut f.samples);
            f.spare.truncate(used);
        }
    }

    /// Sets the families the next updates leave out: the runner's, for a page that does not
    /// serve them (a cadence, a selection). Their samples are dropped when pushed, before any
    /// label is copied, and [`Scrape::wants`] tells a collector it may skip reading them. The
    /// runner filters what it encodes either way: this only saves the work.
    pub fn skip_only(&mut self, skip: impl IntoIterator<Item = &'static Desc>) {
        self.skip.clear();
        self.skip.extend(skip.into_iter().map(addr));
        for f in &mut self.families {
            f.skipped = self.skip.contains(&addr(f.desc));
        }
    }

    /// Sets the families of which the next updates keep only the series a filter keeps:
    /// the runner's, for a page that serves only some (`match:` rules). A sample pushed with
    /// [`Scrape::push_values`] that the filter does not keep is dropped before its labels
    /// are copied; [`Scrape::may_want`] tells a collector which parts it may skip reading.
    /// The runner filters what it encodes either way.
    pub fn filter_only(
        &mut self,
        filters: impl IntoIterator<Item = (&'static Desc, Arc<SeriesFilter>)>,
    ) {
        self.filters.clear();
        self.filters
            .extend(filters.into_iter().map(|(d, f)| (addr(d), f)));
        for f in &mut self.families {
            f.filter = find_filter(&self.filters, f.desc);
        }
    }

    /// Whether the page being scraped serves `desc` (true unless [`Scrape::skip_only`] named
    /// it): a collector reads what only skipped families need only when this says so.
    pub fn wants(&self, desc: &Desc) -> bool {
        !self.skip.contains(&addr(desc))
    }

    /// Whether the page being scraped may serve a series of `desc` whose label at position
    /// `i` (the descriptor's order) is `value(i)`, where known (`None`: any value): false
    /// only when no such series is served, so a collector can skip reading them.
    pub fn may_want<'a>(&self, desc: &Desc, value: impl Fn(usize) -> Option<&'a str>) -> bool {
        self.wants(desc) && find_filter(&self.filters, desc).is_none_or(|f| f.may_keep(value))
    }

    fn family(&mut self, desc: &'static Desc) -> &mut Family {
        match self
            .families
            .iter()
            .rposition(|f| std::ptr::eq(f.desc, desc))
        {
            Some(i) => &mut self.families[i],
            None => {
                let skipped = self.skip.contains(&addr(desc));
                let filter = find_filter(&self.filters, desc);
                self.families.push(Family {
                    desc,
                    samples: Vec::new(),
                    spare: Vec::new(),
                    skipped,
                    filter,
                });
                self.families.last_mut().expect("just pushed")
            }
        }
    }

    /// Adds one sample whose label values are given in the order of the descriptor's `labels`,
    /// borrowed: they are copied into the strings of a sample cleared earlier when there is
    /// one. Non-finite values are dropped, as by [`Scrape::push`].
    pub fn push_values(&mut self, desc: &'static Desc, values: &[&str], value: f64) {
        debug_assert_eq!(values.len(), desc.labels.len(), "{}: {values:?}", desc.name);
        if !value.is_finite() {
            return;
        }
        let fam = self.family(desc);
        if fam.skipped
            || fam
                .filter
                .as_ref()
                .is_some_and(|f| !f.keeps(|i| values.get(i).copied().unwrap_or("")))
        {
            return;
        }
        let mut sample = fam.spare.pop().unwrap_or(Sample {
            labels: Vec::new(),
            value,
        });
        sample.labels.truncate(values.len());
        for (i, (key, v)) in desc.labels.iter().zip(values).enumerate() {
            match sample.labels.get_mut(i) {
                Some((k, s)) => {
                    *k = key;
                    s.clear();
                    s.push_str(v);
                }
                None => sample.labels.push((key, (*v).to_string())),
            }
        }
        sample.value = value;
        fam.samples.push(sample);
    }

    /// Adds one sample. Non-finite values are dropped: a NaN is never exposed as a reading.
    pub fn push(&mut self, desc: &'static Desc, labels: Labels, value: f64) {
        debug_assert_eq!(
            labels.len(),
            desc.labels.len(),
            "{}: labels {:?} vs declared {:?}",
            desc.name,
            labels,
            desc.labels
        );
        if !value.is_finite() {
            return;
        }
        debug_assert!(
            labels.iter().zip(desc.labels).all(|((k, _), d)| k == d),
            "{}: labels {:?} not in the declared order {:?}",
            desc.name,
            labels,
            desc.labels
        );
        let fam = self.family(desc);
        let kept = |f: &SeriesFilter| f.keeps(|i| labels.get(i).map_or("", |(_, v)| v.as_str()));
        if !fam.skipped && fam.filter.as_deref().is_none_or(kept) {
            fam.samples.push(Sample { labels, value });
        }
    }

    /// Adds one sample without labels.
    pub fn push1(&mut self, desc: &'static Desc, value: f64) {
        self.push(desc, Vec::new(), value)
    }

    /// Families in the order they were first pushed; empty ones are skipped.
    pub fn families(&self) -> impl Iterator<Item = &Family> {
        self.families.iter().filter(|f| !f.samples.is_empty())
    }

    pub fn sample_count(&self) -> usize {
        self.families.iter().map(|f| f.samples.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_spare_pool_does_not_grow_from_scrape_to_scrape() {
        use super::*;
        static PLAIN: Desc = Desc::gauge("reveal_test_plain", Unit::None, &[], "test");
        static LABELLED: Desc = Desc::gauge("reveal_test_labelled", Unit::None, &["cpu"], "test");
        let mut s = Scrape::new();
        let mut pooled = Vec::new();
        for _ in 0..50 {
            s.clear();
            for i in 0..20 {
                s.push1(&PLAIN, i as f64);
                s.push_values(&LABELLED, &["0"], i as f64);
            }
            pooled.push(s.families.iter().map(|f| f.spare.len()).sum::<usize>());
        }
        assert!(pooled.iter().all(|&n| n <= 40), "{pooled:?}");
        assert_eq!(s.sample_count(), 40);
    }

    #[test]
    fn skipped_families_are_not_pushed_until_served_again() {
        use super::*;
        static A: Desc = Desc::gauge("reveal_test_a", Unit::None, &["cpu"], "test");
        static B: Desc = Desc::gauge("reveal_test_b", Unit::None, &[], "test");
        let mut s = Scrape::new();
        s.push_values(&A, &["0"], 1.0);
        s.skip_only([&A]);
        assert!(!s.wants(&A) && s.wants(&B));
        s.clear();
        s.push_values(&A, &["0"], 1.0);
        s.push(&A, vec![("cpu", "1".into())], 1.0);
        s.push1(&B, 2.0);
        assert_eq!(s.sample_count(), 1);
        s.skip_only([]);
        s.clear();
        s.push_values(&A, &["0"], 1.0);
        assert!(s.wants(&A));
        assert_eq!(s.sample_count(), 1);
    }

    use super::*;

    static D: Desc = Desc::counter("reveal_cpu_time", Unit::Seconds, &["cpu"], "help");

    #[test]
    fn names() {
        assert_eq!(D.family_name(), "reveal_cpu_time_seconds");
        assert_eq!(D.sample_name(), "reveal_cpu_time_seconds_total");
    }

    #[test]
    fn nan_is_dropped_and_clear_keeps_nothing() {
        let mut s = Scrape::new();
        s.push(&D, vec![("cpu", "0".into())], f64::NAN);
        assert_eq!(s.sample_count(), 0);
        s.push(&D, vec![("cpu", "0".into())], 1.0);
        s.push(&D, vec![("cpu", "1".into())], 2.0);
        assert_eq!(s.families().count(), 1);
        assert_eq!(s.sample_count(), 2);
        s.clear();
        assert_eq!(s.families().count(), 0);
    }

    #[test]
    fn index_strings() {
        let mut b = [0u8; 20];
        for n in [0, 7, 10, 255, 4096, u64::MAX] {
            assert_eq!(index_str(n, &mut b), n.to_string());
        }
    }

    static T: Desc = Desc::gauge("reveal_t", Unit::None, &["a", "b"], "help");

    #[test]
    fn push_values_reuses_cleared_samples_and_matches_push() {
        let mut s = Scrape::new();
        s.push_values(&T, &["x", "long value"], 1.0);
        s.push_values(&T, &["y", "z"], f64::INFINITY);
        s.clear();
        s.push_values(&T, &["1", "2"], 2.0);
        s.push(&T, vec![("a", "3".into()), ("b", "4".into())], 3.0);
        s.push_values(&T, &["5", "6"], 4.0);
        let got: Vec<_> = s
            .families()
            .flat_map(|f| f.samples.iter())
            .map(|x| (x.labels.clone(), x.value))
            .collect();
        let l = |a: &str, b: &str| vec![("a", a.to_string()), ("b", b.to_string())];
        assert_eq!(
            got,
            vec![(l("1", "2"), 2.0), (l("3", "4"), 3.0), (l("5", "6"), 4.0)]
        );
    }
}
