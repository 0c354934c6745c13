//! Clean copies: a value read back from disk keeps its record, so moving
//! it to disk again, unchanged, writes nothing.
//!
//! When a parked read installs a value, its stub (and so its record) goes
//! here instead of being dropped, with a fingerprint of the payload. When
//! spilling takes the key again it serializes the value as always; if the
//! payload's fingerprint is the copy's, the value is unchanged since it
//! was read and the copy's stub goes back in place of the value: no write.
//! Any other payload drops the copy (freeing its record) and is written.
//! Correctness never rests on knowing which commands wrote the value: the
//! payload itself is compared, by a 128-bit fingerprint keyed with a
//! per-process random seed (a client cannot aim a value at a collision).
//!
//! A copy whose key went away (deleted, renamed, flushed) would pin its
//! record: [`sweep`] drops those, from the compaction thread.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::OnceLock;

use super::stub::Stub;
use super::Tier;
use crate::server::Server;

/// A value's record kept while the value is in memory.
pub(super) struct Copy {
    stub: Stub,
    fingerprint: u128,
}

/// The copies, by (database, key).
pub(super) type Copies = ahash::HashMap<(usize, Vec<u8>), Copy>;

/// The fingerprint of a payload.
pub(super) fn fingerprint(payload: &[u8]) -> u128 {
    static SEEDS: OnceLock<(ahash::RandomState, ahash::RandomState)> = OnceLock::new();
    let (a, b) = SEEDS.get_or_init(|| (ahash::RandomState::new(), ahash::RandomState::new()));
    (u128::from(a.hash_one(payload)) << 64) | u128::from(b.hash_one(payload))
}

impl Tier {
    /// Keeps `stub` as the clean copy of `key`'s value, whose payload has
    /// `fingerprint`.
    pub(super) fn keep_copy(&self, db: usize, key: &[u8], stub: Stub, fingerprint: u128) {
        self.stats.clean_copies.fetch_add(1, Relaxed);
        let old = self
            .copies
            .lock()
            .insert((db, key.to_vec()), Copy { stub, fingerprint });
        if old.is_some() {
            self.stats.clean_copies.fetch_sub(1, Relaxed);
        }
        // (An older copy, if any, is dropped here: its record freed.)
    }

    /// The stub of `key`'s clean copy if `payload` is what it holds, for a
    /// value in `encoding` (a value can change encoding, not content:
    /// SETRANGE of the same bytes makes a string `raw`); any copy of the
    /// key is gone afterwards.
    pub(super) fn take_copy(
        &self,
        db: usize,
        key: &[u8],
        payload: &[u8],
        encoding: &str,
    ) -> Option<Stub> {
        let copy = {
            let mut copies = self.copies.lock();
            if copies.is_empty() {
                return None;
            }
            copies.remove(&(db, key.to_vec()))?
        };
        self.stats.clean_copies.fetch_sub(1, Relaxed);
        (copy.stub.encoding() == encoding && copy.fingerprint == fingerprint(payload))
            .then_some(copy.stub)
    }
}

/// Drops the copies whose key no longer holds its value in memory
/// (deleted, renamed away, flushed, or spilled by another path).
pub(super) fn sweep(server: &Server, tier: &Tier) {
    let keys: Vec<(usize, Vec<u8>)> = tier.copies.lock().keys().cloned().collect();
    let now = crate::command::unix_ms();
    for (db, key) in keys {
        let mut view = server.keyspace.lock_key(&key);
        // (Under the key's lock: a copy kept meanwhile is not dropped.)
        if view.in_memory(db, &key, now) {
            continue;
        }
        let gone = tier.copies.lock().remove(&(db, key));
        drop(view);
        if gone.is_some() {
            tier.stats.clean_copies.fetch_sub(1, Relaxed);
        }
    }
}
