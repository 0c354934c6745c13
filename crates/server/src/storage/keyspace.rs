//! The sharded keyspace: databases split into shards by hash slot, each shard
//! behind its own lock, and the [`View`] through which a command touches the
//! shards it has locked.
//!
//! Why shards by slot: commands on keys in different shards run on
//! different threads at the same time, with no global lock; a multi-key
//! command locks every shard it names in ascending order (so two of them
//! cannot deadlock) and is therefore atomic to every other client. Shard =
//! slot % SHARDS, so the 16384 Redis Cluster slots spread evenly and a slot
//! can later move between nodes as a unit. Inside a shard every slot has its
//! own small map: SCAN orders keys by (slot, hash) and so keeps Redis's
//! guarantee (a key present for the whole scan is returned) while maps grow
//! and shrink.
//!
//! This module knows nothing of RESP or connections.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

use parking_lot::{Mutex, MutexGuard};

use super::access;
use super::value::{Entry, EntryMut, EntryRef, Value};
use resp::slot::{key_slot, SLOTS};

/// Number of locks the keyspace is split into. A power of two well above
/// any core count we target, so two threads rarely meet on one lock.
pub const SHARDS: usize = 64;
const SLOTS_PER_SHARD: usize = SLOTS / SHARDS;

/// One process-wide random seed: per-map hasher state would cost 32 bytes
/// in each of the 16384 maps of every database, and SCAN needs the same
/// hash for a key in every call.
#[derive(Clone, Copy, Default)]
pub struct KeyHasher;

fn seed() -> &'static ahash::RandomState {
    static SEED: OnceLock<ahash::RandomState> = OnceLock::new();
    SEED.get_or_init(ahash::RandomState::new)
}

impl BuildHasher for KeyHasher {
    type Hasher = ahash::AHasher;
    #[inline]
    fn build_hasher(&self) -> ahash::AHasher {
        seed().build_hasher()
    }
}

/// The 48-bit hash SCAN orders keys by inside a slot.
pub fn scan_hash(key: &[u8]) -> u64 {
    KeyHasher.hash_one(key) >> 16
}

pub use super::keymap::KeyMap as Map;
use super::keymap::Lookup;

/// Counters kept under the shard lock, so the hot path never touches a
/// shared atomic; INFO sums them over the shards.
#[derive(Default, Debug, Clone, Copy)]
pub struct ShardStats {
    pub hits: u64,
    pub misses: u64,
    pub expired: u64,
    /// Values requests needed, by where they were when the request
    /// first looked (`View::value_needed`): the tier's hit rate.
    pub values_in_memory: u64,
    pub values_on_disk: u64,
}

/// One database's part of a shard.
#[derive(Default)]
pub struct ShardDb {
    /// Lazily allocated: `SLOTS_PER_SHARD` maps once the first key lands.
    slots: Vec<Map>,
    keys: usize,
    volatile: usize,
    /// Where the active expiry cycle resumes (slot index within the shard).
    expire_cursor: usize,
    /// Estimated mean time to live of the keys with one, in ms: the
    /// active expiry cycle's running average (Redis's db->avg_ttl).
    avg_ttl: u64,
    /// Hashes with field TTLs, for active field expiry.
    hashes_with_ttls: FieldExpiryIndex,
}

/// The hashes of one shard's database that have field TTLs, by the
/// earliest field TTL each had when last registered. An entry can be
/// stale (the hash overwritten, its TTLs persisted, its key expired):
/// active expiry judges the hash it finds under the key, and registers it
/// again by its real earliest TTL or drops it.
#[derive(Default)]
struct FieldExpiryIndex {
    by_time: std::collections::BTreeSet<(u64, Box<[u8]>)>,
    by_key: HashMap<Box<[u8]>, u64, ahash::RandomState>,
}

impl FieldExpiryIndex {
    /// Registers `key` as due at `at`, unless it is already due earlier.
    fn note(&mut self, key: &[u8], at: u64) {
        match self.by_key.get(key) {
            Some(&old) if old <= at => {}
            Some(&old) => {
                self.by_time.remove(&(old, key.into()));
                self.by_time.insert((at, key.into()));
                self.by_key.insert(key.into(), at);
            }
            None => {
                self.by_time.insert((at, key.into()));
                self.by_key.insert(key.into(), at);
            }
        }
    }

    fn forget(&mut self, key: &[u8]) {
        if let Some(at) = self.by_key.remove(key) {
            self.by_time.remove(&(at, key.into()));
        }
    }

    /// The first key due by `now`, taken out of the index.
    fn pop_due(&mut self, now: u64) -> Option<Box<[u8]>> {
        let (at, _) = self.by_time.first()?;
        if *at > now {
            return None;
        }
        let (_, key) = self.by_time.pop_first()?;
        self.by_key.remove(&key);
        Some(key)
    }
}

impl ShardDb {
    #[inline]
    fn map(&self, slot: usize) -> Option<&Map> {
        self.slots.get(slot / SHARDS)
    }

    #[inline]
    fn map_mut(&mut self, slot: usize) -> &mut Map {
        if self.slots.is_empty() {
            self.slots = (0..SLOTS_PER_SHARD).map(|_| Map::default()).collect();
        }
        &mut self.slots[slot / SHARDS]
    }

    pub fn len(&self) -> usize {
        self.keys
    }

    pub fn is_empty(&self) -> bool {
        self.keys == 0
    }

    pub fn volatile(&self) -> usize {
        self.volatile
    }
}

pub struct Shard {
    pub dbs: Vec<ShardDb>,
    pub stats: ShardStats,
    /// Keys deleted on access because they had expired, until the command
    /// that found them reports them ("expired" events, later the log).
    pending_expired: Vec<(usize, Vec<u8>)>,
}

pub struct Keyspace {
    shards: Box<[Mutex<Shard>]>,
    /// Times a shard's lock was found held by another thread (counted on
    /// the contended path only), for INFO keel.
    waits: Box<[AtomicU64]>,
    databases: usize,
    /// Set while this server is a replica: views start in
    /// [`Expiry::Hide`].
    replica: std::sync::atomic::AtomicBool,
    /// Until when (unix ms; 0: not) lazy expiry only hides keys, as on a
    /// replica: while clients are paused the dataset stays still (see
    /// [`Keyspace::pause_expiry`]).
    expiry_paused_until: AtomicU64,
}

