//! A set. Pure data structure: no RESP, no I/O.
//!
//! Two encodings as Redis 7.0, a third as Redis 7.2:
//! - `intset`: a sorted `Vec<i64>` (binary search) while every member is
//!   the canonical decimal form of an i64 and there are at most
//!   `set-max-intset-entries` of them;
//! - `listpack` (only when [`EncodingLimits::sets_as_7_2`], under
//!   `redis-version 7.4.1`): [`Pack`], members in the order they were
//!   added, searched linearly, while there are at most
//!   `set-max-listpack-entries` of at most `set-max-listpack-value` bytes;
//!   Redis 7.2's conversions are followed step by step, since they decide
//!   both OBJECT ENCODING and the order SMEMBERS answers in;
//! - `hashtable`: [`Table`], an open-addressing hash table of boxed
//!   members.
//!
//! Why our own table rather than `hashbrown`: SSCAN must return every
//! member present for the whole scan at least once while the table grows
//! or shrinks between calls, and SPOP/SRANDMEMBER want a uniformly random
//! member in O(1). Both need the bucket layout to be ours: linear probing
//! with a power-of-two size keeps every member in the contiguous run that
//! starts at its home bucket (`hash & mask`), so Redis's reverse-binary
//! cursor over home buckets works unchanged (a home bucket at size 2^k
//! splits into two at 2^(k+1), and the cursor order visits both after the
//! one it came from); and picking random slots until one is occupied is
//! uniform over members. Deletion shifts entries back (no tombstones), so
//! lookups never wade through deleted slots. A slot is a 16-byte
//! `Option<Box<[u8]>>` (the length lives in the fat pointer, so most probe
//! mismatches never touch the member's bytes), against Redis's 24-byte
//! dictEntry plus 8-byte bucket pointer per member.

use std::sync::OnceLock;

use rand::Rng;

use super::list::{codec, Needle};
use super::value::EncodingLimits;

/// Redis's LISTPACK_MAX_SAFETY_SIZE: a listpack never grows past 1 GB.
const LISTPACK_SAFETY_LIMIT: usize = 1 << 30;

/// One process-wide hash seed: the same member must hash the same in
/// every SSCAN call, and a random seed keeps collisions unpredictable.
fn seed() -> &'static ahash::RandomState {
    static SEED: OnceLock<ahash::RandomState> = OnceLock::new();
    SEED.get_or_init(ahash::RandomState::new)
}

#[inline]
pub fn hash(b: &[u8]) -> u64 {
    seed().hash_one(b)
}

/// Something stored in a [`Table`], found by its key bytes.
pub trait Keyed {
    fn key(&self) -> &[u8];
}

impl Keyed for Box<[u8]> {
    #[inline]
    fn key(&self) -> &[u8] {
        self
    }
}

/// Open-addressing hash table with linear probing, power-of-two size,
/// backward-shift deletion, load kept between 1/8 and 3/4. See the module
/// comment for why.
#[derive(Clone)]
pub struct Table<T> {
    slots: Box<[Option<T>]>,
    len: usize,
}

const MIN_SLOTS: usize = 4;

impl<T: Keyed> Default for Table<T> {
    fn default() -> Self {
        Table::new()
    }
}

impl<T: Keyed> Table<T> {
    pub fn new() -> Table<T> {
        Table {
            slots: Box::new([]),
            len: 0,
        }
    }

    pub fn with_capacity(n: usize) -> Table<T> {
        let mut t = Table::new();
        if n > 0 {
            t.resize(Self::slots_for(n));
        }
        t
    }

    /// Smallest power of two that holds `n` entries at <= 3/4 load.
    fn slots_for(n: usize) -> usize {
        (n + n / 3 + 1).next_power_of_two().max(MIN_SLOTS)
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of slots (a power of two, or 0).
    #[inline]
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len().wrapping_sub(1)
    }

    #[inline]
    fn home(&self, key: &[u8]) -> usize {
        hash(key) as usize & self.mask()
    }

