//! Hash-field expiry (Redis 7.4's HEXPIRE family): the expiry times of a
//! hash's fields, beside the hash's fields and values. Pure data: no RESP,
//! no I/O.
//!
//! A hash that has ever had a field TTL keeps one of these beside its
//! fields (a listpack becomes a `listpackex`: the same listpack, boxed
//! with its TTLs). Looked up by field for the commands, and by time for
//! active expiry, which takes the earliest first. A few TTLs are one sorted vector; more, a map and a tree
//! (docs/compatibility.md states what each costs, measured); a hash
//! without field TTLs pays nothing.

use std::collections::{BTreeSet, HashMap};

/// The largest expiry time Redis accepts for a field, in unix ms
/// (`HFE_MAX_ABS_TIME_MSEC`: `EB_EXPIRE_TIME_MAX >> 2`).
pub const MAX_EXPIRE_MS: u64 = 0x0000_FFFF_FFFF_FFFF >> 2;

/// Up to this many TTLs live in one sorted vector (a few bytes each);
/// beyond, in a map and a tree.
const FEW_MAX: usize = 16;

#[derive(Clone, Default, Debug)]
pub struct FieldTtls {
    index: Index,
}

#[derive(Clone, Debug)]
enum Index {
    /// (time, field), sorted: what most hashes with TTLs have.
    Few(Vec<(u64, Box<[u8]>)>),
    /// Two indexes of the same entries: by field for the commands, by
    /// time for active expiry.
    Many(Box<Many>),
}

#[derive(Clone, Debug)]
struct Many {
    by_field: HashMap<Box<[u8]>, u64, ahash::RandomState>,
    by_time: BTreeSet<(u64, Box<[u8]>)>,
}

impl Default for Index {
    fn default() -> Index {
        Index::Few(Vec::new())
    }
}

impl FieldTtls {
    /// Fields with a TTL.
    pub fn len(&self) -> usize {
        match &self.index {
            Index::Few(v) => v.len(),
            Index::Many(m) => m.by_field.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The expiry time of `field`, if it has one.
    #[inline]
    pub fn get(&self, field: &[u8]) -> Option<u64> {
        match &self.index {
            Index::Few(v) => v.iter().find(|(_, f)| &f[..] == field).map(|(at, _)| *at),
            Index::Many(m) => m.by_field.get(field).copied(),
        }
    }

    /// Sets `field`'s expiry time to `at` (unix ms).
    pub fn set(&mut self, field: &[u8], at: u64) {
        self.remove(field);
        match &mut self.index {
            Index::Few(v) if v.len() < FEW_MAX => {
                // Exactly sized: most hashes have one or two TTLs.
                v.reserve_exact(1);
                let pos = v.partition_point(|(t, f)| (*t, &f[..]) < (at, field));
                v.insert(pos, (at, field.into()));
            }
            Index::Few(v) => {
                let mut by_field: HashMap<Box<[u8]>, u64, ahash::RandomState> = HashMap::default();
                let mut by_time = BTreeSet::new();
                for (t, f) in v.drain(..) {
                    by_field.insert(f.clone(), t);
                    by_time.insert((t, f));
                }
                by_field.insert(field.into(), at);
                by_time.insert((at, field.into()));
                self.index = Index::Many(Box::new(Many { by_field, by_time }));
            }
            Index::Many(m) => {
                m.by_field.insert(field.into(), at);
                m.by_time.insert((at, field.into()));
            }
        }
    }

    /// Removes `field`'s TTL; returns it.
    pub fn remove(&mut self, field: &[u8]) -> Option<u64> {
        match &mut self.index {
            Index::Few(v) => {
                let i = v.iter().position(|(_, f)| &f[..] == field)?;
                Some(v.remove(i).0)
            }
            Index::Many(m) => {
                let at = m.by_field.remove(field)?;
                m.by_time.remove(&(at, Box::from(field)));
                Some(at)
            }
        }
    }

    /// The earliest expiry time.
    pub fn min(&self) -> Option<u64> {
        match &self.index {
            Index::Few(v) => v.first().map(|(at, _)| *at),
            Index::Many(m) => m.by_time.first().map(|(at, _)| *at),
        }
    }

    /// Up to `max` fields whose time is `<= now`, earliest first (active
    /// expiry's rule, as Redis's ebuckets).
    pub fn due(&self, now: u64, max: usize) -> Vec<Vec<u8>> {
        self.iter()
            .take_while(|(_, at)| *at <= now)
            .take(max)
            .map(|(f, _)| f.to_vec())
            .collect()
    }

    /// (field, time) of every field with a TTL, in time order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], u64)> + '_> {
        match &self.index {
            Index::Few(v) => Box::new(v.iter().map(|(at, f)| (&f[..], *at))),
            Index::Many(m) => Box::new(m.by_time.iter().map(|(at, f)| (&f[..], *at))),
        }
    }

    /// Heap bytes, in the allocator's size classes (MEMORY USAGE).
    pub fn heap_size(&self) -> usize {
        use crate::memory::alloc::size_class;
        let own = size_class(std::mem::size_of::<FieldTtls>());
        match &self.index {
            Index::Few(v) => {
                own + size_class(v.capacity() * 24)
                    + v.iter().map(|(_, f)| size_class(f.len())).sum::<usize>()
            }
            Index::Many(m) => {
                let fields: usize = m.by_field.keys().map(|f| size_class(f.len())).sum();
                // The map: key pointer, length and time, and a control
                // byte a slot; the tree: about 40 bytes an entry.
                own + size_class(std::mem::size_of::<Many>())
                    + m.by_field.capacity() * 25
                    + m.by_time.len() * 40
                    + fields * 2
            }
        }
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
    fn many_ttls_move_to_the_map_and_tree() {
        let mut t = FieldTtls::default();
        for i in 0..100u64 {
            t.set(format!("f{i}").as_bytes(), 1000 - i);
        }
        assert_eq!(t.len(), 100);
        assert_eq!(t.min(), Some(901));
        assert_eq!(t.get(b"f3"), Some(997));
        assert_eq!(t.due(902, 10), vec![b"f99".to_vec(), b"f98".to_vec()]);
        t.set(b"f99", 5000);
        assert_eq!(t.remove(b"f98"), Some(902));
        assert_eq!(t.min(), Some(903));
        assert_eq!(t.len(), 99);
    }

    #[test]
    fn both_indexes_agree() {
        let mut t = FieldTtls::default();
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
