//! The disk tier: values moved out of memory when the server is over
//! `maxmemory` with `tiering-dir` set, and read back when a command needs
//! them (docs/tiering.md is the design; "Tiering" in docs/ARCHITECTURE.md
//! says what is built).
//!
//! - [`log`]: the value log, segment files of checksummed records.
//! - [`stub`]: what stays in the key's place while its value is on disk.
//! - [`spill`]: moving eviction's candidates to disk in batches.
//! - [`load`]: reading values back for a parked request, off the worker.
//! - [`admission`]: whether a value read back stays in memory.
//! - [`read_many`]: many records at once, for a snapshot being written.
//!
//! One tier per process, opened once (`tiering-dir` set at start or by
//! CONFIG SET from empty): a stub's drop must find the log it points
//! into without a server at hand.

pub mod admission;
pub mod clean;
pub mod compact;
pub mod load;
pub mod log;
pub mod read_many;
pub mod ring;
pub mod spill;
pub mod stub;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;

use crate::server::Server;
use crate::storage::value::Value;
use log::{Loc, ValueLog};
use stub::Stub;

static TIER: OnceLock<Tier> = OnceLock::new();

/// The requests waiting on one read; each is sent the read's ticket if
/// its value was not admitted (`admission`).
type Waiters = Vec<tokio::sync::oneshot::Sender<Option<Arc<admission::Ticket>>>>;

/// The tier's counters, for INFO's Tiering section and Prometheus.
#[derive(Default)]
pub struct Stats {
    /// Stubs alive: keys whose value is on disk, and clean copies.
    pub spilled_keys: AtomicI64,
    /// Records kept for values read back (`clean`), and spills they
    /// saved (a value unchanged since it was read went back without a
    /// write).
    pub clean_copies: AtomicI64,
    pub reused_copies: AtomicU64,
    /// Values written to disk, and their record bytes.
    pub spills: AtomicU64,
    pub spilled_bytes: AtomicU64,
    /// Values read back for a parked request, and their record bytes.
    pub loads: AtomicU64,
    pub loaded_bytes: AtomicU64,
    /// Values read back and not admitted: put on probation, first to go
    /// back to disk (`admission`).
    pub probation: AtomicU64,
    /// Requests that waited on a read another request had started.
    pub coalesced: AtomicU64,
    /// Values read back on the worker itself (a lookup the request's key
    /// specs did not announce: see `read_back`).
    pub inline_loads: AtomicU64,
    /// Requests parked for a read.
    pub parked: AtomicU64,
    /// Records a snapshot (SAVE, BGSAVE, a replica's full sync) read
    /// together (`read_pinned`).
    pub snapshot_reads: AtomicU64,
    /// Requests further down a pipeline whose reads started before their
    /// turn (`load::prefetch`).
    pub prefetched: AtomicU64,
    /// Segments compaction emptied, and the record bytes it moved.
    pub compacted_segments: AtomicU64,
    pub compacted_bytes: AtomicU64,
}

pub struct Tier {
    dir: PathBuf,
    log: Mutex<ValueLog>,
    /// `tiering-max-disk`: bytes of live records the tier may hold (0: no
    /// limit); past it, eviction deletes as without a tier.
    pub max_disk: AtomicU64,
    pub stats: Stats,
    /// For loads: the keyspace to install a value in, the encoding limits
    /// to decode it with.
    server: Weak<Server>,
    /// Clean copies of values read back (`clean`).
    copies: Mutex<clean::Copies>,
    /// Whether parked reads go through the workers' io_urings (`ring`);
    /// where io_uring is not available they run on the runtime's blocking
    /// pool.
    uring: bool,
    /// Reads in flight, by location, with the requests waiting on each.
    in_flight: Mutex<ahash::HashMap<(u32, u64), Waiters>>,
    /// Values read back and not admitted, first to be spilled again, and
    /// the eviction score a value read back must not exceed to be
    /// admitted (`admission`).
    probation: Mutex<admission::Queue>,
    admit_score: AtomicU64,
    /// Bytes of values on probation still held by their requests.
    probation_held: AtomicU64,
}

/// The tier, once `tiering-dir` has opened it.
#[inline]
pub fn active() -> Option<&'static Tier> {
    TIER.get()
}

