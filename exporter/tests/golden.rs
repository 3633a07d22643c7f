//! Golden-output tests: the full exposition of every fixture tree, with every collector on,
//! compared line by line with `tests/golden/<tree>.prom`.
//!
//! A change that renames a metric, changes a unit or alters a value shows up as a diff here.
//! After an intended change, regenerate with
//! `REVEAL_BLESS=1 cargo nextest run -p reveal-exporter --test golden` and review the diff.

mod common;

use common::{
    exposition_samples, fixture, render_tree, render_tree_n, strip_nondeterministic, HOST_ONLY,
};
use reveal_exporter::collectors::COLLECTORS;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Every fixture tree under `tests/fixtures/`; each has a golden file.
const TREES: &[&str] = &[
    "vm-debian",
    "numa-2socket",
    "infiniband",
    "old-kernel",
    "broken",
];

/// What `reveal_exporter_collector_success` must be for each collector on each tree. A new
/// collector needs a column here: the value follows from the tree's README (which files it has
/// and how they are damaged), never from what the code happens to output.
const SUCCESS: &[(&str, [u8; 5])] = &[
    //               vm-debian numa ib  old broken
    ("stat", /*   */ [1, 1, 1, 1, 0]),
    ("interrupts", [1, 1, 0, 1, 1]),
    ("softirqs", /**/ [1, 1, 0, 0, 1]),
    ("cpufreq", /* */ [0, 1, 0, 0, 0]),
    ("cpuidle", /* */ [1, 1, 0, 0, 0]),
    ("rapl", /*   */ [0, 1, 0, 0, 0]),
    ("hwmon", /*  */ [0, 1, 0, 0, 0]),
    ("meminfo", /* */ [1, 1, 1, 1, 0]),
    ("hugepages", [1, 1, 0, 0, 0]),
    ("vmstat", /*  */ [1, 1, 0, 1, 1]),
    ("pressure", /**/ [1, 0, 0, 0, 0]),
    ("cgroups", /* */ [1, 0, 0, 0, 0]),
    ("numa", /*   */ [1, 1, 0, 0, 0]),
    ("diskstats", [1, 1, 0, 1, 0]),
    ("netdev", /*  */ [1, 1, 1, 1, 0]),
    ("netstat", /* */ [1, 1, 0, 1, 0]),
    ("sockstat", /**/ [1, 1, 0, 1, 0]),
    ("infiniband", [0, 0, 1, 0, 0]),
    ("tcpstat", /* */ [1, 1, 0, 0, 0]),
];

fn golden_path(tree: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{tree}.prom"))
}

fn diff(a: &str, b: &str, names: (&str, &str)) -> String {
    let d = similar::TextDiff::from_lines(a, b);
    let shown = d
        .unified_diff()
        .context_radius(2)
        .header(names.0, names.1)
        .to_string();
    let lines: Vec<&str> = shown.lines().collect();
    let cut = lines.len().min(200);
    format!(
        "({} diff lines, first {cut} shown)\n{}",
        lines.len(),
        lines[..cut].join("\n")
    )
}

