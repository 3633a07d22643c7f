//! The cgroups collector on generated cgroup v2 trees (ranking, folding into `other`, pod
//! UIDs, cgroups vanishing, depth and include), its cost per scrape on 500 cgroups, and a live
//! check on this host's own cgroup v2 hierarchy.
//!
//! The cost table (ignored by default; release build, numbers on stdout):
//!
//!     cargo test --release -p reveal-exporter --test cgroups -- --ignored --nocapture cost

mod common;

use reveal_exporter::collectors::cgroups::{CgroupsArgs, CgroupsCollector, Include};
use reveal_exporter::collectors::{Collector, Settings};
use reveal_exporter::paths::Paths;
use reveal_exporter::scrape::Scrape;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A fresh directory for one test.
fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("reveal-cgroups-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn psi(total: u64) -> String {
    format!(
        "some avg10=0.00 avg60=0.00 avg300=0.00 total={total}\n\
         full avg10=0.00 avg60=0.00 avg300=0.00 total={}\n",
        total / 2
    )
}

/// Writes one v2 cgroup's files, as the kernel would with every controller enabled.
fn write_cgroup(dir: &Path, usage_usec: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let w = |f: &str, s: String| std::fs::write(dir.join(f), s).unwrap();
    w(
        "cpu.stat",
        format!(
            "usage_usec {usage_usec}\nuser_usec {}\nsystem_usec {}\nnice_usec 0\n\
             nr_periods 100\nnr_throttled 7\nthrottled_usec 3000\nnr_bursts 0\nburst_usec 0\n",
            usage_usec / 4 * 3,
            usage_usec - usage_usec / 4 * 3
        ),
    );
    w("memory.current", "1048576\n".into());
    w(
        "memory.events",
        "low 0\nhigh 2\nmax 1\noom 0\noom_kill 1\noom_group_kill 0\n".into(),
    );
    w(
        "io.stat",
        "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n\
         8:16 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n"
            .into(),
    );
    w("cpu.pressure", psi(1000));
    w("memory.pressure", psi(2000));
    w("io.pressure", psi(3000));
    w("cgroup.controllers", "cpu io memory pids\n".into());
}

/// A v2-only host's sysfs (`fs/cgroup` is the unified hierarchy) with these cgroups.
fn v2_tree(tag: &str, cgroups: &[(&str, u64)]) -> PathBuf {
    let sys = tmp(tag);
    let root = sys.join("fs/cgroup");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("cgroup.controllers"), "cpu io memory pids\n").unwrap();
    for (path, usage) in cgroups {
        write_cgroup(&root.join(path), *usage);
    }
    sys
}

/// 500 cgroups as a Kubernetes node has them: 5 slices, 99 pods in each (systemd driver
/// names), every cgroup with every v2 file.
fn tree_of_500(tag: &str) -> PathBuf {
    let mut cgroups = Vec::new();
    for s in 0..5 {
        let slice = format!("kubepods-s{s}.slice");
        cgroups.push((slice.clone(), 1_000_000 * (s + 1)));
        for p in 0..99u64 {
            let uid = format!("0f8b0c1c_5d3e_4a8e_9b62_{:012x}", s * 1000 + p);
            cgroups.push((
                format!("{slice}/kubepods-s{s}-pod{uid}.slice"),
                1000 * (p + 1),
            ));
        }
    }
    let refs: Vec<(&str, u64)> = cgroups.iter().map(|(p, u)| (p.as_str(), *u)).collect();
    v2_tree(tag, &refs)
}

fn collector(sys: &Path, args: CgroupsArgs) -> CgroupsCollector {
    CgroupsCollector::new(&Settings {
        paths: Paths::new("/nonexistent", sys),
        cgroups: args,
        ..Settings::default()
    })
}

fn args(depth: u8, include: &str, top: usize) -> CgroupsArgs {
    CgroupsArgs {
        depth,
        include: Include::new(include).unwrap(),
        top,
    }
}

/// One sample: name, labels, value.
type Sample = (String, Vec<(String, String)>, f64);

