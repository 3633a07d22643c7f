//! Device families: the per-device channels of one metric on one host, judged as a whole
//! and each device against its siblings.
//!
//! A wide host has 96 CPUs, 8 GPUs, 8 disks, several InfiniBand ports, and each per-device
//! metric gives one channel per device. Scored channel by channel, the host's model grows with
//! its device count (a 96-CPU host: 21,250 feature columns, a minute-long fit), and one device
//! that parts from identical siblings is one column among thousands. A *family* is the
//! channels of one metric that differ only in the labels naming a device (`cpu`, `gpu`,
//! `device`, `port`, `node`, `irq`, …, [`DEVICE_LABELS`]). A family of at least
//! [`FamilyParams::min_devices`] members enters the host's model as a fixed set of channels,
//! whatever its size ([`Stat`]):
//!
//! - `mean` (`sum` for event channels): the family as a whole;
//! - `max` and `min`: its extreme devices;
//! - `spread`: the largest distance of one device from the family's median at that step —
//!   zero when the devices move together (a routine read burst on every disk), large when one
//!   parts from the others (one disk busy alone);
//! - `devices`: how many members report, so a GPU that falls off the bus is seen.
//!
//! Siblings are devices of one kind: a metric's devices are split by the shape of their names
//! first (`kinds`: `nvme0n1` … `nvme7n1` apart from the RAID array `md0` over them), and each
//! kind with enough members is a family of its own (`device="nvme*n*"`).
//!
//! The per-device rows stay beside the folded matrix ([`Folded::members`]): when evidence is a
//! family channel, [`Folded::siblings`] names the device behind it and says where it stood
//! against its siblings in that window ("nvme3n1 at 92 % while its 7 siblings are at 2 %").
//! Static channels (sizes, temperatures) are not folded: they are not scored on one host, and
//! the cross-host comparison reads them per device. A family smaller than `min_devices` keeps
//! its channels as they are (a 2-CPU host, two NUMA nodes): they are few, and named already.

use std::collections::BTreeMap;

use ndarray::Array2;

use crate::core::labels::parse_channel;
use crate::core::matrix::{Channel, HostMatrix, Kind, MetricType};
use crate::core::presence::FixedFamily;

mod kinds;

/// Labels that name one device of a family: the ones its members differ in. Every other label
/// (`mode`, `counter`, `model`) keeps families apart.
/// The exporter's (`cpu`, `gpu`, `device`, `port`, `node`, `irq`, and `link` for a GPU's NVLink
/// links: `gpu 3 link 5` is one device of the family), node_exporter's, and DCGM's (`gpu`,
/// `UUID`, `device`, `pci_bus_id`) device labels.
pub const DEVICE_LABELS: &[&str] = &[
    "cpu",
    "core",
    "gpu",
    "uuid",
    "UUID",
    "pci_bus_id",
    "minor_number",
    "device",
    "port",
    "node",
    "numa_node",
    "irq",
    "interface",
    "queue",
    "link",
];

/// Device labels of hardware that stays while the host runs: a change of their count is an
/// event (see [`fold`]).
pub const FIXED_DEVICE_LABELS: &[&str] = &[
    "cpu",
    "core",
    "gpu",
    "uuid",
    "UUID",
    "pci_bus_id",
    "minor_number",
    "node",
    "numa_node",
];

/// Least members for a family to be folded (see the module docs).
pub const DEFAULT_MIN_DEVICES: usize = 4;

/// How families are found.
#[derive(Debug, Clone, PartialEq)]
pub struct FamilyParams {
    /// Families with fewer members keep their channels (0 or 1: fold every family of 2 or more;
    /// `usize::MAX`: fold none).
    pub min_devices: usize,
    /// Labels that name a device ([`DEVICE_LABELS`] by default).
    pub device_labels: Vec<String>,
}

impl Default for FamilyParams {
    fn default() -> Self {
        FamilyParams {
            min_devices: DEFAULT_MIN_DEVICES,
            device_labels: DEVICE_LABELS.iter().map(|s| s.to_string()).collect(),
        }
    }
}

