//! Values stored under keys, and the entry that wraps them with expiry and
//! access metadata. Pure data: no RESP, no I/O.

pub use super::hash::Hash;
pub use super::list::List;
pub use super::set::Set;
pub use super::stream::Stream;
pub use super::zset::ZSet;

/// A string value. Integers that round-trip exactly are kept as `Int`, as
/// Redis's `int` encoding does, so INCR needs no parse and no allocation.
#[derive(Debug, PartialEq, Eq)]
pub enum Str {
    Int(i64),
    Raw(Vec<u8>),
}

/// A copy keeps the encoding (Redis's dupStringObject): a `raw` string
/// (one with spare capacity, see [`Str::encoding`]) stays raw, which a
/// derived clone, allocating exactly the length, would turn into `embstr`.
impl Clone for Str {
    fn clone(&self) -> Str {
        match self {
            Str::Int(n) => Str::Int(*n),
            Str::Raw(v) => {
                let spare = usize::from(v.capacity() > v.len());
                let mut c = Vec::with_capacity(v.len() + spare);
                c.extend_from_slice(v);
                Str::Raw(c)
            }
        }
    }
}

/// Longest string Redis stores with the `embstr` encoding.
pub const EMBSTR_MAX: usize = 44;

impl Str {
    /// Builds a string value, choosing the integer form when the bytes are
    /// the canonical decimal form of an i64 (as Redis's tryObjectEncoding).
    pub fn from_bytes(b: &[u8]) -> Str {
        if b.len() <= 20 {
            if let Some(n) = resp::parse_i64(b) {
                return Str::Int(n);
            }
        }
        Str::Raw(b.to_vec())
    }

    pub fn from_vec(v: Vec<u8>) -> Str {
        if v.len() <= 20 {
            if let Some(n) = resp::parse_i64(&v) {
                return Str::Int(n);
            }
        }
        Str::Raw(v)
    }

