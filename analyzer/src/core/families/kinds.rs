//! Siblings are devices of one kind: one metric's devices split by the shape of their names.
//!
//! A metric's devices are not all alike. Beside eight NVMe namespaces `/proc/diskstats` lists
//! the RAID array built over them (`md0`), a device-mapper volume, a loop device; beside four
//! InfiniBand interfaces `/proc/net/dev` lists the Ethernet ports, their bond and a bridge.
//! Judged as one family, the array (idle when it is not used, or the sum of its members when
//! it is) stands apart from the disks whenever they all read together, and that routine
//! apartness becomes the family's baseline spread: one disk busy alone no longer stands out,
//! and the claim counts the array among its "siblings".
//!
//! The kind of a device is its name with each run of digits read as `*` ([`pattern`]):
//! `nvme0n1` … `nvme7n1` are `nvme*n*`, `ib0` … `ib3` are `ib*`, `md0` is `md*`. Devices of
//! a kind that has at least the family's least number of members are a family of their own,
//! whose device label reads as that pattern (`device="nvme*n*"`). The devices of smaller kinds
//! stay together as the metric's family, `device="*"`, as before: names without digits
//! (`sda` … `sdh`), hexadecimal names (a container's `veth1a2b3c`), and a lone array. Names
//! that are numbers alone (CPUs, GPUs, NUMA nodes, IRQ lines) are one kind already, `*`.

use std::collections::BTreeMap;

use super::ALL_DEVICES;

/// A device name with each run of ASCII digits replaced by `*`: `nvme3n1` → `nvme*n*`,
/// `17` → `*`, `sda` → `sda`.
pub fn pattern(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_digits = false;
    for ch in name.chars() {
        if ch.is_ascii_digit() {
            if !in_digits {
                out.push('*');
            }
            in_digits = true;
        } else {
            out.push(ch);
            in_digits = false;
        }
    }
    out
}

/// Whether a label value stands for a family's devices: `*` or a kind's [`pattern`].
pub fn names_devices(value: &str) -> bool {
    value.contains('*')
}

/// One metric's members, each `(member, its device label's value)`, split into kinds: each kind
/// of at least `min` members with its pattern, then the rest with [`ALL_DEVICES`] (omitted when
/// empty). Members keep their order within each part.
pub fn split<T>(members: Vec<(T, String)>, min: usize) -> Vec<(String, Vec<T>)> {
    let mut by_kind: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, (_, value)) in members.iter().enumerate() {
        by_kind.entry(pattern(value)).or_default().push(i);
    }
    let mut part_of = vec![usize::MAX; members.len()];
    let mut parts: Vec<String> = Vec::new();
    for (kind, idx) in &by_kind {
        if kind != ALL_DEVICES && idx.len() >= min.max(2) {
            for &i in idx {
                part_of[i] = parts.len();
            }
            parts.push(kind.clone());
        }
    }
    let rest = parts.len();
    let mut out: Vec<(String, Vec<T>)> = parts.into_iter().map(|k| (k, Vec::new())).collect();
    out.push((ALL_DEVICES.to_string(), Vec::new()));
    for (i, (member, _)) in members.into_iter().enumerate() {
        let p = if part_of[i] == usize::MAX {
            rest
        } else {
            part_of[i]
        };
        out[p].1.push(member);
    }
    out.retain(|(_, ms)| !ms.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_are_read_as_a_star() {
        assert_eq!(pattern("nvme3n1"), "nvme*n*");
        assert_eq!(pattern("nvme12n1"), "nvme*n*");
        assert_eq!(pattern("17"), "*");
        assert_eq!(pattern("sda"), "sda");
        assert_eq!(pattern("ens1f0np0"), "ens*f*np*");
        assert_eq!(pattern(""), "");
        assert!(names_devices("*") && names_devices("nvme*n*") && !names_devices("md0"));
    }

    fn names(v: &[&str]) -> Vec<(usize, String)> {
        v.iter()
            .enumerate()
            .map(|(i, s)| (i, s.to_string()))
            .collect()
    }

    #[test]
    fn a_kind_with_enough_devices_is_its_own_family_and_the_rest_stay_together() {
        let disks = names(&[
            "md0", "nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1", "nvme4n1", "nvme5n1", "nvme6n1",
            "nvme7n1",
        ]);
        assert_eq!(
            split(disks, 4),
            [
                ("nvme*n*".to_string(), (1..9).collect::<Vec<_>>()),
                ("*".to_string(), vec![0])
            ]
        );
        let nics = names(&[
            "bond0",
            "docker0",
            "eno1",
            "eno2",
            "ib0",
            "ib1",
            "ib2",
            "ib3",
            "ens1f0np0",
        ]);
        assert_eq!(
            split(nics, 4),
            [
                ("ib*".to_string(), vec![4, 5, 6, 7]),
                ("*".to_string(), vec![0, 1, 2, 3, 8])
            ]
        );
    }

    #[test]
    fn names_without_a_shared_shape_stay_one_family() {
        // SCSI disks, containers' veths, CPUs: one part, `*`, in the members' order.
        for v in [
            vec!["sda", "sdb", "sdc", "sdd", "sde"],
            vec!["veth1a2b3c", "veth9f8e7d", "vethc0ffee", "veth77aa01"],
            vec!["0", "1", "2", "3", "10", "11"],
        ] {
            let n = v.len();
            assert_eq!(
                split(names(&v), 4),
                [("*".to_string(), (0..n).collect::<Vec<_>>())]
            );
        }
        // A kind below the least size stays with the rest.
        assert_eq!(
            split(names(&["ib0", "ib1", "ib2", "eno1"]), 4),
            [("*".to_string(), vec![0, 1, 2, 3])]
        );
        assert!(split(Vec::<(usize, String)>::new(), 4).is_empty());
    }
}
