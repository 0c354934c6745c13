//! The live incremental file of the append-only log, with its space
//! written ahead of its end.
//!
//! An fdatasync after an append must also commit the file's new size, an
//! ext4 journal commit; after an overwrite of blocks already written it
//! only flushes the data. Measured on this project's VM disk, one 1 KB
//! record per fdatasync: 224 us appending, 138 us overwriting zeros. Under
//! `appendfsync always` that fsync is on every client's path, so the log
//! thread keeps `PREALLOC_AHEAD` bytes of zeros written past the end (what
//! databases do with their write-ahead logs) and records overwrite them.
//!
//! The file is therefore longer than the log while keel runs, the rest
//! zeros. It is cut to the log's end whenever keel lets go of it (shutdown,
//! a rewrite switching files, `appendonly no`), so a log at rest is plain
//! Redis AOF; after a crash the zeros stay, and keel's loader and
//! `--check-aof` stop at the last non-zero byte (`logical_len`): every
//! record ends with "\r\n", so that is where the log ends.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::{ArcMutexGuard, Mutex, RawMutex};

/// Zeros kept written past the end of the log.
const PREALLOC_AHEAD: u64 = 4 << 20;
/// Zeros written per step (the log thread holds no lock a client waits
/// for meanwhile, unless the log reaches the step's range).
const FILL_STEP: u64 = 1 << 20;

/// The log's end within an incremental file's bytes: after the last
/// non-zero byte (zeros after it are preallocated space).
pub fn logical_len(data: &[u8]) -> usize {
    data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1)
}

/// Whether `path` names an incremental file, the only kind keel
/// preallocates.
pub fn is_incr(path: &Path) -> bool {
    path.to_string_lossy().ends_with(".incr.aof")
}

/// What starts at a record boundary of a log file (for the loader and
/// `--check-aof`, which must agree).
pub enum Boundary {
    /// A RESP array: a record to decode.
    Record,
    /// An annotation line (`#TS:...`, Redis's aof-timestamp-enabled),
    /// skipped as Redis's loader does; the next boundary is here.
    Annotation(usize),
    /// The log ends: zeros of an incremental file (preallocated space; any
    /// bytes after them are records a power loss wrote out of order, a
    /// cut-off tail), or an annotation cut short.
    End,
    /// Not a record: Redis's loader requires each to be a RESP array.
    Corrupt,
}

/// Classifies what starts at `pos` (< `data.len()`) of a log file;
/// `incr`: the file is an incremental one (see `is_incr`).
pub fn boundary(data: &[u8], pos: usize, incr: bool) -> Boundary {
    match data[pos] {
        b'*' => Boundary::Record,
        b'#' => match data[pos..].iter().position(|&b| b == b'\n') {
            Some(nl) => Boundary::Annotation(pos + nl + 1),
            None => Boundary::End,
        },
        0 if incr => Boundary::End,
        _ => Boundary::Corrupt,
    }
}

/// Zero filling of one file, shared by its `LogFile` and the log thread.
struct Fill {
    /// Held while zeros are being written.
    busy: Arc<Mutex<()>>,
    /// Start of the range being filled (u64::MAX: none). A record write
    /// that would reach it waits for the fill (`busy`) first.
    from: AtomicU64,
    /// The file holds zeros from the log's end up to here.
    zeroed_to: AtomicU64,
    /// Cut (`LogFile::trim`): no more zeros.
    done: AtomicBool,
}

pub struct LogFile {
    /// Shared with fsyncs running outside the log's lock.
    pub file: Arc<File>,
    /// Where the next record goes (the file's cursor).
    end: u64,
    fill: Arc<Fill>,
}

