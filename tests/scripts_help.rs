//! Every script of `scripts/` and `scripts/evaluate/` (a file with a `#!` line) answers `--help`
//! and `-h` with its usage and exit status 0, writing nothing, and refuses an option it does
//! not know with exit status 2, before doing anything. (`scripts/big_host_fixture.py --help`
//! once wrote a 28 MB fixture tree into a folder named `--help`.)
//!
//! Each runs through its interpreter (`python3` or `bash`) in an empty temporary directory,
//! which must still be empty afterwards. The Python scripts need only the standard library
//! and PyYAML (which `.ci/run` installs) to print their help: their other imports (matplotlib,
//! PyTorch) come after the arguments are read.

use reveal_e2e::TempDir;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The scripts: every `.py` and `.sh` with a `#!` line (`scripts/evaluate/cli.py` is a module
/// the others import).
fn scripts() -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in ["scripts", "scripts/evaluate"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let ext = path.extension().and_then(|e| e.to_str());
            if !matches!(ext, Some("py" | "sh")) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            if text.starts_with("#!") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Runs `script arg` in `cwd` and returns its status and output; a script still running
/// after a minute is killed and fails the test (it started real work).
fn run(script: &Path, arg: &str, cwd: &Path, logs: &Path) -> (ExitStatus, String) {
    let interpreter = match script.extension().and_then(|e| e.to_str()) {
        Some("py") => "python3",
        _ => "bash",
    };
    let log = logs.join("output");
    let mut child = Command::new(interpreter)
        .arg(script)
        .arg(arg)
        .current_dir(cwd)
        // No __pycache__ beside the scripts either.
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(logs.join("errors")).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("{interpreter}: {e}"));
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{} {arg}: still running after 60 s", script.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(&log).unwrap()
        + &std::fs::read_to_string(logs.join("errors")).unwrap();
    (status, text)
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn every_script_answers_help_and_refuses_unknown_options() {
    let scripts = scripts();
    // Not a vacuous pass: the shell scripts and the Python scripts of both folders.
    assert!(scripts.len() >= 20, "only {} scripts found", scripts.len());
    let logs = TempDir::new("scripts-help-logs");
    let mut problems = Vec::new();
    for script in &scripts {
        let name = script.file_name().unwrap().to_str().unwrap();
        for (arg, want) in [("--help", 0), ("-h", 0), ("--no-such-option", 2)] {
            let cwd = TempDir::new("scripts-help");
            let (status, text) = run(script, arg, cwd.path(), logs.path());
            eprintln!("{name} {arg}: {status}");
            if status.code() != Some(want) {
                problems.push(format!("{name} {arg}: {status}, not {want}:\n{text}"));
            }
            if want == 0 && !text.contains(name) {
                problems.push(format!("{name} {arg}: the usage does not name it:\n{text}"));
            }
            if want == 2 && text.trim().is_empty() {
                problems.push(format!("{name} {arg}: refused without saying why"));
            }
            let left = entries(cwd.path());
            if !left.is_empty() {
                problems.push(format!(
                    "{name} {arg}: wrote {left:?} into its working directory"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}
