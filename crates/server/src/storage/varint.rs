//! LEB128-style lengths (7 bits a byte, high bit = more follow) in the
//! headers of single-allocation records: the keyspace's nodes
//! (`keymap.rs`) and hash field/value pairs (`hash.rs`). Short keys and
//! fields, the common case, pay one byte.

/// Bytes `n` takes.
#[inline]
pub fn len(mut n: usize) -> usize {
    let mut len = 1;
    while n >= 0x80 {
        n >>= 7;
        len += 1;
    }
    len
}

/// Writes `n` at the start of `dst` (at least [`len`]`(n)` bytes);
/// returns the bytes written.
#[inline]
pub fn write(dst: &mut [u8], mut n: usize) -> usize {
    let mut i = 0;
    while n >= 0x80 {
        dst[i] = (n as u8 & 0x7F) | 0x80;
        n >>= 7;
        i += 1;
    }
    dst[i] = n as u8;
    i + 1
}

/// Reads the varint at `p`: (value, bytes).
///
/// # Safety
/// `p` must point at a complete varint written by [`write`] inside one
/// allocation (every byte up to the one with its high bit clear).
#[inline]
pub unsafe fn read(p: *const u8) -> (usize, usize) {
    let mut n = 0usize;
    let mut shift = 0;
    let mut i = 0;
    loop {
        // SAFETY: per the contract, bytes up to the last one are inside.
        let b = unsafe { *p.add(i) };
        n |= ((b & 0x7F) as usize) << shift;
        i += 1;
        if b & 0x80 == 0 {
            return (n, i);
        }
        shift += 7;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for n in [
            0,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            1 << 29,
            usize::MAX >> 1,
        ] {
            let mut buf = [0u8; 10];
            let w = write(&mut buf, n);
            assert_eq!(w, len(n));
            // SAFETY: `buf` holds the varint just written.
            assert_eq!(unsafe { read(buf.as_ptr()) }, (n, w));
        }
    }
}
