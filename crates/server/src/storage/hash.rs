//! A hash: field → value. Pure data structure: no RESP, no I/O.
//!
//! Two encodings, as Redis, switching one way only:
//!
//! - **listpack** while the hash has at most `hash-max-listpack-entries`
//!   fields and every field and value is at most `hash-max-listpack-value`
//!   bytes: one `Vec<u8>` of (field, value) entries in the element encoding
//!   lists use ([`super::list::codec`]: a 1-byte header for short strings,
//!   integers in binary), searched linearly. A 10-field hash is one small
//!   allocation.
//! - **hashtable** beyond: each field and its value live together in one
//!   allocation (a [`Pair`]: two length varints, the field, the value)
//!   behind a thin 8-byte pointer, in `hashbrown::HashTable`s (1 control
//!   byte + 8 bytes a slot). Per field that is about 2 bytes + field +
//!   value rounded to the allocator's class, plus ~12 bytes of table;
//!   Redis spends a 24-byte dictEntry (32 with jemalloc), two sds headers
//!   and allocations, and an 8-byte bucket.
//!
//! The hashtable is split by extendible hashing: a directory indexed by
//! the top `depth` bits of a field's 64-bit hash points to sub-tables of at
//! most [`SUB_MAX`] fields; a full sub-table splits in two (doubling the
//! directory when needed) instead of the whole table rehashing at once, so
//! no single HSET moves a million entries. It also gives HSCAN an order:
//! fields are visited by increasing hash, the cursor is the hash to resume
//! from, and a sub-table covers one contiguous hash range, so one HSCAN
//! step sorts at most one sub-table. A field present for the whole scan is
//! returned at least once however the hash grows or splits meanwhile.

use std::alloc::{self, Layout};
use std::ptr::NonNull;
use std::sync::OnceLock;

use hashbrown::HashTable;
use rand::Rng;

use super::field_ttl::{self, FieldTtls};
use super::list::codec;
use super::list::{Elem, Needle};
use super::value::EncodingLimits;
use super::varint;

/// Largest listpack Redis lets a hash grow to before converting
/// (`lpSafeToAdd`'s 1 GB).
const LISTPACK_SAFETY_LIMIT: usize = 1 << 30;

/// Buckets of a sub-table that splits rather than growing further.
const SPLIT_BUCKETS: usize = 1024;
/// Most fields a sub-table holds: the capacity of a 1024-bucket hashbrown
/// table (7/8 load).
pub const SUB_MAX: usize = SPLIT_BUCKETS / 8 * 7;

/// Deepest directory: 2^24 sub-tables is far beyond any real hash; past it
/// sub-tables just grow.
const MAX_DEPTH: u32 = 24;

fn seed() -> &'static ahash::RandomState {
    static SEED: OnceLock<ahash::RandomState> = OnceLock::new();
    SEED.get_or_init(ahash::RandomState::new)
}

/// The 64-bit hash fields are placed and scanned by. One process-wide
/// random seed: the same field always hashes the same within a run.
#[inline]
pub fn field_hash(field: &[u8]) -> u64 {
    seed().hash_one(field)
}

// ---------------------------------------------------------------------------
// Pair: one allocation holding a field and its value.

/// A field and its value in one heap allocation, behind a thin pointer:
/// `[varint field_len][varint value_len][field][value]`.
pub struct Pair {
    ptr: NonNull<u8>,
}

// SAFETY: a Pair owns its allocation exclusively (no aliasing, no interior
// mutability), like a Box<[u8]>.
unsafe impl Send for Pair {}
// SAFETY: shared references only read the bytes.
unsafe impl Sync for Pair {}

