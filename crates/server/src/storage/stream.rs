//! A stream: entries ordered by ID, plus consumer groups. Pure data
//! structure: no RESP, no I/O.
//!
//! # Layout
//!
//! Entries live in **nodes** of up to `stream-node-max-entries` entries /
//! `stream-node-max-bytes` bytes, kept in a `BTreeMap` keyed by the ID of
//! the node's first entry (its *master ID*), as Redis keeps listpacks in a
//! radix tree. Inside a node entries are packed back to back in one byte
//! vector:
//!
//! ```text
//! entry   := flags:u8  ms-delta:varint  seq:varint  len:varint  payload[len]
//! payload := value*                           (SAMEFIELDS: the master's fields)
//!          | nfields:varint (field value)*    (otherwise)
//! field, value := len:varint bytes
//! ```
//!
//! Why this rather than a `BTreeMap<StreamId, Vec<(Vec<u8>, Vec<u8>)>>`:
//! a typical entry (`XADD s * sensor 7 temp 21.5`) would cost a 16-byte key,
//! a 24-byte `Vec` header, a heap block for the pairs and one per field and
//! value (each at least 8 bytes plus a 24-byte header), over 150 bytes and
//! five allocations. Packed, it costs about 15 bytes and no allocation of
//! its own: the ID is a delta against the master ID (usually 1-3 bytes),
//! and field names equal to the node's first entry's (the common case: a
//! stream's entries share a schema) are not stored at all (the
//! `SAMEFIELDS` flag, as Redis does). Lookups by ID cost a tree descent to
//! the node plus a scan of at most one node, skipping entries by their
//! length prefix.
//!
//! Deleting (XDEL, exact trimming inside a node) only sets the entry's
//! `DELETED` flag; a node whose entries are all deleted is dropped, and
//! whole nodes are dropped by trimming, exactly as Redis does. Node
//! boundaries matter to clients: `XADD/XTRIM ... ~` only removes whole
//! nodes, so a node is closed when the listpack *Redis* would have built
//! for it reaches the same limits: each node tracks the byte size of that
//! listpack ([`lp`]) and its live + deleted entry count, and the split rule
//! is Redis 7.0's `streamAppendItem`.
//!
//! Consumer groups keep their pending entries lists (PELs) in B-trees keyed
//! by ID; a pending entry names its consumer through a shared `Arc<[u8]>`
//! (the same allocation as the consumer's key in the group's map).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

/// A stream entry ID: milliseconds and sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    pub fn is_zero(self) -> bool {
        self == StreamId::MIN
    }

    /// The next ID, or `None` after the last possible one (Redis's
    /// `streamIncrID` failing).
    pub fn next(self) -> Option<StreamId> {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX {
                None
            } else {
                Some(StreamId::new(self.ms + 1, 0))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq + 1))
        }
    }

    /// The previous ID, or `None` before 0-0 (`streamDecrID` failing).
    pub fn prev(self) -> Option<StreamId> {
        if self.seq == 0 {
            if self.ms == 0 {
                None
            } else {
                Some(StreamId::new(self.ms - 1, u64::MAX))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq - 1))
        }
    }

    /// Writes `ms-seq` into `buf` and returns the written part.
    pub fn format<'b>(&self, buf: &'b mut [u8; 41]) -> &'b [u8] {
        let mut a = itoa::Buffer::new();
        let ms = a.format(self.ms).as_bytes();
        buf[..ms.len()].copy_from_slice(ms);
        let mut n = ms.len();
        buf[n] = b'-';
        n += 1;
        let seq = a.format(self.seq).as_bytes();
        buf[n..n + seq.len()].copy_from_slice(seq);
        n += seq.len();
        &buf[..n]
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// Node size limits (`stream-node-max-bytes`, `stream-node-max-entries`;
/// 0 = no limit of that kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLimits {
    pub max_bytes: usize,
    pub max_entries: usize,
}

impl Default for NodeLimits {
    fn default() -> Self {
        NodeLimits {
            max_bytes: 4096,
            max_entries: 100,
        }
    }
}

/// Redis's `STREAM_LISTPACK_MAX_SIZE`: the largest node, and the largest
/// total size of one entry's fields and values.
pub const LISTPACK_MAX_SIZE: usize = 1 << 30;

/// Byte sizes of Redis's listpack encoding, to split nodes where Redis does.
pub mod lp {
    /// Size of an integer element, back-length included.
    pub fn int(v: i64) -> usize {
        if (0..=127).contains(&v) {
            2
        } else if (-4096..=4095).contains(&v) {
            3
        } else if (-32768..=32767).contains(&v) {
            4
        } else if (-8_388_608..=8_388_607).contains(&v) {
            5
        } else if (i32::MIN as i64..=i32::MAX as i64).contains(&v) {
            6
        } else {
            10
        }
    }

    /// Size of a string element (stored as an integer when it is the
    /// canonical form of one), back-length included.
    pub fn string(s: &[u8]) -> usize {
        if s.len() <= 20 {
            if let Some(v) = resp::parse_i64(s) {
                return int(v);
            }
        }
        let l = s.len();
        let enc = if l <= 63 {
            1 + l
        } else if l <= 4095 {
            2 + l
        } else {
            5 + l
        };
        enc + backlen(enc)
    }

    fn backlen(l: usize) -> usize {
        if l <= 127 {
            1
        } else if l < 16383 {
            2
        } else if l < 2_097_151 {
            3
        } else if l < 268_435_455 {
            4
        } else {
            5
        }
    }

    /// Listpack header (total bytes + element count) and end byte.
    pub const OVERHEAD: usize = 7;
}

const FLAG_DELETED: u8 = 1;
const FLAG_SAMEFIELDS: u8 = 2;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a varint at `*pos`. The buffers are only ever written by this
/// module, so a short read cannot happen; it yields 0 rather than panic.
#[inline]
fn get_varint(buf: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    while let Some(&b) = buf.get(*pos) {
        *pos += 1;
        v |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            break;
        }
        shift += 7;
    }
    v
}

#[inline]
fn get_bytes<'a>(buf: &'a [u8], pos: &mut usize) -> &'a [u8] {
    let n = get_varint(buf, pos) as usize;
    let start = (*pos).min(buf.len());
    let end = (start + n).min(buf.len());
    *pos = end;
    &buf[start..end]
}

/// One node: entries packed as described in the module header.
#[derive(Debug, Clone, PartialEq)]
struct Node {
    /// The master entry's fields: `nfields (len bytes)*`.
    master: Box<[u8]>,
    data: Vec<u8>,
    live: u32,
    deleted: u32,
    /// ID and offset of the last entry, deleted or not.
    last: StreamId,
    last_off: u32,
    /// Size of Redis's listpack for this node, without the live and
    /// deleted counters (which change size as they grow).
    lp_body: usize,
}