    /// The slot holding `key`.
    #[inline]
    pub fn find(&self, key: &[u8]) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let mask = self.mask();
        let mut i = hash(key) as usize & mask;
        loop {
            match &self.slots[i] {
                None => return None,
                Some(e) => {
                    let k = e.key();
                    if k.len() == key.len() && k == key {
                        return Some(i);
                    }
                }
            }
            i = (i + 1) & mask;
        }
    }

    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<&T> {
        self.find(key).and_then(|i| self.slots[i].as_ref())
    }

    #[inline]
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut T> {
        self.find(key).and_then(|i| self.slots[i].as_mut())
    }

    #[inline]
    pub fn contains(&self, key: &[u8]) -> bool {
        self.find(key).is_some()
    }

    /// The entry in slot `i`, if occupied.
    #[inline]
    pub fn slot(&self, i: usize) -> Option<&T> {
        self.slots.get(i).and_then(|s| s.as_ref())
    }

    #[inline]
    pub fn slot_mut(&mut self, i: usize) -> Option<&mut T> {
        self.slots.get_mut(i).and_then(|s| s.as_mut())
    }

    /// Inserts an entry whose key is known to be absent.
    pub fn insert_new(&mut self, item: T) {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            let n = (self.slots.len() * 2).max(MIN_SLOTS);
            self.resize(n);
        }
        self.place(item);
        self.len += 1;
    }

    fn place(&mut self, item: T) {
        let mask = self.mask();
        let mut i = hash(item.key()) as usize & mask;
        while self.slots[i].is_some() {
            i = (i + 1) & mask;
        }
        self.slots[i] = Some(item);
    }

    fn resize(&mut self, n: usize) {
        let old = std::mem::replace(&mut self.slots, (0..n).map(|_| None).collect());
        for item in old.into_vec().into_iter().flatten() {
            self.place(item);
        }
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<T> {
        let i = self.find(key)?;
        self.remove_at(i)
    }

    /// Removes the entry in slot `i`, shifting later entries of its run
    /// back so no tombstone is left, then shrinks a sparse table.
    pub fn remove_at(&mut self, i: usize) -> Option<T> {
        let item = self.slots.get_mut(i)?.take()?;
        self.len -= 1;
        let mask = self.mask();
        let mut hole = i;
        let mut j = (i + 1) & mask;
        loop {
            let home = match &self.slots[j] {
                None => break,
                Some(e) => self.home(e.key()),
            };
            // Move j into the hole unless its home lies cyclically in
            // (hole, j]: then it must stay at or after its home.
            let stays = if hole <= j {
                hole < home && home <= j
            } else {
                hole < home || home <= j
            };
            if !stays {
                self.slots[hole] = self.slots[j].take();
                hole = j;
            }
            j = (j + 1) & mask;
        }
        self.maybe_shrink();
        Some(item)
    }

    fn maybe_shrink(&mut self) {
        let cap = self.slots.len();
        if self.len == 0 {
            self.slots = Box::new([]);
        } else if cap > MIN_SLOTS * 4 && self.len * 8 < cap {
            self.resize(Self::slots_for(self.len * 2));
        }
    }

    /// A uniformly random occupied slot: random slots until one is taken
    /// (expected <= 8 tries, the load never falling below 1/8).
    pub fn random_slot(&self, rng: &mut impl Rng) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let mask = self.mask();
        loop {
            let i = rng.gen::<usize>() & mask;
            if self.slots[i].is_some() {
                return Some(i);
            }
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.slots.iter().flatten()
    }

    pub fn drain(self) -> impl Iterator<Item = T> {
        self.slots.into_vec().into_iter().flatten()
    }

    /// One step of a Redis-style scan: calls `f` for every entry whose
    /// home bucket is `cursor & mask`, and returns the next cursor
    /// (reverse-binary increment; 0 when the scan is complete).
    pub fn scan_step(&self, cursor: u64, mut f: impl FnMut(&T)) -> u64 {
        if self.slots.is_empty() {
            return 0;
        }
        let mask = self.mask();
        let bucket = cursor as usize & mask;
        let mut i = bucket;
        while let Some(e) = &self.slots[i] {
            if self.home(e.key()) == bucket {
                f(e);
            }
            i = (i + 1) & mask;
            if i == bucket {
                break;
            }
        }
        let mut v = cursor | !(mask as u64);
        v = v.reverse_bits().wrapping_add(1).reverse_bits();
        v
    }
}

/// A member as stored: integers of an intset are not bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem<'a> {
    Int(i64),
    Bytes(&'a [u8]),
}

