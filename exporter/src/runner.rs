//! Runs the enabled collectors on each scrape, owns the self-metrics, applies the selection
//! and the cadences, and writes the page (the encoding is [`crate::exposition`]'s).

use crate::collectors::{Collector, Settings, COLLECTORS};
use crate::scrape::{Desc, Labels, Page, Scrape, Unit};
use crate::selection::Rule;
use crate::series_filter::SeriesFilter;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use crate::exposition::{encode_family, encode_summed};
pub use crate::exposition::{openmetrics_to_text, Format};
pub use crate::scope::{Cadence, Scope};

static SUCCESS: Desc = Desc::gauge(
    "reveal_exporter_collector_success",
    Unit::None,
    &["collector"],
    "Whether the collector's last update succeeded (1) or not (0).",
);
static DURATION: Desc = Desc::gauge(
    "reveal_exporter_collector_duration",
    Unit::Seconds,
    &["collector"],
    "How long the collector's last update took.",
);
static BUILD_INFO: Desc = Desc::gauge(
    "reveal_exporter_build_info",
    Unit::None,
    &["version", "revision", "branch", "rustversion"],
    "The exporter's version, the git commit and branch it was built from, and the Rust \
     compiler's version; the value is always 1.",
);

/// The `process_*` families of Prometheus' client libraries (`reveal_schema::process`), read
/// from `/proc/self` on each scrape.
mod process_descs {
    use super::{Desc, Unit};
    use reveal_schema::process as p;
    pub static CPU: Desc = Desc::counter(p::CPU.name, Unit::Seconds, &[], p::CPU.help);
    pub static RESIDENT: Desc = Desc::gauge(
        p::RESIDENT_MEMORY.name,
        Unit::Bytes,
        &[],
        p::RESIDENT_MEMORY.help,
    );
    pub static VIRTUAL: Desc = Desc::gauge(
        p::VIRTUAL_MEMORY.name,
        Unit::Bytes,
        &[],
        p::VIRTUAL_MEMORY.help,
    );
    pub static START: Desc =
        Desc::gauge(p::START_TIME.name, Unit::Seconds, &[], p::START_TIME.help);
    pub static OPEN_FDS: Desc = Desc::gauge(p::OPEN_FDS.name, Unit::None, &[], p::OPEN_FDS.help);
    pub static MAX_FDS: Desc = Desc::gauge(p::MAX_FDS.name, Unit::None, &[], p::MAX_FDS.help);
    pub static THREADS: Desc = Desc::gauge(p::THREADS.name, Unit::None, &[], p::THREADS.help);
    /// In `reveal_schema::process::FAMILIES` order.
    pub static ALL: [&Desc; 7] = [
        &CPU, &RESIDENT, &VIRTUAL, &START, &OPEN_FDS, &MAX_FDS, &THREADS,
    ];
}

/// The runner's own metric families: collector health, build information and the
/// `process_*` families. Always exposed (a selection does not apply to them).
pub static SELF_METRICS: &[&Desc] = &[
    &SUCCESS,
    &DURATION,
    &BUILD_INFO,
    &process_descs::CPU,
    &process_descs::RESIDENT,
    &process_descs::VIRTUAL,
    &process_descs::START,
    &process_descs::OPEN_FDS,
    &process_descs::MAX_FDS,
    &process_descs::THREADS,
];

/// Whether a sample or family name is one of the exporter's self-metrics
/// (`reveal_exporter_*`, `process_*`) rather than the host's.
pub fn is_self_metric(name: &str) -> bool {
    reveal_schema::catalog::is_self_metric(name)
}

/// Every metric family a collector can emit, plus the runner's own.
pub fn known_descs() -> impl Iterator<Item = &'static Desc> {
    COLLECTORS
        .iter()
        .flat_map(|e| e.metrics.iter().copied())
        .chain(SELF_METRICS.iter().copied())
}

/// A descriptor's address: descriptors are statics, so this is a stable, allocation-free key
/// for the per-scrape lookup of its selection rule.
fn key(desc: &Desc) -> usize {
    desc as *const Desc as usize
}

