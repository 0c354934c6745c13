//! RDB snapshots without fork(): SAVE, BGSAVE, the `save` schedule, DEBUG
//! RELOAD, SHUTDOWN SAVE, and loading `dump.rdb` at start.
//!
//! A snapshot is a point-in-time image without a copy of the dataset. It
//! starts while every shard is held (no command is half-way through), and
//! from then on a command about to run in a shard the snapshot has not
//! written yet writes that shard first ([`Snapshots::before_execute`],
//! called where the log's rewrite hooks in). The saving thread writes the
//! remaining shards one at a time, holding only that shard. So the image
//! is the dataset as of the start, memory grows by one shard's write
//! buffer at most (fork's copy-on-write can double it), and clients keep
//! being served; a command that touches an unwritten shard pays for
//! writing that shard once.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use parking_lot::Mutex;

use super::rdb;
use crate::server::Server;
use crate::storage::keyspace::{View, SHARDS};

/// One snapshot being written.
struct Job {
    done: [bool; SHARDS],
    out: rdb::Writer<BufWriter<File>>,
    tmp: PathBuf,
    target: PathBuf,
    started: Instant,
    /// `dirty` when the image was taken: what a successful save clears.
    dirty_at_start: u64,
    error: Option<std::io::Error>,
}

/// Snapshot state and the figures INFO persistence reports.
pub struct Snapshots {
    active: AtomicBool,
    job: Mutex<Option<Job>>,
    /// Serialises whole saves (SAVE waits for nothing: it fails while a
    /// BGSAVE runs, as in Redis).
    pub saves: AtomicU64,
    pub last_ok: AtomicBool,
    pub last_secs: AtomicI64,
    started_unix: AtomicU64,
    /// Keys written by the current save.
    pub keys_processed: AtomicU64,
    pub keys_total: AtomicU64,
    /// Last load: keys loaded, and keys skipped because they had expired.
    pub loaded_keys: AtomicU64,
    pub loaded_expired: AtomicU64,
    /// Unix seconds of the last save attempt (success or not), for the
    /// retry delay after a failed background save.
    pub last_attempt: AtomicU64,
    /// BGSAVE SCHEDULE while a save ran: start one when it ends.
    pub scheduled: AtomicBool,
}

