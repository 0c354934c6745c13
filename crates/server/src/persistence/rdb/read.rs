//! Reading an RDB file (versions 1 to 11). Every length is checked
//! against the bytes left before anything is allocated for it, so a
//! truncated or hostile file is an error at an offset, never a panic or
//! an allocation the file does not back.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use super::packed::{self, Item};
use super::*;
use crate::storage::stream::{Consumer, Group, Nack, NodeLimits, Stream, StreamId};
use crate::storage::value::{EncodingLimits, Hash, List, Set, Str, Value, ZSet};
use crate::storage::zset::ZLimits;

/// The largest field expiry time an image may hold (Redis's
/// `EB_EXPIRE_TIME_MAX`).
const FIELD_EXPIRE_MAX: u64 = 0x0000_FFFF_FFFF_FFFF;

/// A malformed image: what was wrong, and where.
#[derive(Debug)]
pub struct RdbError {
    pub offset: u64,
    pub msg: String,
}

impl std::fmt::Display for RdbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at offset {}", self.msg, self.offset)
    }
}

impl std::error::Error for RdbError {}

/// What a successful load read.
#[derive(Debug, Default)]
pub struct Loaded {
    pub version: u32,
    /// Keys read (expired ones included: the caller decides).
    pub keys: u64,
    /// Keys with an expiry.
    pub expires: u64,
    /// Bytes of the image, checksum included (an AOF goes on after it).
    pub consumed: usize,
    /// The replication history the image was taken at (aux fields
    /// `repl-id`, `repl-offset`, `repl-stream-db`), if it says.
    pub repl: Option<(String, u64, usize)>,
}

/// Reads the image at the start of `data`: `on_key(db, key, value,
/// expire_at_ms)` for each key (0 = no expiry), `on_function(code)` for
/// each function library.
pub fn load(
    data: &[u8],
    limits: &EncodingLimits,
    mut on_key: impl FnMut(usize, Vec<u8>, Value, u64),
    mut on_function: impl FnMut(Vec<u8>),
) -> Result<Loaded, RdbError> {
    parse(data, limits, &mut on_key, &mut on_function, None)
}

/// Reads the whole image as `--check-rdb` (redis-check-rdb) does: the
/// report of what was read, then the error if any.
pub fn check(data: &[u8]) -> Result<String, (String, RdbError)> {
    let mut report = String::new();
    let now = crate::command::unix_ms();
    let mut expired = 0u64;
    let result = parse(
        data,
        &EncodingLimits::default(),
        &mut |_, _, _, at| expired += u64::from(at != 0 && at <= now),
        &mut |_| {},
        Some(&mut report),
    );
    match result {
        Ok(l) => {
            let _ = writeln!(report, "[info] {} keys read", l.keys);
            let _ = writeln!(report, "[info] {} expires", l.expires);
            let _ = writeln!(report, "[info] {expired} already expired");
            Ok(report)
        }
        Err(e) => Err((report, e)),
    }
}

/// Gathers the replication aux fields into `(id, offset, db)`.
fn repl_aux(repl: &mut (Option<String>, Option<u64>, usize), k: &[u8], v: &[u8]) {
    let text = || std::str::from_utf8(v).ok();
    match k {
        b"repl-id" if v.len() == 40 => repl.0 = text().map(str::to_string),
        b"repl-offset" => repl.1 = text().and_then(|t| t.parse().ok()),
        b"repl-stream-db" => repl.2 = text().and_then(|t| t.parse().ok()).unwrap_or(0),
        _ => {}
    }
}

/// Why a DUMP payload was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadError {
    /// A newer RDB version than Redis 7.0's, or a wrong CRC64.
    VersionOrChecksum,
    /// The value does not decode.
    BadFormat,
}

/// Checks a DUMP or FUNCTION DUMP payload's footer (Redis's
/// `verifyDumpPayload`): at least the 10 footer bytes, an RDB version
/// keel reads, and the CRC64 of everything before the checksum.
pub fn verify_payload(payload: &[u8]) -> Result<(), PayloadError> {
    let Some(body_len) = payload.len().checked_sub(10) else {
        return Err(PayloadError::VersionOrChecksum);
    };
    let footer = &payload[body_len..];
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&footer[2..]);
    if u32::from(version) > version_written()
        || CRC64.checksum(&payload[..body_len + 2]) != u64::from_le_bytes(crc)
    {
        return Err(PayloadError::VersionOrChecksum);
    }
    Ok(())
}

