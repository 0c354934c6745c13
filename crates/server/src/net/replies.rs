//! The replies a request writes: a byte buffer, and large string values
//! held by reference instead of copied into it.
//!
//! A GET of a 30 KB value would copy the value into the reply buffer and
//! the kernel would copy it again into the socket. Values from
//! `storage::value::SHARED_MIN` bytes are reference-counted, so a
//! connection's replies take a reference at their place in the byte
//! stream and the write gathers both (`writev`). Only the connection's
//! own buffer does this ([`Replies::by_reference`]); a buffer whose bytes
//! are read back (a script's reply, a replica's discarded replies) copies
//! ([`Replies::plain`]), so every byte is in `bytes` where it is read.

use std::io::IoSlice;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// At most this many pieces per `writev` (Linux's `IOV_MAX` is 1024).
const MAX_SLICES: usize = 64;

#[derive(Debug, Default)]
pub struct Replies {
    bytes: Vec<u8>,
    /// Values sent by reference: each goes right after `bytes[..at]`, in
    /// order of `at` (non-decreasing).
    shared: Vec<Shared>,
    /// Bytes of the values in `shared`.
    shared_len: usize,
    by_reference: bool,
}

#[derive(Debug)]
struct Shared {
    at: usize,
    value: Arc<Vec<u8>>,
}

impl Deref for Replies {
    type Target = Vec<u8>;

    #[inline]
    fn deref(&self) -> &Vec<u8> {
        &self.bytes
    }
}

impl DerefMut for Replies {
    #[inline]
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.bytes
    }
}

impl Replies {
    /// A connection's replies: large values are held by reference.
    pub fn by_reference() -> Replies {
        Replies {
            by_reference: true,
            ..Replies::default()
        }
    }

    /// Replies whose bytes are read back: every value is copied in.
    pub fn plain() -> Replies {
        Replies::default()
    }

    /// A bulk string reply of `value`, by reference when this buffer
    /// holds references.
    pub fn bulk_shared(&mut self, value: &Arc<Vec<u8>>) {
        if !self.by_reference {
            resp::encode::bulk(&mut self.bytes, value);
            return;
        }
        resp::encode::bulk_header(&mut self.bytes, value.len());
        self.shared.push(Shared {
            at: self.bytes.len(),
            value: Arc::clone(value),
        });
        self.shared_len += value.len();
        self.bytes.extend_from_slice(b"\r\n");
    }

    /// Every byte to write: the buffer's and the referenced values'.
    #[inline]
    pub fn pending(&self) -> usize {
        self.bytes.len() + self.shared_len
    }

    /// What the replies hold, as a client's output buffer is counted:
    /// the buffer's capacity and the values held by reference (a value
    /// deleted or overwritten meanwhile lives on until written).
    #[inline]
    pub fn held(&self) -> usize {
        self.bytes.capacity() + self.shared_len
    }

    /// Nothing to write.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty() && self.shared.is_empty()
    }

    /// Bytes written since the buffer held `mark` bytes (a `len()` taken
    /// before a request), values by reference included.
    pub fn written_since(&self, mark: usize) -> usize {
        let shared: usize = self
            .shared
            .iter()
            .rev()
            .take_while(|s| s.at > mark)
            .map(|s| s.value.len())
            .sum();
        self.bytes.len().saturating_sub(mark) + shared
    }

    /// Drops what was written after the buffer held `len` bytes (a reply
    /// taken back), its references with it.
    pub fn truncate(&mut self, len: usize) {
        self.bytes.truncate(len);
        while let Some(s) = self.shared.pop_if(|s| s.at > len) {
            self.shared_len -= s.value.len();
        }
    }

    /// Empties the buffer (written), keeping its capacity.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.shared.clear();
        self.shared_len = 0;
    }

    /// The byte buffer, to hand back to or take from the worker's pool
    /// (only while nothing is held by reference).
    pub fn bytes_mut(&mut self) -> &mut Vec<u8> {
        debug_assert!(self.shared.is_empty());
        &mut self.bytes
    }

    /// The bytes of a plain buffer.
    pub fn into_bytes(self) -> Vec<u8> {
        debug_assert!(self.shared.is_empty());
        self.bytes
    }

    /// Whether any value is held by reference (then the write gathers).
    #[inline]
    pub fn has_shared(&self) -> bool {
        !self.shared.is_empty()
    }

    /// The pieces left to write from `pos` (a count of bytes written so
    /// far), at most [`MAX_SLICES`] of them, in `slices`.
    pub fn slices_from<'a>(&'a self, pos: usize, slices: &mut Vec<IoSlice<'a>>) {
        slices.clear();
        let mut skip = pos;
        let mut from = 0;
        let mut push = |piece: &'a [u8], slices: &mut Vec<IoSlice<'a>>| {
            if skip >= piece.len() {
                skip -= piece.len();
            } else {
                slices.push(IoSlice::new(&piece[skip..]));
                skip = 0;
            }
        };
        for s in &self.shared {
            push(&self.bytes[from..s.at], slices);
            push(&s.value[..], slices);
            from = s.at;
            if slices.len() >= MAX_SLICES {
                return;
            }
        }
        push(&self.bytes[from..], slices);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gathered(r: &Replies, mut pos: usize, step: usize) -> Vec<u8> {
        let mut all = Vec::new();
        let mut slices = Vec::new();
        loop {
            r.slices_from(pos, &mut slices);
            if slices.is_empty() {
                return all;
            }
            // Take at most `step` bytes, as a short write would.
            let mut left = step;
            for s in &slices {
                let n = s.len().min(left);
                all.extend_from_slice(&s[..n]);
                left -= n;
                pos += n;
                if left == 0 {
                    break;
                }
            }
        }
    }

    fn value(n: usize, b: u8) -> Arc<Vec<u8>> {
        Arc::new(vec![b; n])
    }

    #[test]
    fn values_by_reference_are_written_in_their_place_through_short_writes() {
        let mut r = Replies::by_reference();
        r.extend_from_slice(b"+OK\r\n");
        r.bulk_shared(&value(5, b'a'));
        r.bulk_shared(&value(3, b'b'));
        r.extend_from_slice(b":1\r\n");
        let want = b"+OK\r\n$5\r\naaaaa\r\n$3\r\nbbb\r\n:1\r\n".to_vec();
        assert_eq!(r.pending(), want.len());
        for step in [1, 2, 3, 7, 100] {
            assert_eq!(gathered(&r, 0, step), want, "step {step}");
        }
        assert_eq!(gathered(&r, 9, 4), want[9..].to_vec());
    }

    #[test]
    fn a_plain_buffer_copies_values_in() {
        let mut r = Replies::plain();
        r.bulk_shared(&value(4, b'x'));
        assert_eq!(&r[..], b"$4\r\nxxxx\r\n");
        assert!(!r.has_shared());
        assert_eq!(r.pending(), r.len());
    }

    #[test]
    fn truncating_drops_the_references_written_after_the_mark() {
        let mut r = Replies::by_reference();
        r.bulk_shared(&value(4, b'a'));
        let mark = r.len();
        r.bulk_shared(&value(6, b'b'));
        assert_eq!(r.written_since(mark), b"$6\r\n\r\n".len() + 6);
        r.truncate(mark);
        assert_eq!(r.written_since(mark), 0);
        assert_eq!(gathered(&r, 0, 100), b"$4\r\naaaa\r\n".to_vec());
        r.clear();
        assert!(r.is_empty());
        assert_eq!(r.pending(), 0);
    }
}