impl Pair {
    pub fn new(field: &[u8], value: &[u8]) -> Pair {
        let (fl, vl) = (varint::len(field.len()), varint::len(value.len()));
        let total = fl + vl + field.len() + value.len();
        let layout = Self::layout(total);
        // SAFETY: `layout` has a non-zero size (at least the two varint
        // bytes).
        let raw = unsafe { alloc::alloc(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        // SAFETY: `raw` points to `total` freshly allocated bytes that
        // nothing else references.
        let dst = unsafe { std::slice::from_raw_parts_mut(raw, total) };
        let mut at = varint::write(dst, field.len());
        at += varint::write(&mut dst[at..], value.len());
        dst[at..at + field.len()].copy_from_slice(field);
        at += field.len();
        dst[at..].copy_from_slice(value);
        Pair { ptr }
    }

    fn layout(total: usize) -> Layout {
        match Layout::from_size_align(total, 1) {
            Ok(l) => l,
            // Only for sizes above isize::MAX, which no request can carry.
            Err(_) => panic!("hash pair of {total} bytes"),
        }
    }

    /// Reads the varint at byte `at` of the allocation: (value, bytes).
    #[inline]
    fn varint_at(&self, at: usize) -> (usize, usize) {
        // SAFETY: the header varints were written completely by `new`
        // inside the allocation.
        unsafe { varint::read(self.ptr.as_ptr().add(at)) }
    }

    /// (header bytes, field length, value length).
    #[inline]
    fn header(&self) -> (usize, usize, usize) {
        let (flen, a) = self.varint_at(0);
        let (vlen, b) = self.varint_at(a);
        (a + b, flen, vlen)
    }

    #[inline]
    fn bytes(&self) -> &[u8] {
        let (h, f, v) = self.header();
        // SAFETY: the allocation is exactly header + field + value bytes,
        // all initialised by `new`, and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), h + f + v) }
    }

    #[inline]
    pub fn field(&self) -> &[u8] {
        let (h, f, _) = self.header();
        &self.bytes()[h..h + f]
    }

    #[inline]
    pub fn value(&self) -> &[u8] {
        let (h, f, _) = self.header();
        &self.bytes()[h + f..]
    }

    /// (field, value).
    #[inline]
    pub fn parts(&self) -> (&[u8], &[u8]) {
        let (h, f, _) = self.header();
        let b = self.bytes();
        (&b[h..h + f], &b[h + f..])
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        let total = self.bytes().len();
        // SAFETY: allocated by `new` with this same layout (the size is
        // recomputed from the header it wrote) and not freed before.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), Self::layout(total)) }
    }
}

impl Clone for Pair {
    fn clone(&self) -> Pair {
        let (f, v) = self.parts();
        Pair::new(f, v)
    }
}

// ---------------------------------------------------------------------------
// Listpack.

/// Compact encoding: alternating field and value entries in one exactly
/// sized allocation, its length and pair count kept here beside the
/// pointer rather than in a header, so a 10-field hash of short strings
/// fills a 160-byte allocator class instead of spilling into the next one.
/// Resized with `realloc` on every change, as Redis's listpack (in place
/// while the allocator's size class holds). An empty listpack allocates
/// nothing.
pub struct Listpack {
    ptr: NonNull<u8>,
    len: u32,
    count: u32,
}

// SAFETY: a Listpack owns its allocation exclusively, like a Box<[u8]>.
unsafe impl Send for Listpack {}
// SAFETY: shared references only read the bytes.
unsafe impl Sync for Listpack {}

impl Default for Listpack {
    fn default() -> Listpack {
        Listpack {
            ptr: NonNull::dangling(),
            len: 0,
            count: 0,
        }
    }
}

impl Clone for Listpack {
    fn clone(&self) -> Listpack {
        let mut lp = Listpack::default();
        lp.resize(self.bytes().len());
        lp.bytes_mut().copy_from_slice(self.bytes());
        lp.count = self.count;
        lp
    }
}

impl Drop for Listpack {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: allocated (or last reallocated) with this size and
            // alignment 1.
            unsafe { alloc::dealloc(self.ptr.as_ptr(), Pair::layout(self.len as usize)) }
        }
    }
}

impl Listpack {
    /// Number of (field, value) pairs.
    #[inline]
    fn count(&self) -> u32 {
        self.count
    }

    #[inline]
    fn set_count(&mut self, n: u32) {
        self.count = n;
    }

    /// The entries.
    #[inline]
    fn bytes(&self) -> &[u8] {
        // SAFETY: the allocation is `len` initialised bytes (or, with len
        // 0, a dangling pointer that is never read).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len as usize) }
    }

