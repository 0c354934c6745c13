//! Bitmaps on string values: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP,
//! BITFIELD and BITFIELD_RO, as Redis 7.0 (a bitmap is a string; bit 0 is
//! the most significant bit of byte 0). Replies, error texts and the order
//! of checks as Redis's bitops.c; the bit arithmetic is
//! `storage::bitmap`.

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;

use resp::encode;

use super::args::{self, is};
use super::error::{self, CmdError, CmdResult};
use super::table::Registry;
use super::typed;
use super::Ctx;
use crate::clients::notify;
use crate::storage::bitmap::{self as bits, BitOp, Overflow};
use crate::storage::keyspace::View;
use crate::storage::value::{EntryMut, Str, Value, EMBSTR_MAX};

pub(super) fn register(r: &mut Registry) {
    r.add("setbit", setbit);
    r.args_checked_first("setbit", |server, argv| {
        bit_offset_in(server, argv[2], 0).is_ok() && bit_value(argv[3]).is_ok()
    });
    r.add("getbit", getbit);
    r.args_checked_first("getbit", |server, argv| {
        bit_offset_in(server, argv[2], 0).is_ok()
    });
    r.add("bitcount", bitcount);
    r.add("bitpos", bitpos);
    r.add("bitop", bitop);
    r.add("bitfield", bitfield);
    r.add("bitfield_ro", bitfield_ro);
}

const BAD_OFFSET: CmdError = CmdError(std::borrow::Cow::Borrowed(
    "ERR bit offset is not an integer or out of range",
));
const BAD_BIT: CmdError = CmdError(std::borrow::Cow::Borrowed(
    "ERR bit is not an integer or out of range",
));
const BAD_FIELD_TYPE: CmdError = CmdError(std::borrow::Cow::Borrowed(
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.",
));
const NO_MEMORY: CmdError = CmdError(std::borrow::Cow::Borrowed(
    "ERR Insufficient memory for the bitmap",
));

/// An option word compared as Redis's strcasecmp does: the argument ends
/// at its first NUL byte (`"bit\0x"` is `BIT`).
fn word_is(arg: &[u8], word: &str) -> bool {
    let end = arg.iter().position(|&b| b == 0).unwrap_or(arg.len());
    is(&arg[..end], word)
}

/// A bit offset as Redis's getBitOffsetFromArgument: an integer from 0 to
/// what a string of proto-max-bulk-len bytes holds. With `hash_bits`
/// (BITFIELD), `#n` is the n-th field of that width.
fn bit_offset(cx: &Ctx, arg: &[u8], hash_bits: u32) -> Result<u64, CmdError> {
    bit_offset_in(cx.server, arg, hash_bits)
}

/// [`bit_offset`] for `server`'s proto-max-bulk-len.
fn bit_offset_in(
    server: &crate::server::Server,
    arg: &[u8],
    hash_bits: u32,
) -> Result<u64, CmdError> {
    let (digits, scale) = match arg.split_first() {
        Some((b'#', rest)) if hash_bits > 0 => (rest, hash_bits as i64),
        _ => (arg, 1),
    };
    // Redis multiplies in a C long long: a product past 64 bits wraps
    // (and is then range-checked), so it is wrapped here too.
    let n = resp::parse_i64(digits)
        .ok_or(BAD_OFFSET)?
        .wrapping_mul(scale);
    let max_bytes = i64::try_from(server.proto_max_bulk_len.load(Relaxed)).unwrap_or(i64::MAX);
    if n < 0 || (n >> 3) >= max_bytes {
        return Err(BAD_OFFSET);
    }
    Ok(n as u64)
}

/// SETBIT's bit: 0 or 1.
fn bit_value(arg: &[u8]) -> Result<bool, CmdError> {
    match resp::parse_i64(arg) {
        Some(v @ (0 | 1)) => Ok(v == 1),
        _ => Err(BAD_BIT),
    }
}

