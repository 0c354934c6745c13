//! Values stored under keys, and the entry that wraps them with expiry and
//! access metadata. Pure data: no RESP, no I/O.

pub use super::hash::Hash;
pub use super::list::List;
pub use super::set::Set;
pub use super::stream::Stream;
pub use super::zset::ZSet;
pub use crate::tier::stub::Stub;

use std::sync::Arc;

/// A string value, 24 bytes: an integer (Redis's `int` encoding: INCR
/// needs no parse and no allocation), up to [`INLINE_MAX`] bytes held in
/// place (no allocation: a key with a short value costs its node alone),
/// a heap buffer, or, from [`SHARED_MIN`] bytes, a reference-counted
/// heap buffer that replies send by reference (see
/// `net::replies::Replies::bulk_shared`) instead of copying it.
#[derive(Debug)]
pub struct Str(Repr);

/// Longest string held inside the value itself.
pub const INLINE_MAX: usize = 16;

/// Shortest string built reference-counted: a reply then takes a
/// reference instead of a copy. Below it, a copy into the reply buffer
/// costs less than the reference's bookkeeping and the vectored write.
pub const SHARED_MIN: usize = 16 * 1024;

// The inline form's length is the variant: a `Vec`'s capacity field has a
// niche (it never exceeds isize::MAX) that can number 17 variants (and
// `Value`'s own) while their 16 bytes sit beside it, so `Str` and `Value`
// stay 24 bytes. A length byte beside 16 data bytes would not fit
// (size test below).
macro_rules! inline_repr {
    ($($v:ident = $n:literal),*) => {
        #[derive(Debug)]
        enum Repr {
            Int(i64),
            Raw(Vec<u8>),
            /// Never changed in place: an edit takes the buffer back
            /// (copying it if a reply still holds it), see `make_raw`.
            Shared(Arc<Vec<u8>>),
            $($v([u8; INLINE_MAX]),)*
        }

        impl Repr {
            /// `b` (at most INLINE_MAX bytes) held in place.
            #[inline]
            fn inline(b: &[u8]) -> Repr {
                let mut buf = [0u8; INLINE_MAX];
                buf[..b.len()].copy_from_slice(b);
                match b.len() {
                    $($n => Repr::$v(buf),)*
                    _ => unreachable!("inline string of {} bytes", b.len()),
                }
            }

            #[inline]
            fn inline_bytes(&self) -> Option<&[u8]> {
                match self {
                    $(Repr::$v(b) => Some(&b[..$n]),)*
                    _ => None,
                }
            }
        }
    };
}

inline_repr!(
    I0 = 0,
    I1 = 1,
    I2 = 2,
    I3 = 3,
    I4 = 4,
    I5 = 5,
    I6 = 6,
    I7 = 7,
    I8 = 8,
    I9 = 9,
    I10 = 10,
    I11 = 11,
    I12 = 12,
    I13 = 13,
    I14 = 14,
    I15 = 15,
    I16 = 16
);

/// Equal when both are the same integer or both hold the same bytes (an
/// inline and a heap string of equal bytes are equal).
impl PartialEq for Str {
    fn eq(&self, other: &Str) -> bool {
        match (self.as_int(), other.as_int()) {
            (Some(a), Some(b)) => a == b,
            (None, None) => self.with_bytes(|a| other.with_bytes(|b| a == b)),
            _ => false,
        }
    }
}

impl Eq for Str {}