    #[inline]
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as `bytes`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len as usize) }
    }

    /// Resizes the entries to `new_len` bytes, zero-filling growth. A
    /// listpack never exceeds LISTPACK_SAFETY_LIMIT (1 GB), so u32 holds it.
    fn resize(&mut self, new_len: usize) {
        let old_len = self.len as usize;
        if new_len == old_len {
            return;
        }
        let raw = if old_len == 0 {
            // SAFETY: non-zero size.
            unsafe { alloc::alloc(Pair::layout(new_len)) }
        } else if new_len == 0 {
            // SAFETY: `ptr` was allocated with this layout.
            unsafe { alloc::dealloc(self.ptr.as_ptr(), Pair::layout(old_len)) };
            self.ptr = NonNull::dangling();
            self.len = 0;
            return;
        } else {
            // SAFETY: `ptr` was allocated with layout `old_len`; the new
            // size is non-zero.
            unsafe { alloc::realloc(self.ptr.as_ptr(), Pair::layout(old_len), new_len) }
        };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(Pair::layout(new_len))
        };
        self.ptr = ptr;
        if new_len > old_len {
            // SAFETY: the bytes past the old end are inside the new
            // allocation and must be initialised before being read.
            unsafe { std::ptr::write_bytes(raw.add(old_len), 0, new_len - old_len) };
        }
        self.len = new_len as u32;
    }

    /// Offsets of `field`'s entry and of its value's entry.
    #[inline]
    fn find(&self, needle: &Needle) -> Option<(usize, usize)> {
        let buf = self.bytes();
        let mut pos = 0;
        while pos < buf.len() {
            let (f, fsize) = codec::decode(buf, pos);
            let vpos = pos + fsize;
            if needle.matches(f) {
                return Some((pos, vpos));
            }
            pos = vpos + codec::entry_size(buf, vpos);
        }
        None
    }

    fn get(&self, field: &[u8]) -> Option<Elem<'_>> {
        let (_, vpos) = self.find(&Needle::new(field))?;
        Some(codec::decode(self.bytes(), vpos).0)
    }

    /// Replaces bytes `at..at + old` by `new` bytes of room, returned for
    /// writing.
    fn resize_hole(&mut self, at: usize, old: usize, new: usize) -> &mut [u8] {
        let len = self.bytes().len();
        if new > old {
            self.resize(len + new - old);
            self.bytes_mut().copy_within(at + old..len, at + new);
        } else if new < old {
            self.bytes_mut().copy_within(at + old..len, at + new);
            self.resize(len - (old - new));
        }
        &mut self.bytes_mut()[at..at + new]
    }

    fn set(&mut self, field: &[u8], value: &[u8]) -> bool {
        let v = codec::encode(value);
        match self.find(&Needle::new(field)) {
            Some((_, vpos)) => {
                let old = codec::entry_size(self.bytes(), vpos);
                let hole = self.resize_hole(vpos, old, v.size);
                v.write(hole);
                false
            }
            None => {
                let f = codec::encode(field);
                let at = self.bytes().len();
                let hole = self.resize_hole(at, 0, f.size + v.size);
                f.write(&mut hole[..f.size]);
                v.write(&mut hole[f.size..]);
                self.set_count(self.count() + 1);
                true
            }
        }
    }

    fn remove(&mut self, field: &[u8]) -> bool {
        let Some((pos, vpos)) = self.find(&Needle::new(field)) else {
            return false;
        };
        let end = vpos + codec::entry_size(self.bytes(), vpos);
        self.resize_hole(pos, end - pos, 0);
        self.set_count(self.count() - 1);
        true
    }

    fn iter(&self) -> ListpackIter<'_> {
        ListpackIter {
            buf: self.bytes(),
            pos: 0,
        }
    }
}

pub struct ListpackIter<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for ListpackIter<'a> {
    type Item = (Elem<'a>, Elem<'a>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let (f, fs) = codec::decode(self.buf, self.pos);
        let (v, vs) = codec::decode(self.buf, self.pos + fs);
        self.pos += fs + vs;
        Some((f, v))
    }
}

// ---------------------------------------------------------------------------
// Hashtable.

#[derive(Clone)]
struct Sub {
    map: HashTable<Pair>,
    /// Number of leading hash bits all of this sub-table's fields share.
    depth: u32,
}

/// The large encoding: sub-tables under an extendible-hashing directory.
#[derive(Clone)]
pub struct Table {
    /// `1 << depth` entries: sub-table index for each top-`depth`-bit
    /// prefix.
    dir: Vec<u32>,
    depth: u32,
    subs: Vec<Sub>,
    len: usize,
    /// Field TTLs, once the hash has had one (see [`FieldTtls`]).
    ttl: Option<Box<FieldTtls>>,
    /// A `listpackex`: the fields are in this listpack (the table's own
    /// structures stay empty) while the hash is within the listpack
    /// limits; the box only gives the TTLs a place beside it.
    compact: Option<Listpack>,
}

/// A pair with its field's hash, while a sub-table splits.
type Hashed = (u64, Pair);

#[inline]
fn hasher(p: &Pair) -> u64 {
    field_hash(p.field())
}

impl Table {
    /// A `listpackex`'s box: the listpack, no table structures.
    fn compact(lp: Listpack) -> Table {
        Table {
            dir: Vec::new(),
            depth: 0,
            subs: Vec::new(),
            len: 0,
            ttl: None,
            compact: Some(lp),
        }
    }

    fn with_capacity(n: usize) -> Table {
        Table {
            dir: vec![0],
            depth: 0,
            subs: vec![Sub {
                map: HashTable::with_capacity(n.min(SUB_MAX)),
                depth: 0,
            }],
            len: 0,
            ttl: None,
            compact: None,
        }
    }

    #[inline]
    fn slot(&self, h: u64) -> usize {
        h.checked_shr(64 - self.depth).unwrap_or(0) as usize
    }

    #[inline]
    fn sub_of(&self, h: u64) -> usize {
        self.dir[self.slot(h)] as usize
    }

    #[inline]
    fn get(&self, field: &[u8]) -> Option<&Pair> {
        let h = field_hash(field);
        self.subs[self.sub_of(h)]
            .map
            .find(h, |p| p.field() == field)
    }

