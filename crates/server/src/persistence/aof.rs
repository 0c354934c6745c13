//! The append-only log: Redis 7's multi-part AOF (a manifest naming a base
//! file and incremental files in `appenddirname`), group commit, loading
//! and rewriting.
//!
//! Every write reaches the log through `command::Ctx::propagate`, under the
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

use std::fs::File;
use std::io::{BufWriter, Read, Write};
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
use crate::storage::value::{Entry, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fsync {
    Always = 0,
    EverySec = 1,
    No = 2,
}

impl Fsync {
    pub fn parse(s: &str) -> Fsync {
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

/// Threads that fsync written groups under `always`. An fsync makes
/// durable everything written before it was called, so fsyncs of later
/// groups may overlap earlier ones and complete in any order: the durable
/// offset is the largest end of a completed fsync. On a slow disk (a
/// network volume) a client then waits for one fsync, not for the one in
/// flight plus its own.
#[derive(Default)]
struct FsyncPool {
    jobs: Mutex<FsyncJobs>,
    work: Condvar,
    slot_free: Condvar,
}

#[derive(Default)]
struct FsyncJobs {
    queue: std::collections::VecDeque<(Arc<File>, u64)>,
    in_flight: usize,
    stop: bool,
}

impl FsyncPool {
    /// Queues an fsync of `file` that makes offset `end` durable; waits
    /// while FSYNC_PARALLEL are in flight.
    fn submit(&self, file: Arc<File>, end: u64) {
        let mut j = self.jobs.lock();
        while j.in_flight >= FSYNC_PARALLEL && !j.stop {
            self.slot_free.wait(&mut j);
        }
        j.in_flight += 1;
        j.queue.push_back((file, end));
        self.work.notify_one();
    }

    fn next(&self) -> Option<(Arc<File>, u64)> {
        let mut j = self.jobs.lock();
        loop {
            if let Some(job) = j.queue.pop_front() {
                return Some(job);
            }
            if j.stop {
                return None;
            }
            self.work.wait(&mut j);
        }
    }

    fn done(&self) {
        let mut j = self.jobs.lock();
        j.in_flight -= 1;
        self.slot_free.notify_one();
    }

    fn stop(&self) {
        self.jobs.lock().stop = true;
        self.work.notify_all();
        self.slot_free.notify_all();
    }
}

/// How [`Aof::wait_durable`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durable {
    /// Durable before the call.
    Already,
    /// Durable after waiting for an fsync (or the log was turned off).
    Waited,
    /// Writing or fsyncing the log failed: the writes are not durable
    /// and must not be acknowledged.
    Failed,
}

/// Ends this worker's group commit leadership however the leader's
/// wait ends (see `Aof::wait_durable`).
struct StandDown;

impl Drop for StandDown {
    fn drop(&mut self) {
        LEADING.with(|l| l.set(false));
    }
}

/// A worker's relay of "durable moved" to its waiting connections (see
/// `Aof::relay_durable`).
#[derive(Default)]
struct Relay {
    /// Wakes this worker's connections waiting in `wait_durable`.
    changed: tokio::sync::Notify,
    /// Wakes the relay when the first connection starts waiting.
    wanted: tokio::sync::Notify,
    /// This worker's connections waiting in `wait_durable`.
    waiters: std::cell::Cell<usize>,
}

/// Counts a connection out of its worker's `Relay::waiters`.
struct LocalWaiter(std::rc::Rc<Relay>);

impl LocalWaiter {
    fn arrives(relay: std::rc::Rc<Relay>) -> LocalWaiter {
        let n = relay.waiters.get() + 1;
        relay.waiters.set(n);
        if n == 1 {
            relay.wanted.notify_one();
        }
        LocalWaiter(relay)
    }
}

impl Drop for LocalWaiter {
    fn drop(&mut self) {
        self.0.waiters.set(self.0.waiters.get() - 1);
    }
}

/// Counts a connection out of `Aof::waiting` however its wait ends.
struct WaiterGuard<'a>(&'a AtomicU64);

impl Drop for WaiterGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

thread_local! {
    /// A connection of this worker leads a group commit (fast disk).
    static LEADING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// This worker's relay of durability notifications (`relay_durable`).
    static LOCAL_DURABLE: std::cell::RefCell<Option<std::rc::Rc<Relay>>> =
        const { std::cell::RefCell::new(None) };
}

/// What the manifest lists.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ManifestFile {
    name: String,
    seq: u64,
    kind: char,
}

