//! The value log: values moved out of memory, appended to segment files in
//! `tiering-dir`, read back by location.
//!
//! A record is `[crc32c][key length][value length][key][value]`, the
//! checksum over everything after it, all integers u32 little-endian. The
//! key is kept beside the value so that compaction, reading a segment
//! front to back, can ask the keyspace whether each record is still the
//! key's value, and so that a read can tell a misdirected location from
//! the record it wanted.
//!
//! Writes go in batches, one positioned write per batch at the end of the
//! head segment; a segment is sealed once it passes its size and the next
//! one starts. Nothing is fsynced: the log is not a durable record (the
//! append-only log and the RDB snapshot are, see "Tiering" in
//! docs/ARCHITECTURE.md), so a crash leaves nothing to recover and the log
//! starts empty.
//!
//! Space: every segment counts its live bytes; freeing a location (the
//! key was overwritten, deleted or loaded back) subtracts its record.
//! Compaction takes the sealed segment with the least live share, moves
//! its live records to the head, and removes the file once nothing in it
//! is live. Readers hold the segment's file open (`Arc<File>`), so a read
//! in flight survives the file's removal.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A record's place in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Loc {
    pub segment: u32,
    /// The whole record's length, header included.
    pub len: u32,
    pub offset: u64,
}

/// Bytes before the key: checksum, key length, value length.
pub const HEADER: usize = 12;

/// A segment is sealed once it holds this much (a single larger record
/// gets a segment of its own).
pub const SEGMENT_SIZE: u64 = 64 << 20;

/// A segment's file as single-record reads open it: with `O_DIRECT`
/// where the filesystem allows it, so that a random read of a record costs
/// the disk one read and the page cache nothing (buffered reads of a
/// dataset larger than memory add pages the kernel must reclaim at once,
/// in the reader's own time, and cached pages are rarely read again).
#[derive(Clone)]
pub struct ReadFile {
    pub file: Arc<File>,
    /// What direct reads align offsets, lengths and buffers to; 0 for a
    /// buffered file.
    pub align: u32,
}

impl ReadFile {
    /// Where to read `loc`'s record from this file: the offset, the
    /// record's start in the bytes read, and how many to read.
    pub fn span(&self, loc: Loc) -> (u64, usize, usize) {
        if self.align == 0 {
            return (loc.offset, 0, loc.len as usize);
        }
        let a = self.align as u64;
        let start = loc.offset - loc.offset % a;
        let head = (loc.offset - start) as usize;
        let total = (head as u64 + loc.len as u64).div_ceil(a) * a;
        (start, head, total as usize)
    }

    /// A zeroed buffer of `len` bytes whose slice `[at..at + len]` meets
    /// the alignment: (buffer, at).
    pub fn buffer(&self, len: usize) -> (Vec<u8>, usize) {
        let a = self.align.max(1) as usize;
        let buf = vec![0u8; len + a - 1];
        let at = buf.as_ptr().align_offset(a);
        (buf, at)
    }

    /// The record at `loc`, read with `pread` (a short read at the end of
    /// the file is fine so long as it holds the record).
    pub fn read_record(&self, loc: Loc) -> io::Result<Vec<u8>> {
        let (offset, head, total) = self.span(loc);
        if self.align == 0 {
            let mut buf = vec![0; total];
            self.file.read_exact_at(&mut buf, offset)?;
            return Ok(buf);
        }
        let (mut buf, at) = self.buffer(total);
        let mut got = 0;
        while got < head + loc.len as usize {
            let n = self
                .file
                .read_at(&mut buf[at + got..at + total], offset + got as u64)?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            got += n;
        }
        Ok(buf[at + head..at + head + loc.len as usize].to_vec())
    }
}

