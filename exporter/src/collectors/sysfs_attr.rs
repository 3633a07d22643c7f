//! A sysfs attribute kept open between scrapes, for collectors that read many small files (their
//! scan cycle is in [`super::sysfs_scan`]).
//!
//! sysfs produces an attribute's text anew on every read at offset 0 (the re-read that
//! `sysfs_notify` users are told to do: <https://docs.kernel.org/filesystems/sysfs.html>), so a
//! scrape can `pread` a kept file instead of open, read and close: about 1 µs instead of 11 µs
//! per attribute on the development VM, which is what keeps a many-core host's cpuidle and
//! hwmon files inside the scrape budget.
//!
//! File descriptors are a shared budget (the HTTP server needs some, perf needs many), so each
//! collector keeps at most a share of the process's descriptor limit open and reads the rest by
//! path. The soft limit is first raised to the hard limit, as perf does (and as Go exporters
//! do at start): the common soft limit of 1024 is far below what a many-core host needs.

use crate::error::{CollectError, ParseError};
use crate::read::read_into;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Longest attribute text read through a kept file. The attributes read this way are one
/// integer or a short name; a longer text is refused rather than silently cut.
const MAX_LEN: usize = 128;

/// One attribute, open if the collector's budget allowed it.
#[derive(Debug)]
pub struct Attr {
    path: PathBuf,
    file: Option<File>,
}

/// Hands out kept-open attributes until a collector's budget is spent.
#[derive(Debug)]
pub struct Budget(usize);

/// The descriptor limit after raising the soft limit to the hard one; 1024, the usual soft
/// limit, when the limit cannot be read.
pub fn fd_limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        let lim = crate::perf_sys::raise_fd_limit().unwrap_or(1024);
        usize::try_from(lim).unwrap_or(usize::MAX)
    })
}

impl Budget {
    pub fn new(max_open: usize) -> Self {
        Budget(max_open)
    }

    /// A budget of `1/divisor` of the process's descriptor limit.
    pub fn share_of_limit(divisor: usize) -> Self {
        Budget(fd_limit() / divisor.max(1))
    }

    /// The same budget, lowered to `max` if it is above.
    pub fn capped(self, max: usize) -> Self {
        Budget(self.0.min(max))
    }

    /// An attribute at `path`, kept open when the budget allows and the open succeeds (a
    /// failed open is retried by path on each read, which reports the error then).
    pub fn attr(&mut self, path: PathBuf) -> Attr {
        let file = if self.0 > 0 {
            File::open(&path).ok()
        } else {
            None
        };
        if file.is_some() {
            self.0 -= 1;
        }
        Attr { path, file }
    }
}

impl Attr {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the attribute's current text into `buf` (cleared first).
    pub fn read(&self, buf: &mut String) -> Result<(), CollectError> {
        let Some(f) = &self.file else {
            return read_into(&self.path, buf);
        };
        let mut bytes = [0u8; MAX_LEN];
        let n = f
            .read_at(&mut bytes, 0)
            .map_err(|e| CollectError::io(&self.path, e))?;
        if n == MAX_LEN {
            let msg = format!("attribute longer than {} bytes", MAX_LEN - 1);
            return Err(CollectError::parse(&self.path, ParseError::new(1, msg)));
        }
        let text = std::str::from_utf8(&bytes[..n])
            .map_err(|_| CollectError::parse(&self.path, ParseError::new(1, "not UTF-8")))?;
        buf.clear();
        buf.push_str(text);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_file_sees_new_contents_and_budget_is_respected() {
        let dir = std::env::temp_dir().join(format!("reveal-attr-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a"), dir.join("b"));
        std::fs::write(&a, "1\n").unwrap();
        std::fs::write(&b, "2\n").unwrap();
        let mut budget = Budget::new(1);
        let (ka, kb) = (budget.attr(a.clone()), budget.attr(b.clone()));
        assert!(ka.file.is_some() && kb.file.is_none());
        let mut buf = String::new();
        std::fs::write(&a, "10\n").unwrap();
        ka.read(&mut buf).unwrap();
        assert_eq!(buf, "10\n");
        kb.read(&mut buf).unwrap();
        assert_eq!(buf, "2\n");
        std::fs::write(&a, "x".repeat(MAX_LEN)).unwrap();
        assert!(ka.read(&mut buf).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(kb.read(&mut buf).unwrap_err().is_unsupported());
    }
}
