//! Label values come from the host's data (interface names, IRQ device names), and the kernel
//! allows characters there that end a label value or a label block: `"`, `\`, `}`. A fixture
//! with such names must still render an exposition that Prometheus' own checker reads, in
//! both formats, with each value escaped as the format says.

mod common;

use common::{copy_tree, fixture, HOST_ONLY};
use reveal_exporter::collectors::{Settings, COLLECTORS};
use reveal_exporter::paths::Paths;
use reveal_exporter::runner::{Format, Runner};
use std::io::Write;
use std::process::{Command, Stdio};

/// An interface name and an IRQ device name with every character that needs escaping (a
/// Linux interface name may hold any byte but `/`, `:`, NUL and white space).
const NIC: &str = r#"ev"il}\x"#;
const IRQ: &str = r#"dev"ice}\q"#;

fn hostile_tree() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("reveal-hostile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    copy_tree(&fixture("vm-debian"), &dir, &mut Vec::new());
    let dev = dir.join("proc/net/dev");
    let mut text = std::fs::read_to_string(&dev).unwrap();
    text.push_str(&format!(
        "{NIC:>6}: 1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n"
    ));
    std::fs::write(&dev, text).unwrap();
    let irq = dir.join("proc/interrupts");
    let mut text = std::fs::read_to_string(&irq).unwrap();
    // The busiest line of all, so the per-line series (top 16) include it.
    text.push_str(&format!(
        " 99: 999999999 999999999  PCI-MSI 1-edge      {IRQ}\n"
    ));
    std::fs::write(&irq, text).unwrap();
    dir
}

fn render(root: &std::path::Path, format: Format) -> String {
    let names: Vec<&str> = COLLECTORS
        .iter()
        .map(|e| e.name)
        .filter(|n| !HOST_ONLY.contains(n))
        .collect();
    let settings = Settings {
        paths: Paths::new(root.join("proc"), root.join("sys")),
        ..Default::default()
    };
    Runner::new(&names, &settings).unwrap().render_as(format)
}

/// The value as the exposition formats escape it: `\` → `\\`, `"` → `\"`.
fn escaped(v: &str) -> String {
    v.replace('\\', r"\\").replace('"', "\\\"")
}

#[test]
fn hostile_label_values_are_escaped_in_both_formats() {
    let root = hostile_tree();
    let text = render(&root, Format::Text);
    let om = render(&root, Format::OpenMetrics);
    let _ = std::fs::remove_dir_all(&root);
    for (name, page) in [("text", &text), ("OpenMetrics", &om)] {
        assert!(
            page.contains(&format!("device=\"{}\"", escaped(NIC))),
            "{name}: the interface's series with its name escaped"
        );
        assert!(
            page.contains(&escaped(IRQ)),
            "{name}: the IRQ line's series with its name escaped"
        );
        assert!(!page.contains(NIC), "{name}: an unescaped value");
    }
    let Some(promtool) = reveal_e2e_promtool() else {
        return;
    };
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Prometheus' `promtool`; under CI it must be there (`.ci/run` installs prometheus),
/// elsewhere its absence skips the check loudly.
fn reveal_e2e_promtool() -> Option<&'static str> {
    let found = std::path::Path::new("/usr/bin/promtool").is_file();
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "promtool missing under CI (Debian package prometheus)"
        );
        eprintln!("\n!!!!! SKIPPED: promtool not found (Debian package prometheus) !!!!!\n");
        return None;
    }
    Some("/usr/bin/promtool")
}