impl LogFile {
    /// Opens (or creates) an incremental file to append to: the log
    /// continues at its last non-zero byte.
    pub fn open(path: &Path) -> io::Result<LogFile> {
        let mut file = OpenOptions::new()
            .create(true)
            // An existing log is continued, never emptied.
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)?;
        let len = file.metadata()?.len();
        let end = last_nonzero_end(&mut file, len)?;
        file.seek(SeekFrom::Start(end))?;
        Ok(LogFile {
            file: Arc::new(file),
            end,
            fill: Arc::new(Fill {
                busy: Arc::new(Mutex::new(())),
                from: AtomicU64::new(u64::MAX),
                zeroed_to: AtomicU64::new(len),
                done: AtomicBool::new(false),
            }),
        })
    }

    /// The log's length in this file.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Writes all of `chunk` at the log's end, or hands back the bytes not
    /// written with the error, so the caller can keep them for a retry.
    pub fn write(&mut self, chunk: Vec<u8>) -> Result<(), (Vec<u8>, io::Error)> {
        if self.end + chunk.len() as u64 > self.fill.from.load(Relaxed) {
            // The log reached the range being zeroed: wait for it.
            drop(self.fill.busy.lock());
        }
        let mut done = 0;
        let result = loop {
            if done == chunk.len() {
                break Ok(());
            }
            match (&*self.file).write(&chunk[done..]) {
                Ok(0) => break Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        self.end += done as u64;
        result.map_err(|e| (chunk[done..].to_vec(), e))
    }

    /// Cuts the preallocated zeros off for good (the file is then plain
    /// Redis AOF, and records written after this append): keel is letting
    /// go of the file. The caller fsyncs.
    pub fn trim(&self) -> io::Result<()> {
        let _no_fill = self.fill.busy.lock();
        self.fill.done.store(true, Relaxed);
        self.file.set_len(self.end)?;
        self.fill.zeroed_to.store(self.end, Relaxed);
        Ok(())
    }

    /// The next step of zero filling, if the zeros ahead of the log run
    /// short. Called with the log's lock held (`&self` is inside it); the
    /// step runs after it is released.
    pub fn next_fill(&self) -> Option<FillStep> {
        let from = self.fill.zeroed_to.load(Relaxed).max(self.end);
        if from >= self.end + PREALLOC_AHEAD || self.fill.done.load(Relaxed) {
            return None;
        }
        // Taken while the log's lock is held, so a record write sees
        // `from` set and waits, or was done before the range is chosen.
        let busy = self.fill.busy.lock_arc();
        self.fill.from.store(from, Relaxed);
        Some(FillStep {
            _busy: busy,
            fill: self.fill.clone(),
            file: self.file.clone(),
            from,
        })
    }
}

/// One step of zero filling (see `LogFile::next_fill`).
pub struct FillStep {
    _busy: ArcMutexGuard<RawMutex, ()>,
    fill: Arc<Fill>,
    file: Arc<File>,
    from: u64,
}

/// Offset just after the last non-zero byte of the first `len` bytes.
fn last_nonzero_end(file: &mut File, len: u64) -> io::Result<u64> {
    let mut block = vec![0u8; 64 << 10];
    let mut end = len;
    while end > 0 {
        let start = end.saturating_sub(block.len() as u64);
        let part = &mut block[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(part)?;
        if let Some(i) = part.iter().rposition(|&b| b != 0) {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

impl FillStep {
    /// Writes the zeros and starts their writeback (`sync_file_range`,
    /// which waits for nothing and commits no metadata), so the next fsync
    /// does not have to write them. That fsync still commits the allocation
    /// in the journal, once per step. No fsync here: its failure could not
    /// be told from a failure to make records durable, and on a slow disk
    /// the log thread, which forms the commit groups, would wait for it. A
    /// failed write only stops preallocating for now (records then append).
    pub fn run(self) -> io::Result<()> {
        let zeros = vec![0u8; FILL_STEP as usize];
        let written = self.file.write_all_at(&zeros, self.from);
        if written.is_ok() {
            self.fill.zeroed_to.store(self.from + FILL_STEP, Relaxed);
        }
        self.fill.from.store(u64::MAX, Relaxed);
        if written.is_ok() {
            // SAFETY: a plain system call on an open descriptor; its
            // failure only leaves the writeback to the kernel.
            unsafe {
                libc::sync_file_range(
                    self.file.as_raw_fd(),
                    self.from as libc::off64_t,
                    FILL_STEP as libc::off64_t,
                    libc::SYNC_FILE_RANGE_WRITE,
                );
            }
        }
        written
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_path(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("keel-logfile-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("appendonly.aof.1.incr.aof")
    }

    #[test]
    fn logical_len_stops_at_the_last_nonzero_byte() {
        assert_eq!(logical_len(b""), 0);
        assert_eq!(logical_len(&[0, 0, 0]), 0);
        assert_eq!(logical_len(b"*1\r\n$4\r\nPING\r\n\0\0\0"), 14);
        assert_eq!(logical_len(b"*1\r\n$4\r\nPING\r\n"), 14);
        assert!(is_incr(Path::new("d/appendonly.aof.3.incr.aof")));
        assert!(!is_incr(Path::new("d/appendonly.aof.2.base.rdb")));
    }

    #[test]
    fn records_overwrite_the_zeros_and_trim_leaves_only_records() {
        let path = temp_path("fill");
        let mut log = LogFile::open(&path).unwrap();
        let mut expected = b"first\r\n".to_vec();
        log.write(expected.clone()).unwrap();
        // Fill until PREALLOC_AHEAD bytes of zeros follow the log.
        let mut steps = 0;
        while let Some(step) = log.next_fill() {
            assert!(step.run().is_ok());
            steps += 1;
        }
        assert_eq!(steps, (PREALLOC_AHEAD / FILL_STEP) as usize);
        let len = std::fs::metadata(&path).unwrap().len();
        assert_eq!(len, 7 + PREALLOC_AHEAD);
        // A record longer than a step runs over several of them.
        let big = vec![b'x'; (FILL_STEP + 10) as usize];
        log.write(big.clone()).unwrap();
        expected.extend_from_slice(&big);
        let data = std::fs::read(&path).unwrap();
        assert_eq!(
            data.len() as u64,
            len,
            "written inside the zeros, not appended"
        );
        assert_eq!(&data[..expected.len()], &expected[..]);
        assert_eq!(logical_len(&data), expected.len());

        // A crash leaves the zeros; reopening continues at the log's end.
        drop(log);
        let mut log = LogFile::open(&path).unwrap();
        assert_eq!(log.end(), expected.len() as u64);
        log.write(b"after\r\n".to_vec()).unwrap();
        expected.extend_from_slice(b"after\r\n");
        log.trim().unwrap();
        assert!(log.next_fill().is_none(), "no zeros after a trim");
        log.write(b"late\r\n".to_vec()).unwrap();
        expected.extend_from_slice(b"late\r\n");
        assert_eq!(std::fs::read(&path).unwrap(), expected);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }
}
