//! The dependency tree against `deny.toml`: licenses (permissive only), duplicate versions
//! (each one named, with the dependency that needs it), sources (crates.io only). Advisories
//! are not checked here: the RustSec database is fetched from GitHub, which CI cannot reach.

use std::path::Path;
use std::process::Command;

#[test]
fn dependencies_pass_cargo_deny() {
    let found = Command::new("cargo-deny").arg("--version").output().is_ok();
    if !found {
        let msg = "cargo-deny not found (`cargo install --locked cargo-deny@0.20.2`; .ci/run installs it)";
        assert!(!reveal_e2e::in_ci(), "{msg}");
        eprintln!("\n!!!!! SKIPPED: {msg} !!!!!\n");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("cargo-deny")
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .args(["check", "licenses", "bans", "sources"])
        .output()
        .expect("running cargo-deny");
    assert!(
        out.status.success(),
        "cargo deny check failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