impl Node {
    fn lp_bytes(&self) -> usize {
        self.lp_body + lp::int(self.live as i64) + lp::int(self.deleted as i64)
    }

    fn master_fields(&self) -> MasterFields<'_> {
        let mut pos = 0;
        let n = get_varint(&self.master, &mut pos) as usize;
        MasterFields {
            buf: &self.master,
            pos,
            left: n,
        }
    }

    fn master_count(&self) -> usize {
        let mut pos = 0;
        get_varint(&self.master, &mut pos) as usize
    }

    /// Decodes the entry at `pos`; returns it and the next entry's offset.
    fn entry_at<'a>(&'a self, master_id: StreamId, pos: usize) -> (RawEntry<'a>, usize) {
        let d = &self.data;
        let mut p = pos;
        let flags = d.get(p).copied().unwrap_or(0);
        p += 1;
        let ms_delta = get_varint(d, &mut p);
        let seq = get_varint(d, &mut p);
        let id = if ms_delta == 0 {
            StreamId::new(master_id.ms, master_id.seq.wrapping_add(seq))
        } else {
            StreamId::new(master_id.ms.wrapping_add(ms_delta), seq)
        };
        let len = get_varint(d, &mut p) as usize;
        let start = p.min(d.len());
        let end = (p + len).min(d.len());
        (
            RawEntry {
                id,
                flags,
                flags_at: pos,
                payload: &d[start..end],
            },
            end,
        )
    }

    /// Offsets of every entry, for backward iteration.
    fn offsets(&self, master_id: StreamId) -> Vec<usize> {
        let mut v = Vec::with_capacity((self.live + self.deleted) as usize);
        let mut p = 0;
        while p < self.data.len() {
            v.push(p);
            p = self.entry_at(master_id, p).1;
        }
        v
    }

    /// Finds the entry `id` (deleted or not): its flags offset and flags.
    fn find(&self, master_id: StreamId, id: StreamId) -> Option<(usize, u8)> {
        if id > self.last {
            return None;
        }
        let mut p = 0;
        while p < self.data.len() {
            let (e, next) = self.entry_at(master_id, p);
            if e.id == id {
                return Some((e.flags_at, e.flags));
            }
            if e.id > id {
                return None;
            }
            p = next;
        }
        None
    }
}

struct RawEntry<'a> {
    id: StreamId,
    flags: u8,
    flags_at: usize,
    payload: &'a [u8],
}

struct MasterFields<'a> {
    buf: &'a [u8],
    pos: usize,
    left: usize,
}

impl<'a> Iterator for MasterFields<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        Some(get_bytes(self.buf, &mut self.pos))
    }
}

/// A live entry, borrowed from its node.
#[derive(Clone, Copy)]
pub struct Entry<'a> {
    pub id: StreamId,
    master: &'a [u8],
    payload: &'a [u8],
    same: bool,
}

impl<'a> Entry<'a> {
    fn new(node: &'a Node, raw: RawEntry<'a>) -> Entry<'a> {
        Entry {
            id: raw.id,
            master: &node.master,
            payload: raw.payload,
            same: raw.flags & FLAG_SAMEFIELDS != 0,
        }
    }

    /// Whether the entry's field names are its node's master fields (the
    /// values alone are stored: Redis's SAMEFIELDS flag).
    pub fn same_fields(&self) -> bool {
        self.same
    }

    /// Number of field-value pairs.
    pub fn len(&self) -> usize {
        let mut p = 0;
        if self.same {
            get_varint(self.master, &mut p) as usize
        } else {
            get_varint(self.payload, &mut p) as usize
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The field-value pairs, in insertion order.
    pub fn pairs(&self) -> Pairs<'a> {
        if self.same {
            let mut mp = 0;
            let n = get_varint(self.master, &mut mp) as usize;
            Pairs {
                fields: self.master,
                fpos: mp,
                values: self.payload,
                vpos: 0,
                left: n,
                same: true,
            }
        } else {
            let mut p = 0;
            let n = get_varint(self.payload, &mut p) as usize;
            Pairs {
                fields: self.payload,
                fpos: p,
                values: self.payload,
                vpos: 0,
                left: n,
                same: false,
            }
        }
    }
}

impl fmt::Debug for Entry<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pairs: Vec<_> = self
            .pairs()
            .map(|(a, b)| {
                (
                    String::from_utf8_lossy(a).into_owned(),
                    String::from_utf8_lossy(b).into_owned(),
                )
            })
            .collect();
        write!(f, "{} {:?}", self.id, pairs)
    }
}

/// One node as Redis lays it out (for the RDB writer): every entry, deleted
/// ones included, since Redis's node listpacks keep them until the whole
/// node goes.
pub struct NodeView<'a> {
    pub master_id: StreamId,
    pub live: u32,
    pub deleted: u32,
    /// The master entry's field names.
    pub fields: Vec<&'a [u8]>,
    /// Entries in ID order, with their deleted flag.
    pub entries: Vec<(Entry<'a>, bool)>,
}

/// Field-value pairs of an [`Entry`].
pub struct Pairs<'a> {
    fields: &'a [u8],
    fpos: usize,
    values: &'a [u8],
    vpos: usize,
    left: usize,
    same: bool,
}

impl<'a> Iterator for Pairs<'a> {
    type Item = (&'a [u8], &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        if self.same {
            let f = get_bytes(self.fields, &mut self.fpos);
            let v = get_bytes(self.values, &mut self.vpos);
            Some((f, v))
        } else {
            let f = get_bytes(self.fields, &mut self.fpos);
            let v = get_bytes(self.fields, &mut self.fpos);
            Some((f, v))
        }
    }
}

/// How to trim (XADD/XTRIM options).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrimStrategy {
    MaxLen(u64),
    MinId(StreamId),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trim {
    pub strategy: TrimStrategy,
    /// `~`: only whole nodes are removed.
    pub approx: bool,
    /// Most entries to remove, 0 = no limit.
    pub limit: u64,
}

/// Why an append failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendError {
    /// The ID is not greater than the last one.
    IdTooSmall,
    /// The fields and values exceed [`LISTPACK_MAX_SIZE`], or an `ms-*`
    /// sequence would overflow (Redis 7.0 replies the same error).
    TooLarge,
}

