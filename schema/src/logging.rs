//! Both binaries' log output (`--log.level`, `--log.format`), for an operator to ship:
//!
//! - `logfmt` (the default, node_exporter's): one line per event,
//!   `ts=2026-12-05T04:13:39.149737Z level=warn target=reveal_exporter::collectors::perf
//!   msg="perf: …" collector=perf`; values with spaces, `=` or quotes are quoted;
//! - `json`: one object per line with the same keys (`ts`, `level`, `target`, `msg`, then the
//!   event's fields; numbers and booleans stay numbers and booleans).
//!
//! Colour only when standard error is a terminal: journald, `kubectl logs` and a file get
//! plain text. Only the `level` value is coloured, so a terminal's line is still logfmt.

use std::fmt::{self, Write as _};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// `--log.format`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    #[default]
    Logfmt,
    Json,
}

impl LogFormat {
    /// The accepted spellings, for the flag's help and value parser.
    pub const VALUES: [&'static str; 2] = ["logfmt", "json"];
}

impl std::str::FromStr for LogFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "logfmt" => Ok(LogFormat::Logfmt),
            "json" => Ok(LogFormat::Json),
            other => Err(format!("unknown log format {other:?}: logfmt or json")),
        }
    }
}

/// Installs the global subscriber: events at or above `filter` (an `EnvFilter` directive:
/// `info`, `reveal_analyzer=debug`) written to standard error in `format`, coloured only when
/// standard error is a terminal.
pub fn init(filter: &str, format: LogFormat) {
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .event_format(Format(format))
        .init();
}

/// The event formatter of [`init`].
#[derive(Debug, Clone, Copy)]
pub struct Format(pub LogFormat);

/// A field's value: text, or a number or boolean (written bare in JSON).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Text(String),
    Bare(String),
}

impl Value {
    fn as_str(&self) -> &str {
        match self {
            Value::Text(s) | Value::Bare(s) => s,
        }
    }
}

/// One event, ready to be written: the message and the other fields in order.
#[derive(Debug, Default)]
pub struct Record {
    pub msg: String,
    pub fields: Vec<(&'static str, Value)>,
}

impl Visit for Record {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let text = format!("{value:?}");
        if field.name() == "message" {
            self.msg = text;
        } else {
            self.fields.push((field.name(), Value::Text(text)));
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.msg = value.to_string();
        } else {
            self.fields
                .push((field.name(), Value::Text(value.to_string())));
        }
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.fields
            .push((field.name(), Value::Bare(value.to_string())));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.fields
            .push((field.name(), Value::Bare(value.to_string())));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.fields
            .push((field.name(), Value::Bare(value.to_string())));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        if value.is_finite() {
            self.fields
                .push((field.name(), Value::Bare(value.to_string())));
        } else {
            self.fields
                .push((field.name(), Value::Text(value.to_string())));
        }
    }
}

fn level_name(level: &Level) -> &'static str {
    match *level {
        Level::ERROR => "error",
        Level::WARN => "warn",
        Level::INFO => "info",
        Level::DEBUG => "debug",
        Level::TRACE => "trace",
    }
}

