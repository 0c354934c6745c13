//! The map of one hash slot's keys in one database: key → entry.
//!
//! Why not `HashMap<Key, Entry>`: an open-addressing table spends a whole
//! bucket (key + entry, 72 bytes) on every empty slot too, and a table is
//! between 7/16 and 7/8 full, so a key cost ~120 bytes of table before its
//! value, twice Redis's dictEntry + robj + key. Here the table holds only
//! an 8-byte pointer per bucket (plus hashbrown's control byte) to a
//! **node**: one allocation with the entry and the key bytes together,
//! sized exactly. A lookup follows that one pointer, which also brings
//! the entry: the same single dereference Redis's dictEntry costs.
//!
//! Node layout, alignment 8:
//! `[Head: value 24, access 4, flags 1, key length 1][expiry 8, only with
//! the EXPIRES flag][varint key length, only for keys of 255 bytes or
//! more][key bytes]`. A key with no TTL pays nothing for expiry, and a
//! 16-byte key with a short value fits the allocator's 48-byte class (with
//! the expiry, or as one struct, 64).

use std::alloc::{self, Layout};
use std::hash::BuildHasher;
use std::mem::{align_of, size_of};
use std::ptr::NonNull;

use hashbrown::HashTable;

use super::keyspace::KeyHasher;
use super::value::{Entry, EntryMut, EntryRef, Value};
use super::varint;

#[inline]
fn hash_key(key: &[u8]) -> u64 {
    KeyHasher.hash_one(key)
}

/// The fixed start of a node.
#[repr(C)]
struct Head {
    value: Value,
    access: u32,
    flags: u8,
    /// The key's length, or LONG_KEY when a varint after the head gives it.
    key_len: u8,
}

const HEAD: usize = size_of::<Head>();
const _: () = assert!(HEAD == 32);

/// The node has an expiry slot (the key has, or had, a TTL).
const EXPIRES: u8 = 1;
/// The value is this key's own object even if it is a small integer (a
/// COPY), so OBJECT REFCOUNT is 1 rather than shared.
const UNSHARED: u8 = 2;
const LONG_KEY: u8 = u8::MAX;

/// An owned node: the entry and its key in one allocation.
struct Node(NonNull<u8>);

// SAFETY: a Node owns its allocation exclusively (like a Box), and Value
// is Send + Sync.
unsafe impl Send for Node {}
// SAFETY: shared references only read.
unsafe impl Sync for Node {}

// The Send/Sync impls above hold only while Value is Send + Sync.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Value>()
};

/// Bytes of the node for a key of `key_len` bytes.
fn node_size(key_len: usize, expires: bool) -> usize {
    let long = if key_len >= LONG_KEY as usize {
        varint::len(key_len)
    } else {
        0
    };
    HEAD + if expires { 8 } else { 0 } + long + key_len
}

fn layout(size: usize) -> Layout {
    // Keys are at most 512 MB (proto-max-bulk-len), so this cannot
    // overflow isize.
    match Layout::from_size_align(size, align_of::<Head>()) {
        Ok(layout) => layout,
        Err(_) => panic!("key node of {size} bytes"),
    }
}

impl Node {
    fn new(key: &[u8], entry: Entry) -> Node {
        let expires = entry.expire_at != 0;
        let size = node_size(key.len(), expires);
        let layout = layout(size);
        // SAFETY: the layout has a non-zero size (HEAD > 0).
        let raw = unsafe { alloc::alloc(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        let long = key.len() >= LONG_KEY as usize;
        let flags = if expires { EXPIRES } else { 0 } | if entry.unshared { UNSHARED } else { 0 };
        // SAFETY: the allocation is `size` bytes, aligned for Head; each
        // write below stays inside it (node_size counted every part).
        unsafe {
            std::ptr::write(
                raw as *mut Head,
                Head {
                    value: entry.value,
                    access: entry.access,
                    flags,
                    key_len: if long { LONG_KEY } else { key.len() as u8 },
                },
            );
            let mut at = HEAD;
            if expires {
                std::ptr::write(raw.add(at) as *mut u64, entry.expire_at);
                at += 8;
            }
            if long {
                let header = std::slice::from_raw_parts_mut(raw.add(at), size - at);
                at += varint::write(header, key.len());
            }
            std::ptr::copy_nonoverlapping(key.as_ptr(), raw.add(at), key.len());
        }
        Node(ptr)
    }

    #[inline]
    fn head(&self) -> &Head {
        // SAFETY: an initialised Head lives at offset 0 until drop.
        unsafe { &*(self.0.as_ptr() as *const Head) }
    }

    #[inline]
    fn expires(&self) -> bool {
        self.head().flags & EXPIRES != 0
    }

    #[inline]
    fn expire_at(&self) -> u64 {
        if self.expires() {
            // SAFETY: nodes with EXPIRES have the 8-byte slot right after
            // the head, 8-aligned.
            unsafe { std::ptr::read(self.0.as_ptr().add(HEAD) as *const u64) }
        } else {
            0
        }
    }

    /// (key length, offset of the key bytes).
    #[inline]
    fn key_span(&self) -> (usize, usize) {
        let at = HEAD + if self.expires() { 8 } else { 0 };
        let len = self.head().key_len;
        if len != LONG_KEY {
            return (len as usize, at);
        }
        // SAFETY: long keys have their varint, written by `new`, at `at`.
        let (len, bytes) = unsafe { varint::read(self.0.as_ptr().add(at)) };
        (len, at + bytes)
    }

    #[inline]
    fn key(&self) -> &[u8] {
        let (len, at) = self.key_span();
        // SAFETY: `len` key bytes were copied at `at` by `new`.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().add(at), len) }
    }

    fn size(&self) -> usize {
        let (len, at) = self.key_span();
        at + len
    }

    #[inline]
    fn entry(&self) -> EntryRef<'_> {
        let head = self.head();
        EntryRef {
            value: &head.value,
            access: head.access,
            expire_at: self.expire_at(),
            unshared: head.flags & UNSHARED != 0,
        }
    }

    #[inline]
    fn entry_mut(&mut self) -> EntryMut<'_> {
        let expire_at = self.expire_at();
        // SAFETY: an initialised Head lives at offset 0; `&mut self` makes
        // the access exclusive, and the two borrows are distinct fields.
        let head = unsafe { &mut *(self.0.as_ptr() as *mut Head) };
        EntryMut {
            value: &mut head.value,
            access: &mut head.access,
            expire_at,
            unshared: head.flags & UNSHARED != 0,
        }
    }

