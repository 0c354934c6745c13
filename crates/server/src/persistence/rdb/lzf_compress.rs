//! LZF compression for RDB strings (liblzf's format, which Redis writes
//! and reads).
//!
//! Written here rather than taken from the `lzf` crate (still used to
//! decompress): its compressor allocates and zeroes a 64 K-entry hash
//! table on every call, which for a 1 KB value costs far more than the
//! compression itself and made snapshots and AOF rewrites of small values
//! CPU-bound. This one keeps its table across calls; entries are tagged
//! with the call that wrote them instead of being cleared. The output is
//! Redis's, byte for byte (its liblzf build, quirks included: the crate's
//! compressor gives other bytes for about one string in six, and
//! `it::dump` compares payloads with a running redis-server), since DUMP
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
    /// false (leaving `out` as it was) when it does not compress to at
    /// least 4 bytes less than the input: Redis's `rdbSaveLzfStringObject`
    /// gives liblzf room for `len - 4` bytes, and liblzf's own checks of
    /// that room (some conservative) decide, so they are kept as they are.
    pub fn compress(&mut self, input: &[u8], out: &mut Vec<u8>) -> bool {
        let len = input.len();
        if len <= 4 || len >= u32::MAX as usize {
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
        match self.encode(input, out, tag, len - 4) {
            Some(()) => true,
            None => {
                out.truncate(start);
                false
            }
        }
    }

    /// Redis's lzf_compress (liblzf 3.6 as Redis builds it: HLOG 16,
    /// VERY_FAST, no INIT_HTAB: a position not written by this call reads
    /// as 0, which is never a valid reference), step for step, with room
    /// for `room` bytes of output.
    fn encode(&mut self, input: &[u8], out: &mut Vec<u8>, tag: u64, room: usize) -> Option<()> {
        let len = input.len();
        let base = out.len();
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
                && candidate > 0
                && input[candidate..candidate + 3] == input[ip..ip + 3]
            {
                // liblzf's two tests of the room left: a quick
                // conservative one, then the exact one.
                let o = out.len() - base;
                if o + 3 + 1 >= room && o - usize::from(lit == 0) + 3 + 1 >= room {
                    return None;
                }
                // End the literal run (or drop its reserved byte if empty).
                if lit == 0 {
                    out.pop();
                } else {
                    out[run] = (lit - 1) as u8;
                }
                let n = match_len(input, candidate, ip, (len - ip - 2).min(MAX_REF));
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
                ip += n;
                if ip >= len - 2 {
                    break;
                }
                // VERY_FAST: the match's last two positions enter the table.
                ip -= 2;
                h = (input[ip] as u32) << 8 | input[ip + 1] as u32;
                for _ in 0..2 {
                    h = roll(h, input[ip + 2]);
                    self.table[slot(h)] = tag | ip as u64;
                    ip += 1;
                }
            } else {
                if out.len() - base >= room {
                    return None;
                }
                literal(out, input[ip], &mut lit, &mut run);
                ip += 1;
            }
        }
        // At most 3 bytes can be missing here.
        if out.len() - base + 3 > room {
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

/// The length of the match of `input[candidate..]` with `input[ip..]`
/// (their first 3 bytes equal), as liblzf measures it: past `maxlen`
/// bytes it stops, except that with more than 16 bytes left it first
/// compares 16 without looking at `maxlen` (its unrolled loop), so a
/// match near the end can run 1 or 2 bytes past `maxlen`, as far as the
/// input's last byte.
fn match_len(input: &[u8], candidate: usize, ip: usize, maxlen: usize) -> usize {
    let mut n = 2;
    if maxlen > 16 {
        for _ in 0..16 {
            n += 1;
            if input[candidate + n] != input[ip + n] {
                return n;
            }
        }
    }
    loop {
        n += 1;
        if !(n < maxlen && input[candidate + n] == input[ip + n]) {
            return n;
        }
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

    /// Compresses and decompresses back (with the `lzf` crate, liblzf's
    /// decoder); whether it compressed at all is liblzf's room rule.
    fn round_trip(c: &mut Compressor, input: &[u8]) -> Option<Vec<u8>> {
        let mut out = vec![0xAA];
        let packed = c.compress(input, &mut out).then(|| out[1..].to_vec());
        match &packed {
            Some(p) => {
                assert!(p.len() + 4 <= input.len(), "{} of {}", p.len(), input.len());
                let back = ::lzf::decompress(p, input.len()).expect("decompresses");
                assert_eq!(back, input);
            }
            None => assert_eq!(out, vec![0xAA]),
        }
        packed
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn compresses_what_redis_populates_and_repeats() {
        let mut c = Compressor::default();
        let mut value = b"value:123".to_vec();
        value.resize(1000, 0);
        let packed = round_trip(&mut c, &value).unwrap();
        assert!(packed.len() < 40, "{}", packed.len());
        round_trip(
            &mut c,
            &b"abcabcabcabcabcabcabcabcabcabcabcabcabcabcabc".repeat(50),
        )
        .unwrap();
        // Bytes that never repeat do not compress.
        let distinct: Vec<u8> = (0..=255).collect();
        assert_eq!(round_trip(&mut c, &distinct), None);
    }

    /// Redis 7.0.15's own output (the LZF part of its DUMP payloads) for
    /// strings on which a liblzf without Redis's build settings and
    /// quirks (matches up to the input's last bytes; the unrolled
    /// comparison running past the limit) gives other bytes.
    #[test]
    fn matches_redis_byte_for_byte() {
        let cases = [
        (b"baaaabbabbaababbababbbbbabbaab".as_slice(), "01626120000162624002006160052001400020052010"),
        (b"aaacaabbbacbababcaababbbacacbbaacbbbcaca".as_slice(), "0c616161636161626262616362612001400c800e20100062201c201a200a0061"),
        (b"aaabbbabbbabaaaaabbababba".as_slice(), "05616161626262800300614000400c20040061"),
        (b"baaabaaaaaabbbbbaabbaaabbabbbaaabaabababaaabbaabbbabaabaaabbabababaabbbbaaaaaaabbbaabababbaaaabaabbb".as_slice(), "04626161616220032000006240004006600b400e400820106001200720042022200d4002200a200640012009200b800060094014801120162011"),
        ];
        let mut c = Compressor::default();
        for (input, redis) in cases {
            assert_eq!(round_trip(&mut c, input), Some(hex(redis)));
        }
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
                // A table left by earlier strings changes nothing.
                let mut alone = Compressor::default();
                prop_assert_eq!(round_trip(&mut c, input), round_trip(&mut alone, input));
            }
        }
    }
}
