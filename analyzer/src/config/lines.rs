//! Lines of keys in block-style YAML, so semantic errors can name the line they are about.

use std::collections::HashMap;

/// The line of a key path, or of its nearest listed ancestor (a key left at its default has
/// no line of its own, so the block that should hold it is named instead).
pub(super) fn locate(lines: &HashMap<String, usize>, path: &str) -> Option<usize> {
    let mut p = path;
    loop {
        if let Some(l) = lines.get(p) {
            return Some(*l);
        }
        p = &p[..p.rfind('.')?];
    }
}

/// Maps dotted key paths (`outputs.alertmanager.urls.1`) to their 1-based lines in
/// block-style YAML. Flow collections (`{a: 1}`) are not descended into; their key is
/// reported instead, which is still the right line.
pub fn key_lines(text: &str) -> HashMap<String, usize> {
    enum Seg {
        Key(String),
        Item(usize),
    }
    let mut stack: Vec<(usize, Seg)> = Vec::new();
    let mut next_item: HashMap<String, usize> = HashMap::new();
    let mut out = HashMap::new();
    let path_of = |stack: &[(usize, Seg)]| {
        stack
            .iter()
            .map(|(_, s)| match s {
                Seg::Key(k) => k.clone(),
                Seg::Item(i) => i.to_string(),
            })
            .collect::<Vec<_>>()
            .join(".")
    };
    for (n, raw) in text.lines().enumerate() {
        let trimmed = raw.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with("---") {
            continue;
        }
        let mut col = raw.len() - trimmed.len();
        let mut rest = trimmed;
        while rest == "-" || rest.starts_with("- ") {
            // A sequence item; in compact style it sits at its parent key's column.
            while stack
                .last()
                .is_some_and(|(c, s)| *c > col || (*c == col && matches!(s, Seg::Item(_))))
            {
                stack.pop();
            }
            let parent = path_of(&stack);
            let idx = next_item.entry(parent).or_insert(0);
            stack.push((col, Seg::Item(*idx)));
            *idx += 1;
            out.entry(path_of(&stack)).or_insert(n + 1);
            let after = rest[1..].trim_start();
            col += rest.len() - after.len();
            rest = after;
        }
        if let Some(key) = mapping_key(rest) {
            while stack.last().is_some_and(|(c, _)| *c >= col) {
                stack.pop();
            }
            stack.push((col, Seg::Key(key)));
            out.entry(path_of(&stack)).or_insert(n + 1);
        }
    }
    out
}

/// `key:` or `key: value` → `key` (quotes stripped); anything else → None.
fn mapping_key(s: &str) -> Option<String> {
    let i = s
        .find(": ")
        .or_else(|| s.strip_suffix(':').map(|k| k.len()))?;
    let k = s[..i].trim().trim_matches(|c| c == '"' || c == '\'');
    (!k.is_empty() && !k.starts_with(['{', '[', '#'])).then(|| k.to_string())
}
