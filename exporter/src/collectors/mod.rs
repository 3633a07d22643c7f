//! The collector table: every collector, whether it is on by default, and how it is built.
//!
//! Adding a collector means one module here, one row in [`COLLECTORS`], fixtures, a test and
//! the golden files (`REVEAL_BLESS=1 cargo test -p reveal-exporter --test golden`), and for
//! a new metric the schema catalog the analyzer reads
//! (`REVEAL_BLESS=1 cargo test -p reveal-exporter --test schema_catalog`).

use crate::error::CollectError;
use crate::paths::Paths;
use crate::scrape::{Desc, Scrape};

pub mod cgroups;
pub mod cgroups_parse;
pub mod cpufreq;
pub mod cpuidle;
pub mod diskstats;
pub mod gpu;
pub mod gpu_map;
pub mod hugepages;
pub mod hwmon;
pub mod infiniband;
pub mod interrupts;
pub mod meminfo;
pub mod msr;
pub mod netdev;
pub mod netstat;
pub mod numa;
pub mod perf;
pub mod perf_group;
pub mod pressure;
pub mod rapl;
pub mod read_budget;
pub mod sockstat;
pub mod softirqs;
pub mod stat;
pub mod sysfs_attr;
pub mod sysfs_scan;
pub mod tcpstat;
#[cfg(test)]
pub mod test_util;
pub mod tsc;
pub mod vmstat;

/// One source of metrics, updated on every scrape.
pub trait Collector: Send {
    /// The name used in `--collector.NAME` and in the self-metrics' `collector` label.
    fn name(&self) -> &'static str;
    /// Reads the host and pushes samples. An error discards what this update pushed.
    fn update(&mut self, out: &mut Scrape) -> Result<(), CollectError>;
}

/// Settings shared by all collectors, and each collector's own flags.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub paths: Paths,
    pub netdev: netdev::NetdevArgs,
    pub diskstats: diskstats::DiskstatsArgs,
    pub interrupts: interrupts::InterruptsArgs,
    pub gpu: gpu::GpuArgs,
    pub cgroups: cgroups::CgroupsArgs,
    /// The exporter's YAML configuration (`--config.file`).
    pub config: std::sync::Arc<crate::config::ExporterConfig>,
    /// The metric selection (`--metrics.selection`); `None` exposes everything.
    pub selection: Option<std::sync::Arc<crate::selection::Selection>>,
}

impl Settings {
    /// Whether a metric family is wanted: collectors skip work for families it is not.
    pub fn wants(&self, desc: &Desc) -> bool {
        match &self.selection {
            Some(s) => s.wants(desc),
            None => true,
        }
    }
}

/// A row of the collector table.
pub struct Entry {
    pub name: &'static str,
    pub default_enabled: bool,
    pub help: &'static str,
    /// Every metric family the collector can emit, for the generated metric list.
    pub metrics: &'static [&'static Desc],
    pub new: fn(&Settings) -> Box<dyn Collector>,
}

