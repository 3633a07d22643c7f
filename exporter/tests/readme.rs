//! The README's flag reference and metric list are generated from the code: this test fails
//! when the blocks between the markers differ from what the binary prints.
//! `UPDATE_README=1 cargo nextest run -p reveal-exporter --test readme` rewrites them.

use std::path::PathBuf;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_reveal-exporter");

fn readme_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../README.md")
}

fn run(arg: &str) -> String {
    let out = Command::new(BIN).arg(arg).output().unwrap();
    assert!(
        out.status.success(),
        "reveal-exporter {arg}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Replaces what lies between `<!-- NAME:begin -->` and `<!-- NAME:end -->` with `body`.
fn splice(readme: &str, name: &str, body: &str) -> String {
    let (begin, end) = (
        format!("<!-- {name}:begin -->\n"),
        format!("<!-- {name}:end -->"),
    );
    let b = readme
        .find(&begin)
        .unwrap_or_else(|| panic!("README.md has no {begin:?} marker"));
    let e = readme[b..]
        .find(&end)
        .unwrap_or_else(|| panic!("README.md has no {end:?} marker"))
        + b;
    format!("{}{begin}{body}{}", &readme[..b], &readme[e..])
}

fn generated(readme: &str) -> String {
    let flags = format!("```text\n{}```\n", run("--help"));
    let metrics = run("--print-metrics");
    splice(&splice(readme, "flags", &flags), "metrics", &metrics)
}

#[test]
fn readme_blocks_match_the_code() {
    let path = readme_path();
    let readme = std::fs::read_to_string(&path).unwrap();
    let want = generated(&readme);
    if std::env::var_os("UPDATE_README").is_some() {
        std::fs::write(&path, &want).unwrap();
        eprintln!("rewrote the generated blocks of {}", path.display());
        return;
    }
    if want != readme {
        let diff = similar::TextDiff::from_lines(&readme, &want);
        panic!(
            "README.md's generated blocks are stale; run UPDATE_README=1 cargo nextest run \
             -p reveal-exporter --test readme\n{}",
            diff.unified_diff()
                .context_radius(1)
                .header("README.md", "generated")
        );
    }
}

#[test]
fn splice_keeps_the_rest() {
    let r = "a\n<!-- x:begin -->\nold\n<!-- x:end -->\nb\n";
    assert_eq!(
        splice(r, "x", "new\n"),
        "a\n<!-- x:begin -->\nnew\n<!-- x:end -->\nb\n"
    );
}
