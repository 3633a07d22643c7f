//! The built `xtask` binary answers --help and refuses what it does not know, without running
//! anything. (Also makes `cargo nextest run --workspace` build it, for tests/docs.rs, which
//! checks the `cargo xtask …` commands the documentation shows against its help.)

use std::process::Command;

fn xtask(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn help_prints_usage_and_runs_nothing() {
    for args in [
        &["--help"][..],
        &["-h"],
        &["check", "--help"],
        &["regenerate", "-h"],
    ] {
        let (code, out, err) = xtask(args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert!(out.starts_with("usage: cargo xtask"), "{args:?}: {out}");
        assert!(
            !err.contains("xtask: cargo"),
            "{args:?} ran something: {err}"
        );
    }
}

#[test]
fn unknown_tasks_and_options_exit_2_with_the_usage() {
    for args in [&[][..], &["lint"], &["check", "--fix"], &["fmt", "--check"]] {
        let (code, out, err) = xtask(args);
        assert_eq!(code, Some(2), "{args:?}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert!(err.contains("usage: cargo xtask"), "{args:?}: {err}");
    }
}
