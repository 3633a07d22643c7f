//! Label values come from the host's data (interface names, IRQ device names), and the kernel
//! allows characters there that end a label value or a label block: `"`, `\`, `}`. A fixture
//! with such names must still render an exposition that Prometheus' own checker reads, in
//! both formats, with each value escaped as the format says.

mod common;

use common::{copy_tree, fixture, promtool_check, require_tool, runner_on};
use reveal_exporter::runner::Format;

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
    runner_on(root).render_as(format)
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
    let Some(promtool) = require_tool("promtool", "prometheus") else {
        return;
    };
    promtool_check(&promtool, "the hostile tree", &text);
}