/// A pending entry: delivered to `consumer`, not yet acknowledged.
#[derive(Debug, Clone, PartialEq)]
pub struct Nack {
    pub consumer: Arc<[u8]>,
    /// Unix ms of the last delivery.
    pub delivery_time: u64,
    pub delivery_count: u64,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Consumer {
    /// Unix ms of the last interaction attempted (read or claim).
    pub seen_time: u64,
    /// Unix ms of the last interaction that delivered or claimed an entry
    /// (Redis 7.2's `active-time`), -1 for never.
    pub active_time: i64,
    pub pel: BTreeSet<StreamId>,
}

/// Redis's `SCG_INVALID_ENTRIES_READ`.
pub const INVALID_ENTRIES_READ: i64 = -1;

#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub last_id: StreamId,
    /// Logical count of entries read, or [`INVALID_ENTRIES_READ`].
    pub entries_read: i64,
    pub pel: BTreeMap<StreamId, Nack>,
    pub consumers: BTreeMap<Arc<[u8]>, Consumer>,
}

impl Group {
    pub fn new(last_id: StreamId, entries_read: i64) -> Group {
        Group {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
        }
    }

    /// The consumer's shared name, creating the consumer if needed (with
    /// `seen_time = now`). Returns the name and whether it was created.
    pub fn consumer_or_create(&mut self, name: &[u8], now: u64) -> (Arc<[u8]>, bool) {
        if let Some((k, _)) = self.consumers.get_key_value(name) {
            return (k.clone(), false);
        }
        let k: Arc<[u8]> = Arc::from(name);
        self.consumers.insert(
            k.clone(),
            Consumer {
                seen_time: now,
                active_time: -1,
                pel: BTreeSet::new(),
            },
        );
        (k, true)
    }

    /// Deletes a consumer and its pending entries; returns how many
    /// entries it had pending, or `None` if it did not exist.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let c = self.consumers.remove(name)?;
        for id in &c.pel {
            self.pel.remove(id);
        }
        Some(c.pel.len())
    }

    /// Records the delivery of `id` to `consumer` (which must exist): a
    /// new pending entry, or an existing one moved to `consumer` with its
    /// count reset to 1.
    pub fn deliver(&mut self, id: StreamId, consumer: &Arc<[u8]>, now: u64) {
        match self.pel.get_mut(&id) {
            Some(nack) => {
                if let Some(old) = self.consumers.get_mut(&nack.consumer) {
                    old.pel.remove(&id);
                }
                nack.consumer = consumer.clone();
                nack.delivery_time = now;
                nack.delivery_count = 1;
            }
            None => {
                self.pel.insert(
                    id,
                    Nack {
                        consumer: consumer.clone(),
                        delivery_time: now,
                        delivery_count: 1,
                    },
                );
            }
        }
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
            c.active_time = now as i64;
        }
    }

    /// Acknowledges `id`; true if it was pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        match self.pel.remove(&id) {
            Some(nack) => {
                if let Some(c) = self.consumers.get_mut(&nack.consumer) {
                    c.pel.remove(&id);
                }
                true
            }
            None => false,
        }
    }

    /// Moves the pending entry `id` to `consumer` (which must exist),
    /// creating it if absent. The caller then sets times and counts.
    pub fn assign(&mut self, id: StreamId, consumer: &Arc<[u8]>, now: u64) -> &mut Nack {
        let prev = self.pel.get(&id).map(|n| n.consumer.clone());
        if let Some(prev) = &prev {
            if prev != consumer {
                if let Some(c) = self.consumers.get_mut(prev) {
                    c.pel.remove(&id);
                }
            }
        }
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
            c.active_time = now as i64;
        }
        let nack = self.pel.entry(id).or_insert_with(|| Nack {
            consumer: consumer.clone(),
            delivery_time: now,
            delivery_count: 1,
        });
        nack.consumer = consumer.clone();
        nack
    }
}

/// A stream.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Stream {
    nodes: BTreeMap<StreamId, Node>,
    len: u64,
    pub last_id: StreamId,
    /// First live entry when the stream was last changed (0-0 if empty).
    pub first_id: StreamId,
    pub max_deleted_id: StreamId,
    pub entries_added: u64,
    pub groups: BTreeMap<Box<[u8]>, Group>,
}

