//! The append-only log: Redis 7's multi-part AOF (a manifest naming a base
//! file and incremental files in `appenddirname`), group commit, loading
//! and rewriting.
//!
//! Every write reaches the log through the propagation path
//! (`command::propagate`), under the
//! shard locks of the keys it wrote, so the log order is a valid
//! serialisation of what clients saw. Appending only copies bytes into a
//! buffer; one writer thread writes the buffer and, with `appendfsync
//! always`, fsyncs it, so all connections on all threads that wrote since
//! the last fsync share the next one (group commit). With `always` a
//! connection sends the replies of a batch only once the log is durable up
//! to that batch's last record.
//!
//! Rewriting needs no fork and no second copy of the data: at the start the
//! log switches to a new incremental file while every shard is locked (a
//! moment with no command in flight); then the shards are written into a
//! new base one at a time. A command about to touch a shard not written yet
//! writes that shard first (`before_execute`), so the base holds each shard
//! exactly as it was before any command logged in the new incremental
//! file. A crash at any point leaves a manifest naming a complete history.
//!
//! Layout: here, appending, the writer thread and the files; `durable.rs`,
//! waiting for durability before replies; `fsync_pool.rs`, the slow
//! disk's fsync threads; `manifest.rs`; `rewrite.rs`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{
    AtomicBool, AtomicU64, AtomicU8,
    Ordering::{Acquire, Relaxed, Release, SeqCst},
};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};
use resp::encode;

use super::log_file::LogFile;
use crate::storage::keyspace::{Keyspace, View, SHARDS};
use crate::storage::value::{EntryRef, Value};

mod durable;
mod fsync_pool;
mod manifest;
mod rewrite;

pub use durable::Durable;