#[derive(Debug, Clone, Default)]
struct Manifest {
    files: Vec<ManifestFile>,
}

impl Manifest {
    fn parse(text: &str) -> Manifest {
        let mut files = Vec::new();
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let mut name = None;
            let mut seq = 0;
            let mut kind = 'i';
            for pair in words.chunks(2) {
                match pair {
                    ["file", v] => name = Some(v.to_string()),
                    ["seq", v] => seq = v.parse().unwrap_or(0),
                    ["type", v] => kind = v.chars().next().unwrap_or('i'),
                    _ => {}
                }
            }
            if let Some(name) = name {
                files.push(ManifestFile { name, seq, kind });
            }
        }
        Manifest { files }
    }

    fn render(&self) -> String {
        self.files
            .iter()
            .map(|f| format!("file {} seq {} type {}\n", f.name, f.seq, f.kind))
            .collect()
    }

    fn base(&self) -> Option<&ManifestFile> {
        self.files.iter().find(|f| f.kind == 'b')
    }

    fn incrs(&self) -> impl Iterator<Item = &ManifestFile> {
        self.files.iter().filter(|f| f.kind == 'i')
    }

    fn next_seq(&self, kind: char) -> u64 {
        self.files
            .iter()
            .filter(|f| f.kind == kind)
            .map(|f| f.seq)
            .max()
            .unwrap_or(0)
            + 1
    }
}

struct Rewrite {
    done: [bool; SHARDS],
    base: Base,
    base_name: String,
    base_seq: u64,
    started: Instant,
    /// A shard a command's write made us copy could not be written.
    failed: Option<std::io::Error>,
}

/// The new base file being written: commands, or (aof-use-rdb-preamble
/// yes) an RDB image, as Redis 7's `.base.aof` / `.base.rdb`.
enum Base {
    Commands(BufWriter<File>),
    Rdb(Box<super::rdb::Writer<BufWriter<File>>>),
}

/// How a rewrite writes its base.
pub struct BaseFormat {
    /// `Some((rdbcompression, rdbchecksum))` for an RDB base.
    pub rdb: Option<(bool, bool)>,
    /// The function libraries' code, saved with the data.
    pub functions: Vec<Vec<u8>>,
}

impl Base {
    fn write_shard(&mut self, view: &mut View, shard: usize) -> std::io::Result<()> {
        match self {
            Base::Commands(out) => write_shard(out, view, shard),
            Base::Rdb(out) => {
                let mut current_db = usize::MAX;
                let mut result = Ok(());
                view.for_each_in_shard(shard, |db, key, entry| {
                    if result.is_err() {
                        return;
                    }
                    if db != current_db {
                        current_db = db;
                        result = out.select_db(db);
                    }
                    if result.is_ok() {
                        result = out.entry(key, entry);
                    }
                });
                result
            }
        }
    }

    fn finish(self) -> std::io::Result<File> {
        let mut buf = match self {
            Base::Commands(b) => b,
            Base::Rdb(w) => w.finish()?,
        };
        buf.flush()?;
        buf.into_inner().map_err(|e| e.into_error())
    }
}

struct Inner {
    buf: Vec<u8>,
    /// Total bytes appended since start.
    appended: u64,
    /// Database the log stream is in (-1 before the first SELECT).
    db: i64,
    /// Unix second of the last `#TS:` annotation (`aof-timestamp-enabled`).
    annotated_at: u64,
    rewrite: Option<Rewrite>,
}