impl Stream {
    pub fn new() -> Stream {
        Stream::default()
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Approximate heap bytes (for MEMORY USAGE-style estimates): node
    /// buffers plus per-node tree overhead, and the groups' PELs.
    pub fn heap_size(&self) -> usize {
        let per_node = std::mem::size_of::<(StreamId, Node)>() + 16;
        let nodes: usize = self
            .nodes
            .values()
            .map(|n| n.data.capacity() + n.master.len() + per_node)
            .sum();
        let per_nack = std::mem::size_of::<(StreamId, Nack)>() + 16 + 24;
        let groups: usize = self
            .groups
            .iter()
            .map(|(name, g)| {
                name.len()
                    + std::mem::size_of::<Group>()
                    + g.pel.len() * per_nack
                    + g.consumers
                        .keys()
                        .map(|c| c.len() + 16 + std::mem::size_of::<Consumer>())
                        .sum::<usize>()
            })
            .sum();
        nodes + groups
    }

    /// The nodes, first to last (see [`NodeView`]).
    pub fn nodes(&self) -> impl Iterator<Item = NodeView<'_>> + '_ {
        self.nodes.iter().map(|(mid, node)| {
            let mut entries = Vec::with_capacity((node.live + node.deleted) as usize);
            let mut p = 0;
            while p < node.data.len() {
                let (e, next) = node.entry_at(*mid, p);
                let deleted = e.flags & FLAG_DELETED != 0;
                entries.push((Entry::new(node, e), deleted));
                p = next;
            }
            NodeView {
                master_id: *mid,
                live: node.live,
                deleted: node.deleted,
                fields: node.master_fields().collect(),
                entries,
            }
        })
    }

    /// Number of nodes (Redis's `radix-tree-keys`).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Number of nodes Redis's radix tree would have for the node keys
    /// (`radix-tree-nodes`): the canonical compressed trie over the 16-byte
    /// big-endian keys, one node for the root, each branching point, each
    /// child of a branching point, and each key.
    pub fn radix_tree_nodes(&self) -> usize {
        let keys: Vec<[u8; 16]> = self
            .nodes
            .keys()
            .map(|id| {
                let mut k = [0u8; 16];
                k[..8].copy_from_slice(&id.ms.to_be_bytes());
                k[8..].copy_from_slice(&id.seq.to_be_bytes());
                k
            })
            .collect();
        let mut set: std::collections::HashSet<(usize, [u8; 16])> =
            std::collections::HashSet::new();
        let prefix = |k: &[u8; 16], n: usize| {
            let mut p = [0u8; 16];
            p[..n].copy_from_slice(&k[..n]);
            (n, p)
        };
        set.insert((0, [0u8; 16]));
        for k in &keys {
            set.insert((16, *k));
        }
        for w in keys.windows(2) {
            let l = w[0]
                .iter()
                .zip(w[1].iter())
                .take_while(|(a, b)| a == b)
                .count();
            // Branching point at depth l; children at depth l + 1.
            set.insert(prefix(&w[0], l));
            set.insert(prefix(&w[0], l + 1));
            set.insert(prefix(&w[1], l + 1));
        }
        set.len()
    }

    /// Appends an entry with `id` (which must be greater than the last ID)
    /// and the given field-value pairs (`pairs.len()` even, > 0).
    pub fn append(
        &mut self,
        id: StreamId,
        pairs: &[&[u8]],
        limits: NodeLimits,
    ) -> Result<(), AppendError> {
        if id <= self.last_id {
            return Err(AppendError::IdTooSmall);
        }
        let totelelen: usize = pairs.iter().map(|p| p.len()).sum();
        if totelelen > LISTPACK_MAX_SIZE {
            return Err(AppendError::TooLarge);
        }
        let nfields = pairs.len() / 2;
        let max_bytes = if limits.max_bytes == 0 || limits.max_bytes > LISTPACK_MAX_SIZE {
            LISTPACK_MAX_SIZE
        } else {
            limits.max_bytes
        };
        let mut use_tail = false;
        if let Some((_, node)) = self.nodes.iter().next_back() {
            use_tail = !(node.lp_bytes() + totelelen >= max_bytes
                || (limits.max_entries != 0
                    && (node.live + node.deleted) as usize >= limits.max_entries));
        }
        if !use_tail {
            // The tail node is full: give back its spare capacity, as
            // Redis's lpShrinkToFit.
            if let Some((_, node)) = self.nodes.iter_mut().next_back() {
                node.data.shrink_to_fit();
            }
            let mut master = Vec::new();
            put_varint(&mut master, nfields as u64);
            let mut lp_body = lp::OVERHEAD + lp::int(nfields as i64) + lp::int(0);
            for f in pairs.iter().step_by(2) {
                put_varint(&mut master, f.len() as u64);
                master.extend_from_slice(f);
                lp_body += lp::string(f);
            }
            self.nodes.insert(
                id,
                Node {
                    master: master.into_boxed_slice(),
                    data: Vec::new(),
                    live: 0,
                    deleted: 0,
                    last: id,
                    last_off: 0,
                    lp_body,
                },
            );
        }
        let Some((&master_id, node)) = self.nodes.iter_mut().next_back() else {
            return Err(AppendError::IdTooSmall);
        };
        let same = node.master_count() == nfields
            && node
                .master_fields()
                .zip(pairs.iter().step_by(2))
                .all(|(a, b)| a == *b);
        let flags = if same { FLAG_SAMEFIELDS } else { 0 };
        let ms_delta = id.ms - master_id.ms;
        let seq = if ms_delta == 0 {
            id.seq - master_id.seq
        } else {
            id.seq
        };
        let mut payload = Vec::with_capacity(totelelen + pairs.len() + 2);
        let mut lp_size = lp::int(flags as i64)
            + lp::int(ms_delta as i64)
            + lp::int(id.seq.wrapping_sub(master_id.seq) as i64);
        if same {
            for v in pairs.iter().skip(1).step_by(2) {
                put_varint(&mut payload, v.len() as u64);
                payload.extend_from_slice(v);
                lp_size += lp::string(v);
            }
            lp_size += lp::int(nfields as i64 + 3);
        } else {
            put_varint(&mut payload, nfields as u64);
            lp_size += lp::int(nfields as i64);
            for p in pairs {
                put_varint(&mut payload, p.len() as u64);
                payload.extend_from_slice(p);
                lp_size += lp::string(p);
            }
            lp_size += lp::int(2 * nfields as i64 + 4);
        }
        node.last_off = node.data.len() as u32;
        node.data.push(flags);
        put_varint(&mut node.data, ms_delta);
        put_varint(&mut node.data, seq);
        put_varint(&mut node.data, payload.len() as u64);
        node.data.extend_from_slice(&payload);
        node.live += 1;
        node.last = id;
        node.lp_body += lp_size;
        self.len += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.len == 1 {
            self.first_id = id;
        }
        Ok(())
    }

    /// The next automatic ID at `now_ms`: `now-0`, or the last ID plus one
    /// when the clock has not moved past it. `None` when the stream has
    /// used the last possible ID.
    pub fn next_auto_id(&self, now_ms: u64) -> Option<StreamId> {
        if now_ms > self.last_id.ms {
            Some(StreamId::new(now_ms, 0))
        } else {
            self.last_id.next()
        }
    }

    /// The live entry `id`.
    pub fn get(&self, id: StreamId) -> Option<Entry<'_>> {
        let (&mid, node) = self.nodes.range(..=id).next_back()?;
        let (pos, flags) = node.find(mid, id)?;
        if flags & FLAG_DELETED != 0 {
            return None;
        }
        Some(Entry::new(node, node.entry_at(mid, pos).0))
    }