    /// Splits sub-table `s` (not empty) in two by the next hash bit. Both
    /// halves are rebuilt, so the split also clears deletion tombstones.
    fn split(&mut self, s: usize) {
        let d = self.subs[s].depth;
        let Some(any) = self.subs[s].map.iter().next().map(hasher) else {
            return;
        };
        if d == self.depth {
            self.dir = self.dir.iter().flat_map(|&x| [x, x]).collect();
            self.depth += 1;
        }
        let bit = 63 - d;
        let old = std::mem::take(&mut self.subs[s].map);
        let (mut low, mut high): (Vec<Hashed>, Vec<Hashed>) = old
            .into_iter()
            .map(|p| (hasher(&p), p))
            .partition(|(h, _)| (h >> bit) & 1 == 0);
        let build = |part: &mut Vec<Hashed>| {
            let mut map = HashTable::with_capacity(part.len());
            for (h, p) in part.drain(..) {
                map.insert_unique(h, p, hasher);
            }
            map
        };
        self.subs[s] = Sub {
            map: build(&mut low),
            depth: d + 1,
        };
        let new = self.subs.len() as u32;
        self.subs.push(Sub {
            map: build(&mut high),
            depth: d + 1,
        });
        // The directory slots of `s` are the run of 2^(depth - d) slots
        // starting at its d-bit prefix; the upper half now belongs to the
        // new sub-table.
        let prefix = any.checked_shr(64 - d).unwrap_or(0) as usize;
        let span = 1usize << (self.depth - d);
        let start = prefix << (self.depth - d);
        for slot in &mut self.dir[start + span / 2..start + span] {
            *slot = new;
        }
    }

    fn set(&mut self, field: &[u8], value: &[u8]) -> bool {
        let h = field_hash(field);
        let mut s = self.sub_of(h);
        if let Some(p) = self.subs[s].map.find_mut(h, |p| p.field() == field) {
            if p.value() != value {
                *p = Pair::new(field, value);
            }
            return false;
        }
        let sub = &self.subs[s];
        // About to outgrow SPLIT_BUCKETS buckets (or to rehash away
        // tombstones): split instead.
        if sub.map.len() == sub.map.capacity()
            && sub.map.num_buckets() >= SPLIT_BUCKETS
            && sub.depth < MAX_DEPTH
        {
            self.split(s);
            s = self.sub_of(h);
        }
        self.subs[s]
            .map
            .insert_unique(h, Pair::new(field, value), hasher);
        self.len += 1;
        true
    }

    fn remove(&mut self, field: &[u8]) -> bool {
        let h = field_hash(field);
        let s = self.sub_of(h);
        let map = &mut self.subs[s].map;
        match map.find_entry(h, |p| p.field() == field) {
            Ok(e) => {
                e.remove();
            }
            Err(_) => return false,
        }
        self.len -= 1;
        if map.capacity() > 64 && map.len() * 4 < map.capacity() {
            let keep = map.len() * 2;
            map.shrink_to(keep, hasher);
        }
        true
    }

    fn iter(&self) -> impl Iterator<Item = &Pair> {
        self.subs.iter().flat_map(|s| s.map.iter())
    }