pub struct Aof {
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
    let tmp = path.with_extension("tmp");
    {
        let mut f = File::create(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
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
                rewrite: None,
            }),
            sink: Mutex::new(None),
            manifest: Mutex::new(Manifest::default()),
            wake: Condvar::new(),
            wake_lock: Mutex::new(()),
            durable: AtomicU64::new(0),
            durable_changed: tokio::sync::Notify::new(),
            appended_seen: AtomicU64::new(0),
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
            peak_waiting: AtomicU64::new(0),
            peak_since: Mutex::new(Instant::now()),
            last_submit: Mutex::new(Instant::now()),
            last_fsync_ns: AtomicU64::new(0),
            pool: FsyncPool::default(),
            fsync_threads: AtomicBool::new(false),
            timestamps: AtomicBool::new(false),
            background_fsyncs: AtomicU64::new(0),
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

    /// Before replies that acknowledge writes up to `offset` leave: under
    /// `always`, waits until the log is durable that far (every client that
    /// wrote since the last fsync waits for the same one) and returns
    /// whether it waited; if the log cannot be written, an error: the
    /// connection ends without its replies, since what they acknowledge is
    /// not on disk (Redis exits in this case). Otherwise nothing to wait for.
    pub async fn durable_before_reply(&self, offset: u64, company: bool) -> std::io::Result<bool> {
        if offset == 0 || self.fsync_policy() != Fsync::Always || !self.enabled() {
            return Ok(false);
        }
        match self.wait_durable(offset, company).await {
            Durable::Already => Ok(false),
            Durable::Waited => Ok(true),
            Durable::Failed => Err(std::io::Error::other(
                "append-only log write failed: replies withheld",
            )),
        }
    }

    /// Under everysec/no: the log is handed to the OS (written, not
    /// fsynced) up to `offset` before the replies acknowledging it leave,
    /// so a crash of the process loses nothing acknowledged.
    pub fn written_before_reply(&self, offset: u64) {
        if offset > 0 && self.enabled() && self.fsync_policy() != Fsync::Always {
            self.write_to_os(offset);
        }
    }

    /// Waits until the log is durable up to `offset` (appendfsync always).
    ///
    /// Group commit: one fsync makes durable everything appended before
    /// it, for every connection on every thread; whatever is appended
    /// during it goes into the next one.
    ///
    /// On a fast disk (an fsync under `SLOW_FSYNC`) the waiting
    /// connections elect a leader, which first lets every other ready
    /// connection of its worker run (they append their writes: the end of
    /// the event-loop round, where Redis fsyncs), then writes and fsyncs
    /// the log on its own thread while the others wait for it. Handing the
    /// fsync to another thread instead costs two cross-thread wake-ups per
    /// group, which on a fast disk cost more CPU than the fsync itself
    /// (measured: 0.67x of the no-log rate, against Redis's 0.87x).
    ///
    /// On a slow disk (a network volume) the log thread forms groups and
    /// the fsync threads overlap their fsyncs (see `gather`): the worker
    /// keeps serving while a group's fsync is in flight.
    ///
    /// `company`: the calling worker serves other connections, which may
    /// be about to append.
    pub async fn wait_durable(&self, offset: u64, company: bool) -> Durable {
        if self.durable.load(Relaxed) >= offset {
            return Durable::Already;
        }
        // On a worker, wait on its local relay (see `relay_durable`).
        let local = LOCAL_DURABLE
            .with(|l| l.borrow().clone())
            .map(LocalWaiter::arrives);
        self.waiter_arrives();
        let _left = WaiterGuard(&self.waiting);
        loop {
            let notified = match &local {
                Some(l) => l.0.changed.notified(),
                None => self.durable_changed.notified(),
            };
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.durable.load(SeqCst) >= offset || !self.enabled() {
                return Durable::Waited;
            }
            if !self.write_ok() {
                return Durable::Failed;
            }
            if self.fsync_inline() && !LEADING.with(|l| l.replace(true)) {
                let leader = StandDown;
                // Let the worker's other ready connections append first,
                // unless it has no others (then the yield is pure
                // latency). Who waits right now is no guide: the first
                // connection of a round finds nobody waiting yet, and
                // fsyncing at once would give every connection its own
                // fsync, one after another.
                if company || self.waiting.load(SeqCst) > 1 {
                    tokio::task::yield_now().await;
                }
                self.sync_inline();
                // Stand down before waking the others: one whose write
                // missed this fsync must be able to lead the next. A
                // connection that starts waiting after the load below sees
                // the new durable offset (SeqCst), or leads itself.
                drop(leader);
                if self.waiting.load(SeqCst) > 1 {
                    self.durable_changed.notify_waiters();
                }
                continue;
            }
            notified.await;
        }
    }

