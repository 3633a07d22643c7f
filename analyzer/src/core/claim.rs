//! Plain-language claims from evidence, as in the paper's table 4:
//! "CPU frequency (cpu 3) shows a lower lag-1 autocorrelation than its
//! baseline (z = −5.2): its samples follow each other less closely."
//!
//! A claim is a template over three facts: what the channel is (a table of
//! the exporter's main metrics, and a readable fallback from any metric
//! name), what the feature means and which way it moved, and how far (z).

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

pub use crate::core::labels::parse_channel;

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

/// What a feature measures, and what a move up or down means.
struct FeatureWords {
    noun: &'static str,
    up: &'static str,
    down: &'static str,
}

fn feature_words(feature: &str) -> Option<FeatureWords> {
    let w = |noun, up, down| Some(FeatureWords { noun, up, down });
    let name = feature.strip_prefix("value__").unwrap_or(feature);
    // tsfresh appends the lag selection to the ADF name: `…__autolag_"AIC"`.
    let name = name.split("__autolag_").next().unwrap_or(name);
    match name {
        "mean" => w("mean level", "", ""),
        "variance" => w(
            "within-window variance",
            ": it fluctuates more than usual",
            ": it is steadier than usual",
        ),
        "standard_deviation" => w(
            "standard deviation",
            ": it fluctuates more than usual",
            ": it is steadier than usual",
        ),
        "minimum" => w("minimum", "", ": a dip within the window"),
        "maximum" => w("maximum", ": a spike within the window", ""),
        "skewness" => w(
            "skewness",
            ": more of its mass sits in high excursions",
            ": more of its mass sits in low excursions",
        ),
        "kurtosis" => w(
            "kurtosis",
            ": rarer, larger excursions",
            ": flatter, fewer excursions",
        ),
        "linear_trend__attr_\"slope\"" => w(
            "trend",
            ": it rises faster within the window",
            ": it falls faster within the window",
        ),
        "linear_trend__attr_\"intercept\"" => w("starting level", "", ""),
        "linear_trend__attr_\"rvalue\"" => w("trend correlation", "", ""),
        "autocorrelation__lag_1" => w(
            "lag-1 autocorrelation",
            ": its samples follow each other more closely",
            ": its samples follow each other less closely",
        ),
        "augmented_dickey_fuller__attr_\"teststat\"" => w(
            "stationarity statistic (ADF)",
            ": it drifts more than usual",
            ": it reverts to its level faster than usual",
        ),
        "augmented_dickey_fuller__attr_\"pvalue\"" => w(
            "stationarity p-value (ADF)",
            ": it drifts more than usual",
            ": it reverts to its level more surely than usual",
        ),
        "mean_abs_change" => w(
            "mean absolute change",
            ": it jumps more from step to step",
            ": it moves less from step to step",
        ),
        "sum_values" => w("event count", ": a burst", ""),
        _ => None,
    }
}

/// "CPU user time (cpu 3) shows a higher within-window variance than its
/// baseline (z = 4.1): it fluctuates more than usual."
pub fn claim(channel: &str, feature: &str, z: f64) -> String {
    let who = capitalize(&describe_channel(channel));
    let higher = z >= 0.0;
    let dir = if higher { "higher" } else { "lower" };
    let z_text = format!("z = {}", format_z(z));
    match feature_words(feature) {
        Some(words) => {
            let tail = if higher { words.up } else { words.down };
            format!(
                "{who} shows a {dir} {} than its baseline ({z_text}){tail}.",
                words.noun
            )
        }
        None => format!("{who} shows a {dir} {feature} than its baseline ({z_text})."),
    }
}

/// One decimal, a true minus sign, and no "−0.0".
fn format_z(z: f64) -> String {
    if !z.is_finite() {
        return "n/a".to_string();
    }
    let r = (z * 10.0).round() / 10.0;
    if r < 0.0 {
        format!("−{:.1}", -r)
    } else {
        format!("{:.1}", r.abs())
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_four_style_claims() {
        assert_eq!(
            claim(
                "reveal_cpu_frequency_hertz{cpu=\"3\"}",
                "value__autocorrelation__lag_1",
                -5.21
            ),
            "CPU frequency (cpu 3) shows a lower lag-1 autocorrelation than its baseline \
             (z = −5.2): its samples follow each other less closely."
        );
        assert_eq!(
            claim(
                "reveal_cpu_time_seconds_total{cpu=\"0\",mode=\"user\"}",
                "value__variance",
                4.06
            ),
            "CPU user time (cpu 0) shows a higher within-window variance than its baseline \
             (z = 4.1): it fluctuates more than usual."
        );
        assert_eq!(
            claim("reveal_storage_read_bytes_total{device=\"nvme0n1\"}", "value__maximum", 7.0),
            "Disk read volume (device nvme0n1) shows a higher maximum than its baseline (z = 7.0): \
             a spike within the window."
        );
    }

    #[test]
    fn tsfresh_adf_name_with_autolag() {
        let c = claim(
            "reveal_cpu_procs_running",
            "value__augmented_dickey_fuller__attr_\"teststat\"__autolag_\"AIC\"",
            3.0,
        );
        assert_eq!(
            c,
            "Runnable tasks shows a higher stationarity statistic (ADF) than its baseline \
             (z = 3.0): it drifts more than usual."
        );
        let c = claim(
            "reveal_cpu_procs_running",
            "value__augmented_dickey_fuller__attr_\"pvalue\"__autolag_\"AIC\"",
            -2.5,
        );
        assert_eq!(
            c,
            "Runnable tasks shows a lower stationarity p-value (ADF) than its baseline \
             (z = −2.5): it reverts to its level more surely than usual."
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
        assert_eq!(
            claim("node_load1", "value__c3", -0.04),
            "Node load1 shows a lower value__c3 than its baseline (z = −0.0)."
                .replace("−0.0", "0.0")
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
            let _ = claim(s, s, f64::NAN);
        }
        assert_eq!(parse_channel("m{a=\"x\\\"y\",b=\"2\"}").1.len(), 2);
    }

    proptest::proptest! {
        #[test]
        fn any_channel_text_is_described_without_panic(s in "\\PC*", f in "\\PC*", z in proptest::num::f64::ANY) {
            let _ = claim(&s, &f, z);
            let (name, labels) = parse_channel(&s);
            proptest::prop_assert!(s.contains(name) || labels.is_empty());
        }
    }
}
