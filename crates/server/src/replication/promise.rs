//! Promises over the replication link: what lets a cluster primary keep
//! serving while etcd cannot renew its lease (see the fencing note in
//! `crate::cluster`).
//!
//! A replica promises not to bid for its primary's place until a
//! promise period after it last received bytes of the stream (and, after
//! a restart, until a period after it started: it may have promised just
//! before). The primary cannot see the replica's clock, but it knows when
//! it fed what: it keeps [`Marks`], `(offset, instant)` pairs taken before
//! it feeds a `REPLCONF GETACK *`. A replica's ACK past a mark's offset
//! proves it received bytes fed after the mark's instant, so its promise
//! lasts at least until that instant plus the period ([`heard_after`]).
//!
//! [`heard_after`]: crate::replication::ReplicaLink::heard_after

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Marks kept: the newest an ACK can be past, and enough older ones for a
/// replica a few rounds behind.
const MARKS: usize = 64;

/// The instant all of this module's nanosecond counts start from.
fn base() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

/// Nanoseconds since [`base`] (never 0: 0 means "never").
pub fn now_ns() -> u64 {
    (base().elapsed().as_nanos() as u64).max(1)
}

pub fn instant(ns: u64) -> Instant {
    base() + Duration::from_nanos(ns)
}

/// The primary's side: when the stream passed which offset.
#[derive(Default)]
pub struct Marks {
    marks: Mutex<VecDeque<(u64, u64)>>,
}

impl Marks {
    /// Records that every byte fed from now on lies past `offset` (read
    /// after `at_ns` was taken).
    pub fn mark(&self, at_ns: u64, offset: u64) {
        let mut marks = self.marks.lock();
        if marks.len() == MARKS {
            marks.pop_front();
        }
        marks.push_back((offset, at_ns));
    }

    /// The latest instant (ns) a replica that acknowledged `acked` is known
    /// to have received bytes fed after.
    pub fn fed_after(&self, acked: u64) -> Option<u64> {
        let marks = self.marks.lock();
        marks
            .iter()
            .rev()
            .find(|(offset, _)| *offset < acked)
            .map(|&(_, at)| at)
    }
}

/// The replica's side: when it last heard its primary, when it began, and
/// whether it is taking its primary's place (then it acknowledges
/// nothing: an ACK would renew a promise).
///
/// The link's `heard` (a store, then the ACK's read of `electing`) and the
/// election's `start_electing` (a store, then `bound`'s read of the last
/// hearing) are sequentially consistent: either the election sees the
/// hearing and stops, or the link sees the election and does not promise.
pub struct Heard {
    last_ns: AtomicU64,
    started_ns: u64,
    electing: AtomicBool,
}

impl Default for Heard {
    fn default() -> Heard {
        Heard {
            last_ns: AtomicU64::new(0),
            started_ns: now_ns(),
            electing: AtomicBool::new(false),
        }
    }
}

impl Heard {
    /// Bytes of the stream arrived.
    #[inline]
    pub fn heard(&self) {
        self.last_ns.store(now_ns(), SeqCst);
    }

    /// Whether an ACK may go (it renews this replica's promise).
    #[inline]
    pub fn may_promise(&self) -> bool {
        !self.electing.load(SeqCst)
    }

    /// About to take the primary's place: no more promises. The caller
    /// then checks `bound` again.
    pub fn start_electing(&self) {
        self.electing.store(true, SeqCst);
    }

    pub fn stop_electing(&self) {
        self.electing.store(false, SeqCst);
    }

    /// When bytes of the stream last arrived (0: never).
    pub fn last_ns(&self) -> u64 {
        self.last_ns.load(Relaxed)
    }

    /// Whether a promise made with `period` may still bind this replica:
    /// it heard its primary, or started, less than `period` ago.
    pub fn bound(&self, period: Duration) -> bool {
        let since = self.last_ns.load(SeqCst).max(self.started_ns);
        now_ns().saturating_sub(since) < period.as_nanos() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ack_proves_receipt_after_the_latest_mark_it_passed() {
        let m = Marks::default();
        m.mark(100, 10);
        m.mark(200, 20);
        m.mark(300, 30);
        assert_eq!(m.fed_after(10), None);
        assert_eq!(m.fed_after(11), Some(100));
        assert_eq!(m.fed_after(30), Some(200));
        assert_eq!(m.fed_after(31), Some(300));
        for i in 0..MARKS as u64 {
            m.mark(1000 + i, 100 + i);
        }
        assert_eq!(m.fed_after(31), None, "older marks are dropped");
    }
}