/// Every sample of an update.
fn samples(out: &Scrape) -> Vec<Sample> {
    out.families()
        .flat_map(|f| {
            f.samples.iter().map(move |s| {
                let labels = s
                    .labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.clone()))
                    .collect();
                (f.desc.sample_name(), labels, s.value)
            })
        })
        .collect()
}

fn get(out: &Scrape, name: &str, cgroup: &str) -> Option<f64> {
    samples(out)
        .into_iter()
        .find(|(n, l, _)| n == name && l.iter().any(|(k, v)| k == "cgroup" && v == cgroup))
        .map(|s| s.2)
}

fn cgroup_labels(out: &Scrape, name: &str) -> Vec<String> {
    samples(out)
        .into_iter()
        .filter(|(n, _, _)| n == name)
        .filter_map(|(_, l, _)| l.into_iter().find(|(k, _)| k == "cgroup").map(|(_, v)| v))
        .collect()
}

const USAGE: &str = "reveal_cpu_cgroup_usage_seconds_total";

fn set_usage(sys: &Path, cgroup: &str, usage_usec: u64) {
    write_cgroup(&sys.join("fs/cgroup").join(cgroup), usage_usec);
}

#[test]
fn every_family_on_a_v2_host() {
    let sys = v2_tree("families", &[("system.slice", 5_000_000)]);
    let mut out = Scrape::new();
    collector(&sys, CgroupsArgs::default())
        .update(&mut out)
        .unwrap();
    let all = samples(&out);
    let one = |name: &str, extra: Option<(&str, &str)>| {
        all.iter()
            .find(|(n, l, _)| {
                n == name && extra.is_none_or(|(k, v)| l.iter().any(|(a, b)| a == k && b == v))
            })
            .map(|s| s.2)
            .unwrap_or_else(|| panic!("{name} {extra:?} missing: {all:?}"))
    };
    assert_eq!(one(USAGE, None), 5.0);
    assert_eq!(
        one(
            "reveal_cpu_cgroup_time_seconds_total",
            Some(("mode", "user"))
        ),
        3.75
    );
    assert_eq!(one("reveal_cpu_cgroup_throttled_periods_total", None), 7.0);
    assert_eq!(
        one("reveal_cpu_cgroup_throttled_seconds_total", None),
        0.003
    );
    assert_eq!(one("reveal_memory_cgroup_usage_bytes", None), 1048576.0);
    assert_eq!(
        one(
            "reveal_memory_cgroup_events_total",
            Some(("event", "oom_kill"))
        ),
        1.0
    );
    assert_eq!(one("reveal_storage_cgroup_read_bytes_total", None), 8192.0);
    assert_eq!(
        one("reveal_storage_cgroup_written_bytes_total", None),
        8192.0
    );
    assert_eq!(one("reveal_storage_cgroup_reads_total", None), 2.0);
    assert_eq!(one("reveal_storage_cgroup_writes_total", None), 2.0);
    assert_eq!(
        one(
            "reveal_memory_cgroup_pressure_stalled_seconds_total",
            Some(("kind", "full"))
        ),
        0.001
    );
    assert_eq!(
        one(
            "reveal_storage_cgroup_pressure_stalled_seconds_total",
            Some(("kind", "some"))
        ),
        0.003
    );
    assert_eq!(one("reveal_cpu_cgroups_folded", None), 0.0);
    // 1 usage + 2 modes + 2 throttling + 2 cpu PSI + 1 memory + 3 events + 2 memory PSI
    // + 4 I/O + 2 I/O PSI, and the folded gauge.
    assert_eq!(all.len(), 19 + 1, "{all:?}");
    let _ = std::fs::remove_dir_all(&sys);
}

