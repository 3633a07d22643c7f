//! Remediation hints: what an operator would check first, for the known signatures of a
//! finding's strongest evidence.
//!
//! A hint is chosen from a small table keyed by the evidence's subsystem, its channel's metric
//! name (a pattern, so the exporter's names, node_exporter's and DCGM's share an entry), the
//! labels it must carry, and the direction of the move. The first row that matches wins, so
//! specific rows (NET_RX softirqs on one CPU) come before general ones (any CPU time). Label
//! values fill the row's `{label}` placeholders (`{cpu}`, `{device}`, `{node}`, `{gpu}`), so a
//! hint names the CPU, disk, node or GPU the evidence came from. Evidence with no row has no
//! hint: an alert says nothing rather than guess. The table is documented in
//! docs/detection.md ("Remediation hints").

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

/// Which way the evidence moved for a row to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    Up,
    Down,
    Either,
}

/// One row of the table.
struct Row {
    subsystem: &'static str,
    /// Anchored pattern on the channel's metric name.
    metric: &'static str,
    /// Labels the channel must carry, each with an anchored pattern on its value.
    labels: &'static [(&'static str, &'static str)],
    dir: Dir,
    text: &'static str,
}

/// The same signature under the exporter's names and node_exporter's: one text for both rows.
const REMOTE_NUMA: &str = "memory is being served across NUMA nodes{node_suffix}: bind the \
                           job's memory to the node of its CPUs (numactl --cpunodebind=N \
                           --membind=N, or the scheduler's NUMA/topology policy) and check \
                           numastat -p PID";
const RETRANSMITTING: &str = "TCP is retransmitting: packets are being lost on the path; check NIC drops and \
                              errors (ip -s link, ethtool -S), switch port counters, and MTU mismatches";