    /// Live entries with `start <= id <= end`, in ID order.
    pub fn range(&self, start: StreamId, end: StreamId) -> Range<'_> {
        // The node holding `start` may begin before it.
        let first = self
            .nodes
            .range(..=start)
            .next_back()
            .map(|(k, _)| *k)
            .unwrap_or(start);
        Range {
            nodes: if start <= end {
                Some(self.nodes.range(first..=end))
            } else {
                None
            },
            cur: None,
            start,
            end,
        }
    }

    /// Live entries with `start <= id <= end`, last first.
    pub fn rev_range(&self, start: StreamId, end: StreamId) -> RevRange<'_> {
        let first = self
            .nodes
            .range(..=start)
            .next_back()
            .map(|(k, _)| *k)
            .unwrap_or(start);
        RevRange {
            nodes: if start <= end {
                Some(self.nodes.range(first..=end))
            } else {
                None
            },
            cur: None,
            start,
            end,
        }
    }

    pub fn first_entry(&self) -> Option<Entry<'_>> {
        self.range(StreamId::MIN, StreamId::MAX).next()
    }

    pub fn last_entry(&self) -> Option<Entry<'_>> {
        // The tail node's last entry is usually live: no backward scan.
        let (&mid, node) = self.nodes.iter().next_back()?;
        let (e, _) = node.entry_at(mid, node.last_off as usize);
        if e.flags & FLAG_DELETED == 0 {
            return Some(Entry::new(node, e));
        }
        self.rev_range(StreamId::MIN, StreamId::MAX).next()
    }

    /// ID of the last live entry, 0-0 if none (`streamLastValidID`).
    pub fn last_valid_id(&self) -> StreamId {
        self.last_entry().map(|e| e.id).unwrap_or(StreamId::MIN)
    }

    /// ID of the first entry, deleted or not, or the last possible ID
    /// when there is none (`streamGetEdgeID(s, 1, 0)`).
    pub fn first_id_with_tombstones(&self) -> StreamId {
        match self.nodes.iter().next() {
            Some((&mid, node)) => node.entry_at(mid, 0).0.id,
            None => StreamId::MAX,
        }
    }

    /// ID of the first live entry, or 0-0.
    fn first_valid_id(&self) -> StreamId {
        self.first_entry().map(|e| e.id).unwrap_or(StreamId::MIN)
    }

    /// Marks the live entry `id` deleted (dropping its node if it was the
    /// node's last live entry). Does not touch `first_id` or
    /// `max_deleted_id`: see [`Stream::delete_ids`].
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some((&mid, node)) = self.nodes.range_mut(..=id).next_back() else {
            return false;
        };
        let Some((pos, flags)) = node.find(mid, id) else {
            return false;
        };
        if flags & FLAG_DELETED != 0 {
            return false;
        }
        self.len -= 1;
        if node.live == 1 {
            self.nodes.remove(&mid);
        } else {
            node.data[pos] |= FLAG_DELETED;
            node.live -= 1;
            node.deleted += 1;
        }
        true
    }

    /// XDEL: deletes the given IDs, maintaining `first_id` and
    /// `max_deleted_id`. Returns how many were deleted.
    pub fn delete_ids(&mut self, ids: &[StreamId]) -> u64 {
        let mut deleted = 0;
        let mut first = false;
        for &id in ids {
            if self.delete(id) {
                if id == self.first_id {
                    first = true;
                }
                if id > self.max_deleted_id {
                    self.max_deleted_id = id;
                }
                deleted += 1;
            }
        }
        if deleted > 0 {
            if self.len == 0 {
                self.first_id = StreamId::MIN;
            } else if first {
                self.first_id = self.first_valid_id();
            }
        }
        deleted
    }

    /// Trims as Redis's `streamTrim`; returns the number of entries
    /// removed.
    pub fn trim(&mut self, t: &Trim) -> u64 {
        let mut deleted: u64 = 0;
        loop {
            if let TrimStrategy::MaxLen(max) = t.strategy {
                if self.len <= max {
                    break;
                }
            }
            let Some(mut slot) = self.nodes.first_entry() else {
                break;
            };
            let master_id = *slot.key();
            let node = slot.get_mut();
            let entries = node.live as u64;
            if t.limit != 0 && deleted + entries > t.limit {
                break;
            }
            let remove_node = match t.strategy {
                TrimStrategy::MaxLen(max) => self.len - entries >= max,
                TrimStrategy::MinId(min) => node.last < min,
            };
            if remove_node {
                slot.remove();
                self.len -= entries;
                deleted += entries;
                continue;
            }
            if t.approx {
                break;
            }
            // Mark entries of this node deleted until the condition holds.
            let mut p = 0;
            let mut from_node = 0u32;
            while p < node.data.len() {
                let (e, next) = node.entry_at(master_id, p);
                let stop = match t.strategy {
                    TrimStrategy::MaxLen(max) => self.len <= max,
                    TrimStrategy::MinId(min) => e.id >= min,
                };
                if stop {
                    break;
                }
                if e.flags & FLAG_DELETED == 0 {
                    let at = e.flags_at;
                    node.data[at] |= FLAG_DELETED;
                    from_node += 1;
                    self.len -= 1;
                }
                p = next;
            }
            node.live -= from_node;
            node.deleted += from_node;
            deleted += from_node as u64;
            if node.live == 0 {
                // Cannot happen (the node would have been removed whole),
                // but never keep an empty node.
                slot.remove();
            }
            break;
        }
        if self.len == 0 {
            self.first_id = StreamId::MIN;
        } else {
            self.first_id = self.first_valid_id();
        }
        deleted
    }

    /// Redis's `streamEstimateDistanceFromFirstEverEntry`: the logical
    /// read counter of `id`, or [`INVALID_ENTRIES_READ`].
    pub fn estimate_distance(&self, id: StreamId) -> i64 {
        if self.entries_added == 0 {
            return 0;
        }
        if self.len == 0 && id <= self.last_id {
            return self.entries_added as i64;
        }
        if id == self.last_id {
            return self.entries_added as i64;
        } else if id > self.last_id {
            return INVALID_ENTRIES_READ;
        }
        if self.max_deleted_id.is_zero() || self.max_deleted_id < self.first_id {
            if id < self.first_id {
                return (self.entries_added - self.len) as i64;
            } else if id == self.first_id {
                return (self.entries_added - self.len + 1) as i64;
            }
        }
        INVALID_ENTRIES_READ
    }

    /// `streamRangeHasTombstones(s, start, NULL)`.
    pub fn has_tombstones_from(&self, start: StreamId) -> bool {
        if self.len == 0 || self.max_deleted_id.is_zero() {
            return false;
        }
        if self.first_id > self.max_deleted_id {
            return false;
        }
        start <= self.max_deleted_id
    }

    /// A group's lag (entries not yet delivered), or `None` when it
    /// cannot be known (`streamReplyWithCGLag`).
    pub fn group_lag(&self, g: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if g.entries_read != INVALID_ENTRIES_READ && !self.has_tombstones_from(g.last_id) {
            return Some(self.entries_added as i64 - g.entries_read);
        }
        let read = self.estimate_distance(g.last_id);
        if read != INVALID_ENTRIES_READ {
            Some(self.entries_added as i64 - read)
        } else {
            None
        }
    }

    /// Advances `group`'s last delivered ID to `id` after delivering it
    /// (`streamReplyWithRange` with a group), keeping `entries_read`.
    pub fn advance_group(&mut self, group: &[u8], id: StreamId) {
        let has_tomb = self.has_tombstones_from(id);
        let estimate = self.estimate_distance(id);
        let added = self.entries_added;
        if let Some(g) = self.groups.get_mut(group) {
            if id > g.last_id {
                if g.entries_read != INVALID_ENTRIES_READ && !has_tomb {
                    g.entries_read += 1;
                } else if added != 0 {
                    g.entries_read = estimate;
                }
                g.last_id = id;
            }
        }
    }
}

