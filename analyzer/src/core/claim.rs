//! Plain-language claims from evidence, one wording for alerts, `replay` and `analyze`
//! ([`evidence`]): "reveal_cpu_frequency_hertz{cpu="3"} (cpu): lag-1 autocorrelation lower
//! than its baseline (z = -5.2)" — which series, its subsystem, what of it moved and which
//! way, and how far (z), as the paper's table 4 states evidence. [`describe_channel`] names
//! a channel in words (a table of the exporter's main metrics, and a readable fallback from
//! any metric name) where a sentence speaks of hosts rather than series (the cross-host
//! comparison).

/// Human name of a metric, optionally only for one label value.
struct Metric {
    name: &'static str,
    label: Option<(&'static str, &'static str)>,
    text: &'static str,
}

const fn m(name: &'static str, text: &'static str) -> Metric {
    Metric {
        name,
        label: None,
        text,
    }
}

const fn ml(
    name: &'static str,
    key: &'static str,
    value: &'static str,
    text: &'static str,
) -> Metric {
    Metric {
        name,
        label: Some((key, value)),
        text,
    }
}

const CPU_TIME: &str = "reveal_cpu_time_seconds_total";

/// The exporter's main metrics. Labels named here are not repeated in the
/// qualifier; the others are ("CPU user time (cpu 3)").
const METRICS: &[Metric] = &[
    ml(CPU_TIME, "mode", "user", "CPU user time"),
    ml(CPU_TIME, "mode", "nice", "CPU nice time"),
    ml(CPU_TIME, "mode", "system", "CPU system time"),
    ml(CPU_TIME, "mode", "idle", "CPU idle time"),
    ml(CPU_TIME, "mode", "iowait", "CPU I/O-wait time"),
    ml(CPU_TIME, "mode", "irq", "CPU interrupt time"),
    ml(CPU_TIME, "mode", "softirq", "CPU softirq time"),
    ml(CPU_TIME, "mode", "steal", "CPU steal time"),
    m(CPU_TIME, "CPU time"),
    m("reveal_cpu_context_switches_total", "context switches"),
    m("reveal_cpu_forks_total", "process creations"),
    m("reveal_cpu_procs_running", "runnable tasks"),
    m("reveal_cpu_procs_blocked", "tasks blocked on I/O"),
    m("reveal_cpu_interrupts_total", "hardware interrupts"),
    m(
        "reveal_cpu_irq_line_interrupts_total",
        "interrupts of an IRQ line",
    ),
    m("reveal_cpu_softirqs_total", "softirqs"),
    m("reveal_cpu_frequency_hertz", "CPU frequency"),
    m("reveal_cpu_aperf_cycles_total", "CPU busy cycles (APERF)"),
    m(
        "reveal_cpu_mperf_cycles_total",
        "CPU reference cycles (MPERF)",
    ),
    m(
        "reveal_cpu_idle_state_time_seconds_total",
        "CPU idle-state residency",
    ),
    m("reveal_cpu_rapl_energy_joules_total", "CPU energy (RAPL)"),
    m("reveal_cpu_temperature_celsius", "CPU temperature"),
    m("reveal_cpu_perf_event_total", "CPU hardware event count"),
    m("reveal_memory_mem_available_bytes", "available memory"),
    m("reveal_memory_mem_free_bytes", "free memory"),
    m("reveal_memory_cached_bytes", "page cache"),
    m("reveal_memory_dirty_bytes", "dirty memory"),
    m("reveal_memory_writeback_bytes", "memory under writeback"),
    m("reveal_memory_swap_free_bytes", "free swap"),
    m(
        "reveal_memory_anon_huge_pages_bytes",
        "transparent huge pages",
    ),
    m("reveal_memory_hugepages", "HugePages"),
    m("reveal_memory_vmstat_events_total", "virtual-memory events"),
    m("reveal_memory_numa_events_total", "NUMA allocation events"),
    m("reveal_storage_read_bytes_total", "disk read volume"),
    m("reveal_storage_written_bytes_total", "disk write volume"),
    m("reveal_storage_reads_completed_total", "disk reads"),
    m("reveal_storage_writes_completed_total", "disk writes"),
    m("reveal_storage_reads_merged_total", "merged disk reads"),
    m("reveal_storage_writes_merged_total", "merged disk writes"),
    m("reveal_storage_io_in_progress", "disk I/O queue depth"),
    m("reveal_storage_io_time_seconds_total", "disk busy time"),
    m(
        "reveal_storage_io_weighted_time_seconds_total",
        "disk queue time",
    ),
    m(
        "reveal_network_receive_bytes_total",
        "network receive throughput",
    ),
    m(
        "reveal_network_transmit_bytes_total",
        "network transmit throughput",
    ),
    m("reveal_network_receive_packets_total", "received packets"),
    m(
        "reveal_network_transmit_packets_total",
        "transmitted packets",
    ),
    m(
        "reveal_network_receive_drops_total",
        "dropped received packets",
    ),
    m(
        "reveal_network_transmit_drops_total",
        "dropped transmitted packets",
    ),
    m("reveal_network_receive_errors_total", "receive errors"),
    m("reveal_network_transmit_errors_total", "transmit errors"),
    m(
        "reveal_network_protocol_events_total",
        "TCP/IP protocol events",
    ),
    m("reveal_network_tcp_connections", "TCP connections"),
    m(
        "reveal_network_infiniband_receive_bytes_total",
        "InfiniBand receive throughput",
    ),
    m(
        "reveal_network_infiniband_transmit_bytes_total",
        "InfiniBand transmit throughput",
    ),
    m("reveal_gpu_utilization_ratio", "GPU utilization"),
    m(
        "reveal_gpu_memory_utilization_ratio",
        "GPU memory-bandwidth utilization",
    ),
    m("reveal_gpu_memory_used_bytes", "GPU memory used"),
    m("reveal_gpu_power_watts", "GPU power"),
    m("reveal_gpu_clock_hertz", "GPU clock"),
    m("reveal_gpu_pcie_link_width", "GPU PCIe link width"),
    m(
        "reveal_gpu_pcie_link_generation",
        "GPU PCIe link generation",
    ),
];

