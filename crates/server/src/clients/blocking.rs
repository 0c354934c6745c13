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
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

pub struct Waiter {
    pub client_id: u64,
    pub wake: Notify,
    /// Set by CLIENT UNBLOCK ([`UNBLOCK_TIMEOUT`] or [`UNBLOCK_ERROR`]).
    pub unblock: AtomicU8,
}

/// CLIENT UNBLOCK id TIMEOUT: answered as if its timeout had passed.
pub const UNBLOCK_TIMEOUT: u8 = 1;
/// CLIENT UNBLOCK id ERROR: answered `-UNBLOCKED ...`.
pub const UNBLOCK_ERROR: u8 = 2;

impl Waiter {
    pub fn new(client_id: u64) -> Waiter {
        Waiter {
            client_id,
            wake: Notify::new(),
            unblock: AtomicU8::new(0),
        }
    }
}

/// Waiters per (database, key), oldest first.
type Queues = HashMap<(usize, Vec<u8>), VecDeque<Arc<Waiter>>>;

#[derive(Default)]
struct Registry {
    queues: Queues,
    /// Each blocked client's waiter, for CLIENT UNBLOCK.
    by_client: HashMap<u64, Arc<Waiter>>,
}

#[derive(Default)]
pub struct Blocking {
    /// Clients blocked on keys; lets writers skip the registry when it is
    /// zero.
    count: AtomicUsize,
    /// Clients held otherwise: waiting for CLIENT PAUSE to end, or in
    /// WAIT (Redis's BLOCKED_POSTPONE and BLOCKED_WAIT).
    held: AtomicUsize,
    queues: Mutex<Registry>,
}

/// A client counted as blocked while this lives (see [`Blocking::hold`]).
pub struct Held<'a>(&'a AtomicUsize);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

impl Blocking {
    /// Clients blocked on keys (the ones a write may serve).
    pub fn blocked_clients(&self) -> usize {
        self.count.load(Relaxed)
    }

    /// Every blocked client, as INFO's `blocked_clients` counts them:
    /// those blocked on keys, paused ones and those in WAIT.
    pub fn all_blocked(&self) -> usize {
        self.count.load(Relaxed) + self.held.load(Relaxed)
    }

    /// Counts a client held by a pause or WAIT until the guard drops.
    pub fn hold(&self) -> Held<'_> {
        self.held.fetch_add(1, Relaxed);
        Held(&self.held)
    }

    /// Queues `waiter` at the tail of every key's queue.
    pub fn register(&self, db: usize, keys: &[Vec<u8>], waiter: &Arc<Waiter>) {
        let mut r = self.queues.lock();
        r.by_client.insert(waiter.client_id, waiter.clone());
        let q = &mut r.queues;
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
        let mut r = self.queues.lock();
        r.by_client.remove(&waiter.client_id);
        let q = &mut r.queues;
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
        let r = self.queues.lock();
        if let Some(w) = r
            .queues
            .get(&(db, key.to_vec()))
            .and_then(|queue| queue.front())
        {
            w.wake.notify_one();
        }
    }

    /// A whole database changed (FLUSHDB, FLUSHALL, SWAPDB): every blocked
    /// client looks again.
    pub fn signal_all(&self) {
        let r = self.queues.lock();
        for queue in r.queues.values() {
            if let Some(w) = queue.front() {
                w.wake.notify_one();
            }
        }
    }

    /// CLIENT UNBLOCK: wakes client `id` if it is blocked, to answer as
    /// `how` says; false if it is not blocked.
    pub fn unblock(&self, id: u64, how: u8) -> bool {
        let r = self.queues.lock();
        match r.by_client.get(&id) {
            Some(w) => {
                w.unblock.store(how, Relaxed);
                w.wake.notify_one();
                true
            }
            None => false,
        }
    }
}