impl Elem<'_> {
    /// Calls `f` with the member's bytes (integers formatted on the stack).
    #[inline]
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match *self {
            Elem::Int(n) => f(itoa::Buffer::new().format(n).as_bytes()),
            Elem::Bytes(b) => f(b),
        }
    }

    pub fn to_vec(&self) -> Vec<u8> {
        self.with_bytes(|b| b.to_vec())
    }
}

/// Redis 7.2's listpack set: members in the order they were added, as
/// codec entries (integers as integers) in one buffer.
#[derive(Clone, Default)]
pub struct Pack {
    buf: Vec<u8>,
    count: usize,
}

impl Pack {
    /// Offset and size of the member `needle` matches.
    fn find(&self, needle: &Needle) -> Option<(usize, usize)> {
        let mut pos = 0;
        while pos < self.buf.len() {
            let (e, size) = codec::decode(&self.buf, pos);
            if needle.matches(e) {
                return Some((pos, size));
            }
            pos += size;
        }
        None
    }

    /// Offset and size of the `i`th member.
    fn nth(&self, i: usize) -> Option<(usize, usize)> {
        let mut pos = 0;
        for _ in 0..i {
            if pos >= self.buf.len() {
                return None;
            }
            pos += codec::entry_size(&self.buf, pos);
        }
        (pos < self.buf.len()).then(|| (pos, codec::entry_size(&self.buf, pos)))
    }

    fn push(&mut self, m: &[u8]) {
        let enc = codec::encode(m);
        let at = self.buf.len();
        self.buf.reserve_exact(enc.size);
        self.buf.resize(at + enc.size, 0);
        enc.write(&mut self.buf[at..]);
        self.count += 1;
    }

    fn remove_at(&mut self, pos: usize, size: usize) {
        self.buf.drain(pos..pos + size);
        self.count -= 1;
        if self.buf.capacity() > 2 * self.buf.len() + 64 {
            self.buf.shrink_to_fit();
        }
    }

    fn elem_at(&self, pos: usize) -> Elem<'_> {
        from_codec(codec::decode(&self.buf, pos).0)
    }

    /// Whether `m` (`len` bytes) may join: Redis's setTypeAddAux check.
    fn has_room(&self, len: usize, lim: &EncodingLimits) -> bool {
        self.count < lim.set_max_listpack_entries
            && len <= lim.set_max_listpack_value
            && self.buf.len() + len < LISTPACK_SAFETY_LIMIT
    }
}

#[inline]
fn from_codec(e: super::list::Elem<'_>) -> Elem<'_> {
    match e {
        super::list::Elem::Int(n) => Elem::Int(n),
        super::list::Elem::Str(b) => Elem::Bytes(b),
    }
}

/// `set-max-intset-entries`, capped as Redis caps it (intsetMaxEntries).
fn max_intset(lim: &EncodingLimits) -> usize {
    lim.set_max_intset_entries.min(1 << 30)
}

/// A set value.
#[derive(Clone)]
pub enum Set {
    /// Sorted, distinct.
    Ints(Vec<i64>),
    Pack(Pack),
    Hash(Table<Box<[u8]>>),
}

impl Default for Set {
    fn default() -> Self {
        Set::Ints(Vec::new())
    }
}

impl std::fmt::Debug for Set {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Set({}, {} members)", self.encoding(), self.len())
    }
}

impl PartialEq for Set {
    fn eq(&self, other: &Set) -> bool {
        self.len() == other.len() && self.iter().all(|e| other.contains_elem(e))
    }
}

impl Set {
    pub fn new() -> Set {
        Set::default()
    }

    /// An empty set for `hint` members of which `first` is one: Redis
    /// 7.2's setTypeCreate (an intset for an integer, a listpack while the
    /// hint fits one, else a table sized for it). As Redis 7.0, always an
    /// intset first.
    pub fn create(first: &[u8], hint: usize, lim: &EncodingLimits) -> Set {
        let intset = resp::parse_i64(first).is_some() && hint <= max_intset(lim);
        if !lim.sets_as_7_2 || intset {
            Set::new()
        } else if hint <= lim.set_max_listpack_entries {
            Set::Pack(Pack::default())
        } else {
            Set::Hash(Table::with_capacity(hint))
        }
    }

