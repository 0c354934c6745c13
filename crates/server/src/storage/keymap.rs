//! The map of one hash slot's keys in one database: key → [`Entry`].
//!
//! Why not `HashMap<Key, Entry>`: an open-addressing table spends a whole
//! bucket (key + entry, 72 bytes) on every empty slot too, and a table is
//! between 7/16 and 7/8 full, so a key cost ~120 bytes of table before its
//! value, twice Redis's dictEntry + robj + key. Here the table holds only
//! an 8-byte pointer per bucket (plus hashbrown's control byte) to a
//! **node**: one allocation with the entry and the key bytes together,
//! sized exactly (40 + 1 + 10 bytes for `hash:12345`, the allocator's
//! 64-byte class). A lookup follows that one pointer, which also brings
//! the entry: the same single dereference Redis's dictEntry costs.
//!
//! Node layout, alignment 8: `[Entry][varint key length][key bytes]`.

use std::alloc::{self, Layout};
use std::hash::BuildHasher;
use std::mem::{align_of, size_of};
use std::ptr::NonNull;

use hashbrown::HashTable;

use super::keyspace::KeyHasher;
use super::value::Entry;
use super::varint;

#[inline]
fn hash_key(key: &[u8]) -> u64 {
    KeyHasher.hash_one(key)
}

/// An owned node: the entry and its key in one allocation.
struct Node(NonNull<u8>);

// SAFETY: a Node owns its allocation exclusively (like a Box), and Entry
// is Send + Sync.
unsafe impl Send for Node {}
// SAFETY: shared references only read.
unsafe impl Sync for Node {}

const ENTRY: usize = size_of::<Entry>();

// The Send/Sync impls above hold only while Entry is Send + Sync.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Entry>()
};

impl Node {
    fn layout(key_len: usize) -> Layout {
        let size = ENTRY + varint::len(key_len) + key_len;
        // Keys are at most 512 MB (proto-max-bulk-len), so this cannot
        // overflow isize.
        match Layout::from_size_align(size, align_of::<Entry>()) {
            Ok(layout) => layout,
            Err(_) => panic!("key node of {size} bytes"),
        }
    }

