//! Writing an RDB file (version 10, as Redis 7.0).

use std::io::{self, Write};

use super::packed::ListpackWriter;
use super::*;
use crate::storage::stream::{Stream, StreamId};
use crate::storage::value::{EntryRef, Value};

/// Entries per stream node written; Redis's `stream-node-max-entries`
/// default, so the nodes Redis loads look like the ones it would build.
const STREAM_NODE_ENTRIES: usize = 100;

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
        };
        w.buf
            .extend_from_slice(format!("REDIS{VERSION_WRITTEN:04}").as_bytes());
        w.flush_item()?;
        let ctime = crate::command::unix_ms() / 1000;
        w.aux(b"redis-ver", crate::REDIS_VERSION.as_bytes())?;
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
        match &entry.value {
            Value::Str(s) => {
                self.buf.push(TYPE_STRING);
                self.string(key);
                match s.as_int() {
                    Some(n) => self.int_string(n),
                    None => s.with_bytes(|b| self.string(b)),
                }
            }
            Value::List(l) => {
                self.buf.push(TYPE_LIST);
                self.string(key);
                self.len(l.len() as u64);
                for e in l.iter() {
                    e.with_bytes(|b| self.string(b));
                    self.spill()?;
                }
            }
            Value::Set(s) => {
                self.buf.push(TYPE_SET);
                self.string(key);
                self.len(s.len() as u64);
                for e in s.iter() {
                    e.with_bytes(|b| self.string(b));
                    self.spill()?;
                }
            }
            Value::Hash(h) => {
                self.buf.push(TYPE_HASH);
                self.string(key);
                self.len(h.len() as u64);
                for (f, v) in h.iter() {
                    f.with_bytes(|b| self.string(b));
                    v.with_bytes(|b| self.string(b));
                    self.spill()?;
                }
            }
            Value::ZSet(z) => {
                self.buf.push(TYPE_ZSET_2);
                self.string(key);
                self.len(z.len() as u64);
                let mut result = Ok(());
                z.for_range(0, z.len(), false, |score, member| {
                    if result.is_ok() {
                        self.string(member);
                        self.buf.extend_from_slice(&score.to_le_bytes());
                        result = self.spill();
                    }
                });
                result?;
            }
            Value::Stream(s) => {
                self.buf.push(TYPE_STREAM_LISTPACKS_2);
                self.string(key);
                self.stream(s)?;
            }
        }
        self.flush_item()
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
            if let Ok(c) = lzf::compress(s) {
                if c.len() + 4 <= s.len() {
                    self.buf.push((LEN_ENCVAL << 6) | ENC_LZF);
                    self.len(c.len() as u64);
                    self.len(s.len() as u64);
                    self.buf.extend_from_slice(&c);
                    return;
                }
            }
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
        let nodes = stream_nodes(s);
        self.len(nodes.len() as u64);
        for (master, lp) in nodes {
            self.string(&id_bytes(master));
            self.string(&lp);
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

/// The stream's live entries as Redis node listpacks, keyed by master ID:
///
/// ```text
/// master: count deleted nfields field* 0
/// entry:  flags ms-diff seq-diff (value* | nfields (field value)*) lp-count
/// ```
///
/// An entry whose field names are the master's (in order) stores values
/// only and has the SAMEFIELDS flag, as Redis's `streamAppendItem`.
fn stream_nodes(s: &Stream) -> Vec<(StreamId, Vec<u8>)> {
    let entries: Vec<_> = s.range(StreamId::MIN, StreamId::MAX).collect();
    let mut nodes = Vec::with_capacity(entries.len().div_ceil(STREAM_NODE_ENTRIES));
    for chunk in entries.chunks(STREAM_NODE_ENTRIES) {
        let master = chunk[0].id;
        let fields: Vec<&[u8]> = chunk[0].pairs().map(|(f, _)| f).collect();
        let mut lp = ListpackWriter::default();
        lp.push_int(chunk.len() as i64);
        lp.push_int(0);
        lp.push_int(fields.len() as i64);
        for f in &fields {
            lp.push(f);
        }
        lp.push_int(0);
        for e in chunk {
            let same = e.len() == fields.len() && e.pairs().zip(&fields).all(|((f, _), m)| f == *m);
            lp.push_int(if same { STREAM_ITEM_SAMEFIELDS } else { 0 });
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
        nodes.push((master, lp.finish()));
    }
    nodes
}