/// Labels that identify hardware redundantly or at length; left out of qualifiers.
const QUIET_LABELS: &[&str] = &["uuid", "model", "pci_bus_id", "chip"];

use crate::core::features::Feature;
pub use crate::core::labels::parse_channel;
use crate::core::matrix::Subsystem;

/// A readable description of a channel: "CPU user time (cpu 3)".
pub fn describe_channel(channel: &str) -> String {
    let (name, labels) = parse_channel(channel);
    let known = METRICS.iter().find(|m| {
        m.name == name
            && m.label
                .is_none_or(|(k, v)| labels.iter().any(|(lk, lv)| lk == k && lv == v))
    });
    let (text, consumed) = match known {
        Some(m) => (m.text.to_string(), m.label.map(|(k, _)| k)),
        None => (fallback_name(name), None),
    };
    // A device family's channel (`crate::core::families`): its devices are `*`, and its
    // `stat` says which view of them it is.
    let family = labels
        .iter()
        .any(|(_, v)| v == crate::core::families::ALL_DEVICES);
    let stat = labels
        .iter()
        .find(|(k, _)| family && k == crate::core::families::STAT_LABEL)
        .map(|(_, v)| v.as_str());
    let mut qualifiers: Vec<String> = labels
        .iter()
        .filter(|(k, _)| Some(k.as_str()) != consumed && !QUIET_LABELS.contains(&k.as_str()))
        .filter(|(k, v)| {
            !family
                || (v != crate::core::families::ALL_DEVICES
                    && Some(k.as_str()) != Some(crate::core::families::STAT_LABEL))
        })
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    if let Some(stat) = stat.and_then(crate::core::families::Stat::parse) {
        qualifiers.push(stat.describe().to_string());
    }
    if qualifiers.is_empty() {
        text
    } else {
        format!("{text} ({})", qualifiers.join(", "))
    }
}