impl Stream {
    /// Calls `emit` with each command of a sequence that rebuilds this
    /// stream under `key` (an AOF rewrite), as Redis's
    /// `rewriteStreamObject`: XADD per entry (or `XADD key MAXLEN 0 0-1 x
    /// y` for an empty stream), XSETID with ENTRIESADDED and MAXDELETEDID,
    /// then per group XGROUP CREATE with ENTRIESREAD, and per consumer
    /// either XCLAIM ... TIME RETRYCOUNT JUSTID FORCE for each pending
    /// entry or XGROUP CREATECONSUMER.
    pub fn rebuild_commands(&self, key: &[u8], mut emit: impl FnMut(&[&[u8]])) {
        let mut a = [0u8; 41];
        let mut b = [0u8; 41];
        let mut n1 = itoa::Buffer::new();
        let mut n2 = itoa::Buffer::new();
        if self.len == 0 {
            emit(&[b"XADD", key, b"MAXLEN", b"0", b"0-1", b"x", b"y"]);
        } else {
            for e in self.range(StreamId::MIN, StreamId::MAX) {
                let mut idb = [0u8; 41];
                let mut argv: Vec<&[u8]> = Vec::with_capacity(3 + 2 * e.len());
                argv.push(b"XADD");
                argv.push(key);
                argv.push(e.id.format(&mut idb));
                for (f, v) in e.pairs() {
                    argv.push(f);
                    argv.push(v);
                }
                emit(&argv);
            }
        }
        emit(&[
            b"XSETID",
            key,
            self.last_id.format(&mut a),
            b"ENTRIESADDED",
            n1.format(self.entries_added).as_bytes(),
            b"MAXDELETEDID",
            self.max_deleted_id.format(&mut b),
        ]);
        for (name, g) in &self.groups {
            emit(&[
                b"XGROUP",
                b"CREATE",
                key,
                name,
                g.last_id.format(&mut a),
                b"ENTRIESREAD",
                n1.format(g.entries_read).as_bytes(),
            ]);
            for (cname, c) in &g.consumers {
                if c.pel.is_empty() {
                    emit(&[b"XGROUP", b"CREATECONSUMER", key, name, cname]);
                    continue;
                }
                for id in &c.pel {
                    let Some(nack) = g.pel.get(id) else {
                        continue;
                    };
                    emit(&[
                        b"XCLAIM",
                        key,
                        name,
                        cname,
                        b"0",
                        id.format(&mut a),
                        b"TIME",
                        n1.format(nack.delivery_time).as_bytes(),
                        b"RETRYCOUNT",
                        n2.format(nack.delivery_count).as_bytes(),
                        b"JUSTID",
                        b"FORCE",
                    ]);
                }
            }
        }
    }
}

/// Forward iterator over live entries in an ID range.
pub struct Range<'a> {
    nodes: Option<std::collections::btree_map::Range<'a, StreamId, Node>>,
    cur: Option<(StreamId, &'a Node, usize)>,
    start: StreamId,
    end: StreamId,
}

impl<'a> Iterator for Range<'a> {
    type Item = Entry<'a>;
    fn next(&mut self) -> Option<Entry<'a>> {
        loop {
            if let Some((mid, node, pos)) = self.cur {
                if pos < node.data.len() {
                    let (e, next) = node.entry_at(mid, pos);
                    self.cur = Some((mid, node, next));
                    if e.id > self.end {
                        self.nodes = None;
                        self.cur = None;
                        return None;
                    }
                    if e.id < self.start || e.flags & FLAG_DELETED != 0 {
                        continue;
                    }
                    return Some(Entry::new(node, e));
                }
                self.cur = None;
            }
            let (mid, node) = self.nodes.as_mut()?.next()?;
            if node.last < self.start {
                continue;
            }
            self.cur = Some((*mid, node, 0));
        }
    }
}

/// Backward iterator over live entries in an ID range.
pub struct RevRange<'a> {
    nodes: Option<std::collections::btree_map::Range<'a, StreamId, Node>>,
    cur: Option<(StreamId, &'a Node, Vec<usize>)>,
    start: StreamId,
    end: StreamId,
}

