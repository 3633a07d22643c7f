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

/// A bad input quoted in a message: `{:?}` of its first 80 characters, then `…` and its
/// length when longer. Formatting a whole garbage file of megabytes would cost more than
/// reading it (escaping is tens of nanoseconds a character) and say nothing more.
pub struct Excerpt<'a>(pub &'a str);

impl std::fmt::Debug for Excerpt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const CHARS: usize = 80;
        match self.0.char_indices().nth(CHARS) {
            None => write!(f, "{:?}", self.0),
            Some((cut, _)) => write!(f, "{:?}… ({} bytes)", &self.0[..cut], self.0.len()),
        }
    }
}

/// The longest message a parse error keeps: messages quote the bad input, and a garbage
/// file of megabytes must not become a log line of megabytes.
const MAX_MSG: usize = 300;

impl ParseError {
    pub fn new(line: usize, msg: impl Into<String>) -> Self {
        let mut msg = msg.into();
        if msg.len() > MAX_MSG {
            let mut cut = MAX_MSG;
            while !msg.is_char_boundary(cut) {
                cut -= 1;
            }
            let total = msg.len();
            msg.truncate(cut);
            msg.push_str(&format!("… ({total} bytes)"));
        }
        ParseError { line, msg }
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_cut_on_a_char_boundary() {
        let long = format!("{:?} is not a count", "é".repeat(1_000_000));
        let e = ParseError::new(1, long.clone());
        assert!(e.msg.len() < MAX_MSG + 40, "{}", e.msg.len());
        assert!(e.msg.ends_with(&format!("… ({} bytes)", long.len())));
        assert!(long.starts_with(e.msg.trim_end_matches(|c: char| c != 'é')));
        assert_eq!(ParseError::new(3, "short").msg, "short");
    }

    #[test]
    fn an_excerpt_quotes_the_start_of_a_long_input() {
        assert_eq!(format!("{:?}", Excerpt("12\n")), "\"12\\n\"");
        let long = "é".repeat(1000);
        let e = format!("{:?}", Excerpt(&long));
        assert_eq!(e, format!("{:?}… (2000 bytes)", "é".repeat(80)));
    }
}
