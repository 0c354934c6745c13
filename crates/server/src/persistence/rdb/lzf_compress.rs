//! LZF compression for RDB strings (liblzf's format, which Redis writes
//! and reads).
//!
//! Written here rather than taken from the `lzf` crate (still used to
//! decompress): its compressor allocates and zeroes a 64 K-entry hash
//! table on every call, which for a 1 KB value costs far more than the
//! compression itself and made snapshots and AOF rewrites of small values
//! CPU-bound. This one keeps its table across calls; entries are tagged
//! with the call that wrote them instead of being cleared. The output is
//! liblzf's, byte for byte (the tests hold it to the crate's), since DUMP
//! payloads must be Redis's.

const HASH_BITS: u32 = 16;
/// Longest back reference (liblzf's MAX_REF) and farthest (MAX_OFF).
const MAX_REF: usize = (1 << 8) + (1 << 3);
const MAX_OFF: usize = 1 << 13;
/// Longest literal run.
const MAX_LIT: usize = 1 << 5;

/// The compressor's state: liblzf's hash table, kept across strings.
/// Each entry is tagged with the call that wrote it, so an entry of an
/// earlier string reads as empty: the output is byte for byte what a fresh
/// table gives (and what Redis writes), which DUMP payloads must match.
#[derive(Default)]
pub struct Compressor {
    /// `call << 32 | position`; allocated by the first string compressed.
    table: Vec<u64>,
    call: u32,
}

/// liblzf's rolling hash: the next byte shifted in (the value keeps the
/// byte before the three it hashes, as liblzf's does).
fn roll(v: u32, next: u8) -> u32 {
    (v << 8) | next as u32
}

fn slot(h: u32) -> usize {
    let h = h as u64;
    ((h >> 8).wrapping_sub(h * 5) & ((1 << HASH_BITS) - 1)) as usize
}

impl Compressor {
    /// Appends `input` compressed to `out` and returns true, or returns
    /// false (leaving `out` as it was) when liblzf gives up: the output
    /// would not be shorter than the input.
    pub fn compress(&mut self, input: &[u8], out: &mut Vec<u8>) -> bool {
        let len = input.len();
        if len < 2 || len >= u32::MAX as usize {
            return false;
        }
        if self.table.is_empty() {
            self.table = vec![0u64; 1 << HASH_BITS];
        }
        self.call = self.call.wrapping_add(1);
        if self.call == 0 {
            self.table.iter_mut().for_each(|e| *e = 0);
            self.call = 1;
        }
        let tag = (self.call as u64) << 32;
        let start = out.len();
        match self.encode(input, out, tag) {
            Some(()) => true,
            None => {
                out.truncate(start);
                false
            }
        }
    }

    /// liblzf's compressor (HLOG 16, no INIT_HTAB: a position not written
    /// by this call reads as 0, which is never a valid reference), with
    /// its limit of an output no longer than the input.
    fn encode(&mut self, input: &[u8], out: &mut Vec<u8>, tag: u64) -> Option<()> {
        let len = input.len();
        let base = out.len();
        let limit = len;
        // The control byte of the literal run in progress is reserved at
        // `run`, and filled in when the run ends.
        let mut run = out.len();
        out.push(0);
        let mut lit = 0usize;
        let mut ip = 0usize;
        let mut h = (input[0] as u32) << 8 | input[1] as u32;
        while ip < len - 2 {
            h = roll(h, input[ip + 2]);
            let i = slot(h);
            let entry = self.table[i];
            let candidate = if entry & !0xffff_ffff == tag {
                (entry & 0xffff_ffff) as usize
            } else {
                0
            };
            self.table[i] = tag | ip as u64;
            let off = ip.wrapping_sub(candidate).wrapping_sub(1);
            if off < MAX_OFF
                && ip + 4 < len
                && candidate > 0
                && candidate < len - 2
                && input[candidate..candidate + 3] == input[ip..ip + 3]
            {
                // End the literal run (or drop its reserved byte if empty).
                if lit == 0 {
                    out.pop();
                } else {
                    out[run] = (lit - 1) as u8;
                }
                if out.len() - base + 4 >= limit {
                    return None;
                }
                let max = (len - ip - 2).min(MAX_REF);
                let mut n = 3;
                while n < max && input[candidate + n] == input[ip + n] {
                    n += 1;
                }
                let code = n - 2;
                if code < 7 {
                    out.push((off >> 8) as u8 + ((code as u8) << 5));
                } else {
                    out.push((off >> 8) as u8 + (7 << 5));
                    out.push((code - 7) as u8);
                }
                out.push(off as u8);
                run = out.len();
                out.push(0);
                lit = 0;
                ip += n - 2;
                if ip >= len {
                    break;
                }
                // The last two positions of the match enter the table.
                h = (input[ip] as u32) << 8 | input[ip + 1] as u32;
                for _ in 0..2 {
                    h = roll(h, input[ip + 2]);
                    self.table[slot(h)] = tag | ip as u64;
                    ip += 1;
                }
            } else {
                if out.len() - base >= limit {
                    return None;
                }
                literal(out, input[ip], &mut lit, &mut run);
                ip += 1;
            }
        }
        if out.len() - base + 3 > limit {
            return None;
        }
        while ip < len {
            literal(out, input[ip], &mut lit, &mut run);
            ip += 1;
        }
        if lit == 0 {
            out.pop();
        } else {
            out[run] = (lit - 1) as u8;
        }
        Some(())
    }
}

/// One literal byte into the run in progress; a full run (32 bytes) gets
/// its control byte and a new run is reserved.
fn literal(out: &mut Vec<u8>, byte: u8, lit: &mut usize, run: &mut usize) {
    out.push(byte);
    *lit += 1;
    if *lit == MAX_LIT {
        out[*run] = (*lit - 1) as u8;
        *lit = 0;
        *run = out.len();
        out.push(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Ours against the `lzf` crate (liblzf's output, as Redis writes it),
    /// byte for byte, then back.
    fn round_trip(c: &mut Compressor, input: &[u8]) {
        let mut out = vec![0xAA];
        let ours = c.compress(input, &mut out).then(|| out[1..].to_vec());
        assert_eq!(ours, ::lzf::compress(input).ok(), "{} bytes", input.len());
        if let Some(packed) = ours {
            let back = ::lzf::decompress(&packed, input.len()).expect("decompresses");
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
        out.clear();
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