/// The value of a DUMP payload (RESTORE): footer checked, then the type
/// byte and the value. Every length is checked as for a file, so a
/// hostile payload is an error, never a panic or an unbacked allocation.
pub fn restore_payload(payload: &[u8], limits: &EncodingLimits) -> Result<Value, PayloadError> {
    verify_payload(payload)?;
    restore_trusted_payload(payload, limits)
}

/// The value of a payload this server wrote and checked by other means
/// (the disk tier's records carry their own checksum): no footer check.
pub fn restore_trusted_payload(
    payload: &[u8],
    limits: &EncodingLimits,
) -> Result<Value, PayloadError> {
    // The footer stays readable, as in Redis: a value may run into it.
    let mut r = Reader {
        data: payload,
        pos: 0,
        limits,
    };
    let t = r.u8().map_err(|_| PayloadError::BadFormat)?;
    match r.value(t, 0) {
        Ok(Some(v)) => Ok(v),
        _ => Err(PayloadError::BadFormat),
    }
}

/// The library codes of a FUNCTION DUMP payload whose footer was checked,
/// or Redis's error text (without the `ERR ` prefix).
pub fn functions_of_payload(payload: &[u8]) -> Result<Vec<Vec<u8>>, &'static str> {
    let limits = EncodingLimits::default();
    // As Redis, items are read up to the last 10 bytes, from the whole
    // payload (a string may run into the footer).
    let mut r = Reader {
        data: payload,
        pos: 0,
        limits: &limits,
    };
    let mut codes = Vec::new();
    while payload.len().saturating_sub(r.pos) > 10 {
        match r.u8() {
            Ok(OP_FUNCTION_2) => {
                let code = r.string().map_err(|_| "Failed loading library payload")?;
                codes.push(code.into_owned());
            }
            // Redis 7.2 dropped the release candidates' format.
            Ok(OP_FUNCTION_PRE_GA) if crate::speaks_7_4() => {
                return Err("Pre-GA function format not supported")
            }
            Ok(OP_FUNCTION_PRE_GA) => codes.push(pre_ga_function(&mut r)?),
            Ok(_) => return Err("given type is not a function"),
            Err(_) => return Err("can not read data type"),
        }
    }
    Ok(codes)
}

/// A function in the 7.0 release candidates' format (name, engine,
/// optional description, body) as the library Redis 7.0 makes of it.
fn pre_ga_function(r: &mut Reader) -> Result<Vec<u8>, &'static str> {
    let name = r.string().map_err(|_| "Failed loading library name")?;
    let engine = r.string().map_err(|_| "Failed loading engine name")?;
    let has_desc = r
        .len()
        .map_err(|_| "Failed loading library description indicator")?;
    if has_desc != 0 {
        r.string()
            .map_err(|_| "Failed loading library description")?;
    }
    let body = r.string().map_err(|_| "Failed loading library blob")?;
    let mut code = b"#!".to_vec();
    code.extend_from_slice(&engine);
    code.extend_from_slice(b" name=");
    code.extend_from_slice(&name);
    code.push(b'\n');
    code.extend_from_slice(&body);
    Ok(code)
}