/// One database's figures, summed over the shards.
#[derive(Default, Clone, Copy)]
pub struct DbStats {
    pub keys: usize,
    pub volatile: usize,
    /// Hashes with field TTLs (INFO keyspace's `subexpiry`).
    pub hashes_with_ttls: usize,
    /// Milliseconds (Redis's estimate; 0 when unknown).
    pub avg_ttl: u64,
}

/// One shard's figures for INFO keel.
#[derive(Default, Clone, Copy)]
pub struct ShardInfo {
    pub keys: u64,
    pub lock_waits: u64,
}

/// The shard that holds hash slot `slot`.
#[inline]
pub fn shard_of(slot: usize) -> usize {
    slot % SHARDS
}

impl Keyspace {
    pub fn new(databases: usize) -> Keyspace {
        let shards = (0..SHARDS)
            .map(|_| {
                Mutex::new(Shard {
                    dbs: (0..databases).map(|_| ShardDb::default()).collect(),
                    stats: ShardStats::default(),
                    pending_expired: Vec::new(),
                })
            })
            .collect();
        let waits = (0..SHARDS).map(|_| AtomicU64::new(0)).collect();
        Keyspace {
            shards,
            waits,
            databases,
            replica: std::sync::atomic::AtomicBool::new(false),
            expiry_paused_until: AtomicU64::new(0),
        }
    }

