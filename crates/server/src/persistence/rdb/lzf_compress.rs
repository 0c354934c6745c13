//! LZF compression for RDB strings (liblzf's format, which Redis writes
//! and reads).
//!
//! Written here rather than taken from the `lzf` crate (still used to
//! decompress): its compressor allocates and zeroes a 64 K-entry hash
//! table on every call, which for a 1 KB value costs far more than the
//! compression itself and made snapshots and AOF rewrites of small values
//! CPU-bound. This one keeps its table across calls without clearing it:
//! a stale entry (from an earlier string) is only a candidate, accepted
//! only if it points before the current position, within reach, at the
//! same three bytes, as liblzf does without `INIT_HTAB`.

const HASH_BITS: u32 = 16;
/// Longest back reference (liblzf's MAX_REF) and farthest (MAX_OFF).
const MAX_REF: usize = (1 << 8) + (1 << 3);
const MAX_OFF: usize = 1 << 13;
/// Longest literal run.
const MAX_LIT: usize = 1 << 5;

#[derive(Default)]
pub struct Compressor {
    /// Position + 1 of the last place each 3-byte hash was seen (0: none);
    /// allocated by the first string compressed.
    table: Vec<u32>,
}

fn hash(a: u8, b: u8, c: u8) -> usize {
    let v = (a as u32) << 16 | (b as u32) << 8 | c as u32;
    (v.wrapping_mul(2_654_435_761) >> (32 - HASH_BITS)) as usize
}

impl Compressor {
    /// Appends `input` compressed to `out` and returns true, or returns
    /// false (leaving `out` as it was) when compressing does not make it
    /// shorter.
    pub fn compress(&mut self, input: &[u8], out: &mut Vec<u8>) -> bool {
        let start = out.len();
        let len = input.len();
        if len < 4 {
            return false;
        }
        if self.table.is_empty() {
            self.table = vec![0u32; 1 << HASH_BITS];
        }
        let mut ip = 0;
        let mut lit_start = 0;
        while ip + 2 < len {
            let h = hash(input[ip], input[ip + 1], input[ip + 2]);
            let candidate = self.table[h] as usize;
            self.table[h] = ip as u32 + 1;
            let found = candidate.checked_sub(1).filter(|&r| {
                r < ip && ip - r - 1 < MAX_OFF && input[r..r + 3] == input[ip..ip + 3]
            });
            let Some(r) = found else {
                ip += 1;
                continue;
            };
            let max = MAX_REF.min(len - ip);
            let mut n = 3;
            while n < max && input[r + n] == input[ip + n] {
                n += 1;
            }
            literals(out, &input[lit_start..ip]);
            let off = ip - r - 1;
            let code = n - 2;
            if code < 7 {
                out.push(((code as u8) << 5) | (off >> 8) as u8);
            } else {
                out.push((7 << 5) | (off >> 8) as u8);
                out.push((code - 7) as u8);
            }
            out.push(off as u8);
            ip += n;
            lit_start = ip;
            if out.len() - start >= len {
                out.truncate(start);
                return false;
            }
        }
        literals(out, &input[lit_start..]);
        if out.len() - start >= len {
            out.truncate(start);
            return false;
        }
        true
    }
}

/// Literal runs of at most 32 bytes, each after its length byte.
fn literals(out: &mut Vec<u8>, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        let n = bytes.len().min(MAX_LIT);
        out.push((n - 1) as u8);
        out.extend_from_slice(&bytes[..n]);
        bytes = &bytes[n..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(c: &mut Compressor, input: &[u8]) {
        let mut out = vec![0xAA];
        if c.compress(input, &mut out) {
            assert!(out.len() - 1 < input.len());
            let back = ::lzf::decompress(&out[1..], input.len()).expect("decompresses");
            assert_eq!(back, input);
        } else {
            assert_eq!(out, vec![0xAA]);
        }
    }

    #[test]
    fn compresses_what_redis_populates_and_repeats() {
        let mut c = Compressor::default();
        let mut value = b"value:123".to_vec();
        value.resize(1000, 0);
        let mut out = Vec::new();
        assert!(c.compress(&value, &mut out));
        assert!(out.len() < 40, "{}", out.len());
        round_trip(&mut c, &value);
        round_trip(
            &mut c,
            &b"abcabcabcabcabcabcabcabcabcabcabcabcabcabcabc".repeat(50),
        );
        // Random bytes do not compress.
        let noise: Vec<u8> = (0..500u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        round_trip(&mut c, &noise);
    }

    proptest! {
        #[test]
        fn round_trips_with_a_table_left_by_earlier_strings(
            inputs in proptest::collection::vec(
                proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), any::<u8>()], 4..3000),
                1..8,
            )
        ) {
            let mut c = Compressor::default();
            for input in &inputs {
                round_trip(&mut c, input);
            }
        }
    }
}