struct Slot {
    collector: Box<dyn Collector>,
    /// Every family the collector can emit (its row of the collector table).
    metrics: &'static [&'static Desc],
    scrape: Scrape,
    success: bool,
    duration: f64,
    /// The last error logged, so a persisting failure is logged once, not on every scrape.
    last_logged: Option<String>,
    /// Per cadence (by its index), what its page serves of the collector's families, once
    /// resolved ([`Inner::page_of`]).
    pages: [Option<Arc<Page>>; 3],
}

/// The enabled collectors, behind a lock: scrapes are serialized, which also bounds the work
/// a flood of concurrent scrapes can cause.
pub struct Runner {
    inner: Arc<Inner>,
    /// The last exposition's length: the next one is allocated at once at about that size.
    last_len: AtomicUsize,
    /// Held while a scope is set and its page encoded (scrapes are serialized anyway).
    rendering: Mutex<()>,
}

/// `--metrics.fast`, resolved against the runner: the rule per family (by [`key`]) and which
/// slots a fast scrape runs.
struct Fast {
    rules: HashMap<usize, Rule>,
    /// Families the fast page serves summed over these labels (`sum:`); their per-device
    /// series are the slow page's.
    sums: HashMap<usize, Vec<&'static str>>,
    /// Per slot, in slot order: whether any of its collector's metrics is in the file.
    runs: Vec<bool>,
}

/// What one render reads: the collectors, the selection and the self-metrics' labels.
struct Inner {
    slots: Mutex<Vec<Slot>>,
    /// The selection's rule per family (by [`key`]); `None` without a selection, which
    /// exposes everything. A family without a rule is not exposed.
    rules: Option<HashMap<usize, Rule>>,
    /// Families `--metrics.selection` serves summed over these labels (`sum:`), on every page.
    sums: HashMap<usize, Vec<&'static str>>,
    /// The `collector` label of each slot, built once for the self-metrics.
    names: Vec<Labels>,
    /// `reveal_exporter_build_info`'s labels.
    build_info: Labels,
    /// Whether reading `/proc/self` failed already (logged once).
    process_failed: std::sync::atomic::AtomicBool,
    /// `--metrics.fast`, once set ([`Runner::set_fast`]).
    fast: OnceLock<Fast>,
    /// What the page being rendered covers ([`Runner::render_scoped`]).
    scope: Mutex<Scope>,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner").finish_non_exhaustive()
    }
}

impl Runner {
    /// Builds the named collectors; unknown names are rejected.
    pub fn new(names: &[&str], settings: &Settings) -> Result<Runner, String> {
        let mut slots = Vec::new();
        for e in COLLECTORS.iter().filter(|e| names.contains(&e.name)) {
            // A collector none of whose metrics is selected is not built, so it costs nothing.
            if !e.metrics.iter().any(|d| settings.wants(d)) {
                tracing::info!(
                    collector = e.name,
                    "collector skipped: none of its metrics is selected"
                );
                continue;
            }
            slots.push(Slot {
                collector: (e.new)(settings),
                metrics: e.metrics,
                scrape: Scrape::new(),
                success: false,
                duration: 0.0,
                last_logged: None,
                pages: Default::default(),
            });
        }
        if let Some(bad) = names
            .iter()
            .find(|n| !COLLECTORS.iter().any(|e| e.name == **n))
        {
            return Err(format!("unknown collector {bad:?}"));
        }
        let names = slots
            .iter()
            .map(|s| vec![("collector", s.collector.name().to_string())])
            .collect();
        let rules = settings.selection.as_ref().map(|sel| {
            COLLECTORS
                .iter()
                .flat_map(|e| e.metrics.iter().copied())
                .filter_map(|d| sel.rule(d).map(|r| (key(d), r.clone())))
                .collect()
        });
        let sums = settings
            .selection
            .as_ref()
            .map(|sel| sums_of(|d| sel.sum_over(d)))
            .unwrap_or_default();
        let inner = Arc::new(Inner {
            slots: Mutex::new(slots),
            rules,
            sums,
            names,
            build_info: reveal_schema::build::info_labels()
                .iter()
                .map(|(k, v)| (*k, v.to_string()))
                .collect(),
            process_failed: Default::default(),
            fast: OnceLock::new(),
            scope: Mutex::new(Scope::default()),
        });
        Ok(Runner {
            inner,
            last_len: AtomicUsize::new(64 * 1024),
            rendering: Mutex::new(()),
        })
    }

