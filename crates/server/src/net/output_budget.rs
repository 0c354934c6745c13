//! How much reply data a worker may hold unsent, across its connections.
//!
//! A large reply (LRANGE of 600 18 KB elements is 11 MB) is built whole
//! before it is written, in a buffer the connection keeps for the rest of
//! its batch (the next reply reuses it). While one connection waits for
//! its socket, the worker runs the next, which builds its own: fifty such
//! pipelining clients held 570 MB of buffers (redis-server itself reached
//! 3.3 GB in the same test). So every output buffer above 1 MB counts
//! against its worker's budget until its batch ends, and a connection
//! starts a batch only while the worker is under budget: memory for
//! replies is bounded by the budget plus one buffer per running
//! connection. A client that stops reading cannot stall the others: once
//! its write has waited [`STALLED`], its buffer no longer counts. Nor can
//! one reply larger than the budget (a 40 MB LRANGE to a client reading
//! 1 MB/s held every other connection of its worker for [`STALLED`]): a
//! buffer counts for half the budget at most, so it takes two such
//! replies at once to make the others wait.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use tokio::sync::Notify;

/// Unsent reply bytes a worker may hold before connections wait.
const BUDGET: usize = 32 * 1024 * 1024;

/// A write that makes no headway for this long belongs to a client that
/// is not reading: its buffer stops counting (see `connection::write_out`).
pub const STALLED: Duration = Duration::from_secs(2);

thread_local! {
    static PENDING: Cell<usize> = const { Cell::new(0) };
    static DRAINED: Rc<Notify> = Rc::new(Notify::new());
    /// Waiting connections pass one at a time, in arrival order (tokio's
    /// mutex is fair): replies leave in the order requests came.
    static TURNSTILE: Rc<tokio::sync::Mutex<()>> = Rc::new(tokio::sync::Mutex::new(()));
    static WAITING: Cell<usize> = const { Cell::new(0) };
}

/// The budget under `limit` (a fraction of maxmemory).
fn budget(limit: usize) -> usize {
    BUDGET.min(limit.max(4 * 1024 * 1024))
}

/// Waits until this worker's unsent replies are under the budget (`limit`
/// bytes if smaller: a fraction of maxmemory).
pub async fn room(limit: usize) {
    let budget = budget(limit);
    if PENDING.get() <= budget && WAITING.get() == 0 {
        return;
    }
    WAITING.set(WAITING.get() + 1);
    let turnstile = TURNSTILE.with(Rc::clone);
    let drained = DRAINED.with(Rc::clone);
    {
        let _turn = turnstile.lock().await;
        while PENDING.get() > budget {
            drained.notified().await;
        }
    }
    WAITING.set(WAITING.get() - 1);
}

/// Counts a connection's `n`-byte output buffer (at most half the budget
/// under `limit`) until the returned guard is dropped (its batch ended
/// and the buffer with it).
pub fn hold(n: usize, limit: usize) -> Held {
    let counted = n.min(budget(limit) / 2);
    PENDING.set(PENDING.get() + counted);
    Held { bytes: n, counted }
}

pub struct Held {
    bytes: usize,
    counted: usize,
}

impl Held {
    /// The buffer's size when it was counted.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        PENDING.set(PENDING.get() - self.counted);
        DRAINED.with(|d| d.notify_waiters());
    }
}
