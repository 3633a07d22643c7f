//! Disks and network interfaces appear and vanish between scrapes (hot-plug, a container's
//! veth, a replaced NVMe): one runner, scraped after each change, must drop the series of what
//! went, expose what came, start a returning device's counters where the kernel now has them,
//! and keep every collector's success as it was.

mod common;

use common::{copy_tree, exposition_samples, fixture, runner_on};
use reveal_exporter::runner::Format;

fn edit(path: &std::path::Path, f: impl Fn(&str) -> String) {
    let text = std::fs::read_to_string(path).unwrap();
    std::fs::write(path, f(&text)).unwrap();
}

/// The value of `name{device="dev"}` in `page`, if exposed.
fn value(page: &str, name: &str, dev: &str) -> Option<f64> {
    exposition_samples(page)
        .into_iter()
        .find(|s| s.name == name && s.labels.iter().any(|(k, v)| k == "device" && v == dev))
        .map(|s| s.value)
}

/// Each collector's success value in `page`.
fn successes(page: &str) -> std::collections::BTreeMap<String, f64> {
    exposition_samples(page)
        .into_iter()
        .filter(|s| s.name == "reveal_exporter_collector_success")
        .map(|s| {
            (
                s.labels.into_iter().map(|(_, v)| v).collect::<String>(),
                s.value,
            )
        })
        .collect()
}

#[test]
fn devices_that_vanish_return_and_appear_between_scrapes() {
    let tmp = std::env::temp_dir().join(format!("reveal-devices-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    copy_tree(&fixture("vm-debian"), &tmp, &mut Vec::new());
    let (disks, nets) = (tmp.join("proc/diskstats"), tmp.join("proc/net/dev"));
    let runner = runner_on(&tmp);
    let reads = "reveal_storage_reads_completed_total";
    let rx = "reveal_network_receive_bytes_total";

    let first = runner.render_as(Format::Text);
    assert_eq!(value(&first, reads, "vda"), Some(33934.0));
    assert!(value(&first, rx, "eth0").is_some());
    let healthy = successes(&first);
    assert_eq!(healthy.get("diskstats"), Some(&1.0));
    assert_eq!(healthy.get("netdev"), Some(&1.0));

    // vda and eth0 are gone.
    let keep = |t: &str, dev: &str| {
        t.lines()
            .filter(|l| {
                !l.split_whitespace()
                    .any(|w| w == dev || w == format!("{dev}:"))
            })
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    };
    edit(&disks, |t| keep(t, "vda"));
    edit(&nets, |t| keep(t, "eth0"));
    let gone = runner.render_as(Format::Text);
    assert_eq!(value(&gone, reads, "vda"), None);
    assert_eq!(value(&gone, rx, "eth0"), None);
    assert_eq!(successes(&gone), healthy);

    // vda returns with counters started over (a replaced disk), and vdb and eth1 appear.
    edit(&disks, |t| {
        format!(
            "{t} 254       0 vda 5 0 40 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n 254      16 vdb 7 0 56 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n"
        )
    });
    edit(&nets, |t| {
        format!("{t}  eth1:    1000      10    0    0    0     0          0         0     2000      20    0    0    0     0       0          0\n")
    });
    let back = runner.render_as(Format::Text);
    assert_eq!(value(&back, reads, "vda"), Some(5.0));
    assert_eq!(value(&back, reads, "vdb"), Some(7.0));
    assert_eq!(value(&back, rx, "eth1"), Some(1000.0));
    assert_eq!(value(&back, rx, "eth0"), None);
    assert_eq!(successes(&back), healthy);
    let _ = std::fs::remove_dir_all(&tmp);
}