/// Whether any value is on disk: the one check the request path makes
/// while nothing is.
#[inline]
pub fn any_spilled() -> bool {
    TIER.get().is_some_and(|t| t.spilled_keys() > 0)
}

/// Why the tier could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("tiering-dir is already {0} (it is set once per run)")]
    AlreadyOpen(String),
    #[error("can't open the value log in {0}: {1}")]
    Io(String, io::Error),
}

/// Opens the tier in `dir` for `server`. A second call with the same
/// directory is a no-op; another directory is refused.
pub fn open(server: &Arc<Server>, dir: &Path, max_disk: u64) -> Result<&'static Tier, OpenError> {
    if let Some(t) = TIER.get() {
        if t.dir == dir {
            t.max_disk.store(max_disk, Relaxed);
            return Ok(t);
        }
        return Err(OpenError::AlreadyOpen(t.dir.display().to_string()));
    }
    let log = ValueLog::open(dir).map_err(|e| OpenError::Io(dir.display().to_string(), e))?;
    let tier = Tier {
        dir: dir.to_path_buf(),
        log: Mutex::new(log),
        max_disk: AtomicU64::new(max_disk),
        stats: Stats::default(),
        server: Arc::downgrade(server),
        in_flight: Mutex::new(Default::default()),
        copies: Mutex::new(Default::default()),
        probation: Mutex::new(Default::default()),
        admit_score: AtomicU64::new(admission::ADMIT_ALL),
        probation_held: AtomicU64::new(0),
        uring: match ring::available() {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("Tiering: io_uring unavailable ({e}); reads use a thread pool");
                false
            }
        },
    };
    // (Two opens racing: the loser's log directory is the same one.)
    if TIER.set(tier).is_ok() {
        if let Some(t) = TIER.get() {
            compact::start(Arc::downgrade(server), t);
        }
    }
    TIER.get()
        .ok_or_else(|| OpenError::AlreadyOpen(dir.display().to_string()))
}

impl Tier {
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Keys whose value is on disk now.
    pub fn spilled_keys(&self) -> i64 {
        self.stats.spilled_keys.load(Relaxed) - self.stats.clean_copies.load(Relaxed)
    }

    /// Whether the tier may take `more` bytes of records.
    pub fn has_room(&self, more: u64) -> bool {
        let max = self.max_disk.load(Relaxed);
        max == 0 || self.log.lock().live_bytes() + more <= max
    }

    /// (bytes in the log's files, bytes of live records, segments).
    pub fn disk_usage(&self) -> (u64, u64, usize) {
        let log = self.log.lock();
        (log.disk_bytes(), log.live_bytes(), log.segment_count())
    }

    pub(super) fn append(&self, batch: &[u8], lens: &[u32]) -> io::Result<Vec<Loc>> {
        self.log.lock().append(batch, lens)
    }

    /// The record at `loc`'s value (its key is not checked: a renamed
    /// key keeps its stub).
    fn read(&self, loc: Loc) -> Result<Vec<u8>, log::ReadError> {
        let file = self
            .log
            .lock()
            .reads(loc.segment)
            .ok_or(log::ReadError::NoSegment)?;
        log::read_record_value(&file, loc)
    }

    /// The value a payload read from disk holds, in the encoding it had
    /// when it was spilled (`encoding`, the stub's): OBJECT ENCODING and
    /// the growth rules answer as if it had never left memory. (A value
    /// read from an RDB payload takes the compact encoding its size
    /// allows; one that had grown past it and shrunk back would not.)
    fn decode(&self, payload: &[u8], encoding: &str) -> Option<Value> {
        let mut limits = match self.server.upgrade() {
            Some(s) => s.encoding_limits(),
            None => Default::default(),
        };
        match encoding {
            "hashtable" => {
                limits.hash_max_listpack_entries = 0;
                limits.set_max_intset_entries = 0;
            }
            "skiplist" => limits.zset_max_listpack_entries = 0,
            // A listpack set stays one whatever the limits are now.
            "listpack" => limits.set_max_listpack_entries = usize::MAX,
            _ => {}
        }
        let mut value = crate::persistence::rdb::restore_trusted_payload(payload, &limits).ok()?;
        if let Value::Str(s) = &mut value {
            if s.encoding() != encoding {
                match encoding {
                    "raw" => {
                        s.make_raw();
                    }
                    "embstr" => *s = crate::storage::value::Str::bytes(&s.to_vec()),
                    _ => {}
                }
            }
        }
        Some(value)
    }
}

