//! The N most active cgroups get their own series; the rest are folded into `other`.

use super::{Prev, Values, MEM_BYTES, N, USAGE_S};
use std::collections::{HashMap, HashSet};

/// What [`fold`] decided for one scrape.
pub(super) struct Folded {
    /// Per cgroup (in the order given): whether it has its own series.
    pub exposed: Vec<bool>,
    /// `other`'s gauges at this scrape (the memory in use of the folded cgroups).
    pub other_gauge: Values,
    /// How many cgroups were folded.
    pub folded_count: usize,
}

/// Ranks `cgroups` by CPU time since the previous scrape (`prev`) and exposes the first
/// `top`; ties keep the cgroups exposed before, then the one that used more in all. The
/// rest are folded: `other`'s counters grow by what they used since the last scrape, its
/// memory gauge is this scrape's sum; a folded cgroup whose ancestor is folded too counts
/// once, through the ancestor.
pub(super) fn fold(
    cgroups: &[(String, Values)],
    prev: &HashMap<String, Prev>,
    top: usize,
    other: &mut Values,
) -> Folded {
    // Rank by CPU time since the previous scrape; ties: exposed before, then more in all.
    let usage = |v: &Values| v[USAGE_S].unwrap_or(0.0);
    let mut order: Vec<usize> = (0..cgroups.len()).collect();
    let key = |i: usize| {
        let (rel, v) = &cgroups[i];
        let prev = prev.get(rel);
        let delta = growth(usage(v), prev.and_then(|p| p.values[USAGE_S]));
        (delta, prev.is_some_and(|p| p.exposed), usage(v))
    };
    order.sort_by(|&a, &b| {
        let (ka, kb) = (key(a), key(b));
        kb.0.total_cmp(&ka.0)
            .then(kb.1.cmp(&ka.1))
            .then(kb.2.total_cmp(&ka.2))
            .then(cgroups[a].0.cmp(&cgroups[b].0))
    });
    let mut exposed = vec![false; cgroups.len()];
    for &i in order.iter().take(top) {
        exposed[i] = true;
    }

    // Fold the rest into `other`: counters grow by what they used since the last scrape,
    // the memory gauge is this scrape's sum; nested folded cgroups count once.
    let folded: HashSet<&str> = cgroups
        .iter()
        .zip(&exposed)
        .filter(|(_, e)| !**e)
        .map(|((rel, _), _)| rel.as_str())
        .collect();
    let mut other_gauge: Values = [None; N];
    for ((rel, v), _) in cgroups.iter().zip(&exposed).filter(|(_, e)| !**e) {
        if has_ancestor_in(rel, &folded) {
            continue;
        }
        let prev = prev.get(rel);
        for (k, cur) in v.iter().enumerate() {
            let Some(cur) = *cur else { continue };
            if k == MEM_BYTES {
                *other_gauge[k].get_or_insert(0.0) += cur;
            } else {
                let g = growth(cur, prev.and_then(|p| p.values[k]));
                *other[k].get_or_insert(0.0) += g;
            }
        }
    }
    let folded_count = folded.len();
    Folded {
        exposed,
        other_gauge,
        folded_count,
    }
}

/// How much a counter grew since `prev`: all of it when there is no earlier value or it went
/// down (a cgroup removed and created again under the same path).
pub(super) fn growth(cur: f64, prev: Option<f64>) -> f64 {
    match prev {
        Some(p) if cur >= p => cur - p,
        _ => cur,
    }
}

/// Whether a proper ancestor of `path` is in `set`.
pub(super) fn has_ancestor_in(path: &str, set: &HashSet<&str>) -> bool {
    let mut p = path;
    while let Some((parent, _)) = p.rsplit_once('/') {
        if set.contains(parent) {
            return true;
        }
        p = parent;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_and_ancestors() {
        assert_eq!(growth(5.0, Some(3.0)), 2.0);
        assert_eq!(growth(5.0, None), 5.0);
        assert_eq!(growth(1.0, Some(3.0)), 1.0);
        let set: HashSet<&str> = ["a", "b/c"].into_iter().collect();
        assert!(has_ancestor_in("a/x", &set));
        assert!(has_ancestor_in("b/c/d/e", &set));
        assert!(!has_ancestor_in("a", &set));
        assert!(!has_ancestor_in("b/x", &set));
    }

    fn usage(cpu: f64, mem: f64) -> Values {
        let mut v: Values = [None; N];
        v[USAGE_S] = Some(cpu);
        v[MEM_BYTES] = Some(mem);
        v
    }

    #[test]
    fn the_most_active_are_exposed_and_the_rest_fold_once_into_other() {
        let cgroups = vec![
            ("busy".to_string(), usage(9.0, 100.0)),
            ("idle".to_string(), usage(1.0, 10.0)),
            ("idle/child".to_string(), usage(0.5, 5.0)),
            ("quiet".to_string(), usage(2.0, 20.0)),
        ];
        let mut other: Values = [None; N];
        let f = fold(&cgroups, &HashMap::new(), 2, &mut other);
        assert_eq!(f.exposed, [true, false, false, true]);
        assert_eq!(f.folded_count, 2);
        // The child is counted through its folded parent only.
        assert_eq!(other[USAGE_S], Some(1.0));
        assert_eq!(f.other_gauge[MEM_BYTES], Some(10.0));
        // Next scrape: `other` grows by what the folded used since, never goes back.
        let prev: HashMap<String, Prev> = cgroups
            .iter()
            .zip(&f.exposed)
            .map(|((rel, values), &exposed)| {
                (
                    rel.clone(),
                    Prev {
                        values: *values,
                        exposed,
                    },
                )
            })
            .collect();
        let next = vec![
            ("busy".to_string(), usage(9.1, 100.0)),
            ("idle".to_string(), usage(1.5, 10.0)),
            ("quiet".to_string(), usage(2.0, 20.0)),
        ];
        let f = fold(&next, &prev, 2, &mut other);
        // idle used 0.5 s since: it is now more active than quiet (0 s) and is exposed.
        assert_eq!(f.exposed, [true, true, false]);
        assert_eq!(other[USAGE_S], Some(1.0 + 0.0));
    }
}