/// Redis's lookupStringForBitCommand: the string at `key` as raw bytes
/// at least `len` long, created or zero-padded as needed, and whether it
/// was created or grown (which counts as a change even when no bit
/// flips).
fn bitmap_for_write<'v>(
    view: &'v mut View<'_>,
    db: usize,
    key: &[u8],
    now: u64,
    len: usize,
) -> Result<(&'v mut Vec<u8>, bool), CmdError> {
    let created = match typed::write::<Str>(view, db, key, now)? {
        None => {
            // Exact, plus the spare byte that reports `raw` as Redis does.
            let mut v = Vec::new();
            v.try_reserve_exact(len + 1).map_err(|_| NO_MEMORY)?;
            v.resize(len, 0);
            view.set(db, key, Value::Str(Str::raw(v)), 0, now);
            true
        }
        Some(_) => false,
    };
    // (There now, a string: just checked or stored.)
    let s = typed::typed::<Str>(view.peek(db, key, now))?.ok_or(error::WRONGTYPE)?;
    let before = s.len();
    let raw = s.grow_zeroed(len).map_err(|_| NO_MEMORY)?;
    let grown = raw.len() != before;
    Ok((raw, created || grown))
}

/// SETBIT key offset value
fn setbit(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let offset = bit_offset(cx, argv[2], 0)?;
    let on = bit_value(argv[3])?;
    let (db, now, key) = (cx.db(), cx.now_ms, argv[1]);
    let byte = (offset >> 3) as usize;
    let mask = 0x80u8 >> (offset & 7);
    let (raw, changed) = bitmap_for_write(&mut cx.view, db, key, now, byte + 1)?;
    let old = raw[byte] & mask != 0;
    if changed || old != on {
        if on {
            raw[byte] |= mask;
        } else {
            raw[byte] &= !mask;
        }
        cx.dirty += 1;
        cx.notify(notify::STRING, "setbit", key);
    }
    cx.int(old as i64);
    Ok(())
}

/// GETBIT key offset
fn getbit(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let offset = bit_offset(cx, argv[2], 0)?;
    let (db, now) = (cx.db(), cx.now_ms);
    let bit = match typed::read::<Str>(&mut cx.view, db, argv[1], now)? {
        None => false,
        Some(s) => s.with_bytes(|b| {
            b.get((offset >> 3) as usize)
                .is_some_and(|byte| byte & (0x80 >> (offset & 7)) != 0)
        }),
    };
    cx.int(bit as i64);
    Ok(())
}

/// BYTE or BIT, the unit of a BITCOUNT/BITPOS range.
fn unit_is_bit(arg: &[u8]) -> Result<bool, CmdError> {
    if word_is(arg, "bit") {
        Ok(true)
    } else if word_is(arg, "byte") {
        Ok(false)
    } else {
        Err(error::SYNTAX)
    }
}

/// A BITCOUNT/BITPOS range over `total` units as Redis reads it: negative
/// ends count from the end, then both are clamped into the string.
fn clamp_range(mut start: i64, mut end: i64, total: i64) -> (i64, i64) {
    if start < 0 {
        start += total;
    }
    if end < 0 {
        end += total;
    }
    (start.max(0), end.max(0).min(total - 1))
}

/// BITCOUNT's range arguments.
enum CountRange {
    Whole,
    /// Both ends negative and start past end: nothing to count.
    Empty,
    Span {
        start: i64,
        end: i64,
        bit: bool,
    },
}

/// BITCOUNT's arguments after the key. Redis 7.2 (`unit_first`) reads the
/// unit before it answers an empty negative range; 7.0 after.
fn count_range(argv: &[&[u8]], unit_first: bool) -> Result<CountRange, CmdError> {
    match argv.len() {
        2 => return Ok(CountRange::Whole),
        4 | 5 => {}
        _ => return Err(error::SYNTAX),
    }
    let start = args::int(argv[2])?;
    let end = args::int(argv[3])?;
    let unit = |argv: &[&[u8]]| argv.get(4).map_or(Ok(false), |a| unit_is_bit(a));
    let early = if unit_first { Some(unit(argv)?) } else { None };
    if start < 0 && end < 0 && start > end {
        return Ok(CountRange::Empty);
    }
    let bit = match early {
        Some(bit) => bit,
        None => unit(argv)?,
    };
    Ok(CountRange::Span { start, end, bit })
}

