//! The developer entry point (the cargo-xtask pattern): `cargo xtask <task>`, an alias of
//! `cargo run --package xtask --` in `.cargo/config.toml`. It only runs other commands (cargo,
//! python3) from the workspace root, so it depends on nothing beyond std and builds in seconds.
//! `.ci/run` calls `cargo xtask check` before the README's test command.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

const USAGE: &str = "\
usage: cargo xtask <task> [options]

The developer entry point; CI (.ci/run) runs `check`, then `test`.

tasks:
  check          the gates: fmt, clippy and doc, in that order; all three run, and any
                 failure fails it (exit 1)
  fmt [--fix]    cargo fmt --all --check (--fix: rewrite the files instead)
  clippy         cargo clippy --workspace --all-targets -- -D warnings (every crate, test,
                 bench and example)
  doc            cargo doc --workspace --no-deps with RUSTDOCFLAGS=\"-D warnings\"
  test [ARGS]    the README's test command, cargo nextest run --workspace [ARGS]
                 (ARGS go to nextest, e.g. `cargo xtask test -p reveal-e2e --test docs`)
  regenerate     rewrite every generated file from its source, then review `git diff`:
                 REVEAL_BLESS=1 over the tests that compare one (schema_catalog, golden,
                 readme, rules) and python3 scripts/kubernetes_rules.py. Not included:
                 the dashboards' pictures (a live stack, docs/grafana.md) and the metric
                 selection (recordings, docs/metric-selection.md)

options:
  -h, --help     print this and exit
";

/// The environment variable under which a test that compares a generated file rewrites it
/// instead (`REVEAL_BLESS=1 cargo nextest run -p reveal-exporter --test golden`).
const BLESS: &str = "REVEAL_BLESS";

#[derive(Debug, PartialEq)]
enum Task {
    Help,
    Check,
    Fmt { fix: bool },
    Clippy,
    Doc,
    Test(Vec<String>),
    Regenerate,
}

