//! The exporter library's one error type.

use std::path::PathBuf;

/// Why a collector could not complete an update.
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    /// The host does not offer what the collector reads (missing file, no permission, no
    /// driver). The collector reports success 0 and the runner logs it once.
    #[error("unsupported: {path}: {reason}")]
    Unsupported { path: PathBuf, reason: String },
    /// Reading a file failed for another reason.
    #[error("reading {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file was read but its contents are not in the expected format.
    #[error("parsing {path}: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: ParseError,
    },
}

/// A format error found by one of the pure parsers, with the 1-based line it was found on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {msg}")]
pub struct ParseError {
    pub line: usize,
    pub msg: String,
}

pub use reveal_schema::Excerpt;

impl ParseError {
    /// A parse error whose message is cut to [`reveal_schema::excerpt::MAX_MESSAGE`] bytes.
    pub fn new(line: usize, msg: impl Into<String>) -> Self {
        ParseError {
            line,
            msg: reveal_schema::excerpt::bounded(msg.into()),
        }
    }
}

impl CollectError {
    /// Classifies an I/O error on `path`: a missing file or a denied permission means the host
    /// does not support the collector; anything else is a real failure.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        match source.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
                CollectError::Unsupported {
                    path,
                    reason: source.to_string(),
                }
            }
            _ => CollectError::Io { path, source },
        }
    }

    pub fn parse(path: impl Into<PathBuf>, source: ParseError) -> Self {
        CollectError::Parse {
            path: path.into(),
            source,
        }
    }

    pub fn is_unsupported(&self) -> bool {
        matches!(self, CollectError::Unsupported { .. })
    }

    /// Whether an [`CollectError::Unsupported`] comes from a refused permission (which an
    /// operator can grant: a warning) rather than from hardware, a driver or a file this host
    /// simply does not have (information). Told from the system error in the reason.
    pub fn is_denied(&self) -> bool {
        match self {
            CollectError::Unsupported { reason, .. } => {
                reason.contains("Permission denied")
                    || reason.contains("Operation not permitted")
                    || reason.contains("(os error 13)")
                    || reason.contains("(os error 1)")
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denied_is_told_from_absent() {
        let denied = std::io::Error::from_raw_os_error(libc::EACCES);
        assert!(CollectError::io("/sys/class/powercap/x/energy_uj", denied).is_denied());
        let eperm = std::io::Error::from_raw_os_error(libc::EPERM);
        assert!(CollectError::io("/dev/cpu/0/msr", eperm).is_denied());
        let absent = std::io::Error::from_raw_os_error(libc::ENOENT);
        let e = CollectError::io("/sys/class/hwmon", absent);
        assert!(e.is_unsupported() && !e.is_denied());
        let nvml = CollectError::Unsupported {
            path: "nvml".into(),
            reason: "NVML not loaded (libnvidia-ml.so.1: cannot open shared object file: No \
                     such file or directory)"
                .into(),
        };
        assert!(!nvml.is_denied());
    }
}