    /// Before `hint` members are added (Redis 7.2's setTypeMaybeConvert):
    /// a compact set the hint would take past its limit becomes a table,
    /// even if the members turn out to be there already.
    pub fn expect(&mut self, hint: usize, lim: &EncodingLimits) {
        let over = match self {
            Set::Pack(_) => hint > lim.set_max_listpack_entries,
            Set::Ints(_) => hint > max_intset(lim),
            Set::Hash(_) => false,
        };
        if lim.sets_as_7_2 && over {
            self.convert_to_hash(hint);
        }
    }

    pub fn encoding(&self) -> &'static str {
        match self {
            Set::Ints(_) => "intset",
            Set::Pack(_) => "listpack",
            Set::Hash(_) => "hashtable",
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Set::Ints(v) => v.len(),
            Set::Pack(p) => p.count,
            Set::Hash(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Redis's setTypeConvertAndExpand to a table for `cap` members.
    fn convert_to_hash(&mut self, cap: usize) {
        if matches!(self, Set::Hash(_)) {
            return;
        }
        let mut t = Table::with_capacity(cap.max(self.len()));
        for e in self.iter() {
            t.insert_new(e.with_bytes(|b| Box::from(b)));
        }
        *self = Set::Hash(t);
    }

    /// An intset a string of `len` bytes joins (Redis 7.2's setTypeAddAux):
    /// a listpack if every member, sized as the longest integer, fits one.
    fn ints_fit_pack(v: &[i64], len: usize, lim: &EncodingLimits) -> bool {
        let digits = |n: Option<&i64>| n.map_or(0, |n| itoa::Buffer::new().format(*n).len());
        let longest = digits(v.first()).max(digits(v.last()));
        v.len() < lim.set_max_listpack_entries
            && len <= lim.set_max_listpack_value
            && longest <= lim.set_max_listpack_value
            && (longest + 2) * v.len() + len < LISTPACK_SAFETY_LIMIT
    }

    /// Adds `m`; false if it was already there.
    pub fn add(&mut self, m: &[u8], lim: &EncodingLimits) -> bool {
        match self {
            Set::Ints(v) => match resp::parse_i64(m) {
                Some(n) => match v.binary_search(&n) {
                    Ok(_) => return false,
                    Err(pos) => {
                        if v.len() < lim.set_max_intset_entries {
                            v.insert(pos, n);
                            return true;
                        }
                        let cap = v.len() + 1;
                        self.convert_to_hash(cap);
                    }
                },
                None if lim.sets_as_7_2 && Set::ints_fit_pack(v, m.len(), lim) => {
                    let mut p = Pack::default();
                    p.buf.reserve_exact(v.len() * 3 + m.len() + 2);
                    for n in v.iter() {
                        p.push(itoa::Buffer::new().format(*n).as_bytes());
                    }
                    p.push(m);
                    *self = Set::Pack(p);
                    return true;
                }
                None => {
                    let cap = v.len() + 1;
                    self.convert_to_hash(cap);
                }
            },
            Set::Pack(p) => {
                if p.find(&Needle::new(m)).is_some() {
                    return false;
                }
                if p.has_room(m.len(), lim) {
                    p.push(m);
                    return true;
                }
                let cap = p.count + 1;
                self.convert_to_hash(cap);
            }
            Set::Hash(_) => {}
        }
        match self {
            Set::Hash(t) => {
                if t.contains(m) {
                    false
                } else {
                    t.insert_new(Box::from(m));
                    true
                }
            }
            _ => false,
        }
    }

    /// Adds an element taken from another set.
    pub fn add_elem(&mut self, e: Elem, lim: &EncodingLimits) -> bool {
        match (self, e) {
            (Set::Ints(v), Elem::Int(n))
                if v.len() < lim.set_max_intset_entries || v.binary_search(&n).is_ok() =>
            {
                match v.binary_search(&n) {
                    Ok(_) => false,
                    Err(pos) => {
                        v.insert(pos, n);
                        true
                    }
                }
            }
            (s, e) => e.with_bytes(|b| s.add(b, lim)),
        }
    }

    /// A set whose members are all integers becomes an intset if it fits
    /// one (Redis 7.2's maybeConvertToIntset, after SINTERSTORE).
    pub fn ints_if_all_ints(&mut self, lim: &EncodingLimits) {
        if matches!(self, Set::Ints(_)) || self.len() > max_intset(lim) {
            return;
        }
        let mut ints = Vec::with_capacity(self.len());
        for e in self.iter() {
            match e {
                Elem::Int(n) => ints.push(n),
                Elem::Bytes(b) => match resp::parse_i64(b) {
                    Some(n) => ints.push(n),
                    None => return,
                },
            }
        }
        ints.sort_unstable();
        *self = Set::Ints(ints);
    }

    pub fn remove(&mut self, m: &[u8]) -> bool {
        match self {
            Set::Ints(v) => match resp::parse_i64(m).map(|n| v.binary_search(&n)) {
                Some(Ok(pos)) => {
                    v.remove(pos);
                    true
                }
                _ => false,
            },
            Set::Pack(p) => match p.find(&Needle::new(m)) {
                Some((pos, size)) => {
                    p.remove_at(pos, size);
                    true
                }
                None => false,
            },
            Set::Hash(t) => t.remove(m).is_some(),
        }
    }

    pub fn contains(&self, m: &[u8]) -> bool {
        match self {
            Set::Ints(v) => resp::parse_i64(m).is_some_and(|n| v.binary_search(&n).is_ok()),
            Set::Pack(p) => p.find(&Needle::new(m)).is_some(),
            Set::Hash(t) => t.contains(m),
        }
    }

    pub fn contains_elem(&self, e: Elem) -> bool {
        match (self, e) {
            (Set::Ints(v), Elem::Int(n)) => v.binary_search(&n).is_ok(),
            (s, e) => e.with_bytes(|b| s.contains(b)),
        }
    }

    pub fn iter(&self) -> SetIter<'_> {
        match self {
            Set::Ints(v) => SetIter::Ints(v.iter()),
            Set::Pack(p) => SetIter::Pack(&p.buf, 0),
            Set::Hash(t) => SetIter::Hash(t.slots.iter()),
        }
    }

    /// A uniformly random member's position (see [`Set::at`]).
    pub fn random_pos(&self, rng: &mut impl Rng) -> Option<usize> {
        match self {
            Set::Ints(v) if v.is_empty() => None,
            Set::Ints(v) => Some(rng.gen_range(0..v.len())),
            Set::Pack(p) if p.count == 0 => None,
            Set::Pack(p) => Some(rng.gen_range(0..p.count)),
            Set::Hash(t) => t.random_slot(rng),
        }
    }

    /// The member at a position returned by [`Set::random_pos`].
    pub fn at(&self, pos: usize) -> Option<Elem<'_>> {
        match self {
            Set::Ints(v) => v.get(pos).map(|&n| Elem::Int(n)),
            Set::Pack(p) => p.nth(pos).map(|(at, _)| p.elem_at(at)),
            Set::Hash(t) => t.slot(pos).map(|b| Elem::Bytes(b)),
        }
    }

