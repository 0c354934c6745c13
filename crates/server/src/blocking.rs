//! Clients blocked on keys (BLPOP, BZPOPMIN, ...): a FIFO queue of waiters
//! per (database, key).
//!
//! Every write records the keys it changed (`command::propagate`); after
//! it releases its shards, dispatch wakes the
//! head waiter of that key's queue. The woken client runs its own command
//! again on its own thread: if it is served it leaves every queue and
//! passes the signal on to the next waiter (the key may hold more), if not
//! it waits again at the head. So clients are served in the order they
//! blocked, and no thread ever executes another client's command.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

pub struct Waiter {
    pub client_id: u64,
    pub wake: Notify,
}

/// Waiters per (database, key), oldest first.
type Queues = HashMap<(usize, Vec<u8>), VecDeque<Arc<Waiter>>>;

#[derive(Default)]
pub struct Blocking {
    /// Blocked clients; lets writers skip the registry when it is zero.
    count: AtomicUsize,
    queues: Mutex<Queues>,
}

impl Blocking {
    pub fn blocked_clients(&self) -> usize {
        self.count.load(Relaxed)
    }

    /// Queues `waiter` at the tail of every key's queue.
    pub fn register(&self, db: usize, keys: &[Vec<u8>], waiter: &Arc<Waiter>) {
        let mut q = self.queues.lock();
        for k in keys {
            let queue = q.entry((db, k.clone())).or_default();
            if !queue.iter().any(|w| Arc::ptr_eq(w, waiter)) {
                queue.push_back(waiter.clone());
            }
        }
        self.count.fetch_add(1, Relaxed);
    }

    /// Removes `waiter` from every key's queue.
    pub fn unregister(&self, db: usize, keys: &[Vec<u8>], waiter: &Arc<Waiter>) {
        let mut q = self.queues.lock();
        for k in keys {
            let key = (db, k.clone());
            if let Some(queue) = q.get_mut(&key) {
                queue.retain(|w| !Arc::ptr_eq(w, waiter));
                if queue.is_empty() {
                    q.remove(&key);
                }
            }
        }
        self.count.fetch_sub(1, Relaxed);
    }

    /// Wakes the first client blocked on `key`, if any.
    pub fn signal(&self, db: usize, key: &[u8]) {
        if self.count.load(Relaxed) == 0 {
            return;
        }
        let q = self.queues.lock();
        if let Some(w) = q.get(&(db, key.to_vec())).and_then(|queue| queue.front()) {
            w.wake.notify_one();
        }
    }

    /// A whole database changed (FLUSHDB, FLUSHALL, SWAPDB): every blocked
    /// client looks again.
    pub fn signal_all(&self) {
        let q = self.queues.lock();
        for queue in q.values() {
            if let Some(w) = queue.front() {
                w.wake.notify_one();
            }
        }
    }
}
