//! Runs the enabled collectors on each scrape, owns the self-metrics, and encodes the
//! exposition through `prometheus-client`.

use crate::collectors::{Collector, Settings, COLLECTORS};
use crate::scrape::{Desc, Kind, Labels, Scrape, Unit};
use crate::selection::Rule;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

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
    scrape: Scrape,
    success: bool,
    duration: f64,
    /// The last error logged, so a persisting failure is logged once, not on every scrape.
    last_logged: Option<String>,
}

/// The enabled collectors, behind a lock: scrapes are serialized, which also bounds the work
/// a flood of concurrent scrapes can cause.
pub struct Runner {
    inner: Arc<Inner>,
    /// Holds one collector, [`Render`], that updates and encodes `inner` on every encode.
    registry: prometheus_client::registry::Registry,
    /// The last exposition's length: the next one is allocated at once at about that size.
    last_len: AtomicUsize,
}

/// What one render reads: the collectors, the selection and the self-metrics' labels.
struct Inner {
    slots: Mutex<Vec<Slot>>,
    /// The selection's rule per family (by [`key`]); `None` without a selection, which
    /// exposes everything. A family without a rule is not exposed.
    rules: Option<HashMap<usize, Rule>>,
    /// The `collector` label of each slot, built once for the self-metrics.
    names: Vec<Labels>,
    /// `reveal_exporter_build_info`'s labels.
    build_info: Labels,
    /// Whether reading `/proc/self` failed already (logged once).
    process_failed: std::sync::atomic::AtomicBool,
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
                scrape: Scrape::new(),
                success: false,
                duration: 0.0,
                last_logged: None,
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
        let inner = Arc::new(Inner {
            slots: Mutex::new(slots),
            rules,
            names,
            build_info: reveal_schema::build::info_labels()
                .iter()
                .map(|(k, v)| (*k, v.to_string()))
                .collect(),
            process_failed: Default::default(),
        });
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(Render(inner.clone())));
        Ok(Runner {
            inner,
            registry,
            last_len: AtomicUsize::new(64 * 1024),
        })
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
        // A little headroom over the last size, so a slowly growing exposition (a new
        // interrupt line, a new disk) does not reallocate the whole buffer.
        let mut out = String::with_capacity(self.last_len.load(Ordering::Relaxed) + 4096);
        // Writing to a String cannot fail, and `Render` returns no error of its own.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        self.last_len.store(out.len(), Ordering::Relaxed);
        match format {
            Format::OpenMetrics => out,
            Format::Text => openmetrics_to_text(&out),
        }
    }

    fn update_all(slots: &mut [Slot]) {
        for slot in slots.iter_mut() {
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
                    let msg = e.to_string();
                    if slot.last_logged.as_deref() != Some(msg.as_str()) {
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

impl Inner {
    /// Runs every collector, then writes their families and the self-metrics.
    fn encode(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut slots = lock(&self.slots);
        Runner::update_all(&mut slots);
        for slot in slots.iter() {
            for fam in slot.scrape.families() {
                let rule = match self.rules.as_ref().map(|rules| rules.get(&key(fam.desc))) {
                    None => None,
                    Some(None) => continue,
                    Some(Some(r)) => Some(r),
                };
                let keep = |s: &&crate::scrape::Sample| match rule {
                    Some(r) => r.keeps(&s.labels),
                    None => true,
                };
                if !fam.samples.iter().any(|s| keep(&s)) {
                    continue;
                }
                let samples = fam
                    .samples
                    .iter()
                    .filter(keep)
                    .map(|s| (&s.labels, s.value));
                encode_family(encoder, fam.desc, samples)?;
            }
        }
        let names = self.names.iter();
        let success = names
            .clone()
            .zip(slots.iter())
            .map(|(l, s)| (l, f64::from(u8::from(s.success))));
        encode_family(encoder, &SUCCESS, success)?;
        encode_family(
            encoder,
            &DURATION,
            names.zip(slots.iter()).map(|(l, s)| (l, s.duration)),
        )?;
        encode_family(
            encoder,
            &BUILD_INFO,
            std::iter::once((&self.build_info, 1.0)),
        )?;
        drop(slots);
        self.encode_process(encoder)
    }

    /// The `process_*` families of the exporter itself (the host's `/proc`, whatever
    /// `--path.procfs` says: they describe this process, not the host it watches).
    fn encode_process(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let procfs = std::path::Path::new(crate::paths::DEFAULT_PROCFS);
        let stats = match reveal_schema::process::read(procfs, "self") {
            Ok(s) => s,
            Err(e) => {
                if !self.process_failed.swap(true, Ordering::Relaxed) {
                    tracing::warn!("process_* metrics left out: {e}");
                }
                return Ok(());
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
            )?;
        }
        Ok(())
    }
}

fn pc_unit(u: Unit) -> Option<prometheus_client::registry::Unit> {
    use prometheus_client::registry::Unit as P;
    match u {
        Unit::None => None,
        Unit::Seconds => Some(P::Seconds),
        Unit::Bytes => Some(P::Bytes),
        Unit::Joules => Some(P::Joules),
        Unit::Celsius => Some(P::Celsius),
        Unit::Volts => Some(P::Volts),
        other => Some(P::Other(other.as_str().to_string())),
    }
}

/// Encodes one family through `prometheus-client`'s OpenMetrics encoder.
fn encode_family<'a>(
    encoder: &mut DescriptorEncoder,
    desc: &Desc,
    samples: impl Iterator<Item = (&'a Labels, f64)>,
) -> Result<(), std::fmt::Error> {
    let unit = pc_unit(desc.unit);
    let kind = match desc.kind {
        Kind::Counter => MetricType::Counter,
        Kind::Gauge => MetricType::Gauge,
    };
    let mut me = encoder.encode_descriptor(desc.name, desc.help, unit.as_ref(), kind)?;
    if desc.labels.is_empty() {
        // A family without labels has one sample; encoding it without a label set keeps the
        // exposition free of empty `{}`.
        let mut samples = samples;
        if let Some((_, value)) = samples.next() {
            match desc.kind {
                Kind::Counter => ConstCounter::new(value).encode(me)?,
                Kind::Gauge => ConstGauge::new(value).encode(me)?,
            }
        }
        return Ok(());
    }
    for (labels, value) in samples {
        let enc = me.encode_family(labels)?;
        match desc.kind {
            Kind::Counter => ConstCounter::new(value).encode(enc)?,
            Kind::Gauge => ConstGauge::new(value).encode(enc)?,
        }
    }
    Ok(())
}

/// The registry's view of the runner: each encode runs the collectors, then writes them out.
struct Render(Arc<Inner>);

impl std::fmt::Debug for Render {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Render")
    }
}

impl prometheus_client::collector::Collector for Render {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        self.0.encode(&mut encoder)
    }
}

fn lock(slots: &Mutex<Vec<Slot>>) -> std::sync::MutexGuard<'_, Vec<Slot>> {
    // A panic inside a collector poisons the lock; the slots hold no invariant that a
    // half-finished update could break (each scrape starts by clearing them), so go on.
    slots.lock().unwrap_or_else(|p| p.into_inner())
}