#[test]
fn top_n_by_cpu_since_the_last_scrape_and_the_rest_in_other() {
    let sys = v2_tree(
        "rank",
        &[
            ("a", 9_000_000),
            ("b", 5_000_000),
            ("c", 1_000_000),
            ("d", 0),
        ],
    );
    let mut c = collector(&sys, args(2, "", 2));
    let mut out = Scrape::new();
    // First scrape: by total usage.
    c.update(&mut out).unwrap();
    assert_eq!(cgroup_labels(&out, USAGE), ["a", "b", "other"]);
    assert_eq!(get(&out, USAGE, "other"), Some(1.0));
    assert_eq!(
        samples(&out)
            .iter()
            .find(|s| s.0 == "reveal_cpu_cgroups_folded")
            .map(|s| s.2),
        Some(2.0)
    );
    // Memory of other is this scrape's sum of c and d.
    assert_eq!(
        get(&out, "reveal_memory_cgroup_usage_bytes", "other"),
        Some(2.0 * 1048576.0)
    );
    // Since then d used 3 s and c 0.5 s, a and b nothing: d and c are the top 2.
    set_usage(&sys, "d", 3_000_000);
    set_usage(&sys, "c", 1_500_000);
    out.clear();
    c.update(&mut out).unwrap();
    assert_eq!(cgroup_labels(&out, USAGE), ["c", "d", "other"]);
    // a and b, folded now, used nothing since the last scrape, and what c and d used went
    // to their own series: other stays at 1 s (a counter never goes back).
    assert_eq!(get(&out, USAGE, "other"), Some(1.0));
    assert_eq!(get(&out, USAGE, "d"), Some(3.0));
    set_usage(&sys, "a", 10_000_000);
    out.clear();
    c.update(&mut out).unwrap();
    // a used 1 s since the last scrape, the others nothing: a, then of the ties the one
    // exposed before with more in all (d over c; b was not exposed).
    assert_eq!(cgroup_labels(&out, USAGE), ["a", "d", "other"]);
    assert_eq!(get(&out, USAGE, "other"), Some(1.0));
    let _ = std::fs::remove_dir_all(&sys);
}

#[test]
fn other_counts_nested_folded_cgroups_once() {
    let sys = v2_tree(
        "nested",
        &[("big", 10_000_000), ("p", 2_000_000), ("p/q", 1_500_000)],
    );
    let mut out = Scrape::new();
    collector(&sys, args(2, "", 1)).update(&mut out).unwrap();
    assert_eq!(cgroup_labels(&out, USAGE), ["big", "other"]);
    // p's 2 s include p/q's 1.5 s: other is 2 s, not 3.5 s; both are folded.
    assert_eq!(get(&out, USAGE, "other"), Some(2.0));
    assert!(samples(&out)
        .iter()
        .any(|s| s.0 == "reveal_cpu_cgroups_folded" && s.2 == 2.0));
    let _ = std::fs::remove_dir_all(&sys);
}

#[test]
fn pod_uids_depth_and_include() {
    let uid = "0f8b0c1c-5d3e-4a8e-9b62-3f5f0e8b7c21";
    let pod = format!(
        "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice",
        uid.replace('-', "_")
    );
    let sys = v2_tree(
        "pods",
        &[
            ("kubepods.slice", 3),
            ("kubepods.slice/kubepods-burstable.slice", 2),
            (pod.as_str(), 1),
            ("system.slice", 1),
            ("system.slice/ssh.service", 1),
        ],
    );
    // Default depth 2: the pod (level 3) is not read.
    let mut out = Scrape::new();
    collector(&sys, CgroupsArgs::default())
        .update(&mut out)
        .unwrap();
    let mut got = cgroup_labels(&out, USAGE);
    got.sort();
    assert_eq!(
        got,
        [
            "kubepods.slice",
            "kubepods.slice/kubepods-burstable.slice",
            "system.slice",
            "system.slice/ssh.service"
        ]
    );
    // Depth 3 and a pattern of pod directories only.
    let mut out = Scrape::new();
    collector(
        &sys,
        args(3, r"kubepods.*(-pod[0-9a-f_]+\.slice|/pod[0-9a-f-]+)", 50),
    )
    .update(&mut out)
    .unwrap();
    let all = samples(&out);
    let usage: Vec<_> = all.iter().filter(|s| s.0 == USAGE).collect();
    assert_eq!(usage.len(), 1, "{usage:?}");
    assert_eq!(
        usage[0].1,
        [
            ("cgroup".to_string(), pod.clone()),
            ("pod_uid".to_string(), uid.to_string())
        ]
    );
    let _ = std::fs::remove_dir_all(&sys);
}