/// An RDB image a full sync loaded, for the log to start again from.
pub enum ImageSource<'a> {
    Bytes(&'a [u8]),
    /// A file holding it (open at its start), copied by the kernel
    /// without passing through memory.
    File(&'a File),
}
use durable::*;
use fsync_pool::*;
use manifest::*;
use rewrite::*;
pub use rewrite::{rebuild_commands, BaseFormat};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fsync {
    Always = 0,
    EverySec = 1,
    No = 2,
}

/// `appendfsync`.
impl crate::config::FromValue for Fsync {
    fn from_value(s: &str) -> Fsync {
        match s {
            "always" => Fsync::Always,
            "no" => Fsync::No,
            _ => Fsync::EverySec,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AofError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("Bad file format reading the append only file {file} at offset {offset}: {why}")]
    Corrupt {
        file: String,
        offset: u64,
        why: String,
    },
}

/// Fsyncs in flight at most under `always` on a slow disk. Each also
/// ends in a real device flush, and overlapping ones queue for the device:
/// with 2 ms fsyncs, 8 (a group every 1/8 of an fsync) gave 83-86% of the
/// clients / fsync time bound, 16 and 32 82-84%, 4 74-76%.
const FSYNC_PARALLEL: usize = 8;
/// An fsync this slow means a slow disk: overlap fsyncs (see `gather`).
const SLOW_FSYNC: Duration = Duration::from_millis(1);

thread_local! {
    /// A connection of this worker leads a group commit (fast disk).
    static LEADING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// This worker's relay of durability notifications (`relay_durable`).
    static LOCAL_DURABLE: std::cell::RefCell<Option<std::rc::Rc<Relay>>> =
        const { std::cell::RefCell::new(None) };
}

struct Inner {
    buf: Vec<u8>,
    /// Total bytes appended since start.
    appended: u64,
    /// Database the log stream is in (-1 before the first SELECT).
    db: i64,
    /// Unix second of the last `#TS:` annotation (`aof-timestamp-enabled`).
    annotated_at: u64,
}

pub struct Aof {
    /// The rewrite in progress. Its own lock, not the append buffer's:
    /// writing a shard into the new base (a command's `before_execute`,
    /// the rewrite thread) must not stop every other writer's append.
    /// Taken after the shards it writes and after `sink`/`inner`, never
    /// before them.
    rewrite: Mutex<Option<Rewrite>>,
    /// The slots the running rewrite has taken (written into its base,
    /// or copied to be), read without the rewrite's lock.
    capture: crate::persistence::capture::Capture,
    /// The live file's length as `size_on_disk` last read it.
    live_end_seen: AtomicU64,
    dir: PathBuf,
    filename: String,
    fsync: AtomicU8,
    inner: Mutex<Inner>,
    sink: Mutex<Option<LogFile>>,
    manifest: Mutex<Manifest>,
    wake: Condvar,
    wake_lock: Mutex<()>,
    /// Bytes known to be on disk (fsynced; written, for `no`).
    durable: AtomicU64,
    durable_changed: tokio::sync::Notify,
    /// `appended`, readable without the lock (see `appended_hint`).
    appended_seen: AtomicU64,
    /// How far the log is fsynced (under every policy; `durable` is only
    /// written under `everysec` and `no`): what WAITAOF counts.
    fsynced: AtomicU64,
    /// Wakes WAITAOF's waiters when `fsynced` moves or the log turns off.
    pub fsynced_changed: tokio::sync::Notify,
    /// The log holds the whole dataset: false from `appendonly yes` at run
    /// time until its first rewrite ends (the data from before is only in
    /// that rewrite's base), as Redis's AOF_WAIT_REWRITE.
    holds_dataset: AtomicBool,
    /// The last write to the log failed; its bytes wait in the buffer
    /// and every log-thread round retries them. Writes are refused
    /// meanwhile (MISCONF), as Redis's `aof_last_write_status`.
    write_failed: AtomicBool,
    /// The last fsync failed (`everysec`: Redis's
    /// `aof_bio_fsync_status`); cleared by the next one that succeeds.
    fsync_failed: AtomicBool,
    /// strerror text of the last failure, for the MISCONF reply.
    last_error: Mutex<String>,
    enabled: AtomicBool,
    rewriting: AtomicBool,
    pub rewrites: AtomicU64,
    /// The last rewrite failed, and how many in a row have (INFO
    /// `aof_last_bgrewrite_status`, `aof_rewrites_consecutive_failures`).
    pub rewrite_failures: AtomicU64,
    pub last_rewrite_secs: AtomicU64,
    last_fsync: Mutex<Instant>,
    /// Written to the file since the last fsync.
    unsynced: AtomicBool,
    /// The log thread is waiting for work.
    sleeping: AtomicBool,
    /// Group commit (`always`, see `gather`): the waiting connections the
    /// log thread waits for (0: not gathering), and the last fsync's
    /// duration.
    gather_target: AtomicU64,
    /// fsyncs of the live log since start (INFO `aof_fsyncs`, a keel
    /// addition: with group commit it grows slower than the writes).
    pub fsyncs: AtomicU64,
    /// Durations of those fsyncs (ns), and under `always` the connections
    /// waiting when each started: the metrics endpoint's histograms.
    pub fsync_seconds: crate::observe::metrics::Histogram,
    pub group_size: crate::observe::metrics::Histogram,
    /// Connections waiting in `wait_durable`, and the most seen lately.
    waiting: AtomicU64,
    peak_waiting: AtomicU64,
    peak_since: Mutex<Instant>,
    last_submit: Mutex<Instant>,
    last_fsync_ns: AtomicU64,
    pool: FsyncPool,
    /// The fsync threads have been started.
    fsync_threads: AtomicBool,
    /// `aof-timestamp-enabled` (see `annotate`).
    timestamps: AtomicBool,
    /// Fsyncs running off the clients' path (`background_fsync`).
    background_fsyncs: AtomicU64,
    /// The latency monitor (the server's): `aof-write*` and
    /// `aof-fsync-always` events.
    pub latency: Arc<crate::observe::latency::Monitor>,
    /// Preallocation failed (disk full): not tried again before then.
    prealloc_paused_until: Mutex<Option<Instant>>,
    stop: AtomicBool,
}

/// The C library's text for an I/O error, as Redis prints it
/// (`No space left on device`, without Rust's ` (os error 28)`).
fn strerror(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

fn write_atomically(path: &Path, data: &[u8]) -> std::io::Result<()> {
    super::atomic_file::write(path, "tmp", data)
}

impl Aof {
    /// Prepares the log in `dir/appenddirname` (not yet open for writing).
    pub fn new(dir: &Path, dirname: &str, filename: &str, fsync: Fsync) -> Aof {
        Aof {
            dir: dir.join(dirname),
            filename: filename.to_string(),
            fsync: AtomicU8::new(fsync as u8),
            inner: Mutex::new(Inner {
                buf: Vec::new(),
                appended: 0,
                db: -1,
                annotated_at: 0,
            }),
            rewrite: Mutex::new(None),
            capture: Default::default(),
            live_end_seen: AtomicU64::new(0),
            sink: Mutex::new(None),
            manifest: Mutex::new(Manifest::default()),
            wake: Condvar::new(),
            wake_lock: Mutex::new(()),
            durable: AtomicU64::new(0),
            durable_changed: tokio::sync::Notify::new(),
            appended_seen: AtomicU64::new(0),
            fsynced: AtomicU64::new(0),
            fsynced_changed: tokio::sync::Notify::new(),
            holds_dataset: AtomicBool::new(true),
            write_failed: AtomicBool::new(false),
            fsync_failed: AtomicBool::new(false),
            last_error: Mutex::new(String::new()),
            enabled: AtomicBool::new(false),
            rewriting: AtomicBool::new(false),
            rewrites: AtomicU64::new(0),
            rewrite_failures: AtomicU64::new(0),
            last_rewrite_secs: AtomicU64::new(0),
            last_fsync: Mutex::new(Instant::now()),
            unsynced: AtomicBool::new(false),
            sleeping: AtomicBool::new(false),
            gather_target: AtomicU64::new(0),
            waiting: AtomicU64::new(0),
            fsyncs: AtomicU64::new(0),
            fsync_seconds: crate::observe::metrics::Histogram::new(
                crate::observe::metrics::FSYNC_BUCKETS_NS,
            ),
            group_size: crate::observe::metrics::Histogram::new(
                crate::observe::metrics::GROUP_BUCKETS,
            ),
            peak_waiting: AtomicU64::new(0),
            peak_since: Mutex::new(Instant::now()),
            last_submit: Mutex::new(Instant::now()),
            last_fsync_ns: AtomicU64::new(0),
            pool: FsyncPool::default(),
            fsync_threads: AtomicBool::new(false),
            timestamps: AtomicBool::new(false),
            background_fsyncs: AtomicU64::new(0),
            latency: Default::default(),
            prealloc_paused_until: Mutex::new(None),
            stop: AtomicBool::new(false),
        }
    }

    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled.load(Relaxed)
    }

    pub fn fsync_policy(&self) -> Fsync {
        match self.fsync.load(Relaxed) {
            0 => Fsync::Always,
            2 => Fsync::No,
            _ => Fsync::EverySec,
        }
    }

    pub fn set_fsync(&self, f: Fsync) {
        self.fsync.store(f as u8, Relaxed);
    }

    /// Whether the log is being written and fsynced without errors
    /// (INFO `aof_last_write_status`; otherwise writes get MISCONF).
    #[inline]
    pub fn write_ok(&self) -> bool {
        !self.write_failed.load(Relaxed) && !self.fsync_failed.load(Relaxed)
    }

    /// How far the log has been appended to, without taking its lock.
    /// Under `always` a reply that read data waits until this much is
    /// durable: Redis replies to every client of a round after its
    /// fsync, so nobody sees a write the disk does not hold yet.
    #[inline]
    pub fn appended_hint(&self) -> u64 {
        self.appended_seen.load(Acquire)
    }

    /// Whether the log holds its first `offset` bytes on disk (fsynced;
    /// written, under `no`).
    pub fn durable_at_least(&self, offset: u64) -> bool {
        self.durable.load(Acquire) >= offset
    }

    /// How far the log holds the dataset fsynced: `None` while it is off
    /// or does not hold the whole dataset yet (see `holds_dataset`).
    pub fn fsynced(&self) -> Option<u64> {
        (self.enabled() && self.holds_dataset.load(Acquire)).then(|| self.fsynced.load(Acquire))
    }

    /// Whether the log holds the whole dataset (see `holds_dataset`).
    pub fn set_holds_dataset(&self, whole: bool) {
        self.holds_dataset.store(whole, Release);
        self.fsynced_changed.notify_waiters();
    }

    /// The log is fsynced through `end`.
    fn fsynced_through(&self, end: u64) {
        if self.fsynced.fetch_max(end, SeqCst) < end {
            self.fsynced_changed.notify_waiters();
        }
    }

    pub fn last_error(&self) -> String {
        self.last_error.lock().clone()
    }

    pub fn rewriting(&self) -> bool {
        self.rewriting.load(Relaxed)
    }

    pub fn manifest_path(&self) -> PathBuf {
        self.dir.join(format!("{}.manifest", self.filename))
    }

    /// `aof-timestamp-enabled`: turns Redis's `#TS:<unix seconds>`
    /// annotations on or off.
    pub fn set_timestamps(&self, on: bool) {
        self.timestamps.store(on, Relaxed);
    }

    /// With `aof-timestamp-enabled`, a `#TS:<unix seconds>` line before the
    /// first record of each second, as Redis writes (loaders skip it; it
    /// lets tools cut a log at a point in time).
    fn annotate(&self, inner: &mut Inner) {
        if !self.timestamps.load(Relaxed) {
            return;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if now > inner.annotated_at {
            inner.annotated_at = now;
            inner
                .buf
                .extend_from_slice(format!("#TS:{now}\r\n").as_bytes());
        }
    }

    /// Appends one command in database `db`; returns the log offset its
    /// record ends at (what a client must wait for under `always`).
    pub fn append(&self, db: usize, argv: &[&[u8]]) -> u64 {
        let mut inner = self.inner.lock();
        let before = inner.buf.len();
        self.annotate(&mut inner);
        if inner.db != db as i64 {
            let dbs = db.to_string();
            encode::command(&mut inner.buf, &[b"SELECT".as_slice(), dbs.as_bytes()]);
            inner.db = db as i64;
        }
        encode::command(&mut inner.buf, argv);
        inner.appended += (inner.buf.len() - before) as u64;
        let end = inner.appended;
        self.appended_seen.store(end, Release);
        drop(inner);
        self.wake_writer();
        end
    }

    /// Appends a transaction's records as one MULTI ... EXEC block, with
    /// nothing of other clients in between.
    pub fn append_transaction(&self, records: &[(usize, Vec<Vec<u8>>)]) -> u64 {
        let mut inner = self.inner.lock();
        let before = inner.buf.len();
        self.annotate(&mut inner);
        let mut multi_written = false;
        for (db, argv) in records {
            if inner.db != *db as i64 {
                let dbs = db.to_string();
                encode::command(&mut inner.buf, &[b"SELECT".as_slice(), dbs.as_bytes()]);
                inner.db = *db as i64;
            }
            if !multi_written {
                encode::command(&mut inner.buf, &[b"MULTI".as_slice()]);
                multi_written = true;
            }
            encode::command(&mut inner.buf, argv);
        }
        encode::command(&mut inner.buf, &[b"EXEC".as_slice()]);
        inner.appended += (inner.buf.len() - before) as u64;
        let end = inner.appended;
        self.appended_seen.store(end, Release);
        drop(inner);
        self.wake_writer();
        end
    }

    /// Under `always`, a sleeping log thread is woken at once, and one
    /// gathering a group once the group is complete; otherwise it wakes on
    /// its own every 10 ms.
    #[inline]
    fn wake_writer(&self) {
        if self.sleeping.load(Relaxed)
            && self.fsync_policy() == Fsync::Always
            && !self.fsync_inline()
        {
            let _g = self.wake_lock.lock();
            self.wake.notify_one();
        }
    }

    /// Forms the next group before it is written and its fsync queued.
    ///
    /// Starting an fsync as soon as one record is pending puts the clients
    /// that answer a moment later into the next fsync, a whole fsync
    /// later. How to wait depends on the disk:
    /// - fast fsync (under `SLOW_FSYNC`): while fewer connections wait for
    ///   durability than the most seen lately (the others are between a
    ///   reply and their next write), wait for them, for at most half the
    ///   last fsync's duration, so a round of clients shares one fsync;
    /// - slow fsync (a network volume): fsyncs overlap (`FsyncPool`), and a
    ///   new group starts every 1/FSYNC_PARALLEL of an fsync, so a client
    ///   waits about one fsync whenever it writes (measured: 83-86% of the
    ///   clients / fsync time bound, against 71% when gathering whole
    ///   rounds).
    fn gather(&self) {
        let fsync = Duration::from_nanos(self.last_fsync_ns.load(Relaxed));
        if fsync >= SLOW_FSYNC {
            let step = fsync / FSYNC_PARALLEL as u32;
            let last = *self.last_submit.lock();
            let wait = (last + step).saturating_duration_since(Instant::now());
            if !wait.is_zero() {
                std::thread::sleep(wait);
            }
            *self.last_submit.lock() = Instant::now();
            return;
        }
        let peak = self.peak_waiting.load(Relaxed);
        let window = fsync / 2;
        if peak <= 1 || window < Duration::from_micros(20) {
            return;
        }
        let deadline = Instant::now() + window;
        let mut g = self.wake_lock.lock();
        self.gather_target.store(peak, Relaxed);
        while self.waiting.load(Relaxed) < peak && !self.stop.load(Relaxed) {
            if self.wake.wait_until(&mut g, deadline).timed_out() {
                break;
            }
        }
        self.gather_target.store(0, Relaxed);
        // Forget an old peak (clients that left) once a second.
        let mut since = self.peak_since.lock();
        if since.elapsed() >= Duration::from_secs(1) {
            *since = Instant::now();
            self.peak_waiting.store(self.waiting.load(Relaxed), Relaxed);
        }
    }

    /// A connection starts waiting for durability: counted for `gather`,
    /// which it wakes when the group it was waiting for is complete.
    fn waiter_arrives(&self) {
        let w = self.waiting.fetch_add(1, SeqCst) + 1;
        self.peak_waiting.fetch_max(w, Relaxed);
        let target = self.gather_target.load(Relaxed);
        if target != 0 && w >= target {
            let _g = self.wake_lock.lock();
            self.wake.notify_one();
        }
    }

    /// Whether `always` fsyncs on the workers (a fast disk) rather than
    /// on the fsync threads (a slow one): decided by the last fsync's
    /// duration, so a disk that slows down or recovers switches mode.
    fn fsync_inline(&self) -> bool {
        self.last_fsync_ns.load(Relaxed) < SLOW_FSYNC.as_nanos() as u64
    }

    /// `always` on a fast disk: writes what was appended and fsyncs it on
    /// the calling thread. The fsync runs outside the sink lock, so each
    /// worker's leader (and the log thread) can have one in flight: the
    /// kernel commits concurrent fsyncs of one file together. Returns
    /// whether the durable offset moved.
    fn sync_inline(&self) -> bool {
        let (file, end) = {
            let mut sink = self.sink.lock();
            let (chunk, end) = {
                let mut inner = self.inner.lock();
                (std::mem::take(&mut inner.buf), inner.appended)
            };
            let Some(s) = sink.as_mut() else { return false };
            if let Err(e) = self.write_chunk(s, chunk) {
                self.write_error(&e);
                return false;
            }
            self.write_recovered();
            (s.file.clone(), end)
        };
        if self.durable.load(Relaxed) >= end {
            return false;
        }
        self.group_size.observe(self.waiting.load(Relaxed));
        let started = Instant::now();
        if let Err(e) = file.sync_data() {
            self.fsync_error(&e);
            return false;
        }
        self.fsyncs.fetch_add(1, Relaxed);
        let now = Instant::now();
        *self.last_fsync.lock() = now;
        self.last_fsync_ns
            .store(now.duration_since(started).as_nanos() as u64, Relaxed);
        self.fsync_seconds
            .observe(now.duration_since(started).as_nanos() as u64);
        self.latency
            .add_if_needed("aof-fsync-always", now.duration_since(started));
        self.fsync_recovered();
        self.durable.fetch_max(end, SeqCst);
        self.fsynced_through(end);
        true
    }

    /// Writes `chunk` (taken from the buffer) to the log. On an error
    /// (disk full, EIO) the part not written goes back to the front of
    /// the buffer, so the next write retries it in order: the file never
    /// skips bytes, and a record is durable only once wholly written. The
    /// caller holds the sink.
    fn write_chunk(&self, log: &mut LogFile, chunk: Vec<u8>) -> std::io::Result<()> {
        let started = self.latency.start();
        let written = log.write(chunk);
        if let Some(t) = started {
            // Redis's flushAppendOnlyFile: by what else was going on, and
            // all of them as `aof-write`.
            let took = t.elapsed();
            let event = if self.background_fsyncs.load(Relaxed) > 0 {
                "aof-write-pending-fsync"
            } else {
                "aof-write-alone"
            };
            self.latency.add_if_needed(event, took);
            self.latency.add_if_needed("aof-write", took);
        }
        written.map_err(|(rest, e)| {
            let mut inner = self.inner.lock();
            let mut buf = rest;
            buf.extend_from_slice(&inner.buf);
            inner.buf = buf;
            e
        })
    }

    /// Writes the buffer to the file (and fsyncs it if asked), then
    /// publishes the new durable offset. The sink is held for the writes
    /// only: an `everysec` fsync runs after it is released, so connections
    /// handing their writes to the OS do not wait for the disk.
    fn write_out(&self, mut sink: MutexGuard<'_, Option<LogFile>>, fsync: bool) {
        let (chunk, end) = {
            let mut inner = self.inner.lock();
            let end = inner.appended;
            (std::mem::take(&mut inner.buf), end)
        };
        let Some(s) = sink.as_mut() else { return };
        if !chunk.is_empty() {
            if let Err(e) = self.write_chunk(s, chunk) {
                self.write_error(&e);
                return;
            }
            self.unsynced.store(true, Relaxed);
        }
        // Nothing is left unwritten (a failed write's bytes would be).
        self.write_recovered();
        if fsync && self.fsync_policy() == Fsync::Always && self.fsync_threads.load(Relaxed) {
            // `always`: the fsync runs on a pool thread, so the next group
            // can be written and fsynced while this one's is in flight.
            if self.unsynced.swap(false, Relaxed) {
                self.pool.submit(s.file.clone(), end);
            }
            return;
        }
        if fsync && self.unsynced.swap(false, Relaxed) {
            let file = s.file.clone();
            drop(sink);
            if self.fsync_policy() == Fsync::Always {
                self.group_size.observe(self.waiting.load(Relaxed));
            }
            let started = Instant::now();
            let synced = self.background_fsync(&file);
            if let Err(e) = synced {
                // The next second retries.
                self.unsynced.store(true, Relaxed);
                self.fsync_error(&e);
                return;
            }
            self.fsyncs.fetch_add(1, Relaxed);
            let now = Instant::now();
            *self.last_fsync.lock() = now;
            self.last_fsync_ns
                .store(now.duration_since(started).as_nanos() as u64, Relaxed);
            self.fsync_seconds
                .observe(now.duration_since(started).as_nanos() as u64);
            if self.fsync_policy() == Fsync::Always {
                self.latency
                    .add_if_needed("aof-fsync-always", now.duration_since(started));
            }
            self.fsync_recovered();
        }
        let policy = self.fsync_policy();
        if fsync {
            // Fsynced now, or nothing was written since the last fsync.
            self.fsynced_through(end);
        }
        if fsync || policy != Fsync::Always {
            self.durable.fetch_max(end, SeqCst);
            // Only `always` has waiters (and one that switched policy
            // meanwhile is released by the next fsync).
            if fsync || policy == Fsync::Always {
                self.durable_changed.notify_waiters();
            }
        }
    }

    /// A write to the log failed (disk full, EIO): writes are refused
    /// until a retry succeeds. Under `always` the connections waiting for
    /// it end without their replies (see `wait_durable`), where Redis
    /// exits: the bytes are kept in order, so nothing acknowledged or
    /// observed is missing from the file once the disk recovers.
    fn write_error(&self, e: &std::io::Error) {
        *self.last_error.lock() = strerror(e);
        if !self.write_failed.swap(true, Relaxed) {
            tracing::error!("Error writing to the AOF file: {}", strerror(e));
        }
        // Whoever waits for this write learns it failed (a waiter checks
        // `write_ok` on every wake-up).
        self.durable_changed.notify_waiters();
    }

    fn write_recovered(&self) {
        if self.write_failed.load(Relaxed) && self.write_failed.swap(false, Relaxed) {
            tracing::info!("AOF write error looks solved, keel can write again.");
        }
    }

    /// An fsync of the log failed. After a failed fsync the kernel may
    /// have dropped the dirty pages it could not write, so a later fsync
    /// that succeeds proves nothing about them: under `always`, where a
    /// reply promises the disk holds the write, keel exits as Redis does
    /// (the log on disk then ends at the last good fsync). Under
    /// `everysec`, writes are refused until an fsync succeeds again.
    fn fsync_error(&self, e: &std::io::Error) {
        if self.fsync_policy() == Fsync::Always {
            tracing::error!(
                "Can't persist append only file: {}. Exiting...",
                strerror(e)
            );
            std::process::exit(1);
        }
        *self.last_error.lock() = strerror(e);
        if !self.fsync_failed.swap(true, Relaxed) {
            tracing::error!("Fail to fsync the AOF file: {}", strerror(e));
        }
    }

    fn fsync_recovered(&self) {
        if self.fsync_failed.load(Relaxed) && self.fsync_failed.swap(false, Relaxed) {
            tracing::info!("AOF fsync error recovered");
        }
    }

    /// The background thread: every 10 ms hands leftovers to the OS, and
    /// fsyncs once a second under `everysec` (`always` fsyncs in
    /// `wait_durable`, `no` never).
    fn writer_loop(self: Arc<Self>) {
        // `gather` sleeps for 1/8 of an fsync (~300 us on a 2 ms disk);
        // the default 50 us timer slack would add a sixth to that.
        // SAFETY: PR_SET_TIMERSLACK only changes this thread's slack.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
        }
        let mut last_prealloc = Instant::now();
        loop {
            {
                let mut g = self.wake_lock.lock();
                // Woken at once only to form an `always` group on a slow
                // disk; otherwise every 10 ms.
                let lazy = || self.fsync_policy() != Fsync::Always || self.fsync_inline();
                let idle = self.inner.lock().buf.is_empty();
                if idle || lazy() {
                    self.sleeping.store(true, Relaxed);
                    if self.inner.lock().buf.is_empty() || lazy() {
                        self.wake.wait_for(&mut g, Duration::from_millis(10));
                    }
                    self.sleeping.store(false, Relaxed);
                }
            }
            if self.stop.load(Relaxed) {
                return;
            }
            if last_prealloc.elapsed() >= Duration::from_millis(10) {
                self.preallocate();
                last_prealloc = Instant::now();
            }
            let policy = self.fsync_policy();
            // `always` on a fast disk: the connections fsync (see
            // `wait_durable`); this thread makes durable, every 10 ms,
            // only writes no client waits for.
            let inline = policy == Fsync::Always && self.fsync_inline();
            if policy == Fsync::Always && !inline {
                self.start_fsync_threads();
                self.gather();
            }
            let fsync = match policy {
                Fsync::Always => true,
                Fsync::EverySec => self.last_fsync.lock().elapsed() >= Duration::from_secs(1),
                Fsync::No => false,
            };
            if inline {
                if self.sync_inline() {
                    self.durable_changed.notify_waiters();
                }
                continue;
            }
            self.write_out(self.sink.lock(), fsync);
        }
    }

    /// Keeps zeros written ahead of the log's end (see `log_file`), one
    /// step at a time, outside the log's lock. A disk too full for them
    /// is tried again a second later; records append meanwhile.
    fn preallocate(&self) {
        if self
            .prealloc_paused_until
            .lock()
            .is_some_and(|t| Instant::now() < t)
        {
            return;
        }
        loop {
            let Some(step) = self.sink.lock().as_ref().and_then(LogFile::next_fill) else {
                return;
            };
            if let Err(e) = step.run() {
                tracing::debug!("cannot preallocate the AOF: {}", strerror(&e));
                *self.prealloc_paused_until.lock() = Some(Instant::now() + Duration::from_secs(1));
                return;
            }
            if self.stop.load(Relaxed) {
                return;
            }
        }
    }

    /// Starts the writer thread (the fsync threads start when a slow
    /// disk under `always` first needs them).
    pub fn start_writer(self: &Arc<Self>) -> std::io::Result<()> {
        let me = self.clone();
        std::thread::Builder::new()
            .name("keel-aof".into())
            .spawn(move || me.writer_loop())?;
        Ok(())
    }

    /// Starts the `keel-fsync-N` threads once. If none can be started the
    /// log thread fsyncs the groups itself (see `write_out`).
    fn start_fsync_threads(self: &Arc<Self>) {
        if self.fsync_threads.swap(true, Relaxed) {
            return;
        }
        for i in 0..FSYNC_PARALLEL {
            let me = self.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("keel-fsync-{i}"))
                .spawn(move || me.fsync_loop());
            if let Err(e) = spawned {
                tracing::warn!("cannot start fsync thread {i}: {e}");
                if i == 0 {
                    self.fsync_threads.store(false, Relaxed);
                }
                break;
            }
        }
    }

    /// An fsync off the client's path (`everysec`, the slow disk's pool),
    /// counted while it runs (INFO `aof_pending_bio_fsync`).
    fn background_fsync(&self, file: &File) -> std::io::Result<()> {
        self.background_fsyncs.fetch_add(1, Relaxed);
        let result = file.sync_data();
        self.background_fsyncs.fetch_sub(1, Relaxed);
        result
    }

    /// Bytes appended and not yet handed to the OS (INFO
    /// `aof_buffer_length`).
    pub fn buffered(&self) -> usize {
        self.inner.lock().buf.len()
    }

    /// Background fsyncs running (INFO `aof_pending_bio_fsync`).
    pub fn pending_fsyncs(&self) -> u64 {
        self.background_fsyncs.load(Relaxed)
    }

    fn fsync_loop(&self) {
        while let Some((file, end)) = self.pool.next() {
            self.group_size.observe(self.waiting.load(Relaxed));
            let started = Instant::now();
            match self.background_fsync(&file) {
                Ok(()) => {
                    self.fsyncs.fetch_add(1, Relaxed);
                    let now = Instant::now();
                    *self.last_fsync.lock() = now;
                    self.last_fsync_ns
                        .store(now.duration_since(started).as_nanos() as u64, Relaxed);
                    self.fsync_seconds
                        .observe(now.duration_since(started).as_nanos() as u64);
                    self.latency
                        .add_if_needed("aof-fsync-always", now.duration_since(started));
                    self.fsync_recovered();
                    self.durable.fetch_max(end, Relaxed);
                    self.fsynced_through(end);
                    self.durable_changed.notify_waiters();
                }
                Err(e) => self.fsync_error(&e),
            }
            drop(file);
            self.pool.done();
        }
    }

    /// Flushes and fsyncs everything (shutdown).
    pub fn flush_all(&self) {
        let mut sink = self.sink.lock();
        let chunk = std::mem::take(&mut self.inner.lock().buf);
        if let Some(s) = sink.as_mut() {
            let _ = s.write(chunk);
            let _ = s.trim();
            let _ = s.file.sync_data();
        }
    }

    fn open_incr(&self, name: &str) -> std::io::Result<LogFile> {
        LogFile::open(&self.dir.join(name))
    }

    fn incr_name(&self, seq: u64) -> String {
        format!("{}.{seq}.incr.aof", self.filename)
    }

    fn base_name(&self, seq: u64, rdb: bool) -> String {
        let ext = if rdb { "rdb" } else { "aof" };
        format!("{}.{seq}.base.{ext}", self.filename)
    }

    /// Opens the log for appending after loading: continues the last
    /// incremental file of the manifest, or creates the first one.
    pub fn open(&self) -> Result<(), AofError> {
        std::fs::create_dir_all(&self.dir)?;
        let mut manifest = self.manifest.lock();
        let incr = match manifest.incrs().last() {
            Some(f) => f.name.clone(),
            None => {
                let seq = manifest.next_seq('i');
                let name = self.incr_name(seq);
                manifest.files.push(ManifestFile {
                    name: name.clone(),
                    seq,
                    kind: 'i',
                });
                write_atomically(&self.manifest_path(), manifest.render().as_bytes())?;
                name
            }
        };
        let file = self.open_incr(&incr)?;
        *self.sink.lock() = Some(file);
        self.inner.lock().db = -1;
        self.enabled.store(true, Relaxed);
        Ok(())
    }

    pub fn disable(&self) {
        self.enabled.store(false, Relaxed);
        self.flush_all();
        *self.sink.lock() = None;
        // `always` waiters see the log is off (`wait_durable`), and so
        // do WAITAOF's.
        self.durable_changed.notify_waiters();
        self.fsynced_changed.notify_waiters();
    }

    /// Reads the manifest (or a legacy single `appendonly.aof` in `dir`)
    /// and returns the files to replay, in order.
    pub fn files_to_load(&self, legacy_dir: &Path) -> Result<Vec<PathBuf>, AofError> {
        let path = self.manifest_path();
        let mut out = Vec::new();
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let manifest = Manifest::parse(&text);
                if let Some(b) = manifest.base() {
                    out.push(self.dir.join(&b.name));
                }
                for f in manifest.incrs() {
                    out.push(self.dir.join(&f.name));
                }
                *self.manifest.lock() = manifest;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let legacy = legacy_dir.join(&self.filename);
                if legacy.exists() {
                    out.push(legacy);
                }
            }
            Err(e) => return Err(e.into()),
        }
        Ok(out)
    }

    /// Bytes of the files the manifest lists.
    pub fn size_on_disk(&self) -> u64 {
        // The live file's preallocated zeros are not part of the log.
        // (The sink is locked before the manifest, as in `start_rewrite`.)
        // INFO asks with every shard held: it must not wait for a write
        // the kernel is throttling, so a busy sink gives the length seen
        // last.
        let live = match self.sink.try_lock() {
            Some(sink) => {
                let end = sink.as_ref().map(LogFile::end);
                self.live_end_seen.store(end.unwrap_or(0), Relaxed);
                end
            }
            None => Some(self.live_end_seen.load(Relaxed)),
        };
        let manifest = self.manifest.lock();
        let last_incr = manifest.incrs().last().map(|f| f.name.clone());
        manifest
            .files
            .iter()
            .filter_map(|f| match live {
                Some(end) if Some(&f.name) == last_incr.as_ref() => Some(end),
                _ => std::fs::metadata(self.dir.join(&f.name))
                    .ok()
                    .map(|m| m.len()),
            })
            .sum()
    }

    pub fn stop(&self) {
        self.stop.store(true, Relaxed);
        self.wake.notify_one();
        self.pool.stop();
    }
}

/// A log file, mapped for replay (see `image_file`).
pub fn read_file(path: &Path) -> Result<super::image_file::ImageFile, AofError> {
    Ok(super::image_file::ImageFile::open(path)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_round_trip() {
        let text = "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n";
        let m = Manifest::parse(text);
        assert_eq!(m.render(), text);
        assert_eq!(
            m.base().map(|b| b.name.as_str()),
            Some("appendonly.aof.1.base.rdb")
        );
        assert_eq!(m.next_seq('i'), 2);
    }
}
