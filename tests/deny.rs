//! The dependency tree against `deny.toml`: licenses (permissive only), duplicate versions
//! (each one named, with the dependency that needs it), sources (crates.io only), and the
//! RustSec advisories (vulnerable, unsound or unmaintained crates) where the advisory database
//! can be had: fetched from GitHub, or a copy already in `~/.cargo/advisory-dbs`.

use std::path::Path;
use std::process::{Command, Output};

/// `cargo-deny`, or `None` (after failing in CI, or saying loudly elsewhere) where it is not
/// installed.
fn cargo_deny() -> Option<Command> {
    if Command::new("cargo-deny")
        .arg("--version")
        .output()
        .is_err()
    {
        let msg = "cargo-deny not found (`cargo install --locked cargo-deny@0.20.2`; .ci/run installs it)";
        assert!(!reveal_e2e::in_ci(), "{msg}");
        eprintln!("\n!!!!! SKIPPED: {msg} !!!!!\n");
        return None;
    }
    let mut c = Command::new("cargo-deny");
    c.arg("--manifest-path")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"));
    Some(c)
}

fn run(mut c: Command, args: &[&str]) -> Output {
    c.args(args).output().expect("running cargo-deny")
}

#[test]
fn dependencies_pass_cargo_deny() {
    let Some(c) = cargo_deny() else { return };
    let out = run(c, &["check", "licenses", "bans", "sources"]);
    assert!(
        out.status.success(),
        "cargo deny check failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn dependencies_have_no_advisories() {
    let Some(c) = cargo_deny() else { return };
    let out = run(c, &["check", "advisories"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.success() {
        return;
    }
    // cargo-deny refuses to check without its database; a fetch that failed is retried against
    // a local copy, if there is one (`--offline` reads it without fetching).
    assert!(
        err.contains("failed to fetch advisory database"),
        "cargo deny check advisories failed:\n{err}"
    );
    let Some(c) = cargo_deny() else { return };
    let offline = run(c, &["--offline", "check", "advisories"]);
    let offline_err = String::from_utf8_lossy(&offline.stderr);
    if offline.status.success() {
        eprintln!(
            "advisories checked against the local copy of the RustSec database (not fetched: {})",
            err.lines().next().unwrap_or_default()
        );
        return;
    }
    assert!(
        offline_err.contains("failed to get HEAD timestamp")
            || offline_err.contains("failed to open advisory database"),
        "cargo deny --offline check advisories failed:\n{offline_err}"
    );
    eprintln!(
        "\n!!!!! SKIPPED: advisories NOT checked: the RustSec database could not be fetched and \
         there is no local copy ({}) !!!!!\n",
        err.lines().next().unwrap_or_default()
    );
}