#[test]
fn vanished_cgroups_leave_no_series_and_missing_files_are_skipped() {
    let sys = v2_tree("vanish", &[("a", 1_000_000), ("b", 2_000_000)]);
    let root = sys.join("fs/cgroup");
    let mut c = collector(&sys, CgroupsArgs::default());
    let mut out = Scrape::new();
    c.update(&mut out).unwrap();
    assert_eq!(cgroup_labels(&out, USAGE), ["a", "b"]);
    // b goes away as a cgroup does (its files first, as they vanish with it); a loses its
    // memory controller and gets a half-written io.stat and a junk memory.events.
    std::fs::remove_file(root.join("b/cpu.stat")).unwrap();
    std::fs::remove_file(root.join("a/memory.current")).unwrap();
    std::fs::write(root.join("a/io.stat"), "8:0 rbytes=1 wbytes=2 rio").unwrap();
    std::fs::write(root.join("a/memory.events"), "\0\0junk").unwrap();
    out.clear();
    c.update(&mut out).unwrap();
    assert_eq!(cgroup_labels(&out, USAGE), ["a"]);
    assert!(cgroup_labels(&out, "reveal_memory_cgroup_usage_bytes").is_empty());
    assert!(cgroup_labels(&out, "reveal_storage_cgroup_read_bytes_total").is_empty());
    assert!(cgroup_labels(&out, "reveal_memory_cgroup_events_total").is_empty());
    assert_eq!(
        get(&out, "reveal_cpu_cgroup_throttled_periods_total", "a"),
        Some(7.0)
    );
    // Gone entirely: nothing of it on the next scrape either.
    std::fs::remove_dir_all(root.join("b")).unwrap();
    out.clear();
    c.update(&mut out).unwrap();
    assert!(!samples(&out).iter().any(|s| s.1.iter().any(|l| l.1 == "b")));
    let _ = std::fs::remove_dir_all(&sys);
}

/// A hierarchy of thousands: the series stay bounded by --collector.cgroups.top.
#[test]
fn thousands_of_cgroups_stay_bounded() {
    let sys = tree_of_500("bounded");
    let mut out = Scrape::new();
    let mut c = collector(&sys, args(2, "", 50));
    c.update(&mut out).unwrap();
    let labels = cgroup_labels(&out, USAGE);
    assert_eq!(labels.len(), 51, "50 cgroups and other");
    assert!(samples(&out)
        .iter()
        .any(|s| s.0 == "reveal_cpu_cgroups_folded" && s.2 == 450.0));
    // Every exposed pod carries its UID.
    let pods = samples(&out)
        .into_iter()
        .filter(|s| s.0 == USAGE)
        .filter(|s| s.1[0].1.contains("-pod"))
        .filter(|s| s.1[1].1.len() == 36)
        .count();
    assert_eq!(pods, 45, "the 5 slices and the 45 busiest pods");
    let _ = std::fs::remove_dir_all(&sys);
}

/// Time per update and series on 500 generated cgroups, for the default-enabled decision
/// (docs/cgroups.md). Run with --release; see the module comment for the command.
#[test]
#[ignore = "a measurement, not a check: run by hand with --release (command in the module comment)"]
fn cost() {
    let sys = tree_of_500("cost");
    println!("| cgroups read | top | series | min ms/scrape | median ms/scrape |");
    println!("| --- | --- | --- | --- | --- |");
    for top in [50, 500] {
        let mut c = collector(&sys, args(2, "", top));
        let mut out = Scrape::new();
        let mut times = Vec::new();
        for _ in 0..300 {
            out.clear();
            let t = Instant::now();
            c.update(&mut out).unwrap();
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "| 500 (tmpfs) | {top} | {} | {:.2} | {:.2} |",
            out.sample_count(),
            times[0],
            times[times.len() / 2]
        );
    }
    let _ = std::fs::remove_dir_all(&sys);
    // The same on the kernel's own cgroup files: 500 empty cgroups made in this host's v2
    // hierarchy (as root), read through the default paths, then removed.
    let Some(v2) = host_v2_root().filter(|_| common::is_root()) else {
        println!("(not root or no cgroup v2 here: no row for the kernel's cgroupfs)");
        return;
    };
    let parent = format!("reveal-cost-{}", std::process::id());
    let mut dirs = vec![v2.join(&parent)];
    std::fs::create_dir(&dirs[0]).unwrap();
    for i in 0..499 {
        let d = dirs[0].join(format!("c{i}"));
        std::fs::create_dir(&d).unwrap();
        dirs.push(d);
    }
    dirs.reverse(); // children first when removed
    let _cleanup = Removed(dirs);
    let real = Settings {
        cgroups: args(2, &format!("{parent}(/.*)?"), 50),
        ..Settings::default()
    };
    let mut c = CgroupsCollector::new(&real);
    let mut out = Scrape::new();
    let mut times = Vec::new();
    for _ in 0..300 {
        out.clear();
        let t = Instant::now();
        c.update(&mut out).unwrap();
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "| 500 (this host's cgroupfs, {}) | 50 | {} | {:.2} | {:.2} |",
        v2.display(),
        out.sample_count(),
        times[0],
        times[times.len() / 2]
    );
}

