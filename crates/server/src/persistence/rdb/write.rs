//! Writing an RDB file (version 10, as Redis 7.0).

use std::io::{self, Write};

use super::packed::ListpackWriter;
use super::*;
use crate::storage::set::Elem as SetElem;
use crate::storage::stream::{NodeView, Stream, StreamId};
use crate::storage::value::{EntryRef, List, Set, Value};

/// Writes an RDB image to `out`: the header and aux fields at creation,
/// then function libraries, databases and keys as the caller supplies
/// them, then [`Writer::finish`] for the end mark and checksum.
pub struct Writer<W: Write> {
    out: W,
    crc: crc::Digest<'static, u64, crc::Table<16>>,
    checksum: bool,
    compress: bool,
    /// The item being encoded: written, and added to the checksum, in one
    /// piece per key.
    buf: Vec<u8>,
    /// `list-max-listpack-size`, which decides where list nodes split.
    list_fill: i64,
    /// LZF's table, kept across strings, and its output.
    lzf: super::lzf_compress::Compressor,
    packed: Vec<u8>,
}

impl<W: Write> Writer<W> {
    /// Starts an image: header, then the aux fields Redis 7.0 writes
    /// (`aof-base` tells a loader the image is an AOF's base).
    pub fn new(out: W, compress: bool, checksum: bool, aof_base: bool) -> io::Result<Self> {
        let mut w = Writer {
            out,
            crc: CRC64.digest(),
            checksum,
            compress,
            buf: Vec::with_capacity(4096),
            list_fill: -2,
            lzf: Default::default(),
            packed: Vec::new(),
        };
        w.buf
            .extend_from_slice(format!("REDIS{:04}", version_written()).as_bytes());
        w.flush_item()?;
        let ctime = crate::command::unix_ms() / 1000;
        w.aux(b"redis-ver", crate::redis_version().as_bytes())?;
        w.aux(b"redis-bits", b"64")?;
        w.aux(b"ctime", ctime.to_string().as_bytes())?;
        w.aux(b"aof-base", if aof_base { b"1" } else { b"0" })?;
        Ok(w)
    }

    /// An aux field (name, value).
    pub fn aux(&mut self, key: &[u8], val: &[u8]) -> io::Result<()> {
        self.buf.push(OP_AUX);
        self.string(key);
        self.string(val);
        self.flush_item()
    }

    /// Starts the keys of database `db` (a loader accepts it repeated).
    pub fn select_db(&mut self, db: usize) -> io::Result<()> {
        self.buf.push(OP_SELECTDB);
        self.len(db as u64);
        self.flush_item()
    }

    /// A function library's source (`#!lua name=...`).
    pub fn function_library(&mut self, code: &[u8]) -> io::Result<()> {
        self.buf.push(OP_FUNCTION_2);
        self.string(code);
        self.flush_item()
    }

    /// One key: expiry, type, name and value.
    pub fn entry(&mut self, key: &[u8], entry: EntryRef<'_>) -> io::Result<()> {
        if entry.expire_at != 0 {
            self.buf.push(OP_EXPIRETIME_MS);
            self.buf.extend_from_slice(&entry.expire_at.to_le_bytes());
        }
        if let Value::Spilled(stub) = entry.value {
            let payload = crate::tier::read_payload(stub);
            return self.payload_entry(key, 0, &payload);
        }
        self.buf.push(value_type(entry.value));
        self.string(key);
        self.value(entry.value)?;
        self.flush_item()
    }

    /// One key whose value is a DUMP payload (a spilled value's record):
    /// the type byte and the value as this file encodes it, copied as they
    /// are. `expire_at` 0: none (the caller wrote it otherwise).
    pub fn payload_entry(&mut self, key: &[u8], expire_at: u64, payload: &[u8]) -> io::Result<()> {
        if expire_at != 0 {
            self.buf.push(OP_EXPIRETIME_MS);
            self.buf.extend_from_slice(&expire_at.to_le_bytes());
        }
        let body = &payload[..payload.len().saturating_sub(10)];
        let Some((&t, encoded)) = body.split_first() else {
            return Err(io::Error::other("an empty spilled payload"));
        };
        self.buf.push(t);
        self.string(key);
        self.buf.extend_from_slice(encoded);
        self.flush_item()
    }

