//! What a point-in-time capture of the keyspace has taken so far: a
//! snapshot's image (`snapshot`) and an AOF rewrite's base (`aof::rewrite`)
//! each have one.
//!
//! A capture takes the dataset hash slot by hash slot while commands run;
//! a command first lets it take the slots it is about to change. Three
//! commands change every slot at once and would make it copy the whole
//! dataset under every shard's lock (twice the memory, seconds of stall);
//! they tell the capture instead:
//! - SWAPDB renames databases: the capture maps each database to the one
//!   its keys had when the capture started ([`Capture::swapped`]);
//! - FLUSHDB and FLUSHALL hand their detached maps over, unchanged, with
//!   the slots still to take in them ([`Capture::flushed`]): the keys are
//!   freed once the capture has written them, instead of copied.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::server::Server;
use crate::storage::keyspace::{Map, View, SHARDS};
use crate::storage::value::EntryRef;
use resp::slot::SLOTS;

/// One bit per hash slot.
#[derive(Clone)]
struct SlotBits(Box<[u64]>);

impl SlotBits {
    fn empty() -> SlotBits {
        SlotBits(vec![0; SLOTS / 64].into_boxed_slice())
    }

    fn has(&self, slot: usize) -> bool {
        self.0[slot / 64] & (1 << (slot % 64)) != 0
    }

    fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
}

/// The maps one database's flush detached: per shard (in shard order, as
/// `View::flush` returns them over every shard), per slot of the shard.
pub type FlushedMaps = Vec<Vec<Map>>;

/// Keys a flush handed over: one database's maps, and the slots of them
/// the capture had not taken yet.
pub struct Detached {
    /// The database in the capture's numbering.
    db: usize,
    maps: Arc<FlushedMaps>,
    slots: SlotBits,
}

impl Detached {
    /// The maps of the slots the capture still needs, each with the
    /// capture's number of its database.
    pub fn maps(&self) -> impl Iterator<Item = (usize, &Map)> {
        self.maps.iter().enumerate().flat_map(move |(shard, maps)| {
            maps.iter()
                .enumerate()
                .filter(move |(i, _)| self.slots.has(shard + i * SHARDS))
                .map(move |(_, map)| (self.db, map))
        })
    }
}

/// What SWAPDB and flushes changed since the capture started.
#[derive(Default)]
struct Reshaped {
    /// Between `start` and `end`: a flush that checked its owner's flag
    /// just before the capture ended must not leave its keys here.
    capturing: bool,
    /// The capture's database for each current one (identity past the end).
    image_db: Vec<usize>,
    /// Per database of the capture, the slots whose keys a flush handed
    /// over: what the live keyspace holds there now came later.
    handed: Vec<Option<SlotBits>>,
    /// Handed-over keys not yet written.
    detached: Vec<Detached>,
}

impl Reshaped {
    fn image_db(&self, db: usize) -> usize {
        self.image_db.get(db).copied().unwrap_or(db)
    }

    fn handed(&self, image_db: usize, slot: usize) -> bool {
        matches!(self.handed.get(image_db), Some(Some(bits)) if bits.has(slot))
    }
}

pub struct Capture {
    /// One bit per slot taken (written, or copied to be); set only while
    /// the slot's shard is held, read without any lock.
    taken: Box<[AtomicU64]>,
    /// `reshaped` holds something: slots are read through it.
    any_reshaped: AtomicBool,
    reshaped: Mutex<Reshaped>,
}

impl Default for Capture {
    fn default() -> Capture {
        Capture {
            taken: (0..SLOTS / 64).map(|_| AtomicU64::new(0)).collect(),
            any_reshaped: AtomicBool::new(false),
            reshaped: Mutex::new(Reshaped::default()),
        }
    }
}

impl Capture {
    /// Starts a new capture: nothing taken (every shard held, or no
    /// command can reach the capture yet).
    pub fn start(&self) {
        for t in self.taken.iter() {
            t.store(0, Relaxed);
        }
        self.end();
        self.reshaped.lock().capturing = true;
    }

    /// Drops what the last capture kept (keys handed over and never
    /// written are freed here).
    pub fn end(&self) {
        let old = std::mem::take(&mut *self.reshaped.lock());
        self.any_reshaped.store(false, Relaxed);
        drop(old);
    }

    #[inline]
    pub fn is_taken(&self, slot: usize) -> bool {
        self.taken[slot / 64].load(Relaxed) & (1 << (slot % 64)) != 0
    }

    /// Marks `slot` taken (its shard held); false if it already was.
    pub fn take(&self, slot: usize) -> bool {
        let bit = 1 << (slot % 64);
        self.taken[slot / 64].fetch_or(bit, Relaxed) & bit == 0
    }

