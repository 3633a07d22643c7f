//! Pure parsers of the cgroup files the `cgroups` collector reads, and of the labels it
//! derives from a cgroup's path. Every parser skips what it cannot read (a half-written line,
//! a key of a newer kernel) and keeps the rest; `None` when nothing usable is left.
//!
//! Formats: <https://docs.kernel.org/admin-guide/cgroup-v2.html> (v2: flat-keyed `cpu.stat`
//! and `memory.events`, nested-keyed `io.stat`, single values, and PSI's `*.pressure`, parsed
//! by [`super::pressure::parse_pressure`]) and
//! <https://docs.kernel.org/admin-guide/cgroup-v1/blkio-controller.html> (v1's
//! `blkio.throttle.io_service_bytes`).

/// The fields of a v2 `cpu.stat` the collector exports, in microseconds or counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuStat {
    pub usage_usec: Option<u64>,
    pub user_usec: Option<u64>,
    pub system_usec: Option<u64>,
    pub nr_throttled: Option<u64>,
    pub throttled_usec: Option<u64>,
}

/// `key value` lines; a line without exactly two fields or with a value that is not an
/// unsigned integer is skipped.
fn flat_keyed(text: &str) -> impl Iterator<Item = (&str, u64)> {
    text.lines().filter_map(|line| {
        let mut it = line.split_ascii_whitespace();
        let (k, v) = (it.next()?, it.next()?);
        if it.next().is_some() {
            return None;
        }
        Some((k, v.parse().ok()?))
    })
}

/// Parses a v2 `cpu.stat`; `None` when it has none of the exported keys.
pub fn parse_cpu_stat(text: &str) -> Option<CpuStat> {
    let mut s = CpuStat::default();
    for (k, v) in flat_keyed(text) {
        let slot = match k {
            "usage_usec" => &mut s.usage_usec,
            "user_usec" => &mut s.user_usec,
            "system_usec" => &mut s.system_usec,
            "nr_throttled" => &mut s.nr_throttled,
            "throttled_usec" => &mut s.throttled_usec,
            _ => continue,
        };
        slot.get_or_insert(v);
    }
    (s != CpuStat::default()).then_some(s)
}

/// The `memory.events` counters the collector exports, in this order.
pub const MEMORY_EVENTS: [&str; 3] = ["high", "max", "oom_kill"];

/// Parses a v2 `memory.events` into the counts of [`MEMORY_EVENTS`].
pub fn parse_memory_events(text: &str) -> Option<[Option<u64>; 3]> {
    let mut out = [None; 3];
    for (k, v) in flat_keyed(text) {
        if let Some(i) = MEMORY_EVENTS.iter().position(|e| *e == k) {
            out[i].get_or_insert(v);
        }
    }
    out.iter().any(Option::is_some).then_some(out)
}

/// Bytes and operations summed over a cgroup's devices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoStat {
    pub rbytes: u64,
    pub wbytes: u64,
    /// `None` from v1's `io_service_bytes`, which counts bytes only.
    pub rios: Option<u64>,
    pub wios: Option<u64>,
}

/// Whether `s` is a `MAJOR:MINOR` device number.
fn is_devnum(s: &str) -> bool {
    let Some((a, b)) = s.split_once(':') else {
        return false;
    };
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
    digits(a) && digits(b)
}

/// Parses a v2 `io.stat` (`8:0 rbytes=N wbytes=N rios=N wios=N dbytes=N dios=N` per device),
/// summing over devices; a device line that does not parse is skipped whole. `None` without
/// any device line (no I/O yet, or an empty file).
pub fn parse_io_stat(text: &str) -> Option<IoStat> {
    let mut sum = IoStat {
        rios: Some(0),
        wios: Some(0),
        ..IoStat::default()
    };
    let mut seen = false;
    'lines: for line in text.lines() {
        let mut it = line.split_ascii_whitespace();
        if !it.next().is_some_and(is_devnum) {
            continue;
        }
        let mut got = [None::<u64>; 4];
        for field in it {
            let Some((k, v)) = field.split_once('=') else {
                continue 'lines;
            };
            let i = match k {
                "rbytes" => 0,
                "wbytes" => 1,
                "rios" => 2,
                "wios" => 3,
                _ => continue,
            };
            match v.parse() {
                Ok(v) => got[i] = Some(v),
                Err(_) => continue 'lines,
            }
        }
        let [Some(rb), Some(wb), Some(ri), Some(wi)] = got else {
            continue;
        };
        sum.rbytes = sum.rbytes.saturating_add(rb);
        sum.wbytes = sum.wbytes.saturating_add(wb);
        sum.rios = sum.rios.map(|x| x.saturating_add(ri));
        sum.wios = sum.wios.map(|x| x.saturating_add(wi));
        seen = true;
    }
    seen.then_some(sum)
}

