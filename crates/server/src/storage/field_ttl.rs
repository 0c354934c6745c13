//! Hash-field expiry (Redis 7.4's HEXPIRE family): the expiry times of a
//! hash's fields, beside the hash's fields and values. Pure data: no RESP,
//! no I/O.
//!
//! A hash that has ever had a field TTL keeps one of these in its
//! hashtable (a listpack converts on the first TTL; `small` remembers that
//! Redis would still keep it as a `listpackex`, for OBJECT ENCODING and
//! the RDB type). Two indexes of the same entries: by field, for the
//! commands, and by time, for active expiry, which takes the earliest
//! first. Per field with a TTL that is the field's bytes twice plus about
//! 40 bytes of map and tree (docs/compatibility.md states the measured
//! figure); a hash without field TTLs pays nothing.

use std::collections::{BTreeSet, HashMap};

/// The largest expiry time Redis accepts for a field, in unix ms
/// (`HFE_MAX_ABS_TIME_MSEC`: `EB_EXPIRE_TIME_MAX >> 2`).
pub const MAX_EXPIRE_MS: u64 = 0x0000_FFFF_FFFF_FFFF >> 2;

#[derive(Clone, Default, Debug)]
pub struct FieldTtls {
    by_field: HashMap<Box<[u8]>, u64, ahash::RandomState>,
    by_time: BTreeSet<(u64, Box<[u8]>)>,
    /// Redis would hold this hash as a listpack (`listpackex`): it never
    /// crossed `hash-max-listpack-entries` / `-value`.
    pub small: bool,
}

impl FieldTtls {
    pub fn new(small: bool) -> FieldTtls {
        FieldTtls {
            small,
            ..FieldTtls::default()
        }
    }

    /// Fields with a TTL.
    pub fn len(&self) -> usize {
        self.by_field.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_field.is_empty()
    }

    /// The expiry time of `field`, if it has one.
    #[inline]
    pub fn get(&self, field: &[u8]) -> Option<u64> {
        if self.by_field.is_empty() {
            return None;
        }
        self.by_field.get(field).copied()
    }

    /// Sets `field`'s expiry time to `at` (unix ms).
    pub fn set(&mut self, field: &[u8], at: u64) {
        if let Some(old) = self.by_field.insert(field.into(), at) {
            self.by_time.remove(&(old, Box::from(field)));
        }
        self.by_time.insert((at, field.into()));
    }

    /// Removes `field`'s TTL; returns it.
    pub fn remove(&mut self, field: &[u8]) -> Option<u64> {
        if self.by_field.is_empty() {
            return None;
        }
        let at = self.by_field.remove(field)?;
        self.by_time.remove(&(at, Box::from(field)));
        Some(at)
    }

    /// The earliest expiry time.
    pub fn min(&self) -> Option<u64> {
        self.by_time.first().map(|(at, _)| *at)
    }

    /// Up to `max` fields whose time is `<= now`, earliest first (active
    /// expiry's rule, as Redis's ebuckets).
    pub fn due(&self, now: u64, max: usize) -> Vec<Vec<u8>> {
        self.by_time
            .iter()
            .take_while(|(at, _)| *at <= now)
            .take(max)
            .map(|(_, f)| f.to_vec())
            .collect()
    }

    /// (field, time) of every field with a TTL, in time order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u64)> {
        self.by_time.iter().map(|(at, f)| (&f[..], *at))
    }

    /// Heap bytes, in the allocator's size classes (MEMORY USAGE).
    pub fn heap_size(&self) -> usize {
        use crate::memory::alloc::size_class;
        let fields: usize = self.by_field.keys().map(|f| size_class(f.len())).sum();
        // The map: 8 bytes of key pointer, 8 of length, 8 of time and a
        // control byte a slot; the tree: about 40 bytes a (time, field)
        // in its nodes.
        size_class(std::mem::size_of::<FieldTtls>())
            + self.by_field.capacity() * 25
            + self.by_time.len() * 40
            + fields * 2
    }
}

/// Whether a field with expiry time `at` reads as gone at `now` (Redis's
/// `hfieldIsExpired`: strictly before now).
#[inline]
pub fn is_expired(at: u64, now: u64) -> bool {
    at < now
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_indexes_agree() {
        let mut t = FieldTtls::new(true);
        t.set(b"a", 30);
        t.set(b"b", 10);
        t.set(b"c", 20);
        t.set(b"a", 5);
        assert_eq!(t.get(b"a"), Some(5));
        assert_eq!(t.min(), Some(5));
        assert_eq!(
            t.due(20, 10),
            vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]
        );
        assert_eq!(t.due(20, 2), vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(t.remove(b"b"), Some(10));
        assert_eq!(t.remove(b"b"), None);
        assert_eq!(t.due(100, 10), vec![b"a".to_vec(), b"c".to_vec()]);
        assert_eq!(t.len(), 2);
        assert_eq!(t.iter().map(|(_, at)| at).collect::<Vec<_>>(), vec![5, 20]);
    }
}