    /// Locks shard `i`, counting a wait when another thread holds it.
    #[inline]
    fn lock(&self, i: usize) -> MutexGuard<'_, Shard> {
        match self.shards[i].try_lock() {
            Some(g) => g,
            None => self.lock_contended(i),
        }
    }

    #[cold]
    fn lock_contended(&self, i: usize) -> MutexGuard<'_, Shard> {
        self.waits[i].fetch_add(1, Relaxed);
        self.shards[i].lock()
    }

    pub fn databases(&self) -> usize {
        self.databases
    }

    /// Marks this server a replica (its views hide expired keys instead of
    /// deleting them) or a primary.
    pub fn set_replica(&self, on: bool) {
        self.replica.store(on, Relaxed);
    }

    pub fn is_replica(&self) -> bool {
        self.replica.load(Relaxed)
    }

    /// CLIENT PAUSE (and FAILOVER's pause) until `until_ms` (0: ended): an
    /// expired key found meanwhile reads as missing but is not deleted, so
    /// no DEL enters the stream a failover waits on (Redis's
    /// expireIfNeeded while paused); it goes once the pause ends.
    pub fn pause_expiry(&self, until_ms: u64) {
        self.expiry_paused_until.store(until_ms, Relaxed);
    }

    #[inline]
    fn expiry(&self) -> Expiry {
        if self.replica.load(Relaxed) {
            return Expiry::Hide;
        }
        let until = self.expiry_paused_until.load(Relaxed);
        if until != 0 && self.expiry_still_paused(until) {
            Expiry::Hide
        } else {
            Expiry::Delete
        }
    }

    #[cold]
    fn expiry_still_paused(&self, until: u64) -> bool {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        if now < until {
            return true;
        }
        let _ = self
            .expiry_paused_until
            .compare_exchange(until, 0, Relaxed, Relaxed);
        false
    }

    /// A view with no shard locked, for commands that touch no key.
    pub fn none(&self) -> View<'_> {
        View {
            guards: Guards::None,
            expiry: self.expiry(),
            touch: true,
            new_keys: None,
            known: None,
        }
    }

    /// Locks the shard of one key.
    #[inline]
    pub fn lock_key(&self, key: &[u8]) -> View<'_> {
        let shard = shard_of(key_slot(key));
        View {
            guards: Guards::One(shard, self.lock(shard)),
            expiry: self.expiry(),
            touch: true,
            new_keys: None,
            known: None,
        }
    }

    /// Locks the shards of all `keys`, in ascending shard order.
    pub fn lock_keys<'k>(&self, keys: impl Iterator<Item = &'k [u8]>) -> View<'_> {
        self.lock_slots(keys.map(key_slot))
    }

    /// Locks the shard of one slot.
    #[inline]
    pub fn lock_slot(&self, slot: usize) -> View<'_> {
        let shard = shard_of(slot);
        View {
            guards: Guards::One(shard, self.lock(shard)),
            expiry: self.expiry(),
            touch: true,
            new_keys: None,
            known: None,
        }
    }

    /// Locks the shards of all `slots`, in ascending shard order.
    pub fn lock_slots(&self, slots: impl Iterator<Item = usize>) -> View<'_> {
        let mut wanted = [false; SHARDS];
        let mut count = 0;
        let mut last = 0;
        for slot in slots {
            let s = shard_of(slot);
            if !wanted[s] {
                wanted[s] = true;
                count += 1;
                last = s;
            }
        }
        match count {
            0 => self.none(),
            1 => View {
                guards: Guards::One(last, self.lock(last)),
                expiry: self.expiry(),
                touch: true,
                new_keys: None,
                known: None,
            },
            _ => {
                let guards = wanted
                    .iter()
                    .enumerate()
                    .map(|(i, &w)| if w { Some(self.lock(i)) } else { None })
                    .collect();
                View {
                    guards: Guards::Many(guards),
                    expiry: self.expiry(),
                    touch: true,
                    new_keys: None,
                    known: None,
                }
            }
        }
    }

    /// Locks one shard by number (AOF rewrite, snapshots).
    pub fn lock_shard(&self, shard: usize) -> View<'_> {
        View {
            guards: Guards::One(shard, self.shards[shard].lock()),
            expiry: self.expiry(),
            touch: true,
            new_keys: None,
            known: None,
        }
    }

    /// Locks every shard, in order: for commands over the whole keyspace.
    pub fn lock_all(&self) -> View<'_> {
        View {
            guards: Guards::Many((0..SHARDS).map(|i| Some(self.lock(i))).collect()),
            expiry: self.expiry(),
            touch: true,
            new_keys: None,
            known: None,
        }
    }

    /// Runs one step of active expiry on one shard; returns
    /// (keys examined, keys expired).
    pub fn active_expire_shard(
        &self,
        shard: usize,
        now_ms: u64,
        budget: usize,
        mut on_expired: impl FnMut(usize, &[u8]),
    ) -> (usize, usize) {
        // A shard held for long (a busy script) is skipped, not waited
        // for: the cron thread also accepts connections.
        let Some(mut guard) = self.shards[shard].try_lock() else {
            return (0, 0);
        };
        let shard = &mut *guard;
        let (mut examined, mut expired) = (0, 0);
        for (db_index, db) in shard.dbs.iter_mut().enumerate() {
            if db.volatile == 0 || db.slots.is_empty() {
                db.avg_ttl = 0;
                continue;
            }
            let (mut ttl_sum, mut ttl_keys) = (0u64, 0u64);
            for _ in 0..SLOTS_PER_SHARD {
                if examined >= budget {
                    break;
                }
                let idx = db.expire_cursor;
                db.expire_cursor = (db.expire_cursor + 1) % SLOTS_PER_SHARD;
                let map = &mut db.slots[idx];
                let mut removed = 0;
                examined += map.len();
                map.retain(|k, e| {
                    let dead = e.is_expired(now_ms);
                    if dead {
                        removed += 1;
                        on_expired(db_index, k);
                        super::value::free_expired(super::value::take_value(e.value));
                    } else if e.expire_at != 0 {
                        ttl_sum += e.expire_at.saturating_sub(now_ms);
                        ttl_keys += 1;
                    }
                    !dead
                });
                db.keys -= removed;
                db.volatile -= removed;
                expired += removed;
            }
            // Redis's running estimate: each sample's mean weighs 2%.
            if let Some(mean) = ttl_sum.checked_div(ttl_keys) {
                db.avg_ttl = if db.avg_ttl == 0 {
                    mean
                } else {
                    db.avg_ttl / 50 * 49 + mean / 50
                };
            }
        }
        shard.stats.expired += expired as u64;
        (examined, expired)
    }

    /// Runs one step of active hash-field expiry on one shard: fields due
    /// by `now_ms` (at most `budget`) are removed, and
    /// `on_expired(db, key, fields, key_deleted)` told of each hash's
    /// (a hash left empty is deleted). Returns the fields expired.
    pub fn active_expire_fields_shard(
        &self,
        shard: usize,
        now_ms: u64,
        budget: usize,
        mut on_expired: impl FnMut(usize, &[u8], &[Vec<u8>], bool),
    ) -> usize {
        let Some(mut guard) = self.shards[shard].try_lock() else {
            return 0;
        };
        let shard = &mut *guard;
        let mut expired = 0;
        for (db_index, db) in shard.dbs.iter_mut().enumerate() {
            while expired < budget {
                let Some(key) = db.hashes_with_ttls.pop_due(now_ms) else {
                    break;
                };
                let slot = key_slot(&key);
                let Some(map) = db.slots.get_mut(slot / SHARDS) else {
                    continue;
                };
                let Some(e) = map.get_mut(&key) else {
                    continue;
                };
                if e.is_expired(now_ms) {
                    // The key's own expiry deletes it whole.
                    continue;
                }
                let h = match &mut *e.value {
                    Value::Hash(h) => h,
                    Value::Spilled(_) => {
                        // On disk: expired once read back; looked at
                        // again in a second.
                        db.hashes_with_ttls.note(&key, now_ms + 1000);
                        continue;
                    }
                    _ => continue,
                };
                let fields = h
                    .ttls()
                    .map_or_else(Vec::new, |t| t.due(now_ms, budget - expired));
                for f in &fields {
                    h.remove(f);
                }
                expired += fields.len();
                let emptied = h.is_empty();
                if let Some(next) = h.min_field_expiry() {
                    db.hashes_with_ttls.note(&key, next);
                }
                if emptied {
                    if let Some(old) = map.remove(&key) {
                        db.keys -= 1;
                        if old.expire_at != 0 {
                            db.volatile -= 1;
                        }
                    }
                }
                if !fields.is_empty() {
                    on_expired(db_index, &key, &fields, emptied);
                }
            }
        }
        expired
    }

    /// Calls `f` with every shard in turn: through `held` for a shard it
    /// holds (locking it again would deadlock), else under the shard's
    /// lock for the call. `held` must hold every shard or none: waiting
    /// for one shard while holding another out of order could deadlock
    /// against a command that locks both in order. Commands that read
    /// every shard (`flag::EVERY_SHARD`) run holding none, or all of them
    /// inside EXEC or a script.
    fn each_shard(&self, held: &View, mut f: impl FnMut(&Shard)) {
        assert!(held.holds_all_or_none(), "a partial view of the keyspace");
        for (i, m) in self.shards.iter().enumerate() {
            match held.held(i) {
                Some(s) => f(s),
                None => f(&m.lock()),
            }
        }
    }

    /// Sums of per-shard counters and sizes, taken one shard at a time
    /// (`held`: the caller's view, see [`Keyspace::each_shard`]).
    pub fn stats(&self, held: &View) -> (ShardStats, Vec<DbStats>) {
        let mut total = ShardStats::default();
        let mut dbs = vec![DbStats::default(); self.databases];
        // avg_ttl: the shards' estimates weighted by their volatile keys.
        let mut weighted = vec![(0u128, 0u128); self.databases];
        self.each_shard(held, |s| {
            total.hits += s.stats.hits;
            total.misses += s.stats.misses;
            total.expired += s.stats.expired;
            total.values_in_memory += s.stats.values_in_memory;
            total.values_on_disk += s.stats.values_on_disk;
            for (i, db) in s.dbs.iter().enumerate() {
                dbs[i].keys += db.keys;
                dbs[i].volatile += db.volatile;
                dbs[i].hashes_with_ttls += db.hashes_with_ttls.by_key.len();
                if db.avg_ttl > 0 {
                    weighted[i].0 += db.avg_ttl as u128 * db.volatile as u128;
                    weighted[i].1 += db.volatile as u128;
                }
            }
        });
        for (db, (sum, n)) in dbs.iter_mut().zip(weighted) {
            if let Some(avg) = sum.checked_div(n) {
                db.avg_ttl = avg as u64;
            }
        }
        (total, dbs)
    }

    /// Keys and lock waits of every shard (`held`: see
    /// [`Keyspace::each_shard`]).
    pub fn shard_stats(&self, held: &View) -> Vec<ShardInfo> {
        let mut out = Vec::with_capacity(SHARDS);
        self.each_shard(held, |s| {
            out.push(ShardInfo {
                keys: s.dbs.iter().map(|d| d.keys as u64).sum(),
                lock_waits: 0,
            });
        });
        for (o, w) in out.iter_mut().zip(self.waits.iter()) {
            o.lock_waits = w.load(Relaxed);
        }
        out
    }

    /// The keyspace's own memory, per database: bytes of the slot tables
    /// (and their directories), taken one shard at a time. Nodes (entry +
    /// key) are counted with the dataset, as Redis counts robj and key.
    pub fn table_bytes(&self, held: &View) -> Vec<usize> {
        let mut dbs = vec![0; self.databases];
        self.each_shard(held, |s| {
            for (i, db) in s.dbs.iter().enumerate() {
                dbs[i] += db.slots.capacity() * std::mem::size_of::<Map>()
                    + db.slots.iter().map(Map::table_bytes).sum::<usize>();
            }
        });
        dbs
    }

    pub fn reset_stats(&self, held: &mut View) {
        assert!(held.holds_all_or_none(), "a partial view of the keyspace");
        for (i, m) in self.shards.iter().enumerate() {
            match held.held_mut(i) {
                Some(s) => s.stats = ShardStats::default(),
                None => m.lock().stats = ShardStats::default(),
            }
        }
        for w in self.waits.iter() {
            w.store(0, Relaxed);
        }
    }

    /// Runs `f` holding every shard, for work over the whole keyspace at
    /// once (a snapshot's or a rewrite's start): through `held` when it
    /// holds them all (the command runs inside EXEC or a script, which
    /// locked them), else with all of them locked for the call (`held`
    /// must then hold none, see [`Keyspace::each_shard`]).
    pub fn with_every_shard<R>(&self, held: &mut View, f: impl FnOnce(&mut View) -> R) -> R {
        assert!(held.holds_all_or_none(), "a partial view of the keyspace");
        if held.holds_all() {
            f(held)
        } else {
            f(&mut self.lock_all())
        }
    }
}