    pub fn len(&self) -> usize {
        match self {
            Str::Int(n) => itoa::Buffer::new().format(*n).len(),
            Str::Raw(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f` with the bytes of the value, formatting integers on the
    /// stack instead of allocating.
    #[inline]
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            Str::Int(n) => f(itoa::Buffer::new().format(*n).as_bytes()),
            Str::Raw(v) => f(v),
        }
    }

    pub fn to_vec(&self) -> Vec<u8> {
        self.with_bytes(|b| b.to_vec())
    }

    /// Turns the value into its raw byte form, for in-place edits
    /// (APPEND, SETRANGE). An edited string reports `raw`, as in Redis:
    /// spare capacity is what tells it from a never-edited `embstr`.
    pub fn make_raw(&mut self) -> &mut Vec<u8> {
        if let Str::Int(n) = *self {
            *self = Str::Raw(itoa::Buffer::new().format(n).as_bytes().to_vec());
        }
        if let Str::Raw(v) = self {
            if v.capacity() == v.len() {
                v.reserve(1);
            }
        }
        match self {
            Str::Raw(v) => v,
            // Just converted above.
            Str::Int(_) => unreachable!(),
        }
    }

    pub fn encoding(&self) -> &'static str {
        match self {
            Str::Int(_) => "int",
            Str::Raw(v) if v.len() <= EMBSTR_MAX && v.capacity() == v.len() => "embstr",
            Str::Raw(_) => "raw",
        }
    }

    pub fn heap_size(&self) -> usize {
        match self {
            Str::Int(_) => 0,
            Str::Raw(v) => v.capacity(),
        }
    }
}

/// A key's value, 24 bytes. Collections are boxed so a string key pays
/// nothing for the other types, except the hash, whose 16-byte header
/// fits: a small hash (the common case: objects stored as hashes) then
/// costs one allocation, its listpack.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(Str),
    List(Box<List>),
    Hash(Hash),
    Set(Box<Set>),
    ZSet(Box<ZSet>),
    Stream(Box<Stream>),
}

impl Value {
    /// The name `TYPE` replies with.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Hash(_) => "hash",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
            Value::Stream(_) => "stream",
        }
    }

    /// Roughly how many allocations freeing the value costs (Redis's
    /// lazyfreeGetFreeEffort): one for strings and compact encodings,
    /// the element count otherwise.
    pub fn free_effort(&self) -> usize {
        let compact = matches!(
            self.encoding(),
            "listpack" | "intset" | "embstr" | "raw" | "int"
        );
        if compact {
            return 1;
        }
        match self {
            Value::Str(_) => 1,
            Value::List(l) => l.len(),
            Value::Hash(h) => h.len(),
            Value::Set(s) => s.len(),
            Value::ZSet(z) => z.len(),
            Value::Stream(s) => s.len() as usize,
        }
    }

    /// The name `OBJECT ENCODING` replies with (Redis 7.0's names).
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => s.encoding(),
            Value::List(l) => l.encoding(),
            Value::Hash(h) => h.encoding(),
            Value::Set(s) => s.encoding(),
            Value::ZSet(z) => z.encoding(),
            Value::Stream(_) => "stream",
        }
    }
}

/// Frees the value of a key that expired: on the lazy free thread when
/// `lazyfree-lazy-expire` is on and the value is large, else here.
pub fn free_expired(value: Value) {
    use crate::memory::lazyfree;
    if lazyfree::LAZY_EXPIRE.load(std::sync::atomic::Ordering::Relaxed) {
        let effort = value.free_effort();
        lazyfree::free(value, effort);
    }
}

/// Takes the value out of an entry about to be dropped (leaving an empty
/// string), so it can be freed elsewhere.
pub fn take_value(e: &mut Entry) -> Value {
    std::mem::replace(&mut e.value, Value::Str(Str::Int(0)))
}

/// Thresholds at which small collections leave their compact encoding
/// (Redis's `*-max-listpack-*` and `set-max-intset-entries`), read from
/// the configuration for every command that may grow a collection.
#[derive(Debug, Clone, Copy)]
pub struct EncodingLimits {
    pub hash_max_listpack_entries: usize,
    pub hash_max_listpack_value: usize,
    pub set_max_intset_entries: usize,
    pub zset_max_listpack_entries: usize,
    pub zset_max_listpack_value: usize,
    /// `list-max-listpack-size`: positive = entries per node, negative =
    /// bytes per node (-1 = 4 KB ... -5 = 64 KB).
    pub list_max_listpack_size: i64,
}

impl Default for EncodingLimits {
    fn default() -> Self {
        EncodingLimits {
            hash_max_listpack_entries: 512,
            hash_max_listpack_value: 64,
            set_max_intset_entries: 512,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            list_max_listpack_size: -2,
        }
    }
}

/// A key's value plus metadata. `expire_at` is a Unix time in milliseconds,
/// 0 when the key has no TTL. `access` is the LRU clock (seconds) of the
/// last access, for OBJECT IDLETIME and, later, eviction.
#[derive(Debug, Clone)]
pub struct Entry {
    pub value: Value,
    pub expire_at: u64,
    pub access: u32,
    /// The value is this key's own object even if it is a small integer
    /// (a COPY), so OBJECT REFCOUNT is 1 rather than shared.
    pub unshared: bool,
}

impl Entry {
    #[inline]
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at != 0 && self.expire_at <= now_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_and_entry_sizes() {
        // The keyspace's node is an Entry plus the key: growing either
        // costs every key (see storage::keymap).
        assert_eq!(std::mem::size_of::<Value>(), 24);
        assert_eq!(std::mem::size_of::<Entry>(), 40);
    }

    #[test]
    fn clone_keeps_string_encoding() {
        let short = Str::from_bytes(b"abc");
        assert_eq!(short.clone().encoding(), "embstr");
        let mut edited = Str::from_bytes(b"abc");
        edited.make_raw().push(b'd');
        assert_eq!(edited.encoding(), "raw");
        assert_eq!(edited.clone().encoding(), "raw");
        assert_eq!(edited.clone(), edited);
        assert_eq!(Str::Int(5).clone().encoding(), "int");
    }
}
