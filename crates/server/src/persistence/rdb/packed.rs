//! Redis's packed blobs as they appear inside an RDB file: listpacks
//! (Redis 7), and, read only, the older ziplists, intsets and zipmaps.
//! Every reader checks every length against the blob: an RDB file is as
//! hostile as network input (it may come from anywhere: DEBUG RELOAD of a
//! replaced file, a copied dump, later a replication stream).

/// One element of a packed blob.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Item<'a> {
    Int(i64),
    Str(&'a [u8]),
}

impl Item<'_> {
    pub fn to_vec(self) -> Vec<u8> {
        match self {
            Item::Int(n) => itoa::Buffer::new().format(n).as_bytes().to_vec(),
            Item::Str(s) => s.to_vec(),
        }
    }

    pub fn as_int(self) -> Option<i64> {
        match self {
            Item::Int(n) => Some(n),
            Item::Str(s) => resp::parse_i64(s),
        }
    }
}

fn le(b: &[u8]) -> u64 {
    let mut x = [0u8; 8];
    x[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(x)
}

/// Sign-extends the low `bits` bits of `v`.
fn sext(v: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((v << shift) as i64) >> shift
}

fn slice(b: &[u8], at: usize, n: usize) -> Result<&[u8], &'static str> {
    at.checked_add(n)
        .and_then(|end| b.get(at..end))
        .ok_or("packed element past the end of its blob")
}

// ---------------------------------------------------------------------------
// Listpack.

const LP_HEADER: usize = 6;
const LP_EOF: u8 = 0xFF;

