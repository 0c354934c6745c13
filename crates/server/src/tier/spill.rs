//! Moving values to disk: what eviction does with its candidates while
//! the tier has room (`memory::evict`).
//!
//! A batch of candidates is spilled under their shards' locks: each value
//! is serialized as its DUMP payload (the RDB encoding every type already
//! has), the records go to the log in one write, and each value is
//! replaced by its stub. Holding the locks across the write keeps the
//! swap simple (no write can slip between serializing and swapping); the
//! write lands in the page cache and is never fsynced (the tier is not a
//! durable record, see docs/tiering.md).

use std::sync::atomic::Ordering::Relaxed;

use super::log::encode_record;
use super::stub::Stub;
use crate::command::propagate;
use crate::server::Server;
use crate::storage::keyspace::View;
use crate::storage::value::Value;

/// Keys spilled together (one write).
pub const MAX_BATCH: usize = 32;
/// Bytes of records past which a batch stops taking keys. Far below
/// 4 GB, so stubs' 32-bit offsets always fit.
pub const MAX_BATCH_BYTES: usize = 4 << 20;
/// Values holding fewer heap bytes than this stay in memory: their stub
/// would save next to nothing.
pub const MIN_VALUE_BYTES: usize = 64;

/// Whether `value` is worth moving to disk.
pub fn worth_spilling(value: &Value) -> bool {
    !value.is_spilled() && crate::command::memory::value_bytes(value) >= MIN_VALUE_BYTES
}

/// Spills the values of `candidates` (database, key) that still qualify;
/// answers how many went to disk.
pub fn spill(server: &Server, candidates: &[(usize, Vec<u8>)]) -> usize {
    spill_where(server, candidates, |v, _| worth_spilling(v))
}

/// Spills the values on probation of `candidates` (`admission`) whose key
/// was not used since; answers how many went to disk.
pub fn spill_probation(server: &Server, candidates: &[(usize, Vec<u8>)]) -> usize {
    spill_where(server, candidates, |v, access| {
        crate::storage::access::unused_since_marked(access) && worth_spilling(v)
    })
}

fn spill_where(
    server: &Server,
    candidates: &[(usize, Vec<u8>)],
    eligible: impl Fn(&Value, u32) -> bool,
) -> usize {
    let mut view = server
        .keyspace
        .lock_keys(candidates.iter().map(|(_, k)| k.as_slice()));
    let (n, freed) = spill_in(server, &mut view, candidates, eligible);
    for (xdb, xkey) in view.take_expired() {
        propagate::expired(server, None, xdb, &xkey);
    }
    drop(view);
    drop(freed);
    crate::memory::alloc::flush_thread();
    n
}

/// Spills every value in the shards `view` holds, however small (DEBUG
/// SPILL: the tests' way to run commands against values on disk).
pub fn spill_all(server: &Server, view: &mut View) -> usize {
    let mut keys = Vec::new();
    for shard in view.held_shards() {
        view.for_each_in_shard(shard, |db, key, e| {
            if !e.value.is_spilled() {
                keys.push((db, key.to_vec()));
            }
        });
    }
    let mut n = 0;
    for chunk in keys.chunks(MAX_BATCH) {
        n += spill_in(server, view, chunk, |v, _| !v.is_spilled()).0;
    }
    n
}

/// The values of `candidates` that pass `eligible` (the value, its key's
/// access metadata), spilled in `view` (which holds their shards); how
/// many, and the values replaced.
fn spill_in(
    server: &Server,
    view: &mut View,
    candidates: &[(usize, Vec<u8>)],
    eligible: impl Fn(&Value, u32) -> bool,
) -> (usize, Vec<Value>) {
    let Some(tier) = super::active() else {
        return (0, Vec::new());
    };
    let now = crate::command::unix_ms();
    let fill = server.encoding_limits().list_max_listpack_size;
    let mut batch = Vec::new();
    let mut lens = Vec::new();
    let mut chosen = Vec::new();
    let mut freed = Vec::with_capacity(candidates.len());
    for (db, key) in candidates {
        let Some(e) = view.peek_meta(*db, key, now) else {
            continue;
        };
        if !eligible(e.value, *e.access) {
            continue;
        }
        let payload = crate::persistence::rdb::tier_payload(e.value, fill);
        // Unchanged since it was read back: its record is still there.
        if let Some(stub) = tier.take_copy(*db, key, &payload, e.value.encoding()) {
            freed.push(std::mem::replace(e.value, Value::Spilled(stub)));
            tier.stats.reused_copies.fetch_add(1, Relaxed);
            continue;
        }
        let before = batch.len();
        encode_record(&mut batch, key, &payload);
        lens.push((batch.len() - before) as u32);
        chosen.push((*db, key.as_slice(), e.value.type_name(), e.value.encoding()));
        if batch.len() >= MAX_BATCH_BYTES {
            break;
        }
    }
    if !chosen.is_empty() && tier.has_room(batch.len() as u64) {
        match tier.append(&batch, &lens) {
            Ok(locs) => {
                for ((db, key, type_name, encoding), loc) in chosen.iter().zip(locs) {
                    let stub = Stub::new(loc, type_name, encoding);
                    let e = view.peek_meta(*db, key, now);
                    match (stub, e) {
                        (Some(stub), Some(e)) => {
                            tier.stats.spilled_keys.fetch_add(1, Relaxed);
                            freed.push(std::mem::replace(e.value, Value::Spilled(stub)));
                        }
                        // (Cannot happen: the locks were held throughout,
                        // and a batch's offsets fit.)
                        (stub, _) => {
                            if let Some(s) = stub {
                                tier.stats.spilled_keys.fetch_add(1, Relaxed);
                                drop(s);
                            } else {
                                super::release_unowned(loc);
                            }
                        }
                    }
                }
                tier.stats.spills.fetch_add(chosen.len() as u64, Relaxed);
                tier.stats
                    .spilled_bytes
                    .fetch_add(batch.len() as u64, Relaxed);
            }
            Err(e) => tracing::warn!("Tiering: writing to {}: {e}", tier.dir().display()),
        }
    }
    (freed.len(), freed)
}

