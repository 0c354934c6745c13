//! The process allocator: jemalloc, counted.
//!
//! `maxmemory` is checked before every command, so "how much memory does
//! the process hold" must cost a load, not a jemalloc statistics refresh
//! (an epoch merge over every arena). Each thread keeps a private running
//! delta of what it allocated minus what it freed and folds it into one
//! shared counter once it passes [`FLUSH`] bytes either way: the shared
//! counter is off by at most `FLUSH` per thread, and the hot path touches
//! only thread-local memory. Sizes are counted as jemalloc's size classes
//! (what `stats.allocated` counts), so the counter tracks what jemalloc
//! reports (a test compares them).

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};

pub struct Counting;

/// The allocator underneath. Fuzz builds use the system's, which the
/// sanitizers intercept (jemalloc's own heap is invisible to them).
#[cfg(not(feature = "fuzzing"))]
const INNER: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
#[cfg(feature = "fuzzing")]
const INNER: std::alloc::System = std::alloc::System;

static USED: AtomicIsize = AtomicIsize::new(0);

/// How far a thread's private delta may drift before it is folded in.
const FLUSH: isize = 64 * 1024;

thread_local! {
    // No destructor (a const Cell of an integer): usable from the
    // allocator at any point of a thread's life, teardown included.
    static DELTA: Cell<isize> = const { Cell::new(0) };
}

/// jemalloc's usable size for a request of `size` bytes (its size
/// classes with a 16-byte quantum and four classes per doubling above
/// 128 bytes; allocations aligned beyond 16 bytes are rare and counted
/// at their size).
#[inline]
pub fn size_class(size: usize) -> usize {
    if size <= 8 {
        8
    } else if size <= 128 {
        (size + 15) & !15
    } else {
        let group = 1usize << (usize::BITS - 1 - (size - 1).leading_zeros());
        let step = group / 4;
        (size + step - 1) & !(step - 1)
    }
}

#[inline]
fn count(delta: isize) {
    DELTA.with(|d| {
        let v = d.get() + delta;
        if v >= FLUSH || v <= -FLUSH {
            USED.fetch_add(v, Relaxed);
            d.set(0);
        } else {
            d.set(v);
        }
    });
}

/// Bytes the process holds through the allocator (Redis's
/// `zmalloc_used_memory`), within 64 KB per thread.
#[inline]
pub fn used() -> usize {
    USED.load(Relaxed).max(0) as usize
}

/// Folds this thread's delta into the shared counter: a thread that is
/// about to exit calls it so its last allocations are not lost.
pub fn flush_thread() {
    let v = DELTA.with(|d| d.replace(0));
    USED.fetch_add(v, Relaxed);
}

// SAFETY: every call is forwarded unchanged to jemalloc (or, in fuzz
// builds, the system allocator), which upholds
// GlobalAlloc's contract; the counting touches no allocation.
unsafe impl GlobalAlloc for Counting {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { INNER.alloc(layout) };
        if !p.is_null() {
            count(size_class(layout.size()) as isize);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { INNER.alloc_zeroed(layout) };
        if !p.is_null() {
            count(size_class(layout.size()) as isize);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(size_class(layout.size()) as isize));
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { INNER.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { INNER.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(size_class(new_size) as isize - size_class(layout.size()) as isize);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_are_jemallocs() {
        let cases = [
            (1, 8),
            (8, 8),
            (9, 16),
            (40, 48),
            (57, 64),
            (128, 128),
            (129, 160),
            (200, 224),
            (257, 320),
            (4097, 5120),
            (16384, 16384),
            (18000, 20480),
            (1 << 20, 1 << 20),
            ((1 << 20) + 1, 1_310_720),
        ];
        for (size, class) in cases {
            assert_eq!(size_class(size), class, "{size}");
        }
        // Against jemalloc itself, through its usable size.
        #[cfg(not(feature = "fuzzing"))]
        for size in [1usize, 24, 100, 700, 3000, 18000, 70000, 300000] {
            let v: Vec<u8> = Vec::with_capacity(size);
            // SAFETY: a live allocation of this allocator.
            let usable = unsafe { tikv_jemallocator::usable_size(v.as_ptr()) };
            assert_eq!(size_class(size), usable, "{size}");
        }
    }
}