    /// Sets the series of the fast cadence (`--metrics.fast`): `cadence=fast` serves what
    /// `fast` keeps and runs only the collectors with a metric in it, `cadence=slow` serves
    /// the rest. False, and nothing changes, when it was set already.
    pub fn set_fast(&self, fast: &crate::selection::Selection) -> bool {
        let rules: HashMap<usize, Rule> = COLLECTORS
            .iter()
            .flat_map(|e| e.metrics.iter().copied())
            .filter_map(|d| fast.rule(d).map(|r| (key(d), r.clone())))
            .collect();
        let mut slots = self.lock();
        let runs = slots
            .iter()
            .map(|slot| {
                COLLECTORS
                    .iter()
                    .filter(|e| e.name == slot.collector.name())
                    .flat_map(|e| e.metrics.iter())
                    .any(|d| rules.contains_key(&key(d)))
            })
            .collect();
        let sums = sums_of(|d| fast.sum_over(d));
        let set = self.inner.fast.set(Fast { rules, sums, runs }).is_ok();
        // Pages resolved before had no fast rules: resolved again on use.
        for slot in slots.iter_mut() {
            slot.pages = Default::default();
        }
        set
    }

    /// Whether [`Runner::set_fast`] was called: `cadence=` is served.
    pub fn has_fast(&self) -> bool {
        self.inner.fast.get().is_some()
    }

    /// Names of the collectors a scrape of `scope` runs.
    pub fn names_for(&self, scope: &Scope) -> Vec<&'static str> {
        let slots = self.lock();
        (0..slots.len())
            .filter(|&i| self.inner.runs(&slots, i, scope))
            .map(|i| slots[i].collector.name())
            .collect()
    }

    /// Builds every collector that is on by default.
    pub fn with_defaults(settings: &Settings) -> Runner {
        let names: Vec<&str> = COLLECTORS
            .iter()
            .filter(|e| e.default_enabled)
            .map(|e| e.name)
            .collect();
        Runner::new(&names, settings).expect("table names are known")
    }

    /// Puts `collector` in the place of the runner's collector of the same name: benchmarks
    /// and tests feed one from recordings (the GPU collector over NVML fixtures on a host
    /// without GPUs, `examples/fixture_exporter.rs`). False, and nothing changes, when no
    /// collector of that name runs (not enabled, or none of its metrics selected).
    pub fn replace(&self, collector: Box<dyn Collector>) -> bool {
        let mut slots = self.lock();
        match slots
            .iter_mut()
            .find(|s| s.collector.name() == collector.name())
        {
            Some(slot) => {
                slot.collector = collector;
                slot.last_logged = None;
                true
            }
            None => false,
        }
    }

    /// Names of the collectors this runner runs.
    pub fn names(&self) -> Vec<&'static str> {
        self.lock().iter().map(|s| s.collector.name()).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Slot>> {
        lock(&self.inner.slots)
    }

    /// Runs every collector and renders the OpenMetrics exposition.
    pub fn render(&self) -> String {
        self.render_as(Format::OpenMetrics)
    }

    /// Runs every collector and renders it in the requested format.
    pub fn render_as(&self, format: Format) -> String {
        self.render_scoped(format, &Scope::default())
    }

    /// Runs the collectors `scope` asks for and renders their series in `format`
    /// (`/metrics?collect[]=…` or `?cadence=…`). A `cadence` without [`Runner::set_fast`]
    /// renders everything; the server refuses such a request before it gets here.
    pub fn render_scoped(&self, format: Format, scope: &Scope) -> String {
        let _rendering = self.rendering.lock().unwrap_or_else(|p| p.into_inner());
        *self.inner.scope.lock().unwrap_or_else(|p| p.into_inner()) = scope.clone();
        // A little headroom over the last size, so a slowly growing exposition (a new
        // interrupt line, a new disk) does not reallocate the whole buffer.
        let mut out = String::with_capacity(self.last_len.load(Ordering::Relaxed) + 4096);
        self.inner.encode(&mut out);
        out.push_str("# EOF\n");
        self.last_len.store(out.len(), Ordering::Relaxed);
        match format {
            Format::OpenMetrics => out,
            Format::Text => openmetrics_to_text(&out),
        }
    }

    /// Updates the slots whose `run` is true.
    fn update_all(slots: &mut [Slot], run: &[bool]) {
        for (slot, _) in slots.iter_mut().zip(run).filter(|(_, r)| **r) {
            slot.scrape.clear();
            let start = Instant::now();
            let res = slot.collector.update(&mut slot.scrape);
            slot.duration = start.elapsed().as_secs_f64();
            let name = slot.collector.name();
            match res {
                Ok(()) => {
                    slot.success = true;
                    if slot.last_logged.take().is_some() {
                        tracing::info!(collector = name, "collector recovered");
                    }
                }
                Err(e) => {
                    slot.success = false;
                    // Never expose part of a failed update: its values may be wrong.
                    slot.scrape.clear();
                    // The same error every scrape (absent hardware) is said once, and not
                    // formatted again to find that out.
                    if !slot
                        .last_logged
                        .as_deref()
                        .is_some_and(|last| displays_as(&e, last))
                    {
                        let msg = e.to_string();
                        // Absent hardware (a VM has no RAPL, no PMU, no GPU) is information;
                        // a refused permission, which the operator can grant, is a warning.
                        if e.is_denied() {
                            tracing::warn!(collector = name, "collector not supported here: {msg}");
                        } else if e.is_unsupported() {
                            tracing::info!(collector = name, "collector not supported here: {msg}");
                        } else {
                            tracing::error!(collector = name, "collector failed: {msg}");
                        }
                        slot.last_logged = Some(msg);
                    }
                }
            }
        }
    }
}