impl<'a> Iterator for RevRange<'a> {
    type Item = Entry<'a>;
    fn next(&mut self) -> Option<Entry<'a>> {
        loop {
            if let Some((mid, node, offsets)) = &mut self.cur {
                let (mid, node): (StreamId, &'a Node) = (*mid, *node);
                if let Some(pos) = offsets.pop() {
                    let (e, _) = node.entry_at(mid, pos);
                    if e.id < self.start {
                        self.nodes = None;
                        self.cur = None;
                        return None;
                    }
                    if e.id > self.end || e.flags & FLAG_DELETED != 0 {
                        continue;
                    }
                    return Some(Entry::new(node, e));
                }
                self.cur = None;
            }
            let (mid, node) = self.nodes.as_mut()?.next_back()?;
            self.cur = Some((*mid, node, node.offsets(*mid)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64, seq: u64) -> StreamId {
        StreamId::new(ms, seq)
    }

    fn ids(it: impl Iterator<Item = Entry<'static>>) -> Vec<StreamId> {
        it.map(|e| e.id).collect()
    }

    fn pairs(e: &Entry) -> Vec<(Vec<u8>, Vec<u8>)> {
        e.pairs().map(|(a, b)| (a.to_vec(), b.to_vec())).collect()
    }

    fn filled(n: u64) -> Stream {
        let mut s = Stream::new();
        for i in 1..=n {
            s.append(id(i, 0), &[b"f", b"v"], NodeLimits::default())
                .unwrap();
        }
        s
    }

    #[test]
    fn ids_format_and_step() {
        let mut b = [0u8; 41];
        assert_eq!(
            StreamId::MAX.format(&mut b),
            b"18446744073709551615-18446744073709551615"
        );
        assert_eq!(id(5, 0).prev(), Some(id(4, u64::MAX)));
        assert_eq!(id(4, u64::MAX).next(), Some(id(5, 0)));
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(StreamId::MIN.prev(), None);
    }

    #[test]
    fn append_get_and_pairs() {
        let mut s = Stream::new();
        let l = NodeLimits::default();
        s.append(id(1, 1), &[b"a", b"1", b"b", b"2"], l).unwrap();
        s.append(id(1, 2), &[b"a", b"3", b"b", b"4"], l).unwrap();
        s.append(id(2, 0), &[b"x", b"", b"yy", b"zzz"], l).unwrap();
        assert_eq!(
            s.append(id(2, 0), &[b"a", b"b"], l),
            Err(AppendError::IdTooSmall)
        );
        assert_eq!(s.len(), 3);
        assert_eq!(s.node_count(), 1);
        let e = s.get(id(1, 2)).unwrap();
        assert_eq!(
            pairs(&e),
            vec![
                (b"a".to_vec(), b"3".to_vec()),
                (b"b".to_vec(), b"4".to_vec())
            ]
        );
        let e = s.get(id(2, 0)).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(
            pairs(&e),
            vec![
                (b"x".to_vec(), b"".to_vec()),
                (b"yy".to_vec(), b"zzz".to_vec())
            ]
        );
        assert!(s.get(id(1, 3)).is_none());
        assert_eq!(s.first_id, id(1, 1));
        assert_eq!(s.last_id, id(2, 0));
    }

    #[test]
    fn ranges_forward_and_back() {
        let s = filled(250);
        assert_eq!(s.node_count(), 3);
        let s: &'static Stream = Box::leak(Box::new(s));
        assert_eq!(
            ids(s.range(id(99, 0), id(102, 0))),
            vec![id(99, 0), id(100, 0), id(101, 0), id(102, 0)]
        );
        assert_eq!(
            ids(s.rev_range(id(99, 0), id(102, 0))),
            vec![id(102, 0), id(101, 0), id(100, 0), id(99, 0)]
        );
        assert_eq!(s.range(StreamId::MIN, StreamId::MAX).count(), 250);
        assert_eq!(s.rev_range(StreamId::MIN, StreamId::MAX).count(), 250);
        assert_eq!(s.range(id(5, 1), id(5, 2)).count(), 0);
        assert_eq!(s.range(id(6, 0), id(5, 0)).count(), 0);
        assert_eq!(s.first_entry().unwrap().id, id(1, 0));
        assert_eq!(s.last_entry().unwrap().id, id(250, 0));
    }

    #[test]
    fn delete_marks_and_drops_nodes() {
        let mut s = filled(150);
        assert_eq!(s.delete_ids(&[id(1, 0), id(1, 0), id(7, 7)]), 1);
        assert_eq!(s.first_id, id(2, 0));
        assert_eq!(s.max_deleted_id, id(1, 0));
        let all: Vec<_> = (2..=100).map(|i| id(i, 0)).collect();
        assert_eq!(s.delete_ids(&all), 99);
        assert_eq!(s.node_count(), 1);
        assert_eq!(s.len(), 50);
        assert_eq!(s.first_id, id(101, 0));
        // Deleted entries still count towards the node's entry limit.
        let mut t = filled(100);
        let half: Vec<_> = (1..=50).map(|i| id(i, 0)).collect();
        t.delete_ids(&half);
        t.append(id(200, 0), &[b"f", b"v"], NodeLimits::default())
            .unwrap();
        assert_eq!(t.node_count(), 2);
    }

    #[test]
    fn node_split_by_redis_listpack_bytes() {
        // 100-byte values: Redis fits 36 entries in a 4096-byte listpack.
        let mut s = Stream::new();
        let v = vec![b'x'; 100];
        for i in 1..=100 {
            s.append(id(i, 0), &[b"f", &v], NodeLimits::default())
                .unwrap();
        }
        assert_eq!(s.node_count(), 3);
        let t = Trim {
            strategy: TrimStrategy::MaxLen(1),
            approx: true,
            limit: 10_000,
        };
        assert_eq!(s.trim(&t), 72);
    }

    #[test]
    fn trim_exact_and_approx() {
        let mut s = filled(250);
        let approx = |n| Trim {
            strategy: TrimStrategy::MaxLen(n),
            approx: true,
            limit: 10_000,
        };
        assert_eq!(s.trim(&approx(10)), 200);
        assert_eq!(s.len(), 50);
        assert_eq!(s.first_id, id(201, 0));
        let exact = Trim {
            strategy: TrimStrategy::MaxLen(10),
            approx: false,
            limit: 0,
        };
        assert_eq!(s.trim(&exact), 40);
        assert_eq!(s.first_entry().unwrap().id, id(241, 0));
        let mut s = filled(250);
        let minid = Trim {
            strategy: TrimStrategy::MinId(id(150, 0)),
            approx: false,
            limit: 0,
        };
        assert_eq!(s.trim(&minid), 149);
        assert_eq!(s.first_id, id(150, 0));
        // LIMIT stops before a node that would exceed it.
        let mut s = filled(250);
        let limited = Trim {
            strategy: TrimStrategy::MaxLen(0),
            approx: true,
            limit: 150,
        };
        assert_eq!(s.trim(&limited), 100);
    }

    #[test]
    fn groups_pel() {
        let mut g = Group::new(StreamId::MIN, 0);
        let (a, created) = g.consumer_or_create(b"a", 10);
        assert!(created);
        let (b, _) = g.consumer_or_create(b"b", 10);
        g.deliver(id(1, 0), &a, 20);
        g.deliver(id(2, 0), &a, 20);
        g.deliver(id(1, 0), &b, 30);
        assert_eq!(g.pel[&id(1, 0)].consumer, b);
        assert_eq!(g.consumers[&b"a"[..]].pel.len(), 1);
        assert!(g.ack(id(2, 0)));
        assert!(!g.ack(id(2, 0)));
        assert_eq!(g.delete_consumer(b"b"), Some(1));
        assert!(g.pel.is_empty());
        assert_eq!(g.delete_consumer(b"b"), None);
    }

    #[test]
    fn lag_and_estimates() {
        let mut s = filled(5);
        let g = Group::new(StreamId::MIN, INVALID_ENTRIES_READ);
        assert_eq!(s.group_lag(&g), Some(5));
        let g = Group::new(id(5, 0), INVALID_ENTRIES_READ);
        assert_eq!(s.group_lag(&g), Some(0));
        s.delete_ids(&[id(3, 0)]);
        let g = Group::new(id(1, 0), INVALID_ENTRIES_READ);
        assert_eq!(s.group_lag(&g), None);
    }

    mod model {
        use super::*;
        use proptest::prelude::*;
        use std::collections::BTreeMap;

        type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

        #[derive(Debug, Clone)]
        enum Op {
            /// Append with an ID this far past the last (ms, seq steps).
            Add(u64, u64, Pairs),
            Del(usize),
            MaxLen(u64, bool, u64),
            MinId(usize, bool),
        }

        fn pairs() -> impl Strategy<Value = Pairs> {
            let bytes = prop_oneof![
                4 => proptest::collection::vec(b'a'..b'c', 0..3),
                1 => proptest::collection::vec(any::<u8>(), 0..200),
                1 => Just(b"12345".to_vec()),
            ];
            proptest::collection::vec((bytes.clone(), bytes), 1..4)
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                8 => (0u64..3, 0u64..3, pairs()).prop_map(|(a, b, p)| Op::Add(a, b, p)),
                2 => any::<usize>().prop_map(Op::Del),
                1 => (0u64..300, any::<bool>(), 0u64..250).prop_map(|(n, a, l)| Op::MaxLen(n, a, l)),
                1 => (any::<usize>(), any::<bool>()).prop_map(|(i, a)| Op::MinId(i, a)),
            ]
        }

        fn check(s: &Stream, m: &BTreeMap<StreamId, Pairs>) {
            assert_eq!(s.len() as usize, m.len());
            let got: Vec<(StreamId, Pairs)> = s
                .range(StreamId::MIN, StreamId::MAX)
                .map(|e| {
                    (
                        e.id,
                        e.pairs().map(|(a, b)| (a.to_vec(), b.to_vec())).collect(),
                    )
                })
                .collect();
            let want: Vec<(StreamId, Pairs)> = m.iter().map(|(k, v)| (*k, v.clone())).collect();
            assert_eq!(got, want);
            let rev: Vec<StreamId> = s
                .rev_range(StreamId::MIN, StreamId::MAX)
                .map(|e| e.id)
                .collect();
            let mut fwd: Vec<StreamId> = m.keys().copied().collect();
            fwd.reverse();
            assert_eq!(rev, fwd);
            assert_eq!(
                s.first_id,
                m.keys().next().copied().unwrap_or(StreamId::MIN)
            );
            assert_eq!(
                s.last_valid_id(),
                m.keys().next_back().copied().unwrap_or(StreamId::MIN)
            );
            // Sub-ranges from the middle of nodes.
            if let (Some(a), Some(b)) = (m.keys().nth(m.len() / 3), m.keys().nth(2 * m.len() / 3)) {
                let got: Vec<StreamId> = s.range(*a, *b).map(|e| e.id).collect();
                let want: Vec<StreamId> = m.range(*a..=*b).map(|(k, _)| *k).collect();
                assert_eq!(got, want);
                let got: Vec<StreamId> = s.rev_range(*a, *b).map(|e| e.id).collect();
                let want: Vec<StreamId> = m.range(*a..=*b).rev().map(|(k, _)| *k).collect();
                assert_eq!(got, want);
                assert!(s.get(*a).is_some());
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(200))]
            #[test]
            fn matches_a_btreemap(ops in proptest::collection::vec(op(), 0..400)) {
                let limits = NodeLimits { max_bytes: 512, max_entries: 8 };
                let mut s = Stream::new();
                let mut m: BTreeMap<StreamId, Pairs> = BTreeMap::new();
                let mut last = StreamId::MIN;
                for op in ops {
                    match op {
                        Op::Add(dms, dseq, p) => {
                            let id = StreamId::new(last.ms + dms, if dms == 0 { last.seq + dseq + 1 } else { dseq });
                            let flat: Vec<&[u8]> = p.iter().flat_map(|(a, b)| [a.as_slice(), b.as_slice()]).collect();
                            s.append(id, &flat, limits).unwrap();
                            m.insert(id, p);
                            last = id;
                        }
                        Op::Del(i) => {
                            if !m.is_empty() {
                                let id = *m.keys().nth(i % m.len()).unwrap();
                                prop_assert_eq!(s.delete_ids(&[id]), 1);
                                m.remove(&id);
                                prop_assert!(s.max_deleted_id >= id);
                            }
                        }
                        Op::MaxLen(n, approx, limit) => {
                            let t = Trim { strategy: TrimStrategy::MaxLen(n), approx, limit: if approx { limit } else { 0 } };
                            let removed = s.trim(&t) as usize;
                            if !approx {
                                prop_assert_eq!(removed, m.len().saturating_sub(n as usize));
                            }
                            for _ in 0..removed {
                                m.pop_first();
                            }
                        }
                        Op::MinId(i, approx) => {
                            let min = m.keys().nth(i % (m.len() + 1)).copied().unwrap_or(StreamId::MAX);
                            let t = Trim { strategy: TrimStrategy::MinId(min), approx, limit: 0 };
                            let removed = s.trim(&t) as usize;
                            if !approx {
                                prop_assert_eq!(removed, m.range(..min).count());
                            }
                            for _ in 0..removed {
                                m.pop_first();
                            }
                        }
                    }
                    check(&s, &m);
                }
                prop_assert_eq!(s.last_id, last);
            }
        }
    }

    #[test]
    fn rebuild_commands() {
        let mut s = filled(3);
        s.delete_ids(&[id(2, 0)]);
        let mut g = Group::new(id(3, 0), 3);
        let (a, _) = g.consumer_or_create(b"alice", 5);
        g.consumer_or_create(b"bob", 5);
        g.deliver(id(1, 0), &a, 1000);
        g.pel.get_mut(&id(1, 0)).unwrap().delivery_count = 4;
        s.groups.insert(Box::from(&b"grp"[..]), g);
        let mut cmds = Vec::new();
        s.rebuild_commands(b"k", |argv| {
            cmds.push(
                argv.iter()
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect::<Vec<_>>()
                    .join(" "),
            )
        });
        assert_eq!(
            cmds,
            vec![
                "XADD k 1-0 f v",
                "XADD k 3-0 f v",
                "XSETID k 3-0 ENTRIESADDED 3 MAXDELETEDID 2-0",
                "XGROUP CREATE k grp 3-0 ENTRIESREAD 3",
                "XCLAIM k grp alice 0 1-0 TIME 1000 RETRYCOUNT 4 JUSTID FORCE",
                "XGROUP CREATECONSUMER k grp bob",
            ]
        );
        let mut cmds = Vec::new();
        Stream::new().rebuild_commands(b"e", |argv| cmds.push(argv.len()));
        assert_eq!(cmds, vec![7, 7]);
    }

    #[test]
    fn memory_per_entry() {
        // A typical small entry costs less than Redis's ~18 bytes.
        let mut s = Stream::new();
        for i in 0..100_000u64 {
            s.append(
                id(1_700_000_000_000 + i / 1000, i % 1000),
                &[b"sensor", b"7", b"temp", b"21.5"],
                NodeLimits::default(),
            )
            .unwrap();
        }
        let per = s.heap_size() / 100_000;
        assert!(per <= 17, "{per} bytes per entry");
    }

    #[test]
    fn radix_nodes() {
        let s = filled(1);
        assert_eq!(s.radix_tree_nodes(), 2);
        assert_eq!(Stream::new().radix_tree_nodes(), 1);
    }
}