/// The v2 hierarchy of this host, where it is mounted.
fn host_v2_root() -> Option<PathBuf> {
    let sys = Paths::default().sys("fs/cgroup");
    [sys.clone(), sys.join("unified")]
        .into_iter()
        .find(|d| d.join("cgroup.controllers").is_file())
}

/// Cgroup directories removed when dropped, also when the test fails half-way: rmdir may
/// see a cgroup busy for a moment after its last task exited.
struct Removed(Vec<PathBuf>);

impl Drop for Removed {
    fn drop(&mut self) {
        for d in &self.0 {
            for _ in 0..50 {
                if !d.exists() || std::fs::remove_dir(d).is_ok() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
    }
}

/// The real binary on this host: a CPU hog in one of two new cgroups makes that cgroup's
/// usage grow between two scrapes and not the other's. Needs root and cgroup v2.
#[test]
fn live_hog_grows_only_its_own_cgroup() {
    let skip = |why: &str| eprintln!("\n!!!!! SKIPPED live cgroups test: {why} !!!!!\n");
    if !common::is_root() {
        return skip("not root (cannot create cgroups)");
    }
    let Some(v2) = host_v2_root() else {
        return skip("no cgroup v2 hierarchy on this host");
    };
    let tag = format!("reveal-live-{}", std::process::id());
    let (hog, idle) = (
        v2.join(format!("{tag}-hog")),
        v2.join(format!("{tag}-idle")),
    );
    let _cleanup = Removed(vec![hog.clone(), idle.clone()]);
    for d in [&hog, &idle] {
        if let Err(e) = std::fs::create_dir(d) {
            return skip(&format!("cannot create {}: {e}", d.display()));
        }
    }
    let scrape = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_reveal-exporter"))
            .args([
                "--once",
                "--log.level=error",
                "--collector.disable-defaults",
                "--collector.cgroups",
                &format!("--collector.cgroups.include={tag}-.*"),
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let usage = |which: &str| -> f64 {
            common::exposition_samples(&text)
                .iter()
                .find(|s| {
                    s.name == USAGE && s.label("cgroup") == Some(format!("{tag}-{which}").as_str())
                })
                .map(|s| s.value)
                .unwrap_or_else(|| panic!("no usage of {which}:\n{text}"))
        };
        (usage("hog"), usage("idle"))
    };
    // The hog puts itself into its cgroup, then spins for 1.5 s.
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "echo $$ > {}/cgroup.procs && exec timeout 1.5 sh -c 'while :; do :; done'",
            hog.display()
        ))
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let first = scrape();
    std::thread::sleep(std::time::Duration::from_millis(700));
    let second = scrape();
    let _ = child.wait();
    drop(_cleanup);
    assert!(
        !hog.exists() && !idle.exists(),
        "the test's cgroups were not removed"
    );
    eprintln!(
        "hog {:.3} s -> {:.3} s, idle {:.3} s -> {:.3} s",
        first.0, second.0, first.1, second.1
    );
    assert!(second.0 - first.0 > 0.2, "hog: {first:?} -> {second:?}");
    assert_eq!(second.1, first.1, "idle cgroup's usage changed");
    assert_eq!(second.1, 0.0);
}