/// Opens `path` again for direct reads; the buffered `file` where the
/// filesystem has no direct I/O (tmpfs, for one).
fn open_reads(path: &Path, file: &Arc<File>) -> ReadFile {
    use std::os::unix::fs::OpenOptionsExt;
    let buffered = ReadFile {
        file: Arc::clone(file),
        align: 0,
    };
    let Ok(direct) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
    else {
        return buffered;
    };
    // SAFETY: a plain C struct, all zeroes valid.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: statx of an open descriptor (empty path) into a struct this
    // function owns.
    let rc = unsafe {
        libc::statx(
            std::os::fd::AsRawFd::as_raw_fd(&direct),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    if rc != 0 || stx.stx_mask & libc::STATX_DIOALIGN == 0 || stx.stx_dio_offset_align == 0 {
        return buffered;
    }
    ReadFile {
        file: Arc::new(direct),
        align: stx.stx_dio_offset_align.max(stx.stx_dio_mem_align),
    }
}

/// Why a record could not be read back.
#[derive(Debug)]
pub enum ReadError {
    Io(io::Error),
    /// The segment is gone (its location was freed before the read).
    NoSegment,
    /// The bytes are not the record asked for: a bad checksum, lengths
    /// that do not add up, or another key.
    Corrupt,
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> ReadError {
        ReadError::Io(e)
    }
}

struct Segment {
    file: Arc<File>,
    /// The same file opened for reads of single records.
    reads: ReadFile,
    /// Bytes written.
    size: u64,
    /// Bytes of records still live.
    live: u64,
}

/// The log's files and their accounting. Not shared by itself: the tier
/// holds it behind its lock; reads need only [`ValueLog::file`]'s handle.
pub struct ValueLog {
    dir: PathBuf,
    /// `keel-tier.lock`, locked (flock) while this log is open: a second
    /// server on the same directory would remove this one's segments.
    _lock: File,
    segment_size: u64,
    segments: BTreeMap<u32, Segment>,
    head: u32,
}

/// The file name of segment `n`.
fn segment_name(n: u32) -> String {
    format!("keel-tier-{n:08}.seg")
}

fn is_segment_name(name: &str) -> bool {
    name.starts_with("keel-tier-") && name.ends_with(".seg")
}

/// `key` and `value` as one record.
pub fn encode_record(out: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(value);
    let crc = crc32c::crc32c(&out[start + 4..]);
    out[start..start + 4].copy_from_slice(&crc.to_le_bytes());
}

/// The little-endian u32 at `b[i..i + 4]` (the caller checked the length).
fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// The key and value of a whole record, or `None` if it does not check.
pub fn decode_record(record: &[u8]) -> Option<(&[u8], &[u8])> {
    if record.len() < HEADER {
        return None;
    }
    let (crc, klen, vlen) = (
        u32_at(record, 0),
        u32_at(record, 4) as usize,
        u32_at(record, 8) as usize,
    );
    if HEADER.checked_add(klen)?.checked_add(vlen)? != record.len() {
        return None;
    }
    if crc32c::crc32c(&record[4..]) != crc {
        return None;
    }
    Some((&record[HEADER..HEADER + klen], &record[HEADER + klen..]))
}

impl ValueLog {
    /// A new, empty log in `dir` (created if missing). Segments left by an
    /// earlier run are removed: they held copies of values whose durable
    /// record is the AOF or RDB file the server loads.
    pub fn open(dir: &Path) -> io::Result<ValueLog> {
        ValueLog::with_segment_size(dir, SEGMENT_SIZE)
    }

    pub fn with_segment_size(dir: &Path, segment_size: u64) -> io::Result<ValueLog> {
        std::fs::create_dir_all(dir)?;
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("keel-tier.lock"))?;
        // SAFETY: flock on a descriptor this function owns.
        let locked = unsafe {
            libc::flock(
                std::os::fd::AsRawFd::as_raw_fd(&lock),
                libc::LOCK_EX | libc::LOCK_NB,
            )
        };
        if locked != 0 {
            return Err(io::Error::other(format!(
                "{} is in use by another server",
                dir.display()
            )));
        }
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_name().to_str().is_some_and(is_segment_name) {
                std::fs::remove_file(entry.path())?;
            }
        }
        let mut log = ValueLog {
            dir: dir.to_path_buf(),
            _lock: lock,
            segment_size: segment_size.max(1),
            segments: BTreeMap::new(),
            head: 0,
        };
        log.start_segment(0)?;
        Ok(log)
    }

    fn start_segment(&mut self, n: u32) -> io::Result<()> {
        let path = self.dir.join(segment_name(n));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        // Reads are of single records at random places: the kernel's
        // read-ahead would read (and cache) many times what is asked.
        // SAFETY: posix_fadvise on a file descriptor this function owns.
        unsafe {
            libc::posix_fadvise(
                std::os::fd::AsRawFd::as_raw_fd(&file),
                0,
                0,
                libc::POSIX_FADV_RANDOM,
            );
        }
        let file = Arc::new(file);
        let reads = open_reads(&path, &file);
        self.segments.insert(
            n,
            Segment {
                file,
                reads,
                size: 0,
                live: 0,
            },
        );
        self.head = n;
        Ok(())
    }

    /// Appends the records encoded in `batch` (by [`encode_record`]; their
    /// lengths in `lens`) in one write, and answers where each one went.
    /// A batch larger than a segment's room starts a new segment first.
    pub fn append(&mut self, batch: &[u8], lens: &[u32]) -> io::Result<Vec<Loc>> {
        debug_assert_eq!(lens.iter().map(|&l| l as usize).sum::<usize>(), batch.len());
        let old = self.head;
        let size = self.segments[&old].size;
        if size > 0 && size + batch.len() as u64 > self.segment_size {
            self.start_segment(old + 1)?;
            // Sealed with nothing live (everything in it freed already).
            if self.segments[&old].live == 0 {
                self.segments.remove(&old);
                std::fs::remove_file(self.dir.join(segment_name(old)))?;
            }
        }
        let head = self.head;
        let Some(seg) = self.segments.get_mut(&head) else {
            return Err(io::Error::other("the value log has no head segment"));
        };
        seg.file.write_all_at(batch, seg.size)?;
        let mut offset = seg.size;
        let mut locs = Vec::with_capacity(lens.len());
        for &len in lens {
            locs.push(Loc {
                segment: head,
                len,
                offset,
            });
            offset += len as u64;
        }
        seg.size = offset;
        seg.live += batch.len() as u64;
        Ok(locs)
    }

    /// The open file of `segment` and its size, for compaction's reads.
    pub fn segment(&self, segment: u32) -> Option<(Arc<File>, u64)> {
        self.segments
            .get(&segment)
            .map(|s| (Arc::clone(&s.file), s.size))
    }

    /// The file of `segment` opened for single-record reads outside the
    /// log's lock.
    pub fn reads(&self, segment: u32) -> Option<ReadFile> {
        self.segments.get(&segment).map(|s| s.reads.clone())
    }

    /// The open file of `segment`, for a read outside the log's lock.
    pub fn file(&self, segment: u32) -> Option<Arc<File>> {
        self.segments.get(&segment).map(|s| Arc::clone(&s.file))
    }

    /// Counts `loc`'s record as garbage. A sealed segment with nothing
    /// live left is removed.
    pub fn free(&mut self, loc: Loc) -> io::Result<()> {
        let Some(seg) = self.segments.get_mut(&loc.segment) else {
            return Ok(());
        };
        seg.live = seg.live.saturating_sub(loc.len as u64);
        if seg.live == 0 && loc.segment != self.head {
            self.segments.remove(&loc.segment);
            std::fs::remove_file(self.dir.join(segment_name(loc.segment)))?;
        }
        Ok(())
    }

    /// Bytes in the log's files.
    pub fn disk_bytes(&self) -> u64 {
        self.segments.values().map(|s| s.size).sum()
    }

    /// Bytes of live records.
    pub fn live_bytes(&self) -> u64 {
        self.segments.values().map(|s| s.live).sum()
    }

    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// The sealed segment with the smallest live share, if that share is
    /// below `max_live` (0.0-1.0): the next one compaction should empty.
    pub fn compaction_candidate(&self, max_live: f64) -> Option<u32> {
        self.segments
            .iter()
            .filter(|(&n, s)| n != self.head && s.size > 0)
            .map(|(&n, s)| (n, s.live as f64 / s.size as f64))
            .filter(|&(_, share)| share < max_live)
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(n, _)| n)
    }

    /// Every record of `segment` in order, with its location, read in
    /// large sequential reads (compaction decides which are live).
    pub fn records(&self, segment: u32) -> Result<Vec<(Loc, Vec<u8>)>, ReadError> {
        let seg = self.segments.get(&segment).ok_or(ReadError::NoSegment)?;
        let mut data = vec![0; seg.size as usize];
        seg.file.read_exact_at(&mut data, 0)?;
        let mut out = Vec::new();
        let mut at = 0usize;
        while at < data.len() {
            if data.len() - at < HEADER {
                return Err(ReadError::Corrupt);
            }
            let len = HEADER + u32_at(&data, at + 4) as usize + u32_at(&data, at + 8) as usize;
            let record = data.get(at..at + len).ok_or(ReadError::Corrupt)?;
            decode_record(record).ok_or(ReadError::Corrupt)?;
            out.push((
                Loc {
                    segment,
                    len: len as u32,
                    offset: at as u64,
                },
                record.to_vec(),
            ));
            at += len;
        }
        Ok(out)
    }
}

