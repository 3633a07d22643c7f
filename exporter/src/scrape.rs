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
    /// Not served by the page being scraped ([`Page::skip`]): pushes are dropped.
    skipped: bool,
    /// The page serves only the series `Page::filters[i]` keeps.
    filter: Option<usize>,
    /// The page serves the series summed over `Page::sums[i]`'s labels: `samples` are the sums.
    sum: Option<usize>,
    /// The sample the last push was added to, where a summed family looks first.
    last: usize,
}

/// What the page being scraped serves of a collector's families: the runner resolves it
/// once per collector and cadence from the selection and `--metrics.fast`
/// ([`Scrape::set_page`]). Families it names neither in `skip` nor in `filters` are served
/// whole.
#[derive(Debug, Default)]
pub struct Page {
    /// Families it serves none of: their pushes are dropped at once, and [`Scrape::wants`]
    /// tells a collector it may skip reading them.
    pub skip: Vec<&'static Desc>,
    /// Families it serves some series of (`match:` rules): a push the filter does not keep is
    /// dropped before its labels are copied, and [`Scrape::may_want`] tells a collector which
    /// parts it may skip reading.
    pub filters: Vec<(&'static Desc, SeriesFilter)>,
    /// Families it serves summed over the labels at these positions (`sum:`): pushes are
    /// added up as they come, so the per-device series are never stored.
    pub sums: Vec<(&'static Desc, Vec<usize>)>,
}

impl Page {
    fn position<T>(list: &[(&'static Desc, T)], desc: &Desc) -> Option<usize> {
        list.iter().position(|(d, _)| std::ptr::eq(*d, desc))
    }

    /// Whether the page serves any series of `desc`.
    pub fn serves(&self, desc: &Desc) -> bool {
        !self.skip.iter().any(|d| std::ptr::eq(*d, desc))
    }

    /// Whether the page serves `desc` summed ([`Page::sums`]).
    pub fn sums(&self, desc: &Desc) -> bool {
        Page::position(&self.sums, desc).is_some()
    }
}

/// The samples one collector produced in one update.
#[derive(Debug, Default)]
pub struct Scrape {
    families: Vec<Family>,
    page: Arc<Page>,
}

impl Family {
    /// Adds a sample with these labels, copying them into the strings of a sample cleared
    /// earlier when there is one.
    fn add<'a>(&mut self, labels: impl Iterator<Item = (&'static str, &'a str)>, value: f64) {
        let mut sample = self.spare.pop().unwrap_or(Sample {
            labels: Vec::new(),
            value,
        });
        let mut n = 0;
        for (i, (key, v)) in labels.enumerate() {
            match sample.labels.get_mut(i) {
                Some((k, s)) => {
                    *k = key;
                    s.clear();
                    s.push_str(v);
                }
                None => sample.labels.push((key, v.to_string())),
            }
            n = i + 1;
        }
        sample.labels.truncate(n);
        sample.value = value;
        self.samples.push(sample);
    }

    /// Adds `value` to the sum of the series with the same labels but those at `over`, or
    /// starts it. A collector pushes each device's series in the same order (softirqs: per
    /// CPU, the ten types), so from the second device on the sum is the one after the last.
    fn add_summed(&mut self, over: &[usize], desc: &'static Desc, values: &[&str], value: f64) {
        let rest = || {
            desc.labels
                .iter()
                .zip(values)
                .enumerate()
                .filter(|(i, _)| !over.contains(i))
                .map(|(_, (k, v))| (*k, *v))
        };
        // The keys are the descriptor's, in its order: the values tell the series apart.
        let same = |s: &Sample| {
            s.labels
                .iter()
                .map(|(_, v)| v.as_str())
                .eq(rest().map(|(_, v)| v))
        };
        let next = if self.last + 1 < self.samples.len() {
            self.last + 1
        } else {
            0
        };
        let found = match self.samples.get(next) {
            Some(s) if same(s) => Some(next),
            _ => self.samples.iter().position(same),
        };
        match found {
            Some(i) => {
                self.samples[i].value += value;
                self.last = i;
            }
            None => {
                self.last = self.samples.len();
                self.add(rest(), value);
            }
        }
    }
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
            f.last = 0;
        }
    }

    /// Sets what the page the next updates are for serves: what is left out is dropped
    /// when pushed, and summed families are summed as they are pushed. The runner's, per
    /// cadence and selection.
    pub fn set_page(&mut self, page: Arc<Page>) {
        // The page of the scrape before (each cadence's page is made once): every family
        // already has its flags.
        if Arc::ptr_eq(&self.page, &page) {
            return;
        }
        for f in &mut self.families {
            f.skipped = !page.serves(f.desc);
            f.filter = Page::position(&page.filters, f.desc);
            f.sum = Page::position(&page.sums, f.desc);
        }
        self.page = page;
    }

    /// A page that serves every family but these ([`Scrape::set_page`]).
    pub fn skip_only(&mut self, skip: impl IntoIterator<Item = &'static Desc>) {
        self.set_page(Arc::new(Page {
            skip: skip.into_iter().collect(),
            ..Page::default()
        }));
    }

    /// Whether the page being scraped serves `desc` ([`Page::skip`]): a collector reads what
    /// only skipped families need only when this says so.
    pub fn wants(&self, desc: &Desc) -> bool {
        self.page.serves(desc)
    }

    /// Whether the page being scraped serves `desc` summed over the label `label`, with no
    /// `match:` rule on it: a collector may then push one sample per value of the other
    /// labels, its total over `label`, in place of a sample per value of `label`.
    pub fn sums_over(&self, desc: &Desc, label: &str) -> bool {
        let Some(at) = desc.labels.iter().position(|l| *l == label) else {
            return false;
        };
        Page::position(&self.page.filters, desc).is_none()
            && Page::position(&self.page.sums, desc)
                .is_some_and(|i| self.page.sums[i].1.contains(&at))
    }

    /// Whether the page being scraped may serve a series of `desc` whose label at position
    /// `i` (the descriptor's order) is `value(i)`, where known (`None`: any value): false
    /// only when no such series is served, so a collector can skip reading them.
    pub fn may_want<'a>(&self, desc: &Desc, value: impl Fn(usize) -> Option<&'a str>) -> bool {
        self.wants(desc)
            && Page::position(&self.page.filters, desc)
                .is_none_or(|i| self.page.filters[i].1.may_keep(value))
    }