    /// A value after its type byte, in the encoding Redis 7.0 writes for
    /// the same encoding in memory (listpacks for small hashes and sorted
    /// sets, an intset for small integer sets, quicklist nodes for lists),
    /// so DUMP payloads match Redis's byte for byte where the value is
    /// laid out as Redis lays it out.
    fn value(&mut self, value: &Value) -> io::Result<()> {
        match value {
            Value::Spilled(stub) => self.value(&crate::tier::read_back(stub))?,
            Value::Str(s) => match s.as_int() {
                Some(n) => self.int_string(n),
                None => s.with_bytes(|b| self.string(b)),
            },
            Value::List(l) => self.list(l)?,
            Value::Set(s) => match &**s {
                Set::Ints(v) => self.string(&intset(v)),
                Set::Pack(_) => {
                    let mut lp = ListpackWriter::default();
                    for e in s.iter() {
                        match e {
                            SetElem::Int(n) => lp.push_int(n),
                            SetElem::Bytes(b) => lp.push(b),
                        }
                    }
                    self.string(&lp.finish());
                }
                Set::Hash(_) => {
                    self.len(s.len() as u64);
                    for e in s.iter() {
                        e.with_bytes(|b| self.string(b));
                        self.spill()?;
                    }
                }
            },
            Value::Hash(h) if h.encoding() == "listpackex" => {
                // Redis's listpackex: the earliest TTL (0: none), then a
                // listpack of (field, value, TTL or 0) triples, the fields
                // with a TTL first in time order (Redis checks the order).
                self.buf
                    .extend_from_slice(&h.min_field_expiry().unwrap_or(0).to_le_bytes());
                let mut lp = ListpackWriter::default();
                let mut triple = |f: &[u8], at: u64| {
                    lp.push(f);
                    if let Some(v) = h.get(f) {
                        v.with_bytes(|b| lp.push(b));
                    }
                    lp.push(itoa::Buffer::new().format(at).as_bytes());
                };
                if let Some(ttls) = h.ttls() {
                    for (f, at) in ttls.iter() {
                        triple(f, at);
                    }
                }
                for (f, _) in h.iter() {
                    f.with_bytes(|b| {
                        if h.field_expiry(b).is_none() {
                            triple(b, 0);
                        }
                    });
                }
                self.string(&lp.finish());
            }
            Value::Hash(h) if h.has_field_ttls() => {
                // Redis's hash with metadata: the earliest TTL, then each
                // field's TTL relative to it (+1; 0: none), field, value.
                let min = h.min_field_expiry().unwrap_or(0);
                self.buf.extend_from_slice(&min.to_le_bytes());
                self.len(h.len() as u64);
                for (f, v) in h.iter() {
                    f.with_bytes(|b| {
                        let ttl = h.field_expiry(b).map_or(0, |at| at - min + 1);
                        self.len(ttl);
                        self.string(b);
                    });
                    v.with_bytes(|b| self.string(b));
                    self.spill()?;
                }
            }
            Value::Hash(h) => {
                if h.encoding() == "listpack" {
                    let mut lp = ListpackWriter::default();
                    for (f, v) in h.iter() {
                        f.with_bytes(|b| lp.push(b));
                        v.with_bytes(|b| lp.push(b));
                    }
                    self.string(&lp.finish());
                } else {
                    self.len(h.len() as u64);
                    for (f, v) in h.iter() {
                        f.with_bytes(|b| self.string(b));
                        v.with_bytes(|b| self.string(b));
                        self.spill()?;
                    }
                }
            }
            Value::ZSet(z) => {
                if z.encoding() == "listpack" {
                    let mut lp = ListpackWriter::default();
                    let mut score_text = Vec::with_capacity(32);
                    z.for_range(0, z.len(), false, |score, member| {
                        lp.push(member);
                        // Redis stores the score as d2string's text (an
                        // integer-looking one then as a listpack integer).
                        score_text.clear();
                        crate::num::double::fmt_score(score, &mut score_text);
                        lp.push(&score_text);
                    });
                    self.string(&lp.finish());
                } else {
                    // Greatest first, as Redis walks its skiplist backwards.
                    self.len(z.len() as u64);
                    let mut result = Ok(());
                    z.for_range(0, z.len(), true, |score, member| {
                        if result.is_ok() {
                            self.string(member);
                            self.buf.extend_from_slice(&score.to_le_bytes());
                            result = self.spill();
                        }
                    });
                    result?;
                }
            }
            Value::Stream(s) => self.stream(s)?,
        }
        Ok(())
    }