    /// Calls `f(db, key, entry)` for the keys of `slot` (its shard held by
    /// `view`) as the capture records them: databases as they were
    /// numbered at its start, without keys that came after a flush.
    pub fn for_each_in_slot(
        &self,
        view: &View,
        slot: usize,
        mut f: impl FnMut(usize, &[u8], EntryRef<'_>),
    ) {
        if !self.any_reshaped.load(Relaxed) {
            return view.for_each_in_slot(slot, f);
        }
        let reshaped = self.reshaped.lock();
        view.for_each_in_slot(slot, |db, key, entry| {
            let image_db = reshaped.image_db(db);
            if !reshaped.handed(image_db, slot) {
                f(image_db, key, entry);
            }
        });
    }

    /// SWAPDB `a` `b` is about to run (every shard held).
    pub fn swapped(&self, a: usize, b: usize) {
        let mut r = self.reshaped.lock();
        if !r.capturing {
            return;
        }
        let len = r.image_db.len().max(a + 1).max(b + 1);
        let next = r.image_db.len();
        r.image_db.extend(next..len);
        r.image_db.swap(a, b);
        self.any_reshaped.store(true, Relaxed);
    }

    /// Database `db` was flushed (every shard held) into `maps`: the
    /// capture keeps the keys it has not taken yet.
    pub fn flushed(&self, db: usize, maps: &Arc<FlushedMaps>) {
        debug_assert_eq!(maps.len(), SHARDS);
        let mut r = self.reshaped.lock();
        if !r.capturing {
            return;
        }
        let image_db = r.image_db(db);
        let mut slots = SlotBits::empty();
        for (word, bits) in slots.0.iter_mut().enumerate() {
            let mut want = !self.taken[word].load(Relaxed);
            if let Some(Some(handed)) = r.handed.get(image_db) {
                want &= !handed.0[word];
            }
            *bits = want;
        }
        if slots.is_empty() {
            return;
        }
        if r.handed.len() <= image_db {
            r.handed.resize(image_db + 1, None);
        }
        let handed = r.handed[image_db].get_or_insert_with(SlotBits::empty);
        for (h, s) in handed.0.iter_mut().zip(slots.0.iter()) {
            *h |= s;
        }
        r.detached.push(Detached {
            db: image_db,
            maps: Arc::clone(maps),
            slots,
        });
        self.any_reshaped.store(true, Relaxed);
    }

    /// Handed-over keys for the capture's thread to write (outside every
    /// lock: nothing else reads or changes them).
    pub fn take_detached(&self) -> Vec<Detached> {
        if !self.any_reshaped.load(Relaxed) {
            return Vec::new();
        }
        std::mem::take(&mut self.reshaped.lock().detached)
    }
}

/// Empties database `db` in `view` (which holds every shard), handing
/// its keys to the captures running: returns the maps to free (freed by
/// the last capture to write them, if any still needs them).
pub fn flush_db(server: &Server, view: &mut View, db: usize) -> Arc<FlushedMaps> {
    let maps = Arc::new(view.flush(db));
    server.snapshots.flushed(db, &maps);
    server.aof.flushed(db, &maps);
    maps
}

/// Swaps databases `a` and `b` in `view` (which holds every shard), the
/// captures running keeping each one's keys under its first number.
pub fn swap_dbs(server: &Server, view: &mut View, a: usize, b: usize) {
    server.snapshots.swapped(a, b);
    server.aof.swapped(a, b);
    view.swap(a, b);
}

/// Sleeps as `rdb-key-save-delay` asks for `keys` keys (Redis's
/// debugDelay per key; negative -n: 1 µs for about one key in n).
pub fn key_save_delay(delay: i64, keys: usize) {
    let micros = match delay {
        0 => return,
        d if d > 0 => d as u64 * keys as u64,
        d => (0..keys)
            .filter(|_| rand::random::<u64>().is_multiple_of(d.unsigned_abs()))
            .count() as u64,
    };
    if micros > 0 {
        std::thread::sleep(std::time::Duration::from_micros(micros));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps_compose_and_flushes_hand_over_only_untaken_slots() {
        let c = Capture::default();
        c.start();
        c.swapped(0, 2);
        c.swapped(2, 5);
        let r = c.reshaped.lock();
        assert_eq!(
            (r.image_db(0), r.image_db(2), r.image_db(5), r.image_db(7)),
            (2, 5, 0, 7)
        );
        drop(r);
        assert!(c.take(3));
        assert!(!c.take(3));
        let maps: Arc<FlushedMaps> = Arc::new((0..SHARDS).map(|_| Vec::new()).collect());
        c.flushed(5, &maps);
        // A second flush of the same database hands over nothing: the
        // keys it finds came after the first.
        c.flushed(5, &maps);
        let detached = c.take_detached();
        assert_eq!(detached.len(), 1);
        assert_eq!(detached[0].db, 0);
        assert!(!detached[0].slots.has(3) && detached[0].slots.has(4));
        let r = c.reshaped.lock();
        assert!(r.handed(0, 4) && !r.handed(0, 3) && !r.handed(5, 4));
    }
}
