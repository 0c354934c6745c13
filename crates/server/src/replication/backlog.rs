//! The replication backlog: the tail of the replication stream, kept for
//! replicas that are behind and for partial resynchronisation.
//!
//! One buffer serves both, as Redis 7's shared replication buffer: a
//! connected replica reads the stream from its own position in it, so the
//! stream is written once however many replicas there are. The buffer
//! keeps `repl-backlog-size` bytes, and more while a connected replica
//! still needs them (up to the replica's `client-output-buffer-limit`
//! hard limit: past it the replica is cut off, as Redis disconnects it).
//!
//! Positions count bytes since the stream began (Redis's replication
//! offset): `end` is `master_repl_offset`, and Redis's
//! `repl_backlog_first_byte_offset` is `first + 1`.

use std::collections::VecDeque;

use resp::encode;

pub struct Backlog {
    buf: VecDeque<u8>,
    /// The position of `buf[0]`.
    first: u64,
    /// The position after the last byte: master_repl_offset.
    end: u64,
    /// The database the stream is in (-1: the next command selects one).
    pub selected_db: i64,
    /// `repl-backlog-size`.
    pub size: usize,
    /// Whether the backlog exists (Redis creates it with the first
    /// replica, and keeps it).
    pub active: bool,
}

impl Backlog {
    pub fn new(size: usize) -> Backlog {
        Backlog {
            buf: VecDeque::new(),
            first: 0,
            end: 0,
            selected_db: -1,
            size,
            active: false,
        }
    }

    /// Starts (or restarts) the stream at position `at`, empty.
    pub fn reset(&mut self, at: u64) {
        self.buf = VecDeque::new();
        self.first = at;
        self.end = at;
        self.selected_db = -1;
    }

    pub fn end(&self) -> u64 {
        self.end
    }

    pub fn first(&self) -> u64 {
        self.first
    }

    pub fn histlen(&self) -> u64 {
        self.buf.len() as u64
    }

    /// Whether a replica may continue from position `pos`.
    pub fn has(&self, pos: u64) -> bool {
        self.active && pos >= self.first && pos <= self.end
    }

    /// Appends raw stream bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend(bytes);
        self.end += bytes.len() as u64;
    }

    /// Appends one command in database `db`, after a SELECT when the
    /// stream is in another database.
    pub fn push_command<A: AsRef<[u8]>>(&mut self, db: usize, argv: &[A], scratch: &mut Vec<u8>) {
        scratch.clear();
        if self.selected_db != db as i64 {
            let dbs = db.to_string();
            encode::command(scratch, &[b"SELECT".as_slice(), dbs.as_bytes()]);
            self.selected_db = db as i64;
        }
        encode::command(scratch, argv);
        self.push(scratch);
    }

    /// Copies up to `max` bytes from position `pos` into `out`. `None`:
    /// `pos` is no longer (or not yet) in the buffer.
    pub fn read_from(&self, pos: u64, max: usize, out: &mut Vec<u8>) -> Option<usize> {
        if pos < self.first || pos > self.end {
            return None;
        }
        let start = (pos - self.first) as usize;
        let n = (self.buf.len() - start).min(max);
        let (a, b) = self.buf.as_slices();
        if start < a.len() {
            let from_a = (a.len() - start).min(n);
            out.extend_from_slice(&a[start..start + from_a]);
            out.extend_from_slice(&b[..n - from_a]);
        } else {
            let s = start - a.len();
            out.extend_from_slice(&b[s..s + n]);
        }
        Some(n)
    }

    /// Drops what nobody needs: bytes before `keep_from` (the slowest
    /// connected replica's position) beyond `size`, and anything more than
    /// `size + hard_limit` behind the end.
    pub fn trim(&mut self, keep_from: u64, hard_limit: u64) {
        let len = self.buf.len() as u64;
        if len <= self.size as u64 {
            return;
        }
        let by_size = self.end - self.size as u64;
        let mut cut_to = by_size.min(keep_from.max(self.first));
        if hard_limit > 0 {
            cut_to = cut_to.max(self.end.saturating_sub(self.size as u64 + hard_limit));
        }
        if cut_to > self.first {
            self.buf.drain(..(cut_to - self.first) as usize);
            self.first = cut_to;
            if self.buf.capacity() > 4 * self.buf.len().max(self.size) {
                self.buf.shrink_to(self.buf.len().max(self.size));
            }
        }
    }

    /// Memory held, for INFO memory's `mem_replication_backlog`: the
    /// allocator's size class of the buffer (a 132 MiB buffer takes a
    /// 160 MiB class), which is what `used_memory` counts.
    pub fn memory(&self) -> usize {
        match self.buf.capacity() {
            0 => 0,
            cap => crate::memory::alloc::size_class(cap),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_across_the_ring_and_trims_to_size() {
        let mut b = Backlog::new(8);
        b.active = true;
        b.reset(100);
        b.push(b"0123456789");
        assert_eq!(b.end(), 110);
        let mut out = Vec::new();
        assert_eq!(b.read_from(104, 100, &mut out), Some(6));
        assert_eq!(out, b"456789");
        // Nobody behind: cut to the size.
        b.trim(110, 0);
        assert_eq!(b.first(), 102);
        assert!(!b.has(101));
        assert!(b.has(102) && b.has(110));
        out.clear();
        assert_eq!(b.read_from(110, 10, &mut out), Some(0));
        assert_eq!(b.read_from(111, 10, &mut out), None);
    }

    #[test]
    fn a_replica_behind_keeps_bytes_until_its_hard_limit() {
        let mut b = Backlog::new(4);
        b.active = true;
        b.push(b"abcdefghij");
        b.trim(1, 100);
        assert_eq!(b.first(), 1);
        b.trim(1, 3);
        assert_eq!(b.first(), 3);
    }

    #[test]
    fn select_only_when_the_database_changes() {
        let mut b = Backlog::new(1024);
        let mut s = Vec::new();
        b.push_command(0, &[b"SET".as_slice(), b"k", b"v"], &mut s);
        b.push_command(0, &[b"DEL".as_slice(), b"k"], &mut s);
        let mut out = Vec::new();
        b.read_from(0, 1000, &mut out);
        assert_eq!(
            out,
            b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n"
        );
    }
}