    pub fn random(&self, rng: &mut impl Rng) -> Option<Elem<'_>> {
        self.random_pos(rng).and_then(|p| self.at(p))
    }

    /// Removes and returns a uniformly random member.
    pub fn pop_random(&mut self, rng: &mut impl Rng) -> Option<Vec<u8>> {
        let pos = self.random_pos(rng)?;
        self.take_at(pos)
    }

    /// Removes and returns the member at `pos` (a [`Set::random_pos`]).
    pub fn take_at(&mut self, pos: usize) -> Option<Vec<u8>> {
        match self {
            Set::Ints(v) => (pos < v.len()).then(|| {
                itoa::Buffer::new()
                    .format(v.remove(pos))
                    .as_bytes()
                    .to_vec()
            }),
            Set::Pack(p) => {
                let (at, size) = p.nth(pos)?;
                let m = p.elem_at(at).to_vec();
                p.remove_at(at, size);
                Some(m)
            }
            Set::Hash(t) => t.remove_at(pos).map(|b| b.into_vec()),
        }
    }

    /// One SSCAN call: intsets and listpacks answer everything at once
    /// (cursor 0, as Redis's compact encodings do); tables visit home
    /// buckets until `count` members were found or `10 * count` buckets
    /// were visited.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(Elem)) -> u64 {
        match self {
            Set::Ints(_) | Set::Pack(_) => {
                for e in self.iter() {
                    f(e);
                }
                0
            }
            Set::Hash(t) => {
                let mut cursor = cursor;
                let mut found = 0;
                let mut steps = count.saturating_mul(10);
                loop {
                    cursor = t.scan_step(cursor, |b| {
                        found += 1;
                        f(Elem::Bytes(b));
                    });
                    steps -= 1;
                    if cursor == 0 || found >= count || steps == 0 {
                        return cursor;
                    }
                }
            }
        }
    }

    /// Approximate heap bytes (for MEMORY USAGE-style estimates).
    pub fn heap_size(&self) -> usize {
        match self {
            Set::Ints(v) => v.capacity() * 8,
            Set::Pack(p) => p.buf.capacity(),
            Set::Hash(t) => t.capacity() * 16 + t.iter().map(|b| b.len().max(8)).sum::<usize>(),
        }
    }
}