    /// Runs on each worker thread: relays the log thread's "durable
    /// offset moved" to the connections of this thread waiting in
    /// `wait_durable`. The log thread then wakes one task per worker per
    /// fsync (a cross-thread wake-up is an eventfd write and often a
    /// context switch) instead of one per waiting connection.
    pub async fn relay_durable(self: Arc<Self>) {
        let relay = std::rc::Rc::new(Relay::default());
        LOCAL_DURABLE.with(|l| *l.borrow_mut() = Some(relay.clone()));
        loop {
            // Listen only while a connection of this worker waits: a worker
            // without any would otherwise be woken by every fsync of the
            // others (measured: 0.4 s of CPU per 200k `always` writes on
            // the second, idle worker).
            while relay.waiters.get() == 0 {
                relay.wanted.notified().await;
            }
            let mut notified = Box::pin(self.durable_changed.notified());
            notified.as_mut().enable();
            // A waiter that checked `durable` before this registration
            // checks it again now, so no change is missed in between.
            relay.changed.notify_waiters();
            loop {
                notified.as_mut().await;
                // Register for the next change before waking the waiters:
                // a change between the two is then seen by the waiters'
                // own check of `durable`, or wakes this loop again.
                let mut next = Box::pin(self.durable_changed.notified());
                next.as_mut().enable();
                relay.changed.notify_waiters();
                // The woken waiters have not run yet: yield so that they
                // leave (or wait again) before deciding to stop listening.
                tokio::task::yield_now().await;
                if relay.waiters.get() == 0 {
                    break;
                }
                notified = next;
            }
        }
    }

    /// `everysec`/`no`: hands the log to the OS up to `offset` before the
    /// replies that acknowledge it leave, as Redis writes the log in
    /// beforeSleep, so a crash of the process (not of the machine) loses
    /// nothing acknowledged. The first connection of a round to get here
    /// writes what the whole round appended; the others find it written.
    pub fn write_to_os(&self, offset: u64) {
        if self.durable.load(Acquire) >= offset {
            return;
        }
        let sink = self.sink.lock();
        if self.durable.load(Acquire) >= offset {
            return;
        }
        self.write_out(sink, false);
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
        self.fsync_recovered();
        self.durable.fetch_max(end, SeqCst);
        true
    }

