//! Which job: given each cgroup's usage and pressure before a host's anomaly and during it,
//! the cgroup that took more of the subsystem (the cause) and the cgroups that stalled more
//! while using no more (the ones that suffer).
//!
//! The rule, in full: a cgroup *rose* when its usage during the episode exceeds its usage
//! before by at least the subsystem's floor ([`Resource::floor`]). Cgroups nest (a parent's
//! usage includes its children's), so a risen cgroup is left out when one of its risen
//! descendants accounts for at least half of its rise: the deepest cgroup that explains the
//! rise is named. The cause is the risen cgroup with the largest rise. A cgroup *suffers*
//! when the share of time its tasks stalled (PSI `some`) rose by at least
//! [`PRESSURE_FLOOR`] while its usage did not rise, and it is neither the cause nor one of
//! its ancestors or descendants. `other` (the cgroups the exporter sums) is never named.

/// The subsystems with per-cgroup usage, and how their usage is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// CPU time, in cores (CPU seconds a second).
    Cpu,
    /// Memory charged to the cgroup, in bytes.
    Memory,
    /// Bytes read and written to block devices, a second.
    Storage,
}

/// The least rise in the share of time stalled (0–1) that counts as suffering.
pub const PRESSURE_FLOOR: f64 = 0.10;

/// At most this many suffering cgroups are named.
pub const MAX_SUFFERING: usize = 3;

impl Resource {
    /// The analyzer's subsystem name of a resource, and back.
    pub fn of_subsystem(subsystem: &str) -> Option<Resource> {
        match subsystem {
            "cpu" => Some(Resource::Cpu),
            "memory" => Some(Resource::Memory),
            "storage" => Some(Resource::Storage),
            _ => None,
        }
    }

    /// The least rise of usage that names a cgroup: a quarter of a core, 64 MiB, 1 MB/s.
    /// Below these a cgroup's change is within what a busy host's services do anyway.
    pub fn floor(self) -> f64 {
        match self {
            Resource::Cpu => 0.25,
            Resource::Memory => 64.0 * 1024.0 * 1024.0,
            Resource::Storage => 1e6,
        }
    }

    /// `value` in the unit a user reads: "1.9 cores", "512 MiB", "48 MB/s".
    pub fn format(self, value: f64) -> String {
        match self {
            Resource::Cpu => format!("{value:.1} cores"),
            Resource::Memory => format!("{:.0} MiB", value / (1024.0 * 1024.0)),
            Resource::Storage => format!("{:.1} MB/s", value / 1e6),
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Resource::Cpu => "CPU",
            Resource::Memory => "memory",
            Resource::Storage => "I/O",
        }
    }
}

/// One cgroup's usage and pressure (share of time stalled, 0–1) before the episode and
/// during it; pressure is absent where the kernel or the hierarchy has none.
#[derive(Debug, Clone, PartialEq)]
pub struct CgroupChange {
    pub cgroup: String,
    pub usage_before: f64,
    pub usage_during: f64,
    pub pressure_before: Option<f64>,
    pub pressure_during: Option<f64>,
}

impl CgroupChange {
    fn rise(&self) -> f64 {
        self.usage_during - self.usage_before
    }

    fn pressure_rise(&self) -> Option<f64> {
        Some(self.pressure_during? - self.pressure_before?)
    }
}

/// What the cgroups say about one subsystem's anomaly.
#[derive(Debug, Clone, PartialEq)]
pub struct Culprit {
    pub resource: Resource,
    /// The cgroup that took more, if one did.
    pub cause: Option<CgroupChange>,
    /// Cgroups that stalled more without using more, the most stalled first.
    pub suffering: Vec<CgroupChange>,
}

/// Whether `a` is `b` or nests in it (`b/…`).
fn within(a: &str, b: &str) -> bool {
    a == b || (a.len() > b.len() && a.starts_with(b) && a.as_bytes()[b.len()] == b'/')
}

/// Keeps the deepest cgroups that explain a change: a cgroup is dropped when one of its
/// descendants in `set` has at least half of its `amount`.
fn deepest(set: Vec<&CgroupChange>, amount: impl Fn(&CgroupChange) -> f64) -> Vec<&CgroupChange> {
    set.iter()
        .copied()
        .filter(|c| {
            !set.iter().any(|d| {
                d.cgroup != c.cgroup && within(&d.cgroup, &c.cgroup) && amount(d) >= 0.5 * amount(c)
            })
        })
        .collect()
}

