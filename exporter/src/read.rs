//! Reading pseudo-files: whole-file reads into a reused buffer, and small sysfs values.

use crate::error::{CollectError, ParseError};
use std::cell::OnceCell;
use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Reads `path` to the end into `buf` (cleared first), reusing its allocation across scrapes.
pub fn read_into(path: &Path, buf: &mut String) -> Result<(), CollectError> {
    buf.clear();
    let mut f = std::fs::File::open(path).map_err(|e| CollectError::io(path, e))?;
    f.read_to_string(buf)
        .map_err(|e| CollectError::io(path, e))?;
    Ok(())
}

/// A procfs or sysfs file opened on its first read and kept open, re-read from offset 0 on
/// every scrape with `pread`.
///
/// The kernel produces these files' text anew on a read at offset 0: sysfs attributes (see
/// `sysfs_attr`), and seq_file procfs files (`/proc/stat`, `/proc/net/netstat`, ...), whose
/// `seq_read_iter` restarts its iterator at the first record for a read at position 0 —
/// <https://docs.kernel.org/filesystems/seq_file.html>. A kept file saves each scrape the
/// path lookup, `open`, `statx`, `lseek` and `close` of every file (4 of 6 syscalls per file;
/// about 10–25 µs per procfs file on the development VM, where the `/proc/net` lookups cost
/// most). Reading goes on until a read returns 0: seq_file hands out at most its own buffer
/// (a page at first) per read, so a short read is not the end of the file.
///
/// A file that cannot be opened is tried again on the next read, which reports the error as
/// [`read_into`] would. The descriptor stays bound to what was opened: right for procfs and
/// sysfs, where a file is never replaced by another (a removed sysfs attribute fails its read
/// with ENODEV instead); collectors that look directories up again build new ones then.
#[derive(Debug)]
pub struct KeptFile {
    path: PathBuf,
    file: OnceCell<File>,
}

