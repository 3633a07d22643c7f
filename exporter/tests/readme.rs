//! The documentation's flag reference (docs/exporter.md) and metric list (docs/metrics.md) are
//! generated from the code: this test fails when the blocks between the markers differ from
//! what the binary prints. `REVEAL_BLESS=1 cargo nextest run -p reveal-exporter --test readme`
//! rewrites them.

use std::path::PathBuf;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_reveal-exporter");

fn doc_path(page: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../docs")
        .join(page)
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
        .unwrap_or_else(|| panic!("the page has no {begin:?} marker"));
    let e = readme[b..]
        .find(&end)
        .unwrap_or_else(|| panic!("the page has no {end:?} marker"))
        + b;
    format!("{}{begin}{body}{}", &readme[..b], &readme[e..])
}

/// Each generated block: the page it is in, its marker name, and what the binary prints.
fn blocks() -> Vec<(&'static str, &'static str, String)> {
    vec![
        (
            "exporter.md",
            "flags",
            format!("```text\n{}```\n", run("--help")),
        ),
        ("metrics.md", "metrics", run("--print-metrics")),
    ]
}

#[test]
fn readme_blocks_match_the_code() {
    let mut stale = Vec::new();
    for (page, name, body) in blocks() {
        let path = doc_path(page);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let want = splice(&text, name, &body);
        if std::env::var_os("REVEAL_BLESS").is_some() {
            std::fs::write(&path, &want).unwrap();
            eprintln!("rewrote the {name} block of {}", path.display());
            continue;
        }
        if want != text {
            let diff = similar::TextDiff::from_lines(&text, &want);
            stale.push(
                diff.unified_diff()
                    .context_radius(1)
                    .header(&format!("docs/{page}"), "generated")
                    .to_string(),
            );
        }
    }
    assert!(
        stale.is_empty(),
        "the documentation's generated blocks are stale; run REVEAL_BLESS=1 cargo nextest run \
         -p reveal-exporter --test readme\n{}",
        stale.join("\n")
    );
}

#[test]
fn splice_keeps_the_rest() {
    let r = "a\n<!-- x:begin -->\nold\n<!-- x:end -->\nb\n";
    assert_eq!(
        splice(r, "x", "new\n"),
        "a\n<!-- x:begin -->\nnew\n<!-- x:end -->\nb\n"
    );
}
