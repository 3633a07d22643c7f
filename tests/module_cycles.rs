//! No import cycles between the top-level modules of the workspace's crates (issue 13).
//!
//! A top-level module is a direct child of the crate root (`mod X` in `src/lib.rs`). A path
//! `crate::X::…` (or `use crate::{X, …}`, or a `super::` path that climbs to the crate root
//! and names `X`) in the production code of module A is an edge A → X. Test code is left out:
//! items under `#[cfg(test)]` (and the module files they declare) and files named `tests.rs`
//! or `*_tests.rs`. A cycle is a strongly connected set of two or more modules.
//!
//! The test fails on a cycle that is not in [`ALLOWED`], and on an allowed cycle that has
//! grown; it prints every cycle that remains. The same check runs one level down in the
//! modules listed in [`NESTED`] (the analyzer's `core`: an edge `x -> y` between two of its
//! children is a path `crate::core::y` in `core::x`, or `super::y` from a direct child).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Cycles that exist today and are tolerated, per crate. Shrink or delete an entry when its
/// cycle shrinks; never add one. (Issue 13's restructure removed the last one.)
const ALLOWED: &[(&str, &[&str])] = &[];

/// Modules whose children are checked like a crate's top-level modules: (crate, module path).
const NESTED: &[(&str, &[&str])] = &[("analyzer", &["core"])];

/// The crates checked, by directory under the workspace root.
const CRATES: &[&str] = &["schema", "exporter", "analyzer"];

/// One reference from a module to another: where it is.
#[derive(Debug, Clone)]
struct Site {
    file: PathBuf,
    line: usize,
}

/// Top-level modules and the edges between them (target → first place it is referenced).
#[derive(Debug, Default)]
struct Graph {
    modules: BTreeSet<String>,
    edges: BTreeMap<String, BTreeMap<String, Site>>,
}

// ---------------------------------------------------------------------------------------------
// Lexing: comments and literals out, so that only code is searched.

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Punct(char),
    /// A string, char or number literal (its text does not matter here).
    Lit,
}