    /// A uniformly random pair: a sub-table chosen by size (`sums` are the
    /// running totals of sub-table sizes), then random buckets until an
    /// occupied one (sub-tables are kept at least a quarter full).
    fn random<'a, R: Rng>(&'a self, sums: &[usize], rng: &mut R) -> Option<&'a Pair> {
        if self.len == 0 {
            return None;
        }
        let r = rng.gen_range(0..self.len);
        let s = sums.partition_point(|&total| total <= r);
        let map = &self.subs.get(s)?.map;
        let buckets = map.num_buckets();
        for _ in 0..1024 {
            if let Some(p) = map.get_bucket(rng.gen_range(0..buckets)) {
                return Some(p);
            }
        }
        map.iter().nth(rng.gen_range(0..map.len()))
    }

    fn running_sizes(&self) -> Vec<usize> {
        let mut total = 0;
        self.subs
            .iter()
            .map(|s| {
                total += s.map.len();
                total
            })
            .collect()
    }

    /// One HSCAN step; see [`Hash::scan`].
    fn scan(&self, cursor: u64, count: usize, f: &mut dyn FnMut(&[u8], &[u8])) -> u64 {
        let mut from = cursor;
        let mut emitted = 0;
        let mut batch: Vec<(u64, &Pair)> = Vec::new();
        loop {
            let s = &self.subs[self.sub_of(from)];
            batch.clear();
            batch.extend(
                s.map
                    .iter()
                    .map(|p| (hasher(p), p))
                    .filter(|(h, _)| *h >= from),
            );
            batch.sort_unstable_by_key(|(h, _)| *h);
            let mut last: Option<u64> = None;
            for &(h, p) in &batch {
                if emitted >= count && last != Some(h) {
                    return h;
                }
                let (field, value) = p.parts();
                f(field, value);
                emitted += 1;
                last = Some(h);
            }
            // Next: the first hash past this sub-table's range.
            let shift = 64 - s.depth;
            let next = match shift {
                64 => None,
                _ => ((from >> shift) + 1).checked_shl(shift).filter(|&n| n != 0),
            };
            match next {
                None => return 0,
                Some(n) => from = n,
            }
            if emitted >= count {
                return from;
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Hash.

/// A hash value.
#[derive(Clone)]
pub enum Hash {
    Listpack(Listpack),
    Table(Box<Table>),
}

impl Default for Hash {
    fn default() -> Self {
        Hash::Listpack(Listpack::default())
    }
}

impl std::fmt::Debug for Hash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut m = f.debug_map();
        self.for_each(|k, v| {
            m.entry(
                &String::from_utf8_lossy(&k.to_vec()),
                &String::from_utf8_lossy(&v.to_vec()),
            );
        });
        m.finish()
    }
}

impl PartialEq for Hash {
    fn eq(&self, other: &Hash) -> bool {
        if self.len() != other.len() {
            return false;
        }
        let mut same = true;
        self.for_each(|k, v| {
            if same {
                same = k.with_bytes(|k| other.get(k)).map(Elem::to_vec) == Some(v.to_vec());
            }
        });
        same
    }
}

/// Iterator over a hash's (field, value) pairs.
pub enum Iter<'a> {
    Listpack(ListpackIter<'a>),
    Table(Box<dyn Iterator<Item = &'a Pair> + 'a>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (Elem<'a>, Elem<'a>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Listpack(i) => i.next(),
            Iter::Table(i) => i.next().map(|p| {
                let (f, v) = p.parts();
                (Elem::Str(f), Elem::Str(v))
            }),
        }
    }
}

impl Hash {
    pub fn new() -> Hash {
        Hash::default()
    }

    /// The listpack holding the fields, for a hash in either listpack
    /// encoding (`listpack`, or `listpackex` inside a table's box).
    #[inline]
    fn lp(&self) -> Option<&Listpack> {
        match self {
            Hash::Listpack(lp) => Some(lp),
            Hash::Table(t) => t.compact.as_ref(),
        }
    }

    #[inline]
    fn lp_mut(&mut self) -> Option<&mut Listpack> {
        match self {
            Hash::Listpack(lp) => Some(lp),
            Hash::Table(t) => t.compact.as_mut(),
        }
    }

    /// Bytes the hash holds on the heap, in the allocator's size classes
    /// (MEMORY USAGE).
    pub fn heap_size(&self) -> usize {
        use crate::memory::alloc::size_class;
        let lp_size = |lp: &Listpack| match lp.len {
            0 => 0,
            n => size_class(n as usize),
        };
        match self {
            Hash::Listpack(lp) => lp_size(lp),
            Hash::Table(t) => {
                let subs: usize = t
                    .subs
                    .iter()
                    .map(|s| {
                        let buckets = (s.map.capacity() * 8 / 7).next_power_of_two();
                        buckets * 9
                            + s.map
                                .iter()
                                .map(|p| size_class(p.bytes().len()))
                                .sum::<usize>()
                    })
                    .sum();
                size_class(std::mem::size_of::<Table>())
                    + t.compact.as_ref().map_or(0, lp_size)
                    + t.ttl.as_ref().map_or(0, |ttl| ttl.heap_size())
                    + t.dir.capacity() * 4
                    + t.subs.capacity() * std::mem::size_of::<Sub>()
                    + subs
            }
        }
    }

    /// The name OBJECT ENCODING replies with.
    pub fn encoding(&self) -> &'static str {
        match self {
            Hash::Listpack(_) => "listpack",
            Hash::Table(t) if t.compact.is_some() => "listpackex",
            Hash::Table(_) => "hashtable",
        }
    }

    pub fn len(&self) -> usize {
        match self.lp() {
            Some(lp) => lp.count() as usize,
            None => match self {
                Hash::Table(t) => t.len,
                Hash::Listpack(_) => unreachable!("a listpack has lp()"),
            },
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of `field`.
    #[inline]
    pub fn get(&self, field: &[u8]) -> Option<Elem<'_>> {
        match self {
            Hash::Listpack(lp) => lp.get(field),
            Hash::Table(t) => match &t.compact {
                Some(lp) => lp.get(field),
                None => t.get(field).map(|p| Elem::Str(p.value())),
            },
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Converts to the hashtable encoding (one way), from either listpack
    /// encoding; a `listpackex` keeps its TTLs.
    fn convert(&mut self) {
        let ttl = match self {
            Hash::Table(t) if t.compact.is_none() => return,
            Hash::Table(t) => t.ttl.take(),
            Hash::Listpack(_) => None,
        };
        let Some(lp) = self.lp() else { return };
        let mut t = Table::with_capacity(lp.count() as usize);
        for (f, v) in lp.iter() {
            f.with_bytes(|f| v.with_bytes(|v| t.set(f, v)));
        }
        t.ttl = ttl;
        *self = Hash::Table(Box::new(t));
    }

    /// Converts before a write of fields/values of total `sum` bytes, the
    /// longest being `longest`, if the listpack could not hold them
    /// (Redis's hashTypeTryConversion).
    pub fn prepare(&mut self, longest: usize, sum: usize, limits: &EncodingLimits) {
        if let Some(lp) = self.lp() {
            if longest > limits.hash_max_listpack_value
                || lp.bytes().len() + sum > LISTPACK_SAFETY_LIMIT
            {
                self.convert();
            }
        }
    }

    /// Sets `field` to `value`; true if the field is new. A value set
    /// anew has no TTL (HSET), as Redis. Converts to a hashtable when the
    /// listpack limits are exceeded.
    pub fn set(&mut self, field: &[u8], value: &[u8], limits: &EncodingLimits) -> bool {
        if let Hash::Table(t) = self {
            if let Some(ttl) = t.ttl.as_mut() {
                ttl.remove(field);
            }
        }
        match self.lp_mut() {
            Some(lp) => {
                if field.len() > limits.hash_max_listpack_value
                    || value.len() > limits.hash_max_listpack_value
                    || lp.bytes().len() + field.len() + value.len() + 18 > LISTPACK_SAFETY_LIMIT
                {
                    self.convert();
                    return self.set(field, value, limits);
                }
                let created = lp.set(field, value);
                if lp.count() as usize > limits.hash_max_listpack_entries {
                    self.convert();
                }
                created
            }
            None => match self {
                Hash::Table(t) => t.set(field, value),
                Hash::Listpack(_) => unreachable!("a listpack has lp_mut()"),
            },
        }
    }

    /// Sets `field` to `value` keeping its TTL (HINCRBY, HINCRBYFLOAT);
    /// true if the field is new.
    pub fn set_keep_ttl(&mut self, field: &[u8], value: &[u8], limits: &EncodingLimits) -> bool {
        let at = self.field_expiry(field);
        let created = self.set(field, value, limits);
        if let Some(at) = at {
            self.set_field_expiry(field, at);
        }
        created
    }

    /// Removes `field`; true if it existed.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        if let Hash::Table(t) = self {
            if let Some(ttl) = t.ttl.as_mut() {
                ttl.remove(field);
            }
        }
        match self.lp_mut() {
            Some(lp) => lp.remove(field),
            None => match self {
                Hash::Table(t) => t.remove(field),
                Hash::Listpack(_) => unreachable!("a listpack has lp_mut()"),
            },
        }
    }

    /// The field TTLs, if the hash has had any.
    #[inline]
    pub fn ttls(&self) -> Option<&FieldTtls> {
        match self {
            Hash::Table(t) => t.ttl.as_deref(),
            Hash::Listpack(_) => None,
        }
    }

    /// Whether some field has a TTL.
    #[inline]
    pub fn has_field_ttls(&self) -> bool {
        self.ttls().is_some_and(|t| !t.is_empty())
    }

    /// The expiry time of `field` (unix ms), if it has one.
    #[inline]
    pub fn field_expiry(&self, field: &[u8]) -> Option<u64> {
        self.ttls().and_then(|t| t.get(field))
    }

    /// Whether `field` is stored but past its expiry time at `now`.
    #[inline]
    pub fn field_expired(&self, field: &[u8], now: u64) -> bool {
        self.field_expiry(field)
            .is_some_and(|at| field_ttl::is_expired(at, now))
    }

    /// The earliest field expiry time.
    pub fn min_field_expiry(&self) -> Option<u64> {
        self.ttls().and_then(|t| t.min())
    }

    /// The TTLs of a hash that may take them: a listpack becomes a
    /// `listpackex` (the same listpack, in a table's box beside its TTLs).
    fn ttls_mut(&mut self) -> &mut FieldTtls {
        if let Hash::Listpack(lp) = self {
            let lp = std::mem::take(lp);
            *self = Hash::Table(Box::new(Table::compact(lp)));
        }
        let Hash::Table(t) = self else {
            unreachable!("a table by now")
        };
        t.ttl.get_or_insert_with(Box::default)
    }

    /// Sets the expiry time of `field` (which the caller checked exists).
    pub fn set_field_expiry(&mut self, field: &[u8], at: u64) {
        self.ttls_mut().set(field, at);
    }

    /// Makes a listpack hash a `listpackex` even with no TTL in it (as
    /// Redis loads RDB type 25).
    pub fn mark_listpack_ex(&mut self) {
        self.ttls_mut();
    }

    /// Removes `field`'s TTL; returns it.
    pub fn persist_field(&mut self, field: &[u8]) -> Option<u64> {
        match self {
            Hash::Table(t) => t.ttl.as_mut().and_then(|ttl| ttl.remove(field)),
            Hash::Listpack(_) => None,
        }
    }

    pub fn iter(&self) -> Iter<'_> {
        match (self, self.lp()) {
            (_, Some(lp)) => Iter::Listpack(lp.iter()),
            (Hash::Table(t), None) => Iter::Table(Box::new(t.iter())),
            (Hash::Listpack(_), None) => unreachable!("a listpack has lp()"),
        }
    }

    /// Calls `f` for every (field, value).
    pub fn for_each(&self, mut f: impl FnMut(Elem, Elem)) {
        for (k, v) in self.iter() {
            f(k, v)
        }
    }

    /// One HSCAN step from `cursor`, calling `f` for at least `count`
    /// fields (when that many remain); returns the next cursor, 0 at the
    /// end. A listpack (or listpackex) is returned whole with cursor 0,
    /// as Redis.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8], &[u8])) -> u64 {
        match (self, self.lp()) {
            (_, Some(lp)) => {
                for (k, v) in lp.iter() {
                    k.with_bytes(|k| v.with_bytes(|v| f(k, v)));
                }
                0
            }
            (Hash::Table(t), None) => t.scan(cursor, count.max(1), &mut f),
            (Hash::Listpack(_), None) => unreachable!("a listpack has lp()"),
        }
    }

    /// Calls `f` with `n` pairs drawn at random with replacement.
    pub fn random_pairs<R: Rng>(&self, n: usize, rng: &mut R, mut f: impl FnMut(Elem, Elem)) {
        if self.is_empty() {
            return;
        }
        match (self, self.lp()) {
            (_, Some(lp)) => {
                let offsets = lp_offsets(lp);
                for _ in 0..n {
                    let pos = offsets[rng.gen_range(0..offsets.len())];
                    let (k, ks) = codec::decode(lp.bytes(), pos);
                    let (v, _) = codec::decode(lp.bytes(), pos + ks);
                    f(k, v);
                }
            }
            (Hash::Table(t), None) => {
                let sums = t.running_sizes();
                for _ in 0..n {
                    if let Some(p) = t.random(&sums, rng) {
                        let (k, v) = p.parts();
                        f(Elem::Str(k), Elem::Str(v));
                    }
                }
            }
            (Hash::Listpack(_), None) => unreachable!("a listpack has lp()"),
        }
    }

    /// Calls `f` with `n` distinct pairs chosen at random (`n` < len): in
    /// hash order for a listpack (as Redis's lpRandomPairsUnique), in
    /// random order otherwise.
    pub fn random_distinct<R: Rng>(&self, n: usize, rng: &mut R, mut f: impl FnMut(Elem, Elem)) {
        let len = self.len();
        let n = n.min(len);
        match (self, self.lp()) {
            (_, Some(lp)) => {
                // Selection sampling (Knuth's algorithm S): order kept.
                let mut need = n;
                let mut left = len;
                for (k, v) in lp.iter() {
                    if need == 0 {
                        break;
                    }
                    if rng.gen_range(0..left) < need {
                        f(k, v);
                        need -= 1;
                    }
                    left -= 1;
                }
            }
            (Hash::Table(t), None) => {
                if n * 3 > len {
                    // Most of the hash: shuffle references to all, take n.
                    let mut all: Vec<&Pair> = t.iter().collect();
                    for i in 0..n {
                        let j = rng.gen_range(i..all.len());
                        all.swap(i, j);
                        let (k, v) = all[i].parts();
                        f(Elem::Str(k), Elem::Str(v));
                    }
                } else {
                    // A small part: random picks, skipping repeats.
                    let sums = t.running_sizes();
                    let mut seen: std::collections::HashSet<usize, ahash::RandomState> =
                        std::collections::HashSet::with_capacity_and_hasher(n, seed().clone());
                    while seen.len() < n {
                        let Some(p) = t.random(&sums, rng) else { break };
                        if seen.insert(p as *const Pair as usize) {
                            let (k, v) = p.parts();
                            f(Elem::Str(k), Elem::Str(v));
                        }
                    }
                }
            }
            (Hash::Listpack(_), None) => unreachable!("a listpack has lp()"),
        }
    }
}

