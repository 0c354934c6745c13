//! Eviction: keeping the dataset under `maxmemory` (Redis's evict.c).
//!
//! Dispatch's out-of-memory gate calls [`perform`] before every command
//! while `maxmemory` is set, as Redis's processCommand does; the cron calls
//! it too, to finish what a command's time budget left. While memory is
//! over the limit, keys are chosen by `maxmemory-policy` and deleted
//! through the propagation path ([`crate::command::propagate::evicted`]: a `DEL`
//! record, an `evicted` keyspace event, WATCH). Eviction runs only
//! between commands, never inside a transaction, a script or a blocked
//! client's command, so none of them sees a key vanish midway.
//!
//! Choosing (LRU, LFU, TTL): as Redis's approximation, each round samples
//! `maxmemory-samples` keys of every database of one random shard (keys
//! are spread evenly over shards, so that is a random sample of the
//! keyspace) into a pool of the [`POOL_SIZE`] best candidates seen so far,
//! then evicts the best candidate that still exists. The pool outlives the
//! call, so candidates found earlier keep competing.

use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use rand::Rng;

use crate::command::propagate;
use crate::command::unix_ms;
use crate::memory::{alloc, lazyfree, Policy};
use crate::server::Server;
use crate::storage::access;
use crate::storage::keyspace::SHARDS;
use crate::storage::value::EntryRef;

/// Freed by one call, the memory is returned to the OS at once.
pub const PURGE_AFTER: usize = 8 * 1024 * 1024;

/// Redis's EVPOOL_SIZE.
pub const POOL_SIZE: usize = 16;

/// A key that may be evicted; higher `score` is evicted first.
struct Candidate {
    score: u64,
    db: usize,
    key: Vec<u8>,
}

/// The best candidates seen so far, in ascending score.
#[derive(Default)]
pub struct Pool {
    entries: Vec<Candidate>,
}

impl Pool {
    /// Redis's evictionPoolPopulate insertion: keep the `POOL_SIZE`
    /// highest scores; a key already in the pool gets its new score.
    fn offer(&mut self, score: u64, db: usize, key: &[u8]) {
        if let Some(i) = self.entries.iter().position(|c| c.db == db && c.key == key) {
            self.entries.remove(i);
        }
        if self.entries.len() >= POOL_SIZE {
            if self.entries[0].score >= score {
                return;
            }
            self.entries.remove(0);
        }
        let at = self.entries.partition_point(|c| c.score < score);
        self.entries.insert(
            at,
            Candidate {
                score,
                db,
                key: key.to_vec(),
            },
        );
    }

    fn pop_best(&mut self) -> Option<Candidate> {
        self.entries.pop()
    }
}

/// What a call achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Under the limit (or no limit).
    Ok,
    /// Still over, out of time for this call; more is freed later.
    Running,
    /// Over the limit and nothing (more) can be evicted.
    Fail,
}

/// Redis's evictionTimeLimitUs: how long one call may evict, from
/// `maxmemory-eviction-tenacity`.
fn time_limit(tenacity: u32) -> Option<Duration> {
    match tenacity {
        0..=10 => Some(Duration::from_micros(50 * tenacity as u64)),
        11..=99 => Some(Duration::from_micros(
            (500.0 * 1.15f64.powi(tenacity as i32 - 10)) as u64,
        )),
        _ => None,
    }
}

