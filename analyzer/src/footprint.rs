//! The service keeps the memory it has used, so that its refits do not move the memory of
//! the host it runs on.
//!
//! A refit holds copies of a host's baseline for a few seconds: for a 30-minute baseline of a
//! few thousand features, tens of megabytes. By default glibc gives large blocks back to the
//! kernel as soon as they are freed (a block over its mapping threshold is mapped on its own
//! and unmapped at free; the heap's free top is trimmed), so every refit raised the machine's
//! anonymous memory by that much for a second and dropped it again. The analyzer often watches
//! the machine it runs on — the quick start runs everything on one host, and a monitoring node
//! runs an exporter too — and there those spikes are a memory fault to its own detectors: in
//! live run 21 (docs/evaluation/history.md) anonymous memory rose by 75–115 MB for a second
//! at every refit of its two analyzers, and the memory windows flagged at those moments were
//! theirs.
//!
//! So the service asks the allocator to keep what is freed: one arena for every thread (a
//! thread's own arena maps any block over 64 MB on its own, whatever else is asked), no block
//! mapped on its own, no trimming. Resident memory grows to the most a fit has needed and
//! stays there, and the next refit reuses it. The cost is resident memory at the fit's peak
//! between refits, which is what a memory limit must allow anyway. Only glibc is asked;
//! elsewhere nothing changes.

/// Makes the allocator keep freed memory (see the module): returns whether it took every
/// setting. Call once at start, before any other thread is started (a thread keeps the arena
/// it had).
pub fn keep_freed_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes the allocator's parameters, under its own lock; it
        // touches no memory of the caller.
        #[allow(unsafe_code)]
        unsafe {
            let one_arena = libc::mallopt(libc::M_ARENA_MAX, 1) == 1;
            let no_own_mappings = libc::mallopt(libc::M_MMAP_MAX, 0) == 1;
            let no_trim = libc::mallopt(libc::M_TRIM_THRESHOLD, libc::c_int::MAX) == 1;
            one_arena && no_own_mappings && no_trim
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    /// Resident bytes of this process (`/proc/self/statm`, pages).
    fn resident() -> i64 {
        let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
        let pages: i64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
        pages * 4096
    }

    /// Allocates `bytes`, touches every page, frees it: resident memory before the free and
    /// after it.
    fn use_and_free(bytes: usize) -> (i64, i64) {
        let mut block = vec![0u8; bytes];
        for i in (0..bytes).step_by(4096) {
            block[i] = 1;
        }
        let during = resident();
        std::hint::black_box(&block);
        drop(block);
        (during, resident())
    }

    #[test]
    fn freed_memory_goes_back_by_default_and_stays_once_kept() {
        const BLOCK: usize = 200 << 20;
        // glibc's default: a 200 MB block is mapped on its own and unmapped at free.
        let (during, after) = use_and_free(BLOCK);
        assert!(
            during - after > 150 << 20,
            "by default the block goes back: {during} → {after}"
        );
        assert!(keep_freed_memory());
        // Kept (on a thread started after, as the service's are): the memory stays resident
        // after the free, and using it again takes nothing more from the machine.
        let (during, after, again) = std::thread::spawn(|| {
            let (during, after) = use_and_free(BLOCK);
            let (again, _) = use_and_free(BLOCK);
            (during, after, again)
        })
        .join()
        .expect("the thread ends");
        assert!(
            during - after < 20 << 20,
            "kept, the block stays: {during} → {after}"
        );
        assert!(
            again - during < 20 << 20,
            "the next use reuses it: {during} → {again}"
        );
    }
}
