//! Bad input never panics: each case copies the `vm-debian` tree, damages one file the way a
//! partial read, a newer kernel or a broken driver could (truncation, lost or repeated lines,
//! an extra column, junk numbers, binary noise), runs every collector on it and checks that
//! the scrape still renders a well-formed exposition with a success value per collector.
//! Seeded, so a failure names the case that reproduces it.

mod common;

use common::{copy_tree, exposition_samples, fixture, runner_on, HOST_ONLY};
use reveal_exporter::collectors::{Settings, COLLECTORS};
use reveal_exporter::paths::Paths;
use reveal_exporter::runner::{Format, Runner};

/// xorshift64*: a deterministic generator, enough to pick cases.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const JUNK: &[&str] = &[
    "x",
    "-1",
    "18446744073709551616",
    "NaN",
    "1e400",
    "",
    ":",
    "\u{fffd}",
    "0x10",
    "  ",
];

fn damage(text: &str, rng: &mut Rng) -> (String, String) {
    let lines: Vec<&str> = text.lines().collect();
    let pick = rng.below(lines.len());
    match rng.below(7) {
        0 => {
            let mut cut = rng.below(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            (text[..cut].to_string(), format!("truncated at byte {cut}"))
        }
        1 => {
            let mut l = lines.clone();
            if !l.is_empty() {
                l.remove(pick);
            }
            (l.join("\n") + "\n", format!("line {} removed", pick + 1))
        }
        2 => {
            let mut l = lines.clone();
            if !l.is_empty() {
                l.insert(pick, lines[pick]);
            }
            (l.join("\n") + "\n", format!("line {} repeated", pick + 1))
        }
        3 => {
            let mut l: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
            if let Some(s) = l.get_mut(pick) {
                s.push_str(" 42");
            }
            (
                l.join("\n") + "\n",
                format!("column added to line {}", pick + 1),
            )
        }
        4 => {
            // Replace one whitespace-separated token with junk.
            let junk = JUNK[rng.below(JUNK.len())];
            let mut l: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
            if let Some(s) = l.get_mut(pick) {
                let mut toks: Vec<&str> = s.split_whitespace().collect();
                if !toks.is_empty() {
                    let i = rng.below(toks.len());
                    toks[i] = junk;
                }
                *s = toks.join(" ");
            }
            (
                l.join("\n") + "\n",
                format!("a token of line {} replaced by {junk:?}", pick + 1),
            )
        }
        5 => (String::new(), "emptied".to_string()),
        _ => {
            let noise: String = (0..64).map(|_| char::from(rng.below(256) as u8)).collect();
            (noise, "replaced by noise".to_string())
        }
    }
}

#[test]
fn damaged_files_never_panic() {
    let cases: usize = std::env::var("REVEAL_GARBAGE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let tmp = std::env::temp_dir().join(format!("reveal-garbage-{}", std::process::id()));
    let mut files = Vec::new();
    copy_tree(&fixture("vm-debian"), &tmp, &mut files);
    files.sort();
    let collectors = COLLECTORS
        .iter()
        .filter(|e| !HOST_ONLY.contains(&e.name))
        .count();
    let mut rng = Rng(0x5EED_2024_0521_0001);
    for case in 0..cases {
        let file = &files[rng.below(files.len())];
        let original = std::fs::read_to_string(file).unwrap();
        let (damaged, how) = damage(&original, &mut rng);
        std::fs::write(file, &damaged).unwrap();
        let rel = file.strip_prefix(&tmp).unwrap().display().to_string();
        // A fresh runner (first scrape) and a second scrape of the same runner.
        let runner = runner_on(&tmp);
        for scrape in 1..=2 {
            let text = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                runner.render_as(Format::Text)
            }))
            .unwrap_or_else(|_| panic!("case {case}: {rel} {how}: scrape {scrape} panicked"));
            let samples = std::panic::catch_unwind(|| exposition_samples(&text))
                .unwrap_or_else(|_| panic!("case {case}: {rel} {how}: unreadable exposition"));
            let successes = samples
                .iter()
                .filter(|s| s.name == "reveal_exporter_collector_success");
            assert_eq!(successes.count(), collectors, "case {case}: {rel} {how}");
        }
        std::fs::write(file, &original).unwrap();
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

/// Positional files (a value's meaning is its column): a line with a column more or less than
/// any layout the kernel has used must fail its collector, not shift values into wrong names.
#[test]
fn positional_files_with_an_unknown_column_count_fail_their_collector() {
    let tmp = std::env::temp_dir().join(format!("reveal-columns-{}", std::process::id()));
    let mut files = Vec::new();
    copy_tree(&fixture("vm-debian"), &tmp, &mut files);
    let settings = Settings {
        paths: Paths::new(tmp.join("proc"), tmp.join("sys")),
        ..Default::default()
    };
    // (file, collector, which lines are positional data lines, columns removable too?)
    type LineFilter = fn(usize, &str) -> bool;
    let cases: &[(&str, &str, LineFilter, bool)] = &[
        ("proc/diskstats", "diskstats", |_, _| true, true),
        ("proc/net/dev", "netdev", |i, _| i >= 2, true),
        // 9 columns is a real layout (2.6.24 to 2.6.32), so only an added one is unknown.
        (
            "proc/stat",
            "stat",
            |_, l| l.starts_with("cpu") && !l.starts_with("cpu "),
            false,
        ),
    ];
    for (rel, collector, is_data, can_remove) in cases {
        let path = tmp.join(rel);
        let original = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = original.lines().collect();
        let mut checked = 0;
        for (i, line) in lines.iter().enumerate().filter(|(i, l)| is_data(*i, l)) {
            let mut edits = vec![(format!("{line} 7"), "a column added")];
            if *can_remove {
                let cut = line
                    .trim_end()
                    .rsplit_once(' ')
                    .map_or("", |(a, _)| a)
                    .to_string();
                edits.push((cut, "the last column removed"));
            }
            for (edited, how) in edits {
                let mut l: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
                l[i] = edited;
                std::fs::write(&path, l.join("\n") + "\n").unwrap();
                let runner = Runner::new(&[collector], &settings).unwrap();
                let samples = exposition_samples(&runner.render_as(Format::Text));
                let ok = samples
                    .iter()
                    .find(|s| s.name == "reveal_exporter_collector_success")
                    .map(|s| s.value);
                assert_eq!(
                    ok,
                    Some(0.0),
                    "{rel} line {}: {how}: {collector} must fail",
                    i + 1
                );
                let own = samples
                    .iter()
                    .filter(|s| !reveal_exporter::runner::is_self_metric(&s.name))
                    .count();
                assert_eq!(own, 0, "{rel} line {}: {how}: samples exposed", i + 1);
                checked += 1;
            }
        }
        assert!(checked > 0, "{rel}: no data lines found");
        std::fs::write(&path, &original).unwrap();
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
