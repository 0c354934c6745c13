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
    chunks.remainder().iter().fold(crc, |crc, &b| {
        (crc << 8) ^ t[0][(((crc >> 8) as u8) ^ b) as usize]
    })
}

/// The hash slot of `key`, honouring hash tags.
#[inline]
pub fn key_slot(key: &[u8]) -> usize {
    if let Some(open) = key.iter().position(|&c| c == b'{') {
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
