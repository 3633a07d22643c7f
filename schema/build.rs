//! Build facts for both binaries' `*_build_info` and `--version` (`reveal_schema::build`):
//! the git revision and the compiler's version.
//!
//! A build from a tarball (no `.git`, or no `git`) gets the revision "unknown". A release
//! build inside a repository takes its commit, and the script runs again only when `HEAD` or
//! the branch it points to moves, not on every build. Any other profile (the tests', `cargo
//! build`'s) says "debug" and never reads git: this crate is below every other, and a revision
//! that moved with each commit rebuilt the whole workspace and its tests on every commit.
//! `REVEAL_REVISION` set at build time wins in every profile.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=REVEAL_REVISION");
    let given = std::env::var("REVEAL_REVISION")
        .ok()
        .filter(|s| !s.is_empty());
    if std::env::var("PROFILE").as_deref() != Ok("release") {
        println!(
            "cargo:rustc-env=REVEAL_REVISION={}",
            given.as_deref().unwrap_or("debug")
        );
        println!("cargo:rustc-env=REVEAL_BRANCH=");
        println!("cargo:rustc-env=REVEAL_RUSTVERSION={}", rustversion());
        return;
    }
    // Only this repository's commit: a tarball unpacked inside another git checkout must not
    // take that checkout's (build.rs is tracked here, not there).
    let ours = git(&["ls-files", "--error-unmatch", "build.rs"]).is_some();
    let revision = given
        .or_else(|| {
            ours.then(|| git(&["rev-parse", "--short=12", "HEAD"]))
                .flatten()
        })
        .unwrap_or_else(|| "unknown".to_string());
    if !ours {
        println!("cargo:rustc-env=REVEAL_BRANCH=");
        println!("cargo:rustc-env=REVEAL_REVISION={revision}");
        println!("cargo:rustc-env=REVEAL_RUSTVERSION={}", rustversion());
        return;
    }
    let branch = git(&["symbolic-ref", "--short", "-q", "HEAD"]).unwrap_or_default();
    // `--git-path` resolves worktrees and the common directory; files that do not exist
    // (a packed ref) are left out, and `packed-refs` is watched for them.
    for file in ["HEAD".to_string(), "packed-refs".to_string()]
        .into_iter()
        .chain(git(&["symbolic-ref", "-q", "HEAD"]))
    {
        if let Some(p) = git(&["rev-parse", "--git-path", &file]) {
            if std::path::Path::new(&p).exists() {
                println!("cargo:rerun-if-changed={p}");
            }
        }
    }
    println!("cargo:rustc-env=REVEAL_REVISION={revision}");
    println!("cargo:rustc-env=REVEAL_BRANCH={branch}");
    println!("cargo:rustc-env=REVEAL_RUSTVERSION={}", rustversion());
}

/// The compiler's version: "rustc 1.86.0 (05f9846f8 2025-03-31)" gives "1.86.0".
fn rustversion() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    Command::new(rustc)
        .arg("-V")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.split_whitespace().nth(1).map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string())
}
