//! The claims that README.md and docs/*.md quote are claims today's analyzer can make: a
//! feature the default detectors score, in the words the analyzer uses for it, on a z scale it
//! can reach, under the subsystem the deploy metric set gives the metric. A page that quotes
//! a run from an older analyzer (a feature no longer scored, an uncompressed z of a million)
//! fails here, and is refreshed by `scripts/quickstart_demo.sh --write-docs`.

use std::path::{Path, PathBuf};

use reveal_analyzer::config::Config;
use reveal_analyzer::core::detect::scale::{compress, Z_KNEE};
use reveal_analyzer::core::detect::DetectorsConfig;
use reveal_analyzer::core::families::Stat;
use reveal_analyzer::core::features::Feature;
use reveal_analyzer::core::matrix::MetricType;
use reveal_analyzer::ingest::kinds::MetricSet;
use reveal_analyzer::ingest::prometheus::by_channel_name;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// README.md and every page directly in docs/ (the run-by-run history in docs/evaluation/
/// quotes old analyzers on purpose).
fn pages() -> Vec<(String, String)> {
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("page");
            (p.display().to_string(), text)
        })
        .collect()
}

/// A quoted claim: `<channel> (<subsystem>): <what> <higher|lower> than its baseline (z = <z>)`.
#[derive(Debug)]
struct Quoted {
    channel: String,
    /// None in the offline reports' sentence of earlier releases ("<who> shows a <dir>
    /// <what>"), which the analyzer no longer writes: every claim names its subsystem now.
    subsystem: Option<String>,
    what: String,
    higher: bool,
    z: f64,
}

/// Every claim quoted on a line of `text`.
fn quoted(text: &str) -> Vec<Quoted> {
    const TAIL: &str = " than its baseline (z = ";
    let mut out = Vec::new();
    for line in text.lines() {
        let mut rest = line;
        while let Some(at) = rest.find(TAIL) {
            let (head, tail) = rest.split_at(at);
            let tail = &tail[TAIL.len()..];
            rest = tail;
            let Some(close) = tail.find(')') else {
                continue;
            };
            let Ok(z) = tail[..close].replace('−', "-").parse::<f64>() else {
                continue;
            };
            // Earlier releases' offline sentence: "<who> shows a <dir> <what>".
            if let Some(at) = head.rfind(" shows a ") {
                if let Some((dir, what)) = head[at + 9..].split_once(' ') {
                    if dir == "higher" || dir == "lower" {
                        out.push(Quoted {
                            channel: head[..at].rsplit('|').next().unwrap_or("").trim().into(),
                            subsystem: None,
                            what: what.to_string(),
                            higher: dir == "higher",
                            z,
                        });
                        continue;
                    }
                }
            }
            // "<channel> (<subsystem>): <what> <dir>"
            let Some(colon) = head.rfind("): ") else {
                continue;
            };
            let (before, what_dir) = (&head[..colon], &head[colon + 3..]);
            let Some(open) = before.rfind(" (") else {
                continue;
            };
            let subsystem = &before[open + 2..];
            let channel = before[..open].rsplit(' ').next().unwrap_or_default();
            let (what, dir) = match what_dir.rsplit_once(' ') {
                Some(p) => p,
                None => continue,
            };
            if dir != "higher" && dir != "lower" {
                continue;
            }
            out.push(Quoted {
                channel: channel.trim_start_matches(['`', '"', ' ']).to_string(),
                subsystem: Some(subsystem.to_string()),
                what: what.to_string(),
                higher: dir == "higher",
                z,
            });
        }
    }
    out
}

/// The words the default detectors' claims can use for a feature, with a family's view
/// ("one device apart from the others, mean level") or without.
fn vocabulary() -> Vec<String> {
    let set = DetectorsConfig::default();
    let features = set.features(Default::default());
    let mut scored: Vec<Feature> = Feature::DYNAMIC
        .into_iter()
        .chain(Feature::EVENT)
        .chain(Feature::STATIC)
        .filter(|f| set.scores(*f))
        .collect();
    scored.push(if features.adf_pvalue {
        Feature::AdfPvalue
    } else {
        Feature::AdfTeststat
    });
    let mut words: Vec<String> = scored.iter().map(|f| f.meaning().to_string()).collect();
    for s in Stat::ALL {
        for f in &scored {
            words.push(format!("{}, {}", s.describe(), f.meaning()));
        }
    }
    words
}

