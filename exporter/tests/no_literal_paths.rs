//! Every reader must reach procfs and sysfs through `Paths`, so `--path.procfs` and
//! `--path.sysfs` (and the fixture trees) reach it too: no string literal in `src/` outside
//! `paths.rs` may start with `/proc` or `/sys`.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Offending `(line number, line)` pairs: a `"` or `r"`/`r#"` opening a literal that starts
/// with `/proc` or `/sys`, on a line that is not a comment. Scanning stops at the first
/// `#[cfg(test)]`: unit tests may name the host's files in messages, shipped code may not.
fn stray_literals(src: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (i, line) in src.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("#[cfg(test)]") {
            break;
        }
        if code.starts_with("//") {
            continue;
        }
        // Strip a trailing line comment (good enough: a `//` inside a string literal only
        // hides the rest of that line, and no path literal contains `//`).
        let code = match code.find("//") {
            Some(c) if !code[..c].ends_with(':') => &code[..c],
            _ => code,
        };
        let hit = ["\"/proc", "\"/sys", "#\"/proc", "#\"/sys"]
            .iter()
            .any(|p| code.contains(p));
        if hit {
            found.push((i + 1, line.to_string()));
        }
    }
    found
}

#[test]
fn no_proc_or_sys_literals_outside_paths_rs() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 5, "found only {files:?}");
    let mut bad = Vec::new();
    for f in files
        .iter()
        .filter(|f| f.file_name().is_some_and(|n| n != "paths.rs"))
    {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in stray_literals(&text) {
            bad.push(format!(
                "{}:{n}: {}",
                f.strip_prefix(&src).unwrap().display(),
                line.trim()
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "literal /proc or /sys paths outside src/paths.rs; use Paths::proc/Paths::sys:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_guard_sees_literals() {
    assert_eq!(stray_literals("let p = \"/proc/stat\";\n").len(), 1);
    assert_eq!(
        stray_literals("let p = Path::new(r\"/sys/class/hwmon\");\n").len(),
        1
    );
    assert_eq!(stray_literals("/// reads \"/proc/stat\"\n").len(), 0);
    assert_eq!(
        stray_literals("#[cfg(test)]\nmod t { const P: &str = \"/proc/stat\"; }\n").len(),
        0
    );
    assert_eq!(
        stray_literals("let p = paths.proc(\"stat\"); // not \"/proc/stat\"\n").len(),
        0
    );
}