/// BITCOUNT key [start end [BYTE | BIT]]
fn bitcount(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    // Redis 7.2 reads the arguments first; 7.0 answers 0 for a missing key
    // before it looks at them.
    let checked = if crate::speaks_7_4() {
        Some(count_range(argv, true)?)
    } else {
        None
    };
    let Some(s) = typed::read::<Str>(&mut cx.view, db, argv[1], now)? else {
        encode::integer(cx.out, 0);
        return Ok(());
    };
    let range = match checked {
        Some(r) => r,
        None => count_range(argv, false)?,
    };
    // Counted in place: a bitmap may be hundreds of MB.
    let count = s.with_bytes(|bytes| match range {
        CountRange::Whole => bits::popcount(bytes),
        CountRange::Empty => 0,
        CountRange::Span {
            mut start,
            mut end,
            bit,
        } => {
            let total = bytes.len() as i64 * if bit { 8 } else { 1 };
            (start, end) = clamp_range(start, end, total);
            if start > end {
                0
            } else if bit {
                bits::count_bits(bytes, start as u64, end as u64)
            } else {
                bits::popcount(&bytes[start as usize..=end as usize])
            }
        }
    });
    encode::integer(cx.out, count as i64);
    Ok(())
}

/// BITPOS key bit [start [end [BYTE | BIT]]]
fn bitpos(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let bit = match args::int(argv[2])? {
        0 => false,
        1 => true,
        _ => return Err(CmdError::new("ERR The bit argument must be 1 or 0.")),
    };
    if crate::speaks_7_4() {
        // Redis 7.2 reads the range before it looks the key up.
        bitpos_in(&[], bit, &argv[3..])?;
    }
    let (db, now) = (cx.db(), cx.now_ms);
    // A missing key is an endless run of zeros, whatever the range.
    let Some(s) = typed::read::<Str>(&mut cx.view, db, argv[1], now)? else {
        encode::integer(cx.out, if bit { -1 } else { 0 });
        return Ok(());
    };
    let pos = s.with_bytes(|bytes| bitpos_in(bytes, bit, &argv[3..]))?;
    encode::integer(cx.out, pos);
    Ok(())
}

/// redisBitpos with Redis's -1 for "no such bit".
fn first_bit(bytes: &[u8], bit: bool) -> i64 {
    bits::bitpos(bytes, bit).map_or(-1, |p| p as i64)
}

/// BITPOS over `bytes` with the range options `opts`, as Redis 7.0's
/// bitposCommand: a BIT range is searched as its partial first byte, the
/// whole bytes, then its partial last byte.
fn bitpos_in(bytes: &[u8], bit: bool, opts: &[&[u8]]) -> Result<i64, CmdError> {
    let len = bytes.len() as i64;
    let (mut start, mut end, in_bits, end_given);
    match opts.len() {
        0 => {
            (start, end, in_bits, end_given) = (0, len - 1, false, false);
        }
        1..=3 => {
            // Checked in Redis's order: start, unit, end.
            start = args::int(opts[0])?;
            in_bits = match opts.get(2) {
                Some(a) => unit_is_bit(a)?,
                None => false,
            };
            end_given = opts.len() >= 2;
            end = if end_given {
                args::int(opts[1])?
            } else if in_bits {
                len * 8 + 7
            } else {
                len - 1
            };
            let total = if in_bits { len * 8 } else { len };
            (start, end) = clamp_range(start, end, total);
        }
        _ => return Err(error::SYNTAX),
    }
    if start > end {
        return Ok(-1);
    }
    // Bits of the edge bytes outside a BIT range.
    let (mut first_mask, mut last_mask) = (0u8, 0u8);
    if in_bits {
        first_mask = !(0xFFu8 >> (start & 7));
        last_mask = (1u8 << (7 - (end & 7))) - 1;
        start >>= 3;
        end >>= 3;
    }
    // The masked-out bits are made the opposite of the bit sought.
    let masked = |b: u8, mask: u8| if bit { b & !mask } else { b | mask };
    let mut start = start as usize;
    let end = end as usize;
    let mut n = end - start + 1;
    let pos = 'search: {
        if first_mask != 0 {
            let mut b = masked(bytes[start], first_mask);
            if last_mask != 0 && n == 1 {
                b = masked(b, last_mask);
            }
            let pos = first_bit(&[b], bit);
            if n == 1 || (pos != -1 && pos != 8) {
                break 'search pos;
            }
            start += 1;
            n -= 1;
        }
        let whole = n - usize::from(last_mask != 0);
        if whole > 0 {
            let pos = first_bit(&bytes[start..start + whole], bit);
            if n == whole || (pos != -1 && pos != (whole as i64) << 3) {
                break 'search pos;
            }
            start += whole;
            n -= whole;
        }
        first_bit(&[masked(bytes[end], last_mask)], bit)
    };
    // With an explicit end, the bits right of the range are not zeros.
    if end_given && !bit && pos == (n as i64) << 3 {
        return Ok(-1);
    }
    Ok(if pos == -1 {
        -1
    } else {
        pos + ((start as i64) << 3)
    })
}

