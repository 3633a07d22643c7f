//! The exporter's only `unsafe` code: the `perf_event_open(2)` system call and the file
//! descriptor limit. Everything else reads the returned descriptors through safe `std::fs::File`.
//!
//! Why not the `perf-event` crate's `Group`: in 0.4 a group is always opened for the calling
//! process on any CPU with kernel counting excluded (pid 0, cpu -1), its `read` asserts (panics)
//! on an unexpected kernel answer, and members can only join a `Group` value, not a descriptor.
//! Per-CPU, all-task groups (pid -1, cpu N) need the call itself, so this module uses
//! `perf-event-open-sys`, the bindings `perf-event` is built on.
//! Reference: <https://man7.org/linux/man-pages/man2/perf_event_open.2.html>.

use perf_event_open_sys as sys;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};

/// `perf_event_attr.type` of the generic hardware events.
pub const TYPE_HARDWARE: u32 = sys::bindings::PERF_TYPE_HARDWARE;
/// `perf_event_attr.type` of the kernel's software events.
pub const TYPE_SOFTWARE: u32 = sys::bindings::PERF_TYPE_SOFTWARE;
/// `perf_event_attr.type` of model-specific raw events of the core PMU.
pub const TYPE_RAW: u32 = sys::bindings::PERF_TYPE_RAW;

/// The fields of `perf_event_attr` that select an event. Dynamic PMUs (msr, cstate_core, …)
/// take their `type_` from `/sys/bus/event_source/devices/<pmu>/type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventSpec {
    pub type_: u32,
    pub config: u64,
    pub config1: u64,
    pub config2: u64,
}

impl EventSpec {
    pub const fn new(type_: u32, config: u64) -> Self {
        EventSpec {
            type_,
            config,
            config1: 0,
            config2: 0,
        }
    }
}

/// Bytes of one group read with `GROUP | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING` (no ids):
/// `nr, time_enabled, time_running, value[nr]`, each a native-endian u64.
pub const fn group_read_len(members: usize) -> usize {
    8 * (3 + members)
}

/// Opens one counting (not sampling) event for all tasks on `cpu`. With `leader` it joins that
/// group; without, it becomes a group leader whose reads return every member's count plus the
/// group's enabled and running times. A leader starts disabled: members added to a running
/// group would never be scheduled (perf_event_open(2): "the child events will not start until
/// the group leader is enabled"), so call [`enable_group`] once every member is open.
pub fn open_cpu_counter(spec: &EventSpec, cpu: u32, leader: Option<&File>) -> io::Result<File> {
    let mut attr = sys::bindings::perf_event_attr {
        size: std::mem::size_of::<sys::bindings::perf_event_attr>() as u32,
        type_: spec.type_,
        config: spec.config,
        read_format: u64::from(
            sys::bindings::PERF_FORMAT_GROUP
                | sys::bindings::PERF_FORMAT_TOTAL_TIME_ENABLED
                | sys::bindings::PERF_FORMAT_TOTAL_TIME_RUNNING,
        ),
        ..Default::default()
    };
    // Writing a union field is safe; config1/config2 share storage with breakpoint fields
    // that counting events leave unused.
    attr.__bindgen_anon_3.config1 = spec.config1;
    attr.__bindgen_anon_4.config2 = spec.config2;
    attr.set_disabled(u64::from(leader.is_none()));
    let cpu = i32::try_from(cpu).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let group_fd = leader.map_or(-1, |f| f.as_raw_fd());
    let flags = libc::c_ulong::from(sys::bindings::PERF_FLAG_FD_CLOEXEC);
    // SAFETY: `attr` is a fully initialised `perf_event_attr` whose `size` is the size of the
    // struct the bindings declare, so the kernel reads no more than we own. It asks only to
    // count (no sampling, no mmap buffers), which cannot write into our memory. `group_fd` is
    // -1 or the descriptor of a `File` borrowed for the duration of the call.
    let fd = unsafe { sys::perf_event_open(&mut attr, -1, cpu, group_fd, flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned `fd` as a new descriptor; nothing else owns it.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Starts every counter of the group led by `leader`, at once.
pub fn enable_group(leader: &File) -> io::Result<()> {
    // SAFETY: PERF_EVENT_IOC_ENABLE takes an integer argument (PERF_IOC_FLAG_GROUP), no
    // pointer; the descriptor belongs to a `File` borrowed for the call.
    let r = unsafe { sys::ioctls::ENABLE(leader.as_raw_fd(), sys::bindings::PERF_IOC_FLAG_GROUP) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Raises the soft limit on open descriptors to the hard limit: per-CPU counters need
/// (events × CPUs) descriptors, which passes the common soft limit of 1024 on large hosts.
/// Returns the new soft limit.
pub fn raise_fd_limit() -> io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable `rlimit` for the duration of the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if lim.rlim_cur < lim.rlim_max {
        lim.rlim_cur = lim.rlim_max;
        // SAFETY: `lim` is a valid `rlimit`; raising the soft limit up to the hard limit needs
        // no privilege and affects only descriptor accounting.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(lim.rlim_cur)
}
