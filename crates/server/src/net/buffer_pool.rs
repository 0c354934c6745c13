//! Buffers that parked connections gave back, kept on their worker for
//! the next connection with bytes to read.
//!
//! A connection waiting for its next request holds no buffers (see
//! `Stream::read_or_idle`): ten thousand idle clients cost none. Freed
//! to the allocator and taken afresh for every request, though, they cost
//! more than the request: a 16 KB buffer is one of jemalloc's large size
//! classes, and with hundreds of connections cycling through one worker
//! its thread cache overflows, the freed extents are returned with
//! `madvise(MADV_DONTNEED)` (a TLB shoot-down) and the next `recv` faults
//! the pages back in. At 512 redis-benchmark clients doing GET that was
//! 4% of the worker's time, in the kernel alone.
//!
//! So a buffer given back stays on its worker for the next connection.
//! Only the connections between a read and their reply hold one, but a
//! round of the event loop can be hundreds of them (512 clients: up to a
//! buffer pair each), so the pool may grow to [`POOLED`]; what a whole
//! trimming period never took out again goes back to the allocator.
//!
//! Larger buffers (up to 1 MB: a batch of pipelined large values, its
//! replies) are kept too, a few of them, and handed to a connection that
//! asks for that much room: GET of 30 KB values ten at a time otherwise
//! grew a fresh reply buffer from 16 KB to 512 KB by doubling, faulting
//! its pages in, for every batch.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Bytes the pools of all workers hold. Not counted against
/// `maxmemory` (eviction subtracts them, INFO memory shows them as
/// `mem_not_counted_for_evict`): they are scratch space any connection's
/// next batch reuses, not data, and counting them took up to a few
/// megabytes from the dataset's room under a tight limit.
static POOLED_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Bytes held in the buffer pools now.
pub fn pooled_bytes() -> usize {
    POOLED_BYTES.load(Relaxed)
}

/// Buffers kept per worker, at most (16-32 KB each).
const POOLED: usize = 1024;
/// Smallest and largest capacity worth keeping: the standard read size
/// up to twice it. A buffer grown for a large request goes back to the
/// allocator.
const KEEP_MIN: usize = 16 * 1024;
const KEEP_MAX: usize = 32 * 1024;
/// Buffers given back per trimming period.
const TRIM_EVERY: u32 = 4096;
/// Larger buffers kept per worker, at most, and the largest kept.
const BIG_POOLED: usize = 16;
const BIG_MAX: usize = 1024 * 1024;

thread_local! {
    static FREE: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
    /// The fewest buffers the pool held this period: that many were
    /// never needed.
    static LOW_WATER: Cell<usize> = const { Cell::new(0) };
    static GIVEN: Cell<u32> = const { Cell::new(0) };
    static BIG: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
    /// Whether a larger buffer was taken this period.
    static BIG_TAKEN: Cell<bool> = const { Cell::new(false) };
}

/// Takes `buf` (its contents are dropped), leaving it without an
/// allocation, and keeps its memory for [`refill`].
pub fn give_back(buf: &mut Vec<u8>) {
    let mut b = std::mem::take(buf);
    if b.capacity() > KEEP_MAX && b.capacity() <= BIG_MAX {
        b.clear();
        BIG.with(|p| {
            let mut p = p.borrow_mut();
            if p.len() < BIG_POOLED {
                POOLED_BYTES.fetch_add(b.capacity(), Relaxed);
                p.push(b);
            }
        });
        return;
    }
    if (KEEP_MIN..=KEEP_MAX).contains(&b.capacity()) {
        b.clear();
        FREE.with(|f| {
            let mut f = f.borrow_mut();
            if f.len() < POOLED {
                POOLED_BYTES.fetch_add(b.capacity(), Relaxed);
                f.push(b);
            }
            let given = GIVEN.with(|g| {
                g.set(g.get() + 1);
                g.get()
            });
            if given >= TRIM_EVERY {
                GIVEN.with(|g| g.set(0));
                let unused = LOW_WATER.with(|l| l.replace(usize::MAX));
                let keep = f.len().saturating_sub(unused.min(f.len()));
                let freed: usize = f.drain(keep..).map(|b| b.capacity()).sum();
                f.shrink_to(keep.max(16));
                if !BIG_TAKEN.with(|t| t.replace(false)) {
                    let big = BIG.with(|p| std::mem::take(&mut *p.borrow_mut()));
                    POOLED_BYTES.fetch_sub(big.iter().map(Vec::capacity).sum(), Relaxed);
                }
                POOLED_BYTES.fetch_sub(freed, Relaxed);
            }
        });
    }
}