const ROWS: &[Row] = &[
    // cpu: where the work and the interrupts land.
    Row {
        subsystem: "cpu",
        metric: "reveal_cpu_softirqs_total|node_softirqs_total|node_softirqs_functions_total",
        labels: &[("cpu", ".+"), ("type", "NET_RX|NET_TX|net_rx|net_tx")],
        dir: Dir::Up,
        text: "network softirq processing rose on CPU {cpu}: if the other CPUs did not rise \
               with it, receive processing is concentrated there; check the NIC's IRQ affinity \
               (/proc/irq/*/smp_affinity_list), irqbalance, and RPS/RSS \
               (/sys/class/net/*/queues/rx-*/rps_cpus)",
    },
    Row {
        subsystem: "cpu",
        metric: "reveal_cpu_interrupts_total|reveal_cpu_irq_line_interrupts_total|node_interrupts_per_cpu|node_interrupts_total",
        labels: &[("cpu", ".+")],
        dir: Dir::Up,
        text: "interrupts rose on CPU {cpu}: if they did not rise elsewhere, a device's \
               interrupts are concentrated there; check IRQ affinity \
               (/proc/irq/*/smp_affinity_list) and irqbalance",
    },
    // The busiest CPU, as the deploy metric sets read per-CPU series: interrupt work rising
    // there is concentrated on one CPU unless the host total rose with it.
    Row {
        subsystem: "cpu",
        metric: "(reveal|node)_cpu_time_ratio_busiest_cpu",
        labels: &[("mode", "softirq|irq")],
        dir: Dir::Up,
        text: "interrupt processing rose on the busiest CPU: if the host's total did not rise \
               with it, interrupts or receive processing are concentrated on one CPU; check \
               IRQ affinity (/proc/irq/*/smp_affinity_list), irqbalance, and RPS/RSS \
               (/sys/class/net/*/queues/rx-*/rps_cpus)",
    },
    Row {
        subsystem: "cpu",
        metric: "(reveal|node)_(cpu_)?interrupts_rate_busiest_cpu",
        labels: &[],
        dir: Dir::Up,
        text: "interrupts rose on the busiest CPU: if the host's total did not rise with it, a \
               device's interrupts are concentrated there; check IRQ affinity \
               (/proc/irq/*/smp_affinity_list) and irqbalance",
    },
    Row {
        subsystem: "cpu",
        metric: "reveal_cpu_time_seconds_total|node_cpu_seconds_total|(reveal|node)_cpu_busy_cores|(reveal|node)_cpu_time_ratio_(busiest|quietest)_cpu",
        labels: &[("mode", "steal")],
        dir: Dir::Up,
        text: "the hypervisor is taking CPU time from this machine (steal): check the host's \
               oversubscription or move the job to a dedicated instance",
    },
    Row {
        subsystem: "cpu",
        metric: "reveal_cpu_time_seconds_total|node_cpu_seconds_total|(reveal|node)_cpu_busy_cores|(reveal|node)_cpu_time_ratio_(busiest|quietest)_cpu",
        labels: &[("mode", "iowait")],
        dir: Dir::Up,
        text: "CPUs are waiting on I/O: see the storage evidence; check which process reads or \
               writes (pidstat -d 1, iotop)",
    },
    Row {
        subsystem: "cpu",
        metric: "reveal_cpu_time_seconds_total|node_cpu_seconds_total|(reveal|node)_cpu_busy_cores|(reveal|node)_cpu_time_ratio_(busiest|quietest)_cpu|reveal_cpu_busy_ratio|reveal_cpu_procs_running|node_procs_running",
        labels: &[],
        dir: Dir::Up,
        text: "CPU demand rose: check what runs (top -H, pidstat 1), whether jobs share cores they \
               were meant to have alone, and cgroup CPU limits (cpu.max) that throttle them",
    },
    Row {
        subsystem: "cpu",
        metric: "reveal_cpu_busy_frequency_hertz|reveal_cpu_frequency_hertz(_fastest_cpu|_slowest_cpu)?|node_cpu_scaling_frequency_hertz(_fastest_cpu|_slowest_cpu)?",
        labels: &[],
        dir: Dir::Down,
        text: "CPU clocks fell: check the frequency governor (cpupower frequency-info), thermal \
               throttling (temperatures, turbostat) and power capping (RAPL limits)",
    },
    Row {
        subsystem: "cpu",
        metric: "reveal_cpu_context_switches_total|node_context_switches_total|reveal_cpu_forks_total|node_forks_total|reveal_cpu_migrations_total",
        labels: &[],
        dir: Dir::Up,
        text: "scheduler churn rose (context switches, forks or migrations): look for a process \
               spawning in a loop or threads contending on a lock (pidstat -w 1, perf sched)",
    },
    Row {
        subsystem: "cpu",
        metric: "reveal_cpu_l3_miss_stall_cycles_per_cycle|reveal_cpu_instructions_per_cycle",
        labels: &[],
        dir: Dir::Either,
        text: "cycles are going to memory stalls: check memory placement (numastat -p PID) and \
               other jobs that share the socket's memory bandwidth",
    },
    // memory
    Row {
        subsystem: "memory",
        metric: "reveal_memory_numa_events_total",
        labels: &[("event", "numa_miss|numa_foreign|other_node")],
        dir: Dir::Up,
        text: REMOTE_NUMA,
    },
    Row {
        subsystem: "memory",
        metric: "node_memory_numa_(numa_miss|numa_foreign|other_node)_total",
        labels: &[],
        dir: Dir::Up,
        text: REMOTE_NUMA,
    },
    Row {
        subsystem: "memory",
        metric: "reveal_memory_(numa_)?hugepages(_pool)?|reveal_memory_numa_meminfo_hugepages|node_memory_HugePages_.*",
        labels: &[],
        dir: Dir::Either,
        text: "the HugePages pool{node_suffix} differs from what it was (or from the other \
               hosts): check vm.nr_hugepages and /sys/devices/system/node/node*/hugepages on \
               this host against its peers",
    },
    Row {
        subsystem: "memory",
        metric: "reveal_memory_(dirty|writeback)_bytes|node_memory_(Dirty|Writeback)_bytes",
        labels: &[],
        dir: Dir::Up,
        text: "dirty pages are piling up faster than they are written back: a buffered writer \
               (checkpoints, logs); check it and vm.dirty_background_ratio / vm.dirty_ratio",
    },
    Row {
        subsystem: "memory",
        metric: "reveal_memory_vmstat_events_total",
        labels: &[("event", "pswpin|pswpout|pgscan_kswapd|pgsteal_kswapd|compact_stall|pgmajfault")],
        dir: Dir::Up,
        text: "memory is under reclaim pressure (paging, reclaim or compaction): check the \
               largest resident processes and their cgroups' memory limits",
    },
    Row {
        subsystem: "memory",
        metric: "reveal_memory_utilization|node_memory_utilization|reveal_memory_anon_pages_bytes|node_memory_AnonPages_bytes|reveal_memory_committed_as_bytes",
        labels: &[],
        dir: Dir::Up,
        text: "a process is taking memory (anonymous pages grew): check the largest resident \
               processes (ps -eo rss,cmd --sort=-rss) and cgroup memory limits before the OOM \
               killer does",
    },
    Row {
        subsystem: "memory",
        metric: "reveal_memory_(mem_available|mem_free|cached)_bytes|node_memory_(MemAvailable|MemFree|Cached)_bytes",
        labels: &[],
        dir: Dir::Down,
        text: "free memory and page cache fell: something took memory; check the largest \
               resident processes and cgroup memory limits",
    },
    // storage
    Row {
        subsystem: "storage",
        metric: "reveal_storage_(read|written)_bytes_total|node_disk_(read|written)_bytes_total|reveal_storage_(reads|writes)_(completed|merged)_total",
        labels: &[("device", ".+")],
        dir: Dir::Up,
        text: "I/O on {device} rose: check which process reads or writes (pidstat -d 1, \
               iotop); checkpoints and data loading share the disk with everything else",
    },
    Row {
        subsystem: "storage",
        metric: "reveal_storage_.*time_seconds_total|node_disk_io_time_seconds_total|reveal_storage_io_in_progress|node_pressure_io_stalled_seconds_total",
        labels: &[],
        dir: Dir::Up,
        text: "storage{device_suffix} is saturated (requests queue up): check iostat -x 1 for \
               its utilization and latency, and which process drives it",
    },
    // network
    Row {
        subsystem: "network",
        metric: "reveal_network_protocol_events_total",
        labels: &[("field", "RetransSegs|TCPLostRetransmit|TCPTimeouts")],
        dir: Dir::Up,
        text: RETRANSMITTING,
    },
    Row {
        subsystem: "network",
        metric: "node_netstat_(Tcp_RetransSegs|TcpExt_TCPTimeouts|TcpExt_TCPLostRetransmit)",
        labels: &[],
        dir: Dir::Up,
        text: RETRANSMITTING,
    },
    Row {
        subsystem: "network",
        metric: "reveal_network_(receive|transmit)_(drops|errors|fifo_errors|frame_errors)_total|node_network_(receive|transmit)_(drop|errs|fifo|frame)_total|node_softnet_(dropped|times_squeezed)_total",
        labels: &[],
        dir: Dir::Up,
        text: "the host drops or errs on packets{device_suffix}: check the NIC's ring sizes \
               (ethtool -g), its error counters (ethtool -S), and softnet backlog \
               (/proc/net/softnet_stat)",
    },
    Row {
        subsystem: "network",
        metric: "reveal_network_infiniband_.*",
        labels: &[],
        dir: Dir::Up,
        text: "InfiniBand port counters rose{device_suffix}: check the port's error and wait \
               counters (perfquery, ibdiagnet) and the link's state and width (ibstat)",
    },
    Row {
        subsystem: "network",
        metric: "reveal_network_(receive|transmit)_(bytes|packets)_total|node_network_(receive|transmit)_(bytes|packets)_total|reveal_network_infiniband_(receive|transmit)_bytes_total",
        labels: &[],
        dir: Dir::Down,
        text: "throughput{device_suffix} fell while nothing erred: look for a per-flow limit \
               (one connection or queue pair where several were meant, e.g. NCCL's \
               NCCL_IB_QPS_PER_CONNECTION / NCCL_NSOCKS_PERTHREAD), a rate limit, or a \
               slower peer",
    },
    Row {
        subsystem: "network",
        metric: "reveal_network_(receive|transmit)_(bytes|packets)_total|node_network_(receive|transmit)_(bytes|packets)_total",
        labels: &[],
        dir: Dir::Up,
        text: "traffic{device_suffix} rose: check which flows (ss -tin, iftop) and whether it \
               competes with the job's own",
    },
    // gpu
    Row {
        subsystem: "gpu",
        metric: "reveal_gpu_pcie_link_(width|generation)|DCGM_FI_DEV_PCIE_LINK_(WIDTH|GEN)",
        labels: &[],
        dir: Dir::Down,
        text: "GPU {gpu}'s PCIe link trained below its maximum: check the slot, riser and cable \
               (nvidia-smi -q -d PCIE; lspci -vv LnkSta)",
    },
    Row {
        subsystem: "gpu",
        metric: "reveal_gpu_(power_watts|clock_hertz)|DCGM_FI_DEV_(POWER_USAGE|SM_CLOCK|MEM_CLOCK)",
        labels: &[],
        dir: Dir::Down,
        text: "GPU {gpu}'s power or clocks fell: check power caps and clock locks \
               (nvidia-smi -q -d PERFORMANCE,POWER,CLOCK for throttle reasons) and its \
               temperature",
    },
    Row {
        subsystem: "gpu",
        metric: "reveal_gpu_throttle_reason|DCGM_FI_DEV_(THERMAL|POWER)_VIOLATION",
        labels: &[],
        dir: Dir::Up,
        text: "GPU {gpu} is being throttled: nvidia-smi -q -d PERFORMANCE names the reason \
               (power cap, thermal, applications clocks)",
    },
    Row {
        subsystem: "gpu",
        metric: "reveal_gpu_(ecc_errors_total|retired_pages_total|nvlink_errors_total)|DCGM_FI_DEV_(ECC_.*|.*REMAPPED_ROWS|XID_ERRORS.*|ROW_REMAP_FAILURE|PCIE_REPLAY_COUNTER)",
        labels: &[],
        dir: Dir::Up,
        text: "GPU {gpu} reports hardware errors: check nvidia-smi -q -d ECC,ROW_REMAPPER and \
               the kernel log for Xid messages; drain the GPU if they continue",
    },
    Row {
        subsystem: "gpu",
        metric: "reveal_gpu_utilization_ratio|DCGM_FI_DEV_GPU_UTIL|DCGM_FI_PROF_(SM_ACTIVE|GR_ENGINE_ACTIVE)",
        labels: &[],
        dir: Dir::Down,
        text: "GPU {gpu} went idle while the job ran: it is waiting on input, the network or \
               the CPU; see the other subsystems' evidence",
    },
];

