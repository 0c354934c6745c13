//! Keys as stored in the keyspace: up to 22 bytes inline, longer ones on
//! the heap.
//!
//! Most keys are short (`user:1234`, `key:000000012345`). Keeping them in
//! the map's bucket saves an allocation per key and, on every lookup, the
//! cache miss of following a pointer to compare the bytes: with a million
//! random keys that miss was a quarter of SET's time.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

const INLINE: usize = 22;

#[derive(Clone)]
pub enum Key {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl Key {
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Key::Inline { len, bytes } => &bytes[..*len as usize],
            Key::Heap(b) => b,
        }
    }
}

impl From<&[u8]> for Key {
    #[inline]
    fn from(b: &[u8]) -> Key {
        if b.len() <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..b.len()].copy_from_slice(b);
            Key::Inline {
                len: b.len() as u8,
                bytes,
            }
        } else {
            Key::Heap(b.into())
        }
    }
}

impl std::ops::Deref for Key {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Borrow<[u8]> for Key {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

// Hash and Eq must agree with `[u8]`'s for `Borrow` lookups.
impl Hash for Key {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state)
    }
}

impl PartialEq for Key {
    #[inline]
    fn eq(&self, other: &Key) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Key {}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_and_heap_round_trip() {
        assert_eq!(std::mem::size_of::<Key>(), 24);
        for len in [0, 1, 22, 23, 100] {
            let v = vec![b'k'; len];
            let k = Key::from(v.as_slice());
            assert_eq!(k.as_bytes(), v.as_slice());
            assert_eq!(matches!(k, Key::Inline { .. }), len <= INLINE);
        }
        let mut m = std::collections::HashMap::new();
        m.insert(Key::from(&b"abc"[..]), 1);
        assert_eq!(m.get(&b"abc"[..]), Some(&1));
    }
}