    /// A list as quicklist nodes of listpacks, split where Redis's
    /// `_quicklistNodeAllowInsert` would have split a list built by RPUSH
    /// (its size estimate included), so the nodes match Redis's.
    fn list(&mut self, l: &List) -> io::Result<()> {
        let (max_bytes, max_count) = quicklist_limits(self.list_fill);
        let mut nodes: Vec<Vec<u8>> = Vec::new();
        let mut lp = ListpackWriter::default();
        for e in l.iter() {
            e.with_bytes(|b| {
                // Redis's estimate: the element's length plus 8 bytes of
                // entry overhead (SIZE_ESTIMATE_OVERHEAD).
                let new_sz = lp.bytes() + b.len() + 8;
                let fits = lp.count() > 0
                    && match max_bytes {
                        Some(limit) => new_sz <= limit,
                        None => new_sz <= QUICKLIST_SAFETY_LIMIT && lp.count() < max_count,
                    };
                if !fits && lp.count() > 0 {
                    nodes.push(std::mem::take(&mut lp).finish());
                }
                lp.push(b);
            });
        }
        if lp.count() > 0 {
            nodes.push(lp.finish());
        }
        self.len(nodes.len() as u64);
        for n in nodes {
            self.len(QUICKLIST_NODE_PACKED);
            self.string(&n);
            self.spill()?;
        }
        Ok(())
    }

    /// The output written so far (an in-memory writer's bytes can be
    /// taken out as the image grows).
    pub fn output_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// The end mark and the checksum (0 when `rdbchecksum no`, which a
    /// loader takes as "not computed"); returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.buf.push(OP_EOF);
        self.flush_item()?;
        let sum = if self.checksum {
            self.crc.finalize()
        } else {
            0
        };
        self.out.write_all(&sum.to_le_bytes())?;
        Ok(self.out)
    }

    fn flush_item(&mut self) -> io::Result<()> {
        if self.checksum {
            self.crc.update(&self.buf);
        }
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    /// Writes out a large value's encoded part before it grows further.
    fn spill(&mut self) -> io::Result<()> {
        if self.buf.len() >= 64 * 1024 {
            self.flush_item()?;
        }
        Ok(())
    }

    /// A length, in the shortest of the 6, 14, 32 and 64-bit forms.
    fn len(&mut self, n: u64) {
        put_len(&mut self.buf, n);
    }

    /// A string as Redis's `rdbSaveRawString`: short canonical integers in
    /// the integer encodings, long strings LZF-compressed when
    /// `rdbcompression` is on and it saves at least 4 bytes.
    fn string(&mut self, s: &[u8]) {
        if s.len() <= 11 {
            if let Some(n) = resp::parse_i64(s) {
                if self.try_int(n) {
                    return;
                }
            }
        }
        if self.compress && s.len() > 20 {
            let mut packed = std::mem::take(&mut self.packed);
            packed.clear();
            if self.lzf.compress(s, &mut packed) {
                self.buf.push((LEN_ENCVAL << 6) | ENC_LZF);
                self.len(packed.len() as u64);
                self.len(s.len() as u64);
                self.buf.extend_from_slice(&packed);
                self.packed = packed;
                return;
            }
            self.packed = packed;
        }
        self.len(s.len() as u64);
        self.buf.extend_from_slice(s);
    }

    /// An integer string value: integer-encoded when it fits 32 bits,
    /// else its decimal digits.
    fn int_string(&mut self, n: i64) {
        if !self.try_int(n) {
            let mut b = itoa::Buffer::new();
            let s = b.format(n).as_bytes();
            self.len(s.len() as u64);
            self.buf.extend_from_slice(s);
        }
    }

    fn try_int(&mut self, n: i64) -> bool {
        let b = &mut self.buf;
        if let Ok(v) = i8::try_from(n) {
            b.push((LEN_ENCVAL << 6) | ENC_INT8);
            b.extend_from_slice(&v.to_le_bytes());
        } else if let Ok(v) = i16::try_from(n) {
            b.push((LEN_ENCVAL << 6) | ENC_INT16);
            b.extend_from_slice(&v.to_le_bytes());
        } else if let Ok(v) = i32::try_from(n) {
            b.push((LEN_ENCVAL << 6) | ENC_INT32);
            b.extend_from_slice(&v.to_le_bytes());
        } else {
            return false;
        }
        true
    }

    /// A stream as `RDB_TYPE_STREAM_LISTPACKS_2`: nodes of live entries in
    /// Redis's node listpack layout, the stream's IDs and counters, then
    /// the consumer groups with their pending entries.
    fn stream(&mut self, s: &Stream) -> io::Result<()> {
        self.len(s.node_count() as u64);
        for node in s.nodes() {
            self.string(&id_bytes(node.master_id));
            self.string(&node_listpack(&node));
            self.spill()?;
        }
        self.len(s.len());
        self.stream_id(s.last_id);
        self.stream_id(s.first_id);
        self.stream_id(s.max_deleted_id);
        self.len(s.entries_added);
        self.len(s.groups.len() as u64);
        for (name, g) in &s.groups {
            self.string(name);
            self.stream_id(g.last_id);
            // -1 (entries read unknown) as Redis writes it: the 64-bit
            // pattern of the signed value.
            self.len(g.entries_read as u64);
            self.len(g.pel.len() as u64);
            for (id, nack) in &g.pel {
                self.buf.extend_from_slice(&id_bytes(*id));
                self.buf
                    .extend_from_slice(&nack.delivery_time.to_le_bytes());
                self.len(nack.delivery_count);
                self.spill()?;
            }
            self.len(g.consumers.len() as u64);
            for (cname, c) in &g.consumers {
                self.string(cname);
                self.buf.extend_from_slice(&c.seen_time.to_le_bytes());
                if stream_type() == TYPE_STREAM_LISTPACKS_3 {
                    self.buf.extend_from_slice(&c.active_time.to_le_bytes());
                }
                self.len(c.pel.len() as u64);
                for id in &c.pel {
                    self.buf.extend_from_slice(&id_bytes(*id));
                }
                self.spill()?;
            }
        }
        Ok(())
    }

    fn stream_id(&mut self, id: StreamId) {
        self.len(id.ms);
        self.len(id.seq);
    }
}