fn parse(
    data: &[u8],
    limits: &EncodingLimits,
    on_key: &mut dyn FnMut(usize, Vec<u8>, Value, u64),
    on_function: &mut dyn FnMut(Vec<u8>),
    mut report: Option<&mut String>,
) -> Result<Loaded, RdbError> {
    let mut r = Reader {
        data,
        pos: 0,
        limits,
    };
    let magic = r
        .take(9)
        .map_err(|_| r.err("Wrong signature trying to load DB from file"))?;
    if &magic[..5] != b"REDIS" {
        return Err(r.err_at(0, "Wrong signature trying to load DB from file"));
    }
    let version = std::str::from_utf8(&magic[5..])
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|v| (1..=VERSION_READ_MAX).contains(v))
        .ok_or_else(|| {
            r.err_at(
                5,
                format!(
                    "Can't handle RDB format version {}",
                    String::from_utf8_lossy(&magic[5..])
                ),
            )
        })?;
    let mut loaded = Loaded {
        version,
        ..Loaded::default()
    };
    let mut db = 0usize;
    let mut expire_at = 0u64;
    let mut repl = (None, None, 0);
    // The checksum follows the reader (as Redis's rio does): once a key
    // is loaded its bytes are not read again, so a mapped image's pages
    // can go as it loads (`persistence::image_file`).
    let mut digest = CRC64.digest();
    let mut summed = 0;
    loop {
        digest.update(&data[summed..r.pos]);
        summed = r.pos;
        let at = r.pos;
        let op = r.u8()?;
        match op {
            OP_EXPIRETIME => expire_at = u64::from(r.u32le()?) * 1000,
            OP_EXPIRETIME_MS => expire_at = r.u64le()?,
            OP_FREQ => {
                r.u8()?;
            }
            OP_IDLE => {
                r.len()?;
            }
            OP_EOF => break,
            OP_SELECTDB => {
                let n = r.len()?;
                db = usize::try_from(n).map_err(|_| r.err_at(at, "Invalid DB index"))?;
                if let Some(rep) = report.as_deref_mut() {
                    let _ = writeln!(rep, "[offset {at}] Selecting DB ID {db}");
                }
            }
            OP_RESIZEDB => {
                r.len()?;
                r.len()?;
            }
            OP_AUX => {
                let k = r.string()?;
                let v = r.string()?;
                repl_aux(&mut repl, &k, &v);
                if let Some(rep) = report.as_deref_mut() {
                    let _ = writeln!(
                        rep,
                        "[offset {at}] AUX FIELD {} = '{}'",
                        String::from_utf8_lossy(&k),
                        String::from_utf8_lossy(&v)
                    );
                }
            }
            OP_MODULE_AUX => {
                return Err(r.err_at(
                    at,
                    "The RDB file contains AUX module data I can't load: no module is loaded",
                ))
            }
            OP_FUNCTION_PRE_GA => {
                return Err(r.err_at(at, "Pre-release function format not supported"))
            }
            OP_FUNCTION_2 => on_function(r.string()?.into_owned()),
            t => {
                let key = r.string()?.into_owned();
                if let Some(value) = r.value(t, at)? {
                    loaded.keys += 1;
                    loaded.expires += u64::from(expire_at != 0);
                    on_key(db, key, value, expire_at);
                }
                expire_at = 0;
            }
        }
    }
    if version >= 5 {
        let end = r.pos;
        digest.update(&data[summed..end]);
        let expected = digest.finalize();
        let stored = r.u64le()?;
        if stored == 0 {
            if let Some(rep) = report.as_deref_mut() {
                let _ = writeln!(
                    rep,
                    "[offset {end}] RDB file was saved with checksum disabled: no check performed."
                );
            }
        } else if stored != expected {
            return Err(r.err_at(
                end,
                format!("Wrong RDB checksum expected: ({stored:x}) got ({expected:x})"),
            ));
        } else if let Some(rep) = report {
            let _ = writeln!(rep, "[offset {end}] Checksum OK");
        }
    }
    loaded.consumed = r.pos;
    if let (Some(id), Some(offset)) = (repl.0, repl.1) {
        loaded.repl = Some((id, offset, repl.2));
    }
    Ok(loaded)
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    limits: &'a EncodingLimits,
}

impl<'a> Reader<'a> {
    fn err(&self, msg: impl Into<String>) -> RdbError {
        self.err_at(self.pos, msg)
    }

    fn err_at(&self, at: usize, msg: impl Into<String>) -> RdbError {
        RdbError {
            offset: at as u64,
            msg: msg.into(),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], RdbError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| self.err("Unexpected EOF reading RDB file"))?;
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, RdbError> {
        Ok(self.take(1)?[0])
    }

