//! Key → hash slot mapping, exactly as Redis Cluster: CRC16 (XMODEM) of the
//! key, or of the first non-empty `{hash tag}`, modulo 16384.
//!
//! keel places keys by slot from day one so the sharded keyspace, cluster
//! mode and slot migration all share one notion of where a key lives; the
//! server and keel-benchmark (routing in cluster mode) share this one.
//!
//! CRC16 is hand-sliced rather than the `crc` crate's: on the short keys
//! commands carry (10-24 bytes) it measured faster than the crate's
//! slicing-by-16 table (docs/benchmarks.md, "Key slots").

pub const SLOTS: usize = 16384;

/// `TABLES[k][b]`: the CRC of byte `b` followed by `k` zero bytes.
/// `TABLES[0]` is the usual byte-at-a-time table; the others let
/// [`crc16`] fold eight bytes per step ("slicing-by-8"). Every command
/// hashes its keys to a slot, and the byte-at-a-time loop is one long
/// chain of dependent table lookups (~5 cycles a byte).
const fn crc16_tables() -> [[u16; 256]; 8] {
    let mut t = [[0u16; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut j = 0;
        while j < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            j += 1;
        }
        t[0][i] = crc;
        i += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = (prev << 8) ^ t[0][(prev >> 8) as usize];
            i += 1;
        }
        k += 1;
    }
    t
}

static TABLES: [[u16; 256]; 8] = crc16_tables();

pub fn crc16(data: &[u8]) -> u16 {
    let t = &TABLES;
    let mut crc = 0u16;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let [hi, lo] = crc.to_be_bytes();
        crc = t[7][(c[0] ^ hi) as usize]
            ^ t[6][(c[1] ^ lo) as usize]
            ^ t[5][c[2] as usize]
            ^ t[4][c[3] as usize]
            ^ t[3][c[4] as usize]
            ^ t[2][c[5] as usize]
            ^ t[1][c[6] as usize]
            ^ t[0][c[7] as usize];
    }
    // The rest in steps of four, two and one: the CRC is two bytes wide, so
    // a step of two or more bytes leaves nothing of it but what the tables
    // carry.
    let mut rest = chunks.remainder();
    if let [a, b, c, d, tail @ ..] = rest {
        let [hi, lo] = crc.to_be_bytes();
        crc = t[3][(a ^ hi) as usize]
            ^ t[2][(b ^ lo) as usize]
            ^ t[1][*c as usize]
            ^ t[0][*d as usize];
        rest = tail;
    }
    if let [a, b, tail @ ..] = rest {
        let [hi, lo] = crc.to_be_bytes();
        crc = t[1][(a ^ hi) as usize] ^ t[0][(b ^ lo) as usize];
        rest = tail;
    }
    if let [a] = rest {
        crc = (crc << 8) ^ t[0][(((crc >> 8) as u8) ^ a) as usize];
    }
    crc
}

/// The first `{` in `key`. Most keys have none, so the whole key is
/// scanned on every command: eight bytes per step (a word with a zero byte
/// where `key` has a `{`, found with the classic has-zero-byte test)
/// instead of one.
#[inline]
fn find_open_brace(key: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const BRACES: u64 = u64::from_ne_bytes([b'{'; 8]);
    let mut chunks = key.chunks_exact(8);
    let mut base = 0;
    for c in &mut chunks {
        let x = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) ^ BRACES;
        // Exact for the first zero byte (borrows only run upwards), which
        // is the one wanted.
        let found = x.wrapping_sub(ONES) & !x & HIGHS;
        if found != 0 {
            return Some(base + found.trailing_zeros() as usize / 8);
        }
        base += 8;
    }
    // The last few bytes as one more word, padded with bytes that are not
    // `{` (zeros, which the XOR turns into non-zero bytes).
    let rest = chunks.remainder();
    let mut word = [0u8; 8];
    word[..rest.len()].copy_from_slice(rest);
    let x = u64::from_le_bytes(word) ^ BRACES;
    let found = x.wrapping_sub(ONES) & !x & HIGHS;
    (found != 0).then(|| base + found.trailing_zeros() as usize / 8)
}

/// The hash slot of `key`, honouring hash tags.
#[inline]
pub fn key_slot(key: &[u8]) -> usize {
    if let Some(open) = find_open_brace(key) {
        if let Some(len) = key[open + 1..].iter().position(|&c| c == b'}') {
            if len > 0 {
                return crc16(&key[open + 1..open + 1 + len]) as usize & (SLOTS - 1);
            }
        }
    }
    crc16(key) as usize & (SLOTS - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_redis_cluster_keyslot() {
        // Values from `CLUSTER KEYSLOT` on redis-server.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(
            key_slot(b"foo{}{bar}"),
            crc16(b"foo{}{bar}") as usize % SLOTS
        );
        assert_eq!(key_slot(b"foo{{bar}}zap"), crc16(b"{bar") as usize % SLOTS);
    }

    #[test]
    fn open_brace_found_at_every_position_and_length() {
        for len in 0..40 {
            let plain = vec![b'a'; len];
            assert_eq!(find_open_brace(&plain), None);
            for at in 0..len {
                let mut k = plain.clone();
                k[at] = b'{';
                // A second brace later, and bytes that differ from '{' by
                // one bit or sit just below it, must not move the answer.
                if at + 3 < len {
                    k[at + 3] = b'{';
                }
                if at > 0 {
                    k[at - 1] = b'z';
                }
                assert_eq!(find_open_brace(&k), Some(at), "len {len} at {at}");
            }
        }
        let mut k = vec![0xfb_u8; 17];
        assert_eq!(find_open_brace(&k), None);
        k[16] = b'{';
        assert_eq!(find_open_brace(&k), Some(16));
    }

    /// The bit-by-bit definition of CRC16/XMODEM, to check the sliced one.
    fn crc16_bitwise(data: &[u8]) -> u16 {
        let mut crc = 0u16;
        for &b in data {
            crc ^= (b as u16) << 8;
            for _ in 0..8 {
                crc = if crc & 0x8000 != 0 {
                    (crc << 1) ^ 0x1021
                } else {
                    crc << 1
                };
            }
        }
        crc
    }

    #[test]
    fn sliced_crc_matches_bitwise_at_every_length() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 7919 % 251) as u8).collect();
        for len in 0..data.len() {
            for start in [0, 1, 5] {
                let d = &data[start..start.max(len)];
                assert_eq!(crc16(d), crc16_bitwise(d), "len {len} start {start}");
            }
        }
    }
}
