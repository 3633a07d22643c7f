//! A wide training node, as the analyzer receives it from Prometheus: 96 CPUs, 8 GPUs, 8 NVMe
//! disks, 4 InfiniBand ports and 2 NUMA nodes at 100 ms, in the shape of the big-host fixture
//! (`scripts/big_host_fixture.py`: the same device names and counts), with a training job's
//! rhythm and a host's routines, and per-device faults (`faults`).
//!
//! What the job does, every step of about 1.2 s: the GPUs compute (utilization high, power
//! following it), then all-reduce over the four IB ports together (traffic bursts on every
//! port at once), while 64 data-loader CPUs (8 per GPU) stay 40–70 % busy. Routines: every
//! 90 s all eight disks read a data shard together for 5 s (busy 60 %); every 60 s one
//! CPU-bound cron job takes one CPU for 8 s. Noise on everything.
//!
//! Channels are what the default metric set's `rate()` expressions return (per-second gauges),
//! named as the exporter names its series: `reveal_cpu_time_seconds_total{cpu="17",mode="user"}`.
//! Used by `tests/wide_host.rs` and `examples/wide_host.rs`; asserts nothing itself.

use ndarray::Array2;
use reveal_analyzer::core::matrix::{Channel, HostMatrix, Kind, MetricType, Subsystem};

pub const CPUS: usize = 96;
pub const GPUS: usize = 8;
pub const DISKS: usize = 8;
pub const PORTS: usize = 4;
pub const NODES: usize = 2;
pub const STEP_MS: i64 = 100;

/// One injected fault: what it is, when, and what a correct finding says.
#[derive(Debug, Clone)]
pub struct Fault {
    pub name: &'static str,
    pub start_ms: i64,
    pub end_ms: i64,
    pub subsystem: Subsystem,
    /// Strings of which the finding's claims must hold one to name the device (none when the
    /// fault is on every device): the device's name in a sentence, or its label.
    pub device: &'static [&'static str],
}

/// The faults, each `len_s` long, the first at `first_s`, one every `every_s`.
pub fn faults(t0: i64, first_s: i64, every_s: i64, len_s: i64) -> Vec<Fault> {
    let kinds: [(&str, Subsystem, &[&str]); 7] = [
        ("gpu5_throttled", Subsystem::Gpu, &["gpu 5", "gpu=\"5\""]),
        (
            "irqs_on_4_cpus",
            Subsystem::Cpu,
            &[
                "cpu 0",
                "cpu 1",
                "cpu 2",
                "cpu 3",
                "cpu=\"0\"",
                "cpu=\"1\"",
                "cpu=\"2\"",
                "cpu=\"3\"",
            ],
        ),
        ("nvme3n1_slow", Subsystem::Storage, &["nvme3n1"]),
        ("ib_mlx5_2_errors", Subsystem::Network, &["mlx5_2"]),
        (
            "numa_node1_remote",
            Subsystem::Memory,
            &["node 1", "node=\"1\""],
        ),
        ("cpu_saturation", Subsystem::Cpu, &[]),
        ("gpu7_off_the_bus", Subsystem::Gpu, &["gpu 7", "gpu=\"7\""]),
    ];
    kinds
        .iter()
        .enumerate()
        .map(|(i, (name, sub, dev))| {
            let start = t0 + (first_s + i as i64 * every_s) * 1000;
            Fault {
                name,
                start_ms: start,
                end_ms: start + len_s * 1000,
                subsystem: *sub,
                device: dev,
            }
        })
        .collect()
}

struct Noise(u64);