enum Guards<'a> {
    None,
    One(usize, MutexGuard<'a, Shard>),
    /// Indexed by shard number; `None` for shards not locked.
    Many(Vec<Option<MutexGuard<'a, Shard>>>),
}

/// The shards a command holds while it runs. Every key access goes through
/// here; touching a key whose shard is not held is a bug in the command's
/// key specification, not something input can cause.
pub struct View<'a> {
    guards: Guards<'a>,
    /// How lookups treat an expired key (see [`Expiry`]).
    expiry: Expiry,
    /// Lookups update the keys' access time and frequency (not for a
    /// CLIENT NO-TOUCH client's commands, see [`View::touching`]).
    touch: bool,
    /// Keys added since the last [`View::take_new_keys`], recorded while
    /// someone listens for the `new` keyspace event ([`View::record_new`]).
    /// Boxed: a view is moved along the request's path, and this is
    /// almost always off.
    new_keys: Option<Box<NewKeys>>,
    /// The slot of the request's key, worked out when the request was
    /// resolved (see [`View::knowing`]).
    known: Option<KnownSlot>,
}

/// Keys a view added, as (database, key), for the `new` keyspace event.
type NewKeys = Vec<(usize, Vec<u8>)>;

/// A key argument's slot, known by the argument's address: a handler
/// passes its argv slices to the view, so finding the slot again costs a
/// compare instead of a CRC.
#[derive(Clone, Copy)]
struct KnownSlot {
    addr: usize,
    len: usize,
    slot: usize,
}

/// How a view treats keys past their expiry time.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Expiry {
    /// A primary: an expired key is deleted when found (lazy expiry).
    Delete,
    /// A replica's clients: an expired key reads as missing but stays,
    /// until the primary's DEL comes (Redis replicas do not expire keys on
    /// their own clock, so both copies change in the stream's order).
    Hide,
    /// The primary's stream applied on a replica: keys are as the primary
    /// has them, expired or not.
    Ignore,
}