/// All collectors, in the order their metrics appear in the exposition.
pub static COLLECTORS: &[Entry] = &[Entry {
    name: "stat",
    default_enabled: true,
    help: "CPU time per CPU and mode, each CPU's busy time, context switches, forks and runnable/blocked tasks from /proc/stat",
    metrics: stat::METRICS,
    new: |s| Box::new(stat::StatCollector::new(s)),
},
Entry {
    name: "interrupts",
    default_enabled: true,
    help: "Hardware interrupts per CPU and the busiest IRQ lines from /proc/interrupts",
    metrics: interrupts::METRICS,
    new: |s| Box::new(interrupts::InterruptsCollector::new(s)),
},
Entry {
    name: "softirqs",
    default_enabled: true,
    help: "Softirqs per CPU and type from /proc/softirqs",
    metrics: softirqs::METRICS,
    new: |s| Box::new(softirqs::SoftirqsCollector::new(s)),
},
Entry {
    name: "cpufreq",
    default_enabled: true,
    help: "Current CPU frequency and the cpufreq policy limits per CPU from sysfs",
    metrics: cpufreq::METRICS,
    new: |s| Box::new(cpufreq::CpufreqCollector::new(s)),
},
Entry {
    name: "cpuidle",
    default_enabled: true,
    help: "Time in and entries into each CPU idle state per CPU from sysfs cpuidle",
    metrics: cpuidle::METRICS,
    new: |s| Box::new(cpuidle::CpuidleCollector::new(s)),
},
Entry {
    name: "rapl",
    default_enabled: true,
    help: "Energy per RAPL zone (package, core, dram, psys) from /sys/class/powercap; needs root",
    metrics: rapl::METRICS,
    new: |s| Box::new(rapl::RaplCollector::new(s)),
},
Entry {
    name: "hwmon",
    default_enabled: true,
    help: "Temperatures of hwmon sensors (CPU, memory, drives, NICs, GPUs) from /sys/class/hwmon",
    metrics: hwmon::METRICS,
    new: |s| Box::new(hwmon::HwmonCollector::new(s)),
},
Entry {
    name: "meminfo",
    default_enabled: true,
    help: "Memory usage from /proc/meminfo (sizes in bytes, HugePages_* counts)",
    metrics: meminfo::METRICS,
    new: |s| Box::new(meminfo::MeminfoCollector::new(s)),
},
Entry {
    name: "hugepages",
    default_enabled: true,
    help: "Huge page pools per page size and per NUMA node from /sys/kernel/mm/hugepages and /sys/devices/system/node",
    metrics: hugepages::METRICS,
    new: |s| Box::new(hugepages::HugepagesCollector::new(s)),
},
Entry {
    name: "vmstat",
    default_enabled: true,
    help: "Virtual memory event counters (faults, swap, reclaim scans and steals) from /proc/vmstat",
    metrics: vmstat::METRICS,
    new: |s| Box::new(vmstat::VmstatCollector::new(s)),
},
Entry {
    name: "pressure",
    default_enabled: true,
    help: "Pressure stall information: time tasks stalled on CPU, IRQs, memory and I/O from /proc/pressure",
    metrics: pressure::METRICS,
    new: |s| Box::new(pressure::PressureCollector::new(s)),
},
Entry {
    name: "cgroups",
    default_enabled: false,
    help: "CPU, memory and block I/O usage and pressure stalls per cgroup (v2, or v1 cpuacct/memory/blkio), the --collector.cgroups.top most active by CPU one by one and the rest summed (off by default: a file read per cgroup and resource, 20-30 ms per scrape for 500 cgroups on the 2-CPU development VM)",
    metrics: cgroups::METRICS,
    new: |s| Box::new(cgroups::CgroupsCollector::new(s)),
},
Entry {
    name: "numa",
    default_enabled: true,
    help: "Per-NUMA-node allocation counters (numastat) and memory usage (nodeN/meminfo) from /sys/devices/system/node",
    metrics: numa::METRICS,
    new: |s| Box::new(numa::NumaCollector::new(s)),
},
Entry {
    name: "diskstats",
    default_enabled: true,
    help: "Block device I/O counters per device from /proc/diskstats",
    metrics: diskstats::METRICS,
    new: |s| Box::new(diskstats::DiskstatsCollector::new(s)),
},
Entry {
    name: "netdev",
    default_enabled: true,
    help: "Traffic and error counters per network interface from /proc/net/dev",
    metrics: netdev::METRICS,
    new: |s| Box::new(netdev::NetdevCollector::new(s)),
},
Entry {
    name: "netstat",
    default_enabled: true,
    help: "TCP/IP protocol counters (RetransSegs, ListenDrops, ...) from /proc/net/snmp, /proc/net/netstat and /proc/net/snmp6",
    metrics: netstat::METRICS,
    new: |s| Box::new(netstat::NetstatCollector::new(s)),
},
Entry {
    name: "sockstat",
    default_enabled: true,
    help: "Socket counts and buffer memory per protocol (/proc/net/sockstat, sockstat6) and TCP connections per state (/proc/net/tcp, tcp6)",
    metrics: sockstat::METRICS,
    new: |s| Box::new(sockstat::SockstatCollector::new(s)),
},
Entry {
    name: "infiniband",
    default_enabled: true,
    help: "InfiniBand port state, rate, traffic and error counters from /sys/class/infiniband",
    metrics: infiniband::METRICS,
    new: |s| Box::new(infiniband::InfinibandCollector::new(s)),
},
Entry {
    name: "tcpstat",
    default_enabled: false,
    help: "TCP connections per state from /proc/net/tcp and tcp6 (off by default: each read walks the kernel's whole connection hash table, milliseconds)",
    metrics: tcpstat::METRICS,
    new: |s| Box::new(tcpstat::TcpstatCollector::new(s)),
},
Entry {
    name: "perf",
    default_enabled: true,
    help: "Per-CPU perf counters (instructions, cycles, cache, branches, stalls, software events, raw events from --config.file); needs CAP_PERFMON",
    metrics: perf::METRICS,
    new: |s| Box::new(perf::PerfCollector::new(s)),
},
Entry {
    name: "msr",
    default_enabled: true,
    help: "turbostat counters per CPU (APERF, MPERF, TSC, SMI count) and C-state residency, from the perf msr/cstate PMUs or /dev/cpu/N/msr",
    metrics: msr::METRICS,
    new: |s| Box::new(msr::MsrCollector::new(s)),
},
Entry {
    name: "gpu",
    default_enabled: true,
    help: "NVIDIA GPUs through NVML loaded at run time (utilization, memory, power, energy, clocks, PCIe link, ECC, retired pages, throttle reasons, NVLink)",
    metrics: gpu::METRICS,
    new: |s| Box::new(gpu::GpuCollector::new(s)),
}];

/// Looks up a collector by name.
pub fn entry(name: &str) -> Option<&'static Entry> {
    COLLECTORS.iter().find(|e| e.name == name)
}