impl FamilyParams {
    /// No folding: every channel as it is.
    pub fn off() -> Self {
        FamilyParams {
            min_devices: usize::MAX,
            ..FamilyParams::default()
        }
    }
}

/// A channel that stands for a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stat {
    Mean,
    Sum,
    Max,
    Min,
    Spread,
    Devices,
}

impl Stat {
    pub fn as_str(self) -> &'static str {
        match self {
            Stat::Mean => "mean",
            Stat::Sum => "sum",
            Stat::Max => "max",
            Stat::Min => "min",
            Stat::Spread => "spread",
            Stat::Devices => "devices",
        }
    }

    /// What the stat says of the family, for claims.
    pub fn describe(self) -> &'static str {
        match self {
            Stat::Mean => "mean over its devices",
            Stat::Sum => "total over its devices",
            Stat::Max => "its highest device",
            Stat::Min => "its lowest device",
            Stat::Spread => "one device apart from the others",
            Stat::Devices => "devices reporting",
        }
    }

    /// Every stat, in the order above.
    pub const ALL: [Stat; 6] = [
        Stat::Mean,
        Stat::Sum,
        Stat::Max,
        Stat::Min,
        Stat::Spread,
        Stat::Devices,
    ];

    pub fn parse(s: &str) -> Option<Stat> {
        Stat::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// The stats a family of channels of `kind` enters the model with.
    fn for_kind(kind: Kind) -> &'static [Stat] {
        match kind {
            Kind::Event => &[Stat::Sum, Stat::Max],
            _ => &[Stat::Mean, Stat::Max, Stat::Min, Stat::Spread],
        }
    }
}

/// The value a family channel's device label holds: `reveal_x{device="*",stat="max"}`.
pub const ALL_DEVICES: &str = "*";
/// The label that says which [`Stat`] a family channel is.
pub const STAT_LABEL: &str = "stat";

/// One family: its members' rows in the unfolded matrix and their device names.
#[derive(Debug, Clone)]
pub struct Family {
    /// The family channel's name without its `stat` label (`reveal_x{device="*"}`).
    pub key: String,
    pub kind: Kind,
    /// Rows of the members in [`Folded::members`], with each one's device name
    /// (`nvme3n1`, `cpu 17`, `mlx5_2 port 1`).
    pub members: Vec<(usize, String)>,
}

/// A host's matrix with its families folded, and what is needed to name a device.
#[derive(Debug, Clone)]
pub struct Folded {
    /// The matrix the model reads: channels outside families as they were, and each family's
    /// stat channels.
    pub matrix: HostMatrix,
    /// Families by key.
    pub families: BTreeMap<String, Family>,
    /// The per-device rows of every family (rows of the original matrix, same grid).
    pub members: HostMatrix,
    /// Each `devices` channel's family (the first family that counted those devices).
    pub counted: BTreeMap<String, String>,
    /// The families of fixed hardware (CPUs, GPUs, NUMA nodes), folded or not, with each
    /// device's last sample: what [`crate::core::presence`] reads to find one gone.
    pub fixed: Vec<FixedFamily>,
}

/// A device against its siblings in one window (see [`Folded::siblings`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SiblingView {
    /// The device's own channel (`reveal_x{device="nvme3n1"}`).
    pub channel: String,
    pub device: String,
    /// Its mean over the window, and the median of its siblings' means, per second for a
    /// counter's increases. When the whole family moved (see [`Folded::siblings`]): `device`
    /// is "all N devices", `channel` the family's key without its device label (the host's
    /// view of the metric), `value` their mean, `siblings` 0.
    pub value: f64,
    pub siblings_median: f64,
    pub siblings: usize,
}

/// Splits a family channel name into its family key and stat.
pub fn family_stat(channel: &str) -> Option<(String, Stat)> {
    if !channel.contains(ALL_DEVICES) {
        return None;
    }
    let (name, labels) = parse_channel(channel);
    let stat = labels
        .iter()
        .find(|(k, _)| k == STAT_LABEL)
        .and_then(|(_, v)| Stat::parse(v))?;
    let rest: Vec<(String, String)> = labels
        .into_iter()
        .filter(|(k, _)| k != STAT_LABEL)
        .collect();
    Some((render(name, &rest), stat))
}