impl Default for Snapshots {
    fn default() -> Snapshots {
        Snapshots {
            active: AtomicBool::new(false),
            job: Mutex::new(None),
            saves: AtomicU64::new(0),
            last_ok: AtomicBool::new(true),
            last_secs: AtomicI64::new(-1),
            started_unix: AtomicU64::new(0),
            keys_processed: AtomicU64::new(0),
            keys_total: AtomicU64::new(0),
            loaded_keys: AtomicU64::new(0),
            loaded_expired: AtomicU64::new(0),
            last_attempt: AtomicU64::new(0),
            scheduled: AtomicBool::new(false),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("Background save already in progress")]
    InProgress,
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Where `dbfilename` goes: `dir` (empty: the working directory).
pub fn rdb_path(server: &Server) -> PathBuf {
    let c = server.config.read();
    Path::new(c.get("dir")).join(c.get("dbfilename"))
}

impl Snapshots {
    #[inline]
    pub fn in_progress(&self) -> bool {
        self.active.load(Relaxed)
    }

    /// Seconds the current save has been running, or -1.
    pub fn current_secs(&self) -> i64 {
        if !self.in_progress() {
            return -1;
        }
        let now = crate::command::unix_ms() / 1000;
        now.saturating_sub(self.started_unix.load(Relaxed)) as i64
    }

    /// Writes the shards of `view` the running snapshot still needs, before
    /// a command changes them. One load when no snapshot runs.
    #[inline]
    pub fn before_execute(&self, view: &mut View) {
        if !self.active.load(Relaxed) {
            return;
        }
        let mut job = self.job.lock();
        let Some(job) = job.as_mut() else {
            return;
        };
        for shard in view.held_shards() {
            if !job.done[shard] {
                write_shard(job, view, shard, &self.keys_processed);
            }
        }
    }

    /// Takes the image: opens the temporary file, writes the header and the
    /// function libraries, and marks every shard as still to write.
    pub fn start(&self, server: &Server) -> Result<(), SnapshotError> {
        let target = rdb_path(server);
        let (compress, checksum) = {
            let c = server.config.read();
            (
                c.get("rdbcompression") == "yes",
                c.get("rdbchecksum") == "yes",
            )
        };
        let dir = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        // Everything held: no command is half-way through while the
        // snapshot's starting point is fixed.
        let mut all = server.keyspace.lock_all();
        let mut slot = self.job.lock();
        if slot.is_some() {
            return Err(SnapshotError::InProgress);
        }
        let tmp = dir.join(format!("temp-{}.rdb", std::process::id()));
        let file = File::create(&tmp)?;
        let mut out = rdb::Writer::new(BufWriter::new(file), compress, checksum, false)?;
        for code in crate::command::scripting::library_codes(server) {
            out.function_library(&code)?;
        }
        let now = crate::command::unix_ms() / 1000;
        self.started_unix.store(now, Relaxed);
        self.last_attempt.store(now, Relaxed);
        self.keys_processed.store(0, Relaxed);
        self.keys_total.store(all.key_count() as u64, Relaxed);
        *slot = Some(Job {
            done: [false; SHARDS],
            out,
            tmp,
            target,
            started: Instant::now(),
            dirty_at_start: server.dirty.load(Relaxed),
            error: None,
        });
        self.active.store(true, Relaxed);
        drop(slot);
        drop(all);
        Ok(())
    }

    /// Writes the shards no command has written, then installs the file
    /// (fsync, rename over `dbfilename`, fsync of the directory).
    pub fn finish(&self, server: &Server) -> Result<(), SnapshotError> {
        for shard in 0..SHARDS {
            let mut view = server.keyspace.lock_shard(shard);
            let mut job = self.job.lock();
            let Some(job) = job.as_mut() else {
                return Ok(());
            };
            if !job.done[shard] {
                write_shard(job, &mut view, shard, &self.keys_processed);
            }
        }
        let job = {
            let mut slot = self.job.lock();
            self.active.store(false, Relaxed);
            slot.take()
        };
        let Some(job) = job else { return Ok(()) };
        let result = install(job.out, job.error, &job.tmp, &job.target);
        let secs = job.started.elapsed().as_secs() as i64;
        self.last_secs.store(secs, Relaxed);
        match result {
            Ok(()) => {
                let _ = server.dirty.fetch_update(Relaxed, Relaxed, |d| {
                    Some(d.saturating_sub(job.dirty_at_start))
                });
                server
                    .lastsave
                    .store(crate::command::unix_ms() / 1000, Relaxed);
                self.saves.fetch_add(1, Relaxed);
                self.last_ok.store(true, Relaxed);
                tracing::info!("DB saved on disk");
                Ok(())
            }
            Err(e) => {
                let _ = std::fs::remove_file(&job.tmp);
                self.last_ok.store(false, Relaxed);
                tracing::error!("Failed saving the DB: {e}");
                Err(e.into())
            }
        }
    }
}

/// Writes every key of `shard` (held by `view`) into the job's image.
fn write_shard(job: &mut Job, view: &mut View, shard: usize, processed: &AtomicU64) {
    job.done[shard] = true;
    if job.error.is_some() {
        return;
    }
    let out = &mut job.out;
    let mut current_db = usize::MAX;
    let mut result = Ok(());
    let mut keys = 0;
    view.for_each_in_shard(shard, |db, key, entry| {
        if result.is_err() {
            return;
        }
        if db != current_db {
            result = out.select_db(db);
            current_db = db;
        }
        if result.is_ok() {
            result = out.entry(key, entry);
            keys += 1;
        }
    });
    processed.fetch_add(keys, Relaxed);
    if let Err(e) = result {
        job.error = Some(e);
    }
}

fn install(
    out: rdb::Writer<BufWriter<File>>,
    error: Option<std::io::Error>,
    tmp: &Path,
    target: &Path,
) -> std::io::Result<()> {
    if let Some(e) = error {
        return Err(e);
    }
    let mut buf = out.finish()?;
    buf.flush()?;
    let file = buf.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(tmp, target)?;
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    File::open(dir)?.sync_all()?;
    Ok(())
}

/// Loads an RDB image into the (empty) keyspace: keys already expired are
/// skipped, as a primary does; function libraries are installed. Returns
/// the number of keys loaded.
pub fn load_image(server: &Server, data: &[u8], what: &Path) -> Result<u64, String> {
    let mut view = server.keyspace.lock_all();
    load_into(server, &mut view, data, what).map(|(keys, _)| keys)
}

/// [`load_image`] into shards the caller holds (all of them); returns the
/// keys loaded and the bytes the image took (a log may go on after it).
pub fn load_into(
    server: &Server,
    view: &mut View,
    data: &[u8],
    what: &Path,
) -> Result<(u64, usize), String> {
    let now = crate::command::unix_ms();
    let databases = server.keyspace.databases();
    let (mut loaded, mut expired) = (0u64, 0u64);
    let mut bad_db = None;
    let mut bad_fn = None;
    let limits = server.encoding_limits();
    let result = rdb::load(
        data,
        &limits,
        |db, key, value, expire_at| {
            if db >= databases {
                bad_db = Some(db);
                return;
            }
            if expire_at != 0 && expire_at <= now {
                expired += 1;
                return;
            }
            view.set(db, &key, value, expire_at, now);
            loaded += 1;
        },
        |code| {
            if let Err(e) = crate::command::scripting::install_library(server, &code, true) {
                bad_fn = Some(e.0);
            }
        },
    );
    let consumed = match result {
        Ok(l) => l.consumed,
        Err(e) => {
            return Err(format!(
                "Short read or OOM loading DB. Unrecoverable error, aborting now. ({} in {})",
                e,
                what.display()
            ))
        }
    };
    if let Some(db) = bad_db {
        return Err(format!(
            "FATAL: Data file was created with a Redis server configured to handle more than {databases} databases. Exiting (database {db} in {})",
            what.display()
        ));
    }
    if let Some(e) = bad_fn {
        return Err(format!(
            "Failed loading a function library from {}: {e}",
            what.display()
        ));
    }
    server.snapshots.loaded_keys.store(loaded, Relaxed);
    server.snapshots.loaded_expired.store(expired, Relaxed);
    Ok((loaded, consumed))
}

/// Whether a `save <seconds> <changes>` point is due: enough changes and
/// enough time since the last save; after a failed background save, not
/// before 5 seconds have passed (Redis's CONFIG_BGSAVE_RETRY_DELAY).
pub fn save_point_due(server: &Server, now_secs: u64) -> bool {
    let dirty = server.dirty.load(Relaxed);
    if dirty == 0 {
        return false;
    }
    let since_save = now_secs.saturating_sub(server.lastsave.load(Relaxed));
    let snaps = &server.snapshots;
    if !snaps.last_ok.load(Relaxed)
        && now_secs.saturating_sub(snaps.last_attempt.load(Relaxed)) <= 5
    {
        return false;
    }
    let c = server.config.read();
    let points: Vec<u64> = c
        .get("save")
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect();
    points
        .chunks_exact(2)
        .any(|p| dirty >= p[1] && since_save >= p[0])
}