/// Appends `v` as a logfmt value: bare when it is a plain word, else quoted with `"`, `\`
/// and control characters escaped.
pub fn logfmt_value(out: &mut String, v: &str) {
    let plain = !v.is_empty()
        && !v
            .chars()
            .any(|c| c == ' ' || c == '=' || c == '"' || c == '\\' || c.is_control());
    if plain {
        out.push_str(v);
        return;
    }
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends `v` as a JSON string.
pub fn json_string(out: &mut String, v: &str) {
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// One logfmt line (with its newline). `colour` wraps the level in ANSI colour.
pub fn logfmt_line(ts: &str, level: &Level, target: &str, r: &Record, colour: bool) -> String {
    let mut out = String::with_capacity(128 + r.msg.len());
    out.push_str("ts=");
    logfmt_value(&mut out, ts);
    out.push_str(" level=");
    let name = level_name(level);
    if colour {
        let code = match *level {
            Level::ERROR => "31",
            Level::WARN => "33",
            Level::INFO => "32",
            Level::DEBUG => "34",
            Level::TRACE => "35",
        };
        let _ = write!(out, "\x1b[{code}m{name}\x1b[0m");
    } else {
        out.push_str(name);
    }
    out.push_str(" target=");
    logfmt_value(&mut out, target);
    out.push_str(" msg=");
    logfmt_value(&mut out, &r.msg);
    for (k, v) in &r.fields {
        out.push(' ');
        out.push_str(k);
        out.push('=');
        logfmt_value(&mut out, v.as_str());
    }
    out.push('\n');
    out
}

/// One JSON line (with its newline).
pub fn json_line(ts: &str, level: &Level, target: &str, r: &Record) -> String {
    let mut out = String::with_capacity(128 + r.msg.len());
    out.push_str("{\"ts\":");
    json_string(&mut out, ts);
    out.push_str(",\"level\":");
    json_string(&mut out, level_name(level));
    out.push_str(",\"target\":");
    json_string(&mut out, target);
    out.push_str(",\"msg\":");
    json_string(&mut out, &r.msg);
    for (k, v) in &r.fields {
        out.push(',');
        json_string(&mut out, k);
        out.push(':');
        match v {
            Value::Text(s) => json_string(&mut out, s),
            Value::Bare(s) => out.push_str(s),
        }
    }
    out.push_str("}\n");
    out
}

impl<S, N> FormatEvent<S, N> for Format
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut ts = String::with_capacity(32);
        SystemTime.format_time(&mut Writer::new(&mut ts))?;
        let mut record = Record::default();
        event.record(&mut record);
        let meta = event.metadata();
        let line = match self.0 {
            LogFormat::Logfmt => logfmt_line(
                &ts,
                meta.level(),
                meta.target(),
                &record,
                writer.has_ansi_escapes(),
            ),
            LogFormat::Json => json_line(&ts, meta.level(), meta.target(), &record),
        };
        writer.write_str(&line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Record {
        Record {
            msg: "perf: 8 of 8 events left out (cycles, instructions)".into(),
            fields: vec![
                ("collector", Value::Text("perf".into())),
                ("cpus", Value::Bare("2".into())),
                ("file", Value::Text("a \"b\"\nc".into())),
            ],
        }
    }

    #[test]
    fn logfmt_quotes_only_what_needs_it() {
        let line = logfmt_line(
            "2026-12-05T04:13:39.149737Z",
            &Level::WARN,
            "reveal_exporter::collectors::perf",
            &record(),
            false,
        );
        assert_eq!(
            line,
            "ts=2026-12-05T04:13:39.149737Z level=warn target=reveal_exporter::collectors::perf \
             msg=\"perf: 8 of 8 events left out (cycles, instructions)\" collector=perf cpus=2 \
             file=\"a \\\"b\\\"\\nc\"\n"
        );
        let mut empty = String::new();
        logfmt_value(&mut empty, "");
        assert_eq!(empty, "\"\"");
        let coloured = logfmt_line("t", &Level::INFO, "x", &Record::default(), true);
        assert!(coloured.contains("level=\x1b[32minfo\x1b[0m"), "{coloured}");
        assert!(!logfmt_line("t", &Level::INFO, "x", &Record::default(), false).contains('\x1b'));
    }

    #[test]
    fn json_escapes_and_keeps_numbers_bare() {
        let line = json_line("t", &Level::ERROR, "x", &record());
        assert_eq!(
            line,
            "{\"ts\":\"t\",\"level\":\"error\",\"target\":\"x\",\
             \"msg\":\"perf: 8 of 8 events left out (cycles, instructions)\",\
             \"collector\":\"perf\",\"cpus\":2,\"file\":\"a \\\"b\\\"\\nc\"}\n"
        );
        let mut s = String::new();
        json_string(&mut s, "\u{1}é");
        assert_eq!(s, "\"\\u0001é\"");
    }

    #[test]
    fn formats_parse() {
        assert_eq!("json".parse::<LogFormat>(), Ok(LogFormat::Json));
        assert_eq!("logfmt".parse::<LogFormat>(), Ok(LogFormat::Logfmt));
        assert!("text".parse::<LogFormat>().is_err());
    }
}
