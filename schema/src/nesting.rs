//! A bound on nesting, checked on a YAML text before a YAML parser reads it. libyaml (and the
//! Rust port under `yaml_serde`) takes time quadratic in the depth of nested flow collections:
//! 50,000 `[` took 7 s to refuse, 200,000 over a minute (found by `tests/fuzz.rs`). No
//! configuration nests more than a few levels, so a file that opens more than
//! [`MAX_NESTING`] brackets without closing them is refused at once.
//!
//! Every `[` and `{` counts, quoted or commented or not: a scanner that skipped quotes or
//! comments could be led to skip brackets the parser does read, and over-counting only
//! refuses files no one writes.

/// Most `[` and `{` open at once.
pub const MAX_NESTING: usize = 256;

/// The 1-based line at which `text` first has more than [`MAX_NESTING`] brackets open.
pub fn too_deep(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut line = 1;
    for b in text.bytes() {
        match b {
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(line);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'\n' => line += 1,
            _ => {}
        }
    }
    None
}

/// The message for a text [`too_deep`] refuses.
pub fn message(line: usize) -> String {
    format!("line {line}: more than {MAX_NESTING} nested [ or {{ (refused before parsing)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_nesting_is_found_at_its_line_and_ordinary_files_pass() {
        assert_eq!(too_deep("a: [1, {b: [2]}]\nc: '[x'\n"), None);
        let deep = format!("a: 1\nb: {}\n", "[".repeat(MAX_NESTING + 1));
        assert_eq!(too_deep(&deep), Some(2));
        let closed = "[]".repeat(100_000);
        assert_eq!(too_deep(&closed), None);
        assert!(message(2).starts_with("line 2: more than 256"));
    }
}
