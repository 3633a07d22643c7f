//! The YAML and JSON readers' messages, passed on by every configuration and answer reader,
//! quote at most an excerpt of a bad key or value. serde quotes them whole
//! (`invalid type: string "…"`, ``unknown field `…` ``): a web configuration whose first key
//! was two megabytes long made the exporter print a two-megabyte line (a fuzz input). Each
//! key and each value of a real file is replaced in turn by junk, and wherever the reader
//! refuses the file, its message must quote no more than [`EXCERPT_CHARS`] characters of it.

use std::path::{Path, PathBuf};

use reveal_schema::excerpt::EXCERPT_CHARS;

/// Longer than the 300-byte cut that backs the excerpts, so a message that quoted it whole
/// and was then cut would still fail.
const JUNK_LEN: usize = 10_000;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The text with one key or one value of one line replaced by `junk`, for every line that
/// has one (comments and blank lines left alone).
fn damaged_yaml(text: &str, junk: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let body = line.trim_start().trim_start_matches("- ");
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let indent = &line[..line.len() - body.len()];
        let mut variants = Vec::new();
        match body.split_once(':') {
            Some((key, value)) => {
                variants.push(format!("{indent}{junk}:{value}"));
                if !value.trim().is_empty() {
                    variants.push(format!("{indent}{key}: {junk}"));
                }
            }
            None => variants.push(format!("{indent}{junk}")),
        }
        for v in variants {
            let mut copy = lines.clone();
            copy[i] = &v;
            out.push(copy.join("\n") + "\n");
        }
    }
    out
}

/// A reader under test: the text in, its message out when it refuses.
type Reader<'a> = &'a dyn Fn(&str) -> Result<(), String>;

/// Runs `read` on every damaged text; returns how many it refused, after checking that each
/// refusal quotes only an excerpt of the junk.
fn check(what: &str, texts: &[String], read: Reader) -> usize {
    let too_long = "x".repeat(EXCERPT_CHARS + 1);
    let mut refused = 0;
    for t in texts {
        let Err(msg) = read(t) else { continue };
        refused += 1;
        assert!(
            !msg.contains(&too_long),
            "{what}: the message quotes more than an excerpt of the junk ({} bytes): {msg:.200}",
            msg.len()
        );
    }
    refused
}

const WEB_CONFIG: &str = "tls_server_config:\n  cert_file: a.pem\n  key_file: a.key\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n  min_version: TLS12\n  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\nhttp_server_config:\n  headers:\n    X-Frame-Options: deny\nbasic_auth_users:\n  prometheus: $2b$04$qHL4URqcBc9eR/xRBSuryeWEFoMmMrZXQnoyckBcYa7CLOrFCH4uC\n";

#[test]
fn configuration_errors_quote_only_an_excerpt_of_a_long_key_or_value() {
    let junk = "x".repeat(JUNK_LEN);
    let dir = std::env::temp_dir().join(format!("reveal-library-messages-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let selection_file = dir.join("selection.yml");
    let web = |t: &str| {
        reveal_exporter::web::config::parse(t, Path::new("/nonexistent"))
            .map(drop)
            .map_err(|e| e.to_string())
    };
    let exporter = |t: &str| reveal_exporter::config::ExporterConfig::parse(t).map(drop);
    let selection = |t: &str| {
        std::fs::write(&selection_file, t).unwrap();
        reveal_exporter::selection::Selection::load(&selection_file)
            .map(drop)
            .map_err(|e| e.to_string())
    };
    let analyzer = |t: &str| {
        reveal_analyzer::config::Config::parse(t, Path::new("analyzer.yml"))
            .map(drop)
            .map_err(|e| e.to_string())
    };
    let metric_set = |t: &str| {
        reveal_analyzer::ingest::kinds::MetricSet::parse(t, "metric-set.yml")
            .map(drop)
            .map_err(|e| e.to_string())
    };
    let cases: [(&str, String, Reader); 6] = [
        ("web configuration", WEB_CONFIG.to_string(), &web),
        (
            "exporter configuration",
            read("exporter/examples/perf-events.yml"),
            &exporter,
        ),
        (
            "selection",
            read("exporter/examples/selection.yml"),
            &selection,
        ),
        (
            "analyzer configuration",
            read("deploy/analyzer.yml"),
            &analyzer,
        ),
        (
            "analyzer configuration",
            read("analyzer/examples/analyzer.yml"),
            &analyzer,
        ),
        (
            "metric set",
            read("analyzer/tests/fixtures/real/metric-set.yml"),
            &metric_set,
        ),
    ];
    for (what, text, reader) in cases {
        let texts = damaged_yaml(&text, &junk);
        let refused = check(what, &texts, reader);
        // Most damages must be refused, or the case checks nothing.
        assert!(
            refused * 3 >= texts.len(),
            "{what}: only {refused} of {} damaged texts were refused",
            texts.len()
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn answer_and_checkpoint_errors_quote_only_an_excerpt() {
    let junk = "x".repeat(JUNK_LEN);
    let answers = [
        // A time as a string, a value as a number, an unknown status type.
        format!(
            r#"{{"status":"success","data":{{"resultType":"matrix","result":[{{"metric":{{}},"values":[["{junk}","1"]]}}]}}}}"#
        ),
        format!(
            r#"{{"status":"success","data":{{"resultType":"matrix","result":[{{"metric":{{"{junk}":1}},"values":[]}}]}}}}"#
        ),
        format!(r#"{{"status":{{"{junk}":1}}}}"#),
    ];
    let query = |t: &str| {
        reveal_analyzer::ingest::promapi::parse_query_range("up", 200, t.as_bytes())
            .map(drop)
            .map_err(|e| e.to_string())
    };
    assert_eq!(check("query answer", &answers, &query), answers.len());
    let checkpoints = [
        format!(r#"{{"version":"{junk}"}}"#),
        format!(r#"{{"{junk}":1}}"#),
    ];
    let checkpoint = |t: &str| reveal_analyzer::outputs::checkpoint::parse_checkpoint(t).map(drop);
    assert_eq!(
        check("checkpoint", &checkpoints, &checkpoint),
        checkpoints.len()
    );
}