/// The cause and the suffering cgroups of one subsystem's anomaly ([module docs](self)).
pub fn find(resource: Resource, changes: &[CgroupChange]) -> Culprit {
    let named: Vec<&CgroupChange> = changes
        .iter()
        .filter(|c| c.cgroup != "other" && !c.cgroup.is_empty())
        .filter(|c| c.usage_before.is_finite() && c.usage_during.is_finite())
        .collect();
    let floor = resource.floor();
    let risen: Vec<&CgroupChange> = named
        .iter()
        .copied()
        .filter(|c| c.rise() >= floor)
        .collect();
    let cause = deepest(risen, CgroupChange::rise)
        .into_iter()
        .max_by(|a, b| a.rise().total_cmp(&b.rise()).then(b.cgroup.cmp(&a.cgroup)))
        .cloned();
    let stalled: Vec<&CgroupChange> = named
        .iter()
        .copied()
        .filter(|c| c.rise() < floor)
        .filter(|c| c.pressure_rise().is_some_and(|p| p >= PRESSURE_FLOOR))
        .filter(|c| {
            cause
                .as_ref()
                .is_none_or(|k| !within(&c.cgroup, &k.cgroup) && !within(&k.cgroup, &c.cgroup))
        })
        .collect();
    let pressure = |c: &CgroupChange| c.pressure_rise().unwrap_or(0.0);
    let mut suffering: Vec<CgroupChange> =
        deepest(stalled, pressure).into_iter().cloned().collect();
    suffering.sort_by(|a, b| {
        pressure(b)
            .total_cmp(&pressure(a))
            .then(a.cgroup.cmp(&b.cgroup))
    });
    suffering.truncate(MAX_SUFFERING);
    Culprit {
        resource,
        cause,
        suffering,
    }
}

fn percent(share: f64) -> String {
    format!("{:.0} %", (share * 100.0).clamp(0.0, 100.0))
}

impl Culprit {
    /// Whether the cgroups name anyone.
    pub fn is_empty(&self) -> bool {
        self.cause.is_none() && self.suffering.is_empty()
    }

    /// The cause's cgroup, the alert's `cgroup` label.
    pub fn cause_cgroup(&self) -> Option<&str> {
        self.cause.as_ref().map(|c| c.cgroup.as_str())
    }

