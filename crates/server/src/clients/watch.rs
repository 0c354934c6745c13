//! WATCH: which clients watch which keys, and the invalidation every write
//! passes through.
//!
//! A write marks the watchers of the keys it modified *while it still holds
//! those keys' shards*; EXEC locks the shards of its watched keys before it
//! reads its mark. So a write either lands before EXEC checks (and fails
//! it) or after EXEC has run: there is no window in between.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::Mutex;

/// One client's watch list.
#[derive(Default)]
pub struct WatchState {
    /// Set when a watched key was modified (Redis's CLIENT_DIRTY_CAS).
    pub dirty: AtomicBool,
    /// (db, key, whether it existed when watched).
    pub keys: Mutex<Vec<(usize, Vec<u8>, bool)>>,
}

/// Watchers per (database, key).
type Registry = HashMap<(usize, Vec<u8>), Vec<Arc<WatchState>>>;

#[derive(Default)]
pub struct Watches {
    /// Watched keys; lets writes skip the registry when it is zero.
    count: AtomicUsize,
    by_key: Mutex<Registry>,
}

impl Watches {
    #[inline]
    pub fn any(&self) -> bool {
        self.count.load(Relaxed) > 0
    }

    pub fn watch(&self, state: &Arc<WatchState>, db: usize, key: &[u8], exists: bool) {
        let mut keys = state.keys.lock();
        if keys.iter().any(|(d, k, _)| *d == db && k == key) {
            return;
        }
        keys.push((db, key.to_vec(), exists));
        self.by_key
            .lock()
            .entry((db, key.to_vec()))
            .or_default()
            .push(state.clone());
        self.count.fetch_add(1, Relaxed);
    }

    /// Forgets every key `state` watches and clears its mark.
    pub fn unwatch_all(&self, state: &Arc<WatchState>) {
        let keys = std::mem::take(&mut *state.keys.lock());
        if !keys.is_empty() {
            let mut map = self.by_key.lock();
            for (db, key, _) in keys {
                let k = (db, key);
                if let Some(list) = map.get_mut(&k) {
                    list.retain(|s| !Arc::ptr_eq(s, state));
                    if list.is_empty() {
                        map.remove(&k);
                    }
                }
                self.count.fetch_sub(1, Relaxed);
            }
        }
        state.dirty.store(false, Relaxed);
    }

    /// A write modified `key` in `db`.
    pub fn touch(&self, db: usize, key: &[u8]) {
        if !self.any() {
            return;
        }
        if let Some(list) = self.by_key.lock().get(&(db, key.to_vec())) {
            for s in list {
                s.dirty.store(true, Relaxed);
            }
        }
    }

    /// FLUSHDB/FLUSHALL/SWAPDB: every watched key of `db` for which
    /// `affected` says the command changed it.
    pub fn touch_db(&self, db: usize, mut affected: impl FnMut(&[u8]) -> bool) {
        if !self.any() {
            return;
        }
        for ((d, key), list) in self.by_key.lock().iter() {
            if *d == db && affected(key) {
                for s in list {
                    s.dirty.store(true, Relaxed);
                }
            }
        }
    }
}