/// Sources moved out of the keyspace while BITOP reads them together (the
/// shards are locked: no one sees the placeholder), put back by
/// [`Sources::restore`].
struct Sources<'k> {
    taken: Vec<(&'k [u8], Str)>,
}

impl<'k> Sources<'k> {
    fn restore(self, cx: &mut Ctx) {
        let (db, now) = (cx.db(), cx.now_ms);
        for (key, s) in self.taken {
            if let Some(EntryMut {
                value: Value::Str(slot),
                ..
            }) = cx.view.peek(db, key, now)
            {
                *slot = s;
            }
        }
    }
}

/// Results from this size on may reuse the destination's buffer.
const LEND_MIN: usize = 1 << 20;

/// The heap buffer of the string at `dst` (left holding a placeholder
/// that BITOP then replaces), when it holds `len` bytes and at most twice
/// that: a large BITOP mostly waits on the kernel mapping a fresh result
/// and unmapping the value it replaces.
fn lend_buffer(
    view: &mut View<'_>,
    db: usize,
    dst: &[u8],
    now: u64,
    len: usize,
) -> Option<Vec<u8>> {
    match view.peek(db, dst, now) {
        Some(EntryMut {
            value: Value::Str(s),
            ..
        }) if s.heap_size() >= len && s.heap_size() / 2 <= len => {
            match std::mem::replace(s, Str::ZERO).into_raw() {
                Ok(v) => Some(v),
                Err(other) => {
                    *s = other;
                    None
                }
            }
        }
        _ => None,
    }
}

