//! Admission: whether a value read back for a request stays in memory.
//!
//! Installing every value read back, as a plain LRU cache does, makes a
//! read of a cold key push a warmer value out: a scan over the dataset,
//! or uniform reads over a dataset many times memory, turn memory over
//! with values read once, and each of them costs eviction's sampling to
//! find the value it displaces. The tier admits a value read back only
//! when the key was used recently enough to have stayed in memory: its
//! eviction score before this access (the policy's idle time, or LFU's
//! counter) is no worse than that of the values spilling chose lately
//! from its samples. A value not admitted goes on probation: it serves
//! the request that read it (and anything else that finds it in memory)
//! and is the first value spilled when memory is next over the limit,
//! back to the record it was read from (its clean copy): no write, no
//! sampling. A key read again from disk soon after is admitted then.
//!
//! A probation value must not go back to disk before its request ran:
//! the request would park again. So the read hands the request a
//! [`Ticket`], and the value joins the probation queue when the last
//! request holding the ticket drops it, after running (a pipeline's
//! prefetched requests hold theirs until their batch is done). The key's
//! access metadata is marked then (`access::mark_unused`); any access
//! after clears the mark, and a value whose key lost it is not spilled
//! from the queue (it was used again: sampling judges it from then on).

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use super::Tier;
use crate::storage::access;

/// A value on probation: spilled first, unless its key was used since.
pub(super) struct Probation {
    db: usize,
    key: Vec<u8>,
    /// The value's record bytes (what it holds in memory, about).
    bytes: u64,
}

/// The probation queue, oldest first.
pub(super) type Queue = VecDeque<Probation>;

/// Values on probation at most; past it the oldest leave the queue and
/// stay in memory as any value, for eviction's sampling to judge.
const MAX_QUEUED: usize = 16 * 1024;

/// Held by the requests that waited on a read whose value was not
/// admitted; the last one dropped puts the value on probation.
pub struct Ticket(Option<Probation>);

/// What a parked request holds until it has run again.
pub type Tickets = Vec<Arc<Ticket>>;

impl Drop for Ticket {
    fn drop(&mut self) {
        if let (Some(p), Some(tier)) = (self.0.take(), super::active()) {
            tier.probation_held.fetch_sub(p.bytes, Relaxed);
            let Some(server) = tier.server.upgrade() else {
                return;
            };
            let now = crate::command::unix_ms();
            let mut view = server.keyspace.lock_key(&p.key);
            let marked = match view.peek_meta(p.db, &p.key, now) {
                Some(e) if !e.value.is_spilled() => {
                    access::mark_unused(e.access);
                    true
                }
                _ => false,
            };
            // (A key found expired was deleted: its deletion is logged.)
            for (xdb, xkey) in view.take_expired() {
                crate::command::propagate::expired(&server, None, xdb, &xkey);
            }
            drop(view);
            if !marked {
                return;
            }
            let mut queue = tier.probation.lock();
            if queue.len() >= MAX_QUEUED {
                queue.pop_front();
            }
            queue.push_back(p);
        }
    }
}

/// The score no spilled victim has been seen with yet: every value read
/// back is admitted until spilling has chosen from its samples.
pub(super) const ADMIT_ALL: u64 = u64::MAX;

impl Tier {
    /// Whether a value whose key had eviction score `score` before this
    /// read stays in memory.
    pub(super) fn admits(&self, score: u64) -> bool {
        score <= self.admit_score.load(Relaxed)
    }

    /// Spilling chose, from its samples, a value with eviction score
    /// `score`: values read back from now on are judged against it.
    pub fn saw_victim(&self, score: u64) {
        self.admit_score.store(score, Relaxed);
    }

    /// A ticket for a value of `bytes` read back for `key` (of `db`) and
    /// not admitted.
    pub(super) fn ticket(&self, db: usize, key: &[u8], bytes: u64) -> Ticket {
        self.stats.probation.fetch_add(1, Relaxed);
        self.probation_held.fetch_add(bytes, Relaxed);
        Ticket(Some(Probation {
            db,
            key: key.to_vec(),
            bytes,
        }))
    }

    /// Bytes of values on probation whose requests have not run yet:
    /// memory over the limit by no more than this needs no spilling now
    /// (those values go first once their requests ran; spilling other
    /// values meanwhile would push out values in use).
    pub fn probation_held(&self) -> u64 {
        self.probation_held.load(Relaxed)
    }

    /// Up to `max` values on probation, oldest first, as (database,
    /// key): spill one only if its key is still marked unused
    /// (`access::unused_since_marked`).
    pub fn take_probation(&self, max: usize) -> Vec<(usize, Vec<u8>)> {
        let mut queue = self.probation.lock();
        let n = max.min(queue.len());
        queue.drain(..n).map(|p| (p.db, p.key)).collect()
    }
}
