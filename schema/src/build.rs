//! What both binaries were built from, for `reveal_exporter_build_info`,
//! `reveal_analyzer_build_info` and `--version` (set by the crate's `build.rs`).

/// The workspace version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The git commit (12 hex digits) of a release build, "unknown" for one outside a
/// repository, "debug" for a build of any other profile (the tests'); the environment
/// variable `REVEAL_REVISION` at build time overrides it (a build from a tarball that knows
/// its commit).
pub const REVISION: &str = env!("REVEAL_REVISION");
/// The git branch built from; empty when unknown or on a detached HEAD.
pub const BRANCH: &str = env!("REVEAL_BRANCH");
/// The compiler's version (`rustc -V`), as `1.86.0`.
pub const RUSTVERSION: &str = env!("REVEAL_RUSTVERSION");

/// `--version`'s text after the program name: `0.1.0 (revision 76aebfa0c1d2, rustc 1.86.0)`.
pub fn long_version() -> String {
    format!("{VERSION} (revision {REVISION}, rustc {RUSTVERSION})")
}

/// The labels of `*_build_info`, in Prometheus' convention (`version`, `revision`, `branch`,
/// and `rustversion` where Go programs have `goversion`).
pub fn info_labels() -> [(&'static str, &'static str); 4] {
    [
        ("version", VERSION),
        ("revision", REVISION),
        ("branch", BRANCH),
        ("rustversion", RUSTVERSION),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_are_set() {
        assert!(!REVISION.is_empty() && !RUSTVERSION.is_empty());
        assert!(RUSTVERSION == "unknown" || RUSTVERSION.starts_with("1."));
        assert!(long_version().starts_with(VERSION));
    }
}