/// Frees a record whose stub was dropped.
pub(crate) fn release(loc: Loc) {
    let Some(t) = TIER.get() else { return };
    t.stats.spilled_keys.fetch_sub(1, Relaxed);
    release_unowned(loc);
}

/// Frees a record no stub points at.
pub(super) fn release_unowned(loc: Loc) {
    let Some(t) = TIER.get() else { return };
    if let Err(e) = t.log.lock().free(loc) {
        tracing::warn!("Tiering: removing an empty segment: {e}");
    }
}

/// The value `stub` stands for, read and decoded on this thread. For the
/// lookups no request announced (a key a script names without declaring
/// it, a transaction's commands, a copy of a spilled value): the request
/// path parks instead (`load`).
///
/// A record that cannot be read back is a value lost from memory and
/// from disk: the process stops, as Redis does when its AOF cannot be
/// written, and the AOF or RDB file (the durable record) brings the
/// dataset back at restart.
pub fn read_back(stub: &Stub) -> Value {
    let loc = stub.loc();
    let result = match TIER.get() {
        Some(t) => {
            t.stats.inline_loads.fetch_add(1, Relaxed);
            t.read(loc).map_err(|e| format!("{e:?}")).and_then(|p| {
                t.decode(&p, stub.encoding())
                    .ok_or_else(|| "undecodable payload".to_string())
            })
        }
        None => Err("no tier is open".to_string()),
    };
    match result {
        Ok(v) => v,
        Err(e) => fatal_read(loc, &e),
    }
}

/// The DUMP payload `stub`'s record holds, read on this thread (an image
/// being written copies it as it is). See [`read_back`] for a failure.
pub fn read_payload(stub: &Stub) -> Vec<u8> {
    let loc = stub.loc();
    let read = match TIER.get() {
        Some(t) => {
            t.stats.inline_loads.fetch_add(1, Relaxed);
            t.read(loc).map_err(|e| format!("{e:?}"))
        }
        None => Err("no tier is open".to_string()),
    };
    match read {
        Ok(p) => p,
        Err(e) => fatal_read(loc, &e),
    }
}

/// A spilled value's record held for a reader that runs later, when the
/// key may have changed or gone (a snapshot's copy of a slot): the
/// segment's file stays open, and records are never rewritten in place,
/// so the bytes stay readable even once the stub has let the record go.
pub struct Pinned {
    file: log::ReadFile,
    loc: Loc,
    /// The stub's encoding, to decode the payload as it was in memory.
    encoding: &'static str,
}

impl Pinned {
    /// Bytes of the record on disk.
    pub fn disk_len(&self) -> usize {
        self.loc.len as usize
    }
}

/// Holds `stub`'s record for a later read (see [`Pinned`]). A stub whose
/// segment is gone is a value lost: see [`read_back`].
pub fn pin(stub: &Stub) -> Pinned {
    let loc = stub.loc();
    let file = TIER.get().and_then(|t| t.log.lock().reads(loc.segment));
    match file {
        Some(file) => Pinned {
            file,
            loc,
            encoding: stub.encoding(),
        },
        None => fatal_read(loc, "no segment"),
    }
}

/// The value a pinned record's payload (read by [`read_pinned`]) holds.
/// See [`read_back`] for a failure.
pub fn decode_pinned(record: &Pinned, payload: &[u8]) -> Value {
    let value = TIER.get().and_then(|t| t.decode(payload, record.encoding));
    match value {
        Some(v) => v,
        None => fatal_read(record.loc, "undecodable payload"),
    }
}

/// Starts reading the `records` together (`read_many`); their DUMP
/// payloads come from [`PinnedReads::payloads`].
pub fn read_pinned(records: &[&Pinned]) -> PinnedReads {
    if let Some(t) = TIER.get() {
        t.stats
            .snapshot_reads
            .fetch_add(records.len() as u64, Relaxed);
    }
    PinnedReads {
        reading: read_many::start(records.iter().map(|p| (p.file.clone(), p.loc)).collect()),
        locs: records.iter().map(|p| p.loc).collect(),
    }
}

