//! Key → hash slot mapping, exactly as Redis Cluster: CRC16 (XMODEM) of the
//! key, or of the first non-empty `{hash tag}`, modulo 16384.
//!
//! keel places keys by slot from day one so the sharded keyspace, cluster
//! mode and slot migration all share one notion of where a key lives.

pub const SLOTS: usize = 16384;

const fn crc16_table() -> [u16; 256] {
    let mut table = [0u16; 256];
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
        table[i] = crc;
        i += 1;
    }
    table
}

static CRC16: [u16; 256] = crc16_table();

pub fn crc16(data: &[u8]) -> u16 {
    data.iter().fold(0u16, |crc, &b| {
        (crc << 8) ^ CRC16[(((crc >> 8) as u8) ^ b) as usize]
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
}