    /// Writes `chunk` (taken from the buffer) to the log. On an error
    /// (disk full, EIO) the part not written goes back to the front of
    /// the buffer, so the next write retries it in order: the file never
    /// skips bytes, and a record is durable only once wholly written. The
    /// caller holds the sink.
    fn write_chunk(&self, log: &mut LogFile, chunk: Vec<u8>) -> std::io::Result<()> {
        log.write(chunk).map_err(|(rest, e)| {
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
            self.fsync_recovered();
        }
        let policy = self.fsync_policy();
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
            let started = Instant::now();
            match self.background_fsync(&file) {
                Ok(()) => {
                    self.fsyncs.fetch_add(1, Relaxed);
                    let now = Instant::now();
                    *self.last_fsync.lock() = now;
                    self.last_fsync_ns
                        .store(now.duration_since(started).as_nanos() as u64, Relaxed);
                    self.fsync_recovered();
                    self.durable.fetch_max(end, Relaxed);
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
        // `always` waiters see the log is off (`wait_durable`).
        self.durable_changed.notify_waiters();
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

    /// True if a rewrite must serialise some of `view`'s shards before a
    /// command runs in it.
    #[inline]
    pub fn before_execute(&self, view: &mut View) {
        if !self.rewriting.load(Relaxed) {
            return;
        }
        let mut inner = self.inner.lock();
        let Some(rw) = inner.rewrite.as_mut() else {
            return;
        };
        for shard in view.held_shards() {
            if !rw.done[shard] {
                // A shard the new base misses would lose its keys once the
                // base replaces the old files: the rewrite fails instead.
                if let Err(e) = rw.base.write_shard(view, shard) {
                    rw.failed.get_or_insert(e);
                }
                rw.done[shard] = true;
            }
        }
    }

    /// BGREWRITEAOF: switches to a new incremental file now (the caller
    /// holds every shard) and returns; `finish_rewrite` writes the
    /// remaining shards and installs the new base.
    pub fn start_rewrite(&self, all_shards: &mut View, format: BaseFormat) -> Result<(), AofError> {
        std::fs::create_dir_all(&self.dir)?;
        let mut sink = self.sink.lock();
        let mut inner = self.inner.lock();
        if inner.rewrite.is_some() {
            return Ok(());
        }
        // Whatever was appended before the switch belongs to the old file
        // (kept in the buffer if it cannot be written: nothing is lost).
        if let Some(s) = sink.as_mut() {
            let chunk = std::mem::take(&mut inner.buf);
            if let Err((rest, e)) = s.write(chunk) {
                inner.buf = rest;
                drop(inner);
                self.write_error(&e);
                return Err(e.into());
            }
            if let Err(e) = s.file.sync_data() {
                drop(inner);
                self.fsync_error(&e);
                return Err(e.into());
            }
        }
        let mut manifest = self.manifest.lock();
        let incr_seq = manifest.next_seq('i');
        let incr = self.incr_name(incr_seq);
        let file = self.open_incr(&incr)?;
        manifest.files.push(ManifestFile {
            name: incr.clone(),
            seq: incr_seq,
            kind: 'i',
        });
        if let Err(e) = write_atomically(&self.manifest_path(), manifest.render().as_bytes()) {
            // The manifest on disk still names the current file: go on
            // writing to it.
            manifest.files.pop();
            let _ = std::fs::remove_file(self.dir.join(&incr));
            return Err(e.into());
        }
        // The old file is complete: without its preallocated zeros it is
        // plain Redis AOF (cut only now: had the switch failed, it would
        // have stayed the live file, preallocated).
        if let Some(old) = sink.replace(file) {
            if let Err(e) = old.trim() {
                tracing::warn!("cannot cut the preallocated end of the previous AOF file: {e}");
            }
        }
        // A new file replays from database 0 (and starts with its own
        // timestamp annotation, if they are on).
        inner.db = -1;
        inner.annotated_at = 0;
        let base_seq = manifest.next_seq('b').max(incr_seq);
        let base_name = self.base_name(base_seq, format.rdb.is_some());
        let file = BufWriter::new(File::create(self.dir.join(format!("{base_name}.tmp")))?);
        let base = match format.rdb {
            Some((compress, checksum)) => {
                let mut w = super::rdb::Writer::new(file, compress, checksum, true)?;
                for code in &format.functions {
                    w.function_library(code)?;
                }
                Base::Rdb(Box::new(w))
            }
            None => {
                let mut file = file;
                let mut buf = Vec::new();
                for code in &format.functions {
                    encode::command(
                        &mut buf,
                        &[b"FUNCTION".as_slice(), b"LOAD", b"REPLACE", code],
                    );
                }
                file.write_all(&buf)?;
                Base::Commands(file)
            }
        };
        inner.rewrite = Some(Rewrite {
            done: [false; SHARDS],
            base,
            base_name,
            base_seq,
            started: Instant::now(),
            failed: None,
        });
        self.rewriting.store(true, Relaxed);
        drop(manifest);
        let _ = all_shards;
        Ok(())
    }

    /// Writes the shards no command has written yet, then installs the new
    /// base and drops the files it replaces.
    pub fn finish_rewrite(&self, keyspace: &Keyspace) -> Result<(), AofError> {
        for shard in 0..SHARDS {
            let mut view = keyspace.lock_shard(shard);
            let mut inner = self.inner.lock();
            let Some(rw) = inner.rewrite.as_mut() else {
                return Ok(());
            };
            if let Some(e) = rw.failed.take() {
                return Err(e.into());
            }
            if !rw.done[shard] {
                rw.base.write_shard(&mut view, shard)?;
                rw.done[shard] = true;
            }
        }
        let rw = {
            let mut inner = self.inner.lock();
            self.rewriting.store(false, Relaxed);
            inner.rewrite.take()
        };
        let Some(rw) = rw else { return Ok(()) };
        let file = rw.base.finish()?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(
            self.dir.join(format!("{}.tmp", rw.base_name)),
            self.dir.join(&rw.base_name),
        )?;
        let mut manifest = self.manifest.lock();
        let current_incr = manifest.incrs().last().cloned();
        let old: Vec<ManifestFile> = manifest
            .files
            .iter()
            .filter(|f| Some(*f) != current_incr.as_ref())
            .cloned()
            .collect();
        manifest.files = vec![ManifestFile {
            name: rw.base_name.clone(),
            seq: rw.base_seq,
            kind: 'b',
        }];
        manifest.files.extend(current_incr);
        write_atomically(&self.manifest_path(), manifest.render().as_bytes())?;
        for f in old {
            let _ = std::fs::remove_file(self.dir.join(&f.name));
        }
        self.rewrites.fetch_add(1, Relaxed);
        self.last_rewrite_secs
            .store(rw.started.elapsed().as_secs(), Relaxed);
        Ok(())
    }

    pub fn abort_rewrite(&self) {
        let mut inner = self.inner.lock();
        self.rewriting.store(false, Relaxed);
        if let Some(rw) = inner.rewrite.take() {
            let _ = std::fs::remove_file(self.dir.join(format!("{}.tmp", rw.base_name)));
        }
    }

    /// Bytes of the files the manifest lists.
    pub fn size_on_disk(&self) -> u64 {
        // The live file's preallocated zeros are not part of the log.
        // (The sink is locked before the manifest, as in `start_rewrite`.)
        let live = self.sink.lock().as_ref().map(LogFile::end);
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

/// Writes every key of `shard` (held by `view`) as commands that rebuild
/// it: SELECT, then per key the commands of its type and a PEXPIREAT.
fn write_shard(out: &mut impl Write, view: &mut View, shard: usize) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut result = Ok(());
    let mut current_db = usize::MAX;
    view.for_each_in_shard(shard, |db, key, entry| {
        if result.is_err() {
            return;
        }
        if db != current_db {
            let dbs = db.to_string();
            encode::command(&mut buf, &[b"SELECT".as_slice(), dbs.as_bytes()]);
            current_db = db;
        }
        rebuild_commands(&mut buf, key, entry);
        if buf.len() > 64 * 1024 {
            result = out.write_all(&buf);
            buf.clear();
        }
    });
    result?;
    out.write_all(&buf)
}

/// Appends the commands that recreate `key` with `entry`'s value and TTL.
pub fn rebuild_commands(buf: &mut Vec<u8>, key: &[u8], entry: &Entry) {
    match &entry.value {
        Value::Str(s) => s.with_bytes(|v| encode::command(buf, &[b"SET".as_slice(), key, v])),
        other => crate::persistence::rebuild::collection(buf, key, other),
    }
    if entry.expire_at != 0 {
        let at = entry.expire_at.to_string();
        encode::command(buf, &[b"PEXPIREAT".as_slice(), key, at.as_bytes()]);
    }
}

/// Reads a log file into memory; AOF files are replayed as a whole.
pub fn read_file(path: &Path) -> Result<Vec<u8>, AofError> {
    let mut data = Vec::new();
    File::open(path)?.read_to_end(&mut data)?;
    Ok(data)
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