    fn u32le(&mut self) -> Result<u32, RdbError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64le(&mut self) -> Result<u64, RdbError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }

    /// A length, or the special string encoding it announces.
    fn len_or_enc(&mut self) -> Result<(u64, bool), RdbError> {
        let b = self.u8()?;
        Ok(match b >> 6 {
            LEN_6BIT => ((b & 0x3F) as u64, false),
            LEN_14BIT => ((((b & 0x3F) as u64) << 8) | self.u8()? as u64, false),
            LEN_ENCVAL => ((b & 0x3F) as u64, true),
            _ => match b {
                LEN_32BIT => {
                    let x = self.take(4)?;
                    (u32::from_be_bytes([x[0], x[1], x[2], x[3]]) as u64, false)
                }
                LEN_64BIT => {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(self.take(8)?);
                    (u64::from_be_bytes(a), false)
                }
                _ => return Err(self.err(format!("Unknown length encoding {b} in rdbLoadLen()"))),
            },
        })
    }

    fn len(&mut self) -> Result<u64, RdbError> {
        match self.len_or_enc()? {
            (n, false) => Ok(n),
            (_, true) => Err(self.err("Unexpected encoded length")),
        }
    }

    /// A count of items that each take at least one byte: larger than the
    /// bytes left means a corrupt file, caught before any allocation.
    fn count(&mut self) -> Result<usize, RdbError> {
        let n = self.len()?;
        let left = (self.data.len() - self.pos) as u64;
        if n > left {
            return Err(self.err(format!("Item count {n} exceeds the {left} bytes left")));
        }
        Ok(n as usize)
    }

    fn string(&mut self) -> Result<Cow<'a, [u8]>, RdbError> {
        let at = self.pos;
        let (n, encoded) = self.len_or_enc()?;
        if !encoded {
            let n = usize::try_from(n).map_err(|_| self.err_at(at, "String too long"))?;
            return Ok(Cow::Borrowed(self.take(n)?));
        }
        let int = |v: i64| Cow::Owned(itoa::Buffer::new().format(v).as_bytes().to_vec());
        match n as u8 {
            ENC_INT8 => Ok(int(self.u8()? as i8 as i64)),
            ENC_INT16 => {
                let b = self.take(2)?;
                Ok(int(i16::from_le_bytes([b[0], b[1]]) as i64))
            }
            ENC_INT32 => Ok(int(self.u32le()? as i32 as i64)),
            ENC_LZF => {
                let clen = self.len()?;
                let len = self.len()?;
                let clen = usize::try_from(clen).map_err(|_| self.err_at(at, "Bad LZF length"))?;
                let packed = self.take(clen)?;
                // LZF expands at most ~88 times (a 3-byte back reference
                // yields up to 264 bytes): a larger claim is corrupt, and
                // must not size an allocation.
                if len == 0 || len > (clen as u64).saturating_mul(100) {
                    return Err(self.err_at(at, "Invalid LZF compressed string"));
                }
                match lzf::decompress(packed, len as usize) {
                    Ok(v) if v.len() as u64 == len => Ok(Cow::Owned(v)),
                    _ => Err(self.err_at(at, "Invalid LZF compressed string")),
                }
            }
            e => Err(self.err_at(at, format!("Unknown RDB string encoding type {e}"))),
        }
    }

    /// A double as the old `zset` type writes it: a length byte (253 NaN,
    /// 254 +inf, 255 -inf) then that many ASCII bytes.
    fn text_double(&mut self) -> Result<f64, RdbError> {
        let n = self.u8()?;
        match n {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            _ => {
                let b = self.take(n as usize)?;
                std::str::from_utf8(b)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| self.err("Invalid double value"))
            }
        }
    }

    fn blob(&mut self) -> Result<Cow<'a, [u8]>, RdbError> {
        self.string()
    }

    /// The value of a key of type `t` (its type byte was at `at`); `None`
    /// for an empty collection, which Redis skips too.
    fn value(&mut self, t: u8, at: usize) -> Result<Option<Value>, RdbError> {
        let limits = *self.limits;
        let zl = ZLimits {
            max_entries: limits.zset_max_listpack_entries,
            max_value: limits.zset_max_listpack_value,
        };
        let bad = |r: &Self, m: &str| r.err_at(at, m.to_string());
        let value = match t {
            TYPE_STRING => Value::Str(Str::from_vec(self.string()?.into_owned())),
            TYPE_LIST => {
                let mut l = List::new(limits.list_max_listpack_size);
                for _ in 0..self.count()? {
                    l.push_back(&self.string()?);
                }
                l.settle();
                Value::List(Box::new(l))
            }
            TYPE_LIST_ZIPLIST => {
                let blob = self.blob()?;
                let items = packed::ziplist(&blob).map_err(|m| bad(self, m))?;
                let mut l = List::new(limits.list_max_listpack_size);
                push_items(&mut l, &items);
                l.settle();
                Value::List(Box::new(l))
            }
            TYPE_LIST_QUICKLIST | TYPE_LIST_QUICKLIST_2 => {
                let mut l = List::new(limits.list_max_listpack_size);
                for _ in 0..self.count()? {
                    let container = if t == TYPE_LIST_QUICKLIST_2 {
                        self.len()?
                    } else {
                        QUICKLIST_NODE_PACKED
                    };
                    let blob = self.blob()?;
                    match (t, container) {
                        (_, QUICKLIST_NODE_PLAIN) => l.push_back(&blob),
                        (TYPE_LIST_QUICKLIST, _) => {
                            let items = packed::ziplist(&blob).map_err(|m| bad(self, m))?;
                            push_items(&mut l, &items);
                        }
                        (_, QUICKLIST_NODE_PACKED) => {
                            let items = packed::listpack(&blob).map_err(|m| bad(self, m))?;
                            push_items(&mut l, &items);
                        }
                        _ => return Err(bad(self, "Quicklist integrity check failed")),
                    }
                }
                l.settle();
                Value::List(Box::new(l))
            }
            TYPE_SET => {
                let n = self.count()?;
                // As rdbLoadObject: a table from the start when there are
                // more members than an intset may hold.
                let mut s = if n > limits.set_max_intset_entries {
                    Set::Hash(Default::default())
                } else {
                    Set::new()
                };
                for _ in 0..n {
                    if !s.add(&self.string()?, &limits) {
                        return Err(bad(self, "Duplicate set members detected"));
                    }
                }
                Value::Set(Box::new(s))
            }
            TYPE_SET_INTSET | TYPE_SET_LISTPACK => {
                let blob = self.blob()?;
                let members: Vec<Vec<u8>> = if t == TYPE_SET_INTSET {
                    let ints = packed::intset(&blob).map_err(|m| bad(self, m))?;
                    ints.iter()
                        .map(|n| itoa::Buffer::new().format(*n).as_bytes().to_vec())
                        .collect()
                } else {
                    let items = packed::listpack(&blob).map_err(|m| bad(self, m))?;
                    items.iter().map(|i| i.to_vec()).collect()
                };
                let s = if t == TYPE_SET_LISTPACK && limits.sets_as_7_2 {
                    // Kept a listpack (in its order) unless it holds more
                    // than set-max-listpack-entries, as Redis 7.2 loads it.
                    let as_listpack = EncodingLimits {
                        set_max_listpack_entries: usize::MAX,
                        set_max_listpack_value: usize::MAX,
                        ..limits
                    };
                    let mut s = Set::create(b"", 0, &as_listpack);
                    for m in &members {
                        if !s.add(m, &as_listpack) {
                            return Err(bad(self, "Duplicate set members detected"));
                        }
                    }
                    s.expect(s.len(), &limits);
                    s
                } else {
                    let mut s = Set::new();
                    for m in &members {
                        if !s.add(m, &limits) {
                            return Err(bad(self, "Duplicate set members detected"));
                        }
                    }
                    s
                };
                Value::Set(Box::new(s))
            }
            TYPE_ZSET | TYPE_ZSET_2 => {
                let n = self.count()?;
                let mut z = ZSet::new_for(0, zl);
                for _ in 0..n {
                    let member = self.string()?;
                    let score = if t == TYPE_ZSET_2 {
                        f64::from_le_bytes(self.u64le()?.to_le_bytes())
                    } else {
                        self.text_double()?
                    };
                    zadd(&mut z, &member, score, zl).map_err(|m| bad(self, m))?;
                }
                Value::ZSet(Box::new(z))
            }
            TYPE_ZSET_ZIPLIST | TYPE_ZSET_LISTPACK => {
                let blob = self.blob()?;
                let items = if t == TYPE_ZSET_ZIPLIST {
                    packed::ziplist(&blob)
                } else {
                    packed::listpack(&blob)
                }
                .map_err(|m| bad(self, m))?;
                if items.len() % 2 != 0 {
                    return Err(bad(self, "Zset listpack with an odd number of elements"));
                }
                let mut z = ZSet::new_for(0, zl);
                for pair in items.chunks_exact(2) {
                    let score = match pair[1] {
                        Item::Int(n) => n as f64,
                        Item::Str(s) => std::str::from_utf8(s)
                            .ok()
                            .and_then(|s| s.parse().ok())
                            .ok_or_else(|| bad(self, "Invalid zset score"))?,
                    };
                    zadd(&mut z, &pair[0].to_vec(), score, zl).map_err(|m| bad(self, m))?;
                }
                Value::ZSet(Box::new(z))
            }
            TYPE_HASH => {
                let mut h = Hash::new();
                for _ in 0..self.count()? {
                    let f = self.string()?;
                    let v = self.string()?;
                    if !h.set(&f, &v, &limits) {
                        return Err(bad(self, "Duplicate hash fields detected"));
                    }
                }
                Value::Hash(h)
            }
            TYPE_HASH_ZIPMAP | TYPE_HASH_ZIPLIST | TYPE_HASH_LISTPACK => {
                let blob = self.blob()?;
                let pairs: Vec<(Vec<u8>, Vec<u8>)> = if t == TYPE_HASH_ZIPMAP {
                    let p = packed::zipmap(&blob).map_err(|m| bad(self, m))?;
                    p.into_iter()
                        .map(|(f, v)| (f.to_vec(), v.to_vec()))
                        .collect()
                } else {
                    let items = if t == TYPE_HASH_ZIPLIST {
                        packed::ziplist(&blob)
                    } else {
                        packed::listpack(&blob)
                    }
                    .map_err(|m| bad(self, m))?;
                    if items.len() % 2 != 0 {
                        return Err(bad(self, "Hash listpack with an odd number of elements"));
                    }
                    items
                        .chunks_exact(2)
                        .map(|p| (p[0].to_vec(), p[1].to_vec()))
                        .collect()
                };
                let mut h = Hash::new();
                for (f, v) in &pairs {
                    if !h.set(f, v, &limits) {
                        return Err(bad(self, "Duplicate hash fields detected"));
                    }
                }
                Value::Hash(h)
            }
            TYPE_HASH_METADATA | TYPE_HASH_METADATA_PRE_GA => {
                // 7.4's: relative TTLs after the earliest; the release
                // candidates': absolute TTLs, no earliest.
                let min = if t == TYPE_HASH_METADATA {
                    self.u64le()?
                } else {
                    1
                };
                let n = self.count()?;
                let mut h = Hash::new();
                let mut ttls = Vec::new();
                for _ in 0..n {
                    let ttl = self.len()?;
                    let at = match ttl {
                        0 => 0,
                        ttl => ttl
                            .checked_add(min - 1)
                            .filter(|&at| at <= FIELD_EXPIRE_MAX)
                            .ok_or_else(|| bad(self, "invalid expireAt time"))?,
                    };
                    let f = self.string()?;
                    let v = self.string()?;
                    if !h.set(&f, &v, &limits) {
                        return Err(bad(self, "Duplicate hash fields detected"));
                    }
                    if at != 0 {
                        ttls.push((f.into_owned(), at));
                    }
                }
                for (f, at) in ttls {
                    h.set_field_expiry(&f, at);
                }
                Value::Hash(h)
            }
            TYPE_HASH_LISTPACK_EX | TYPE_HASH_LISTPACK_EX_PRE_GA => {
                if t == TYPE_HASH_LISTPACK_EX {
                    // The earliest TTL, which the triples say again.
                    self.u64le()?;
                }
                let blob = self.blob()?;
                let items = packed::listpack(&blob).map_err(|m| bad(self, m))?;
                if items.len() % 3 != 0 {
                    return Err(bad(self, "Hash listpack integrity check failed."));
                }
                let mut h = Hash::new();
                let mut ttls = Vec::new();
                for triple in items.chunks_exact(3) {
                    let (f, v) = (triple[0].to_vec(), triple[1].to_vec());
                    let at = match triple[2] {
                        Item::Int(n) if (0..=FIELD_EXPIRE_MAX as i64).contains(&n) => n as u64,
                        _ => return Err(bad(self, "Hash listpack integrity check failed.")),
                    };
                    if !h.set(&f, &v, &limits) {
                        return Err(bad(self, "Duplicate hash fields detected"));
                    }
                    if at != 0 {
                        ttls.push((f, at));
                    }
                }
                if !h.is_empty() {
                    h.mark_listpack_ex();
                }
                for (f, at) in ttls {
                    h.set_field_expiry(&f, at);
                }
                Value::Hash(h)
            }
            TYPE_STREAM_LISTPACKS | TYPE_STREAM_LISTPACKS_2 | TYPE_STREAM_LISTPACKS_3 => {
                return self.stream(t, at).map(|s| Some(Value::Stream(Box::new(s))));
            }
            TYPE_MODULE | TYPE_MODULE_2 => {
                return Err(bad(
                    self,
                    "The RDB file contains module data I can't load: no module is loaded",
                ))
            }
            _ => return Err(bad(self, &format!("Unknown RDB encoding type {t}"))),
        };
        let empty = match &value {
            Value::List(l) => l.is_empty(),
            Value::Set(s) => s.is_empty(),
            Value::ZSet(z) => z.is_empty(),
            Value::Hash(h) => h.is_empty(),
            _ => false,
        };
        Ok((!empty).then_some(value))
    }

    fn stream_id(&mut self) -> Result<StreamId, RdbError> {
        Ok(StreamId::new(self.len()?, self.len()?))
    }

    fn raw_id(&mut self) -> Result<StreamId, RdbError> {
        let b = self.take(16)?;
        let mut ms = [0u8; 8];
        let mut seq = [0u8; 8];
        ms.copy_from_slice(&b[..8]);
        seq.copy_from_slice(&b[8..]);
        Ok(StreamId::new(
            u64::from_be_bytes(ms),
            u64::from_be_bytes(seq),
        ))
    }

    /// A stream: node listpacks, then IDs and counters, then groups.
    fn stream(&mut self, t: u8, at: usize) -> Result<Stream, RdbError> {
        let bad = |r: &Self, m: &str| r.err_at(at, format!("Stream: {m}"));
        let mut s = Stream::new();
        for _ in 0..self.count()? {
            let key = self.string()?;
            if key.len() != 16 {
                return Err(bad(self, "node key is not a 128-bit ID"));
            }
            let master = Reader {
                data: &key,
                pos: 0,
                limits: self.limits,
            }
            .raw_id()?;
            let blob = self.blob()?;
            let items = packed::listpack(&blob).map_err(|m| bad(self, m))?;
            stream_node(&mut s, master, &items).map_err(|m| bad(self, m))?;
        }
        let length = self.len()?;
        let last_id = self.stream_id()?;
        let (first_id, max_deleted_id, entries_added) = if t == TYPE_STREAM_LISTPACKS {
            let first = s.first_entry().map(|e| e.id).unwrap_or_default();
            (first, StreamId::MIN, length)
        } else {
            (self.stream_id()?, self.stream_id()?, self.len()?)
        };
        if s.len() != length {
            return Err(bad(self, "length does not match its entries"));
        }
        s.last_id = last_id;
        s.first_id = first_id;
        s.max_deleted_id = max_deleted_id;
        s.entries_added = entries_added;
        for _ in 0..self.count()? {
            let name = self.string()?.into_owned().into_boxed_slice();
            let last = self.stream_id()?;
            let entries_read = if t == TYPE_STREAM_LISTPACKS {
                s.estimate_distance(last)
            } else {
                self.len()? as i64
            };
            let mut g = Group::new(last, entries_read);
            // The group's PEL first (times and counts), then each consumer
            // names the entries it owns.
            let mut pel: BTreeMap<StreamId, (u64, u64)> = BTreeMap::new();
            for _ in 0..self.count()? {
                let id = self.raw_id()?;
                let time = self.u64le()?;
                let count = self.len()?;
                if pel.insert(id, (time, count)).is_some() {
                    return Err(bad(self, "duplicated entry in a group PEL"));
                }
            }
            for _ in 0..self.count()? {
                let cname: Arc<[u8]> = Arc::from(&*self.string()?);
                let seen_time = self.u64le()?;
                // Before RDB 11 a consumer's last activity is its last
                // interaction, as Redis reads it.
                let active_time = if t == TYPE_STREAM_LISTPACKS_3 {
                    self.u64le()? as i64
                } else {
                    seen_time as i64
                };
                let mut c = Consumer {
                    seen_time,
                    active_time,
                    pel: Default::default(),
                };
                for _ in 0..self.count()? {
                    let id = self.raw_id()?;
                    let Some(&(delivery_time, delivery_count)) = pel.get(&id) else {
                        return Err(bad(self, "consumer entry not found in the group PEL"));
                    };
                    c.pel.insert(id);
                    g.pel.insert(
                        id,
                        Nack {
                            consumer: cname.clone(),
                            delivery_time,
                            delivery_count,
                        },
                    );
                }
                if g.consumers.insert(cname, c).is_some() {
                    return Err(bad(self, "duplicated consumer in a group"));
                }
            }
            if g.pel.len() != pel.len() {
                return Err(bad(self, "group PEL entry without a consumer"));
            }
            if s.groups.insert(name, g).is_some() {
                return Err(bad(self, "duplicated consumer group name"));
            }
        }
        Ok(s)
    }
}