/// One command to run: a program, its arguments and extra environment.
#[derive(Debug, PartialEq)]
struct Step {
    program: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Step {
    /// `cargo` with these arguments, separated by spaces.
    fn cargo(args: &str) -> Step {
        Step {
            program: "cargo".into(),
            args: args.split_whitespace().map(String::from).collect(),
            env: Vec::new(),
        }
    }

    fn with_env(mut self, key: &str, value: &str) -> Step {
        self.env.push((key.into(), value.into()));
        self
    }

    fn shown(&self) -> String {
        let mut words: Vec<String> = self.env.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
        words.push(self.program.clone());
        words.extend(self.args.iter().cloned());
        words.join(" ")
    }
}

fn parse(args: &[String]) -> Result<Task, String> {
    let Some((task, rest)) = args.split_first() else {
        return Err("no task given".into());
    };
    let no_options = |task: Task| match rest
        .iter()
        .find(|a| a.as_str() != "-h" && a.as_str() != "--help")
    {
        Some(a) => Err(format!("{}: unexpected argument {a}", args[0])),
        None if rest.is_empty() => Ok(task),
        None => Ok(Task::Help),
    };
    match task.as_str() {
        "-h" | "--help" | "help" => Ok(Task::Help),
        "check" => no_options(Task::Check),
        "clippy" => no_options(Task::Clippy),
        "doc" => no_options(Task::Doc),
        "regenerate" => no_options(Task::Regenerate),
        "fmt" => match rest {
            [] => Ok(Task::Fmt { fix: false }),
            [f] if f == "--fix" => Ok(Task::Fmt { fix: true }),
            [h] if h == "-h" || h == "--help" => Ok(Task::Help),
            _ => Err(format!("fmt: unexpected arguments {}", rest.join(" "))),
        },
        // Everything after `test` is nextest's (its own --help included).
        "test" => Ok(Task::Test(rest.to_vec())),
        other => Err(format!("unknown task {other}")),
    }
}

fn fmt(fix: bool) -> Step {
    if fix {
        Step::cargo("fmt --all")
    } else {
        Step::cargo("fmt --all --check")
    }
}

fn clippy() -> Step {
    Step::cargo("clippy --workspace --all-targets -- -D warnings")
}

fn doc() -> Step {
    Step::cargo("doc --workspace --no-deps").with_env("RUSTDOCFLAGS", "-D warnings")
}

/// What a task runs, in order.
fn steps(task: &Task) -> Vec<Step> {
    match task {
        Task::Help => Vec::new(),
        Task::Check => vec![fmt(false), clippy(), doc()],
        Task::Fmt { fix } => vec![fmt(*fix)],
        Task::Clippy => vec![clippy()],
        Task::Doc => vec![doc()],
        Task::Test(extra) => {
            let mut s = Step::cargo("nextest run --workspace");
            s.args.extend(extra.iter().cloned());
            vec![s]
        }
        Task::Regenerate => vec![
            // The catalog first: the exporter's documentation is generated from the binary.
            Step::cargo("nextest run -p reveal-exporter --test schema_catalog")
                .with_env(BLESS, "1"),
            Step::cargo("nextest run -p reveal-exporter --test golden --test readme")
                .with_env(BLESS, "1"),
            Step::cargo("nextest run -p reveal-e2e --test rules").with_env(BLESS, "1"),
            Step {
                program: "python3".into(),
                args: vec!["scripts/kubernetes_rules.py".into()],
                env: Vec::new(),
            },
        ],
    }
}

/// The checkout the tasks run in: `cargo run` tells the binary where its package is (the
/// path compiled in can be another checkout's that shared the target directory).
fn workspace_root() -> PathBuf {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest_dir
        .parent()
        .map_or_else(|| Path::new(".").to_path_buf(), Path::to_path_buf)
}

/// Runs one step from the workspace root; Ok when it exits 0.
fn run(step: &Step, root: &Path) -> Result<(), String> {
    // The cargo that runs us (`cargo run` sets CARGO), so a toolchain override holds.
    let program: OsString = match step.program.as_str() {
        "cargo" => std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()),
        p => p.into(),
    };
    eprintln!("xtask: {}", step.shown());
    let started = Instant::now();
    let status = Command::new(program)
        .args(&step.args)
        .envs(step.env.iter().map(|(k, v)| (k, v)))
        .current_dir(root)
        .status()
        .map_err(|e| format!("{}: cannot start: {e}", step.program))?;
    let took = started.elapsed().as_secs_f64();
    if status.success() {
        eprintln!("xtask: ok in {took:.1} s: {}", step.shown());
        Ok(())
    } else {
        Err(format!("{status} after {took:.1} s: {}", step.shown()))
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task = match parse(&args) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("xtask: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if task == Task::Help {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let root = workspace_root();
    let started = Instant::now();
    // Every step runs (a format slip should not hide a clippy finding); all failures are listed.
    let failures: Vec<String> = steps(&task)
        .iter()
        .filter_map(|s| run(s, &root).err())
        .collect();
    let took = started.elapsed().as_secs_f64();
    if failures.is_empty() {
        eprintln!(
            "xtask: {args:?} passed in {took:.1} s",
            args = args.join(" ")
        );
        ExitCode::SUCCESS
    } else {
        for f in &failures {
            eprintln!("xtask: FAILED: {f}");
        }
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn tasks_parse() {
        assert_eq!(parse(&args("check")), Ok(Task::Check));
        assert_eq!(parse(&args("fmt")), Ok(Task::Fmt { fix: false }));
        assert_eq!(parse(&args("fmt --fix")), Ok(Task::Fmt { fix: true }));
        assert_eq!(parse(&args("clippy")), Ok(Task::Clippy));
        assert_eq!(parse(&args("doc")), Ok(Task::Doc));
        assert_eq!(parse(&args("regenerate")), Ok(Task::Regenerate));
        assert_eq!(parse(&args("test")), Ok(Task::Test(Vec::new())));
        assert_eq!(
            parse(&args("test -p reveal-e2e --test docs")),
            Ok(Task::Test(args("-p reveal-e2e --test docs")))
        );
    }

    #[test]
    fn help_anywhere_before_a_tasks_own_arguments() {
        for a in [
            "--help",
            "-h",
            "help",
            "check --help",
            "fmt -h",
            "regenerate --help",
        ] {
            assert_eq!(parse(&args(a)), Ok(Task::Help), "{a}");
        }
        // nextest answers its own --help.
        assert_eq!(parse(&args("test --help")), Ok(Task::Test(args("--help"))));
    }

    #[test]
    fn unknown_tasks_and_options_are_refused() {
        for a in [
            "",
            "lint",
            "--fix",
            "check --fix",
            "fmt --check",
            "fmt --fix extra",
            "doc x",
        ] {
            assert!(parse(&args(a)).is_err(), "{a:?} was accepted");
        }
    }

    #[test]
    fn check_is_fmt_clippy_doc_and_denies_warnings() {
        let shown: Vec<String> = steps(&Task::Check).iter().map(Step::shown).collect();
        assert_eq!(
            shown,
            [
                "cargo fmt --all --check",
                "cargo clippy --workspace --all-targets -- -D warnings",
                "RUSTDOCFLAGS=\"-D warnings\" cargo doc --workspace --no-deps",
            ]
        );
    }

    #[test]
    fn test_is_the_readmes_command() {
        let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
        let step = &steps(&Task::Test(Vec::new()))[0];
        assert!(
            readme.contains(&format!("    {}\n", step.shown())),
            "{}",
            step.shown()
        );
    }

    #[test]
    fn regenerate_blesses_every_test_that_reads_the_variable() {
        let steps = steps(&Task::Regenerate);
        let root = workspace_root();
        let mut found = 0;
        let packages = [
            ("reveal-exporter", "exporter"),
            ("reveal-analyzer", "analyzer"),
            ("reveal-schema", "schema"),
            ("reveal-e2e", ""),
        ];
        for (package, dir) in packages {
            let Ok(tests) = std::fs::read_dir(root.join(dir).join("tests")) else {
                continue;
            };
            for entry in tests {
                let path = entry.unwrap().path();
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                if !text.contains(&format!("var_os(\"{BLESS}\")")) {
                    continue;
                }
                found += 1;
                let name = path.file_stem().unwrap().to_str().unwrap();
                let run = steps.iter().any(|s| {
                    s.env.contains(&(BLESS.into(), "1".into()))
                        && s.args.windows(2).any(|w| w[0] == "-p" && w[1] == package)
                        && s.args.windows(2).any(|w| w[0] == "--test" && w[1] == name)
                });
                assert!(run, "regenerate does not run {package}'s test {name}");
            }
        }
        // golden, readme, schema_catalog and rules, at least.
        assert!(found >= 4, "only {found} tests read {BLESS}");
    }
}
