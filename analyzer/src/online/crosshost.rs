//! Cross-host comparison (DESIGN "Analyzer" step 7): in one window, each channel-feature
//! that at least three hosts have is compared across them with a robust z (median and
//! 1.4826 × MAD of the hosts' values; the mean absolute deviation when the MAD is zero), and
//! a host's deviation in a subsystem is its largest |z| there. Hosts of a group run the same
//! work, so one that keeps deviating (the paper's HugePages case) is a finding even when its
//! own history looks normal.

use std::collections::BTreeMap;

/// Fewer hosts than this give no median worth comparing against.
pub const MIN_HOSTS: usize = 3;
/// |z| is capped here: beyond it, more says nothing and sums stay finite.
pub const Z_CAP: f64 = 1e3;

/// One host's features in a window: (channel-feature key, subsystem, value).
pub type HostRow<'a> = (&'a str, Vec<(&'a str, &'a str, f64)>);

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// (host, subsystem, largest |z|) for every host and subsystem with a comparable feature.
pub fn deviations(rows: &[HostRow<'_>]) -> Vec<(String, String, f64)> {
    let mut by_key: BTreeMap<&str, Vec<(usize, &str, f64)>> = BTreeMap::new();
    for (h, (_, feats)) in rows.iter().enumerate() {
        for &(key, sub, v) in feats {
            if v.is_finite() {
                by_key.entry(key).or_default().push((h, sub, v));
            }
        }
    }
    let mut out: BTreeMap<(usize, &str), f64> = BTreeMap::new();
    for vals in by_key.values() {
        if vals.len() < MIN_HOSTS {
            continue;
        }
        let mut xs: Vec<f64> = vals.iter().map(|v| v.2).collect();
        let med = median(&mut xs);
        let mut dev: Vec<f64> = xs.iter().map(|x| (x - med).abs()).collect();
        let mut scale = 1.482_602_218_505_602 * median(&mut dev);
        if !(scale > 1e-12 * med.abs()) {
            scale = 1.253_314_137_315_500_3 * dev.iter().sum::<f64>() / dev.len() as f64;
        }
        if !(scale > 1e-12 * med.abs()) || !scale.is_finite() {
            continue; // every host agrees: nothing deviates
        }
        for &(h, sub, v) in vals {
            let z = ((v - med) / scale).abs().min(Z_CAP);
            let e = out.entry((h, sub)).or_insert(0.0);
            *e = e.max(z);
        }
    }
    out.into_iter()
        .map(|((h, sub), z)| (rows[h].0.to_string(), sub.to_string(), z))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_odd_host_out_deviates_in_its_subsystem_only() {
        let hosts = ["a", "b", "c", "d", "e"];
        let rows: Vec<HostRow> = hosts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let hugepages = if *h == "c" { 0.0 } else { 1024.0 + i as f64 };
                let cpu = 0.5 + 0.01 * i as f64;
                (
                    *h,
                    vec![
                        ("hp__mean", "memory", hugepages),
                        ("busy__mean", "cpu", cpu),
                    ],
                )
            })
            .collect();
        let d = deviations(&rows);
        let get = |h: &str, s: &str| {
            d.iter()
                .find(|x| x.0 == h && x.1 == s)
                .map(|x| x.2)
                .unwrap()
        };
        assert!(get("c", "memory") > 100.0, "{d:?}");
        assert!(get("a", "memory") < 3.0);
        assert!(hosts.iter().all(|h| get(h, "cpu") < 3.0), "{d:?}");
    }

    #[test]
    fn too_few_hosts_agreement_and_nan_give_nothing_or_finite() {
        let two: Vec<HostRow> = vec![
            ("a", vec![("k", "cpu", 1.0)]),
            ("b", vec![("k", "cpu", 9.0)]),
        ];
        assert!(deviations(&two).is_empty());
        let same: Vec<HostRow> = ["a", "b", "c"]
            .iter()
            .map(|h| (*h, vec![("k", "cpu", 7.0)]))
            .collect();
        assert!(deviations(&same).is_empty());
        let odd: Vec<HostRow> = vec![
            ("a", vec![("k", "cpu", f64::NAN)]),
            ("b", vec![("k", "cpu", 1.0)]),
            ("c", vec![("k", "cpu", 1.0)]),
            ("d", vec![("k", "cpu", 1e300)]),
        ];
        assert!(deviations(&odd)
            .iter()
            .all(|x| x.2.is_finite() && x.2 <= Z_CAP));
    }
}