pub enum SetIter<'a> {
    Ints(std::slice::Iter<'a, i64>),
    /// A listpack's buffer and the offset of the next entry.
    Pack(&'a [u8], usize),
    Hash(std::slice::Iter<'a, Option<Box<[u8]>>>),
}

impl<'a> Iterator for SetIter<'a> {
    type Item = Elem<'a>;

    #[inline]
    fn next(&mut self) -> Option<Elem<'a>> {
        match self {
            SetIter::Ints(it) => it.next().map(|&n| Elem::Int(n)),
            SetIter::Pack(buf, pos) => {
                if *pos >= buf.len() {
                    return None;
                }
                let (e, size) = codec::decode(buf, *pos);
                *pos += size;
                Some(from_codec(e))
            }
            SetIter::Hash(it) => it.find_map(|s| s.as_deref().map(Elem::Bytes)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Redis 7.0's encodings with `set-max-intset-entries` `max`.
    fn ints(max: usize) -> EncodingLimits {
        EncodingLimits {
            set_max_intset_entries: max,
            ..Default::default()
        }
    }

    #[test]
    fn intset_then_hashtable() {
        let mut s = Set::new();
        assert!(s.add(b"3", &ints(4)));
        assert!(s.add(b"1", &ints(4)));
        assert!(!s.add(b"3", &ints(4)));
        assert_eq!(s.encoding(), "intset");
        let v: Vec<_> = s.iter().collect();
        assert_eq!(v, vec![Elem::Int(1), Elem::Int(3)]);
        assert!(s.add(b"2", &ints(4)));
        assert!(s.add(b"4", &ints(4)));
        assert_eq!(s.encoding(), "intset");
        assert!(s.add(b"5", &ints(4)));
        assert_eq!(s.encoding(), "hashtable");
        assert_eq!(s.len(), 5);
        assert!(s.contains(b"1") && s.contains(b"5") && !s.contains(b"6"));
        let mut t = Set::new();
        assert!(t.add(b"01", &ints(512)));
        assert_eq!(t.encoding(), "hashtable");
        assert!(s.remove(b"5") && !s.remove(b"5"));
        assert_eq!(s.len(), 4);
    }

    #[test]
    fn table_insert_remove_many() {
        let mut t: Table<Box<[u8]>> = Table::new();
        let mut model = HashSet::new();
        let mut rng = rand::thread_rng();
        for round in 0..20_000u32 {
            let k = format!("k{}", rng.gen_range(0..3000)).into_bytes();
            if round % 3 == 0 {
                assert_eq!(t.remove(&k).is_some(), model.remove(&k));
            } else if !t.contains(&k) {
                t.insert_new(k.clone().into_boxed_slice());
                assert!(model.insert(k));
            }
            assert_eq!(t.len(), model.len());
        }
        for k in &model {
            assert!(t.contains(k));
        }
        let all: HashSet<Vec<u8>> = t.iter().map(|b| b.to_vec()).collect();
        assert_eq!(all, model);
        // Drain through random pops.
        let mut s = Set::Hash(t);
        while let Some(m) = s.pop_random(&mut rng) {
            assert!(model.remove(&m));
        }
        assert!(model.is_empty());
    }

    #[test]
    fn scan_returns_stable_members_while_growing_and_shrinking() {
        let mut s = Set::new();
        for i in 0..1000 {
            s.add(format!("m{i}").as_bytes(), &ints(0));
        }
        let mut seen = HashSet::new();
        let mut cursor = 0;
        let mut round = 0;
        loop {
            cursor = s.scan(cursor, 5, |e| {
                seen.insert(e.to_vec());
            });
            // Grow for a while, then shrink (removing only added members).
            if round < 300 {
                for j in 0..20 {
                    s.add(format!("new{round}-{j}").as_bytes(), &ints(0));
                }
            } else {
                for j in 0..20 {
                    s.remove(format!("new{}-{j}", round - 300).as_bytes());
                }
            }
            round += 1;
            if cursor == 0 {
                break;
            }
        }
        for i in 0..1000 {
            assert!(seen.contains(format!("m{i}").as_bytes()), "m{i}");
        }
    }

    #[test]
    fn random_is_roughly_uniform() {
        let mut s = Set::new();
        for i in 0..10 {
            s.add(format!("x{i}").as_bytes(), &ints(0));
        }
        let mut counts = std::collections::HashMap::new();
        let mut rng = rand::thread_rng();
        for _ in 0..10_000 {
            let e = s.random(&mut rng).map(|e| e.to_vec());
            *counts.entry(e).or_insert(0) += 1;
        }
        assert_eq!(counts.len(), 10);
        assert!(counts.values().all(|&c| c > 700 && c < 1300));
    }

    fn as_7_2(entries: usize, value: usize, ints: usize) -> EncodingLimits {
        EncodingLimits {
            set_max_intset_entries: ints,
            set_max_listpack_entries: entries,
            set_max_listpack_value: value,
            sets_as_7_2: true,
            ..Default::default()
        }
    }

    fn members(s: &Set) -> Vec<Vec<u8>> {
        s.iter().map(|e| e.to_vec()).collect()
    }

    #[test]
    fn listpack_keeps_insertion_order_and_converts_as_redis_7_2() {
        let lim = as_7_2(3, 5, 2);
        let mut s = Set::create(b"b", 1, &lim);
        assert_eq!(s.encoding(), "listpack");
        assert!(s.add(b"b", &lim) && s.add(b"7", &lim) && s.add(b"a", &lim));
        assert!(!s.add(b"7", &lim));
        assert_eq!(members(&s), [b"b".to_vec(), b"7".to_vec(), b"a".to_vec()]);
        assert!(s.remove(b"7") && s.contains(b"a") && !s.contains(b"7"));
        assert_eq!(members(&s), [b"b".to_vec(), b"a".to_vec()]);
        // Past set-max-listpack-value, then past the entries.
        let mut long = s.clone();
        assert!(long.add(b"abcdef", &lim));
        assert_eq!(long.encoding(), "hashtable");
        assert!(s.add(b"c", &lim) && s.add(b"d", &lim));
        assert_eq!((s.encoding(), s.len()), ("hashtable", 4));
        // An intset that meets a string: a listpack, integers first in
        // order, when the longest integer fits.
        let mut i = Set::create(b"5", 1, &lim);
        assert!(i.add(b"5", &lim) && i.add(b"-3", &lim));
        assert_eq!(i.encoding(), "intset");
        assert!(i.add(b"x", &lim));
        assert_eq!(i.encoding(), "listpack");
        assert_eq!(members(&i), [b"-3".to_vec(), b"5".to_vec(), b"x".to_vec()]);
        let mut big = Set::create(b"1", 1, &lim);
        assert!(big.add(b"123456", &lim) && big.add(b"x", &lim));
        assert_eq!(big.encoding(), "hashtable");
        // Size hints: more members announced than a listpack holds.
        let mut h = Set::create(b"a", 1, &lim);
        h.add(b"a", &lim);
        h.expect(4, &lim);
        assert_eq!((h.encoding(), h.len()), ("hashtable", 1));
        assert_eq!(Set::create(b"a", 4, &lim).encoding(), "hashtable");
        assert_eq!(Set::create(b"1", 3, &lim).encoding(), "listpack");
        // Redis 7.0's encodings never make a listpack.
        let old = ints(512);
        let mut o = Set::create(b"a", 1, &old);
        o.add(b"a", &old);
        assert_eq!(o.encoding(), "hashtable");
    }

    #[test]
    fn listpack_random_access_pops_every_member_once() {
        let lim = as_7_2(128, 64, 512);
        let mut s = Set::create(b"m0", 20, &lim);
        for i in 0..20 {
            s.add(format!("m{i}").as_bytes(), &lim);
        }
        let mut rng = rand::thread_rng();
        let mut seen = HashSet::new();
        while let Some(m) = s.pop_random(&mut rng) {
            assert!(seen.insert(m));
        }
        assert_eq!(seen.len(), 20);
        assert!(s.is_empty());
    }
}