/// Bytes of a listpack back-length for an element of `l` bytes.
fn lp_backlen_size(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

/// The elements of a listpack, checked against its header and end mark.
pub fn listpack(blob: &[u8]) -> Result<Vec<Item<'_>>, &'static str> {
    if blob.len() < LP_HEADER + 1 || le(&blob[..4]) as usize != blob.len() {
        return Err("listpack header size mismatch");
    }
    if blob[blob.len() - 1] != LP_EOF {
        return Err("listpack without its end mark");
    }
    let declared = le(&blob[4..6]) as usize;
    let end = blob.len() - 1;
    let mut items = Vec::new();
    let mut p = LP_HEADER;
    while p < end {
        let b = blob[p];
        let (item, enc_len) = match b {
            0x00..=0x7F => (Item::Int(b as i64), 1),
            0x80..=0xBF => {
                let n = (b & 0x3F) as usize;
                (Item::Str(slice(blob, p + 1, n)?), 1 + n)
            }
            0xC0..=0xDF => {
                let lo = *slice(blob, p + 1, 1)?.first().unwrap_or(&0) as u64;
                (Item::Int(sext(((b as u64 & 0x1F) << 8) | lo, 13)), 2)
            }
            0xE0..=0xEF => {
                let lo = *slice(blob, p + 1, 1)?.first().unwrap_or(&0) as usize;
                let n = ((b as usize & 0x0F) << 8) | lo;
                (Item::Str(slice(blob, p + 2, n)?), 2 + n)
            }
            0xF0 => {
                let n = le(slice(blob, p + 1, 4)?) as usize;
                (Item::Str(slice(blob, p + 5, n)?), 5 + n)
            }
            0xF1..=0xF4 => {
                let bytes = [2, 3, 4, 8][(b - 0xF1) as usize];
                let v = le(slice(blob, p + 1, bytes)?);
                (Item::Int(sext(v, bytes as u32 * 8)), 1 + bytes)
            }
            _ => return Err("invalid listpack element encoding"),
        };
        p += enc_len + lp_backlen_size(enc_len);
        if p > end {
            return Err("listpack element past the end of its blob");
        }
        items.push(item);
    }
    if declared != u16::MAX as usize && declared != items.len() {
        return Err("listpack element count mismatch");
    }
    Ok(items)
}

/// Builds a listpack, element by element, as Redis's `lpAppend`: a string
/// that is the canonical form of an integer is stored as the integer.
pub struct ListpackWriter {
    buf: Vec<u8>,
    count: usize,
}

impl Default for ListpackWriter {
    fn default() -> Self {
        ListpackWriter {
            buf: vec![0; LP_HEADER],
            count: 0,
        }
    }
}

impl ListpackWriter {
    /// Bytes of the finished listpack so far (header and end mark
    /// included: Redis's `lpBytes`).
    pub fn bytes(&self) -> usize {
        self.buf.len() + 1
    }

    /// Elements pushed.
    pub fn count(&self) -> usize {
        self.count
    }

    pub fn push_int(&mut self, v: i64) {
        let b = &mut self.buf;
        let start = b.len();
        if (0..=127).contains(&v) {
            b.push(v as u8);
        } else if (-4096..=4095).contains(&v) {
            let u = (v as u64) & 0x1FFF;
            b.push(0xC0 | (u >> 8) as u8);
            b.push(u as u8);
        } else {
            let (tag, bytes) = if (-32768..=32767).contains(&v) {
                (0xF1, 2)
            } else if (-8_388_608..=8_388_607).contains(&v) {
                (0xF2, 3)
            } else if (i32::MIN as i64..=i32::MAX as i64).contains(&v) {
                (0xF3, 4)
            } else {
                (0xF4, 8)
            };
            b.push(tag);
            b.extend_from_slice(&v.to_le_bytes()[..bytes]);
        }
        self.finish_element(start);
    }

    pub fn push(&mut self, s: &[u8]) {
        if s.len() <= 20 {
            if let Some(v) = resp::parse_i64(s) {
                return self.push_int(v);
            }
        }
        let b = &mut self.buf;
        let start = b.len();
        let n = s.len();
        if n < 64 {
            b.push(0x80 | n as u8);
        } else if n < 4096 {
            b.push(0xE0 | (n >> 8) as u8);
            b.push(n as u8);
        } else {
            b.push(0xF0);
            b.extend_from_slice(&(n as u32).to_le_bytes());
        }
        b.extend_from_slice(s);
        self.finish_element(start);
    }

    /// Appends the back-length of the element that starts at `start`:
    /// most significant 7-bit group first, every byte but the first with
    /// the high bit set (read right to left).
    fn finish_element(&mut self, start: usize) {
        let l = self.buf.len() - start;
        let n = lp_backlen_size(l);
        for i in (0..n).rev() {
            let group = ((l >> (7 * i)) & 0x7F) as u8;
            self.buf.push(if i == n - 1 { group } else { group | 0x80 });
        }
        self.count += 1;
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.buf.push(LP_EOF);
        let total = self.buf.len() as u32;
        self.buf[..4].copy_from_slice(&total.to_le_bytes());
        let count = self.count.min(u16::MAX as usize) as u16;
        self.buf[4..6].copy_from_slice(&count.to_le_bytes());
        self.buf
    }
}

// ---------------------------------------------------------------------------
// Ziplist (RDB 9 and older: lists, hashes and sorted sets).

const ZL_HEADER: usize = 10;
const ZL_END: u8 = 0xFF;

/// The elements of a ziplist.
pub fn ziplist(blob: &[u8]) -> Result<Vec<Item<'_>>, &'static str> {
    if blob.len() < ZL_HEADER + 1 || le(&blob[..4]) as usize != blob.len() {
        return Err("ziplist header size mismatch");
    }
    if blob[blob.len() - 1] != ZL_END {
        return Err("ziplist without its end mark");
    }
    let end = blob.len() - 1;
    let mut items = Vec::new();
    let mut p = ZL_HEADER;
    while p < end {
        // Previous entry length: 1 byte, or 0xFE and 4 bytes.
        p += if blob[p] == 0xFE { 5 } else { 1 };
        let b = *blob.get(p).ok_or("ziplist entry past the end")?;
        let (item, size) = match b >> 6 {
            0 => {
                let n = (b & 0x3F) as usize;
                (Item::Str(slice(blob, p + 1, n)?), 1 + n)
            }
            1 => {
                let lo = *slice(blob, p + 1, 1)?.first().unwrap_or(&0) as usize;
                let n = ((b as usize & 0x3F) << 8) | lo;
                (Item::Str(slice(blob, p + 2, n)?), 2 + n)
            }
            2 => {
                let h = slice(blob, p + 1, 4)?;
                let n = u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as usize;
                (Item::Str(slice(blob, p + 5, n)?), 5 + n)
            }
            _ => match b {
                0xC0 => (Item::Int(sext(le(slice(blob, p + 1, 2)?), 16)), 3),
                0xD0 => (Item::Int(sext(le(slice(blob, p + 1, 4)?), 32)), 5),
                0xE0 => (Item::Int(le(slice(blob, p + 1, 8)?) as i64), 9),
                0xF0 => (Item::Int(sext(le(slice(blob, p + 1, 3)?), 24)), 4),
                0xFE => (Item::Int(sext(le(slice(blob, p + 1, 1)?), 8)), 2),
                0xF1..=0xFD => (Item::Int((b & 0x0F) as i64 - 1), 1),
                _ => return Err("invalid ziplist entry encoding"),
            },
        };
        p += size;
        if p > end {
            return Err("ziplist entry past the end");
        }
        items.push(item);
    }
    let declared = le(&blob[8..10]) as usize;
    if declared != u16::MAX as usize && declared != items.len() {
        return Err("ziplist entry count mismatch");
    }
    Ok(items)
}

// ---------------------------------------------------------------------------
// Intset (sets of integers, every RDB version).

pub fn intset(blob: &[u8]) -> Result<Vec<i64>, &'static str> {
    if blob.len() < 8 {
        return Err("intset header too short");
    }
    let width = le(&blob[..4]) as usize;
    let n = le(&blob[4..8]) as usize;
    if !matches!(width, 2 | 4 | 8) {
        return Err("invalid intset encoding");
    }
    if n.checked_mul(width).and_then(|b| b.checked_add(8)) != Some(blob.len()) {
        return Err("intset size mismatch");
    }
    Ok(blob[8..]
        .chunks_exact(width)
        .map(|c| sext(le(c), width as u32 * 8))
        .collect())
}

