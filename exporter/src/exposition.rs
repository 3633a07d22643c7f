//! The exposition: families written straight into the page in OpenMetrics 1.0 (the bytes
//! `prometheus-client`'s text encoder writes, checked against it below), the Prometheus text
//! format 0.0.4 derived from it, and the format a scrape's `Accept` header picks.

use crate::scrape::{Desc, Kind, Labels, Sample, Unit};

/// Encodes a family's summed series (summed as they were pushed, `Scrape`'s `Page::sums`);
/// summed over every label, one sample without a label set.
pub(crate) fn encode_summed(out: &mut String, desc: &Desc, summed: &[Sample]) {
    let pairs = || summed.iter().map(|s| (&s.labels, s.value));
    if summed.iter().all(|s| !s.labels.is_empty()) {
        return encode_family(out, desc, pairs());
    }
    write_descriptor(out, desc);
    let value: f64 = summed.iter().map(|s| s.value).sum();
    write_sample(out, desc, None, value);
}

/// Writes one family in OpenMetrics 1.0: its `# HELP`, `# TYPE` and (with a unit) `# UNIT`
/// lines, then a line per sample. Written straight into the page, in the bytes
/// `prometheus-client`'s text encoder wrote (`name{k="v",...} value` with the value as `dtoa`
/// formats an `f64`, label values escaped): the golden files did not change when it replaced
/// that encoder, which wrote each piece through a `dyn Write` call (a tenth of the fast page's
/// CPU on the 96-CPU fixture, for 2,000 series).
pub(crate) fn encode_family<'a>(
    out: &mut String,
    desc: &Desc,
    samples: impl Iterator<Item = (&'a Labels, f64)>,
) {
    write_descriptor(out, desc);
    if desc.labels.is_empty() {
        // A family without labels has one sample; encoding it without a label set keeps the
        // exposition free of empty `{}`.
        let mut samples = samples;
        if let Some((_, value)) = samples.next() {
            write_sample(out, desc, None, value);
        }
        return;
    }
    for (labels, value) in samples {
        write_sample(out, desc, Some(labels), value);
    }
}

/// The family name with its unit suffix (`reveal_cpu_time_seconds`), pushed onto `out`.
fn push_family_name(out: &mut String, desc: &Desc) {
    out.push_str(desc.name);
    if desc.unit != Unit::None {
        out.push('_');
        out.push_str(desc.unit.as_str());
    }
}

fn write_descriptor(out: &mut String, desc: &Desc) {
    out.push_str("# HELP ");
    push_family_name(out, desc);
    out.push(' ');
    out.push_str(desc.help);
    out.push_str("\n# TYPE ");
    push_family_name(out, desc);
    out.push_str(match desc.kind {
        Kind::Counter => " counter\n",
        Kind::Gauge => " gauge\n",
    });
    if desc.unit != Unit::None {
        out.push_str("# UNIT ");
        push_family_name(out, desc);
        out.push(' ');
        out.push_str(desc.unit.as_str());
        out.push('\n');
    }
}

/// One sample line; `labels` is `None` for a family without labels (no `{}`).
fn write_sample(out: &mut String, desc: &Desc, labels: Option<&Labels>, value: f64) {
    push_family_name(out, desc);
    if desc.kind == Kind::Counter {
        out.push_str("_total");
    }
    if let Some(labels) = labels {
        out.push('{');
        for (i, (k, v)) in labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(k);
            out.push_str("=\"");
            push_escaped(out, v);
            out.push('"');
        }
        out.push('}');
    }
    out.push(' ');
    out.push_str(dtoa::Buffer::new().format(value));
    out.push('\n');
}

