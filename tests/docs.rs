//! Every command that README.md and docs/*.md show for this project's binaries and scripts
//! still works as shown, and every relative link resolves.
//!
//! Commands are taken from code blocks (fenced and indented) and from inline code that starts
//! with a command: `reveal-exporter …`, `reveal-analyzer …` (also as a path, after `cargo run
//! -p … --`, or in a systemd `ExecStart=`), and repository scripts (`*.sh`). Each is run with
//! `--help` (a script only if it handles `--help`, so that a doc never starts a real run): it
//! must exit 0, and every subcommand and `--flag` the doc names must appear in that help.
//! `cargo … -p PKG --test NAME` / `--bench NAME` must name targets that exist, and
//! `python3 FILE` a file that exists.
//!
//! The binaries come from `target/<profile>/` (`cargo nextest run --workspace` builds them;
//! alone: `cargo build --bins && cargo nextest run -p reveal-e2e --test docs`).

use reveal_e2e::workspace_bin;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Pages linked before they exist, because they are being written elsewhere. A link to one of
/// these may dangle; remove the entry once the page is in the repository.
const PENDING_PAGES: &[&str] = &[];

const BINARIES: &[&str] = &["reveal-exporter", "reveal-analyzer"];

/// Binaries with subcommands: the first word of their arguments that is not a flag is one,
/// and must be named in their help. `cargo xtask TASK` is the workspace's `xtask` binary.
const WITH_SUBCOMMANDS: &[&str] = &["reveal-analyzer", "xtask"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every docs/*.md, as (path relative to the root, text).
fn pages() -> Vec<(String, String)> {
    let mut names = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    names.extend(docs);
    names
        .into_iter()
        .map(|n| {
            let text =
                std::fs::read_to_string(root().join(&n)).unwrap_or_else(|e| panic!("{n}: {e}"));
            (n, text)
        })
        .collect()
}

/// One line of a page that may hold a command, with where it is.
#[derive(Debug, Clone)]
struct Snippet {
    at: String,
    text: String,
}

fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

/// The code of a page: lines of fenced and indented blocks (continuation lines joined), and
/// inline code spans of the prose.
fn snippets(page: &str, text: &str) -> Vec<Snippet> {
    let mut out = Vec::new();
    let mut in_fence = false;
    let mut prev_blank = true;
    let mut in_indented = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if is_fence(line) {
            in_fence = !in_fence;
            prev_blank = false;
            in_indented = false;
            continue;
        }
        let indented = !in_fence
            && (line.starts_with("    ") || line.starts_with('\t'))
            && (prev_blank || in_indented);
        if in_fence || indented {
            in_indented = indented;
            let (start, mut acc) = pending.take().unwrap_or((n, String::new()));
            acc.push_str(line.trim());
            if let Some(head) = acc.strip_suffix('\\') {
                pending = Some((start, format!("{head} ")));
            } else {
                out.push(Snippet {
                    at: format!("{page}:{start}"),
                    text: acc,
                });
            }
        } else {
            in_indented = false;
            let mut rest = line;
            while let Some(a) = rest.find('`') {
                let after = &rest[a + 1..];
                let Some(b) = after.find('`') else { break };
                out.push(Snippet {
                    at: format!("{page}:{n}"),
                    text: after[..b].to_string(),
                });
                rest = &after[b + 1..];
            }
        }
        prev_blank = line.trim().is_empty();
    }
    out
}

/// Shell-like words: quotes group, backslashes are kept as they are.
fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            (None, c) => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// What a snippet asks to run.
#[derive(Debug, PartialEq)]
enum Invocation {
    /// One of [`BINARIES`] with its arguments.
    Binary(String, Vec<String>),
    /// A script of this repository (path from the root) with its arguments.
    Script(String, Vec<String>),
    /// `cargo` naming a package and test or bench targets: (package, kind, target).
    CargoTargets(Option<String>, Vec<(String, String)>),
    /// A file an interpreter is given.
    File(String),
}

fn is_env_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((k, _)) => !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
        None => false,
    }
}

fn binary_name(w: &str) -> Option<&'static str> {
    let base = w.rsplit('/').next().unwrap_or(w);
    BINARIES.iter().copied().find(|b| *b == base)
}

fn parse(snippet: &str) -> Option<Invocation> {
    let s = snippet.trim().trim_start_matches("$ ");
    let mut ws = Vec::new();
    for w in words(s) {
        // The command ends at a pipe, a list operator, a redirection or a comment.
        if ["|", "||", "&", "&&", ";"].contains(&w.as_str())
            || w.starts_with('#')
            || w.starts_with('>')
            || w.starts_with("2>")
        {
            break;
        }
        ws.push(w.trim_matches(|c| c == '[' || c == ']').to_string());
    }
    ws.retain(|w| !w.is_empty());
    // Leading environment assignments; a systemd `ExecStart=/path/reveal-exporter` counts as
    // the command itself.
    let mut i = 0;
    while i < ws.len() && is_env_assignment(&ws[i]) {
        let value = ws[i].split_once('=').unwrap().1;
        if let Some(b) = binary_name(value) {
            return Some(Invocation::Binary(b.to_string(), ws[i + 1..].to_vec()));
        }
        i += 1;
    }
    let ws = &ws[i..];
    let first = ws.first()?;
    if let Some(b) = binary_name(first) {
        return Some(Invocation::Binary(b.to_string(), ws[1..].to_vec()));
    }
    if first.ends_with(".sh") && first.contains('/') && !first.starts_with('/') {
        return Some(Invocation::Script(
            first.trim_start_matches("./").to_string(),
            ws[1..].to_vec(),
        ));
    }
    if first == "python3" {
        let file = ws.get(1).filter(|f| f.ends_with(".py"))?;
        return Some(Invocation::File(file.clone()));
    }
    if first == "cargo" && ws.get(1).map(String::as_str) == Some("xtask") {
        return Some(Invocation::Binary("xtask".into(), ws[2..].to_vec()));
    }
    if first == "cargo" {
        let package = ws
            .windows(2)
            .find(|p| p[0] == "-p" || p[0] == "--package")
            .map(|p| p[1].clone());
        if ws.get(1).map(String::as_str) == Some("run") {
            if let Some(dash) = ws.iter().position(|w| w == "--") {
                let bin = package.as_deref().and_then(binary_name)?;
                return Some(Invocation::Binary(bin.to_string(), ws[dash + 1..].to_vec()));
            }
        }
        let targets: Vec<(String, String)> = ws
            .windows(2)
            .filter(|p| p[0] == "--test" || p[0] == "--bench")
            .map(|p| (p[0].trim_start_matches('-').to_string(), p[1].clone()))
            .collect();
        if !targets.is_empty() {
            return Some(Invocation::CargoTargets(package, targets));
        }
    }
    None
}

/// Whether `help` names `word` as a whole token (`--collector.gpu` is not found in
/// `--collector.gpu.pcie-throughput`).
fn names(help: &str, word: &str) -> bool {
    let part = |c: char| c.is_ascii_alphanumeric() || "-._".contains(c);
    help.match_indices(word).any(|(i, _)| {
        let before_ok = !help[..i].chars().next_back().is_some_and(part);
        let mut after = help[i + word.len()..].chars();
        let after_ok = match after.next() {
            None => true,
            // A full stop ends the word; `.` followed by more of a name does not.
            Some('.') => !after.next().is_some_and(part),
            Some(c) => !part(c),
        };
        before_ok && after_ok
    })
}

/// The flag a doc's argument names: `--web.listen-address=…` names `--web.listen-address`.
fn flag_of(arg: &str) -> Option<&str> {
    let name = arg.split('=').next().unwrap();
    (name.starts_with("--") && name.len() > 2 && name != "--help").then_some(name)
}

/// Runs `cmd` and returns its stdout and stderr, or why it failed.
fn help_of(mut cmd: Command, what: &str) -> Result<String, String> {
    let out = cmd
        .current_dir(root())
        .output()
        .map_err(|e| format!("{what}: cannot run: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!("{what}: exit {}: {}", out.status, text.trim()))
    }
}

/// The package directory of a workspace package.
fn package_dir(package: &str) -> Option<PathBuf> {
    match package {
        "reveal-exporter" => Some(root().join("exporter")),
        "reveal-analyzer" => Some(root().join("analyzer")),
        "reveal-e2e" => Some(root()),
        _ => None,
    }
}

fn target_exists(dir: &Path, kind: &str, name: &str) -> bool {
    let folder = if kind == "test" { "tests" } else { "benches" };
    dir.join(folder).join(format!("{name}.rs")).is_file()
        || dir.join(folder).join(name).join("main.rs").is_file()
}

/// Checks one invocation; `helps` caches the help text per command. Returns the problems.
fn check(
    inv: &Invocation,
    helps: &mut HashMap<Vec<String>, Result<String, String>>,
) -> Vec<String> {
    let mut problems = Vec::new();
    match inv {
        Invocation::Binary(bin, args) => {
            // The first word that is not a flag, of a binary with subcommands.
            let sub = WITH_SUBCOMMANDS
                .contains(&bin.as_str())
                .then(|| args.iter().find(|a| !a.starts_with('-')))
                .flatten();
            let mut key = vec![bin.clone()];
            key.extend(sub.cloned());
            let help = helps.entry(key.clone()).or_insert_with(|| {
                let mut c = Command::new(workspace_bin(bin));
                c.args(&key[1..]).arg("--help");
                help_of(c, &format!("{} --help", key.join(" ")))
            });
            match help {
                Err(e) => problems.push(e.clone()),
                Ok(help) => {
                    for flag in args.iter().filter_map(|a| flag_of(a)) {
                        if !names(help, flag) {
                            problems
                                .push(format!("{}: no flag {flag} in its --help", key.join(" ")));
                        }
                    }
                }
            }
        }
        Invocation::Script(path, args) => {
            let file = root().join(path);
            let Ok(text) = std::fs::read_to_string(&file) else {
                return vec![format!("{path}: no such script")];
            };
            let executable = {
                use std::os::unix::fs::PermissionsExt;
                file.metadata().unwrap().permissions().mode() & 0o111 != 0
            };
            if !executable {
                problems.push(format!("{path}: not executable"));
            }
            if !text.contains("--help") {
                problems.push(format!(
                    "{path}: does not answer --help (so it was not run)"
                ));
                return problems;
            }
            let help = helps.entry(vec![path.clone()]).or_insert_with(|| {
                let mut c = Command::new(&file);
                c.arg("--help");
                help_of(c, &format!("{path} --help"))
            });
            match help {
                Err(e) => problems.push(e.clone()),
                Ok(help) => {
                    // A first argument that is a plain word is a subcommand (`down`, `status`).
                    if let Some(sub) = args
                        .first()
                        .filter(|a| a.chars().all(|c| c.is_ascii_lowercase()))
                    {
                        if !names(help, sub) {
                            problems.push(format!("{path}: no subcommand {sub} in its --help"));
                        }
                    }
                    for flag in args.iter().filter_map(|a| flag_of(a)) {
                        if !names(help, flag) {
                            problems.push(format!("{path}: no option {flag} in its --help"));
                        }
                    }
                }
            }
        }
        Invocation::CargoTargets(package, targets) => {
            let dirs: Vec<PathBuf> = match package {
                Some(p) => match package_dir(p) {
                    Some(d) => vec![d],
                    None => return vec![format!("cargo: no package {p} in this workspace")],
                },
                None => ["reveal-exporter", "reveal-analyzer", "reveal-e2e"]
                    .iter()
                    .filter_map(|p| package_dir(p))
                    .collect(),
            };
            for (kind, name) in targets {
                if !dirs.iter().any(|d| target_exists(d, kind, name)) {
                    problems.push(format!(
                        "cargo: no {kind} target {name} in {}",
                        package.as_deref().unwrap_or("the workspace")
                    ));
                }
            }
        }
        Invocation::File(path) => {
            if !root().join(path).is_file() {
                problems.push(format!("{path}: no such file"));
            }
        }
    }
    problems
}

/// Every problem with the commands of these pages, each prefixed with where it is shown.
fn command_problems(pages: &[(String, String)]) -> (usize, Vec<String>) {
    let mut helps = HashMap::new();
    let mut checked = 0;
    let mut problems = Vec::new();
    for (page, text) in pages {
        for s in snippets(page, text) {
            for part in s.text.split("&&") {
                let Some(inv) = parse(part) else { continue };
                checked += 1;
                eprintln!("{}: {}", s.at, part.trim());
                for p in check(&inv, &mut helps) {
                    problems.push(format!("{}: `{}`: {p}", s.at, part.trim()));
                }
            }
        }
    }
    (checked, problems)
}

#[test]
fn every_documented_command_exists_as_shown() {
    let pages = pages();
    let (checked, problems) = command_problems(&pages);
    assert!(
        checked >= 10,
        "only {checked} commands found in the docs: is the parser broken?"
    );
    eprintln!("{checked} documented commands checked");
    assert!(
        problems.is_empty(),
        "commands in the documentation that do not work as shown:\n{}",
        problems.join("\n")
    );
}

/// The proof that the check can fail: subcommands, a flag and a script that do not exist.
#[test]
fn a_bogus_command_is_caught() {
    let page = "Try:\n\n    reveal-analyzer analyze --input run.om --no-such-flag\n    \
                reveal-analyzer frobnicate\n    scripts/no-such-script.sh --fast\n    \
                cargo xtask lint\n\n\
                And `reveal-exporter --web.listen-address=:1 --collector.gpu.bogus`.\n\n\
                ```\ncargo nextest run -p reveal-e2e --test no_such_test\n```\n";
    let (checked, problems) = command_problems(&[("bogus.md".into(), page.into())]);
    assert_eq!(checked, 6, "{problems:#?}");
    let expect = [
        "no flag --no-such-flag",
        "reveal-analyzer frobnicate --help: exit",
        "xtask lint --help: exit",
        "scripts/no-such-script.sh: no such script",
        "no flag --collector.gpu.bogus",
        "no test target no_such_test",
    ];
    for e in expect {
        assert!(
            problems.iter().any(|p| p.contains(e)),
            "expected a problem containing {e:?} in {problems:#?}"
        );
    }
    assert_eq!(problems.len(), expect.len(), "{problems:#?}");
}

#[test]
fn parsing_of_commands() {
    assert_eq!(
        parse("./target/release/reveal-exporter --once            # one scrape to stdout"),
        Some(Invocation::Binary(
            "reveal-exporter".into(),
            vec!["--once".into()]
        ))
    );
    assert_eq!(
        parse("cargo run --release -p reveal-exporter -- --web.listen-address=127.0.0.1:19190"),
        Some(Invocation::Binary(
            "reveal-exporter".into(),
            vec!["--web.listen-address=127.0.0.1:19190".into()]
        ))
    );
    assert_eq!(
        parse("EXTRA_ARGS=\"--metrics.selection sel.yml\" scripts/storage_per_host.sh"),
        Some(Invocation::Script(
            "scripts/storage_per_host.sh".into(),
            vec![]
        ))
    );
    assert_eq!(
        parse("ExecStart=/usr/local/bin/reveal-exporter --web.listen-address=127.0.0.1:19190"),
        Some(Invocation::Binary(
            "reveal-exporter".into(),
            vec!["--web.listen-address=127.0.0.1:19190".into()]
        ))
    );
    assert_eq!(
        parse("reveal-analyzer compare a.jsonl b.jsonl [--json]"),
        Some(Invocation::Binary(
            "reveal-analyzer".into(),
            vec![
                "compare".into(),
                "a.jsonl".into(),
                "b.jsonl".into(),
                "--json".into()
            ]
        ))
    );
    assert_eq!(parse("Usage: reveal-exporter [OPTIONS]"), None);
    assert_eq!(parse("cargo nextest run --workspace"), None);
    assert_eq!(
        parse("cargo xtask fmt --fix"),
        Some(Invocation::Binary(
            "xtask".into(),
            vec!["fmt".into(), "--fix".into()]
        ))
    );
    assert!(names("  --json  print JSON", "--json"));
    assert!(!names(
        "  --collector.gpu.pcie-throughput",
        "--collector.gpu"
    ));
    assert!(names("enable --collector.gpu.", "--collector.gpu"));
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a page's headings (outside code blocks).
fn anchors(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_fence = false;
    let mut seen: HashMap<String, usize> = HashMap::new();
    for line in text.lines() {
        if is_fence(line) {
            in_fence = !in_fence;
            continue;
        }
        if in_fence || !line.starts_with('#') {
            continue;
        }
        let s = slug(line.trim_start_matches('#'));
        let n = seen.entry(s.clone()).or_insert(0);
        out.push(if *n == 0 {
            s.clone()
        } else {
            format!("{s}-{n}")
        });
        *n += 1;
    }
    out
}

/// Link targets of a page's prose: `[text](target)`, `![alt](target)`, `[ref]: target`.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for (i, line) in text.lines().enumerate() {
        if is_fence(line) {
            in_fence = !in_fence;
            continue;
        }
        if in_fence || line.starts_with("    ") {
            continue;
        }
        let mut rest = line;
        while let Some(a) = rest.find("](") {
            let after = &rest[a + 2..];
            let Some(b) = after.find(')') else { break };
            out.push((i + 1, after[..b].trim().to_string()));
            rest = &after[b + 1..];
        }
        let t = line.trim_start();
        if t.starts_with('[') {
            if let Some((_, target)) = t.split_once("]: ") {
                out.push((i + 1, target.trim().to_string()));
            }
        }
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let mut problems = Vec::new();
    for (page, text) in pages() {
        let dir = Path::new(&page).parent().unwrap_or(Path::new(""));
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let rel = if path.is_empty() {
                PathBuf::from(&page)
            } else {
                normalize(&dir.join(path))
            };
            let rel_s = rel.to_string_lossy().into_owned();
            let file = root().join(&rel);
            if !file.exists() {
                if !PENDING_PAGES.contains(&rel_s.as_str()) {
                    problems.push(format!("{page}:{line}: {target}: no {rel_s}"));
                }
                continue;
            }
            if let (Some(anchor), true) = (anchor, rel_s.ends_with(".md")) {
                let target_text = std::fs::read_to_string(&file).unwrap();
                if !anchors(&target_text).iter().any(|a| a == anchor) {
                    problems.push(format!(
                        "{page}:{line}: {target}: no heading #{anchor} in {rel_s}"
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

/// `docs/../README.md` → `README.md`, without touching the file system.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

#[test]
fn anchors_follow_github() {
    assert_eq!(slug(" `source.prometheus`"), "sourceprometheus");
    assert_eq!(
        slug(" Many hosts, one Prometheus"),
        "many-hosts-one-prometheus"
    );
    assert_eq!(anchors("# A\n```\n# not\n```\n## A\n"), vec!["a", "a-1"]);
}