/// The tokens of a Rust file with their line numbers. Comments vanish; `::` is two `:`.
fn lex(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if ch == '"' || ((ch == 'b' || ch == 'c') && at(i + 1) == '"') {
            let start = line;
            i += if ch == '"' { 1 } else { 2 };
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                line += usize::from(at(i) == '\n');
                i += 1;
            }
            i += 1;
            out.push((Tok::Lit, start));
        } else if let Some(n) = raw_string_hashes(&c, i) {
            // r"…", r#"…"#, br#"…"#: ends at a quote followed by as many hashes.
            let start = line;
            i += n.1;
            loop {
                if i >= c.len() {
                    break;
                }
                if c[i] == '"' && (1..=n.0).all(|k| at(i + k) == '#') {
                    i += 1 + n.0;
                    break;
                }
                line += usize::from(c[i] == '\n');
                i += 1;
            }
            out.push((Tok::Lit, start));
        } else if ch == '\'' {
            // A char literal ('x', '\n', '\u{1F600}', '\''), else a lifetime or label.
            if at(i + 1) == '\\' {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push((Tok::Lit, line));
            } else if at(i + 2) == '\'' {
                i += 3;
                out.push((Tok::Lit, line));
            } else {
                out.push((Tok::Punct('\''), line));
                i += 1;
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let s = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push((Tok::Ident(c[s..i].iter().collect()), line));
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_' || c[i] == '.') {
                // `1..n` is a range, not a float.
                if c[i] == '.' && at(i + 1) == '.' {
                    break;
                }
                i += 1;
            }
            out.push((Tok::Lit, line));
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

/// At a raw string (`r"`, `r#"`, `br#"`, `cr"`): (number of hashes, length of the opening).
fn raw_string_hashes(c: &[char], i: usize) -> Option<(usize, usize)> {
    let mut j = i;
    if matches!(c.get(j), Some('b') | Some('c')) {
        j += 1;
    }
    if c.get(j) != Some(&'r') {
        return None;
    }
    // Not the end of an identifier such as `for` or `bar`.
    if i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while c.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    (c.get(j) == Some(&'"')).then_some((hashes, j + 1 - i))
}

// ---------------------------------------------------------------------------------------------
// Scanning one file: `mod` declarations to follow, and references to top-level modules.

/// What one file contributes.
#[derive(Debug, Default)]
struct FileScan {
    /// `mod name;` declarations outside test code: (inline module path, name, `#[path]`).
    children: Vec<(Vec<String>, String, Option<String>)>,
    /// Top-level modules referenced, with the line.
    refs: Vec<(String, usize)>,
}

fn is_ident(t: Option<&(Tok, usize)>, s: &str) -> bool {
    matches!(t, Some((Tok::Ident(x), _)) if x == s)
}

fn is_punct(t: Option<&(Tok, usize)>, p: char) -> bool {
    matches!(t, Some((Tok::Punct(x), _)) if *x == p)
}

/// Index just past the bracket group opening at `i` (`[`, `(` or `{`).
fn skip_group(toks: &[(Tok, usize)], i: usize) -> usize {
    let mut depth = 0usize;
    let mut j = i;
    while j < toks.len() {
        match toks[j].0 {
            Tok::Punct('[' | '(' | '{') => depth += 1,
            Tok::Punct(']' | ')' | '}') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    toks.len()
}

/// Index just past the item starting at `i`: its `;` or its first brace group.
fn skip_item(toks: &[(Tok, usize)], mut i: usize) -> usize {
    while i < toks.len() {
        match toks[i].0 {
            Tok::Punct(';') => return i + 1,
            Tok::Punct('{') => return skip_group(toks, i),
            Tok::Punct('(' | '[') => i = skip_group(toks, i),
            _ => i += 1,
        }
    }
    toks.len()
}

/// Whether the attribute `#[…]` whose contents are `toks[s..e]` compiles its item only for tests.
fn is_test_cfg(toks: &[(Tok, usize)], s: usize, e: usize) -> bool {
    let words: Vec<&str> = toks[s..e]
        .iter()
        .filter_map(|(t, _)| match t {
            Tok::Ident(x) => Some(x.as_str()),
            _ => None,
        })
        .collect();
    words.first() == Some(&"cfg") && words.contains(&"test") && !words.contains(&"not")
}

/// The file of a `#[path = "…"]` attribute whose `[` is at `s`, if it is one.
fn path_attr(toks: &[(Tok, usize)], s: usize, src: &str) -> Option<String> {
    if !is_ident(toks.get(s + 2), "path") {
        return None;
    }
    // The literal's text is not kept by the lexer; read it back from the attribute's line.
    let line = src.lines().nth(toks[s].1 - 1)?;
    let start = line.find("path")?;
    let rest = &line[start..];
    let q1 = rest.find('"')? + 1;
    let q2 = rest[q1..].find('"')? + q1;
    Some(rest[q1..q2].to_string())
}

/// Scans a file whose module path below the crate root is `module` (`["config"]` for
/// `src/config.rs`, `["config", "lines"]` for `src/config/lines.rs`); references are to the
/// children of `base` (the crate root when empty).
fn scan(src: &str, module: &[String], top: &BTreeSet<String>, base: &[String]) -> FileScan {
    let toks = lex(src);
    let mut out = FileScan::default();
    // Inline modules open at the current point: (name, brace depth inside it).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut test_attr = false;
    let mut path: Option<String> = None;
    let mut i = 0;
    while i < toks.len() {
        // Attributes: remember `#[cfg(test)]` and `#[path]` for the next item.
        if is_punct(toks.get(i), '#') {
            let mut s = i + 1;
            if is_punct(toks.get(s), '!') {
                s += 1;
            }
            if is_punct(toks.get(s), '[') {
                let e = skip_group(&toks, s);
                if toks.get(i + 1).map(|t| &t.0) != Some(&Tok::Punct('!')) {
                    test_attr |= is_test_cfg(&toks, s + 1, e);
                    path = path.or_else(|| path_attr(&toks, s, src));
                }
                i = e;
                continue;
            }
        }
        if test_attr {
            // The whole item is test code (a `mod tests;` is not followed either).
            test_attr = false;
            path = None;
            i = skip_item(&toks, i);
            continue;
        }
        match &toks[i].0 {
            Tok::Ident(kw) if kw == "mod" => {
                if let Some((Tok::Ident(name), _)) = toks.get(i + 1) {
                    if is_punct(toks.get(i + 2), ';') {
                        out.children
                            .push((names(&inline), name.clone(), path.take()));
                        i += 3;
                        continue;
                    }
                    if is_punct(toks.get(i + 2), '{') {
                        depth += 1;
                        inline.push((name.clone(), depth));
                        path = None;
                        i += 3;
                        continue;
                    }
                }
            }
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Punct(';') => path = None,
            Tok::Ident(kw) if kw == "crate" || kw == "super" => {
                // `crate::` or `$crate::` names the root; each `super::` climbs one level.
                let mut here: Vec<String> = module.to_vec();
                here.extend(names(&inline));
                let mut j = i;
                let mut at_root = false;
                loop {
                    let is_path = is_punct(toks.get(j + 1), ':') && is_punct(toks.get(j + 2), ':');
                    match &toks[j].0 {
                        Tok::Ident(k) if k == "crate" && is_path => {
                            here.clear();
                            at_root = true;
                        }
                        Tok::Ident(k) if k == "super" && is_path => {
                            here.pop();
                            at_root = here.is_empty();
                        }
                        _ => break,
                    }
                    j += 3;
                    if !matches!(toks.get(j), Some((Tok::Ident(k), _)) if k == "super") {
                        break;
                    }
                }
                if j > i {
                    // `here` is where the path climbed to; walk down into `base` when the
                    // path names it (`crate::core::x` seen from outside `core`).
                    let mut k = j;
                    let mut at: Vec<String> = if at_root { Vec::new() } else { here };
                    while at.len() < base.len()
                        && at[..] == base[..at.len()]
                        && is_ident(toks.get(k), &base[at.len()])
                        && is_punct(toks.get(k + 1), ':')
                        && is_punct(toks.get(k + 2), ':')
                    {
                        at.push(base[at.len()].clone());
                        k += 3;
                    }
                    let line = toks[i].1;
                    if at == base {
                        for name in first_segments(&toks, k) {
                            if top.contains(&name) && module.get(base.len()) != Some(&name) {
                                out.refs.push((name, line));
                            }
                        }
                    }
                }
                i = j.max(i + 1);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The names of the inline modules open at a point.
fn names(inline: &[(String, usize)]) -> Vec<String> {
    inline.iter().map(|(n, _)| n.clone()).collect()
}

/// The first segment of the path at `j` (`config` in `config::X`), or of each path in a
/// `{…}` group (`use crate::{config::X, http}`).
fn first_segments(toks: &[(Tok, usize)], j: usize) -> Vec<String> {
    match toks.get(j) {
        Some((Tok::Ident(name), _)) => vec![name.clone()],
        Some((Tok::Punct('{'), _)) => {
            let end = skip_group(toks, j);
            let mut names = Vec::new();
            let mut depth = 0;
            let mut expect = true;
            for (t, _) in &toks[j + 1..end.saturating_sub(1)] {
                match t {
                    Tok::Punct('{') => depth += 1,
                    Tok::Punct('}') => depth -= 1,
                    Tok::Punct(',') if depth == 0 => expect = true,
                    Tok::Ident(n) if expect && depth == 0 => {
                        names.push(n.clone());
                        expect = false;
                    }
                    _ => expect = false,
                }
            }
            names
        }
        _ => Vec::new(),
    }
}

// ---------------------------------------------------------------------------------------------
// The crate: follow the module tree from lib.rs.

fn is_test_file(p: &Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name == "tests.rs" || name.ends_with("_tests.rs")
}

/// The directory a file's `mod x;` children live in.
fn child_dir(file: &Path) -> PathBuf {
    let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
    match file.file_name().and_then(|n| n.to_str()) {
        Some("mod.rs") | Some("lib.rs") | Some("main.rs") => dir,
        _ => dir.join(file.file_stem().unwrap_or_default()),
    }
}

fn graph(src_dir: &Path) -> Graph {
    graph_at(src_dir, &[])
}

/// The graph of the children of module `base` (the crate root when empty), following the
/// module tree from its file.
fn graph_at(src_dir: &Path, base: &[&str]) -> Graph {
    let base: Vec<String> = base.iter().map(|s| s.to_string()).collect();
    let mut root_dir = src_dir.to_path_buf();
    let mut root_file = src_dir.join("lib.rs");
    for m in &base {
        root_file = if root_dir.join(format!("{m}.rs")).exists() {
            root_dir.join(format!("{m}.rs"))
        } else {
            root_dir.join(m).join("mod.rs")
        };
        root_dir = root_dir.join(m);
    }
    let text = std::fs::read_to_string(&root_file)
        .unwrap_or_else(|e| panic!("{}: {e}", root_file.display()));
    let root = scan(&text, &base, &BTreeSet::new(), &base);
    let mut g = Graph::default();
    let mut queue = Vec::new();
    for (inline, name, path) in root.children {
        assert!(
            inline.is_empty(),
            "inline modules in {} are not supported",
            root_file.display()
        );
        g.modules.insert(name.clone());
        let mut module = base.clone();
        module.push(name);
        queue.push((child_dir(&root_file), module, path));
    }
    while let Some((dir, module, path)) = queue.pop() {
        let name = module.last().cloned().unwrap_or_default();
        let file = match path {
            Some(p) => dir.join(p),
            None if dir.join(format!("{name}.rs")).exists() => dir.join(format!("{name}.rs")),
            None => dir.join(&name).join("mod.rs"),
        };
        if is_test_file(&file) {
            continue;
        }
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let s = scan(&text, &module, &g.modules, &base);
        let top = module[base.len()].clone();
        let edges = g.edges.entry(top.clone()).or_default();
        for (to, line) in s.refs {
            edges.entry(to).or_insert(Site {
                file: file.clone(),
                line,
            });
        }
        for (inline, child, path) in s.children {
            let mut d = child_dir(&file);
            for m in &inline {
                d = d.join(m);
            }
            let mut m = module.clone();
            m.extend(inline);
            m.push(child);
            queue.push((d, m, path));
        }
    }
    g
}

/// Strongly connected sets of two or more modules (Tarjan), each sorted, in sorted order.
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct State<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        let g = s.g;
        for w in g.edges.get(v).into_iter().flat_map(|e| e.keys()) {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in &g.modules {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}

/// The edges inside one cycle, each with the first place it is referenced.
fn describe(g: &Graph, cycle: &[String], root: &Path) -> String {
    let mut out = String::new();
    for a in cycle {
        for (b, site) in g.edges.get(a).into_iter().flatten() {
            if cycle.contains(b) {
                let file = site.file.strip_prefix(root).unwrap_or(&site.file);
                out.push_str(&format!(
                    "      {a} -> {b}  ({}:{})\n",
                    file.display(),
                    site.line
                ));
            }
        }
    }
    out
}

#[test]
fn no_import_cycles_between_top_level_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut failures = Vec::new();
    let mut report = String::new();
    let checked = CRATES
        .iter()
        .map(|k| (*k, &[][..]))
        .chain(NESTED.iter().copied());
    for (krate, base) in checked {
        let g = graph_at(&root.join(krate).join("src"), base);
        let label = std::iter::once(krate)
            .chain(base.iter().copied())
            .collect::<Vec<_>>()
            .join("::");
        assert!(
            g.modules.len() > 1 || krate == "schema",
            "{label}: no modules found"
        );
        let allowed: Vec<BTreeSet<&str>> = ALLOWED
            .iter()
            .filter(|(k, _)| *k == krate && base.is_empty())
            .map(|(_, c)| c.iter().copied().collect())
            .collect();
        let found = cycles(&g);
        report.push_str(&format!(
            "{label}: {} {} modules, {} cycles\n",
            g.modules.len(),
            if base.is_empty() {
                "top-level"
            } else {
                "child"
            },
            found.len()
        ));
        for c in &found {
            let set: BTreeSet<&str> = c.iter().map(String::as_str).collect();
            let status = if allowed.contains(&set) {
                "ALLOWED (to be removed)"
            } else if allowed.iter().any(|a| set.is_subset(a)) {
                "ALLOWED, shrunk: shrink its entry in ALLOWED"
            } else {
                failures.push(format!(
                    "{label}: cycle {{{}}} is new or has grown\n{}",
                    c.join(", "),
                    describe(&g, c, root)
                ));
                "NOT ALLOWED"
            };
            report.push_str(&format!(
                "  cycle {{{}}}: {status}\n{}",
                c.join(", "),
                describe(&g, c, root)
            ));
        }
        for a in &allowed {
            if !found
                .iter()
                .any(|c| c.iter().all(|m| a.contains(m.as_str())))
            {
                report.push_str(&format!(
                    "  allowed cycle {a:?} is gone: delete its entry in ALLOWED\n"
                ));
            }
        }
    }
    eprintln!("==== import cycles between top-level modules ====\n{report}=================");
    assert!(
        failures.is_empty(),
        "import cycles between top-level modules:\n{}",
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// The checker checked, on a crate written here.

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

#[test]
fn the_checker_finds_cycles_and_ignores_tests_comments_and_strings() {
    let dir = std::env::temp_dir().join(format!("reveal-modcycles-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    write(
        &dir,
        &[
            (
                "lib.rs",
                "//! crate::d in a comment\npub mod a;\nmod b;\n#[cfg(test)]\nmod t;\npub mod c;\npub mod d;\n",
            ),
            // a -> b through a group import and a nested module; a -> c through super::.
            ("a.rs", "use crate::{b::X, self_};\nmod inner;\n"),
            ("a/inner.rs", "use super::super::c::Y;\nfn f<'a>(x: &'a str) -> char { 'c' }\n"),
            // b -> a, but only in test code and text: no edge.
            (
                "b/mod.rs",
                "pub struct X;\nconst S: &str = \"crate::a\";\nconst R: &str = r#\"crate::a\"#;\n\
                 /* crate::a */\n#[cfg(test)]\nmod tests { use crate::a; }\nmod tests_only;\nmod x_tests;\n",
            ),
            ("b/tests_only.rs", "pub fn g() { crate::c::Y; }\n"),
            ("b/x_tests.rs", "use crate::a;\n"),
            // c -> a: a real cycle {a, c}; `$crate::` counts.
            ("c.rs", "pub struct Y;\nmacro_rules! m { () => { $crate::a::f() } }\n"),
            ("t.rs", "use crate::d;\n"),
            ("d.rs", "#[cfg(test)]\n#[path = \"d_more.rs\"]\nmod more;\n"),
        ],
    );
    let g = graph(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let edges: Vec<(String, String)> = g
        .edges
        .iter()
        .flat_map(|(a, to)| to.keys().map(move |b| (a.clone(), b.clone())))
        .collect();
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        edges,
        vec![
            pair("a", "b"),
            pair("a", "c"),
            pair("b", "c"),
            pair("c", "a")
        ]
    );
    assert_eq!(cycles(&g), vec![vec!["a", "b", "c"]]);
}

#[test]
fn the_checker_finds_cycles_between_the_children_of_a_nested_module() {
    let dir = std::env::temp_dir().join(format!("reveal-modcycles-nested-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    write(
        &dir,
        &[
            ("lib.rs", "pub mod core;\npub mod out;\n"),
            ("core/mod.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
            // a -> b by a crate path, b -> a by super::, c -> a inside a group; c's own child
            // reaching its parent with super:: is no edge, nor is a path into `out` (a
            // top-level edge core -> out, which is no cycle).
            ("core/a.rs", "use crate::core::b::X;\npub fn f() {}\n"),
            ("core/b.rs", "pub struct X;\nfn g() { super::a::f() }\n"),
            (
                "core/c.rs",
                "use crate::core::{a::f, self as me};\nmod d;\nuse crate::out::Y;\n",
            ),
            ("core/c/d.rs", "use super::super::c;\n"),
            ("out.rs", "pub struct Y;\n"),
        ],
    );
    let g = graph_at(&dir, &["core"]);
    let top = graph(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let edges: Vec<(String, String)> = g
        .edges
        .iter()
        .flat_map(|(a, to)| to.keys().map(move |b| (a.clone(), b.clone())))
        .collect();
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(edges, vec![pair("a", "b"), pair("b", "a"), pair("c", "a")]);
    assert_eq!(cycles(&g), vec![vec!["a", "b"]]);
    assert!(cycles(&top).is_empty());
}
