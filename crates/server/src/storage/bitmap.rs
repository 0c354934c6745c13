//! Bit operations on byte strings, as Redis's bitops.c: a bitmap is a
//! string and bit 0 is the most significant bit of byte 0. Counting set
//! bits, finding the first set or clear bit, BITOP's AND/OR/XOR/NOT, and
//! BITFIELD's integers of 1 to 64 bits at any bit offset with Redis's
//! overflow rules. Pure: no RESP, no keyspace.

/// Set bits in `bytes`, a word at a time with the CPU's popcnt when it
/// has one (chosen at run time: the build targets baseline x86-64).
pub fn popcount(bytes: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: popcount_popcnt only needs the popcnt instruction,
            // which the CPU was just found to have.
            return unsafe { popcount_popcnt(bytes) };
        }
    }
    popcount_words(bytes)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn popcount_popcnt(bytes: &[u8]) -> u64 {
    popcount_words(bytes)
}

/// Four independent sums, so consecutive popcnts do not wait on one
/// another's result.
#[inline(always)]
fn popcount_words(bytes: &[u8]) -> u64 {
    let (blocks, rest) = bytes.as_chunks::<32>();
    let (mut a, mut b, mut c, mut d) = (0u64, 0u64, 0u64, 0u64);
    for block in blocks {
        let (w, _) = block.as_chunks::<8>();
        a += u64::from_ne_bytes(w[0]).count_ones() as u64;
        b += u64::from_ne_bytes(w[1]).count_ones() as u64;
        c += u64::from_ne_bytes(w[2]).count_ones() as u64;
        d += u64::from_ne_bytes(w[3]).count_ones() as u64;
    }
    let (words, tail) = rest.as_chunks::<8>();
    for w in words {
        a += u64::from_ne_bytes(*w).count_ones() as u64;
    }
    for byte in tail {
        b += byte.count_ones() as u64;
    }
    a + b + c + d
}

/// Set bits from bit `start` to bit `end`, both inclusive and within
/// `bytes`.
pub fn count_bits(bytes: &[u8], start: u64, end: u64) -> u64 {
    let (first, last) = ((start >> 3) as usize, (end >> 3) as usize);
    let mut n = popcount(&bytes[first..=last]);
    // Bits of the edge bytes outside the range.
    let head = !(0xFFu8 >> (start & 7));
    let tail = (1u8 << (7 - (end & 7))) - 1;
    n -= (bytes[first] & head).count_ones() as u64;
    n -= (bytes[last] & tail).count_ones() as u64;
    n
}

/// Redis's redisBitpos: the position of the first bit equal to `bit`.
/// Looking for a 0 in bytes that have none finds the bit just past the
/// end (the string is taken as zero-padded on the right); looking for a 1
/// that is not there finds nothing.
pub fn bitpos(bytes: &[u8], bit: bool) -> Option<u64> {
    let skip = if bit { 0u8 } else { 0xFF };
    let skip_word = u64::from_ne_bytes([skip; 8]);
    // Whole words of the byte to skip first: long runs are the common
    // case in bitmaps.
    let (words, _) = bytes.as_chunks::<8>();
    let from = words
        .iter()
        .position(|w| u64::from_ne_bytes(*w) != skip_word)
        .unwrap_or(words.len())
        * 8;
    match bytes[from..].iter().position(|&b| b != skip) {
        Some(i) => {
            let b = bytes[from + i];
            let v = if bit { b } else { !b };
            Some((from + i) as u64 * 8 + v.leading_zeros() as u64)
        }
        None if bit => None,
        None => Some(bytes.len() as u64 * 8),
    }
}

/// A BITOP operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// Bytes combined per pass: the block of the result stays in the L1
/// cache while every source is folded into it.
const BLOCK: usize = 4096;

/// BITOP over `srcs` (NOT takes the first only): as long as the longest
/// source, shorter ones read as zero-padded.
pub fn bitop(op: BitOp, srcs: &[&[u8]]) -> Vec<u8> {
    let mut res = Vec::new();
    bitop_into(op, srcs, &mut res);
    res
}