/// `reveal_storage_read_time_seconds_total` → "storage read time".
fn fallback_name(name: &str) -> String {
    let mut s = name.strip_prefix("reveal_").unwrap_or(name);
    for suffix in [
        "_total", "_seconds", "_bytes", "_hertz", "_joules", "_celsius", "_ratio", "_watts",
        "_volts",
    ] {
        s = s.strip_suffix(suffix).unwrap_or(s);
    }
    let words = s.replace(['_', ':'], " ");
    let mut parts = words.split_whitespace();
    let first = match parts.next() {
        Some("cpu") => "CPU".to_string(),
        Some("gpu") => "GPU".to_string(),
        Some(w) => w.to_string(),
        None => return name.to_string(),
    };
    std::iter::once(first)
        .chain(parts.map(str::to_string))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What moved and how far: "mean level higher than its baseline (z = 6.1)"; for a family
/// channel, which view of the family it is comes first ("one device apart from the others,
/// mean level …").
pub fn movement(channel: &str, feature: Feature, z: f64) -> String {
    let dir = if z >= 0.0 { "higher" } else { "lower" };
    let what = match crate::core::families::family_stat(channel) {
        Some((_, stat)) => format!("{}, {}", stat.describe(), feature.meaning()),
        None => feature.meaning().to_string(),
    };
    format!("{what} {dir} than its baseline (z = {z:.1})")
}

/// The words of one piece of evidence, the same in an alert, in `replay` and in `analyze`:
/// "reveal_cpu_time_seconds_total{cpu="0",mode="user"} (cpu): mean level higher than its
/// baseline (z = 6.1)" — the channel as the series is named (a user can query it), its
/// subsystem, then [`movement`].
pub fn evidence(channel: &str, subsystem: Subsystem, feature: Feature, z: f64) -> String {
    format!(
        "{channel} ({}): {}",
        subsystem.as_str(),
        movement(channel, feature, z)
    )
}

/// Evidence on a device family's channel, naming the device behind it and where it stood
/// against its siblings (`sentence`, from [`crate::core::families`]): "nvme3n1 (storage):
/// 92 % busy while its 7 siblings are at 2 %; one device apart from the others, mean level
/// higher than its baseline (z = 9.1)".
pub fn device_evidence(
    device: &str,
    subsystem: Subsystem,
    sentence: &str,
    family_channel: &str,
    feature: Feature,
    z: f64,
) -> String {
    format!(
        "{device} ({}): {sentence}; {}",
        subsystem.as_str(),
        movement(family_channel, feature, z)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_names_the_series_its_subsystem_what_moved_and_how_far() {
        assert_eq!(
            evidence(
                "reveal_cpu_frequency_hertz{cpu=\"3\"}",
                Subsystem::Cpu,
                Feature::AutocorrelationLag1,
                -5.21
            ),
            "reveal_cpu_frequency_hertz{cpu=\"3\"} (cpu): lag-1 autocorrelation lower than its \
             baseline (z = -5.2)"
        );
        assert_eq!(
            device_evidence(
                "reveal_storage_io_time_seconds_total{device=\"nvme3n1\"}",
                Subsystem::Storage,
                "92 % busy while its 7 siblings are at 2 %",
                "reveal_storage_io_time_seconds_total:family_max",
                Feature::Mean,
                9.06
            ),
            "reveal_storage_io_time_seconds_total{device=\"nvme3n1\"} (storage): 92 % busy while \
             its 7 siblings are at 2 %; mean level higher than its baseline (z = 9.1)"
        );
    }

    #[test]
    fn unknown_metrics_and_features_fall_back() {
        assert_eq!(
            describe_channel("reveal_storage_flush_time_seconds_total"),
            "storage flush time"
        );
        assert_eq!(
            describe_channel("reveal_gpu_clock_hertz{clock=\"sm\",gpu=\"0\",uuid=\"GPU-1\"}"),
            "GPU clock (clock sm, gpu 0)"
        );
    }

    #[test]
    fn garbage_channel_names_never_panic() {
        for s in [
            "",
            "{",
            "}",
            "a{b",
            "a{b=\"c",
            "a{=\"x\"}",
            "a{b=\"\\",
            "x{a=\"1\",,b=\"2\"}",
            "{{{\"\"}}}",
        ] {
            let _ = describe_channel(s);
            let _ = evidence(s, Subsystem::Cpu, Feature::Mean, f64::NAN);
        }
        assert_eq!(parse_channel("m{a=\"x\\\"y\",b=\"2\"}").1.len(), 2);
    }

    proptest::proptest! {
        #[test]
        fn any_channel_text_is_described_without_panic(s in "\\PC*", z in proptest::num::f64::ANY) {
            let _ = evidence(&s, Subsystem::Memory, Feature::Maximum, z);
            let _ = describe_channel(&s);
            let (name, labels) = parse_channel(&s);
            proptest::prop_assert!(s.contains(name) || labels.is_empty());
        }
    }
}