fn check_golden(tree: &str) {
    let renders = render_tree_n(tree, 3);
    let got = strip_nondeterministic(&renders[0]);
    for (i, later) in renders.iter().enumerate().skip(1) {
        let later = strip_nondeterministic(later);
        assert!(
            later == got,
            "{tree}: scrape {} of unchanged files differs from the first {}",
            i + 1,
            diff(&got, &later, ("scrape 1", "later scrape"))
        );
    }
    let path = golden_path(tree);
    if std::env::var_os("REVEAL_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &got).unwrap();
        eprintln!("wrote {}", path.display());
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; create it with REVEAL_BLESS=1", path.display()));
    if want != got {
        let diff = similar::TextDiff::from_lines(&want, &got);
        let shown = diff
            .unified_diff()
            .context_radius(2)
            .header("golden", "rendered")
            .to_string();
        let lines: Vec<&str> = shown.lines().collect();
        let cut = lines.len().min(200);
        panic!(
            "{tree}: exposition differs from {} ({} diff lines, first {cut} shown).\n\
             If the change is intended, regenerate with REVEAL_BLESS=1 and review the diff.\n{}",
            path.display(),
            lines.len(),
            lines[..cut].join("\n")
        );
    }
}

/// Success values per collector, and no sample of a failed collector's families.
fn check_success(tree_idx: usize) {
    let tree = TREES[tree_idx];
    let text = render_tree(tree);
    let samples = exposition_samples(&text);
    let success: BTreeMap<String, f64> = samples
        .iter()
        .filter(|s| s.name == "reveal_exporter_collector_success")
        .map(|s| {
            (
                s.label("collector").unwrap_or_default().to_string(),
                s.value,
            )
        })
        .collect();
    for e in COLLECTORS.iter().filter(|e| !HOST_ONLY.contains(&e.name)) {
        let Some((_, want)) = SUCCESS.iter().find(|(n, _)| *n == e.name) else {
            panic!(
                "collector {:?} has no expected success values in tests/golden.rs SUCCESS",
                e.name
            );
        };
        let want = f64::from(want[tree_idx]);
        let got = success.get(e.name).copied();
        assert_eq!(
            got,
            Some(want),
            "{tree}: reveal_exporter_collector_success{{collector={:?}}}",
            e.name
        );
        let exposed = e.metrics.iter().any(|d| {
            let name = d.sample_name();
            samples.iter().any(|s| s.name == name)
        });
        if want == 1.0 {
            // A collector that succeeds on a tree must have found something to report there.
            assert!(
                exposed,
                "{tree}: collector {} succeeded but exposed no samples",
                e.name
            );
        } else {
            for d in e.metrics {
                let name = d.sample_name();
                assert!(
                    !samples.iter().any(|s| s.name == name),
                    "{tree}: collector {} failed but its {name} samples are exposed",
                    e.name
                );
            }
        }
    }
    for (name, _) in SUCCESS {
        assert!(
            COLLECTORS.iter().any(|e| e.name == *name),
            "tests/golden.rs SUCCESS names {name:?}, which is not in the collector table"
        );
    }
}

macro_rules! tree_tests {
    ($($golden:ident, $success:ident => $idx:expr;)*) => {$(
        #[test]
        fn $golden() {
            check_golden(TREES[$idx]);
        }
        #[test]
        fn $success() {
            check_success($idx);
        }
    )*};
}

tree_tests! {
    golden_vm_debian, success_vm_debian => 0;
    golden_numa_2socket, success_numa_2socket => 1;
    golden_infiniband, success_infiniband => 2;
    golden_old_kernel, success_old_kernel => 3;
    golden_broken, success_broken => 4;
}

#[test]
fn every_fixture_tree_has_a_readme_and_a_golden_test() {
    let dir = fixture("");
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        // A tree has a proc/ or sys/ directory; other fixtures (NVML recordings) live beside.
        .filter(|e| e.path().join("proc").is_dir() || e.path().join("sys").is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    let mut listed: Vec<String> = TREES.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(
        found, listed,
        "fixture trees on disk vs TREES in tests/golden.rs"
    );
    for t in TREES {
        let readme = std::fs::read_to_string(fixture(t).join("README.md"))
            .unwrap_or_else(|e| panic!("{t}/README.md: {e}"));
        assert!(
            readme.contains("Recorded from a real host") || readme.contains("ritten to"),
            "{t}/README.md must say whether the tree is recorded or written to a format"
        );
    }
}

/// The default device filter hides partitions, so the golden files do not show the 4-field
/// partition lines of old kernels; with the filter off they parse, sectors counted as 512 B.
#[test]
fn old_kernel_partition_lines_parse() {
    use reveal_exporter::collectors::{diskstats, Settings};
    let root = fixture("old-kernel");
    let settings = Settings {
        paths: reveal_exporter::paths::Paths::new(root.join("proc"), root.join("sys")),
        diskstats: diskstats::DiskstatsArgs {
            device_exclude: diskstats::DeviceFilter::new("").unwrap(),
        },
        ..Default::default()
    };
    let runner = reveal_exporter::runner::Runner::new(&["diskstats"], &settings).unwrap();
    let samples = exposition_samples(&runner.render_as(reveal_exporter::runner::Format::Text));
    let get = |name: &str, dev: &str| {
        samples
            .iter()
            .find(|s| s.name == name && s.label("device") == Some(dev))
            .map(|s| s.value)
    };
    // `   3    1 hda1 35486 38030 38030 38030`: reads, sectors read, writes, sectors written.
    assert_eq!(
        get("reveal_storage_reads_completed_total", "hda1"),
        Some(35486.0)
    );
    assert_eq!(
        get("reveal_storage_read_bytes_total", "hda1"),
        Some(38030.0 * 512.0)
    );
    assert_eq!(
        get("reveal_storage_writes_completed_total", "hda1"),
        Some(38030.0)
    );
    // Fields a 4-field line does not have are absent, not zero.
    assert_eq!(get("reveal_storage_read_time_seconds_total", "hda1"), None);
    assert_eq!(
        get("reveal_storage_read_time_seconds_total", "hda"),
        Some(4382.31)
    );
}

/// The command line reaches every collector: the binary, pointed at a tree with
/// `--path.procfs` and `--path.sysfs`, prints exactly the golden exposition.
#[test]
fn binary_with_path_flags_matches_golden() {
    if std::env::var_os("REVEAL_BLESS").is_some() {
        return; // the golden files are being rewritten by the other tests right now
    }
    for tree in ["numa-2socket", "vm-debian"] {
        let root = fixture(tree);
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_reveal-exporter"));
        cmd.arg("--once")
            .arg("--log.level=error")
            .arg(format!("--path.procfs={}", root.join("proc").display()))
            .arg(format!("--path.sysfs={}", root.join("sys").display()))
            .arg("--collector.disable-defaults");
        for e in COLLECTORS.iter().filter(|e| !HOST_ONLY.contains(&e.name)) {
            cmd.arg(format!("--collector.{}", e.name));
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = strip_nondeterministic(&String::from_utf8(out.stdout).unwrap());
        let want = std::fs::read_to_string(golden_path(tree)).unwrap();
        assert!(
            want == got,
            "{tree}: --once differs from the golden {}",
            diff(&want, &got, ("golden", "--once"))
        );
    }
}