impl Noise {
    fn unit(&mut self) -> f64 {
        // xorshift64*: reproducible, no dependency.
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Roughly normal, mean 0, sd 1.
    fn gauss(&mut self) -> f64 {
        (0..4).map(|_| self.unit()).sum::<f64>() * 1.732 - 3.464
    }
}

fn channel(name: String, subsystem: Subsystem, kind: Kind, resolution: f64) -> Channel {
    let metric = name.split('{').next().unwrap_or(&name).to_string();
    Channel {
        name,
        metric,
        subsystem,
        kind,
        metric_type: MetricType::Gauge,
        resolution,
        per_second: true,
        max_rate: None,
    }
}

/// `secs` seconds of the host from `t0`, with `faults` injected.
pub fn host(name: &str, t0: i64, secs: i64, faults: &[Fault], seed: u64) -> HostMatrix {
    let n = (secs * 1000 / STEP_MS) as usize;
    let mut channels = Vec::new();
    let cpu_modes = ["user", "system", "softirq", "iowait"];
    for c in 0..CPUS {
        for mode in cpu_modes {
            channels.push(channel(
                format!("reveal_cpu_time_seconds_total{{cpu=\"{c}\",mode=\"{mode}\"}}"),
                Subsystem::Cpu,
                Kind::Dynamic,
                0.01,
            ));
        }
    }
    for c in 0..CPUS {
        channels.push(channel(
            format!("reveal_cpu_interrupts_total{{cpu=\"{c}\"}}"),
            Subsystem::Cpu,
            Kind::Dynamic,
            1.0,
        ));
    }
    let gpu = |g: usize, metric: &str| {
        format!("{metric}{{gpu=\"{g}\",model=\"NVIDIA A100-SXM4-80GB\",uuid=\"GPU-5fd4c1e2-0000-4000-8000-00000000000{g}\"}}")
    };
    for g in 0..GPUS {
        for (m, res) in [
            ("reveal_gpu_utilization_ratio", 0.0),
            ("reveal_gpu_power_watts", 0.0),
            ("reveal_gpu_clock_hertz", 0.0),
            ("reveal_gpu_memory_used_bytes", 4096.0),
        ] {
            channels.push(channel(gpu(g, m), Subsystem::Gpu, Kind::Dynamic, res));
        }
        // A flag, as the default metric set reads it: an event channel at zero.
        let mut flag = channel(
            gpu(g, "reveal_gpu_throttle_reason").replace('}', ",reason=\"hw_thermal_slowdown\"}"),
            Subsystem::Gpu,
            Kind::Event,
            0.0,
        );
        flag.per_second = false;
        channels.push(flag);
    }
    for d in 0..DISKS {
        for (m, res) in [
            ("reveal_storage_read_bytes_total", 4096.0),
            ("reveal_storage_written_bytes_total", 4096.0),
            ("reveal_storage_io_time_seconds_total", 0.001),
        ] {
            channels.push(channel(
                format!("{m}{{device=\"nvme{d}n1\"}}"),
                Subsystem::Storage,
                Kind::Dynamic,
                res,
            ));
        }
    }
    for p in 0..PORTS {
        for m in [
            "reveal_network_infiniband_receive_bytes_total",
            "reveal_network_infiniband_transmit_bytes_total",
        ] {
            channels.push(channel(
                format!("{m}{{device=\"mlx5_{p}\",port=\"1\"}}"),
                Subsystem::Network,
                Kind::Dynamic,
                1.0,
            ));
        }
        for counter in ["symbol_error", "link_error_recovery", "port_rcv_errors"] {
            channels.push(channel(
                format!("reveal_network_infiniband_port_events_total{{counter=\"{counter}\",device=\"mlx5_{p}\",port=\"1\"}}"),
                Subsystem::Network,
                Kind::Event,
                1.0,
            ));
        }
    }
    for node in 0..NODES {
        for ev in ["numa_miss", "other_node"] {
            channels.push(channel(
                format!("reveal_memory_numa_events_total{{event=\"{ev}\",node=\"{node}\"}}"),
                Subsystem::Memory,
                Kind::Event,
                1.0,
            ));
        }
    }
    channels.push(channel(
        "reveal_memory_utilization".into(),
        Subsystem::Memory,
        Kind::Dynamic,
        0.0,
    ));
    channels.push(channel(
        "reveal_memory_dirty_bytes".into(),
        Subsystem::Memory,
        Kind::Dynamic,
        4096.0,
    ));
    for c in channels.iter_mut().filter(|c| {
        c.name.contains("memory_used")
            || c.name.contains("dirty")
            || c.name == "reveal_memory_utilization"
    }) {
        c.per_second = false;
    }

    let mut values = Array2::from_elem((channels.len(), n), 0.0);
    let mut rng = Noise(seed | 1);
    let active = |name: &str, t_ms: i64| {
        faults
            .iter()
            .any(|f| f.name == name && t_ms >= f.start_ms && t_ms < f.end_ms)
    };
    // Slowly varying per-device levels (each device's own character).
    let loader_level: Vec<f64> = (0..CPUS).map(|_| 0.4 + 0.3 * rng.unit()).collect();
    for t in 0..n {
        let t_ms = t0 + t as i64 * STEP_MS;
        let secs_in = (t as i64 * STEP_MS) as f64 / 1000.0;
        let phase = (secs_in / 1.2).fract();
        let compute = phase < 0.75;
        let shard_read = (secs_in % 90.0) < 5.0 && secs_in > 10.0;
        let cron = (secs_in % 60.0) >= 20.0 && (secs_in % 60.0) < 28.0;
        let cron_cpu = 70 + ((secs_in / 60.0) as usize % 20);
        let saturate = active("cpu_saturation", t_ms);
        let irqs = active("irqs_on_4_cpus", t_ms);
        let throttle = active("gpu5_throttled", t_ms);
        let slow_disk = active("nvme3n1_slow", t_ms);
        let ib_errors = active("ib_mlx5_2_errors", t_ms);
        let numa = active("numa_node1_remote", t_ms);
        let mut row = 0;
        let mut put = |v: f64, values: &mut Array2<f64>| {
            values[[row, t]] = v;
            row += 1;
        };
        for (c, level) in loader_level.iter().enumerate() {
            let loader = c < 64;
            let mut user = if loader {
                level * if compute { 1.0 } else { 0.8 } + 0.05 * rng.gauss()
            } else {
                0.02 + 0.01 * rng.unit()
            };
            if cron && c == cron_cpu {
                user = 0.97 + 0.02 * rng.unit();
            }
            if saturate {
                user = 0.96 + 0.03 * rng.unit();
            }
            let system = 0.04 + 0.01 * rng.gauss().abs();
            let softirq = if irqs && c < 4 {
                0.35 + 0.05 * rng.unit()
            } else {
                0.01 + 0.005 * rng.unit()
            };
            let iowait = if shard_read && c >= 64 {
                0.05 * rng.unit()
            } else {
                0.002 * rng.unit()
            };
            for v in [user, system, softirq, iowait] {
                put(v.clamp(0.0, 1.0), &mut values);
            }
        }
        for c in 0..CPUS {
            let base = if c % 12 == 0 { 4000.0 } else { 900.0 };
            let v = if irqs && c < 4 {
                60_000.0 + 3000.0 * rng.gauss()
            } else {
                base * (1.0 + 0.08 * rng.gauss())
            };
            put(v.max(0.0), &mut values);
        }
        for g in 0..GPUS {
            let mut util = if compute { 0.97 } else { 0.35 } + 0.02 * rng.gauss();
            let mut clock = 1.41e9 * (1.0 + 0.002 * rng.gauss());
            let mut power = 120.0 + 260.0 * util + 8.0 * rng.gauss();
            if throttle {
                if g == 5 {
                    clock *= 0.7;
                    power *= 0.72;
                } else {
                    // Its siblings wait for it at every all-reduce.
                    util *= 0.85;
                    power = 120.0 + 260.0 * util + 8.0 * rng.gauss();
                }
            }
            let mem = 61.0e9 + 1.0e8 * rng.unit();
            for v in [util.clamp(0.0, 1.0), power, clock, mem] {
                put(v, &mut values);
            }
            put(if throttle && g == 5 { 1.0 } else { 0.0 }, &mut values);
        }
        for d in 0..DISKS {
            let (read, busy) = if shard_read {
                (1.4e9 * (1.0 + 0.1 * rng.gauss()), 0.6 + 0.05 * rng.gauss())
            } else {
                (
                    2.0e7 * (1.0 + 0.3 * rng.gauss()),
                    0.02 + 0.005 * rng.gauss(),
                )
            };
            let busy = if slow_disk && d == 3 {
                0.92 + 0.02 * rng.gauss()
            } else {
                busy
            };
            let written = 5.0e6 * (1.0 + 0.3 * rng.gauss());
            for v in [read.max(0.0), written.max(0.0), busy.clamp(0.0, 1.0)] {
                put(v, &mut values);
            }
        }
        for p in 0..PORTS {
            let mut traffic = if compute { 1.5e9 } else { 11.0e9 } * (1.0 + 0.05 * rng.gauss());
            if ib_errors && p == 2 {
                traffic *= 0.6;
            }
            put(traffic.max(0.0), &mut values);
            put(traffic.max(0.0), &mut values);
            for k in 0..3 {
                let v = if ib_errors && p == 2 && k < 2 {
                    (20.0 + 60.0 * rng.unit()).round()
                } else {
                    0.0
                };
                put(v, &mut values);
            }
        }
        for node in 0..NODES {
            for ev in 0..2 {
                let base = if ev == 0 { 800.0 } else { 2500.0 };
                let mut v = base * (1.0 + 0.1 * rng.gauss());
                if numa && node == 1 {
                    v *= 10.0;
                }
                put(v.max(0.0).round(), &mut values);
            }
        }
        put(0.62 + 0.002 * rng.gauss(), &mut values);
        put(2.0e8 * (1.0 + 0.2 * rng.gauss()), &mut values);
        debug_assert_eq!(row, channels.len());
    }
    // GPU 7 falls off the bus: none of its series has a sample while it is gone.
    for f in faults.iter().filter(|f| f.name == "gpu7_off_the_bus") {
        let gpu7: Vec<usize> = (0..channels.len())
            .filter(|&r| channels[r].name.contains("gpu=\"7\""))
            .collect();
        for t in 0..n {
            let t_ms = t0 + t as i64 * STEP_MS;
            if t_ms >= f.start_ms && t_ms < f.end_ms {
                for &r in &gpu7 {
                    values[[r, t]] = f64::NAN;
                }
            }
        }
    }
    HostMatrix {
        host: name.to_string(),
        start_ms: t0,
        step_ms: STEP_MS,
        channels,
        values,
        non_finite_samples: 0,
    }
}

/// What became of one fault.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub name: String,
    /// A window inside the fault flagged by at least two detectors.
    pub found: bool,
    /// The largest subsystem share over those windows is the fault's.
    pub subsystem_right: bool,
    /// Their claims name the device.
    pub device_named: bool,
    /// Live only: seconds from the fault's start to the episode that opened on it.
    pub alert_s: Option<f64>,
    /// The strongest claim of its first such window.
    pub claim: String,
}