fn lp_offsets(lp: &Listpack) -> Vec<usize> {
    let buf = lp.bytes();
    let mut out = Vec::with_capacity(lp.count() as usize);
    let mut pos = 0;
    while pos < buf.len() {
        out.push(pos);
        let fs = codec::entry_size(buf, pos);
        pos += fs + codec::entry_size(buf, pos + fs);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn limits(entries: usize, value: usize) -> EncodingLimits {
        EncodingLimits {
            hash_max_listpack_entries: entries,
            hash_max_listpack_value: value,
            ..EncodingLimits::default()
        }
    }

    fn to_map(h: &Hash) -> HashMap<Vec<u8>, Vec<u8>> {
        h.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect()
    }

    #[test]
    fn sizes() {
        assert_eq!(std::mem::size_of::<Hash>(), 16);
        assert_eq!(std::mem::size_of::<Pair>(), 8);
        assert_eq!(std::mem::size_of::<Option<Pair>>(), 8);
    }

    #[test]
    fn pair_round_trips() {
        let big = vec![7u8; 300];
        for (f, v) in [
            (&b""[..], &b""[..]),
            (b"f", b"value"),
            (&big, b"x"),
            (b"k", &big),
        ] {
            let p = Pair::new(f, v);
            assert_eq!(p.parts(), (f, v));
            assert_eq!(p.field(), f);
            assert_eq!(p.value(), v);
            let q = p.clone();
            assert_eq!(q.parts(), (f, v));
        }
    }

    #[test]
    fn listpack_then_hashtable() {
        let l = limits(4, 8);
        let mut h = Hash::new();
        assert!(h.set(b"a", b"1", &l));
        assert!(h.set(b"b", b"-200", &l));
        assert!(!h.set(b"a", b"hello", &l));
        assert_eq!(h.encoding(), "listpack");
        assert_eq!(h.get(b"a"), Some(Elem::Str(b"hello")));
        assert_eq!(h.get(b"b"), Some(Elem::Int(-200)));
        assert!(h.set(b"c", b"3", &l));
        assert!(h.set(b"d", b"4", &l));
        assert_eq!(h.encoding(), "listpack");
        assert!(h.set(b"e", b"5", &l));
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.len(), 5);
        assert_eq!(h.get(b"b").map(Elem::to_vec), Some(b"-200".to_vec()));
        // Long value converts too.
        let mut h2 = Hash::new();
        h2.set(b"a", b"12345678", &l);
        assert_eq!(h2.encoding(), "listpack");
        h2.set(b"a", b"123456789x", &l);
        assert_eq!(h2.encoding(), "hashtable");
        assert_eq!(h2.len(), 1);
        assert!(h2.remove(b"a"));
        assert!(h2.is_empty());
        assert_eq!(h2.encoding(), "hashtable");
    }

    #[test]
    fn big_table_splits_and_scans() {
        let l = limits(16, 64);
        let mut h = Hash::new();
        let n = 20_000;
        for i in 0..n {
            h.set(
                format!("field:{i}").as_bytes(),
                format!("v{i}").as_bytes(),
                &l,
            );
        }
        assert_eq!(h.len(), n);
        let Hash::Table(t) = &h else { panic!() };
        assert!(t.subs.len() > 16);
        assert!(t.subs.iter().all(|s| s.map.len() <= SUB_MAX));
        for i in (0..n).step_by(7) {
            assert_eq!(
                h.get(format!("field:{i}").as_bytes()).map(Elem::to_vec),
                Some(format!("v{i}").into_bytes())
            );
        }
        // Scan while growing: every original field at least once.
        let mut seen: HashMap<Vec<u8>, usize> = HashMap::new();
        let mut cursor = 0;
        let mut round = 0;
        loop {
            cursor = h.scan(cursor, 10, |k, _| *seen.entry(k.to_vec()).or_default() += 1);
            for j in 0..20 {
                h.set(format!("new:{round}:{j}").as_bytes(), b"x", &l);
            }
            round += 1;
            if cursor == 0 {
                break;
            }
        }
        for i in 0..n {
            let c = seen
                .get(format!("field:{i}").as_bytes())
                .copied()
                .unwrap_or(0);
            assert_eq!(c, 1, "field:{i}");
        }
        // Deleting most fields keeps lookups right and shrinks tables.
        for i in 0..n {
            if i % 10 != 0 {
                assert!(h.remove(format!("field:{i}").as_bytes()));
            }
        }
        for i in (0..n).step_by(10) {
            assert!(h.contains(format!("field:{i}").as_bytes()));
        }
    }

    #[test]
    fn random_access() {
        let mut rng = rand::thread_rng();
        for (entries, n) in [(512, 10), (4, 3000)] {
            let l = limits(entries, 64);
            let mut h = Hash::new();
            for i in 0..n {
                h.set(format!("f{i}").as_bytes(), b"v", &l);
            }
            let mut hits: HashMap<Vec<u8>, usize> = HashMap::new();
            h.random_pairs(n * 50, &mut rng, |k, _| {
                *hits.entry(k.to_vec()).or_default() += 1
            });
            assert_eq!(hits.len(), n, "every field drawn at some point");
            for want in [1, n / 4, n / 2, n - 1] {
                let mut got = std::collections::HashSet::new();
                h.random_distinct(want, &mut rng, |k, _| assert!(got.insert(k.to_vec())));
                assert_eq!(got.len(), want);
            }
        }
    }

    proptest! {
        #[test]
        fn behaves_like_hashmap(
            entries in 0usize..20,
            ops in proptest::collection::vec(
                (0u8..3, 0u16..3000, prop_oneof![
                    (0i64..100).prop_map(|n| n.to_string()),
                    "[a-z]{0,12}",
                ]),
                0..2500,
            ),
        ) {
            let l = limits(entries, 10);
            let mut h = Hash::new();
            let mut m: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
            for (op, k, v) in ops {
                let key = format!("k{}", k % 1500).into_bytes();
                match op {
                    0 | 1 => {
                        let created = h.set(&key, v.as_bytes(), &l);
                        prop_assert_eq!(created, m.insert(key, v.into_bytes()).is_none());
                    }
                    _ => prop_assert_eq!(h.remove(&key), m.remove(&key).is_some()),
                }
                prop_assert_eq!(h.len(), m.len());
            }
            prop_assert_eq!(to_map(&h), m.clone());
            for (k, v) in &m {
                let got = h.get(k).map(Elem::to_vec);
                prop_assert_eq!(got.as_ref(), Some(v));
            }
            let mut scanned: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
            let mut cursor = 0;
            loop {
                cursor = h.scan(cursor, 7, |k, v| {
                    scanned.insert(k.to_vec(), v.to_vec());
                });
                if cursor == 0 { break; }
            }
            prop_assert_eq!(scanned, m);
        }
    }
}