/// Whether `value` displays as `text`, compared piece by piece as it is formatted: no string
/// is allocated, and the comparison stops at the first piece that differs.
fn displays_as(value: &impl std::fmt::Display, text: &str) -> bool {
    struct Compare<'a>(&'a str);
    impl std::fmt::Write for Compare<'_> {
        fn write_str(&mut self, piece: &str) -> std::fmt::Result {
            self.0 = self.0.strip_prefix(piece).ok_or(std::fmt::Error)?;
            Ok(())
        }
    }
    let mut rest = Compare(text);
    std::fmt::write(&mut rest, format_args!("{value}")).is_ok() && rest.0.is_empty()
}

impl Inner {
    /// Whether a scrape of `scope` runs slot `i`: named by `collect[]` (or not by
    /// `exclude[]`), and for the fast cadence with a metric in `--metrics.fast`.
    fn runs(&self, slots: &[Slot], i: usize, scope: &Scope) -> bool {
        let name = slots[i].collector.name();
        if !scope.wants_collector(name) {
            return false;
        }
        match (scope.cadence, self.fast.get()) {
            (Cadence::Fast, Some(f)) => f.runs.get(i).copied().unwrap_or(false),
            _ => true,
        }
    }

    /// The rules a page of `cadence` applies to `desc`: `None` when it serves none of its
    /// series, else the rules whose series it serves, and those whose series it leaves out.
    /// The selection's rule is kept; the fast page keeps what `--metrics.fast` keeps or sums;
    /// the slow page the rest.
    fn page_rules(&self, desc: &Desc, cadence: Cadence) -> Option<(Vec<&Rule>, Vec<&Rule>)> {
        let k = key(desc);
        let mut keep = Vec::new();
        let mut drop = Vec::new();
        if let Some(rules) = &self.rules {
            keep.push(rules.get(&k)?);
        }
        match (cadence, self.fast.get()) {
            (Cadence::Fast, Some(f)) => keep.push(f.rules.get(&k)?),
            // A family the fast page serves summed: the slow page has its series.
            (Cadence::Slow, Some(f)) if f.sums.contains_key(&k) => {}
            (Cadence::Slow, Some(f)) => match f.rules.get(&k) {
                Some(Rule::All) => return None,
                Some(r) => drop.push(r),
                None => {}
            },
            _ => {}
        }
        Some((keep, drop))
    }