fn render(name: &str, labels: &[(String, String)]) -> String {
    if labels.is_empty() {
        return name.to_string();
    }
    let body: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"")))
        .collect();
    format!("{name}{{{}}}", body.join(","))
}

/// Folds the families of `m` (see the module docs).
pub fn fold(m: &HostMatrix, p: &FamilyParams) -> Folded {
    // Group member rows by metric and labels, then split each group into kinds of device
    // (`kinds`): `nvme*n*` apart from `md0`.
    let min = p.min_devices.max(2);
    let mut by_metric: BTreeMap<String, (Kind, Vec<KindedMember>)> = BTreeMap::new();
    let mut alone: Vec<usize> = Vec::new();
    for (row, c) in m.channels.iter().enumerate() {
        match family_of(c, p) {
            Some(f) => by_metric
                .entry(f.key)
                .or_insert_with(|| (c.kind, Vec::new()))
                .1
                .push(((row, f.device), f.value)),
            None => alone.push(row),
        }
    }
    let mut groups: BTreeMap<String, (Kind, Vec<(usize, String)>)> = BTreeMap::new();
    for (key, (kind, members)) in by_metric {
        for (kind_pattern, part) in kinds::split(members, min) {
            let key = if kind_pattern == ALL_DEVICES {
                key.clone()
            } else {
                let (name, labels) = parse_channel(&key);
                let labels: Vec<(String, String)> = labels
                    .into_iter()
                    .map(|(k, v)| {
                        let v = if v == ALL_DEVICES {
                            kind_pattern.clone()
                        } else {
                            v
                        };
                        (k, v)
                    })
                    .collect();
                render(name, &labels)
            };
            groups.insert(key, (kind, part));
        }
    }
    let mut folded_groups = Vec::new();
    let mut fixed = Vec::new();
    for (key, (kind, members)) in groups {
        if members.len() >= 2 && names_fixed_hardware(&parse_channel(&key).1) {
            fixed.push(FixedFamily::new(&key, m, &members));
        }
        // A family of mixed kinds (a label value that names an error among traffic) or too
        // few members keeps its channels.
        let same_kind = members.iter().all(|(r, _)| m.channels[*r].kind == kind);
        if members.len() >= min && same_kind {
            folded_groups.push((key, kind, members));
        } else {
            alone.extend(members.iter().map(|(r, _)| *r));
        }
    }
    alone.sort_unstable();
    let n = m.n_steps();
    let mut channels: Vec<Channel> = alone.iter().map(|&r| m.channels[r].clone()).collect();
    let mut rows: Vec<Vec<f64>> = Vec::new();
    let mut families = BTreeMap::new();
    let mut member_rows: Vec<usize> = Vec::new();
    let mut devices_done: Vec<String> = Vec::new();
    let mut counted = BTreeMap::new();
    for (key, kind, members) in folded_groups {
        let first = &m.channels[members[0].0];
        let stats = Stat::for_kind(kind);
        let mut out: Vec<Vec<f64>> = vec![vec![f64::NAN; n]; stats.len()];
        let mut count = vec![0.0; n];
        let mut buf: Vec<f64> = Vec::with_capacity(members.len());
        for t in 0..n {
            buf.clear();
            buf.extend(
                members
                    .iter()
                    .map(|(r, _)| m.values[[*r, t]])
                    .filter(|v| v.is_finite()),
            );
            if buf.is_empty() {
                // No device at all: a gap in the host's samples, not every device gone.
                count[t] = f64::NAN;
                continue;
            }
            count[t] = buf.len() as f64;
            let sum: f64 = buf.iter().sum();
            let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
            for &v in &buf {
                lo = lo.min(v);
                hi = hi.max(v);
            }
            for (i, s) in stats.iter().enumerate() {
                out[i][t] = match s {
                    Stat::Mean => sum / buf.len() as f64,
                    Stat::Sum => sum,
                    Stat::Max => hi,
                    Stat::Min => lo,
                    Stat::Spread => {
                        let med = crate::core::stats::median(&mut buf);
                        (hi - med).max(med - lo)
                    }
                    Stat::Devices => buf.len() as f64,
                };
            }
        }
        let (name, labels) = parse_channel(&key);
        for (i, s) in stats.iter().enumerate() {
            let mut l = labels.clone();
            l.push((STAT_LABEL.to_string(), s.as_str().to_string()));
            l.sort();
            let resolution = match s {
                Stat::Mean => first.resolution / members.len() as f64,
                _ => first.resolution,
            };
            channels.push(Channel {
                name: render(name, &l),
                metric: first.metric.clone(),
                subsystem: first.subsystem,
                kind,
                // A counter's family holds increases per step, as its members do.
                metric_type: first.metric_type,
                resolution,
                per_second: first.per_second,
                // Made of its members' increases, each already held to its bound.
                max_rate: None,
            });
            rows.push(std::mem::take(&mut out[i]));
        }
        // One count of reporting devices per metric and set of device labels: the modes of
        // CPU time share their CPUs.
        let devices_key = format!(
            "{name} {}",
            render(
                "",
                &labels
                    .iter()
                    .filter(|(_, v)| kinds::names_devices(v))
                    .cloned()
                    .collect::<Vec<_>>()
            )
        );
        if !devices_done.contains(&devices_key) {
            devices_done.push(devices_key);
            let mut l: Vec<(String, String)> = labels
                .iter()
                .filter(|(_, v)| kinds::names_devices(v))
                .cloned()
                .collect();
            l.push((STAT_LABEL.to_string(), Stat::Devices.as_str().to_string()));
            l.sort();
            counted.insert(render(name, &l), key.clone());
            // Hardware that does not come and go in normal operation (CPUs, GPUs, NUMA nodes)
            // is counted as an event channel: steady through the baseline, its first change
            // — a GPU fallen off the bus — is scored. Disks and network interfaces come and go
            // (hot plug, a container's veth), and their count is a channel like any other.
            let fixed = names_fixed_hardware(&labels);
            channels.push(Channel {
                name: render(name, &l),
                metric: first.metric.clone(),
                subsystem: first.subsystem,
                kind: if fixed { Kind::Event } else { Kind::Dynamic },
                metric_type: MetricType::Gauge,
                resolution: 1.0,
                per_second: false,
                max_rate: None,
            });
            rows.push(count);
        }
        let base = member_rows.len();
        member_rows.extend(members.iter().map(|(r, _)| *r));
        families.insert(
            key.clone(),
            Family {
                key,
                kind,
                members: members
                    .into_iter()
                    .enumerate()
                    .map(|(i, (_, d))| (base + i, d))
                    .collect(),
            },
        );
    }
    let mut values = Array2::from_elem((channels.len(), n), f64::NAN);
    for (i, &r) in alone.iter().enumerate() {
        values.row_mut(i).assign(&m.values.row(r));
    }
    for (i, row) in rows.into_iter().enumerate() {
        values
            .row_mut(alone.len() + i)
            .assign(&ndarray::ArrayView1::from(&row));
    }
    let mut mv = Array2::from_elem((member_rows.len(), n), f64::NAN);
    for (i, &r) in member_rows.iter().enumerate() {
        mv.row_mut(i).assign(&m.values.row(r));
    }
    Folded {
        matrix: HostMatrix {
            host: m.host.clone(),
            start_ms: m.start_ms,
            step_ms: m.step_ms,
            channels,
            values,
            non_finite_samples: m.non_finite_samples,
        },
        families,
        members: HostMatrix {
            host: m.host.clone(),
            start_ms: m.start_ms,
            step_ms: m.step_ms,
            channels: member_rows.iter().map(|&r| m.channels[r].clone()).collect(),
            values: mv,
            non_finite_samples: 0,
        },
        counted,
        fixed,
    }
}