pub(super) fn put_len(b: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        b.push((LEN_6BIT << 6) | n as u8);
    } else if n < 1 << 14 {
        b.push((LEN_14BIT << 6) | (n >> 8) as u8);
        b.push(n as u8);
    } else if n <= u32::MAX as u64 {
        b.push(LEN_32BIT);
        b.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        b.push(LEN_64BIT);
        b.extend_from_slice(&n.to_be_bytes());
    }
}

/// A stream ID as a node key: 128-bit big-endian.
fn id_bytes(id: StreamId) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&id.ms.to_be_bytes());
    k[8..].copy_from_slice(&id.seq.to_be_bytes());
    k
}

/// A stream node as Redis's node listpack:
///
/// ```text
/// master: count deleted nfields field* 0
/// entry:  flags ms-diff seq-diff (value* | nfields (field value)*) lp-count
/// ```
///
/// An entry whose field names are the master's (in order) stores values
/// only and has the SAMEFIELDS flag, as Redis's `streamAppendItem`;
/// deleted entries stay, flagged, as in Redis.
fn node_listpack(node: &NodeView<'_>) -> Vec<u8> {
    let master = node.master_id;
    let mut lp = ListpackWriter::default();
    lp.push_int(node.live as i64);
    lp.push_int(node.deleted as i64);
    lp.push_int(node.fields.len() as i64);
    for f in &node.fields {
        lp.push(f);
    }
    lp.push_int(0);
    for (e, deleted) in &node.entries {
        let same = e.same_fields();
        let mut flags = if same { STREAM_ITEM_SAMEFIELDS } else { 0 };
        if *deleted {
            flags |= STREAM_ITEM_DELETED;
        }
        lp.push_int(flags);
        lp.push_int(e.id.ms.wrapping_sub(master.ms) as i64);
        lp.push_int(e.id.seq.wrapping_sub(master.seq) as i64);
        if same {
            for (_, v) in e.pairs() {
                lp.push(v);
            }
            lp.push_int(e.len() as i64 + 3);
        } else {
            lp.push_int(e.len() as i64);
            for (f, v) in e.pairs() {
                lp.push(f);
                lp.push(v);
            }
            lp.push_int(2 * e.len() as i64 + 4);
        }
    }
    lp.finish()
}

/// A set of integers as Redis's intset: sorted, each in the narrowest
/// width that holds every member.
fn intset(v: &[i64]) -> Vec<u8> {
    let width: usize = if v.iter().all(|&n| i16::try_from(n).is_ok()) {
        2
    } else if v.iter().all(|&n| i32::try_from(n).is_ok()) {
        4
    } else {
        8
    };
    let mut sorted = v.to_vec();
    sorted.sort_unstable();
    let mut b = Vec::with_capacity(8 + width * v.len());
    b.extend_from_slice(&(width as u32).to_le_bytes());
    b.extend_from_slice(&(v.len() as u32).to_le_bytes());
    for n in sorted {
        b.extend_from_slice(&n.to_le_bytes()[..width]);
    }
    b
}