    fn family(&mut self, desc: &'static Desc) -> usize {
        match self
            .families
            .iter()
            .rposition(|f| std::ptr::eq(f.desc, desc))
        {
            Some(i) => i,
            None => {
                self.families.push(Family {
                    desc,
                    samples: Vec::new(),
                    spare: Vec::new(),
                    skipped: !self.page.serves(desc),
                    filter: Page::position(&self.page.filters, desc),
                    sum: Page::position(&self.page.sums, desc),
                    last: 0,
                });
                self.families.len() - 1
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
        let at = self.family(desc);
        let page = &*self.page;
        let fam = &mut self.families[at];
        let value_at = |i: usize| values.get(i).copied().unwrap_or("");
        if fam.skipped
            || fam
                .filter
                .is_some_and(|f| !page.filters[f].1.keeps(value_at))
        {
            return;
        }
        match fam.sum {
            Some(s) => fam.add_summed(&page.sums[s].1, desc, values, value),
            None => fam.add(
                desc.labels.iter().copied().zip(values.iter().copied()),
                value,
            ),
        }
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
        let at = self.family(desc);
        let fam = &self.families[at];
        if fam.filter.is_some() || fam.sum.is_some() {
            let values: Vec<&str> = labels.iter().map(|(_, v)| v.as_str()).collect();
            return self.push_values(desc, &values, value);
        }
        let fam = &mut self.families[at];
        if !fam.skipped {
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
    fn a_page_filters_and_sums_as_samples_are_pushed() {
        use super::*;
        use crate::selection::Rule;
        static TYPED: Desc = Desc::counter("reveal_test_typed", Unit::None, &["cpu", "type"], "t");
        static PLAIN: Desc = Desc::counter("reveal_test_all", Unit::None, &["cpu"], "t");
        let a_or_b = Rule::Any(vec![vec![(
            "type",
            regex::Regex::new("^(?:A|B)$").unwrap(),
        )]]);
        let mut s = Scrape::new();
        s.set_page(Arc::new(Page {
            filters: vec![(
                &TYPED,
                SeriesFilter::new(TYPED.labels, &[&a_or_b], &[]).unwrap(),
            )],
            sums: vec![(&TYPED, vec![0]), (&PLAIN, vec![0])],
            ..Page::default()
        }));
        for round in 0..3 {
            s.clear();
            // Out of order on the second CPU, and C left out by the filter.
            s.push_values(&TYPED, &["0", "A"], 1.0);
            s.push_values(&TYPED, &["0", "B"], 2.0);
            s.push_values(&TYPED, &["0", "C"], 4.0);
            s.push_values(&TYPED, &["1", "B"], 8.0);
            s.push(
                &TYPED,
                vec![("cpu", "1".into()), ("type", "A".into())],
                16.0,
            );
            s.push(
                &TYPED,
                vec![("cpu", "1".into()), ("type", "C".into())],
                32.0,
            );
            s.push_values(&PLAIN, &["0"], 1.0);
            s.push_values(&PLAIN, &["1"], 2.0);
            let got: Vec<(Vec<(&str, &str)>, f64)> = s
                .families()
                .flat_map(|f| &f.samples)
                .map(|x| {
                    (
                        x.labels.iter().map(|(k, v)| (*k, v.as_str())).collect(),
                        x.value,
                    )
                })
                .collect();
            assert_eq!(
                got,
                [
                    (vec![("type", "A")], 17.0),
                    (vec![("type", "B")], 10.0),
                    (vec![], 3.0)
                ],
                "round {round}"
            );
        }
        // A page without the sums stores every series again.
        s.skip_only([]);
        s.clear();
        s.push_values(&TYPED, &["0", "C"], 4.0);
        s.push_values(&TYPED, &["1", "C"], 4.0);
        assert_eq!(s.sample_count(), 2);
    }

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
