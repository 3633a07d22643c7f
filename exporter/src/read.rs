//! Reading pseudo-files: whole-file reads into a reused buffer, and small sysfs values.

use crate::error::{CollectError, ParseError};
use std::io::Read;
use std::path::Path;

/// Reads `path` to the end into `buf` (cleared first), reusing its allocation across scrapes.
pub fn read_into(path: &Path, buf: &mut String) -> Result<(), CollectError> {
    buf.clear();
    let mut f = std::fs::File::open(path).map_err(|e| CollectError::io(path, e))?;
    f.read_to_string(buf).map_err(|e| CollectError::io(path, e))?;
    Ok(())
}

/// Reads a whole small file (a sysfs attribute) and trims the trailing newline.
pub fn read_trimmed(path: &Path) -> Result<String, CollectError> {
    let s = std::fs::read_to_string(path).map_err(|e| CollectError::io(path, e))?;
    Ok(s.trim_end().to_string())
}

/// Reads a sysfs attribute that holds one unsigned integer.
pub fn read_u64(path: &Path) -> Result<u64, CollectError> {
    let s = read_trimmed(path)?;
    s.trim()
        .parse::<u64>()
        .map_err(|e| CollectError::parse(path, ParseError::new(1, format!("{s:?}: {e}"))))
}

/// Sorted entry names of a directory; a missing directory is `Unsupported`.
pub fn dir_names(path: &Path) -> Result<Vec<String>, CollectError> {
    let rd = std::fs::read_dir(path).map_err(|e| CollectError::io(path, e))?;
    let mut names: Vec<String> =
        rd.filter_map(|e| e.ok()).filter_map(|e| e.file_name().into_string().ok()).collect();
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
    fn natural_order() {
        let mut v = vec!["cpu10", "cpu2", "cpu1", "cpufreq", "cpu"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["cpu", "cpu1", "cpu2", "cpu10", "cpufreq"]);
    }
}