    fn new(key: &[u8], entry: Entry) -> Node {
        let layout = Node::layout(key.len());
        // SAFETY: the layout has a non-zero size (ENTRY > 0).
        let raw = unsafe { alloc::alloc(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        // SAFETY: the allocation is ENTRY + varint + key bytes long and
        // aligned for Entry; each write stays inside it.
        unsafe {
            std::ptr::write(raw as *mut Entry, entry);
            let header = std::slice::from_raw_parts_mut(raw.add(ENTRY), layout.size() - ENTRY);
            let at = ENTRY + varint::write(header, key.len());
            std::ptr::copy_nonoverlapping(key.as_ptr(), raw.add(at), key.len());
        }
        Node(ptr)
    }

    /// (key length, offset of the key bytes).
    #[inline]
    fn key_span(&self) -> (usize, usize) {
        // SAFETY: the varint written by `new` lies right after the entry,
        // inside the allocation.
        let (len, bytes) = unsafe { varint::read(self.0.as_ptr().add(ENTRY)) };
        (len, ENTRY + bytes)
    }

    #[inline]
    fn key(&self) -> &[u8] {
        let (len, at) = self.key_span();
        // SAFETY: `len` key bytes were copied at `at` by `new`.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().add(at), len) }
    }

    #[inline]
    fn entry(&self) -> &Entry {
        // SAFETY: an initialised Entry lives at offset 0 until drop.
        unsafe { &*(self.0.as_ptr() as *const Entry) }
    }

    #[inline]
    fn entry_mut(&mut self) -> &mut Entry {
        // SAFETY: as `entry`; `&mut self` makes the access exclusive.
        unsafe { &mut *(self.0.as_ptr() as *mut Entry) }
    }

    /// Frees the node, handing back its entry.
    fn into_entry(self) -> Entry {
        let layout = Node::layout(self.key_span().0);
        let ptr = self.0.as_ptr();
        std::mem::forget(self);
        // SAFETY: the entry is read out once, then the allocation made by
        // `new` with this layout is freed without dropping the entry again.
        unsafe {
            let entry = std::ptr::read(ptr as *const Entry);
            alloc::dealloc(ptr, layout);
            entry
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let layout = Node::layout(self.key_span().0);
        // SAFETY: the entry is initialised and dropped once; the
        // allocation was made with this layout.
        unsafe {
            std::ptr::drop_in_place(self.0.as_ptr() as *mut Entry);
            alloc::dealloc(self.0.as_ptr(), layout);
        }
    }
}

/// What [`KeyMap::get_live`] found.
pub enum Lookup<'a> {
    Live(&'a mut Entry),
    /// The key had expired; it is now deleted.
    Expired,
    Missing,
}

/// One slot's keys. The table shrinks once it is an eighth full or less.
#[derive(Default)]
pub struct KeyMap {
    table: HashTable<Node>,
}

impl KeyMap {
    #[inline]
    pub fn len(&self) -> usize {
        self.table.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        self.table
            .find(hash_key(key), |n| n.key() == key)
            .map(Node::entry)
    }

    #[inline]
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        self.table
            .find_mut(hash_key(key), |n| n.key() == key)
            .map(Node::entry_mut)
    }

    /// Finds `key` with one probe, deleting it on the way if it expired
    /// by `now_ms` (lazy expiry: every read of a key goes through here).
    #[inline]
    pub fn get_live(&mut self, key: &[u8], now_ms: u64) -> Lookup<'_> {
        match self.table.find_entry(hash_key(key), |n| n.key() == key) {
            Err(_) => Lookup::Missing,
            Ok(found) if found.get().entry().is_expired(now_ms) => {
                let mut entry = found.remove().0.into_entry();
                super::value::free_expired(super::value::take_value(&mut entry));
                // No shrinking here (the hot lookup keeps one probe): the
                // active expiry cycle's pass over the slot shrinks it.
                Lookup::Expired
            }
            Ok(found) => Lookup::Live(found.into_mut().entry_mut()),
        }
    }

    /// Stores `entry` under `key`, returning the entry it replaces.
    pub fn insert(&mut self, key: &[u8], entry: Entry) -> Option<Entry> {
        let hash = hash_key(key);
        if let Some(n) = self.table.find_mut(hash, |n| n.key() == key) {
            return Some(std::mem::replace(n.entry_mut(), entry));
        }
        self.table
            .insert_unique(hash, Node::new(key, entry), |n| hash_key(n.key()));
        None
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let entry = match self.table.find_entry(hash_key(key), |n| n.key() == key) {
            Ok(occupied) => occupied.remove().0.into_entry(),
            Err(_) => return None,
        };
        self.shrink_if_sparse();
        Some(entry)
    }

    /// Gives memory back once the table is mostly empty (an eighth full
    /// or less): TTL churn and eviction must not leave every slot's table
    /// at its peak size. Shrinks to twice the keys, so a slot that
    /// refills soon grows once, not at every insert.
    #[inline]
    fn shrink_if_sparse(&mut self) {
        let cap = self.table.capacity();
        if cap > 16 && self.table.len() * 8 <= cap {
            self.table
                .shrink_to(self.table.len() * 2, |n| hash_key(n.key()));
        }
    }

    /// Keeps the keys for which `keep` returns true.
    pub fn retain(&mut self, mut keep: impl FnMut(&[u8], &mut Entry) -> bool) {
        self.table.retain(|n| {
            let (len, at) = n.key_span();
            // SAFETY: as `Node::key`; the key bytes and the entry do not
            // overlap, so both borrows may live together.
            let key = unsafe { std::slice::from_raw_parts(n.0.as_ptr().add(at), len) };
            keep(key, n.entry_mut())
        });
        self.shrink_if_sparse();
    }

    /// Bytes of the table itself (a pointer and a control byte per
    /// bucket; buckets are capacity * 8 / 7, a power of two).
    pub fn table_bytes(&self) -> usize {
        let cap = self.table.capacity();
        if cap == 0 {
            return 0;
        }
        let buckets = (cap * 8 / 7).next_power_of_two();
        buckets * (size_of::<Node>() + 1)
    }

    /// Bytes of the node holding `key`: its entry and the key itself, in
    /// the allocator's size class.
    pub fn node_bytes(key: &[u8]) -> usize {
        crate::memory::alloc::size_class(Node::layout(key.len()).size())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Entry)> {
        self.table.iter().map(|n| (n.key(), n.entry()))
    }
}

impl Clone for KeyMap {
    fn clone(&self) -> KeyMap {
        let mut table = HashTable::with_capacity(self.table.len());
        for n in self.table.iter() {
            let key = n.key();
            table.insert_unique(hash_key(key), Node::new(key, n.entry().clone()), |n| {
                hash_key(n.key())
            });
        }
        KeyMap { table }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::value::{Str, Value};

    fn entry(v: &str, expire_at: u64) -> Entry {
        Entry {
            value: Value::Str(Str::from_bytes(v.as_bytes())),
            expire_at,
            access: 0,
            unshared: false,
        }
    }

    fn val(e: &Entry) -> Vec<u8> {
        match &e.value {
            Value::Str(s) => s.to_vec(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn insert_get_replace_remove_retain() {
        let mut m = KeyMap::default();
        // Key lengths around the varint's one-byte limit and empty keys.
        let keys: Vec<Vec<u8>> = [0usize, 1, 10, 127, 128, 300, 20000]
            .iter()
            .map(|&n| (0..n).map(|i| (i % 251) as u8).collect())
            .collect();
        for (i, k) in keys.iter().enumerate() {
            assert!(m.insert(k, entry(&format!("v{i}"), 0)).is_none());
        }
        assert_eq!(m.len(), keys.len());
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(val(m.get(k).unwrap()), format!("v{i}").as_bytes());
        }
        let old = m.insert(&keys[3], entry("new", 5)).unwrap();
        assert_eq!(val(&old), b"v3");
        assert_eq!(m.get(&keys[3]).unwrap().expire_at, 5);
        m.get_mut(&keys[2]).unwrap().expire_at = 9;
        assert_eq!(m.get(&keys[2]).unwrap().expire_at, 9);
        assert_eq!(val(&m.remove(&keys[0]).unwrap()), b"v0");
        assert!(m.remove(&keys[0]).is_none());
        assert!(m.get(&keys[0]).is_none());
        m.retain(|k, e| k.len() != 128 && e.expire_at != 9);
        assert_eq!(m.len(), keys.len() - 3);
        let mut seen: Vec<Vec<u8>> = m.iter().map(|(k, _)| k.to_vec()).collect();
        seen.sort();
        let mut want: Vec<Vec<u8>> = keys
            .iter()
            .filter(|k| ![0, 10, 128].contains(&k.len()))
            .cloned()
            .collect();
        want.sort();
        assert_eq!(seen, want);
        let c = m.clone();
        assert_eq!(c.len(), m.len());
        assert_eq!(val(c.get(&keys[6]).unwrap()), b"v6");
    }

    #[test]
    fn grows_past_many_rehashes() {
        let mut m = KeyMap::default();
        for i in 0..10_000 {
            m.insert(format!("key:{i}").as_bytes(), entry(&i.to_string(), 0));
        }
        for i in (0..10_000).step_by(2) {
            assert!(m.remove(format!("key:{i}").as_bytes()).is_some());
        }
        for i in 0..10_000 {
            let got = m.get(format!("key:{i}").as_bytes());
            assert_eq!(got.is_some(), i % 2 == 1, "key:{i}");
        }
    }
}