/// Byte limit of a quicklist node (`None`: counted by entries) and its
/// entry limit, for `list-max-listpack-size` = `fill`.
fn quicklist_limits(fill: i64) -> (Option<usize>, usize) {
    if fill < 0 {
        let shift = ((-fill) - 1).min(4) as u32;
        (Some(4096 << shift), usize::MAX)
    } else {
        (None, fill.max(1) as usize)
    }
}

/// Byte limit of a node counted by entries (Redis's SIZE_SAFETY_LIMIT).
const QUICKLIST_SAFETY_LIMIT: usize = 8192;

/// A DUMP payload: the value as RDB encodes it (type byte first), the
/// RDB version (2 bytes) and the CRC64 of everything before (8 bytes),
/// little-endian, as Redis's `createDumpPayload`.
pub fn dump_payload(value: &Value, compress: bool, list_fill: i64) -> Vec<u8> {
    let mut w = bare_writer(compress);
    w.list_fill = list_fill;
    w.buf.push(value_type(value));
    // Writing to a Vec cannot fail.
    let _ = w.value(value);
    let _ = w.flush_item();
    seal_payload(w.out)
}

/// [`dump_payload`] with the RDB version and a zero checksum in its footer:
/// for the disk tier, whose records carry their own checksum (the CRC64
/// was a few percent of a tiered read's CPU). Read back with
/// `restore_trusted_payload`; never handed to a client as it is.
pub fn tier_payload(value: &Value, list_fill: i64) -> Vec<u8> {
    let mut w = bare_writer(false);
    w.list_fill = list_fill;
    w.buf.push(value_type(value));
    // Writing to a Vec cannot fail.
    let _ = w.value(value);
    let _ = w.flush_item();
    let mut out = w.out;
    out.extend_from_slice(&(VERSION_READ_MAX as u16).to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out
}

/// A FUNCTION DUMP payload: each library as RDB's FUNCTION2 opcode and
/// its code, then the version and CRC64 as [`dump_payload`].
pub fn functions_payload(codes: &[Vec<u8>], compress: bool) -> Vec<u8> {
    let mut w = bare_writer(compress);
    for code in codes {
        let _ = w.function_library(code);
    }
    seal_payload(w.out)
}

fn bare_writer(compress: bool) -> Writer<Vec<u8>> {
    Writer {
        out: Vec::new(),
        crc: CRC64.digest(),
        checksum: false,
        compress,
        buf: Vec::new(),
        list_fill: -2,
        lzf: Default::default(),
        packed: Vec::new(),
    }
}

/// Appends the DUMP footer (RDB version, CRC64) to a payload's body.
pub fn seal_payload(mut out: Vec<u8>) -> Vec<u8> {
    out.extend_from_slice(&(version_written() as u16).to_le_bytes());
    let crc = CRC64.checksum(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The stream type written: RDB 12 (Redis 7.4) keeps each consumer's
/// active time beside its seen time.
fn stream_type() -> u8 {
    if version_written() >= VERSION_7_4 {
        TYPE_STREAM_LISTPACKS_3
    } else {
        TYPE_STREAM_LISTPACKS_2
    }
}

/// The RDB type byte of a value, by its encoding in memory.
fn value_type(value: &Value) -> u8 {
    match value {
        Value::Str(_) => TYPE_STRING,
        Value::List(_) => TYPE_LIST_QUICKLIST_2,
        Value::Set(s) => match &**s {
            Set::Ints(_) => TYPE_SET_INTSET,
            // Only under redis-version 7.4.1, which writes RDB 12.
            Set::Pack(_) => TYPE_SET_LISTPACK,
            Set::Hash(_) => TYPE_SET,
        },
        Value::Hash(h) if h.encoding() == "listpack" => TYPE_HASH_LISTPACK,
        Value::Hash(h) if h.encoding() == "listpackex" => TYPE_HASH_LISTPACK_EX,
        Value::Hash(h) if h.has_field_ttls() => TYPE_HASH_METADATA,
        Value::Hash(_) => TYPE_HASH,
        Value::ZSet(z) if z.encoding() == "listpack" => TYPE_ZSET_LISTPACK,
        Value::ZSet(_) => TYPE_ZSET_2,
        Value::Stream(_) => stream_type(),
        Value::Spilled(stub) => value_type(&crate::tier::read_back(stub)),
    }
}