/// BITOP <AND | OR | XOR | NOT> destkey key [key ...]
fn bitop(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let op = [
        ("and", BitOp::And),
        ("or", BitOp::Or),
        ("xor", BitOp::Xor),
        ("not", BitOp::Not),
    ]
    .into_iter()
    .find(|(w, _)| word_is(argv[1], w))
    .map(|(_, op)| op)
    .ok_or(error::SYNTAX)?;
    if op == BitOp::Not && argv.len() != 4 {
        return Err(CmdError::new(
            "ERR BITOP NOT must be called with a single source key.",
        ));
    }
    let (db, now, dst) = (cx.db(), cx.now_ms, argv[2]);
    let keys = &argv[3..];
    let mut src = Sources { taken: Vec::new() };
    let mut index: HashMap<&[u8], usize> = HashMap::new();
    // For each key argument, its string in `src` (None: missing).
    let mut which: Vec<Option<usize>> = Vec::with_capacity(keys.len());
    for &key in keys {
        // Looked up once per argument, as Redis (hits and misses count).
        match cx.view.get(db, key, now) {
            None => which.push(None),
            Some(EntryMut {
                value: Value::Str(s),
                ..
            }) => {
                let i = *index.entry(key).or_insert_with(|| {
                    src.taken.push((key, std::mem::replace(s, Str::ZERO)));
                    src.taken.len() - 1
                });
                which.push(Some(i));
            }
            Some(_) => {
                src.restore(cx);
                return Err(error::WRONGTYPE);
            }
        }
    }
    let mut res = {
        // Integers are the only strings not held as bytes: formatted here.
        let digits: Vec<Option<Vec<u8>>> = src
            .taken
            .iter()
            .map(|(_, s)| s.as_int().map(|_| s.to_vec()))
            .collect();
        let held: Vec<&[u8]> = src
            .taken
            .iter()
            .zip(&digits)
            .map(|((_, s), d)| match d {
                Some(d) => d.as_slice(),
                None => s.as_bytes().unwrap_or_default(),
            })
            .collect();
        let srcs: Vec<&[u8]> = which
            .iter()
            .map(|w| w.map_or(&[][..], |i| held[i]))
            .collect();
        let len = srcs.iter().map(|s| s.len()).max().unwrap_or(0);
        let mut res = if len >= LEND_MIN && !index.contains_key(dst) {
            lend_buffer(&mut cx.view, db, dst, now, len).unwrap_or_default()
        } else {
            Vec::new()
        };
        bits::bitop_into(op, &srcs, &mut res);
        res
    };
    src.restore(cx);
    let len = res.len();
    if len > 0 {
        // Redis stores the result `raw`: spare room reports that.
        if len <= EMBSTR_MAX {
            res.reserve_exact(1);
        }
        cx.view.set(db, dst, Value::Str(Str::raw(res)), 0, now);
        cx.dirty += 1;
        cx.notify(notify::STRING, "set", dst);
    } else if cx.view.remove(db, dst, now).is_some() {
        cx.dirty += 1;
        cx.notify(notify::GENERIC, "del", dst);
    }
    cx.int(len as i64);
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum FieldCmd {
    Get,
    Set,
    IncrBy,
}

/// One BITFIELD operation, parsed before any runs.
struct FieldOp {
    cmd: FieldCmd,
    signed: bool,
    bits: u32,
    offset: u64,
    /// SET's value or INCRBY's increment.
    value: i64,
    overflow: Overflow,
}

/// A field type, `i1`..`i64` or `u1`..`u63` (Redis reads it as a C
/// string: it ends at a NUL byte).
fn field_type(arg: &[u8]) -> Result<(bool, u32), CmdError> {
    let end = arg.iter().position(|&b| b == 0).unwrap_or(arg.len());
    let (signed, width) = match arg[..end].split_first() {
        Some((b'i', w)) => (true, w),
        Some((b'u', w)) => (false, w),
        _ => return Err(BAD_FIELD_TYPE),
    };
    match resp::parse_i64(width) {
        Some(n) if n >= 1 && n <= if signed { 64 } else { 63 } => Ok((signed, n as u32)),
        _ => Err(BAD_FIELD_TYPE),
    }
}

/// BITFIELD key [GET encoding offset | [OVERFLOW <WRAP | SAT | FAIL>]
/// <SET encoding offset value | INCRBY encoding offset increment> ...]
fn bitfield(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    bitfield_generic(cx, argv, false)
}

/// BITFIELD_RO key [GET encoding offset ...]
fn bitfield_ro(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    bitfield_generic(cx, argv, true)
}

/// Redis's bitfieldGeneric: every operation is parsed (and any error
/// replied) before the key is looked at; the key is created or grown, up
/// to the farthest bit a SET or INCRBY reaches, only when there is one.
fn bitfield_generic(cx: &mut Ctx, argv: &[&[u8]], read_only: bool) -> CmdResult {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    // The farthest bit written, if anything is.
    let mut highest: Option<u64> = None;
    let mut a = args::Args::new(argv, 2);
    while let Some(sub) = a.take() {
        let left = a.left();
        let cmd = if word_is(sub, "get") && left >= 2 {
            FieldCmd::Get
        } else if word_is(sub, "set") && left >= 3 {
            FieldCmd::Set
        } else if word_is(sub, "incrby") && left >= 3 {
            FieldCmd::IncrBy
        } else if word_is(sub, "overflow") && left >= 1 {
            let w = a.value();
            if word_is(w, "wrap") {
                overflow = Overflow::Wrap;
            } else if word_is(w, "sat") {
                overflow = Overflow::Sat;
            } else if word_is(w, "fail") {
                overflow = Overflow::Fail;
            } else {
                a.fail(CmdError::new("ERR Invalid OVERFLOW type specified"));
            }
            continue;
        } else {
            a.fail(error::SYNTAX);
            break;
        };
        let (type_arg, offset_arg) = (a.value(), a.value());
        let Some((signed, width)) = a.check(field_type(type_arg)) else {
            break;
        };
        let Some(offset) = a.check(bit_offset(cx, offset_arg, width)) else {
            break;
        };
        let mut value = 0;
        if cmd != FieldCmd::Get {
            let last = offset + width as u64 - 1;
            highest = Some(highest.map_or(last, |h| h.max(last)));
            let v = a.value();
            value = a.check(args::int(v)).unwrap_or(0);
        }
        ops.push(FieldOp {
            cmd,
            signed,
            bits: width,
            offset,
            value,
            overflow,
        });
    }
    a.finish()?;
    let (db, now, key) = (cx.db(), cx.now_ms, argv[1]);
    let Some(highest) = highest else {
        // Only reads: a missing key reads as zeros and is not created.
        let s = typed::read::<Str>(&mut cx.view, db, key, now)?;
        encode::array(cx.out, ops.len());
        let read = |bytes: &[u8], out: &mut Vec<u8>| {
            for op in &ops {
                encode::integer(out, get_field(bytes, op));
            }
        };
        match s {
            Some(s) => s.with_bytes(|b| read(b, cx.out)),
            None => read(&[], cx.out),
        }
        return Ok(());
    };
    if read_only {
        return Err(CmdError::new(
            "ERR BITFIELD_RO only supports the GET subcommand",
        ));
    }
    let proto = cx.client.proto;
    // `highest` is below proto-max-bulk-len bits plus 64: it fits.
    let len = (highest >> 3) as usize + 1;
    let (raw, grown) = bitmap_for_write(&mut cx.view, db, key, now, len)?;
    encode::array(cx.out, ops.len());
    let mut changes = 0;
    for op in &ops {
        let (old, new, overflowed, reply) = match op.cmd {
            FieldCmd::Get => {
                encode::integer(cx.out, get_field(raw, op));
                continue;
            }
            _ if op.signed => {
                let old = bits::get_signed(raw, op.offset, op.bits);
                let (new, limit, reply) = if op.cmd == FieldCmd::IncrBy {
                    let limit = bits::signed_overflow(old, op.value, op.bits, op.overflow);
                    let new = limit.unwrap_or(old.wrapping_add(op.value));
                    (new, limit, new)
                } else {
                    let limit = bits::signed_overflow(op.value, 0, op.bits, op.overflow);
                    (limit.unwrap_or(op.value), limit, old)
                };
                (old as u64, new as u64, limit.is_some(), reply)
            }
            _ => {
                let old = bits::get_unsigned(raw, op.offset, op.bits);
                let (new, limit, reply) = if op.cmd == FieldCmd::IncrBy {
                    let limit = bits::unsigned_overflow(old, op.value, op.bits, op.overflow);
                    let new = limit.unwrap_or(old.wrapping_add(op.value as u64));
                    (new, limit, new as i64)
                } else {
                    let v = op.value as u64;
                    let limit = bits::unsigned_overflow(v, 0, op.bits, op.overflow);
                    (limit.unwrap_or(v), limit, old as i64)
                };
                (old, new, limit.is_some(), reply)
            }
        };
        if overflowed && op.overflow == Overflow::Fail {
            encode::null(cx.out, proto);
            continue;
        }
        encode::integer(cx.out, reply);
        bits::set_unsigned(raw, op.offset, op.bits, new);
        if grown || old != new {
            changes += 1;
        }
    }
    if changes > 0 {
        cx.dirty += changes;
        cx.notify(notify::STRING, "setbit", key);
    }
    Ok(())
}

fn get_field(bytes: &[u8], op: &FieldOp) -> i64 {
    if op.signed {
        bits::get_signed(bytes, op.offset, op.bits)
    } else {
        bits::get_unsigned(bytes, op.offset, op.bits) as i64
    }
}