thread_local! {
    /// Whether the command now running was found out of memory before it
    /// started (Redis's `server.pre_command_oom_state`): a script may
    /// then run denyoom commands only after it has written.
    static PRE_COMMAND_OOM: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

pub fn set_pre_command_oom(oom: bool) {
    PRE_COMMAND_OOM.set(oom);
}

pub fn pre_command_oom() -> bool {
    PRE_COMMAND_OOM.get()
}

/// Memory that is not the dataset's and must not make keys go (INFO's
/// `mem_not_counted_for_evict`): the workers' pooled connection buffers
/// (`net::buffer_pool`), and the replication buffer beyond
/// `repl-backlog-size` (what replicas that are behind still need), as
/// Redis's freeMemoryGetNotCountedMemory. Counting the latter would
/// evict keys to make room for the stream of their own deletions.
#[inline]
pub fn not_counted(server: &Server) -> usize {
    crate::net::buffer_pool::pooled_bytes() + server.repl.buffer_beyond_backlog()
}

/// Whether the process holds more than `maxmemory`, not counting
/// [`not_counted`].
#[inline]
pub fn over_limit(server: &Server) -> bool {
    over_by(server) > 0
}

/// Bytes the process holds over `maxmemory` (0 under it, or no limit),
/// not counting [`not_counted`].
#[inline]
fn over_by(server: &Server) -> u64 {
    let max = server.memory.maxmemory();
    if max == 0 {
        return 0;
    }
    (alloc::used().saturating_sub(not_counted(server)) as u64).saturating_sub(max)
}

/// Evicts keys until memory is under `maxmemory`, the policy forbids it,
/// nothing is left to evict, or the time budget is spent. A replica under
/// `replica-ignore-maxmemory` evicts nothing: its primary decides, and
/// its keys are its primary's.
pub fn perform(server: &Server) -> Outcome {
    if !over_limit(server) {
        return Outcome::Ok;
    }
    // With a disk tier, values go to disk first: that changes no key, so
    // it runs on replicas, under a pause and with `noeviction` too.
    if crate::tier::active().is_some() && spill_to_disk(server) {
        return Outcome::Ok;
    }
    if server.repl.is_replica() && server.memory.ignore_on_replica.load(Relaxed) {
        return Outcome::Ok;
    }
    // While clients are paused the dataset stays still (Redis's
    // performEvictions): no DEL enters the stream a failover waits on.
    if server.pause.mode() != crate::clients::pause::NONE {
        return Outcome::Fail;
    }
    let policy = server.memory.policy();
    if policy == Policy::NoEviction {
        return Outcome::Fail;
    }
    let limit = time_limit(server.memory.tenacity.load(Relaxed));
    let start = Instant::now();
    let used_before = alloc::used();
    let mut evicted = 0u64;
    let outcome = loop {
        if !over_limit(server) {
            break Outcome::Ok;
        }
        let Some((db, key)) = choose(server, policy) else {
            break Outcome::Fail;
        };
        if evict(server, policy, db, &key) {
            evicted += 1;
            if evicted.is_multiple_of(16) && limit.is_some_and(|l| start.elapsed() > l) {
                break Outcome::Running;
            }
        }
    };
    if server.latency.enabled() {
        server
            .latency
            .add_if_needed("eviction-cycle", start.elapsed());
    }
    // What eviction freed is resident until the allocator's decay (10 s)
    // and is reused only by the arena that allocated it: a large freed
    // value (a whole list) doubled the process's RSS while the next one
    // grew from another worker. Hand it back at once.
    if used_before.saturating_sub(alloc::used()) >= PURGE_AFTER {
        crate::memory::purge();
    }
    if outcome != Outcome::Ok {
        server
            .memory
            .exceeded_us
            .fetch_add(start.elapsed().as_micros() as u64, Relaxed);
    }
    outcome
}

/// With a disk tier, moves cold values to disk while over `maxmemory`,
/// deleting nothing (a replica applying its primary's stream).
#[inline]
pub fn spill_only(server: &Server) {
    if crate::tier::active().is_some() && over_limit(server) {
        spill_to_disk(server);
    }
}

/// Moves cold values to the disk tier until memory is under the limit;
/// false when that is not enough (nothing worth moving is left in
/// memory, or the tier is full) and keys must be evicted.
fn spill_to_disk(server: &Server) -> bool {
    let Some(tier) = crate::tier::active() else {
        return false;
    };
    let policy = spill_policy(server);
    let start = Instant::now();
    let used_before = alloc::used();
    // What spilling freed goes back to the OS at once, as eviction's does.
    let purge_if_freed = || {
        if used_before.saturating_sub(alloc::used()) >= PURGE_AFTER {
            crate::memory::purge();
        }
    };
    while over_limit(server) {
        // Values read back and not admitted go first (`tier::admission`).
        let probation = tier.take_probation(crate::tier::spill::MAX_BATCH);
        if !probation.is_empty() {
            crate::tier::spill::spill_probation(server, &probation);
        } else if over_by(server) <= tier.probation_held() {
            // Values on probation go first, once their requests ran.
            break;
        } else if !spill_sampled(server, tier, policy) {
            purge_if_freed();
            return false;
        }
        if start.elapsed() > SPILL_TIME_LIMIT {
            // More next time: the command that asked waits no longer.
            purge_if_freed();
            return true;
        }
    }
    purge_if_freed();
    true
}

/// Spills a batch of values chosen from samples; false if none could go.
fn spill_sampled(server: &Server, tier: &crate::tier::Tier, policy: Policy) -> bool {
    let mut candidates = Vec::with_capacity(crate::tier::spill::MAX_BATCH);
    let mut highest = 0;
    while candidates.len() < crate::tier::spill::MAX_BATCH {
        match choose_where(
            server,
            &server.spill_pool,
            policy,
            crate::tier::spill::worth_spilling,
        ) {
            Some((db, key, score)) => {
                highest = highest.max(score);
                candidates.push((db, key));
            }
            None => break,
        }
    }
    if candidates.is_empty() {
        return false;
    }
    // What a value read back is judged against: the batch's coldest.
    tier.saw_victim(highest);
    crate::tier::spill::spill(server, &candidates) > 0
}

/// How long one call may spill (a batch is one write to the page cache).
const SPILL_TIME_LIMIT: Duration = Duration::from_millis(2);

/// The policy spilling judges values by: whether a value is cold is
/// judged as the policy would judge keys, over every key (a volatile or
/// `noeviction` policy still has an access clock: LRU, or LFU's counter).
pub fn spill_policy(server: &Server) -> Policy {
    match server.memory.policy() {
        p if p.is_lfu() => Policy::AllkeysLfu,
        p if p.is_random() => Policy::AllkeysRandom,
        _ => Policy::AllkeysLru,
    }
}

/// The eviction score of a sampled entry under `policy` (Redis's `idle`).
fn score(policy: Policy, e: EntryRef<'_>, now_ms: u64) -> u64 {
    score_of(policy, e.access, e.expire_at, now_ms)
}

/// [`score`] of a key's access metadata and expiry time.
pub fn score_of(policy: Policy, access: u32, expire_at: u64, now_ms: u64) -> u64 {
    match policy {
        Policy::VolatileTtl => u64::MAX - expire_at,
        p if p.is_lfu() => 255 - access::lfu_counter(access, now_ms) as u64,
        _ => access::idle_seconds(access, now_ms),
    }
}

/// The next key to evict, or None when no key may be evicted.
fn choose(server: &Server, policy: Policy) -> Option<(usize, Vec<u8>)> {
    choose_where(server, &server.eviction_pool, policy, |_| true).map(|(db, key, _)| (db, key))
}

/// [`choose`] among the keys whose value passes `eligible`, with the
/// score it was chosen by.
fn choose_where(
    server: &Server,
    pool: &parking_lot::Mutex<Pool>,
    policy: Policy,
    eligible: impl Fn(&crate::storage::value::Value) -> bool,
) -> Option<(usize, Vec<u8>, u64)> {
    let mut rng = rand::thread_rng();
    let volatile = policy.volatile_only();
    let samples = server.memory.samples.load(Relaxed) as usize;
    let first = rng.gen_range(0..SHARDS);
    let mut pool = pool.lock();
    // Shards are sampled until `samples` candidates were offered: where
    // few keys qualify (most values already on disk, for spilling), one
    // shard's samples may offer none or one, and a pool fed one candidate
    // per pick would choose at random. After every shard there is nothing
    // more to find, except what the pool still holds.
    let mut offered = 0;
    for step in 0..SHARDS {
        let shard = (first + step) % SHARDS;
        let view = server.keyspace.lock_shard(shard);
        let now = unix_ms();
        for db in 0..server.keyspace.databases() {
            let (keys, with_ttl) = view.shard_db_len(shard, db);
            if (if volatile { with_ttl } else { keys }) == 0 {
                continue;
            }
            if policy.is_random() {
                let mut found = None;
                view.sample(shard, db, 1, volatile, &mut rng, |k, e| {
                    if eligible(e.value) {
                        found = Some(k.to_vec())
                    }
                });
                if let Some(k) = found {
                    return Some((db, k, 0));
                }
                continue;
            }
            view.sample(shard, db, samples, volatile, &mut rng, |k, e| {
                if eligible(e.value) {
                    offered += 1;
                    pool.offer(score(policy, e, now), db, k)
                }
            });
        }
        if offered >= samples {
            break;
        }
    }
    // Candidates may have been deleted or changed since sampled: the
    // caller checks again under the key's lock.
    pool.pop_best().map(|c| (c.db, c.key, c.score))
}

/// Deletes `key` if it still qualifies; true if it did.
fn evict(server: &Server, policy: Policy, db: usize, key: &[u8]) -> bool {
    let now = unix_ms();
    // Redis's eviction-del: the deletion (and the freeing, unless lazy).
    let started = server.latency.start();
    let mut view = server.keyspace.lock_key(key);
    let qualifies = view
        .peek_meta(db, key, now)
        .is_some_and(|e| !policy.volatile_only() || e.expire_at != 0);
    let removed = if qualifies {
        view.remove(db, key, now)
    } else {
        None
    };
    for (xdb, xkey) in view.take_expired() {
        propagate::expired(server, None, xdb, &xkey);
    }
    let Some(entry) = removed else {
        return false;
    };
    propagate::evicted(server, db, key);
    drop(view);
    if lazyfree::LAZY_EVICTION.load(Relaxed) {
        let effort = entry.value.free_effort();
        lazyfree::free(entry, effort);
    } else {
        drop(entry);
    }
    server.latency.end("eviction-del", started);
    server.memory.evicted_keys.fetch_add(1, Relaxed);
    // The freed memory must show in the shared counter before the next
    // look at it.
    alloc::flush_thread();
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_keeps_the_best_scores() {
        let mut pool = Pool::default();
        for i in 0..40u64 {
            pool.offer(i * 7 % 40, 0, format!("k{i}").as_bytes());
        }
        assert_eq!(pool.entries.len(), POOL_SIZE);
        let scores: Vec<u64> = pool.entries.iter().map(|c| c.score).collect();
        assert_eq!(scores, (24..40).collect::<Vec<u64>>());
        // A key offered again moves to its new score.
        pool.offer(100, 0, b"k0");
        assert_eq!(pool.pop_best().map(|c| c.key), Some(b"k0".to_vec()));
        assert_eq!(pool.entries.len(), POOL_SIZE - 1);
    }

    #[test]
    fn time_limits_follow_tenacity() {
        assert_eq!(time_limit(10), Some(Duration::from_micros(500)));
        assert_eq!(time_limit(0), Some(Duration::ZERO));
        assert!(time_limit(99).is_some_and(|d| d > Duration::from_secs(60)));
        assert_eq!(time_limit(100), None);
    }
}