/// Gives `buf` at least `room` bytes of spare capacity, from a kept
/// buffer when it has no allocation of its own.
pub fn refill(buf: &mut Vec<u8>, room: usize) {
    if buf.capacity() == 0 && room > KEEP_MAX {
        let taken = BIG.with(|p| {
            let mut p = p.borrow_mut();
            let i = p.iter().position(|b| b.capacity() >= room)?;
            Some(p.swap_remove(i))
        });
        if let Some(b) = taken {
            BIG_TAKEN.with(|t| t.set(true));
            POOLED_BYTES.fetch_sub(b.capacity(), Relaxed);
            *buf = b;
        }
    }
    // A kept buffer too small for `room` would be grown by `realloc`,
    // which copies its old contents (garbage here): 1.6% of a profile of
    // pipelined 18 KB SETs. A fresh allocation copies nothing.
    if buf.capacity() == 0 {
        let taken = FREE.with(|f| {
            let mut f = f.borrow_mut();
            if f.last().is_none_or(|b| b.capacity() < room) {
                return None;
            }
            let b = f.pop();
            LOW_WATER.with(|l| l.set(l.get().min(f.len())));
            b
        });
        if let Some(b) = taken {
            POOLED_BYTES.fetch_sub(b.capacity(), Relaxed);
            *buf = b;
        }
    }
    buf.reserve(room);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_by_size() {
        let mut a = Vec::with_capacity(KEEP_MIN);
        a.extend_from_slice(b"left over");
        let ptr = a.as_ptr();
        give_back(&mut a);
        assert_eq!(a.capacity(), 0);
        let mut b = Vec::new();
        refill(&mut b, KEEP_MIN);
        assert_eq!(b.as_ptr(), ptr);
        assert!(b.is_empty());

        let mut big = Vec::with_capacity(KEEP_MAX * 4);
        give_back(&mut big);
        let mut c: Vec<u8> = Vec::new();
        refill(&mut c, 100);
        assert!(c.capacity() >= 100);
        assert!(c.capacity() < KEEP_MAX * 4);
        // A kept buffer smaller than the room asked for stays kept.
        let mut small = Vec::with_capacity(KEEP_MIN);
        give_back(&mut small);
        let mut e: Vec<u8> = Vec::new();
        refill(&mut e, KEEP_MAX);
        assert_eq!(FREE.with(|f| f.borrow().len()), 1);
        // ... unless a connection asks for that much room.
        let mut d: Vec<u8> = Vec::new();
        refill(&mut d, KEEP_MAX * 3);
        assert_eq!(d.capacity(), KEEP_MAX * 4);
    }

    #[test]
    fn buffers_no_period_needed_are_freed() {
        let pooled = || FREE.with(|f| f.borrow().len());
        let mut held: Vec<Vec<u8>> = (0..100).map(|_| Vec::with_capacity(KEEP_MIN)).collect();
        for b in &mut held {
            give_back(b);
        }
        assert_eq!(pooled(), 100);
        // Load that needs one buffer at a time: one full period trims
        // nothing (nothing was measured before it), the next frees the
        // 99 never taken.
        for _ in 0..2 * TRIM_EVERY {
            let mut b = Vec::new();
            refill(&mut b, 10);
            give_back(&mut b);
        }
        assert_eq!(pooled(), 1);
    }
}