/// A copy keeps the encoding (Redis's dupStringObject): a `raw` string
/// (one with spare capacity, see [`Str::encoding`]) stays raw, which a
/// derived clone, allocating exactly the length, would turn into `embstr`.
impl Clone for Str {
    fn clone(&self) -> Str {
        match &self.0 {
            Repr::Raw(v) => {
                let spare = usize::from(v.capacity() > v.len());
                let mut c = Vec::with_capacity(v.len() + spare);
                c.extend_from_slice(v);
                Str(Repr::Raw(c))
            }
            // Nothing edits a shared buffer in place: the copy can share it.
            Repr::Shared(v) => Str(Repr::Shared(Arc::clone(v))),
            Repr::Int(n) => Str(Repr::Int(*n)),
            other => match other.inline_bytes() {
                Some(b) => Str(Repr::inline(b)),
                None => unreachable!("every form is handled"),
            },
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
                return Str(Repr::Int(n));
            }
        }
        if b.len() <= INLINE_MAX {
            return Str(Repr::inline(b));
        }
        Str::heap(b.to_vec())
    }

    /// A heap string: shared from [`SHARED_MIN`] bytes.
    #[inline]
    fn heap(v: Vec<u8>) -> Str {
        if v.len() >= SHARED_MIN {
            Str(Repr::Shared(Arc::new(v)))
        } else {
            Str(Repr::Raw(v))
        }
    }

    pub fn from_vec(v: Vec<u8>) -> Str {
        if v.len() <= 20 {
            if let Some(n) = resp::parse_i64(&v) {
                return Str(Repr::Int(n));
            }
        }
        if v.len() <= INLINE_MAX && v.capacity() == v.len() {
            return Str(Repr::inline(&v));
        }
        Str::heap(v)
    }

    /// The bytes as a string, never as an integer (Redis's
    /// createStringObject: INCRBYFLOAT's result).
    pub fn bytes(b: &[u8]) -> Str {
        if b.len() <= INLINE_MAX {
            Str(Repr::inline(b))
        } else {
            Str::heap(b.to_vec())
        }
    }

    /// Zero, as a constant (a placeholder value).
    pub const ZERO: Str = Str(Repr::Int(0));

    /// The integer form.
    pub fn int(n: i64) -> Str {
        Str(Repr::Int(n))
    }

    /// Bytes kept as a heap buffer whatever their content (a bitmap or a
    /// SETRANGE result: Redis's `raw` encoding).
    pub fn raw(v: Vec<u8>) -> Str {
        Str(Repr::Raw(v))
    }

    /// The value, if it is held as an integer.
    #[inline]
    pub fn as_int(&self) -> Option<i64> {
        match self.0 {
            Repr::Int(n) => Some(n),
            _ => None,
        }
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Int(n) => itoa::Buffer::new().format(*n).len(),
            Repr::Raw(v) => v.len(),
            Repr::Shared(v) => v.len(),
            other => other.inline_bytes().map_or(0, <[u8]>::len),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f` with the bytes of the value, formatting integers on the
    /// stack instead of allocating.
    #[inline]
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match &self.0 {
            Repr::Int(n) => f(itoa::Buffer::new().format(*n).as_bytes()),
            Repr::Raw(v) => f(v),
            Repr::Shared(v) => f(v),
            other => f(other.inline_bytes().unwrap_or(&[])),
        }
    }

    /// The bytes in place, unless the value is held as an integer (see
    /// [`Str::with_bytes`] for one that formats it).
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match &self.0 {
            Repr::Int(_) => None,
            Repr::Raw(v) => Some(v),
            Repr::Shared(v) => Some(v),
            other => other.inline_bytes(),
        }
    }

    /// The reference-counted buffer of a shared string, for a reply to
    /// hold.
    #[inline]
    pub fn shared(&self) -> Option<&Arc<Vec<u8>>> {
        match &self.0 {
            Repr::Shared(v) => Some(v),
            _ => None,
        }
    }

    /// The heap buffer of a raw string (or of a shared one no reply
    /// holds), to reuse; any other form back.
    pub fn into_raw(self) -> Result<Vec<u8>, Str> {
        match self.0 {
            Repr::Raw(v) => Ok(v),
            Repr::Shared(v) => Arc::try_unwrap(v).map_err(|v| Str(Repr::Shared(v))),
            other => Err(Str(other)),
        }
    }

    /// The buffer of a shared string as a plain heap buffer: taken back
    /// when no reply holds it, else copied.
    fn unshare(&mut self) {
        if let Repr::Shared(v) = &mut self.0 {
            let v = std::mem::take(Arc::make_mut(v));
            self.0 = Repr::Raw(v);
        }
    }

    /// The raw bytes zero-padded to at least `len` (Redis's sdsgrowzero,
    /// for bitmaps). Room is added as Redis's sdsMakeRoomFor adds it
    /// (double below 1 MB, 1 MB more above), not by a `Vec`'s doubling:
    /// a bitmap can be hundreds of MB. Fails only when the memory cannot
    /// be had.
    pub fn grow_zeroed(
        &mut self,
        len: usize,
    ) -> Result<&mut Vec<u8>, std::collections::TryReserveError> {
        const MAX_PREALLOC: usize = 1 << 20;
        self.unshare();
        if !matches!(self.0, Repr::Raw(_)) {
            self.0 = Repr::Raw(self.to_vec());
        }
        let Repr::Raw(v) = &mut self.0 else {
            unreachable!("just converted above")
        };
        if v.len() < len {
            let room = if len < MAX_PREALLOC {
                len * 2
            } else {
                len.saturating_add(MAX_PREALLOC)
            };
            v.try_reserve_exact(room - v.len())?;
            v.resize(len, 0);
        } else if v.capacity() == v.len() && v.len() <= EMBSTR_MAX {
            // Spare room is what reports an edited short string `raw`.
            v.try_reserve_exact(1)?;
        }
        Ok(v)
    }

    pub fn to_vec(&self) -> Vec<u8> {
        self.with_bytes(|b| b.to_vec())
    }

    /// Turns the value into its raw byte form, for in-place edits
    /// (APPEND, SETRANGE). An edited string reports `raw`, as in Redis:
    /// spare capacity is what tells it from a never-edited `embstr`.
    pub fn make_raw(&mut self) -> &mut Vec<u8> {
        self.unshare();
        if !matches!(self.0, Repr::Raw(_)) {
            // Exact now; the reserve below grows it as a Vec grows
            // (amortised), leaving spare room after the edit.
            self.0 = Repr::Raw(self.to_vec());
        }
        match &mut self.0 {
            Repr::Raw(v) => {
                if v.capacity() == v.len() {
                    v.reserve(1);
                }
                v
            }
            _ => unreachable!("just converted above"),
        }
    }

    pub fn encoding(&self) -> &'static str {
        match &self.0 {
            Repr::Int(_) => "int",
            Repr::Raw(v) if v.len() <= EMBSTR_MAX && v.capacity() == v.len() => "embstr",
            Repr::Raw(_) | Repr::Shared(_) => "raw",
            _ => "embstr",
        }
    }

    /// Bytes held on the heap (the requested capacity; the allocator
    /// rounds it up to its size class).
    pub fn heap_size(&self) -> usize {
        match &self.0 {
            Repr::Raw(v) => v.capacity(),
            // The buffer, and the count and vector header beside it.
            Repr::Shared(v) => v.capacity() + std::mem::size_of::<(usize, usize, Vec<u8>)>(),
            _ => 0,
        }
    }
}

/// A key's value, 24 bytes. Collections are boxed so a string key pays
/// nothing for the other types, except the hash, whose 16-byte header
/// fits: a small hash (the common case: objects stored as hashes) then
/// costs one allocation, its listpack.
///
/// `Spilled` is a value moved to the disk tier (`crate::tier`): lookups
/// through `View::get` / `View::peek` load it back before a handler sees
/// it, so handlers never meet one.
#[derive(Debug, PartialEq)]
pub enum Value {
    Str(Str),
    List(Box<List>),
    Hash(Hash),
    Set(Box<Set>),
    ZSet(Box<ZSet>),
    Stream(Box<Stream>),
    Spilled(Stub),
}

impl Clone for Value {
    fn clone(&self) -> Value {
        match self {
            Value::Str(s) => Value::Str(s.clone()),
            Value::List(l) => Value::List(l.clone()),
            Value::Hash(h) => Value::Hash(h.clone()),
            Value::Set(s) => Value::Set(s.clone()),
            Value::ZSet(z) => Value::ZSet(z.clone()),
            Value::Stream(s) => Value::Stream(s.clone()),
            // A record has one owner: a copy is the value itself.
            Value::Spilled(stub) => crate::tier::read_back(stub),
        }
    }
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
            Value::Spilled(s) => s.type_name(),
        }
    }

    /// Whether the value is on disk (see [`Value::Spilled`]).
    #[inline]
    pub fn is_spilled(&self) -> bool {
        matches!(self, Value::Spilled(_))
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
            Value::Str(_) | Value::Spilled(_) => 1,
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
            Value::Spilled(s) => s.encoding(),
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
pub fn take_value(value: &mut Value) -> Value {
    std::mem::replace(value, Value::Str(Str::int(0)))
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
    /// `stream-node-max-bytes` / `stream-node-max-entries` (0: no limit).
    pub stream_node_max_bytes: usize,
    pub stream_node_max_entries: usize,
    /// `set-max-listpack-entries` / `set-max-listpack-value`: Redis 7.2's
    /// listpack sets, used only when `sets_as_7_2`.
    pub set_max_listpack_entries: usize,
    pub set_max_listpack_value: usize,
    /// Sets are encoded as Redis 7.2 encodes them (intset, listpack,
    /// hashtable, with its size hints) rather than as 7.0 (intset,
    /// hashtable): under `redis-version 7.4.1`.
    pub sets_as_7_2: bool,
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
            stream_node_max_bytes: 4096,
            stream_node_max_entries: 100,
            set_max_listpack_entries: 128,
            set_max_listpack_value: 64,
            sets_as_7_2: false,
        }
    }
}

/// A key's value plus metadata, owned: being stored, just removed, or
/// copied. `expire_at` is a Unix time in milliseconds, 0 when the key has
/// no TTL. `access` is the LRU/LFU metadata (`storage::access`).
///
/// A stored key is reached through [`EntryMut`] / [`EntryRef`]: its node
/// (`storage::keymap`) keeps the expiry only when the key has one, so an
/// entry there has no `Entry` to point at.
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

    pub fn as_ref(&self) -> EntryRef<'_> {
        EntryRef {
            value: &self.value,
            access: self.access,
            expire_at: self.expire_at,
            unshared: self.unshared,
        }
    }
}

/// A stored key's entry, for reading and changing its value and access
/// metadata. The expiry is a copy: it changes through
/// `View::set_expire` (a key gaining a TTL may need a larger node).
#[derive(Debug)]
pub struct EntryMut<'a> {
    pub value: &'a mut Value,
    pub access: &'a mut u32,
    pub expire_at: u64,
    pub unshared: bool,
}

impl EntryMut<'_> {
    #[inline]
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at != 0 && self.expire_at <= now_ms
    }
}

/// A stored key's entry, read-only.
#[derive(Debug, Clone, Copy)]
pub struct EntryRef<'a> {
    pub value: &'a Value,
    pub access: u32,
    pub expire_at: u64,
    pub unshared: bool,
}

impl EntryRef<'_> {
    #[inline]
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at != 0 && self.expire_at <= now_ms
    }

    /// An owned copy.
    pub fn to_entry(&self) -> Entry {
        Entry {
            value: self.value.clone(),
            expire_at: self.expire_at,
            access: self.access,
            unshared: self.unshared,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_and_entry_sizes() {
        // The keyspace's node is an Entry plus the key: growing either
        // costs every key (see storage::keymap).
        assert_eq!(std::mem::size_of::<Str>(), 24);
        assert_eq!(std::mem::size_of::<Value>(), 24);
        assert_eq!(std::mem::size_of::<Entry>(), 40);
    }

    #[test]
    fn short_strings_are_inline() {
        for len in 0..=40 {
            let b: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let s = Str::from_bytes(&b);
            assert_eq!(s.len(), len);
            assert_eq!(s.to_vec(), b);
            assert_eq!(s.heap_size() == 0, len <= INLINE_MAX, "{len}");
            assert_eq!(s.encoding(), "embstr");
            assert_eq!(s.clone(), s);
            assert_eq!(Str::from_vec(b.clone()), s);
            let mut edited = s.clone();
            edited.make_raw().push(b'!');
            assert_eq!(edited.encoding(), "raw");
            assert_eq!(edited.len(), len + 1);
        }
        assert_eq!(Str::from_bytes(b"123").as_int(), Some(123));
        assert_ne!(Str::int(5), Str::raw(b"5".to_vec()));
    }

    #[test]
    fn large_strings_are_shared_and_an_edit_never_changes_a_copy_held_elsewhere() {
        let bytes = vec![b'x'; SHARED_MIN];
        let mut s = Str::from_bytes(&bytes);
        let held = Arc::clone(s.shared().expect("shared from SHARED_MIN bytes"));
        assert_eq!(s.encoding(), "raw");
        assert!(Str::from_bytes(&bytes[1..]).shared().is_none());
        // A copy shares the buffer; an edit of either copies it first.
        let copy = s.clone();
        assert!(Arc::ptr_eq(copy.shared().unwrap(), &held));
        s.make_raw().push(b'!');
        assert!(s.shared().is_none());
        assert_eq!(s.len(), SHARED_MIN + 1);
        assert_eq!(*held, bytes);
        assert_eq!(copy.to_vec(), bytes);
        // Held by no one else, the buffer is taken back, not copied.
        drop(held);
        let ptr = copy.shared().unwrap().as_ptr();
        assert_eq!(copy.into_raw().map(|v| v.as_ptr()).ok(), Some(ptr));
        let unique = Str::from_vec(bytes.clone());
        let other = unique.clone();
        assert!(unique.into_raw().is_err(), "held by `other`");
        assert_eq!(other.into_raw().map(|v| v.len()).ok(), Some(SHARED_MIN));
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
        assert_eq!(Str::int(5).clone().encoding(), "int");
    }
}