/// Spilling while an image loads under one view of every shard: the keys
/// loaded last are the candidates (nothing is colder than anything else
/// yet), spilled a batch at a time while memory is over the limit. That
/// keeps the values' memory level but not the keys' own, which grows with
/// every key loaded: while memory is still over the limit after a batch,
/// values loaded earlier go too, found by a sweep of the slots.
///
/// "Over the limit" while loading counts resident memory too, not only
/// what the allocator hands out: millions of small key nodes leave the
/// allocator's pages partly used, and a restart or full sync that kept
/// counted memory at `maxmemory` grew the process well past it
/// (docs/benchmarks.md, "Tiering"). The load
/// keeps the resident memory it added within `maxmemory` (what the
/// process held beyond counted memory when the load began, the binary and
/// the empty server, is not charged).
pub struct WhileLoading {
    recent: Vec<(usize, Vec<u8>)>,
    /// Resident bytes the allocator did not count when the load began.
    uncounted: usize,
    /// Batches until resident memory is read again, and what it said.
    resident_in: u32,
    resident_over: bool,
    /// Bytes freed by spilling since memory was last given back.
    freed: usize,
    /// The next slot the sweep looks in.
    sweep: usize,
    /// Batches to pass before the next sweep: a sweep that found nothing
    /// worth spilling (small values only) doubles it, so that loading
    /// many keys over the limit does not walk the keyspace each batch.
    sweep_skip: (u32, u32),
}

/// Slots one sweep looks in at most.
const SWEEP_SLOTS: usize = 64;

/// Checks between two reads of resident memory (a read of
/// /proc/self/statm): the load spills at most this many batches more than
/// it needed to.
const RESIDENT_EVERY: u32 = 4;

impl WhileLoading {
    /// Before the first key of a load.
    pub fn begin() -> WhileLoading {
        // Memory freed before the load (the server's start leaves freed
        // pages behind) goes back first: the allocator would
        // reuse it for the first keys, and it must not count as the
        // process's own.
        crate::memory::purge();
        WhileLoading {
            recent: Vec::new(),
            uncounted: crate::command::memory::rss_bytes()
                .saturating_sub(crate::memory::alloc::used()),
            resident_in: 0,
            resident_over: false,
            freed: 0,
            sweep: 0,
            sweep_skip: (0, 0),
        }
    }

    /// `key` (of `db`) was just loaded in `view`.
    pub fn loaded(&mut self, server: &Server, view: &mut View, db: usize, key: Vec<u8>) {
        self.recent.push((db, key));
        if self.recent.len() < MAX_BATCH {
            return;
        }
        let recent = std::mem::take(&mut self.recent);
        if self.over_limit(server) {
            self.spill(server, view, &recent);
            if self.over_limit(server) {
                self.sweep(server, view);
            }
        }
        self.recent = recent;
        self.recent.clear();
    }

    /// Counted memory over `maxmemory`, or the resident memory this load
    /// added (read every [`RESIDENT_EVERY`] calls).
    fn over_limit(&mut self, server: &Server) -> bool {
        if crate::memory::evict::over_limit(server) {
            return true;
        }
        let max = server.memory.maxmemory();
        if max == 0 {
            return false;
        }
        if self.resident_in == 0 {
            let added = crate::command::memory::rss_bytes().saturating_sub(self.uncounted);
            self.resident_over = added as u64 > max;
            self.resident_in = RESIDENT_EVERY;
        }
        self.resident_in -= 1;
        self.resident_over
    }

    /// Spills values found in the next slots until memory is under the
    /// limit (or [`SWEEP_SLOTS`] slots were seen).
    fn sweep(&mut self, server: &Server, view: &mut View) {
        let wait = &mut self.sweep_skip.0;
        if *wait > 0 {
            *wait -= 1;
            return;
        }
        let mut spilled = false;
        for _ in 0..SWEEP_SLOTS {
            let slot = self.sweep % resp::slot::SLOTS;
            self.sweep += 1;
            let mut found = Vec::new();
            view.for_each_in_slot(slot, |db, key, e| {
                if worth_spilling(e.value) {
                    found.push((db, key.to_vec()));
                }
            });
            for chunk in found.chunks(MAX_BATCH) {
                spilled = true;
                self.spill(server, view, chunk);
                if !self.over_limit(server) {
                    self.sweep_skip = (0, 0);
                    return;
                }
            }
        }
        self.sweep_skip = if spilled {
            (0, 0)
        } else {
            let next = (self.sweep_skip.1 * 2).clamp(1, 1 << 16);
            (next, next)
        };
    }

    fn spill(&mut self, server: &Server, view: &mut View, keys: &[(usize, Vec<u8>)]) {
        let before = crate::memory::alloc::used();
        let (_, freed) = spill_in(server, view, keys, |v, _| worth_spilling(v));
        drop(freed);
        crate::memory::alloc::flush_thread();
        self.freed += before.saturating_sub(crate::memory::alloc::used());
        // The values freed go back to the OS, not to the allocator's
        // cache: the process stays within maxmemory as it loads.
        if self.freed >= crate::memory::evict::PURGE_AFTER {
            crate::memory::purge();
            self.freed = 0;
        }
    }
}