/// Reads the value of the record at `loc` from `file`, whichever key it
/// was written under (a key renamed while spilled keeps its record).
/// Runs outside the log's lock.
pub fn read_record_value(file: &ReadFile, loc: Loc) -> Result<Vec<u8>, ReadError> {
    record_value(&file.read_record(loc)?)
}

/// The value of a whole record read from disk, checked.
pub fn record_value(record: &[u8]) -> Result<Vec<u8>, ReadError> {
    let (_, v) = decode_record(record).ok_or(ReadError::Corrupt)?;
    Ok(v.to_vec())
}

/// Reads the value at `loc` from `file` and checks that it is `key`'s.
/// Runs outside the log's lock.
pub fn read_value(file: &File, loc: Loc, key: &[u8]) -> Result<Vec<u8>, ReadError> {
    let mut record = vec![0; loc.len as usize];
    file.read_exact_at(&mut record, loc.offset)?;
    let (k, v) = decode_record(&record).ok_or(ReadError::Corrupt)?;
    if k != key {
        return Err(ReadError::Corrupt);
    }
    let start = HEADER + k.len();
    let vlen = v.len();
    record.drain(..start);
    debug_assert_eq!(record.len(), vlen);
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(items: &[(&[u8], &[u8])]) -> (Vec<u8>, Vec<u32>) {
        let mut out = Vec::new();
        let mut lens = Vec::new();
        for (k, v) in items {
            let before = out.len();
            encode_record(&mut out, k, v);
            lens.push((out.len() - before) as u32);
        }
        (out, lens)
    }

    fn read(log: &ValueLog, loc: Loc, key: &[u8]) -> Result<Vec<u8>, ReadError> {
        let file = log.file(loc.segment).ok_or(ReadError::NoSegment)?;
        read_value(&file, loc, key)
    }

    #[test]
    fn a_directory_serves_one_log_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let first = ValueLog::open(dir.path()).unwrap();
        assert!(ValueLog::open(dir.path()).is_err());
        drop(first);
        assert!(ValueLog::open(dir.path()).is_ok());
    }

    #[test]
    fn records_round_trip_and_detect_damage() {
        let mut r = Vec::new();
        encode_record(&mut r, b"key", b"value");
        assert_eq!(decode_record(&r), Some((&b"key"[..], &b"value"[..])));
        for i in 0..r.len() {
            let mut bad = r.clone();
            bad[i] ^= 0x40;
            assert_eq!(decode_record(&bad), None, "flipped byte {i}");
        }
        assert_eq!(decode_record(&r[..r.len() - 1]), None);
        assert_eq!(decode_record(&[]), None);
    }

    #[test]
    fn appended_values_read_back_by_location() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = ValueLog::open(dir.path()).unwrap();
        let big = vec![7u8; 100_000];
        let (b, lens) = batch(&[(b"a", b"1"), (b"b", &big), (b"", b"")]);
        let locs = log.append(&b, &lens).unwrap();
        assert_eq!(read(&log, locs[0], b"a").unwrap(), b"1");
        assert_eq!(read(&log, locs[1], b"b").unwrap(), big);
        assert_eq!(read(&log, locs[2], b"").unwrap(), b"");
        // Another key's location is not this key's value.
        assert!(matches!(read(&log, locs[0], b"b"), Err(ReadError::Corrupt)));
        assert_eq!(log.disk_bytes(), b.len() as u64);
        assert_eq!(log.live_bytes(), b.len() as u64);
    }

    #[test]
    fn open_removes_an_earlier_runs_segments_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(segment_name(5)), b"old").unwrap();
        std::fs::write(dir.path().join("appendonly.aof"), b"keep").unwrap();
        let log = ValueLog::open(dir.path()).unwrap();
        assert!(!dir.path().join(segment_name(5)).exists());
        assert!(dir.path().join("appendonly.aof").exists());
        assert_eq!(log.segment_count(), 1);
    }

    #[test]
    fn records_read_back_through_aligned_reads() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = ValueLog::open(dir.path()).unwrap();
        // Records of odd lengths at odd offsets, the last one ending the
        // file short of an alignment boundary.
        let items: Vec<(Vec<u8>, Vec<u8>)> = (0..40u32)
            .map(|i| (i.to_le_bytes().to_vec(), vec![i as u8; 37 * i as usize + 5]))
            .collect();
        let refs: Vec<(&[u8], &[u8])> = items.iter().map(|(k, v)| (&k[..], &v[..])).collect();
        let (b, lens) = batch(&refs);
        let locs = log.append(&b, &lens).unwrap();
        let direct = log.reads(locs[0].segment).unwrap();
        let buffered = log.file(locs[0].segment).unwrap();
        // The filesystem's own (direct where it allows), and the same
        // arithmetic over a buffered file at every alignment.
        let mut files = vec![direct];
        for align in [0, 512, 4096] {
            files.push(ReadFile {
                file: Arc::clone(&buffered),
                align,
            });
        }
        for file in &files {
            for ((_, v), loc) in items.iter().zip(&locs) {
                assert_eq!(
                    &read_record_value(file, *loc).unwrap(),
                    v,
                    "align {}",
                    file.align
                );
            }
        }
    }

    #[test]
    fn segments_roll_and_are_removed_when_nothing_is_live() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = ValueLog::with_segment_size(dir.path(), 1000).unwrap();
        let value = vec![1u8; 400];
        let mut locs = Vec::new();
        for i in 0..6u8 {
            let (b, lens) = batch(&[(&[i], &value)]);
            locs.extend(log.append(&b, &lens).unwrap());
        }
        // 413-byte records, two per 1000-byte segment.
        assert_eq!(log.segment_count(), 3);
        assert!(locs[0].segment != locs[5].segment);
        // Half of the first segment freed: it is the candidate.
        log.free(locs[0]).unwrap();
        assert_eq!(log.compaction_candidate(0.9), Some(locs[0].segment));
        assert_eq!(log.compaction_candidate(0.4), None);
        let records = log.records(locs[1].segment).unwrap();
        assert_eq!(records.len(), 2, "the freed record is still on disk");
        assert_eq!(records[1].0, locs[1]);
        // A read holding the file survives the segment's removal.
        let file = log.file(locs[1].segment).unwrap();
        log.free(locs[1]).unwrap();
        assert!(log.file(locs[1].segment).is_none());
        assert_eq!(read_value(&file, locs[1], &[1]).unwrap(), value);
        assert!(matches!(
            read(&log, locs[1], &[1]),
            Err(ReadError::NoSegment)
        ));
        assert_eq!(log.segment_count(), 2);
        assert_eq!(log.live_bytes(), 4 * 413);
        // The head segment stays even when empty, until the next one starts.
        log.free(locs[4]).unwrap();
        log.free(locs[5]).unwrap();
        assert!(log.file(locs[5].segment).is_some());
        let (b, lens) = batch(&[(b"next", &vec![2u8; 900])]);
        log.append(&b, &lens).unwrap();
        assert!(log.file(locs[5].segment).is_none());
    }

    #[test]
    fn a_record_larger_than_a_segment_gets_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = ValueLog::with_segment_size(dir.path(), 100).unwrap();
        let (b, lens) = batch(&[(b"small", b"x")]);
        let first = log.append(&b, &lens).unwrap()[0];
        let big = vec![9u8; 500];
        let (b, lens) = batch(&[(b"big", &big)]);
        let second = log.append(&b, &lens).unwrap()[0];
        assert_ne!(first.segment, second.segment);
        assert_eq!(second.offset, 0);
        assert_eq!(read(&log, second, b"big").unwrap(), big);
    }
}
