//! The only place that names the roots of the proc and sys filesystems.
//!
//! Every reader takes a [`Paths`] so `--path.procfs` and `--path.sysfs` reach it, which is what
//! lets fixture trees under `exporter/tests/fixtures/` stand in for a real host.

use std::path::{Path, PathBuf};

/// Default mount point of procfs.
pub const DEFAULT_PROCFS: &str = "/proc";
/// Default mount point of sysfs.
pub const DEFAULT_SYSFS: &str = "/sys";
/// Default device directory; the msr collector reads `cpu/N/msr` under it.
pub const DEFAULT_DEVFS: &str = "/dev";

/// Roots of the pseudo-filesystems a collector reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    pub procfs: PathBuf,
    pub sysfs: PathBuf,
    /// Device directory (`--path.devfs`), for the MSR device files.
    pub devfs: PathBuf,
}

impl Default for Paths {
    fn default() -> Self {
        Paths {
            procfs: PathBuf::from(DEFAULT_PROCFS),
            sysfs: PathBuf::from(DEFAULT_SYSFS),
            devfs: PathBuf::from(DEFAULT_DEVFS),
        }
    }
}

impl Paths {
    pub fn new(procfs: impl Into<PathBuf>, sysfs: impl Into<PathBuf>) -> Self {
        Paths {
            procfs: procfs.into(),
            sysfs: sysfs.into(),
            devfs: PathBuf::from(DEFAULT_DEVFS),
        }
    }

    /// The same roots with another device directory.
    pub fn with_devfs(mut self, devfs: impl Into<PathBuf>) -> Self {
        self.devfs = devfs.into();
        self
    }

    /// A path under the device directory, e.g. `dev("cpu/0/msr")`.
    pub fn dev(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.devfs.join(rel)
    }

    /// A path under procfs, e.g. `proc("net/dev")`.
    pub fn proc(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.procfs.join(rel)
    }

    /// A path under sysfs, e.g. `sys("class/infiniband")`.
    pub fn sys(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.sysfs.join(rel)
    }
}