/// [`bitop`] into `res`, whose buffer is reused when it is large enough:
/// writing into pages already mapped avoids faulting in a fresh result,
/// most of the time a large BITOP takes otherwise.
pub fn bitop_into(op: BitOp, srcs: &[&[u8]], res: &mut Vec<u8>) {
    let len = srcs.iter().map(|s| s.len()).max().unwrap_or(0);
    if res.capacity() >= len {
        res.clear();
        res.resize(len, 0);
    } else {
        // Zeroed by the allocator, page by page as it is written.
        *res = vec![0u8; len];
    }
    let Some((first, rest)) = srcs.split_first() else {
        return;
    };
    for (i, out) in res.chunks_mut(BLOCK).enumerate() {
        let at = i * BLOCK;
        let head = window(first, at, out.len());
        out[..head.len()].copy_from_slice(head);
        match op {
            BitOp::Not => out.iter_mut().for_each(|b| *b = !*b),
            BitOp::And => {
                for s in rest {
                    let w = window(s, at, out.len());
                    let (over, past) = out.split_at_mut(w.len());
                    over.iter_mut().zip(w).for_each(|(o, b)| *o &= b);
                    past.fill(0);
                }
            }
            BitOp::Or => {
                for s in rest {
                    let w = window(s, at, out.len());
                    out.iter_mut().zip(w).for_each(|(o, b)| *o |= b);
                }
            }
            BitOp::Xor => {
                for s in rest {
                    let w = window(s, at, out.len());
                    out.iter_mut().zip(w).for_each(|(o, b)| *o ^= b);
                }
            }
        }
    }
}

/// Up to `len` bytes of `s` from `at` (fewer, or none, past its end).
fn window(s: &[u8], at: usize, len: usize) -> &[u8] {
    match s.get(at..) {
        Some(t) => &t[..t.len().min(len)],
        None => &[],
    }
}

/// All ones in the low `bits` bits (1 to 64).
fn low_mask(bits: u32) -> u64 {
    u64::MAX >> (64 - bits)
}

/// The 9 bytes from the one holding bit `offset` (at most 64 bits from
/// any bit position span 9 bytes), zeros past the end, as one number.
fn window9(bytes: &[u8], offset: u64) -> (u128, usize, usize) {
    let byte = usize::try_from(offset >> 3).unwrap_or(usize::MAX);
    let mut buf = [0u8; 16];
    let n = bytes.len().saturating_sub(byte).min(9);
    if n > 0 {
        buf[..n].copy_from_slice(&bytes[byte..byte + n]);
    }
    (u128::from_be_bytes(buf), byte, n)
}

/// Bits of the field's lowest bit from the right of the 16-byte window.
fn field_shift(offset: u64, bits: u32) -> u32 {
    128 - (offset & 7) as u32 - bits
}

/// The unsigned integer of `bits` bits (1 to 64) at bit `offset`; bits
/// past the end of `bytes` read as zeros.
pub fn get_unsigned(bytes: &[u8], offset: u64, bits: u32) -> u64 {
    let (w, _, _) = window9(bytes, offset);
    (w >> field_shift(offset, bits)) as u64 & low_mask(bits)
}

/// The two's complement integer of `bits` bits (1 to 64) at bit `offset`.
pub fn get_signed(bytes: &[u8], offset: u64, bits: u32) -> i64 {
    let v = get_unsigned(bytes, offset, bits);
    if bits < 64 && v & (1 << (bits - 1)) != 0 {
        (v | (u64::MAX << bits)) as i64
    } else {
        v as i64
    }
}

/// Stores the low `bits` bits (1 to 64) of `value` at bit `offset`.
/// `bytes` must hold the whole field (the caller grew it); bits it does
/// not hold are left unwritten.
pub fn set_unsigned(bytes: &mut [u8], offset: u64, bits: u32, value: u64) {
    let (w, byte, n) = window9(bytes, offset);
    let shift = field_shift(offset, bits);
    let mask = (low_mask(bits) as u128) << shift;
    let w = (w & !mask) | (((value & low_mask(bits)) as u128) << shift);
    if n > 0 {
        bytes[byte..byte + n].copy_from_slice(&w.to_be_bytes()[..n]);
    }
}