/// Exposition formats the exporter can serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0, as `prometheus-client` writes it; what Prometheus asks for first.
    OpenMetrics,
    /// The Prometheus text format 0.0.4, for clients that do not ask for OpenMetrics
    /// (curl, `promtool check metrics`, older scrapers).
    Text,
}

impl Format {
    /// Picks the format from an HTTP `Accept` header, as Prometheus negotiates it.
    pub fn from_accept(accept: Option<&str>) -> Format {
        match accept {
            Some(a) if a.contains("application/openmetrics-text") => Format::OpenMetrics,
            _ => Format::Text,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// Rewrites OpenMetrics text as Prometheus text 0.0.4: counter families take their `_total`
/// sample name in HELP and TYPE, and the `# UNIT` and `# EOF` lines (not part of 0.0.4) go.
pub fn openmetrics_to_text(om: &str) -> String {
    let mut out = String::with_capacity(om.len());
    let mut pending_help: Option<&str> = None;
    for line in om.lines() {
        if line.starts_with("# HELP ") {
            // Wait for the TYPE line: the name to use depends on the family's type.
            pending_help = Some(line);
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.rsplit_once(' ').unwrap_or((rest, ""));
            let suffix = if kind == "counter" { "_total" } else { "" };
            if let Some(help) = pending_help.take() {
                let text = help["# HELP ".len()..].strip_prefix(name).unwrap_or("");
                out.push_str("# HELP ");
                out.push_str(name);
                out.push_str(suffix);
                out.push_str(text);
                out.push('\n');
            }
            out.push_str("# TYPE ");
            out.push_str(name);
            out.push_str(suffix);
            out.push(' ');
            out.push_str(kind);
            out.push('\n');
            continue;
        }
        if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_format_names_counters_by_their_samples() {
        let om = "# HELP a_seconds Time.\n# TYPE a_seconds counter\n# UNIT a_seconds seconds\n\
                  a_seconds_total{cpu=\"0\"} 1.0\n# HELP b Gauge.\n# TYPE b gauge\nb 2\n# EOF\n";
        assert_eq!(
            openmetrics_to_text(om),
            "# HELP a_seconds_total Time.\n# TYPE a_seconds_total counter\n\
             a_seconds_total{cpu=\"0\"} 1.0\n# HELP b Gauge.\n# TYPE b gauge\nb 2\n"
        );
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

    #[test]
    fn accept_negotiation() {
        let prom = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";
        assert_eq!(Format::from_accept(Some(prom)), Format::OpenMetrics);
        assert_eq!(Format::from_accept(Some("*/*")), Format::Text);
        assert_eq!(Format::from_accept(None), Format::Text);
    }
}