// ---------------------------------------------------------------------------
// Zipmap (hashes in RDB files of Redis 2.x).

/// A field and its value, borrowed from the blob.
pub type Pair<'a> = (&'a [u8], &'a [u8]);

pub fn zipmap(blob: &[u8]) -> Result<Vec<Pair<'_>>, &'static str> {
    let mut p = 1; // zmlen: a count hint only.
    let mut pairs = Vec::new();
    let len_at = |p: &mut usize| -> Result<Option<usize>, &'static str> {
        let b = *blob.get(*p).ok_or("zipmap past the end")?;
        match b {
            0xFF => Ok(None),
            0xFE => {
                let n = le(slice(blob, *p + 1, 4)?) as usize;
                *p += 5;
                Ok(Some(n))
            }
            _ => {
                *p += 1;
                Ok(Some(b as usize))
            }
        }
    };
    while let Some(klen) = len_at(&mut p)? {
        let key = slice(blob, p, klen)?;
        p += klen;
        let vlen = len_at(&mut p)?.ok_or("zipmap key without a value")?;
        let free = *blob.get(p).ok_or("zipmap past the end")? as usize;
        let value = slice(blob, p + 1, vlen)?;
        p += 1 + vlen + free;
        pairs.push((key, value));
    }
    if p + 1 != blob.len() {
        return Err("zipmap with trailing bytes");
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listpack_round_trip() {
        let values: Vec<Vec<u8>> = vec![
            b"0".to_vec(),
            b"127".to_vec(),
            b"128".to_vec(),
            b"-4096".to_vec(),
            b"4095".to_vec(),
            b"40000".to_vec(),
            b"-8388608".to_vec(),
            b"2147483647".to_vec(),
            b"-9223372036854775808".to_vec(),
            b"".to_vec(),
            b"hello".to_vec(),
            vec![b'x'; 63],
            vec![b'y'; 64],
            vec![b'z'; 4095],
            vec![b'w'; 70000],
            b"007".to_vec(),
        ];
        let mut w = ListpackWriter::default();
        for v in &values {
            w.push(v);
        }
        let blob = w.finish();
        let items = listpack(&blob).unwrap();
        let back: Vec<Vec<u8>> = items.iter().map(|i| i.to_vec()).collect();
        assert_eq!(back, values);
        assert_eq!(items[0], Item::Int(0));
        assert_eq!(items[15], Item::Str(b"007"));
    }

    #[test]
    fn hostile_blobs_are_errors() {
        let mut w = ListpackWriter::default();
        w.push(b"abc");
        let blob = w.finish();
        for cut in 0..blob.len() {
            assert!(listpack(&blob[..cut]).is_err());
        }
        let mut bad = blob.clone();
        bad[6] = 0xBF; // a 63-byte string in a 12-byte blob
        assert!(listpack(&bad).is_err());
        assert!(ziplist(&[11, 0, 0, 0, 10, 0, 0, 0, 1, 0, 0xFF]).is_err());
        assert!(intset(&[4, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0]).is_err());
        assert!(zipmap(&[1, 5, b'a']).is_err());
    }

    #[test]
    fn ziplist_and_intset() {
        // A ziplist of "a", 12 and -2 (built by hand as Redis lays it out).
        let mut z = vec![0, 0, 0, 0, 0, 0, 0, 0, 3, 0];
        z.extend_from_slice(&[0, 0x01, b'a']); // prevlen 0, 1-byte string
        z.extend_from_slice(&[3, 0xFD]); // immediate 12
        z.extend_from_slice(&[2, 0xFE, 0xFE]); // int8 -2
        z.push(0xFF);
        let n = z.len() as u32;
        z[..4].copy_from_slice(&n.to_le_bytes());
        let items = ziplist(&z).unwrap();
        assert_eq!(items, vec![Item::Str(b"a"), Item::Int(12), Item::Int(-2)]);
        let mut s = vec![2, 0, 0, 0, 2, 0, 0, 0];
        s.extend_from_slice(&(-5i16).to_le_bytes());
        s.extend_from_slice(&7i16.to_le_bytes());
        assert_eq!(intset(&s).unwrap(), vec![-5, 7]);
    }
}