#[test]
fn quoted_claims_are_ones_the_analyzer_makes_today() {
    let words = vocabulary();
    let config = Config::load(&root().join("deploy/analyzer.yml")).expect("deploy/analyzer.yml");
    let set = MetricSet::new(&by_channel_name(&config.metrics), "deploy/analyzer.yml")
        .expect("metric set");
    // The largest |z| a claim can show: deviations are compressed beyond the knee.
    let most = compress(f64::MAX);
    assert!(most > Z_KNEE);
    let mut seen = 0;
    let mut wrong = Vec::new();
    for (page, text) in pages() {
        for q in quoted(&text) {
            seen += 1;
            let metric = q.channel.split('{').next().unwrap_or_default();
            let (sub, _) = set.classify(metric, MetricType::Gauge);
            let mut why = Vec::new();
            if q.subsystem.is_none() {
                why.push(
                    "the offline wording of earlier releases (today every claim reads \
                     `<series> (<subsystem>): <what> <higher|lower> than its baseline (z = …)`)"
                        .to_string(),
                );
            } else if !words.contains(&q.what) {
                why.push(format!("\"{}\" is no feature the detectors score", q.what));
            }
            if q.z.abs() > most {
                why.push(format!(
                    "z = {} is beyond the largest a claim shows ({most:.0})",
                    q.z
                ));
            }
            if q.higher != (q.z >= 0.0) {
                why.push("its direction and the sign of z disagree".into());
            }
            if let Some(claimed) = q.subsystem.as_deref().filter(|c| *c != sub.as_str()) {
                why.push(format!(
                    "{metric} is a {} metric, not {claimed}",
                    sub.as_str()
                ));
            }
            if !why.is_empty() {
                wrong.push(format!(
                    "{page}: {} ({}): {}",
                    q.channel,
                    q.what,
                    why.join("; ")
                ));
            }
        }
    }
    // The offline example (docs/offline.md) and the alert fields (docs/analyzer-config.md)
    // quote claims whatever run the README shows.
    assert!(
        seen >= 2,
        "the docs quote claims, and this test found only {seen}"
    );
    assert!(
        wrong.is_empty(),
        "claims the analyzer no longer makes (refresh with scripts/quickstart_demo.sh \
         --write-docs):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn an_old_claim_is_caught() {
    let words = vocabulary();
    let old = "FIRING memory: reveal_memory_writeback_bytes{job=\"reveal\"} (memory): \
               within-window variance higher than its baseline (z = 1000000.0)";
    let q = quoted(old);
    assert_eq!(q.len(), 1, "{q:?}");
    assert_eq!(
        q[0].channel,
        "reveal_memory_writeback_bytes{job=\"reveal\"}"
    );
    assert_eq!(q[0].subsystem.as_deref(), Some("memory"));
    assert!(
        !words.contains(&q[0].what),
        "the variance is not scored by default"
    );
    assert!(q[0].z > compress(f64::MAX));
    let today = "x reveal_cpu_busy_cores{job=\"reveal\",mode=\"user\"} (cpu): mean level higher \
                 than its baseline (z = 38.0); reveal_storage_io_time_seconds_total{device=\"*\",\
                 stat=\"spread\"} (storage): one device apart from the others, mean level higher \
                 than its baseline (z = 4.1)";
    let q = quoted(today);
    assert_eq!(q.len(), 2, "{q:?}");
    assert!(q.iter().all(|q| words.contains(&q.what)), "{q:?}");
    let offline = "| 41 | Z | Memory | `x` | Dirty memory shows a higher within-window variance \
                   than its baseline (z = 7829.4): it fluctuates more than usual. |";
    let q = quoted(offline);
    assert_eq!(q.len(), 1, "{q:?}");
    assert_eq!(
        (q[0].what.as_str(), q[0].subsystem.as_deref()),
        ("within-window variance", None)
    );
}