/// One flagged window, whichever path scored it.
pub struct Flag {
    pub end_ms: i64,
    pub agreement: u32,
    pub subsystems: Vec<(String, f64)>,
    pub claims: String,
}

/// Judges each fault by the flagged windows that end inside it (or up to 3 s after its end).
pub fn judge(faults: &[Fault], flags: &[Flag], opened: &[(i64, String)]) -> Vec<Outcome> {
    faults
        .iter()
        .map(|f| {
            let mine: Vec<&Flag> = flags
                .iter()
                .filter(|w| {
                    w.agreement >= 2 && w.end_ms > f.start_ms && w.end_ms <= f.end_ms + 3000
                })
                .collect();
            let mut share: std::collections::BTreeMap<&str, f64> = Default::default();
            for w in &mine {
                for (s, v) in &w.subsystems {
                    *share.entry(s.as_str()).or_default() += v;
                }
            }
            let top = share
                .iter()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map(|(s, _)| s.to_string());
            Outcome {
                name: f.name.to_string(),
                found: !mine.is_empty(),
                subsystem_right: top.as_deref() == Some(f.subsystem.as_str()),
                device_named: !mine.is_empty()
                    && (f.device.is_empty() || mine.iter().any(|w| names(w, f))),
                alert_s: opened
                    .iter()
                    .find(|(t, _)| *t >= f.start_ms && *t <= f.end_ms + 10_000)
                    .map(|(t, _)| (*t - f.start_ms) as f64 / 1000.0),
                claim: mine
                    .iter()
                    .find(|w| f.device.is_empty() || names(w, f))
                    .or(mine.first())
                    .map(|w| w.claims.clone())
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// The claims hold one of the fault's device names, whole (`cpu 1` is not `cpu 12`).
fn names(w: &Flag, f: &Fault) -> bool {
    f.device.iter().any(|d| {
        w.claims.match_indices(d).any(|(i, _)| {
            !w.claims[i + d.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit())
        })
    })
}