impl KeptFile {
    pub fn new(path: PathBuf) -> Self {
        KeptFile {
            path,
            file: OnceCell::new(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn open(&self) -> Result<&File, CollectError> {
        match self.file.get() {
            Some(f) => Ok(f),
            None => {
                let f = File::open(&self.path).map_err(|e| CollectError::io(&self.path, e))?;
                Ok(self.file.get_or_init(|| f))
            }
        }
    }

    /// Reads the whole file from offset 0 into `buf` as bytes, reusing its allocation, and
    /// returns where its bytes are: `buf[range]`. For a parser that checks its
    /// own input, so that megabytes of digits (`/proc/interrupts` on a wide host) are not
    /// validated as UTF-8 first, and a stray byte in one device name does not fail the file.
    ///
    /// The start is chosen by `copy_friendly_start` (from the second read on, when the
    /// buffer no longer grows): a buffer this large is one that malloc maps on its own, 16
    /// bytes past a page boundary.
    ///
    /// `buf` keeps its length (the room read into, zeroed once when it grows) from read to
    /// read, so that a megabyte buffer is not zeroed again before every read (a tenth of
    /// the `/proc/interrupts` collector's time on the 96-CPU fixture); the bytes outside the
    /// range are those of earlier reads.
    pub fn read_bytes_into(&self, buf: &mut Vec<u8>) -> Result<Range<usize>, CollectError> {
        let file = self.open()?;
        if buf.len() < 8192 {
            buf.resize(8192, 0);
        }
        let start = copy_friendly_start(buf.as_ptr());
        match read_all_at_into(file, buf, start) {
            Ok(end) => Ok(start..end),
            Err(e) => Err(CollectError::io(&self.path, e)),
        }
    }

    /// Reads the whole file from offset 0 into `buf` (cleared first), reusing its allocation.
    pub fn read_into(&self, buf: &mut String) -> Result<(), CollectError> {
        buf.clear();
        let file = self.open()?;
        let mut bytes = std::mem::take(buf).into_bytes();
        if let Err(e) = read_all_at(file, &mut bytes) {
            bytes_back(buf, bytes);
            return Err(CollectError::io(&self.path, e));
        }
        match String::from_utf8(bytes) {
            Ok(s) => {
                *buf = s;
                Ok(())
            }
            Err(e) => {
                bytes_back(buf, e.into_bytes());
                let e = std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "stream did not contain valid UTF-8",
                );
                Err(CollectError::io(&self.path, e))
            }
        }
    }
}

impl From<&KeptFile> for PathBuf {
    fn from(f: &KeptFile) -> PathBuf {
        f.path.clone()
    }
}

/// Keeps the allocation of a buffer whose text was refused, for the next read.
fn bytes_back(buf: &mut String, mut bytes: Vec<u8>) {
    bytes.clear();
    // An empty vector is valid UTF-8.
    *buf = String::from_utf8(bytes).unwrap_or_default();
}

/// Where in a buffer at `ptr` to have the kernel copy a file's bytes: not 1 to 63 bytes past
/// a 4 KiB page boundary. The kernel copies to user memory with `rep movsb`, which on CPUs
/// with fast short `rep movsb` (AMD Zen among them) runs about ten times slower when the
/// destination is a few bytes past the source modulo 4 KiB; a file's page-cache pages start
/// on a page boundary, and a buffer over malloc's mmap threshold (128 KiB) starts 16 bytes
/// past one. Measured on the development VM (AMD EPYC) for a 1.3 MB file: 0.55–0.87 ms to a
/// destination 8 or 16 bytes past a page boundary, 0.07–0.09 ms 32 bytes past or more.
fn copy_friendly_start(ptr: *const u8) -> usize {
    let off = ptr as usize % 4096;
    if off > 0 && off < 64 {
        64 - off
    } else {
        0
    }
}

/// Reads `f` from offset 0 to its end into `v`, growing it as needed.
fn read_all_at(f: &File, v: &mut Vec<u8>) -> std::io::Result<()> {
    // Zeroing the spare capacity (a few KiB) is cheaper than any syscall it sits beside.
    v.clear();
    v.resize(v.capacity().max(8192), 0);
    match read_all_at_into(f, v, 0) {
        Ok(end) => {
            v.truncate(end);
            Ok(())
        }
        Err(e) => {
            v.clear();
            Err(e)
        }
    }
}

/// Reads `f` from offset 0 to its end into `v[start..]`, doubling `v` (zeroed) when it is
/// full, and returns where the bytes end; `v` keeps its length.
fn read_all_at_into(f: &File, v: &mut Vec<u8>, start: usize) -> std::io::Result<usize> {
    if v.len() <= start {
        v.resize(start + 1, 0);
    }
    let mut len = start;
    loop {
        if len == v.len() {
            v.resize(v.len() * 2, 0);
        }
        match f.read_at(&mut v[len..], (len - start) as u64) {
            Ok(0) => return Ok(len),
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Reads a whole small file (a sysfs attribute) and trims the trailing newline.
pub fn read_trimmed(path: &Path) -> Result<String, CollectError> {
    let s = std::fs::read_to_string(path).map_err(|e| CollectError::io(path, e))?;
    Ok(s.trim_end().to_string())
}

/// Reads a sysfs attribute that holds one unsigned integer.
pub fn read_u64(path: &Path) -> Result<u64, CollectError> {
    let s = read_trimmed(path)?;
    s.trim().parse::<u64>().map_err(|e| {
        CollectError::parse(
            path,
            ParseError::new(1, format!("{s:?}: {e}", s = crate::error::Excerpt(&s))),
        )
    })
}

/// Sorted entry names of a directory; a missing directory is `Unsupported`.
pub fn dir_names(path: &Path) -> Result<Vec<String>, CollectError> {
    let rd = std::fs::read_dir(path).map_err(|e| CollectError::io(path, e))?;
    let mut names: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort_by(|a, b| natural_cmp(a, b));
    Ok(names)
}

/// Orders names so that `cpu2` comes before `cpu10`, as a person reads them.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let (pa, na) = split_num_suffix(a);
    let (pb, nb) = split_num_suffix(b);
    pa.cmp(pb).then(na.cmp(&nb)).then(a.cmp(b))
}

fn split_num_suffix(s: &str) -> (&str, Option<u64>) {
    let idx = s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    (&s[..idx], s[idx..].parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_file_reads_fresh_procfs_text_and_whole_files() {
        let dir = std::env::temp_dir().join(format!("reveal-kept-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Longer than the first buffer, so the read loop has to grow it.
        let long = "x".repeat(20_000);
        std::fs::write(dir.join("f"), &long).unwrap();
        let k = KeptFile::new(dir.join("f"));
        let mut buf = String::new();
        k.read_into(&mut buf).unwrap();
        assert_eq!(buf, long);
        std::fs::write(dir.join("f"), "short\n").unwrap();
        k.read_into(&mut buf).unwrap();
        assert_eq!(buf, "short\n");
        std::fs::write(dir.join("f"), [0xffu8, 0xfe]).unwrap();
        assert!(k.read_into(&mut buf).is_err());
        std::fs::write(dir.join("f"), "ok").unwrap();
        k.read_into(&mut buf).unwrap();
        assert_eq!(buf, "ok");
        let missing = KeptFile::new(dir.join("missing"));
        assert!(missing.read_into(&mut buf).unwrap_err().is_unsupported());
        std::fs::write(dir.join("missing"), "now here").unwrap();
        missing.read_into(&mut buf).unwrap();
        assert_eq!(buf, "now here");
        std::fs::remove_dir_all(&dir).unwrap();

        // A seq_file procfs file gives new text on every read from offset 0 of a kept
        // descriptor: /proc/stat's context switch count grows between reads.
        let stat = KeptFile::new(crate::paths::Paths::default().proc("stat"));
        let ctxt = |b: &str| -> u64 {
            b.lines()
                .find_map(|l| l.strip_prefix("ctxt "))
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        };
        stat.read_into(&mut buf).unwrap();
        let first = ctxt(&buf);
        std::thread::sleep(std::time::Duration::from_millis(20));
        stat.read_into(&mut buf).unwrap();
        assert!(ctxt(&buf) > first, "kept /proc/stat did not refresh");
        assert_eq!(
            buf.lines().count(),
            std::fs::read_to_string(stat.path())
                .unwrap()
                .lines()
                .count()
        );
    }

    #[test]
    fn kept_file_reads_bytes_past_the_copy_unfriendly_offsets() {
        let dir = std::env::temp_dir().join(format!("reveal-kept-bytes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("big");
        // Over malloc's mmap threshold once grown, and not UTF-8.
        let mut text: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        text.push(0xff);
        std::fs::write(&path, &text).unwrap();
        let kept = KeptFile::new(path.clone());
        let mut buf = Vec::new();
        // The first read grows the buffer, which moves it; the next ones start where chosen.
        let range = kept.read_bytes_into(&mut buf).unwrap();
        assert_eq!(&buf[range], &text[..]);
        for _ in 0..3 {
            let range = kept.read_bytes_into(&mut buf).unwrap();
            assert_eq!(&buf[range.clone()], &text[..]);
            let off = (buf.as_ptr() as usize + range.start) % 4096;
            assert!(off == 0 || off >= 64, "{off}");
        }
        // A shorter text is read whole, whatever the earlier reads left in the buffer.
        std::fs::write(&path, b"short").unwrap();
        let range = kept.read_bytes_into(&mut buf).unwrap();
        assert_eq!(&buf[range], b"short");
        std::fs::write(&path, b"").unwrap();
        let range = kept.read_bytes_into(&mut buf).unwrap();
        assert!(range.is_empty());
        for (off, start) in [(0, 0), (16, 48), (63, 1), (64, 0), (4095, 0)] {
            assert_eq!(copy_friendly_start((4096 * 7 + off) as *const u8), start);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn natural_order() {
        let mut v = vec!["cpu10", "cpu2", "cpu1", "cpufreq", "cpu"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["cpu", "cpu1", "cpu2", "cpu10", "cpufreq"]);
    }
}