    /// Sets the expiry (0: none). A node without an expiry slot is moved
    /// to a larger one; a node that has one keeps it.
    fn set_expire(&mut self, at: u64) {
        if self.expires() {
            // SAFETY: as `expire_at`, and `&mut self` is exclusive.
            unsafe { std::ptr::write(self.0.as_ptr().add(HEAD) as *mut u64, at) };
            return;
        }
        if at == 0 {
            return;
        }
        let old_size = self.size();
        let new_size = old_size + 8;
        let new_layout = layout(new_size);
        // SAFETY: non-zero size.
        let raw = unsafe { alloc::alloc(new_layout) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(new_layout)
        };
        let old = self.0.as_ptr();
        // SAFETY: the head (with its value) is moved bit for bit, then
        // the expiry, then the rest of the old node (key length and key)
        // after it; the old allocation is freed without dropping what
        // moved out of it.
        unsafe {
            std::ptr::copy_nonoverlapping(old, raw, HEAD);
            (*(raw as *mut Head)).flags |= EXPIRES;
            std::ptr::write(raw.add(HEAD) as *mut u64, at);
            std::ptr::copy_nonoverlapping(old.add(HEAD), raw.add(HEAD + 8), old_size - HEAD);
            alloc::dealloc(old, layout(old_size));
        }
        self.0 = ptr;
    }

    /// Puts `entry` in place of the node's, returning the old one.
    fn replace(&mut self, entry: Entry) -> Entry {
        let old_expire = self.expire_at();
        // SAFETY: as `entry_mut`.
        let head = unsafe { &mut *(self.0.as_ptr() as *mut Head) };
        let old = Entry {
            value: std::mem::replace(&mut head.value, entry.value),
            expire_at: old_expire,
            access: std::mem::replace(&mut head.access, entry.access),
            unshared: head.flags & UNSHARED != 0,
        };
        if entry.unshared {
            head.flags |= UNSHARED;
        } else {
            head.flags &= !UNSHARED;
        }
        self.set_expire(entry.expire_at);
        old
    }

    /// Frees the node, handing back its entry.
    fn into_entry(self) -> Entry {
        let expire_at = self.expire_at();
        let size = self.size();
        let ptr = self.0.as_ptr();
        std::mem::forget(self);
        // SAFETY: the head is read out once, then the allocation made with
        // this layout is freed without dropping the value again.
        unsafe {
            let head = std::ptr::read(ptr as *const Head);
            alloc::dealloc(ptr, layout(size));
            Entry {
                value: head.value,
                expire_at,
                access: head.access,
                unshared: head.flags & UNSHARED != 0,
            }
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let size = self.size();
        // SAFETY: the head is initialised and dropped once; the
        // allocation was made with this layout.
        unsafe {
            std::ptr::drop_in_place(self.0.as_ptr() as *mut Head);
            alloc::dealloc(self.0.as_ptr(), layout(size));
        }
    }
}

/// What [`KeyMap::get_live`] found.
pub enum Lookup<'a> {
    Live(EntryMut<'a>),
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
    pub fn get(&self, key: &[u8]) -> Option<EntryRef<'_>> {
        self.table
            .find(hash_key(key), |n| n.key() == key)
            .map(Node::entry)
    }