/// Parses v1's `blkio.throttle.io_service_bytes` (`8:0 Read N`, `8:0 Write N`, ... per
/// device, then `Total N`), summing Read and Write over devices. A cgroup that has done no
/// I/O has only `Total 0`: that is zero bytes, not an unreadable file.
pub fn parse_blkio_service_bytes(text: &str) -> Option<IoStat> {
    let mut sum = IoStat::default();
    let mut seen = false;
    for line in text.lines() {
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        match f.as_slice() {
            [dev, op, n] if is_devnum(dev) => {
                let Ok(n) = n.parse::<u64>() else { continue };
                match *op {
                    "Read" => sum.rbytes = sum.rbytes.saturating_add(n),
                    "Write" => sum.wbytes = sum.wbytes.saturating_add(n),
                    _ => {}
                }
                seen = true;
            }
            ["Total", n] if n.parse::<u64>().is_ok() => seen = true,
            _ => {}
        }
    }
    seen.then_some(sum)
}

/// A file holding one unsigned integer (`memory.current`, `cpuacct.usage`,
/// `memory.usage_in_bytes`).
pub fn parse_single(text: &str) -> Option<u64> {
    let mut it = text.split_ascii_whitespace();
    let v = it.next()?.parse().ok()?;
    it.next().is_none().then_some(v)
}

/// Whether `s` looks like a Kubernetes pod UID: a UUID (36 characters with dashes), or the
/// 32 hexadecimal digits of a static pod's hash.
fn is_pod_uid(s: &str) -> bool {
    (s.len() == 36 || s.len() == 32) && s.bytes().all(|c| c.is_ascii_hexdigit() || c == b'-')
}