fn push_items(l: &mut List, items: &[Item]) {
    for i in items {
        match i {
            Item::Str(s) => l.push_back(s),
            Item::Int(n) => l.push_back(itoa::Buffer::new().format(*n).as_bytes()),
        }
    }
}

fn zadd(z: &mut ZSet, member: &[u8], score: f64, zl: ZLimits) -> Result<(), &'static str> {
    if score.is_nan() {
        return Err("Zset with NAN score detected");
    }
    if z.insert(member, score, zl).is_some() {
        return Err("Duplicate zset fields detected");
    }
    Ok(())
}

/// Appends the live entries of one Redis node listpack (layout in
/// `write::stream_nodes`) to `s`.
fn stream_node(s: &mut Stream, master: StreamId, items: &[Item]) -> Result<(), &'static str> {
    let mut it = items.iter().copied();
    let int = |it: &mut std::iter::Copied<std::slice::Iter<Item>>| {
        it.next()
            .and_then(Item::as_int)
            .ok_or("malformed node listpack")
    };
    let _count = int(&mut it)?;
    let _deleted = int(&mut it)?;
    let nfields = usize::try_from(int(&mut it)?).map_err(|_| "malformed node listpack")?;
    if nfields > items.len() {
        return Err("malformed node listpack");
    }
    let mut fields = Vec::with_capacity(nfields);
    for _ in 0..nfields {
        fields.push(it.next().ok_or("malformed node listpack")?.to_vec());
    }
    if int(&mut it)? != 0 {
        return Err("master entry without its terminator");
    }
    let mut deleted = Vec::new();
    let mut first = true;
    while let Some(flags) = it.next() {
        let flags = flags.as_int().ok_or("malformed node listpack")?;
        let ms = master.ms.wrapping_add(int(&mut it)? as u64);
        let seq = master.seq.wrapping_add(int(&mut it)? as u64);
        let id = StreamId::new(ms, seq);
        let mut pairs: Vec<Vec<u8>> = Vec::new();
        if flags & STREAM_ITEM_SAMEFIELDS != 0 {
            for f in &fields {
                pairs.push(f.clone());
                pairs.push(it.next().ok_or("malformed node listpack")?.to_vec());
            }
        } else {
            let n = usize::try_from(int(&mut it)?).map_err(|_| "malformed node listpack")?;
            if n > items.len() {
                return Err("malformed node listpack");
            }
            for _ in 0..2 * n {
                pairs.push(it.next().ok_or("malformed node listpack")?.to_vec());
            }
        }
        int(&mut it)?; // lp-count, for backward iteration
        if pairs.is_empty() {
            return Err("entry without fields");
        }
        let refs: Vec<&[u8]> = pairs.iter().map(|p| p.as_slice()).collect();
        // The file's node boundaries are kept, whatever the limits (as
        // Redis keeps each listpack): a limit of one byte opens a node,
        // no limit fills it.
        let limits = NodeLimits {
            max_bytes: if first { 1 } else { 0 },
            max_entries: 0,
        };
        first = false;
        s.append(id, &refs, limits)
            .map_err(|_| "entries out of order")?;
        if flags & STREAM_ITEM_DELETED != 0 {
            deleted.push(id);
        }
    }
    // Deleted entries stay in their node, flagged, as Redis keeps them
    // (node boundaries and a later DUMP come out as Redis's).
    for id in deleted {
        s.delete(id);
    }
    Ok(())
}
