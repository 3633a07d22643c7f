//! Which cgroups there are: the hierarchies of this host, the walk to the configured depth
//! (bounded), and how one cgroup file is read.

use super::{Include, MAX_CGROUPS, MAX_DIRS};
use crate::paths::Paths;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    V2,
    Cpuacct,
    Memory,
    Blkio,
}

#[derive(Debug, Clone)]
pub(super) struct Hierarchy {
    pub kind: Kind,
    pub root: PathBuf,
}

/// The hierarchies of this host, v2 first: found by a file only they hold.
pub(super) fn detect(paths: &Paths) -> Vec<Hierarchy> {
    let base = paths.sys("fs/cgroup");
    let mut out = Vec::new();
    if let Some(root) = [base.clone(), base.join("unified")]
        .into_iter()
        .find(|d| d.join("cgroup.controllers").is_file())
    {
        out.push(Hierarchy {
            kind: Kind::V2,
            root,
        });
    }
    let v1: [(Kind, &[&str], &str); 3] = [
        (
            Kind::Cpuacct,
            &["cpuacct", "cpu,cpuacct", "cpuacct,cpu"],
            "cpuacct.usage",
        ),
        (Kind::Memory, &["memory"], "memory.usage_in_bytes"),
        (Kind::Blkio, &["blkio"], "blkio.throttle.io_service_bytes"),
    ];
    for (kind, names, probe) in v1 {
        if let Some(root) = names
            .iter()
            .map(|n| base.join(n))
            .find(|d| d.join(probe).is_file())
        {
            out.push(Hierarchy { kind, root });
        }
    }
    out
}

/// Adds the cgroups of one hierarchy to `found` (path → bit set of hierarchies holding it).
pub(super) fn walk(
    root: &Path,
    bit: u8,
    depth: usize,
    include: &Include,
    found: &mut BTreeMap<String, u8>,
    capped: &mut bool,
) {
    let mut stack: Vec<(String, usize)> = vec![(String::new(), 0)];
    let mut listed = 0;
    while let Some((rel, level)) = stack.pop() {
        if listed >= MAX_DIRS {
            *capped = true;
            return;
        }
        listed += 1;
        let Ok(rd) = std::fs::read_dir(root.join(&rel)) else {
            continue; // removed since its parent was listed
        };
        for e in rd.flatten() {
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let Ok(name) = e.file_name().into_string() else {
                continue; // not UTF-8: no label could name it
            };
            let path = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            if include.matches(&path) {
                let room = found.len() < MAX_CGROUPS;
                match found.get_mut(&path) {
                    Some(m) => *m |= bit,
                    None if room => {
                        found.insert(path.clone(), bit);
                    }
                    None => *capped = true,
                }
            }
            if level + 1 < depth {
                stack.push((path, level + 1));
            }
        }
    }
}

/// What a read of one file found.
pub(super) enum Got {
    Text,
    /// ENOENT or ENODEV: the file, or the whole cgroup, is not there.
    Absent,
    /// Another error (permission, EIO, EINVAL): the file is skipped.
    Unreadable,
}

/// Reads the whole file: open, read until a read returns 0, close. Not `read_to_end`, whose
/// size hint costs a `statx` and an `lseek` per file (a third of the syscalls here).
pub(super) fn read_file(path: &Path, buf: &mut Vec<u8>) -> Got {
    fn read_all(path: &Path, buf: &mut Vec<u8>) -> std::io::Result<()> {
        let mut f = std::fs::File::open(path)?;
        buf.resize(buf.capacity().max(4096), 0);
        let mut len = 0;
        loop {
            if len == buf.len() {
                buf.resize(buf.len() * 2, 0);
            }
            match f.read(&mut buf[len..]) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        buf.truncate(len);
        Ok(())
    }
    buf.clear();
    let res = read_all(path, buf);
    if res.is_err() {
        buf.clear();
    }
    match res {
        Ok(_) => Got::Text,
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                || e.raw_os_error() == Some(libc::ENODEV) =>
        {
            Got::Absent
        }
        Err(_) => Got::Unreadable,
    }
}

pub(super) fn text(buf: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(buf)
}