/// The Kubernetes pod UID in a cgroup path, from the kubelet's directory names and nothing
/// else (no API call): `kubepods-burstable-pod<UID>.slice` (systemd driver, with the UID's
/// dashes written as underscores) or `pod<UID>` below a `kubepods*` directory (cgroupfs
/// driver). The path's container directories below the pod's carry the same UID.
pub fn pod_uid(path: &str) -> Option<String> {
    let mut under_kubepods = false;
    for part in path.split('/') {
        if part.starts_with("kubepods") {
            under_kubepods = true;
            let stem = part.strip_suffix(".slice").unwrap_or(part);
            if let Some((_, uid)) = stem.rsplit_once("-pod") {
                let uid = uid.replace('_', "-");
                if is_pod_uid(&uid) {
                    return Some(uid);
                }
            }
            continue;
        }
        if under_kubepods {
            if let Some(uid) = part.strip_prefix("pod") {
                let uid = uid.strip_suffix(".slice").unwrap_or(uid).replace('_', "-");
                if is_pod_uid(&uid) {
                    return Some(uid);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fixture(rel: &str) -> String {
        let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/vm-debian/sys/fs/cgroup")
            .join(rel);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// This VM's files, recorded by record_cgroups.sh (values checked by hand against the
    /// recording).
    #[test]
    fn recorded_files_of_this_vm() {
        let root = parse_cpu_stat(&fixture("unified/cpu.stat")).unwrap();
        assert_eq!(root.usage_usec, Some(35882644616));
        assert_eq!(root.user_usec, Some(31401305552));
        assert_eq!(root.system_usec, Some(4481339063));
        // No cpu controller on the v2 side of this hybrid host: no throttling fields.
        assert_eq!((root.nr_throttled, root.throttled_usec), (None, None));
        let a = parse_cpu_stat(&fixture("unified/reveal-fixture-a/cpu.stat")).unwrap();
        assert_eq!((a.usage_usec, a.system_usec), (Some(253788), Some(0)));
        let psi = super::super::pressure::parse_pressure(&fixture(
            "unified/reveal-fixture-a/io.pressure",
        ))
        .unwrap();
        assert_eq!((psi.some, psi.full), (Some(2019), Some(2019)));
        // v1, hand-checked: cpuacct.usage in ns is the v2 usage_usec of the same cgroup
        // times 1000 (the same tasks, the same time).
        let ns = parse_single(&fixture("cpuacct/reveal-fixture-a/cpuacct.usage")).unwrap();
        assert_eq!(ns, 253788529);
        assert_eq!(ns / 1000, a.usage_usec.unwrap());
        assert_eq!(
            parse_single(&fixture("memory/reveal-fixture-a/memory.usage_in_bytes")),
            Some(802816)
        );
        assert_eq!(
            parse_single(&fixture("memory/memory.usage_in_bytes")),
            Some(2316996608)
        );
        // No I/O through the throttling layer on this VM: only `Total 0`.
        assert_eq!(
            parse_blkio_service_bytes(&fixture(
                "blkio/reveal-fixture-a/blkio.throttle.io_service_bytes"
            )),
            Some(IoStat::default())
        );
    }

    /// Written to the kernel's documented formats (cgroup-v2.rst, blkio-controller.rst).
    #[test]
    fn documented_formats() {
        let cpu = "usage_usec 1000\nuser_usec 600\nsystem_usec 400\nnice_usec 0\n\
                   core_sched.force_idle_usec 0\nnr_periods 10\nnr_throttled 3\n\
                   throttled_usec 2500\nnr_bursts 0\nburst_usec 0\n";
        assert_eq!(
            parse_cpu_stat(cpu),
            Some(CpuStat {
                usage_usec: Some(1000),
                user_usec: Some(600),
                system_usec: Some(400),
                nr_throttled: Some(3),
                throttled_usec: Some(2500),
            })
        );
        let ev = "low 0\nhigh 12\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n";
        assert_eq!(parse_memory_events(ev), Some([Some(12), Some(3), Some(1)]));
        let io = "8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0\n\
                  8:0 rbytes=90430464 wbytes=299008000 rios=8950 wios=1252 dbytes=50331648 dios=3021\n";
        assert_eq!(
            parse_io_stat(io),
            Some(IoStat {
                rbytes: 1459200 + 90430464,
                wbytes: 314773504 + 299008000,
                rios: Some(192 + 8950),
                wios: Some(353 + 1252),
            })
        );
        let blkio = "8:0 Read 4096\n8:0 Write 8192\n8:0 Sync 0\n8:0 Async 12288\n\
                     8:0 Discard 0\n8:0 Total 12288\n8:16 Read 1\n8:16 Write 2\n\
                     8:16 Total 3\nTotal 12291\n";
        assert_eq!(
            parse_blkio_service_bytes(blkio),
            Some(IoStat {
                rbytes: 4097,
                wbytes: 8194,
                rios: None,
                wios: None
            })
        );
        assert_eq!(parse_single("802816\n"), Some(802816));
        assert_eq!(parse_single("max\n"), None);
    }

    #[test]
    fn half_written_and_bad_lines_are_skipped() {
        assert_eq!(
            parse_cpu_stat("usage_usec 5\nuser_usec\nsystem_usec x\n"),
            Some(CpuStat {
                usage_usec: Some(5),
                ..CpuStat::default()
            })
        );
        assert_eq!(parse_cpu_stat("usage_u"), None);
        assert_eq!(parse_cpu_stat(""), None);
        assert_eq!(parse_memory_events("low 0\noom 1\n"), None);
        // A device line cut short or with a junk value is left out; the others are summed.
        let io = "8:0 rbytes=10 wbytes=20 rios=1 wios=2\n8:16 rbytes=5 wbytes=x rios=1 wios=1\n\
                  8:32 rbytes=1 wbyt";
        assert_eq!(
            parse_io_stat(io),
            Some(IoStat {
                rbytes: 10,
                wbytes: 20,
                rios: Some(1),
                wios: Some(2)
            })
        );
        assert_eq!(parse_io_stat(""), None);
        assert_eq!(parse_io_stat("garbage\n"), None);
        assert_eq!(parse_blkio_service_bytes("8:0 Rea"), None);
        assert_eq!(parse_single("12 13"), None);
        assert_eq!(parse_single(""), None);
    }

    #[test]
    fn pod_uids_from_kubelet_paths() {
        let uid = "0f8b0c1c-5d3e-4a8e-9b62-3f5f0e8b7c21";
        let sd = uid.replace('-', "_");
        for (path, want) in [
            (
                format!("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{sd}.slice"),
                Some(uid),
            ),
            (
                format!("kubepods.slice/kubepods-pod{sd}.slice/cri-containerd-abc.scope"),
                Some(uid),
            ),
            (format!("kubepods/burstable/pod{uid}"), Some(uid)),
            (format!("kubepods/pod{uid}/0123abcd"), Some(uid)),
            ("kubepods.slice/kubepods-besteffort.slice".to_string(), None),
            ("system.slice/ssh.service".to_string(), None),
            // `pod<UID>` outside kubepods is not the kubelet's.
            (format!("user.slice/pod{uid}"), None),
            ("kubepods/burstable/podnot-a-uid".to_string(), None),
        ] {
            assert_eq!(pod_uid(&path).as_deref(), want, "{path}");
        }
        // A static pod's UID is a 32-digit hash.
        assert_eq!(
            pod_uid("kubepods/besteffort/pod6b4ed14ac0f2b2a7b8cd7f38d5b4f1e0").as_deref(),
            Some("6b4ed14ac0f2b2a7b8cd7f38d5b4f1e0")
        );
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC*") {
            let _ = parse_cpu_stat(&s);
            let _ = parse_memory_events(&s);
            let _ = parse_io_stat(&s);
            let _ = parse_blkio_service_bytes(&s);
            let _ = parse_single(&s);
            let _ = pod_uid(&s);
        }
    }
}
