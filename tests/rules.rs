//! The Prometheus side as checked artifacts: every rule file passes `promtool check rules`,
//! every rule has a `promtool test rules` unit test that passes, recording rules follow the
//! `level:metric:operations` convention with a comment each, and the example `prometheus.yml`
//! and `alertmanager.yml` pass their tools' config checks.

use reveal_e2e::require_tool as tool;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &str, suffix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("reading {dir}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no {suffix} files in {dir}");
    out
}

fn rule_files() -> Vec<PathBuf> {
    files("rules", ".rules.yml")
}

fn test_files() -> Vec<PathBuf> {
    files("rules/tests", ".yml")
}

/// Runs a tool, failing the test with its output unless it exits 0.
fn run_ok(cmd: &mut Command) -> String {
    let out = cmd
        .current_dir(root())
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

#[test]
fn rule_files_pass_promtool_check_rules() {
    let Some(promtool) = tool("promtool", "prometheus") else {
        return;
    };
    let text = run_ok(
        Command::new(promtool)
            .arg("check")
            .arg("rules")
            .args(rule_files()),
    );
    // promtool prints lint findings (e.g. duplicate rules) without failing: none allowed.
    assert!(
        !text.to_lowercase().contains("warning"),
        "promtool check rules warns:\n{text}"
    );
}

#[test]
fn rule_unit_tests_pass() {
    let Some(promtool) = tool("promtool", "prometheus") else {
        return;
    };
    let text = run_ok(
        Command::new(promtool)
            .arg("test")
            .arg("rules")
            .args(test_files()),
    );
    assert_eq!(
        text.matches("SUCCESS").count(),
        test_files().len(),
        "every test file must report SUCCESS:\n{text}"
    );
}

#[test]
fn example_configs_pass_their_checks() {
    if let Some(promtool) = tool("promtool", "prometheus") {
        run_ok(Command::new(promtool).args(["check", "config", "rules/prometheus.yml"]));
    }
    if let Some(amtool) = tool("amtool", "prometheus-alertmanager") {
        run_ok(Command::new(amtool).args(["check-config", "rules/alertmanager.yml"]));
    }
}

/// A rule's name and the comment lines right above it, from the rule file's text.
struct Rule {
    kind: &'static str,
    name: String,
    commented: bool,
    file: PathBuf,
}

fn rules_in(path: &Path) -> Vec<Rule> {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        for (kind, key) in [("record", "- record:"), ("alert", "- alert:")] {
            if let Some(name) = t.strip_prefix(key) {
                let commented = i > 0 && lines[i - 1].trim_start().starts_with('#');
                out.push(Rule {
                    kind,
                    name: name.trim().to_string(),
                    commented,
                    file: path.into(),
                });
            }
        }
    }
    out
}

#[test]
fn every_rule_is_named_commented_and_unit_tested() {
    let tests: String = test_files()
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    // What the unit tests exercise: the expressions of promql_expr_test and the alertnames.
    let tested_exprs: Vec<&str> = tests
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("- expr:"))
        .collect();
    let tested_alerts: Vec<&str> = tests
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("alertname:"))
        .map(str::trim)
        .collect();
    let rules: Vec<Rule> = rule_files().iter().flat_map(|p| rules_in(p)).collect();
    assert!(
        rules.len() >= 20,
        "expected the derived metrics and alerts, found {} rules",
        rules.len()
    );
    let mut problems = Vec::new();
    for r in &rules {
        let where_ = format!("{} {} in {}", r.kind, r.name, r.file.display());
        if !r.commented {
            problems.push(format!("{where_}: no comment line right above it"));
        }
        if r.kind == "record" {
            let parts: Vec<&str> = r.name.split(':').collect();
            let ok = parts.len() == 3
                && parts.iter().all(|p| {
                    !p.is_empty()
                        && p.chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                });
            if !ok {
                problems.push(format!("{where_}: not named level:metric:operations"));
            }
            let tested = tested_exprs.iter().any(|e| {
                e.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                    .any(|w| w == r.name)
            });
            if !tested {
                problems.push(format!("{where_}: no promql_expr_test evaluates it"));
            }
        } else if !tested_alerts.contains(&r.name.as_str()) {
            problems.push(format!("{where_}: no alert_rule_test names it"));
        }
    }
    assert!(
        problems.is_empty(),
        "rule problems:\n{}",
        problems.join("\n")
    );
}

/// The rule table of docs/metrics.md, generated from the rule files: the rule, its kind and the
/// comment above it.
fn readme_rule_table() -> String {
    let mut out = String::from("| rule | kind | what it is |\n| --- | --- | --- |\n");
    for path in rule_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let t = line.trim_start();
            let Some((kind, name)) = t
                .strip_prefix("- record:")
                .map(|n| ("recording", n))
                .or_else(|| t.strip_prefix("- alert:").map(|n| ("alert", n)))
            else {
                continue;
            };
            // The comment block right above the rule.
            let mut j = i;
            let mut comment = Vec::new();
            while j > 0 && lines[j - 1].trim_start().starts_with('#') {
                j -= 1;
                comment.insert(0, lines[j].trim_start().trim_start_matches('#').trim());
            }
            let what = comment.join(" ").replace('|', "\\|");
            out.push_str(&format!("| `{}` | {kind} | {what} |\n", name.trim()));
        }
    }
    out
}

#[test]
fn readme_rule_table_is_current() {
    let readme_path = root().join("docs/metrics.md");
    let readme = std::fs::read_to_string(&readme_path).unwrap();
    let (begin, end) = ("<!-- rules:begin -->\n", "<!-- rules:end -->");
    let a = readme
        .find(begin)
        .expect("docs/metrics.md has <!-- rules:begin -->")
        + begin.len();
    let b = readme[a..]
        .find(end)
        .expect("docs/metrics.md has <!-- rules:end -->")
        + a;
    let want = readme_rule_table();
    if std::env::var_os("REVEAL_BLESS").is_some() {
        std::fs::write(
            &readme_path,
            format!("{}{want}{}", &readme[..a], &readme[b..]),
        )
        .unwrap();
        return;
    }
    assert_eq!(
        &readme[a..b],
        want,
        "docs/metrics.md's rule table is stale: REVEAL_BLESS=1 cargo nextest run -p reveal-e2e --test rules"
    );
}