/// A label value with `\`, `"` and newline escaped, as OpenMetrics asks.
fn push_escaped(out: &mut String, v: &str) {
    if !v.bytes().any(|b| matches!(b, b'\\' | b'"' | b'\n')) {
        out.push_str(v);
        return;
    }
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
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

    /// A family as `prometheus-client`'s OpenMetrics encoder writes it, the reference the
    /// exposition's bytes were kept to when [`encode_family`] replaced it.
    fn reference(desc: &Desc, samples: &[(Labels, f64)]) -> String {
        use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
        use prometheus_client::metrics::counter::ConstCounter;
        use prometheus_client::metrics::gauge::ConstGauge;
        use prometheus_client::metrics::MetricType;
        use prometheus_client::registry::Unit as P;

        struct One<'a>(&'a Desc, &'a [(Labels, f64)]);
        impl std::fmt::Debug for One<'_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("One")
            }
        }
        impl prometheus_client::collector::Collector for One<'static> {
            fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
                let desc = self.0;
                let unit = match desc.unit {
                    Unit::None => None,
                    Unit::Seconds => Some(P::Seconds),
                    Unit::Bytes => Some(P::Bytes),
                    Unit::Joules => Some(P::Joules),
                    Unit::Celsius => Some(P::Celsius),
                    Unit::Volts => Some(P::Volts),
                    other => Some(P::Other(other.as_str().to_string())),
                };
                let kind = match desc.kind {
                    Kind::Counter => MetricType::Counter,
                    Kind::Gauge => MetricType::Gauge,
                };
                let mut me =
                    encoder.encode_descriptor(desc.name, desc.help, unit.as_ref(), kind)?;
                for (labels, value) in self.1 {
                    if desc.labels.is_empty() {
                        match desc.kind {
                            Kind::Counter => ConstCounter::new(*value).encode(me)?,
                            Kind::Gauge => ConstGauge::new(*value).encode(me)?,
                        }
                        break;
                    }
                    let enc = me.encode_family(labels)?;
                    match desc.kind {
                        Kind::Counter => ConstCounter::new(*value).encode(enc)?,
                        Kind::Gauge => ConstGauge::new(*value).encode(enc)?,
                    }
                }
                Ok(())
            }
        }
        // The registry needs 'static collectors: leak the test's few small inputs.
        let desc: &'static Desc = Box::leak(Box::new(Desc { ..*desc }));
        let samples: &'static [(Labels, f64)] = Box::leak(samples.to_vec().into_boxed_slice());
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(One(desc, samples)));
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
        out
    }

    proptest::proptest! {
        #[test]
        fn families_are_written_as_prometheus_client_wrote_them(
            values in proptest::collection::vec(("\\PC{0,12}|[\"\\\\\n a-z]{0,6}", proptest::num::f64::ANY), 0..4),
            unit in 0usize..6,
            counter in proptest::bool::ANY,
            labelled in proptest::bool::ANY,
        ) {
            let unit = [Unit::None, Unit::Seconds, Unit::Bytes, Unit::Hertz, Unit::Celsius, Unit::Ratio][unit];
            let labels: &'static [&'static str] = if labelled { &["cpu", "type"] } else { &[] };
            let desc = Desc {
                name: "reveal_test_family",
                unit,
                kind: if counter { Kind::Counter } else { Kind::Gauge },
                help: "A test family.",
                labels,
            };
            let samples: Vec<(Labels, f64)> = values
                .iter()
                .filter(|(_, v)| v.is_finite())
                .map(|(s, v)| {
                    let l = if labelled { vec![("cpu", "7".to_string()), ("type", s.clone())] } else { vec![] };
                    (l, *v)
                })
                .collect();
            let mut ours = String::new();
            encode_family(&mut ours, &desc, samples.iter().map(|(l, v)| (l, *v)));
            ours.push_str("# EOF\n");
            proptest::prop_assert_eq!(ours, reference(&desc, &samples));
        }
    }

    #[test]
    fn accept_negotiation() {
        let prom = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";
        assert_eq!(Format::from_accept(Some(prom)), Format::OpenMetrics);
        assert_eq!(Format::from_accept(Some("*/*")), Format::Text);
        assert_eq!(Format::from_accept(None), Format::Text);
    }
}
