//! A global allocator that counts: the bytes live now and the most live since a mark. For
//! the examples that measure what the analyzer holds per host and what a fit needs at its
//! peak, exactly and whatever the system allocator keeps or gives back.
//!
//! Include with `#[path = "support/alloc_count.rs"] mod alloc_count;` and declare
//! `#[global_allocator] static A: alloc_count::Counting = alloc_count::Counting;`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, with every allocation counted.
pub struct Counting;

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Relaxed) + by;
    PEAK.fetch_max(now, Relaxed);
}

// SAFETY: every call is passed to the system allocator unchanged; only counters are added.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for this call is the system allocator's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for this call is the system allocator's.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for this call is the system allocator's.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for this call is the system allocator's.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Relaxed);
            grew(new_size);
        }
        p
    }
}

/// Bytes live now, in MB.
pub fn live_mb() -> f64 {
    LIVE.load(Relaxed) as f64 / 1e6
}

/// Starts a new peak at what is live now.
pub fn mark() {
    PEAK.store(LIVE.load(Relaxed), Relaxed);
}

/// The most bytes live since the last [`mark`], in MB.
pub fn peak_mb() -> f64 {
    PEAK.load(Relaxed) as f64 / 1e6
}