/// Reads of pinned records in flight.
pub struct PinnedReads {
    reading: read_many::Reading,
    locs: Vec<Loc>,
}

impl PinnedReads {
    /// The payloads, in the order the records were given (waits for the
    /// reads). See [`read_back`] for a failure.
    pub fn payloads(self) -> Vec<Vec<u8>> {
        let locs = self.locs;
        self.reading
            .finish()
            .into_iter()
            .zip(locs)
            .map(|(r, loc)| {
                match r
                    .map_err(log::ReadError::Io)
                    .and_then(|record| log::record_value(&record))
                {
                    Ok(payload) => payload,
                    Err(e) => fatal_read(loc, &format!("{e:?}")),
                }
            })
            .collect()
    }
}

/// Replaces a spilled value by the value itself (see [`read_back`]).
#[cold]
pub fn load_in_place(value: &mut Value) {
    if let Value::Spilled(stub) = value {
        *value = read_back(stub);
    }
}

#[cold]
pub(super) fn fatal_read(loc: Loc, e: &str) -> ! {
    tracing::error!(
        "Tiering: can't read back the value at segment {} offset {} ({e}); exiting: \
         the AOF or RDB file holds the dataset",
        loc.segment,
        loc.offset
    );
    std::process::exit(1)
}

/// Share of the values requests needed that were in memory when they
/// first looked (`ShardStats::values_in_memory`), 0 before any.
pub fn hit_rate(k: &crate::storage::keyspace::ShardStats) -> f64 {
    let needed = k.values_in_memory + k.values_on_disk;
    if needed == 0 {
        0.0
    } else {
        k.values_in_memory as f64 / needed as f64
    }
}

/// The tier's section of INFO; `k`: the shards' counters.
pub fn info(o: &mut String, k: &crate::storage::keyspace::ShardStats) {
    use std::fmt::Write;
    let Some(t) = TIER.get() else {
        let _ = write!(o, "tiering_enabled:0\r\n");
        return;
    };
    let (disk, live, segments) = t.disk_usage();
    let s = &t.stats;
    let loads = s.loads.load(Relaxed) + s.inline_loads.load(Relaxed);
    let _ = write!(
        o,
        "tiering_enabled:1\r\ntiering_reads:{}\r\ntiering_spilled_keys:{}\r\ntiering_disk_bytes:{disk}\r\n\
         tiering_live_bytes:{live}\r\ntiering_segments:{segments}\r\ntiering_max_disk:{}\r\n\
         tiering_spills:{}\r\ntiering_spilled_bytes:{}\r\ntiering_loads:{loads}\r\n\
         tiering_loaded_bytes:{}\r\ntiering_probation_loads:{}\r\n\
         tiering_inline_loads:{}\r\ntiering_coalesced_loads:{}\r\n\
         tiering_parked_requests:{}\r\ntiering_prefetched_requests:{}\r\n\
         tiering_snapshot_reads:{}\r\n\
         tiering_compacted_segments:{}\r\n\
         tiering_compacted_bytes:{}\r\ntiering_clean_copies:{}\r\ntiering_reused_copies:{}\r\n\
         tiering_values_in_memory:{}\r\ntiering_values_on_disk:{}\r\ntiering_hit_rate:{:.4}\r\n",
        if t.uring { "io_uring" } else { "threads" },
        t.spilled_keys(),
        t.max_disk.load(Relaxed),
        s.spills.load(Relaxed),
        s.spilled_bytes.load(Relaxed),
        s.loaded_bytes.load(Relaxed),
        s.probation.load(Relaxed),
        s.inline_loads.load(Relaxed),
        s.coalesced.load(Relaxed),
        s.parked.load(Relaxed),
        s.prefetched.load(Relaxed),
        s.snapshot_reads.load(Relaxed),
        s.compacted_segments.load(Relaxed),
        s.compacted_bytes.load(Relaxed),
        s.clean_copies.load(Relaxed),
        s.reused_copies.load(Relaxed),
        k.values_in_memory,
        k.values_on_disk,
        hit_rate(k),
    );
}