/// Whether a family key's labels hold its device label on hardware that stays while the host
/// runs ([`FIXED_DEVICE_LABELS`]).
fn names_fixed_hardware(labels: &[(String, String)]) -> bool {
    labels
        .iter()
        .any(|(k, v)| kinds::names_devices(v) && FIXED_DEVICE_LABELS.contains(&k.as_str()))
}

/// A family member, `(row, device name)`, with the value its kind is read from.
type KindedMember = ((usize, String), String);

/// A per-device channel's metric and labels with its device as `*` (`key`), the device's name
/// (`nvme3n1`, `cpu 17`, `mlx5_2 port 1`) and the value of its first device label (`value`),
/// whose shape is the device's kind (`kinds`).
struct Member {
    key: String,
    device: String,
    value: String,
}

/// The family key and device of a channel, if it is per device and not static.
fn family_of(c: &Channel, p: &FamilyParams) -> Option<Member> {
    if c.kind == Kind::Static || !c.name.contains('{') {
        return None;
    }
    let (name, labels) = parse_channel(&c.name);
    let mut device = Vec::new();
    let mut rest = Vec::new();
    let mut first_device_label = true;
    for (k, v) in labels {
        if p.device_labels.contains(&k) {
            // Only the first device label stays in the key, as `*`: the others (a GPU's
            // uuid and bus id beside its index) name the same device again.
            if first_device_label {
                rest.push((k.clone(), ALL_DEVICES.to_string()));
                first_device_label = false;
            }
            if !matches!(k.as_str(), "uuid" | "UUID" | "pci_bus_id") || device.is_empty() {
                device.push((k, v));
            }
        } else {
            rest.push((k, v));
        }
    }
    if device.is_empty() {
        return None;
    }
    let name_of = match device.as_slice() {
        [(k, v)] if k == "cpu" || k == "gpu" || k == "node" || k == "core" => format!("{k} {v}"),
        [(_, v)] => v.clone(),
        many => many
            .iter()
            .map(|(k, v)| {
                if k == "device" {
                    v.clone()
                } else {
                    format!("{k} {v}")
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
    };
    Some(Member {
        key: render(name, &rest),
        device: name_of,
        value: device[0].1.clone(),
    })
}

impl Folded {
    /// The device behind family channel `channel`'s `stat` in the window `[start_ms, end_ms]`:
    /// for `max` the busiest, `min` the quietest, otherwise the one farthest from its siblings'
    /// median (the one above them when `up`, else below). `None` for a channel that is no
    /// family's, or a window without values.
    pub fn siblings(
        &self,
        channel: &str,
        start_ms: i64,
        end_ms: i64,
        up: bool,
    ) -> Option<SiblingView> {
        let (key, stat) = family_stat(channel)?;
        let fam = self.families.get(&key)?;
        let m = &self.members;
        let step = m.step_ms.max(1);
        let lo = usize::try_from((start_ms - m.start_ms).div_euclid(step)).unwrap_or(0);
        let hi = usize::try_from((end_ms - m.start_ms).div_euclid(step)).ok()?;
        let hi = hi.min(m.n_steps().checked_sub(1)?);
        if lo > hi {
            return None;
        }
        // Per second for a counter's increases.
        let per_step_to_rate = |row: usize| {
            if m.channels[row].metric_type == MetricType::Counter {
                1000.0 / step as f64
            } else {
                1.0
            }
        };
        let means: Vec<(usize, &str, f64)> = fam
            .members
            .iter()
            .filter_map(|(row, dev)| {
                let vals: Vec<f64> = (lo..=hi)
                    .map(|t| m.values[[*row, t]])
                    .filter(|v| v.is_finite())
                    .collect();
                (!vals.is_empty()).then(|| {
                    let mean = vals.iter().sum::<f64>() / vals.len() as f64;
                    (*row, dev.as_str(), mean * per_step_to_rate(*row))
                })
            })
            .collect();
        if means.len() < 2 {
            return None;
        }
        let mut all: Vec<f64> = means.iter().map(|x| x.2).collect();
        let med = crate::core::stats::median(&mut all);
        let pick = match stat {
            Stat::Max => means.iter().max_by(|a, b| a.2.total_cmp(&b.2)),
            Stat::Min => means.iter().min_by(|a, b| a.2.total_cmp(&b.2)),
            Stat::Spread | Stat::Mean | Stat::Sum | Stat::Devices => {
                let sign = if up { 1.0 } else { -1.0 };
                means
                    .iter()
                    .max_by(|a, b| (sign * (a.2 - med)).total_cmp(&(sign * (b.2 - med))))
                    .filter(|_| stat != Stat::Spread)
                    .or_else(|| {
                        means
                            .iter()
                            .max_by(|a, b| (a.2 - med).abs().total_cmp(&(b.2 - med).abs()))
                    })
            }
        }?;
        let mut others: Vec<f64> = means
            .iter()
            .filter(|x| x.0 != pick.0)
            .map(|x| x.2)
            .collect();
        let siblings = others.len();
        // The whole family's level or total names a device only when that device is most of
        // the family's departure from its median (one port's errors); when every device moved
        // (a load on every CPU) it is the family's, and no device is singled out.
        let apart: f64 = means.iter().map(|x| (x.2 - med).abs()).sum();
        let whole = matches!(stat, Stat::Mean | Stat::Sum | Stat::Devices)
            && (pick.2 - med).abs() <= 0.5 * apart
            || apart == 0.0 && matches!(stat, Stat::Mean | Stat::Sum);
        if whole {
            let mut all: Vec<f64> = means.iter().map(|x| x.2).collect();
            let n = all.len();
            let (name, labels) = parse_channel(&fam.key);
            let rest: Vec<(String, String)> = labels
                .into_iter()
                .filter(|(_, v)| !kinds::names_devices(v))
                .collect();
            return Some(SiblingView {
                channel: render(name, &rest),
                device: format!("all {n} devices"),
                value: all.iter().sum::<f64>() / n as f64,
                siblings_median: crate::core::stats::median(&mut all),
                siblings: 0,
            });
        }
        Some(SiblingView {
            channel: m.channels[pick.0].name.clone(),
            device: pick.1.to_string(),
            value: pick.2,
            siblings_median: crate::core::stats::median(&mut others),
            siblings,
        })
    }
}

impl Folded {
    /// For a `devices` channel, the devices of its family that reported nothing in the window
    /// `[start_ms, end_ms]` though they did elsewhere in the matrix: their first one's channel,
    /// and "gpu 7 not reporting (7 of 8 devices)". `None` when none is missing here (a device
    /// gone for all of a pass is not in its matrix: [`Folded::missing_known`] names it).
    pub fn missing(&self, channel: &str, start_ms: i64, end_ms: i64) -> Option<(String, String)> {
        self.missing_known(channel, start_ms, end_ms, None)
    }

    /// [`Folded::missing`], and also the devices `known` remembers of this family (from
    /// earlier passes of the host) that are not in this matrix at all: in the service a pass
    /// holds only its windows' span, so a GPU that fell off the bus a few seconds ago has no
    /// row left, and only what the host had before can name it.
    pub fn missing_known(
        &self,
        channel: &str,
        start_ms: i64,
        end_ms: i64,
        known: Option<&KnownDevices>,
    ) -> Option<(String, String)> {
        let key = self.counted.get(channel)?;
        let fam = self.families.get(key)?;
        let m = &self.members;
        let step = m.step_ms.max(1);
        let lo = usize::try_from((start_ms - m.start_ms).div_euclid(step)).unwrap_or(0);
        let hi = usize::try_from((end_ms - m.start_ms).div_euclid(step)).ok()?;
        let hi = hi.min(m.n_steps().checked_sub(1)?);
        // (device, its channel) of every member gone in the window, in the family's order,
        // then the remembered ones this matrix lacks.
        let mut gone: Vec<(&str, &str)> = fam
            .members
            .iter()
            .filter(|(row, _)| (lo..=hi).all(|t| !m.values[[*row, t]].is_finite()))
            .map(|(row, d)| (d.as_str(), m.channels[*row].name.as_str()))
            .collect();
        let mut total = fam.members.len();
        if let Some(before) = known.and_then(|k| k.0.get(key)) {
            for (device, (channel, _)) in before {
                if !fam.members.iter().any(|(_, d)| d == device) {
                    gone.push((device.as_str(), channel.as_str()));
                    total += 1;
                }
            }
        }
        let first = gone.first()?;
        let names: Vec<&str> = gone.iter().map(|(d, _)| *d).collect();
        Some((
            first.1.to_string(),
            format!(
                "{} not reporting ({} of {} devices)",
                names.join(", "),
                total - gone.len(),
                total
            ),
        ))
    }
}

/// The devices a host's families have had, by family key: each device's channel and the end
/// of the latest pass it reported in. The service keeps one per host ([`KnownDevices::observe`]
/// after each pass), so that a device gone for a whole pass is still named
/// ([`Folded::missing_known`]).
#[derive(Debug, Default, Clone)]
pub struct KnownDevices(BTreeMap<String, BTreeMap<String, (String, i64)>>);

impl KnownDevices {
    /// Records the members of `folded`'s families that reported in it, as seen at `until_ms`,
    /// and forgets devices not seen since `forget_before_ms` (gone for good: the family's
    /// baseline has learned the smaller count by then).
    pub fn observe(&mut self, folded: &Folded, until_ms: i64, forget_before_ms: i64) {
        let m = &folded.members;
        for (key, fam) in &folded.families {
            let known = self.0.entry(key.clone()).or_default();
            for (row, device) in &fam.members {
                if m.values.row(*row).iter().any(|v| v.is_finite()) {
                    let entry = known
                        .entry(device.clone())
                        .or_insert_with(|| (m.channels[*row].name.clone(), until_ms));
                    entry.1 = entry.1.max(until_ms);
                }
            }
        }
        for known in self.0.values_mut() {
            known.retain(|_, (_, seen)| *seen >= forget_before_ms);
        }
        self.0.retain(|_, known| !known.is_empty());
    }
}

impl SiblingView {
    /// "nvme3n1 at 92 % while its 7 siblings are at 2 % (median)", in the unit `metric`'s name
    /// gives, per second for a counter or a rate.
    pub fn sentence(&self, metric: &str, per_second: bool) -> String {
        let f = |v: f64| format_value(metric, v, per_second);
        if self.siblings == 0 {
            return format!("{} at {} on average", self.device, f(self.value));
        }
        let word = if self.siblings == 1 {
            "sibling is"
        } else {
            "siblings are"
        };
        format!(
            "{} at {} while its {} {word} at {}",
            self.device,
            f(self.value),
            self.siblings,
            f(self.siblings_median)
        )
    }
}

/// A value in the unit its metric's name says: a share of time or a ratio in percent, bytes
/// in KB/MB/GB, hertz in MHz, …; `/s` for a rate of anything else.
pub fn format_value(metric: &str, v: f64, per_second: bool) -> String {
    let rate = per_second || metric.ends_with("_total");
    let base = metric.strip_suffix("_total").unwrap_or(metric);
    let sig = |x: f64| {
        let a = x.abs();
        if a >= 100.0 || a == 0.0 {
            format!("{x:.0}")
        } else if a >= 10.0 {
            format!("{x:.1}")
        } else {
            format!("{x:.2}")
        }
    };
    let scaled = |x: f64, units: &[(f64, &str)]| {
        let (d, u) = units
            .iter()
            .rev()
            .find(|(d, _)| x.abs() >= *d)
            .copied()
            .unwrap_or(units[0]);
        format!("{} {u}", sig(x / d))
    };
    if (base.ends_with("_seconds") && rate) || base.ends_with("_ratio") {
        return format!("{} %", sig(v * 100.0));
    }
    let suffix = if rate { "/s" } else { "" };
    if base.ends_with("_bytes") {
        let s = scaled(v, &[(1.0, "B"), (1e3, "KB"), (1e6, "MB"), (1e9, "GB")]);
        return format!("{s}{suffix}");
    }
    if base.ends_with("_hertz") {
        return scaled(v, &[(1.0, "Hz"), (1e3, "kHz"), (1e6, "MHz"), (1e9, "GHz")]);
    }
    if base.ends_with("_watts") {
        return format!("{} W", sig(v));
    }
    if base.ends_with("_celsius") {
        return format!("{} °C", sig(v));
    }
    format!("{}{suffix}", sig(v))
}

#[cfg(test)]
mod tests;