    /// What a page of `cadence` serves of `metrics` (a collector's families): its rules
    /// ([`Inner::page_rules`]) and the labels it sums over (the selection's `sum:` on every
    /// page, `--metrics.fast`'s on the fast page).
    fn page_of(&self, metrics: &[&'static Desc], cadence: Cadence) -> Page {
        let mut page = Page::default();
        for &d in metrics {
            let Some((keep, drop)) = self.page_rules(d, cadence) else {
                page.skip.push(d);
                continue;
            };
            if let Some(f) = SeriesFilter::new(d.labels, &keep, &drop) {
                page.filters.push((d, f));
            }
            let k = key(d);
            let fast_sum = match (cadence, self.fast.get()) {
                (Cadence::Fast, Some(f)) => f.sums.get(&k),
                _ => None,
            };
            let over: Vec<usize> = (0..d.labels.len())
                .filter(|&i| {
                    let l = &d.labels[i];
                    self.sums.get(&k).is_some_and(|o| o.contains(l))
                        || fast_sum.is_some_and(|o| o.contains(l))
                })
                .collect();
            if self.sums.contains_key(&k) || fast_sum.is_some() {
                page.sums.push((d, over));
            }
        }
        page
    }

    /// Runs the collectors of the scope being rendered, then writes their families and
    /// (but for the fast cadence) the self-metrics.
    fn encode(&self, encoder: &mut String) {
        let scope = self.scope.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut slots = lock(&self.slots);
        let run: Vec<bool> = (0..slots.len())
            .map(|i| self.runs(&slots, i, &scope))
            .collect();
        // What the page leaves out is not pushed (and may not be read) by the collectors, and
        // what it sums is summed as it is pushed.
        for slot in slots.iter_mut() {
            let page = slot.pages[scope.cadence as usize]
                .get_or_insert_with(|| Arc::new(self.page_of(slot.metrics, scope.cadence)));
            slot.scrape.set_page(page.clone());
        }
        Runner::update_all(&mut slots, &run);
        for (slot, _) in slots.iter().zip(&run).filter(|(_, r)| **r) {
            let Some(page) = &slot.pages[scope.cadence as usize] else {
                continue;
            };
            for fam in slot.scrape.families() {
                if page.sums(fam.desc) {
                    encode_summed(encoder, fam.desc, &fam.samples);
                } else {
                    let samples = fam.samples.iter().map(|s| (&s.labels, s.value));
                    encode_family(encoder, fam.desc, samples);
                }
            }
        }
        // The self-metrics are the slow cadence's: one job serves them, and the fast page
        // stays what the analyzer reads.
        if scope.cadence == Cadence::Fast && self.fast.get().is_some() {
            return;
        }
        let ran = || {
            self.names
                .iter()
                .zip(slots.iter())
                .zip(&run)
                .filter(|(_, r)| **r)
                .map(|(ls, _)| ls)
        };
        let success = ran().map(|(l, s)| (l, f64::from(u8::from(s.success))));
        encode_family(encoder, &SUCCESS, success);
        encode_family(encoder, &DURATION, ran().map(|(l, s)| (l, s.duration)));
        encode_family(
            encoder,
            &BUILD_INFO,
            std::iter::once((&self.build_info, 1.0)),
        );
        drop(slots);
        self.encode_process(encoder)
    }

    /// The `process_*` families of the exporter itself (the host's `/proc`, whatever
    /// `--path.procfs` says: they describe this process, not the host it watches).
    fn encode_process(&self, encoder: &mut String) {
        let procfs = std::path::Path::new(crate::paths::DEFAULT_PROCFS);
        let stats = match reveal_schema::process::read(procfs, "self") {
            Ok(s) => s,
            Err(e) => {
                if !self.process_failed.swap(true, Ordering::Relaxed) {
                    tracing::warn!("process_* metrics left out: {e}");
                }
                return;
            }
        };
        let none = Labels::new();
        for (family, value) in stats.values() {
            let at = reveal_schema::process::FAMILIES
                .iter()
                .position(|f| *f == family)
                .expect("values come from FAMILIES");
            encode_family(
                encoder,
                process_descs::ALL[at],
                std::iter::once((&none, value)),
            );
        }
    }
}

/// Per family (by [`key`]), the labels a selection's `sum:` sums its series over.
fn sums_of<'a>(
    sum_over: impl Fn(&Desc) -> Option<&'a [&'static str]>,
) -> HashMap<usize, Vec<&'static str>> {
    COLLECTORS
        .iter()
        .flat_map(|e| e.metrics.iter().copied())
        .filter_map(|d| sum_over(d).map(|l| (key(d), l.to_vec())))
        .collect()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic inside a collector poisons the slots' lock; they hold no invariant that a
    // half-finished update could break (each scrape starts by clearing them), nor does the
    // filters' cache (an entry is inserted whole), so go on.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_is_compared_with_its_text_as_it_is_formatted() {
        let e = crate::error::CollectError::Unsupported {
            path: "/sys/class/powercap".into(),
            reason: "no RAPL domain".into(),
        };
        let text = e.to_string();
        assert!(super::displays_as(&e, &text));
        assert!(!super::displays_as(&e, &text[..text.len() - 1]), "a prefix");
        assert!(!super::displays_as(&e, &format!("{text}.")), "longer");
        assert!(!super::displays_as(&e, ""));
        assert!(super::displays_as(&42, "42") && !super::displays_as(&42, "43"));
    }

    /// A collector that always fails, named like one of the table's.
    struct Named(&'static str);

    impl Collector for Named {
        fn name(&self) -> &'static str {
            self.0
        }
        fn update(&mut self, _: &mut Scrape) -> Result<(), crate::error::CollectError> {
            Err(crate::error::CollectError::Unsupported {
                path: "replaced".into(),
                reason: "replaced".into(),
            })
        }
    }

    #[test]
    fn replace_swaps_a_running_collector_only() {
        let runner = Runner::new(&["meminfo"], &Settings::default()).unwrap();
        assert!(!runner.replace(Box::new(Named("gpu"))), "gpu does not run");
        assert!(runner.replace(Box::new(Named("meminfo"))));
        assert_eq!(runner.names(), ["meminfo"]);
        let page = runner.render_as(Format::Text);
        assert!(page.contains("reveal_exporter_collector_success{collector=\"meminfo\"} 0.0"));
        assert!(!page.contains("reveal_memory_mem_total_bytes"));
    }

    /// A collector that counts its updates and emits one gauge, named like one of the table's.
    struct Counting(&'static str, Arc<AtomicUsize>);

    static COUNTED: Desc = Desc::gauge("reveal_memory_mem_total", Unit::Bytes, &[], "test");

    impl Collector for Counting {
        fn name(&self) -> &'static str {
            self.0
        }
        fn update(&mut self, s: &mut Scrape) -> Result<(), crate::error::CollectError> {
            self.1.fetch_add(1, Ordering::Relaxed);
            s.push1(&COUNTED, 1.0);
            Ok(())
        }
    }

    fn samples(page: &str) -> Vec<&str> {
        page.lines().filter(|l| !l.starts_with('#')).collect()
    }

    #[test]
    fn a_fast_scrape_runs_only_its_collectors_and_slow_serves_the_rest_once() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/vm-debian");
        let settings = Settings {
            paths: crate::paths::Paths::new(
                std::path::Path::new(&format!("{root}/proc")),
                std::path::Path::new(&format!("{root}/sys")),
            ),
            ..Settings::default()
        };
        let runner = Runner::new(&["stat", "meminfo"], &settings).unwrap();
        let meminfo_runs = Arc::new(AtomicUsize::new(0));
        assert!(runner.replace(Box::new(Counting("meminfo", meminfo_runs.clone()))));
        let fast = crate::selection::Selection::parse(
            "metrics:\n  - reveal_cpu_context_switches_total\n  \
             - name: reveal_cpu_time_seconds_total\n    match: {mode: 'user|system'}\n",
        )
        .unwrap();
        assert!(runner.set_fast(&fast));
        assert!(!runner.set_fast(&fast), "set once");
        let fast_scope = Scope {
            cadence: Cadence::Fast,
            ..Scope::default()
        };
        assert_eq!(runner.names_for(&fast_scope), ["stat"]);

        let page = runner.render_scoped(Format::Text, &fast_scope);
        assert_eq!(
            meminfo_runs.load(Ordering::Relaxed),
            0,
            "meminfo did not run"
        );
        let got = samples(&page);
        assert!(!got.is_empty());
        for line in &got {
            assert!(
                line.starts_with("reveal_cpu_context_switches_total ")
                    || (line.starts_with("reveal_cpu_time_seconds_total{")
                        && (line.contains("mode=\"user\"") || line.contains("mode=\"system\""))),
                "the fast page serves only --metrics.fast: {line}\n{page}"
            );
        }

        let slow = runner.render_scoped(
            Format::Text,
            &Scope {
                cadence: Cadence::Slow,
                ..Scope::default()
            },
        );
        assert_eq!(meminfo_runs.load(Ordering::Relaxed), 1);
        let slow_lines = samples(&slow);
        assert!(
            slow_lines.iter().any(|l| l.contains("mode=\"idle\"")),
            "{slow}"
        );
        assert!(slow.contains("reveal_memory_mem_total_bytes 1"), "{slow}");
        assert!(slow.contains("reveal_exporter_collector_success{collector=\"meminfo\"}"));
        // The two pages together are the whole page, each series once.
        let all = runner.render_as(Format::Text);
        let mut split: Vec<String> = got
            .iter()
            .chain(&slow_lines)
            .map(|l| name_labels(l))
            .collect();
        let mut whole: Vec<String> = samples(&all).iter().map(|l| name_labels(l)).collect();
        split.sort();
        whole.sort();
        let before = split.len();
        split.dedup();
        assert_eq!(split.len(), before, "no series on both pages");
        // process_* values move between renders, the series are the same.
        assert_eq!(split, whole);
    }

    #[test]
    fn a_summed_family_is_served_summed_fast_and_per_cpu_slow() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/numa-2socket");
        let settings = Settings {
            paths: crate::paths::Paths::new(
                std::path::Path::new(&format!("{root}/proc")),
                std::path::Path::new(&format!("{root}/sys")),
            ),
            ..Settings::default()
        };
        let runner = Runner::new(&["softirqs", "stat"], &settings).unwrap();
        let fast = crate::selection::Selection::parse(
            "metrics:\n  - name: reveal_cpu_softirqs_total\n    sum: [cpu]\n",
        )
        .unwrap();
        runner.set_fast(&fast);
        let all = runner.render_as(Format::Text);
        let per_cpu: Vec<&str> = samples(&all)
            .into_iter()
            .filter(|l| l.starts_with("reveal_cpu_softirqs_total{"))
            .collect();
        assert!(per_cpu.len() > 20, "{all}");
        let page = runner.render_scoped(
            Format::Text,
            &Scope {
                cadence: Cadence::Fast,
                ..Scope::default()
            },
        );
        assert_eq!(
            runner.names_for(&Scope {
                cadence: Cadence::Fast,
                ..Scope::default()
            }),
            ["softirqs"]
        );
        let got = samples(&page);
        // One series per type, the sum over the CPUs of the whole page's.
        for line in &got {
            assert!(
                line.starts_with("reveal_cpu_softirqs_total{type=\""),
                "{line}"
            );
            let ty = line.split('"').nth(1).unwrap();
            let want: f64 = per_cpu
                .iter()
                .filter(|l| l.contains(&format!("type=\"{ty}\"")))
                .map(|l| l.rsplit_once(' ').unwrap().1.parse::<f64>().unwrap())
                .sum();
            let v: f64 = line.rsplit_once(' ').unwrap().1.parse().unwrap();
            assert_eq!(v, want, "{line}");
        }
        assert_eq!(got.len(), 10, "{page}");
        let slow = runner.render_scoped(
            Format::Text,
            &Scope {
                cadence: Cadence::Slow,
                ..Scope::default()
            },
        );
        let slow_softirqs = samples(&slow)
            .into_iter()
            .filter(|l| l.starts_with("reveal_cpu_softirqs_total{"))
            .count();
        assert_eq!(slow_softirqs, per_cpu.len(), "the per-CPU series are slow");
    }

    /// The shipped fast selection on fixture hosts, every default collector that reads the
    /// root: the collectors leave out what a page does not serve ([`Scrape::skip_only`]), and
    /// the fast and slow pages together are still the whole page, each series once (the
    /// families the fast page sums are compared by their per-device series on the slow page).
    #[test]
    fn pages_of_the_shipped_fast_selection_split_the_whole_page_on_fixtures() {
        let dir = env!("CARGO_MANIFEST_DIR");
        let text = std::fs::read_to_string(format!("{dir}/../deploy/selection-fast.yml")).unwrap();
        let fast = crate::selection::Selection::parse(&text).unwrap();
        let sums = reveal_schema::selection::Selection::parse(&text).unwrap();
        for host in ["vm-debian", "numa-2socket", "infiniband"] {
            let root = format!("{dir}/tests/fixtures/{host}");
            let settings = Settings {
                paths: crate::paths::Paths::new(
                    std::path::Path::new(&format!("{root}/proc")),
                    std::path::Path::new(&format!("{root}/sys")),
                ),
                ..Settings::default()
            };
            let names: Vec<&str> = COLLECTORS
                .iter()
                .filter(|e| e.default_enabled && !["perf", "msr", "gpu"].contains(&e.name))
                .map(|e| e.name)
                .collect();
            let runner = Runner::new(&names, &settings).unwrap();
            runner.set_fast(&fast);
            let page = |cadence| {
                runner.render_scoped(
                    Format::Text,
                    &Scope {
                        cadence,
                        ..Scope::default()
                    },
                )
            };
            let (fast_page, slow_page, all) =
                (page(Cadence::Fast), page(Cadence::Slow), page(Cadence::All));
            // Families the fast page serves summed (`sum:`): their per-device series are slow.
            let summed = |l: &&str| {
                let name = l.split(['{', ' ']).next().unwrap_or(l);
                sums.sum_over(name).is_some()
            };
            let fast_lines: Vec<&str> = samples(&fast_page)
                .into_iter()
                .filter(|l| !summed(l))
                .collect();
            assert!(fast_lines.len() > 10, "{host}: {fast_page}");
            let mut split: Vec<String> = fast_lines
                .iter()
                .chain(&samples(&slow_page))
                .map(|l| name_labels(l))
                .collect();
            let mut whole: Vec<String> = samples(&all).iter().map(|l| name_labels(l)).collect();
            split.sort();
            whole.sort();
            let before = split.len();
            split.dedup();
            assert_eq!(split.len(), before, "{host}: no series on both pages");
            assert_eq!(split, whole, "{host}");
        }
    }

    fn name_labels(line: &str) -> String {
        line.rsplit_once(' ').map_or(line, |(s, _)| s).to_string()
    }

    #[test]
    fn collect_runs_only_the_named_collectors() {
        let runner = Runner::new(&["stat", "meminfo"], &Settings::default()).unwrap();
        let runs = Arc::new(AtomicUsize::new(0));
        assert!(runner.replace(Box::new(Counting("meminfo", runs.clone()))));
        let scope = Scope::from_query(Some("collect[]=meminfo"), &["stat", "meminfo"]).unwrap();
        let page = runner.render_scoped(Format::Text, &scope);
        assert_eq!(runs.load(Ordering::Relaxed), 1);
        assert!(!page.contains("reveal_cpu_"), "{page}");
        assert!(page.contains("reveal_exporter_collector_success{collector=\"meminfo\"} 1"));
        assert!(!page.contains("collector=\"stat\""), "{page}");
        let scope = Scope::from_query(Some("exclude[]=meminfo"), &["stat", "meminfo"]).unwrap();
        let page = runner.render_scoped(Format::Text, &scope);
        assert_eq!(runs.load(Ordering::Relaxed), 1, "excluded");
        assert!(page.contains("collector=\"stat\""), "{page}");
    }
}
