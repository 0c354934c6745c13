//! Bitmaps on string values: SETBIT, GETBIT, BITCOUNT, as Redis 7.0 (a
//! bitmap is a string; bit 0 is the most significant bit of byte 0).
//! Replies and error texts as Redis's bitops.c.

use std::sync::atomic::Ordering::Relaxed;

use resp::encode;

use super::args::{self, is};
use super::error::{self, CmdError, CmdResult};
use super::keys::lookup_write;
use super::table::Registry;
use super::Ctx;
use crate::notify;
use crate::storage::value::{EntryMut, Str, Value};

pub(super) fn register(r: &mut Registry) {
    r.add("setbit", setbit);
    r.add("getbit", getbit);
    r.add("bitcount", bitcount);
}

const BAD_OFFSET: CmdError = CmdError(std::borrow::Cow::Borrowed(
    "ERR bit offset is not an integer or out of range",
));
const BAD_BIT: CmdError = CmdError(std::borrow::Cow::Borrowed(
    "ERR bit is not an integer or out of range",
));

/// A bit offset as Redis's getBitOffsetFromArgument: an integer from 0 to
/// what a string of proto-max-bulk-len bytes holds.
fn bit_offset(cx: &Ctx, arg: &[u8]) -> Result<u64, CmdError> {
    let n = resp::parse_i64(arg).ok_or(BAD_OFFSET)?;
    let max_bytes = cx.server.proto_max_bulk_len.load(Relaxed) as i64;
    if n < 0 || (n >> 3) >= max_bytes {
        return Err(BAD_OFFSET);
    }
    Ok(n as u64)
}

/// SETBIT key offset value
fn setbit(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let offset = bit_offset(cx, argv[2])?;
    let on = match resp::parse_i64(argv[3]) {
        Some(v @ (0 | 1)) => v == 1,
        _ => return Err(BAD_BIT),
    };
    let (db, now, key) = (cx.db(), cx.now_ms, argv[1]);
    let byte = (offset >> 3) as usize;
    let mask = 1u8 << (7 - (offset & 7));
    // Redis's lookupStringForBitCommand: created or grown counts as a
    // change even when the bit already had the value.
    let (old, changed) = match lookup_write(&mut cx.view, db, key, now) {
        None => {
            let mut v = vec![0u8; byte + 1];
            if on {
                v[byte] |= mask;
            }
            cx.view.set(db, key, Value::Str(Str::raw(v)), 0, now);
            (false, true)
        }
        Some(EntryMut {
            value: Value::Str(s),
            ..
        }) => {
            let raw = s.make_raw();
            let grown = raw.len() <= byte;
            if grown {
                raw.resize(byte + 1, 0);
            }
            let old = raw[byte] & mask != 0;
            if grown || old != on {
                if on {
                    raw[byte] |= mask;
                } else {
                    raw[byte] &= !mask;
                }
            }
            (old, grown || old != on)
        }
        Some(_) => return Err(error::WRONGTYPE),
    };
    if changed {
        cx.dirty += 1;
        cx.notify(notify::STRING, "setbit", key);
    }
    cx.int(old as i64);
    Ok(())
}

/// GETBIT key offset
fn getbit(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let offset = bit_offset(cx, argv[2])?;
    let (db, now) = (cx.db(), cx.now_ms);
    let bit = match cx.view.get(db, argv[1], now) {
        None => false,
        Some(EntryMut {
            value: Value::Str(s),
            ..
        }) => s.with_bytes(|b| {
            b.get((offset >> 3) as usize)
                .is_some_and(|byte| byte & (1 << (7 - (offset & 7))) != 0)
        }),
        Some(_) => return Err(error::WRONGTYPE),
    };
    cx.int(bit as i64);
    Ok(())
}

/// BITCOUNT key [start end [BYTE | BIT]]
fn bitcount(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (db, now) = (cx.db(), cx.now_ms);
    // As Redis: a missing key is 0 before the arguments are looked at.
    let s = match cx.view.get(db, argv[1], now) {
        None => {
            encode::integer(cx.out, 0);
            return Ok(());
        }
        Some(EntryMut {
            value: Value::Str(s),
            ..
        }) => s,
        Some(_) => return Err(error::WRONGTYPE),
    };
    // Counted in place: a bitmap may be hundreds of MB.
    let count = s.with_bytes(|bytes| -> Result<u64, CmdError> {
        if argv.len() == 2 {
            return Ok(popcount(bytes));
        }
        if argv.len() != 4 && argv.len() != 5 {
            return Err(error::SYNTAX);
        }
        let mut start = args::int(argv[2])?;
        let mut end = args::int(argv[3])?;
        if start < 0 && end < 0 && start > end {
            return Ok(0);
        }
        let bit = match argv.get(4) {
            None => false,
            Some(a) if is(a, "BIT") => true,
            Some(a) if is(a, "BYTE") => false,
            Some(_) => return Err(error::SYNTAX),
        };
        let total = bytes.len() as i64 * if bit { 8 } else { 1 };
        if start < 0 {
            start += total;
        }
        if end < 0 {
            end += total;
        }
        start = start.max(0);
        end = end.max(0).min(total - 1);
        Ok(if start > end {
            0
        } else if bit {
            count_bits(bytes, start as u64, end as u64)
        } else {
            popcount(&bytes[start as usize..=end as usize])
        })
    })?;
    encode::integer(cx.out, count as i64);
    Ok(())
}

/// Set bits in `bytes`, eight bytes at a time (the CPU's popcount).
fn popcount(bytes: &[u8]) -> u64 {
    let mut chunks = bytes.chunks_exact(8);
    let mut n: u64 = 0;
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        n += u64::from_ne_bytes(w).count_ones() as u64;
    }
    n + chunks
        .remainder()
        .iter()
        .map(|b| b.count_ones() as u64)
        .sum::<u64>()
}

/// Set bits from bit `start` to bit `end` (inclusive, both in range).
fn count_bits(bytes: &[u8], start: u64, end: u64) -> u64 {
    let (first, last) = ((start >> 3) as usize, (end >> 3) as usize);
    let mut n = popcount(&bytes[first..=last]);
    // Bits of the edge bytes outside the range.
    let head = !(0xFFu8 >> (start & 7));
    let tail = (1u8 << (7 - (end & 7))) - 1;
    n -= (bytes[first] & head).count_ones() as u64;
    n -= (bytes[last] & tail).count_ones() as u64;
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_ranges() {
        let b = [0xFFu8, 0x0F, 0xF0];
        assert_eq!(popcount(&b), 16);
        assert_eq!(count_bits(&b, 0, 23), 16);
        assert_eq!(count_bits(&b, 4, 11), 4);
        assert_eq!(count_bits(&b, 12, 12), 1);
        assert_eq!(count_bits(&b, 8, 11), 0);
        assert_eq!(count_bits(&b, 0, 7), 8);
        assert_eq!(count_bits(&b, 3, 15), 9);
        let long: Vec<u8> = (0..=255u8).collect();
        assert_eq!(
            popcount(&long),
            long.iter().map(|b| b.count_ones() as u64).sum::<u64>()
        );
    }
}