/// What BITFIELD does when a SET or INCRBY does not fit the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// Keep the low bits (two's complement for signed fields).
    Wrap,
    /// Clamp to the field's minimum or maximum.
    Sat,
    /// Leave the field alone (the command replies nil).
    Fail,
}

/// Redis's checkUnsignedBitfieldOverflow: `None` when `value + incr` fits
/// an unsigned field of `bits` bits, else the value to store instead
/// (unused with [`Overflow::Fail`]).
pub fn unsigned_overflow(value: u64, incr: i64, bits: u32, ow: Overflow) -> Option<u64> {
    let max = low_mask(bits);
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = (value as i64).wrapping_neg();
    let limit = if value > max || (incr > 0 && incr > max_incr) {
        max
    } else if incr < 0 && incr < min_incr {
        0
    } else {
        return None;
    };
    Some(match ow {
        Overflow::Wrap => value.wrapping_add(incr as u64) & max,
        Overflow::Sat => limit,
        Overflow::Fail => 0,
    })
}

/// Redis's checkSignedBitfieldOverflow: `None` when `value + incr` fits
/// a signed field of `bits` bits, else the value to store instead (unused
/// with [`Overflow::Fail`]).
pub fn signed_overflow(value: i64, incr: i64, bits: u32, ow: Overflow) -> Option<i64> {
    let max = (low_mask(bits) >> 1) as i64;
    let min = -max - 1;
    // These wrap for values out of range; they are only looked at once
    // `value` is known to be in range, where they do not (as in Redis).
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let limit = if value > max
        || (bits != 64 && incr > max_incr)
        || (value >= 0 && incr > 0 && incr > max_incr)
    {
        max
    } else if value < min
        || (bits != 64 && incr < min_incr)
        || (value < 0 && incr < 0 && incr < min_incr)
    {
        min
    } else {
        return None;
    };
    Some(match ow {
        Overflow::Wrap => {
            let c = (value as u64).wrapping_add(incr as u64);
            if bits < 64 {
                // Sign-extend from the field's top bit.
                let high = u64::MAX << bits;
                if c & (1 << (bits - 1)) != 0 {
                    (c | high) as i64
                } else {
                    (c & !high) as i64
                }
            } else {
                c as i64
            }
        }
        Overflow::Sat => limit,
        Overflow::Fail => 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit `i` of `bytes`, as SETBIT numbers it.
    fn bit(bytes: &[u8], i: u64) -> bool {
        bytes
            .get((i >> 3) as usize)
            .is_some_and(|b| b & (0x80 >> (i & 7)) != 0)
    }

    fn naive_count(bytes: &[u8]) -> u64 {
        bytes.iter().map(|b| b.count_ones() as u64).sum()
    }

    /// Deterministic bytes with runs of zeros and ones mixed in.
    fn sample(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                match (i / 40) % 4 {
                    0 => 0,
                    1 => 0xFF,
                    _ => x as u8,
                }
            })
            .collect()
    }

    #[test]
    fn popcount_on_unaligned_slices() {
        let data = sample(1000, 7);
        for start in 0..40 {
            for len in [0, 1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 100, 500, 960 - start] {
                let s = &data[start..start + len];
                assert_eq!(popcount(s), naive_count(s), "start {start} len {len}");
                assert_eq!(popcount_words(s), naive_count(s));
            }
        }
        assert_eq!(popcount(&[]), 0);
        assert_eq!(popcount(&[0xFF; 1025]), 8200);
    }

    #[test]
    fn bit_ranges() {
        let b = [0xFFu8, 0x0F, 0xF0];
        assert_eq!(count_bits(&b, 0, 23), 16);
        assert_eq!(count_bits(&b, 4, 11), 4);
        assert_eq!(count_bits(&b, 12, 12), 1);
        assert_eq!(count_bits(&b, 8, 11), 0);
        assert_eq!(count_bits(&b, 0, 7), 8);
        assert_eq!(count_bits(&b, 3, 15), 9);
        let data = sample(100, 3);
        for start in 0..120 {
            for end in start..start + 200 {
                if end >= 800 {
                    break;
                }
                let want = (start..=end).filter(|&i| bit(&data, i)).count() as u64;
                assert_eq!(count_bits(&data, start, end), want, "{start}..={end}");
            }
        }
    }

    #[test]
    fn bitpos_edges() {
        assert_eq!(bitpos(&[], true), None);
        assert_eq!(bitpos(&[], false), Some(0));
        assert_eq!(bitpos(&[0xFF; 20], false), Some(160));
        assert_eq!(bitpos(&[0; 20], true), None);
        assert_eq!(bitpos(&[0; 20], false), Some(0));
        assert_eq!(bitpos(&[0xFF, 0xFF, 0xFE], false), Some(23));
        assert_eq!(bitpos(&[0, 0, 0x01], true), Some(23));
        let data = sample(300, 11);
        for start in 0..24 {
            for len in 0..200 {
                let s = &data[start..start + len];
                for want_bit in [false, true] {
                    let want = (0..len as u64 * 8).find(|&i| bit(s, i) == want_bit);
                    let want = match (want, want_bit) {
                        (None, false) => Some(len as u64 * 8),
                        (w, _) => w,
                    };
                    assert_eq!(bitpos(s, want_bit), want, "{start} {len} {want_bit}");
                }
            }
        }
        // A set bit found at every position of a long run of zeros.
        for i in 0..256u64 {
            let mut z = vec![0u8; 32];
            z[(i >> 3) as usize] |= 0x80 >> (i & 7);
            assert_eq!(bitpos(&z, true), Some(i));
            let o: Vec<u8> = z.iter().map(|b| !b).collect();
            assert_eq!(bitpos(&o, false), Some(i));
        }
    }

    fn naive_bitop(op: BitOp, srcs: &[&[u8]]) -> Vec<u8> {
        let len = srcs.iter().map(|s| s.len()).max().unwrap_or(0);
        (0..len)
            .map(|i| {
                let at = |s: &[u8]| s.get(i).copied().unwrap_or(0);
                match op {
                    BitOp::Not => !at(srcs[0]),
                    BitOp::And => srcs.iter().fold(0xFF, |a, s| a & at(s)),
                    BitOp::Or => srcs.iter().fold(0, |a, s| a | at(s)),
                    BitOp::Xor => srcs.iter().fold(0, |a, s| a ^ at(s)),
                }
            })
            .collect()
    }

    #[test]
    fn bitop_pads_shorter_sources() {
        let a = sample(10000, 1);
        let b = sample(4097, 2);
        let c = sample(9000, 3);
        let cases: [&[&[u8]]; 6] = [
            &[&a],
            &[&a, &b],
            &[&b, &a, &c],
            &[&[], &b],
            &[&c, &[], &a],
            &[&b[..5], &a[3..40]],
        ];
        for srcs in cases {
            for op in [BitOp::And, BitOp::Or, BitOp::Xor] {
                assert_eq!(bitop(op, srcs), naive_bitop(op, srcs), "{op:?}");
            }
            assert_eq!(
                bitop(BitOp::Not, &srcs[..1]),
                naive_bitop(BitOp::Not, &srcs[..1])
            );
        }
        // Into a reused buffer, longer or shorter than the result.
        for mut reused in [vec![0xAAu8; 20000], vec![0x55u8; 3]] {
            bitop_into(BitOp::Or, &[&b[..5], &a[3..40]], &mut reused);
            assert_eq!(reused, naive_bitop(BitOp::Or, &[&b[..5], &a[3..40]]));
        }
        assert!(bitop(BitOp::And, &[]).is_empty());
        assert!(bitop(BitOp::Or, &[&[], &[]]).is_empty());
    }

    /// The field read and written a bit at a time, as Redis does.
    fn naive_get(bytes: &[u8], offset: u64, bits: u32) -> u64 {
        (0..bits as u64).fold(0, |v, j| (v << 1) | bit(bytes, offset + j) as u64)
    }

    #[test]
    fn fields_at_every_width_near_byte_boundaries() {
        let base = sample(24, 5);
        for bits in 1..=64u32 {
            for offset in (0..40u64).chain(190 - bits as u64..=192 - bits as u64) {
                assert_eq!(
                    get_unsigned(&base, offset, bits),
                    naive_get(&base, offset, bits)
                );
                let value = 0xA5C3_0F1E_9B7D_2468u64.rotate_left(bits + offset as u32);
                let mut b = base.clone();
                set_unsigned(&mut b, offset, bits, value);
                assert_eq!(get_unsigned(&b, offset, bits), value & low_mask(bits));
                // Nothing outside the field moved.
                for i in 0..b.len() as u64 * 8 {
                    if i < offset || i >= offset + bits as u64 {
                        assert_eq!(bit(&b, i), bit(&base, i), "{bits} {offset} {i}");
                    }
                }
                let s = get_signed(&b, offset, bits);
                let top = value & low_mask(bits) & (1 << (bits - 1)) != 0;
                assert_eq!(s < 0, top);
                assert_eq!(s as u64 & low_mask(bits), value & low_mask(bits));
            }
        }
        // Past the end reads as zeros, a field straddling the end too.
        assert_eq!(get_unsigned(&[0xFF], 4, 8), 0xF0);
        assert_eq!(get_unsigned(&[0xFF], 100, 64), 0);
        assert_eq!(get_unsigned(&[0xFF], u64::MAX - 63, 64), 0);
        assert_eq!(get_signed(&[0x80], 0, 1), -1);
        assert_eq!(get_signed(&[0x80; 8], 0, 64), i64::from_be_bytes([0x80; 8]));
    }

    #[test]
    fn overflow_as_redis() {
        use Overflow::*;
        // Unsigned: in range, over, under, and a SET of a negative value.
        assert_eq!(unsigned_overflow(250, 5, 8, Wrap), None);
        assert_eq!(unsigned_overflow(250, 6, 8, Wrap), Some(0));
        assert_eq!(unsigned_overflow(250, 6, 8, Sat), Some(255));
        assert_eq!(unsigned_overflow(3, -4, 8, Wrap), Some(255));
        assert_eq!(unsigned_overflow(3, -4, 8, Sat), Some(0));
        assert_eq!(unsigned_overflow(-1i64 as u64, 0, 8, Sat), Some(255));
        assert_eq!(unsigned_overflow(-1i64 as u64, 0, 8, Wrap), Some(255));
        assert_eq!(unsigned_overflow(0, i64::MAX, 63, Wrap), None);
        assert_eq!(unsigned_overflow(1, i64::MAX, 63, Wrap), Some(0));
        assert_eq!(unsigned_overflow(1, i64::MIN, 63, Sat), Some(0));
        assert!(unsigned_overflow(1, 1, 1, Fail).is_some());
        // Signed.
        assert_eq!(signed_overflow(127, 0, 8, Wrap), None);
        assert_eq!(signed_overflow(127, 1, 8, Wrap), Some(-128));
        assert_eq!(signed_overflow(127, 1, 8, Sat), Some(127));
        assert_eq!(signed_overflow(-128, -1, 8, Wrap), Some(127));
        assert_eq!(signed_overflow(-128, -1, 8, Sat), Some(-128));
        assert_eq!(signed_overflow(200, 0, 8, Wrap), Some(-56));
        assert_eq!(signed_overflow(-1000, 0, 8, Sat), Some(-128));
        assert_eq!(signed_overflow(0, -1, 1, Wrap), None);
        assert_eq!(signed_overflow(0, 1, 1, Wrap), Some(-1));
        assert_eq!(signed_overflow(i64::MAX, 1, 64, Wrap), Some(i64::MIN));
        assert_eq!(signed_overflow(i64::MAX, 1, 64, Sat), Some(i64::MAX));
        assert_eq!(signed_overflow(i64::MIN, -1, 64, Sat), Some(i64::MIN));
        assert_eq!(signed_overflow(i64::MIN, -1, 64, Wrap), Some(i64::MAX));
        assert_eq!(signed_overflow(i64::MIN, i64::MAX, 64, Wrap), None);
        assert_eq!(signed_overflow(-1, i64::MIN, 64, Sat), Some(i64::MIN));
        assert_eq!(signed_overflow(5, i64::MAX, 63, Sat), Some((1 << 62) - 1));
    }
}