impl<'a> View<'a> {
    /// This view, told that `key` (a slice of the request's argv) is in
    /// `slot`. The caller keeps that argv alive, unchanged, for as long as
    /// the view: the address stands for the bytes only while they live.
    #[inline]
    pub fn knowing(mut self, key: &[u8], slot: usize) -> View<'a> {
        self.known = Some(KnownSlot {
            addr: key.as_ptr() as usize,
            len: key.len(),
            slot,
        });
        self
    }

    /// The slot of `key`: the known one for the request's key itself.
    #[inline]
    fn slot_of(&self, key: &[u8]) -> usize {
        match self.known {
            Some(k) if k.addr == key.as_ptr() as usize && k.len == key.len() => k.slot,
            _ => key_slot(key),
        }
    }

    /// Shard `i`, if this view holds it.
    fn held(&self, i: usize) -> Option<&Shard> {
        match &self.guards {
            Guards::One(s, g) if *s == i => Some(g),
            Guards::Many(v) => v.get(i).and_then(|g| g.as_deref()),
            _ => None,
        }
    }

    fn held_mut(&mut self, i: usize) -> Option<&mut Shard> {
        match &mut self.guards {
            Guards::One(s, g) if *s == i => Some(g),
            Guards::Many(v) => v.get_mut(i).and_then(|g| g.as_deref_mut()),
            _ => None,
        }
    }

    /// Whether this view holds every shard.
    pub fn holds_all(&self) -> bool {
        match &self.guards {
            Guards::Many(v) => v.iter().all(Option::is_some),
            Guards::One(..) => SHARDS == 1,
            Guards::None => false,
        }
    }

    fn holds_all_or_none(&self) -> bool {
        matches!(self.guards, Guards::None) || self.holds_all()
    }

    fn shard_ref(&self, shard: usize) -> &Shard {
        match &self.guards {
            Guards::One(s, g) if *s == shard => g,
            Guards::Many(v) => match v.get(shard) {
                Some(Some(g)) => g,
                _ => panic!("shard {shard} not locked"),
            },
            _ => panic!("shard {shard} not locked"),
        }
    }

    #[inline]
    fn shard(&mut self, shard: usize) -> &mut Shard {
        match &mut self.guards {
            Guards::One(s, g) if *s == shard => g,
            Guards::Many(v) => match v.get_mut(shard) {
                Some(Some(g)) => g,
                _ => panic!("shard {shard} not locked"),
            },
            _ => panic!("shard {shard} not locked"),
        }
    }

    /// The live entry for `key`, deleting it first if it has expired
    /// (lazy expiry). Counts a keyspace hit or miss.
    /// A value on disk is read back first (`tier::load_in_place`).
    #[inline]
    pub fn get(&mut self, db: usize, key: &[u8], now_ms: u64) -> Option<EntryMut<'_>> {
        let e = self.get_meta(db, key, now_ms)?;
        if e.value.is_spilled() {
            crate::tier::load_in_place(e.value);
        }
        Some(e)
    }

    /// [`View::get`] without reading a spilled value back: for what only
    /// the key's metadata (type, expiry, existence) answers.
    #[inline]
    pub fn get_meta(&mut self, db: usize, key: &[u8], now_ms: u64) -> Option<EntryMut<'_>> {
        if self.expiry != Expiry::Delete {
            return self.get_on_replica(db, key, now_ms, true);
        }
        let touch = self.touch;
        let slot = self.slot_of(key);
        let shard = self.shard(shard_of(slot));
        let sdb = &mut shard.dbs[db];
        let Some(map) = sdb.slots.get_mut(slot / SHARDS) else {
            shard.stats.misses += 1;
            return None;
        };
        match map.get_live(key, now_ms) {
            Lookup::Live(e) => {
                shard.stats.hits += 1;
                if touch {
                    access::touch(e.access, now_ms);
                }
                Some(e)
            }
            Lookup::Expired => {
                sdb.keys -= 1;
                sdb.volatile -= 1;
                shard.stats.expired += 1;
                shard.stats.misses += 1;
                shard.pending_expired.push((db, key.to_vec()));
                None
            }
            Lookup::Missing => {
                shard.stats.misses += 1;
                None
            }
        }
    }

    /// Whether lookups update the keys' access time and frequency (a
    /// CLIENT NO-TOUCH client's commands, but TOUCH, do not).
    #[inline]
    pub fn touching(&mut self, touch: bool) {
        self.touch = touch;
    }

    #[inline]
    pub fn is_touching(&self) -> bool {
        self.touch
    }

    /// Like [`View::get`] but counts no hit/miss and does not update the
    /// access clock (Redis's LOOKUP_NOTOUCH: TYPE, EXISTS, TTL...).
    pub fn peek(&mut self, db: usize, key: &[u8], now_ms: u64) -> Option<EntryMut<'_>> {
        let e = self.peek_meta(db, key, now_ms)?;
        if e.value.is_spilled() {
            crate::tier::load_in_place(e.value);
        }
        Some(e)
    }

    /// [`View::peek`] without reading a spilled value back (see
    /// [`View::get_meta`]).
    pub fn peek_meta(&mut self, db: usize, key: &[u8], now_ms: u64) -> Option<EntryMut<'_>> {
        if self.expiry != Expiry::Delete {
            return self.get_on_replica(db, key, now_ms, false);
        }
        let slot = self.slot_of(key);
        let shard = self.shard(shard_of(slot));
        let sdb = &mut shard.dbs[db];
        let map = sdb.slots.get_mut(slot / SHARDS)?;
        match map.get_live(key, now_ms) {
            Lookup::Live(e) => Some(e),
            Lookup::Expired => {
                sdb.keys -= 1;
                sdb.volatile -= 1;
                shard.stats.expired += 1;
                shard.pending_expired.push((db, key.to_vec()));
                None
            }
            Lookup::Missing => None,
        }
    }

    /// [`View::get`] (`count`: hits and misses) and [`View::peek`] on a
    /// replica: nothing is deleted; an expired key reads as missing to
    /// the replica's clients and as present to its primary's stream.
    #[cold]
    fn get_on_replica(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        count: bool,
    ) -> Option<EntryMut<'_>> {
        let now_ms = if self.expiry == Expiry::Ignore {
            0
        } else {
            now_ms
        };
        let touch = self.touch;
        let slot = self.slot_of(key);
        let shard = self.shard(shard_of(slot));
        let found = shard.dbs[db]
            .slots
            .get_mut(slot / SHARDS)
            .and_then(|m| m.get_unexpired(key, now_ms));
        if count {
            match found {
                Some(_) => shard.stats.hits += 1,
                None => shard.stats.misses += 1,
            }
        }
        let e = found?;
        if count && touch {
            access::touch(e.access, now_ms);
        }
        Some(e)
    }

    /// Where `key`'s value is on disk and its encoding, if it is: a look with no side
    /// effect (no expiry, no hit counted), for dispatch to find what a
    /// request must wait for before it runs.
    pub fn spilled_loc(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
    ) -> Option<(crate::tier::log::Loc, &'static str)> {
        self.value_needed(db, key, now_ms, false)
    }

    /// [`View::spilled_loc`] for a value a request needs: the first look
    /// of the request (`count`) is counted as a value found in memory or
    /// on disk, for the tier's hit rate. An absent key counts nothing.
    pub fn value_needed(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        count: bool,
    ) -> Option<(crate::tier::log::Loc, &'static str)> {
        let now_ms = self.expiry_now(now_ms);
        let slot = self.slot_of(key);
        let shard = self.shard(shard_of(slot));
        let e = shard.dbs[db]
            .slots
            .get_mut(slot / SHARDS)?
            .get_unexpired(key, now_ms)?;
        let on_disk = match &*e.value {
            Value::Spilled(stub) => Some((stub.loc(), stub.encoding())),
            _ => None,
        };
        if count {
            match on_disk {
                Some(_) => shard.stats.values_on_disk += 1,
                None => shard.stats.values_in_memory += 1,
            }
        }
        on_disk
    }

    /// Whether `key` is live with its value in memory (not on disk): a
    /// look with no side effect, as [`View::spilled_loc`].
    pub fn in_memory(&mut self, db: usize, key: &[u8], now_ms: u64) -> bool {
        let now_ms = self.expiry_now(now_ms);
        let slot = self.slot_of(key);
        let shard = self.shard(shard_of(slot));
        shard.dbs[db]
            .slots
            .get_mut(slot / SHARDS)
            .and_then(|m| m.get_unexpired(key, now_ms))
            .is_some_and(|e| !e.value.is_spilled())
    }

    /// How this view treats what has expired (keys, and hash fields by
    /// the same rule).
    #[inline]
    pub fn expiry_mode(&self) -> Expiry {
        self.expiry
    }

    /// This view applies a primary's stream: expired keys are still there
    /// (see [`Expiry::Ignore`]).
    pub fn obey_primary(&mut self) {
        self.expiry = Expiry::Ignore;
    }

    /// The clock expiry is judged by: 0 (nothing expires) for a primary's
    /// stream on a replica.
    #[inline]
    fn expiry_now(&self, now_ms: u64) -> u64 {
        if self.expiry == Expiry::Ignore {
            0
        } else {
            now_ms
        }
    }

    /// Stores `value` under `key` with the given expiry (0 = none),
    /// replacing any previous value. Returns the previous live entry.
    pub fn set(
        &mut self,
        db: usize,
        key: &[u8],
        value: Value,
        expire_at: u64,
        now_ms: u64,
    ) -> Option<Entry> {
        let self_expiry_ignore = self.expiry == Expiry::Ignore;
        let recording = self.new_keys.is_some();
        let slot = self.slot_of(key);
        let shard = self.shard(shard_of(slot));
        let sdb = &mut shard.dbs[db];
        if let Value::Hash(h) = &value {
            if let Some(at) = h.min_field_expiry() {
                sdb.hashes_with_ttls.note(key, at);
            }
        }
        let entry = Entry {
            value,
            expire_at,
            access: access::fresh(now_ms),
            unshared: false,
        };
        let old = sdb.map_mut(slot).insert(key, entry);
        match &old {
            None => sdb.keys += 1,
            Some(o) if o.expire_at != 0 => sdb.volatile -= 1,
            Some(_) => {}
        }
        if expire_at != 0 {
            sdb.volatile += 1;
        }
        let expiry_now = if self_expiry_ignore { 0 } else { now_ms };
        let old = match old {
            Some(o) if o.is_expired(expiry_now) => {
                shard.stats.expired += 1;
                shard.pending_expired.push((db, key.to_vec()));
                None
            }
            o => o,
        };
        if old.is_none() && recording {
            if let Some(added) = &mut self.new_keys {
                added.push((db, key.to_vec()));
            }
        }
        old
    }

    /// Registers the hash at `key` for active field expiry at `at` (its
    /// earliest field TTL, or earlier): HEXPIRE and its family.
    pub fn note_field_expiry(&mut self, db: usize, key: &[u8], at: u64) {
        let slot = self.slot_of(key);
        let shard = self.shard(shard_of(slot));
        shard.dbs[db].hashes_with_ttls.note(key, at);
    }

    /// Records the keys [`View::set`] adds from now on (the `new` keyspace
    /// event is selected), or stops recording.
    #[inline]
    pub fn record_new(&mut self, on: bool) {
        if on != self.new_keys.is_some() {
            self.new_keys = on.then(Box::default);
        }
    }

    /// Whether keys were added since the last [`View::take_new_keys`].
    #[inline]
    pub fn has_new_keys(&self) -> bool {
        self.new_keys
            .as_ref()
            .is_some_and(|added| !added.is_empty())
    }

    /// The keys added since the last call, as (database, key).
    pub fn take_new_keys(&mut self) -> Vec<(usize, Vec<u8>)> {
        match &mut self.new_keys {
            Some(added) => std::mem::take(&mut **added),
            None => Vec::new(),
        }
    }

    /// Removes `key`; returns its entry if it was live.
    pub fn remove(&mut self, db: usize, key: &[u8], now_ms: u64) -> Option<Entry> {
        let now_ms = self.expiry_now(now_ms);
        let slot = self.slot_of(key);
        let shard = self.shard(shard_of(slot));
        let sdb = &mut shard.dbs[db];
        let old = sdb.slots.get_mut(slot / SHARDS)?.remove(key)?;
        if matches!(&old.value, Value::Hash(h) if h.ttls().is_some()) {
            sdb.hashes_with_ttls.forget(key);
        }
        sdb.keys -= 1;
        if old.expire_at != 0 {
            sdb.volatile -= 1;
        }
        if old.is_expired(now_ms) {
            shard.stats.expired += 1;
            shard.pending_expired.push((db, key.to_vec()));
            return None;
        }
        Some(old)
    }

    /// The shards this view holds, in ascending order.
    pub fn held_shards(&self) -> Vec<usize> {
        match &self.guards {
            Guards::None => Vec::new(),
            Guards::One(s, _) => vec![*s],
            Guards::Many(v) => v
                .iter()
                .enumerate()
                .filter(|(_, g)| g.is_some())
                .map(|(i, _)| i)
                .collect(),
        }
    }

    /// Calls `f(db, key, entry)` for every key stored in `shard` (held),
    /// expired or not.
    pub fn for_each_in_shard(&self, shard: usize, mut f: impl FnMut(usize, &[u8], EntryRef<'_>)) {
        let s = self.shard_ref(shard);
        for (db, sdb) in s.dbs.iter().enumerate() {
            for map in &sdb.slots {
                for (k, e) in map.iter() {
                    f(db, k, e);
                }
            }
        }
    }

    /// Like [`View::for_each_in_shard`], for the keys of one hash slot
    /// (in every database), so a shard can be walked in pieces with the
    /// lock let go in between: slots are fixed, unlike the order of keys
    /// inside a map. The slot's shard must be held.
    pub fn for_each_in_slot(&self, slot: usize, mut f: impl FnMut(usize, &[u8], EntryRef<'_>)) {
        let s = self.shard_ref(shard_of(slot));
        for (db, sdb) in s.dbs.iter().enumerate() {
            if let Some(map) = sdb.map(slot) {
                for (k, e) in map.iter() {
                    f(db, k, e);
                }
            }
        }
    }

    /// How many keys database `db` holds in `slot` (expired ones not yet
    /// removed included, as Redis's countKeysInSlot). The slot's shard
    /// must be held.
    pub fn slot_len(&self, db: usize, slot: usize) -> usize {
        let s = self.shard_ref(shard_of(slot));
        s.dbs
            .get(db)
            .and_then(|d| d.map(slot))
            .map_or(0, |m| m.len())
    }

    /// Marks `key`'s value as its own object (COPY, and RENAME/MOVE of
    /// such a value): OBJECT REFCOUNT 1 even for a small integer.
    pub fn set_unshared(&mut self, db: usize, key: &[u8]) {
        let slot = self.slot_of(key);
        let shard = self.shard(shard_of(slot));
        if let Some(map) = shard.dbs[db].slots.get_mut(slot / SHARDS) {
            map.set_unshared(key);
        }
    }

    /// (keys, keys with a TTL) of `db` in a locked shard.
    pub fn shard_db_len(&self, shard: usize, db: usize) -> (usize, usize) {
        let d = &self.shard_ref(shard).dbs[db];
        (d.keys, d.volatile)
    }

    /// Eviction's sampling (Redis's dictGetSomeKeys): calls `f` with up to
    /// `max` keys of `db` in a locked shard, taken from consecutive slots
    /// starting at a random one, and from a random place inside each
    /// slot's map. `volatile_only` passes over keys without a TTL (looking
    /// at up to 1000 more keys for them).
    pub fn sample(
        &self,
        shard: usize,
        db: usize,
        max: usize,
        volatile_only: bool,
        rng: &mut impl rand::Rng,
        mut f: impl FnMut(&[u8], EntryRef<'_>),
    ) {
        let sdb = &self.shard_ref(shard).dbs[db];
        if sdb.slots.is_empty() || max == 0 {
            return;
        }
        let (mut taken, mut looked) = (0, 0);
        let start = rng.gen_range(0..SLOTS_PER_SHARD);
        for i in 0..SLOTS_PER_SHARD {
            let map = &sdb.slots[(start + i) % SLOTS_PER_SHARD];
            if map.is_empty() {
                continue;
            }
            let skip = rng.gen_range(0..map.len());
            // From `skip` to the end, then from the start: a window of the
            // map that wraps.
            for (k, e) in map.iter().skip(skip).chain(map.iter().take(skip)) {
                looked += 1;
                if !volatile_only || e.expire_at != 0 {
                    f(k, e);
                    taken += 1;
                }
                if taken >= max || looked >= max * 10 + 1000 * usize::from(volatile_only) {
                    return;
                }
            }
        }
    }

    /// Whether keys were deleted on access since the last `take_expired`
    /// (checked after every command: one load for a one-shard view).
    #[inline]
    pub fn has_expired(&self) -> bool {
        match &self.guards {
            Guards::None => false,
            Guards::One(_, g) => !g.pending_expired.is_empty(),
            Guards::Many(v) => v.iter().flatten().any(|g| !g.pending_expired.is_empty()),
        }
    }

    /// Keys deleted on access because they had expired, since the last call.
    pub fn take_expired(&mut self) -> Vec<(usize, Vec<u8>)> {
        match &mut self.guards {
            Guards::None => Vec::new(),
            Guards::One(_, g) => std::mem::take(&mut g.pending_expired),
            Guards::Many(v) => v
                .iter_mut()
                .flatten()
                .flat_map(|g| std::mem::take(&mut g.pending_expired))
                .collect(),
        }
    }

    /// Sets or clears (0) the expiry of an existing key. Returns false if
    /// the key does not exist.
    pub fn set_expire(&mut self, db: usize, key: &[u8], expire_at: u64) -> bool {
        let slot = self.slot_of(key);
        let shard = self.shard(shard_of(slot));
        let sdb = &mut shard.dbs[db];
        let Some(old) = sdb
            .slots
            .get_mut(slot / SHARDS)
            .and_then(|m| m.set_expire(key, expire_at))
        else {
            return false;
        };
        match (old != 0, expire_at != 0) {
            (false, true) => sdb.volatile += 1,
            (true, false) => sdb.volatile -= 1,
            _ => {}
        }
        true
    }

    /// Number of keys in `db` over the locked shards (all of them for
    /// DBSIZE). Keys that expired but were not yet reclaimed are counted,
    /// as Redis does.
    pub fn len(&mut self, db: usize) -> usize {
        self.each_shard().map(|s| s.dbs[db].keys).sum()
    }

    /// Keys in every database over the locked shards.
    pub fn key_count(&mut self) -> usize {
        self.each_shard()
            .map(|s| s.dbs.iter().map(|d| d.keys).sum::<usize>())
            .sum()
    }

    fn each_shard(&mut self) -> impl Iterator<Item = &mut Shard> {
        let v: Vec<&mut Shard> = match &mut self.guards {
            Guards::None => Vec::new(),
            Guards::One(_, g) => vec![&mut **g],
            Guards::Many(v) => v.iter_mut().flatten().map(|g| &mut **g).collect(),
        };
        v.into_iter()
    }

    /// Calls `f` for every live key of `db` in slot order (all shards must
    /// be locked).
    pub fn for_each_key(&mut self, db: usize, now_ms: u64, mut f: impl FnMut(&[u8], EntryRef<'_>)) {
        for slot in 0..SLOTS {
            let shard = self.shard_ref(shard_of(slot));
            if let Some(map) = shard.dbs[db].map(slot) {
                for (k, e) in map.iter() {
                    if !e.is_expired(now_ms) {
                        f(k, e);
                    }
                }
            }
        }
    }

    /// One SCAN step over `db` (all shards locked): visits keys in order of
    /// (slot, scan_hash) from `cursor`, calling `f` for each live key, until
    /// at least `count` keys were visited. Returns the next cursor (0 at
    /// the end).
    pub fn scan(
        &mut self,
        db: usize,
        cursor: u64,
        count: usize,
        now_ms: u64,
        mut f: impl FnMut(&[u8], EntryRef<'_>),
    ) -> u64 {
        let mut slot = (cursor >> 48) as usize;
        let mut from = cursor & ((1 << 48) - 1);
        let mut visited = 0;
        let mut batch: Vec<(u64, &[u8], EntryRef<'_>)> = Vec::new();
        let this: &Self = self;
        while slot < SLOTS {
            let shard = this.shard_ref(shard_of(slot));
            if let Some(map) = shard.dbs[db].map(slot) {
                batch.clear();
                batch.extend(
                    map.iter()
                        .map(|(k, e)| (scan_hash(k), k, e))
                        .filter(|(h, _, _)| *h >= from),
                );
                batch.sort_unstable_by_key(|(h, _, _)| *h);
                for (i, (h, k, e)) in batch.iter().enumerate() {
                    if visited >= count && (i == 0 || batch[i - 1].0 != *h) {
                        return ((slot as u64) << 48) | *h;
                    }
                    visited += 1;
                    if !e.is_expired(now_ms) {
                        f(k, *e);
                    }
                }
            }
            slot += 1;
            from = 0;
            if visited >= count && slot < SLOTS {
                return (slot as u64) << 48;
            }
        }
        0
    }

    /// A random live key of `db` (all shards locked), or None if empty.
    pub fn random_key(&mut self, db: usize, now_ms: u64) -> Option<Vec<u8>> {
        use rand::Rng;
        let mut rng = rand::thread_rng();
        for _ in 0..100 {
            let total = self.len(db);
            if total == 0 {
                return None;
            }
            // Pick a slot weighted by its size: walk to the n-th key.
            let mut n = rng.gen_range(0..total);
            let mut found: Option<(Vec<u8>, bool)> = None;
            for slot in 0..SLOTS {
                let shard = self.shard_ref(shard_of(slot));
                if let Some(map) = shard.dbs[db].map(slot) {
                    if n < map.len() {
                        if let Some((k, e)) = map.iter().nth(n) {
                            found = Some((k.to_vec(), e.is_expired(now_ms)));
                        }
                        break;
                    }
                    n -= map.len();
                }
            }
            match found {
                Some((k, false)) => return Some(k),
                // A replica leaves expired keys to its primary's DEL.
                Some((k, true)) if self.expiry == Expiry::Delete => {
                    self.remove(db, &k, now_ms);
                }
                Some(_) => {}
                None => return None,
            }
        }
        None
    }

    /// Empties `db` in the locked shards, returning the removed maps so the
    /// caller can free them elsewhere (FLUSHDB ASYNC).
    pub fn flush(&mut self, db: usize) -> Vec<Vec<Map>> {
        self.each_shard()
            .map(|s| {
                let sdb = &mut s.dbs[db];
                sdb.keys = 0;
                sdb.volatile = 0;
                sdb.hashes_with_ttls = FieldExpiryIndex::default();
                std::mem::take(&mut sdb.slots)
            })
            .collect()
    }

    /// Swaps two databases in every locked shard (all, for SWAPDB).
    pub fn swap(&mut self, a: usize, b: usize) {
        for s in self.each_shard() {
            s.dbs.swap(a, b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::value::Str;

    fn s(v: &str) -> Value {
        Value::Str(Str::from_bytes(v.as_bytes()))
    }

    #[test]
    fn set_get_expire_counts() {
        let ks = Keyspace::new(2);
        let mut v = ks.lock_all();
        assert!(v.set(0, b"a", s("1"), 0, 1000).is_none());
        assert!(v.set(0, b"b", s("2"), 2000, 1000).is_none());
        assert_eq!(v.len(0), 2);
        assert!(v.get(0, b"b", 1500).is_some());
        assert!(v.get(0, b"b", 2000).is_none());
        assert_eq!(v.len(0), 1);
        assert!(v.set_expire(0, b"a", 5000));
        assert_eq!(v.len(0), 1);
        // Read through a view holding every shard, and holding none.
        let db = ks.stats(&v).1[0];
        assert_eq!((db.keys, db.volatile), (1, 1));
        drop(v);
        let (_, dbs) = ks.stats(&ks.none());
        assert_eq!((dbs[0].keys, dbs[0].volatile), (1, 1));
        let (_, expired) = ks.active_expire_shard(shard_of(key_slot(b"a")), 6000, 1000, |_, _| {});
        assert_eq!(expired, 1);
        let db = ks.stats(&ks.none()).1[0];
        assert_eq!((db.keys, db.volatile), (0, 0));
    }

    #[test]
    fn scan_returns_every_stable_key_once_while_growing() {
        let ks = Keyspace::new(1);
        let mut v = ks.lock_all();
        for i in 0..500 {
            v.set(0, format!("k{i}").as_bytes(), s("x"), 0, 0);
        }
        let mut seen = std::collections::HashMap::new();
        let mut cursor = 0;
        let mut round = 0;
        loop {
            cursor = v.scan(0, cursor, 10, 0, |k, _| {
                *seen.entry(k.to_vec()).or_insert(0) += 1
            });
            // Grow the keyspace during the scan.
            v.set(0, format!("new{round}").as_bytes(), s("x"), 0, 0);
            round += 1;
            if cursor == 0 {
                break;
            }
        }
        for i in 0..500 {
            assert_eq!(seen.get(format!("k{i}").as_bytes()), Some(&1), "k{i}");
        }
    }
}