    #[inline]
    pub fn get_mut(&mut self, key: &[u8]) -> Option<EntryMut<'_>> {
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
            Ok(found) if is_expired(found.get().expire_at(), now_ms) => {
                let mut entry = found.remove().0.into_entry();
                super::value::free_expired(super::value::take_value(&mut entry.value));
                // No shrinking here (the hot lookup keeps one probe): the
                // active expiry cycle's pass over the slot shrinks it.
                Lookup::Expired
            }
            Ok(found) => Lookup::Live(found.into_mut().entry_mut()),
        }
    }

    /// The entry for `key` unless it is missing or expired; an expired
    /// entry stays (a replica's lookups, see `keyspace::Expiry`).
    pub fn get_unexpired(&mut self, key: &[u8], now_ms: u64) -> Option<EntryMut<'_>> {
        let n = self.table.find_mut(hash_key(key), |n| n.key() == key)?;
        if is_expired(n.expire_at(), now_ms) {
            return None;
        }
        Some(n.entry_mut())
    }

    /// Stores `entry` under `key`, returning the entry it replaces.
    pub fn insert(&mut self, key: &[u8], entry: Entry) -> Option<Entry> {
        let hash = hash_key(key);
        if let Some(n) = self.table.find_mut(hash, |n| n.key() == key) {
            return Some(n.replace(entry));
        }
        self.table
            .insert_unique(hash, Node::new(key, entry), |n| hash_key(n.key()));
        None
    }

    /// Sets the expiry of `key` (0: none); its old expiry, or None if the
    /// key is not here.
    pub fn set_expire(&mut self, key: &[u8], at: u64) -> Option<u64> {
        let n = self.table.find_mut(hash_key(key), |n| n.key() == key)?;
        let old = n.expire_at();
        n.set_expire(at);
        Some(old)
    }

    /// Marks `key`'s value as its own object (OBJECT REFCOUNT 1).
    pub fn set_unshared(&mut self, key: &[u8]) {
        if let Some(n) = self.table.find_mut(hash_key(key), |n| n.key() == key) {
            // SAFETY: as `Node::entry_mut`.
            unsafe { (*(n.0.as_ptr() as *mut Head)).flags |= UNSHARED };
        }
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
    pub fn retain(&mut self, mut keep: impl FnMut(&[u8], EntryMut<'_>) -> bool) {
        self.table.retain(|n| {
            let (len, at) = n.key_span();
            // SAFETY: as `Node::key`; the key bytes and the head do not
            // overlap, so both borrows may live together.
            let key = unsafe { std::slice::from_raw_parts(n.0.as_ptr().add(at), len) };
            keep(key, n.entry_mut())
        });
        self.shrink_if_sparse();
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], EntryRef<'_>)> {
        self.table.iter().map(|n| (n.key(), n.entry()))
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

    /// Bytes of the node holding `key` (without a TTL): its entry and the
    /// key itself, in the allocator's size class.
    pub fn node_bytes(key: &[u8]) -> usize {
        crate::memory::alloc::size_class(node_size(key.len(), false))
    }
}

#[inline]
fn is_expired(expire_at: u64, now_ms: u64) -> bool {
    expire_at != 0 && expire_at <= now_ms
}

impl Clone for KeyMap {
    fn clone(&self) -> KeyMap {
        let mut table = HashTable::with_capacity(self.table.len());
        for n in self.table.iter() {
            let key = n.key();
            table.insert_unique(hash_key(key), Node::new(key, n.entry().to_entry()), |n| {
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

    fn val(v: &Value) -> Vec<u8> {
        match v {
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
            assert_eq!(val(m.get(k).unwrap().value), format!("v{i}").as_bytes());
        }
        let old = m.insert(&keys[3], entry("new", 5)).unwrap();
        assert_eq!(val(&old.value), b"v3");
        assert_eq!(m.get(&keys[3]).unwrap().expire_at, 5);
        // A key gaining a TTL moves to a node with an expiry slot.
        assert_eq!(m.set_expire(&keys[2], 9), Some(0));
        assert_eq!(m.get(&keys[2]).unwrap().expire_at, 9);
        assert_eq!(val(m.get(&keys[2]).unwrap().value), b"v2");
        for k in &keys {
            assert!(m.get(k).is_some(), "{}", k.len());
        }
        m.set_unshared(&keys[1]);
        assert!(m.get(&keys[1]).unwrap().unshared);
        assert_eq!(val(&m.remove(&keys[0]).unwrap().value), b"v0");
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
        assert_eq!(val(c.get(&keys[6]).unwrap().value), b"v6");
        // Long keys with and without an expiry, replaced in place.
        let long = vec![7u8; 300];
        m.insert(&long, entry("a", 0));
        m.set_expire(&long, 42);
        assert_eq!(m.get(&long).unwrap().expire_at, 42);
        let old = m.insert(&long, entry("b", 0)).unwrap();
        assert_eq!((val(&old.value), old.expire_at), (b"a".to_vec(), 42));
        assert_eq!(m.get(&long).unwrap().expire_at, 0);
        assert_eq!(m.remove(&long).map(|e| val(&e.value)), Some(b"b".to_vec()));
    }

    #[test]
    fn sixteen_byte_keys_without_ttl_fit_48_bytes() {
        assert_eq!(KeyMap::node_bytes(b"key:000000012345"), 48);
        assert_eq!(crate::memory::alloc::size_class(node_size(16, true)), 64);
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