/// A row's metric pattern and label patterns, compiled and anchored.
type Compiled = (Regex, Vec<(&'static str, Regex)>);

/// Compiled once, in the order of [`ROWS`].
static COMPILED: LazyLock<Vec<Compiled>> = LazyLock::new(|| {
    ROWS.iter()
        .map(|r| {
            let anchored = |p: &str| Regex::new(&format!("^(?:{p})$")).expect("valid hint pattern");
            (
                anchored(r.metric),
                r.labels.iter().map(|(k, p)| (*k, anchored(p))).collect(),
            )
        })
        .collect()
});

/// The hint for evidence on `channel` (`metric{label="value",…}`, as channels are named) of
/// `subsystem` that moved up (`up`) or down; `None` when no row matches.
pub fn hint(subsystem: &str, channel: &str, up: bool) -> Option<String> {
    row_of(subsystem, channel, up).map(|(_, text)| text)
}

/// The first row matching the evidence, with its index in the table, and its text filled.
fn row_of(subsystem: &str, channel: &str, up: bool) -> Option<(usize, String)> {
    let (metric, labels) = parse_channel(channel);
    let dir = if up { Dir::Up } else { Dir::Down };
    ROWS.iter()
        .zip(COMPILED.iter())
        .position(|(row, (m, ls))| {
            row.subsystem == subsystem
                && (row.dir == Dir::Either || row.dir == dir)
                && m.is_match(metric)
                && ls
                    .iter()
                    .all(|(k, p)| labels.get(*k).is_some_and(|v| p.is_match(v)))
        })
        .map(|i| (i, fill(ROWS[i].text, &labels)))
}

/// Of several pieces of evidence of one finding (`(channel, moved up)`, of `subsystem`), the
/// one whose hint is the most specific — its row comes first in the table — and that hint.
/// A finding whose evidence is both a level and its cause (memory utilization above the
/// other hosts' and a HugePages pool unlike theirs) is explained by the cause.
pub fn most_specific<'a>(
    subsystem: &str,
    evidence: impl IntoIterator<Item = (&'a str, bool)>,
) -> Option<(usize, String)> {
    evidence
        .into_iter()
        .enumerate()
        .filter_map(|(i, (channel, up))| row_of(subsystem, channel, up).map(|(r, t)| (r, i, t)))
        .min_by_key(|(r, i, _)| (*r, *i))
        .map(|(_, i, t)| (i, t))
}

/// Fills `{label}` with the label's value and `{label_suffix}` with " (label value)" or
/// nothing, so a hint reads well with or without the label.
fn fill(text: &str, labels: &BTreeMap<String, String>) -> String {
    let mut out = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for (key, what) in [
        ("cpu", "CPU"),
        ("device", ""),
        ("node", "node"),
        ("gpu", "GPU"),
    ] {
        let value = labels.get(key).map(String::as_str);
        out = out.replace(&format!("{{{key}}}"), value.unwrap_or("?"));
        let suffix = match value {
            Some(v) if what.is_empty() => format!(" on {v}"),
            Some(v) => format!(" on {what} {v}"),
            None => String::new(),
        };
        out = out.replace(&format!("{{{key}_suffix}}"), &suffix);
    }
    // A GPU-less channel (a host-wide DCGM sum) still reads: "GPU ?'s" becomes "a GPU's".
    out.replace("GPU ?'s", "a GPU's")
        .replace("GPU ? ", "a GPU ")
}

/// `metric{a="x",b="y"}` → ("metric", {a: x, b: y}); quotes and backslashes in values may be
/// escaped as in the exposition format. A channel with no braces is all metric name.
fn parse_channel(channel: &str) -> (&str, BTreeMap<String, String>) {
    let Some(open) = channel.find('{') else {
        return (channel.trim(), BTreeMap::new());
    };
    let mut labels = BTreeMap::new();
    let mut rest = channel[open + 1..].chars().peekable();
    loop {
        let key: String = rest
            .by_ref()
            .skip_while(|c| *c == ',' || c.is_whitespace())
            .take_while(|c| *c != '=')
            .collect();
        if key.is_empty() || rest.next() != Some('"') {
            break;
        }
        let mut value = String::new();
        while let Some(c) = rest.next() {
            match c {
                '\\' => match rest.next() {
                    Some('n') => value.push('\n'),
                    Some(e) => value.push(e),
                    None => break,
                },
                '"' => break,
                c => value.push(c),
            }
        }
        labels.insert(key.trim().to_string(), value);
    }
    (channel[..open].trim(), labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receive_processing_on_one_cpu_names_the_cpu_and_irq_affinity() {
        let h = hint(
            "cpu",
            r#"reveal_cpu_softirqs_total{cpu="1",type="NET_RX"}"#,
            true,
        )
        .expect("a row for NET_RX on one CPU");
        assert!(
            h.starts_with("network softirq processing rose on CPU 1:"),
            "{h}"
        );
        assert!(
            h.contains("IRQ affinity") && h.contains("irqbalance"),
            "{h}"
        );
        // The same metric summed over CPUs has no CPU: the per-CPU row does not apply, and
        // no other cpu row covers softirqs, so there is no hint rather than a wrong one.
        assert_eq!(hint("cpu", "reveal_cpu_softirqs_rate", true), None);
    }

    #[test]
    fn rows_follow_the_direction_of_the_move() {
        let rx = r#"reveal_network_receive_bytes_total{device="eth0"}"#;
        let down = hint("network", rx, false).expect("throughput fell");
        assert!(down.starts_with("throughput on eth0 fell"), "{down}");
        assert!(down.contains("NCCL_IB_QPS_PER_CONNECTION"), "{down}");
        let up = hint("network", rx, true).expect("traffic rose");
        assert!(up.starts_with("traffic on eth0 rose"), "{up}");
        // Free memory rising is no fault of its own.
        assert_eq!(
            hint("memory", "reveal_memory_mem_available_bytes", true),
            None
        );
    }

    #[test]
    fn the_most_specific_hint_of_several_pieces_of_evidence_wins() {
        let util = "reveal_memory_utilization";
        let pool = r#"reveal_memory_hugepages_pool{size="1073741824",state="total"}"#;
        let (i, h) = most_specific(
            "memory",
            [(util, true), ("no_row_here", true), (pool, true)],
        )
        .expect("both have rows");
        assert_eq!(i, 2);
        assert!(h.starts_with("the HugePages pool"), "{h}");
        // Alone, the level keeps its own hint; evidence without a row has none.
        let (i, h) = most_specific("memory", [(util, true)]).unwrap();
        assert_eq!(i, 0);
        assert!(h.starts_with("a process is taking memory"), "{h}");
        assert_eq!(most_specific("memory", [("no_row_here", true)]), None);
    }

    #[test]
    fn the_busiest_cpu_rows_of_the_deploy_sets_point_at_irq_affinity() {
        for channel in [
            r#"reveal_cpu_time_ratio_busiest_cpu{job="reveal",mode="softirq"}"#,
            r#"node_cpu_time_ratio_busiest_cpu{mode="irq"}"#,
        ] {
            let h = hint("cpu", channel, true).expect(channel);
            assert!(
                h.contains("concentrated on one CPU") && h.contains("irqbalance"),
                "{h}"
            );
        }
        for channel in [
            "reveal_cpu_interrupts_rate_busiest_cpu",
            "node_interrupts_rate_busiest_cpu",
        ] {
            let h = hint("cpu", channel, true).expect(channel);
            assert!(h.contains("concentrated there"), "{h}");
        }
        // A CPU-bound load on the busiest or the quietest CPU is demand, steal is the
        // hypervisor's, and a slowest CPU falling is the clocks.
        let user = r#"reveal_cpu_time_ratio_quietest_cpu{mode="user"}"#;
        assert!(hint("cpu", user, true)
            .unwrap()
            .starts_with("CPU demand rose"));
        let steal = r#"reveal_cpu_time_ratio_busiest_cpu{mode="steal"}"#;
        assert!(hint("cpu", steal, true).unwrap().contains("hypervisor"));
        let slow = hint("cpu", "reveal_cpu_frequency_hertz_slowest_cpu", false).unwrap();
        assert!(slow.starts_with("CPU clocks fell"), "{slow}");
        // Interrupts falling on the busiest CPU is no concentration.
        assert_eq!(
            hint("cpu", "reveal_cpu_interrupts_rate_busiest_cpu", false),
            None
        );
    }

    #[test]
    fn specific_rows_win_over_general_ones() {
        let steal = hint(
            "cpu",
            r#"reveal_cpu_time_seconds_total{cpu="0",mode="steal"}"#,
            true,
        )
        .unwrap();
        assert!(steal.contains("hypervisor"), "{steal}");
        let user = hint(
            "cpu",
            r#"reveal_cpu_time_seconds_total{cpu="0",mode="user"}"#,
            true,
        )
        .unwrap();
        assert!(user.starts_with("CPU demand rose"), "{user}");
        // Busy cores by mode, as the deploy metric set reads CPU time: the same rows.
        let steal = hint(
            "cpu",
            r#"reveal_cpu_busy_cores{job="reveal",mode="steal"}"#,
            true,
        )
        .unwrap();
        assert!(steal.contains("hypervisor"), "{steal}");
        let iowait = hint("cpu", r#"node_cpu_busy_cores{mode="iowait"}"#, true).unwrap();
        assert!(iowait.starts_with("CPUs are waiting on I/O"), "{iowait}");
        let user = hint(
            "cpu",
            r#"reveal_cpu_busy_cores{job="reveal",mode="user"}"#,
            true,
        )
        .unwrap();
        assert!(user.starts_with("CPU demand rose"), "{user}");
    }

    #[test]
    fn the_same_signature_from_node_exporter_and_dcgm_gets_the_same_hint() {
        let ours = hint(
            "network",
            r#"reveal_network_protocol_events_total{protocol="Tcp",field="RetransSegs"}"#,
            true,
        );
        let theirs = hint("network", "node_netstat_Tcp_RetransSegs", true);
        assert!(ours.is_some());
        assert_eq!(ours, theirs);
        let numa = hint(
            "memory",
            r#"reveal_memory_numa_events_total{node="1",event="numa_miss"}"#,
            true,
        )
        .unwrap();
        assert!(
            numa.starts_with("memory is being served across NUMA nodes on node 1:"),
            "{numa}"
        );
        assert!(numa.contains("--membind"), "{numa}");
        let gpu = hint("gpu", r#"DCGM_FI_DEV_POWER_USAGE{gpu="3"}"#, false).unwrap();
        assert!(gpu.starts_with("GPU 3's power or clocks fell"), "{gpu}");
        let anon = hint("gpu", "DCGM_FI_DEV_POWER_USAGE", false).unwrap();
        assert!(anon.starts_with("a GPU's power"), "{anon}");
    }

    #[test]
    fn unknown_evidence_and_odd_channels_have_no_hint_and_never_panic() {
        assert_eq!(hint("cpu", "some_other_metric", true), None);
        assert_eq!(hint("other", "reveal_cpu_busy_cores", true), None);
        for odd in [
            "",
            "{",
            "x{a=",
            r#"x{a="\"}"#,
            r#"x{a="1",b}"#,
            "}{",
            "x{=\"\"}",
        ] {
            let _ = hint("cpu", odd, true);
            let _ = parse_channel(odd);
        }
        let (m, l) = parse_channel(r#"m{a="q\"x",b="line\nbreak"}"#);
        assert_eq!(m, "m");
        assert_eq!(l["a"], "q\"x");
        assert_eq!(l["b"], "line\nbreak");
    }
}
