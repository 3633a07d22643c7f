//! What the analyzer's integration tests share: the real `reveal-analyzer` binary, fresh
//! temporary directories, reproducible noise, recordings built from it (CSV and OpenMetrics
//! text, samples with timestamps 100 ms apart) and the JSON-lines report read back.
//!
//! Each file under `tests/` is its own crate and includes this module with `mod support;`.

// Every test crate uses a different part of this module; the rest would warn in each.
#![allow(dead_code)]

pub mod trace;
pub mod wide_host;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `reveal-analyzer` binary that Cargo built for this test run.
pub fn analyzer() -> Command {
    Command::new(env!("CARGO_BIN_EXE_reveal-analyzer"))
}

/// Runs `reveal-analyzer analyze` with `args` to completion.
pub fn analyze(args: &[&str]) -> Output {
    analyzer()
        .arg("analyze")
        .args(args)
        .output()
        .expect("run reveal-analyzer")
}

/// A child's stdout or stderr as text, for assertions and failure messages.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// An empty directory `reveal-<tag>-<pid>` under the system temp dir. Tests remove it when
/// they pass and leave it behind when they fail, for a look.
pub fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("reveal-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// Deterministic noise in [−0.5, 0.5) from a linear congruential generator, so recordings
/// are the same on every run without a random-number crate.
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        unit(self.0)
    }
}

/// Deterministic noise in [−0.5, 0.5) from xorshift (a seed must not be 0). A second
/// generator because the library-level tests' expectations were drawn on its sequences.
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        unit(self.0)
    }
}

/// The top 53 bits of `x` as a float in [−0.5, 0.5).
fn unit(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5
}

/// Where every recording starts, in Unix seconds.
pub const START_S: f64 = 1_700_000_000.0;

/// The timestamp of sample `step` (100 ms apart from [`START_S`]), in seconds as both the
/// CSV and the OpenMetrics readers take it.
fn timestamp(step: usize) -> String {
    format!("{:.1}", START_S + step as f64 / 10.0)
}

/// Column names `reveal_<subsystem>_signal_<i>` for `n` channels, the subsystems taken in
/// turn (cpu, memory, network, storage), so channel `i` belongs to subsystem `i % 4`.
pub fn signal_columns(n: usize) -> Vec<String> {
    const SUBSYSTEMS: [&str; 4] = ["cpu", "memory", "network", "storage"];
    (0..n)
        .map(|c| format!("reveal_{}_signal_{c}", SUBSYSTEMS[c % 4]))
        .collect()
}

/// A CSV recording as `analyze --input` reads it: a `timestamp` column, then `columns`;
/// `steps` rows 100 ms apart. `cell(step, column)` writes each cell (empty for no sample);
/// it is called row by row, left to right, so noise drawn inside it gives the same file on
/// every run.
pub fn csv_recording(
    columns: &[String],
    steps: usize,
    mut cell: impl FnMut(usize, usize) -> String,
) -> String {
    let mut csv = String::from("timestamp");
    for name in columns {
        csv.push(',');
        csv.push_str(name);
    }
    csv.push('\n');
    for t in 0..steps {
        csv.push_str(&timestamp(t));
        for c in 0..columns.len() {
            csv.push(',');
            csv.push_str(&cell(t, c));
        }
        csv.push('\n');
    }
    csv
}

/// An OpenMetrics text recording: `# TYPE` lines, then samples with timestamps, then
/// `# EOF`.
pub struct OpenMetrics(String);

impl OpenMetrics {
    /// Starts a recording with one `# TYPE` line per `(family, type)`.
    pub fn new(types: &[(&str, &str)]) -> OpenMetrics {
        let mut text = String::new();
        for (family, kind) in types {
            let _ = writeln!(text, "# TYPE {family} {kind}");
        }
        OpenMetrics(text)
    }

    /// One sample of `series` (name and labels as written) at sample `step`.
    pub fn sample(&mut self, series: &str, value: &str, step: usize) {
        let _ = writeln!(self.0, "{series} {value} {}", timestamp(step));
    }

    /// The finished text.
    pub fn finish(mut self) -> String {
        self.0.push_str("# EOF\n");
        self.0
    }
}

/// What `analyze` made of one recording: its Markdown on stdout and its JSON-lines report.
pub struct Report {
    pub markdown: String,
    pub lines: Vec<serde_json::Value>,
}

/// Writes `recording` to `dir/name`, runs `analyze --input` on it with the JSON report in
/// `dir/out.jsonl` and `extra` flags, and fails the test (with stderr) unless it succeeds.
pub fn analyze_recording(dir: &Path, name: &str, recording: &str, extra: &[&str]) -> Report {
    let input = dir.join(name);
    std::fs::write(&input, recording).expect("write recording");
    let json = dir.join("out.jsonl");
    let mut args = vec![
        "--input",
        input.to_str().expect("UTF-8 temp path"),
        "--json",
        json.to_str().expect("UTF-8 temp path"),
    ];
    args.extend_from_slice(extra);
    let out = analyze(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    Report {
        markdown: text(&out.stdout),
        lines: json_lines(&json),
    }
}

/// Every line of a JSON-lines report.
pub fn json_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .expect("JSON report")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

/// The report lines whose `type` is `t`.
pub fn of_type<'a>(lines: &'a [serde_json::Value], t: &str) -> Vec<&'a serde_json::Value> {
    lines.iter().filter(|v| v["type"] == t).collect()
}