    /// The sentence added to the alert's claim: "cgroup `job_1234` took 1.9 cores more
    /// (0.1 → 2.0); its CPU pressure went 0 → 80 %. Stalled without using more: `a` (CPU
    /// pressure 2 → 45 %)."
    pub fn sentence(&self) -> String {
        let r = self.resource;
        let mut out = String::new();
        if let Some(c) = &self.cause {
            out.push_str(&format!(
                "cgroup `{}` took {} more ({} → {})",
                c.cgroup,
                r.format(c.rise()),
                r.format(c.usage_before),
                r.format(c.usage_during)
            ));
            if let (Some(b), Some(d)) = (c.pressure_before, c.pressure_during) {
                out.push_str(&format!(
                    "; its {} pressure went {} → {}",
                    r.noun(),
                    percent(b),
                    percent(d)
                ));
            }
            out.push('.');
        }
        if !self.suffering.is_empty() {
            if !out.is_empty() {
                out.push(' ');
            }
            let names: Vec<String> = self
                .suffering
                .iter()
                .map(|c| {
                    format!(
                        "`{}` ({} pressure {} → {})",
                        c.cgroup,
                        r.noun(),
                        percent(c.pressure_before.unwrap_or(0.0)),
                        percent(c.pressure_during.unwrap_or(0.0))
                    )
                })
                .collect();
            out.push_str(&format!(
                "Stalled without using more: {}.",
                names.join(", ")
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cg(name: &str, before: f64, during: f64, p: Option<(f64, f64)>) -> CgroupChange {
        CgroupChange {
            cgroup: name.to_string(),
            usage_before: before,
            usage_during: during,
            pressure_before: p.map(|p| p.0),
            pressure_during: p.map(|p| p.1),
        }
    }

    #[test]
    fn the_cgroup_that_took_more_is_the_cause_and_the_one_that_waited_suffers() {
        let changes = [
            cg("slurm/job_1234", 0.1, 2.0, Some((0.0, 0.8))),
            cg("slurm/job_77", 0.5, 0.52, Some((0.02, 0.45))),
            cg("system.slice/sshd.service", 0.0, 0.01, Some((0.0, 0.01))),
            cg("other", 0.0, 3.0, None),
        ];
        let c = find(Resource::Cpu, &changes);
        assert_eq!(c.cause_cgroup(), Some("slurm/job_1234"));
        assert_eq!(c.suffering.len(), 1);
        assert_eq!(c.suffering[0].cgroup, "slurm/job_77");
        assert_eq!(
            c.sentence(),
            "cgroup `slurm/job_1234` took 1.9 cores more (0.1 cores → 2.0 cores); its CPU \
             pressure went 0 % → 80 %. Stalled without using more: `slurm/job_77` (CPU \
             pressure 2 % → 45 %)."
        );
    }

    #[test]
    fn the_deepest_cgroup_that_explains_the_rise_is_named_not_its_parents() {
        let changes = [
            cg("kubepods.slice", 1.0, 3.0, None),
            cg("kubepods.slice/pod-a", 0.5, 2.4, None),
            cg("kubepods.slice/pod-a/ctr", 0.4, 2.3, None),
            cg("kubepods.slice/pod-b", 0.5, 0.6, None),
        ];
        let c = find(Resource::Cpu, &changes);
        assert_eq!(c.cause_cgroup(), Some("kubepods.slice/pod-a/ctr"));
        // A parent whose children each took a small part of its rise is named itself.
        let spread = [
            cg("batch.slice", 0.0, 2.0, None),
            cg("batch.slice/a", 0.0, 0.6, None),
            cg("batch.slice/b", 0.0, 0.6, None),
            cg("batch.slice/c", 0.0, 0.8, None),
        ];
        assert_eq!(
            find(Resource::Cpu, &spread).cause_cgroup(),
            Some("batch.slice")
        );
    }

    #[test]
    fn below_the_floor_nobody_is_named() {
        let changes = [
            cg("a", 0.1, 0.3, Some((0.0, 0.05))),
            cg("b", 0.2, 0.1, None),
            cg("other", 0.0, 5.0, None),
        ];
        let c = find(Resource::Cpu, &changes);
        assert!(c.is_empty(), "{c:?}");
        assert_eq!(c.sentence(), "");
        // Memory and storage floors are in their own units.
        let mem = [cg("job", 1e9, 1e9 + 32.0 * 1048576.0, None)];
        assert!(find(Resource::Memory, &mem).is_empty());
        let mem = [cg("job", 1e9, 1e9 + 512.0 * 1048576.0, None)];
        assert_eq!(find(Resource::Memory, &mem).cause_cgroup(), Some("job"));
    }

    #[test]
    fn the_cause_and_its_family_do_not_suffer_and_a_suffering_cgroup_needs_pressure() {
        let changes = [
            cg("job", 0.0, 1.5, Some((0.0, 0.9))),
            cg("job/step0", 0.0, 0.1, Some((0.0, 0.9))),
            cg("victim", 1.0, 1.0, Some((0.1, 0.6))),
            cg("no-psi", 1.0, 1.0, None),
            cg("nan", f64::NAN, 1.0, Some((0.0, 1.0))),
        ];
        let c = find(Resource::Cpu, &changes);
        assert_eq!(c.cause_cgroup(), Some("job"));
        let names: Vec<&str> = c.suffering.iter().map(|s| s.cgroup.as_str()).collect();
        assert_eq!(names, ["victim"]);
    }

    #[test]
    fn only_cpu_memory_and_storage_have_per_cgroup_usage() {
        assert_eq!(Resource::of_subsystem("cpu"), Some(Resource::Cpu));
        assert_eq!(Resource::of_subsystem("storage"), Some(Resource::Storage));
        assert_eq!(Resource::of_subsystem("network"), None);
        assert!(within("a/b", "a") && within("a", "a") && !within("ab", "a"));
    }
}
