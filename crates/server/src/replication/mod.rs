//! Replication, as Redis 7.0 does it (PSYNC2), in both roles.
//!
//! - The stream: every write leaves the propagation path
//!   (`command::propagate`) as records; with a backlog present they are
//!   also encoded into it ([`Replication::feed_records`]), under the
//!   writer's shard locks, so the stream's order is a valid serial order.
//!   A replica passes on what its primary sent, byte for byte
//!   ([`Replication::feed_raw`]): its sub-replicas see the same stream and
//!   the same offsets (Redis's replicationFeedStreamFromMasterStream).
//! - As a primary (`master.rs`): a replica's connection, after PSYNC/SYNC,
//!   is handed to [`master::serve`], which answers `+CONTINUE` from the
//!   backlog or `+FULLRESYNC` with a snapshot, then sends the stream from
//!   the replica's position and reads its `REPLCONF ACK`s.
//! - As a replica (`replica.rs`): a link thread connects to the primary,
//!   runs the handshake, loads the image, applies the stream as the
//!   primary's client and acknowledges it.
//!
//! Ids and offsets follow Redis: `master_replid` names a history,
//! `master_repl_offset` counts its bytes; a promotion keeps the old id as
//! `master_replid2` up to `second_repl_offset`, so the other replicas of
//! the old primary continue with `+CONTINUE`.

pub mod backlog;
pub mod fack;
pub mod failover;
pub mod info;
pub mod master;
pub mod promise;
pub mod replica;

use std::sync::atomic::{
    AtomicBool, AtomicU16, AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed,
};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::client::ClientInfo;
use crate::command::propagate::Record;
use backlog::Backlog;

/// A replica's state as its primary sees it (INFO's `state=`).
pub const WAIT_BGSAVE: u8 = 0;
pub const SEND_BULK: u8 = 1;
pub const ONLINE: u8 = 2;

/// One replica connected to this server.
pub struct ReplicaLink {
    pub info: Arc<ClientInfo>,
    /// The replica's address (without port) and its announced listening
    /// port (REPLCONF listening-port) and ip (REPLCONF ip-address).
    pub ip: String,
    pub port: AtomicU16,
    pub state: AtomicU8,
    /// The next stream position to send: pins the backlog.
    pub sent: AtomicU64,
    /// The last offset the replica acknowledged, and when (unix ms).
    pub ack: AtomicU64,
    /// The last offset the replica said its AOF holds fsynced (`FACK`).
    pub aof_ack: AtomicU64,
    pub ack_ms: AtomicU64,
    /// The replica understands `+CONTINUE <id>` (capa psync2).
    pub psync2: bool,
    /// Its cluster node id (`REPLCONF node-id`, cluster mode).
    pub node_id: Option<String>,
    /// The latest instant (`promise::now_ns`) it is known to have received
    /// stream bytes fed after (0: none): its promise not to bid lasts a
    /// period past it (see `promise`).
    pub heard_after_ns: AtomicU64,
}

impl ReplicaLink {
    pub fn state_name(&self) -> &'static str {
        match self.state.load(Relaxed) {
            WAIT_BGSAVE => "wait_bgsave",
            SEND_BULK => "send_bulk",
            _ => "online",
        }
    }
}

/// The history ids.
#[derive(Clone)]
pub struct Ids {
    pub replid: String,
    pub replid2: String,
    /// `second_repl_offset` (-1: none).
    pub second_offset: i64,
}

/// This server's primary, while it is a replica.
#[derive(Clone)]
pub struct Primary {
    pub host: String,
    pub port: u16,
}

/// The replica side's link state (INFO replication as a replica).
pub const LINK_DOWN: u8 = 0;
pub const LINK_CONNECTING: u8 = 1;
pub const LINK_SYNC: u8 = 2;
pub const LINK_UP: u8 = 3;

pub struct Replication {
    stream: Mutex<Backlog>,
    /// The backlog exists: records are wanted (one load on the write path).
    active: AtomicBool,
    /// `master_repl_offset`, readable without the lock.
    offset: AtomicU64,
    /// The backlog's memory and `repl-backlog-size`, readable without the
    /// lock (eviction reads them before every command).
    buffer_mem: AtomicUsize,
    backlog_size: AtomicUsize,
    /// New bytes in the stream (the replicas' feeders wait on it).
    pub fed: tokio::sync::Notify,
    /// A replica acknowledged (WAIT waits on it).
    pub acked: tokio::sync::Notify,
    ids: Mutex<Ids>,
    pub replicas: RwLock<Vec<Arc<ReplicaLink>>>,
    /// Set while this server replicates from another.
    primary: Mutex<Option<Primary>>,
    /// `primary` is set (one load on the write path): the stream is then
    /// the primary's bytes only.
    follows: AtomicBool,
    /// Bumped by every REPLICAOF: a link thread of an older generation
    /// stops.
    pub link_gen: AtomicU64,
    pub link_state: AtomicU8,
    /// Unix ms of the last byte from the primary.
    pub link_last_io_ms: AtomicU64,
    /// Unix ms when the link went down (master_link_down_since_seconds).
    pub link_down_since_ms: AtomicU64,
    /// A full sync being received: its size (-1: EOF-marked) and bytes so far.
    pub sync_total: std::sync::atomic::AtomicI64,
    pub sync_read: AtomicU64,
    pub sync_full: AtomicU64,
    pub sync_partial_ok: AtomicU64,
    pub sync_partial_err: AtomicU64,
    /// Replicas acknowledged within `min-replicas-max-lag` (the cron
    /// counts them), and the parameters (0: off).
    pub good_replicas: AtomicUsize,
    pub min_replicas: AtomicUsize,
    pub min_replicas_max_lag: AtomicU64,
    /// FAILOVER's state.
    pub failover: failover::Failover,
    /// `replica-read-only`.
    pub read_only: AtomicBool,
    /// `replica-serve-stale-data`.
    pub serve_stale: AtomicBool,
    /// The snapshot for a full sync being prepared (see `master`).
    pub(crate) full_sync: Mutex<Option<Arc<master::SyncJob>>>,
    /// Bytes sent to and received from replication peers.
    pub net_out: AtomicU64,
    pub net_in: AtomicU64,
    /// `client-output-buffer-limit replica` (bytes, 0: none; seconds).
    hard_limit: AtomicU64,
    soft_limit: AtomicU64,
    soft_secs: AtomicU64,
    /// `repl-backlog-ttl` (seconds), and since when (unix ms) this
    /// primary has had no replica (0: it has some).
    pub backlog_ttl: AtomicU64,
    alone_since_ms: AtomicU64,
    /// Held by a replica's link while it applies one command of the
    /// primary's stream and passes its bytes on, and by a snapshot's
    /// start (before the shards): the image and its offset then agree.
    pub apply_lock: Mutex<()>,
    /// The database the primary's stream is in (a replica's), for the
    /// image's `repl-stream-db`; and the one a restart resumes in.
    pub link_db: AtomicUsize,
    /// When the stream passed which offset (a primary's), and when this
    /// server last heard its primary (a replica's): see `promise`.
    pub marks: promise::Marks,
    pub heard: promise::Heard,
    /// A replica's notes of how far its AOF holds the stream (`FACK`).
    pub aof_marks: parking_lot::Mutex<fack::AofMarks>,
}

/// A new replication id: 40 random hex digits.
pub fn new_replid() -> String {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    (0..40)
        .map(|_| format!("{:x}", rng.gen_range(0..16u8)))
        .collect()
}

pub const NO_ID: &str = "0000000000000000000000000000000000000000";

impl Replication {
    pub fn new(backlog_size: usize) -> Replication {
        Replication {
            stream: Mutex::new(Backlog::new(backlog_size)),
            active: AtomicBool::new(false),
            offset: AtomicU64::new(0),
            buffer_mem: AtomicUsize::new(0),
            backlog_size: AtomicUsize::new(backlog_size),
            fed: tokio::sync::Notify::new(),
            acked: tokio::sync::Notify::new(),
            ids: Mutex::new(Ids {
                replid: new_replid(),
                replid2: NO_ID.into(),
                second_offset: -1,
            }),
            replicas: RwLock::new(Vec::new()),
            primary: Mutex::new(None),
            follows: AtomicBool::new(false),
            link_gen: AtomicU64::new(0),
            link_state: AtomicU8::new(LINK_DOWN),
            link_last_io_ms: AtomicU64::new(0),
            link_down_since_ms: AtomicU64::new(0),
            sync_total: std::sync::atomic::AtomicI64::new(0),
            sync_read: AtomicU64::new(0),
            sync_full: AtomicU64::new(0),
            sync_partial_ok: AtomicU64::new(0),
            sync_partial_err: AtomicU64::new(0),
            good_replicas: AtomicUsize::new(0),
            min_replicas: AtomicUsize::new(0),
            min_replicas_max_lag: AtomicU64::new(10),
            failover: Default::default(),
            read_only: AtomicBool::new(true),
            serve_stale: AtomicBool::new(true),
            full_sync: Mutex::new(None),
            net_out: AtomicU64::new(0),
            net_in: AtomicU64::new(0),
            hard_limit: AtomicU64::new(256 << 20),
            soft_limit: AtomicU64::new(64 << 20),
            soft_secs: AtomicU64::new(60),
            backlog_ttl: AtomicU64::new(3600),
            alone_since_ms: AtomicU64::new(0),
            apply_lock: Mutex::new(()),
            link_db: AtomicUsize::new(0),
            marks: Default::default(),
            heard: Default::default(),
            aof_marks: Default::default(),
        }
    }

    /// Whether a backlog exists (the stream has a history).
    #[inline]
    pub fn active(&self) -> bool {
        self.active.load(Relaxed)
    }

    /// Whether this server's own writes must be encoded into the stream:
    /// a backlog exists and this server is a primary. A replica's stream
    /// is its primary's bytes only (`feed_raw`): its own writes (a
    /// writable replica), publishes, expiries and evictions stay local, as
    /// in Redis (replicationFeedSlaves returns on a replica), so the
    /// offset it acknowledges and bids with is its primary's.
    #[inline]
    pub fn takes_own_writes(&self) -> bool {
        self.active.load(Relaxed) && !self.follows.load(Relaxed)
    }

    /// `master_repl_offset`.
    #[inline]
    pub fn offset(&self) -> u64 {
        self.offset.load(Relaxed)
    }

    pub fn ids(&self) -> Ids {
        self.ids.lock().clone()
    }

    pub fn primary(&self) -> Option<Primary> {
        self.primary.lock().clone()
    }

    pub fn is_replica(&self) -> bool {
        self.follows.load(Relaxed)
    }

    /// Creates the backlog if there is none (the first replica, or a
    /// replica that may get its own replicas), starting at the current
    /// offset.
    pub fn ensure_backlog(&self) {
        let mut s = self.stream.lock();
        if !s.active {
            let at = s.end();
            s.reset(at);
            self.buffer_mem.store(0, Relaxed);
            s.active = true;
            self.active.store(true, Relaxed);
        }
    }

    pub fn set_backlog_size(&self, size: usize) {
        self.stream.lock().size = size;
        self.backlog_size.store(size, Relaxed);
    }

    /// The replication buffer beyond `repl-backlog-size`: what connected
    /// replicas that are behind still need (Redis counts it as their
    /// output buffers, not as the dataset's memory).
    #[inline]
    pub fn buffer_beyond_backlog(&self) -> usize {
        self.buffer_mem
            .load(Relaxed)
            .saturating_sub(self.backlog_size.load(Relaxed))
    }

    /// Encodes a command's records into the stream (several as one
    /// `MULTI ... EXEC`). Returns the stream's end after them.
    pub fn feed_records(&self, records: &[Record]) -> u64 {
        let mut scratch = Vec::new();
        let mut s = self.stream.lock();
        if !s.active || self.follows.load(Relaxed) {
            return s.end();
        }
        let tx = records.len() > 1;
        if tx {
            // As Redis 7.0: MULTI first, each command after its SELECT.
            resp::encode::command(&mut scratch, &[b"MULTI".as_slice()]);
            s.push(&scratch);
        }
        for (db, argv) in records {
            s.push_command(*db, argv, &mut scratch);
        }
        if tx {
            scratch.clear();
            resp::encode::command(&mut scratch, &[b"EXEC".as_slice()]);
            s.push(&scratch);
        }
        self.after_feed(s)
    }

    /// Appends bytes of the primary's stream as they came (a replica).
    pub fn feed_raw(&self, bytes: &[u8]) -> u64 {
        let mut s = self.stream.lock();
        s.push(bytes);
        self.after_feed(s)
    }

    /// A command outside any database's history (PING, REPLCONF GETACK):
    /// keeps the selected database.
    pub fn feed_control(&self, argv: &[&[u8]]) -> u64 {
        let mut scratch = Vec::new();
        resp::encode::command(&mut scratch, argv);
        let mut s = self.stream.lock();
        if !s.active || self.follows.load(Relaxed) {
            return s.end();
        }
        s.push(&scratch);
        self.after_feed(s)
    }

    fn after_feed(&self, mut s: parking_lot::MutexGuard<'_, Backlog>) -> u64 {
        let end = s.end();
        self.offset.store(end, Relaxed);
        if s.histlen() > s.size as u64 {
            let replicas = self.replicas.read();
            let slowest = replicas
                .iter()
                .map(|r| r.sent.load(Relaxed))
                .min()
                .unwrap_or(end);
            drop(replicas);
            s.trim(slowest, self.hard_limit.load(Relaxed));
        }
        self.buffer_mem.store(s.memory(), Relaxed);
        drop(s);
        self.fed.notify_waiters();
        end
    }

    /// Copies stream bytes from `pos` (at most `max`); `None` when `pos`
    /// fell out of the backlog (the replica is too far behind).
    pub fn read_from(&self, pos: u64, max: usize, out: &mut Vec<u8>) -> Option<usize> {
        self.stream.lock().read_from(pos, max, out)
    }

    /// Whether a replica asking to continue history `id` from position
    /// `pos` (PSYNC's offset − 1) can: the id is ours, or our previous one
    /// up to where it ended, and the backlog still holds `pos`.
    pub fn can_continue(&self, id: &str, pos: u64) -> bool {
        let ids = self.ids.lock();
        let known = id == ids.replid
            || (id == ids.replid2 && ids.second_offset >= 0 && pos < ids.second_offset as u64);
        known && self.stream.lock().has(pos)
    }

    /// The backlog's figures for INFO: active, size, first byte offset,
    /// history length.
    pub fn backlog_info(&self) -> (bool, usize, u64, u64) {
        let s = self.stream.lock();
        (s.active, s.size, s.first() + 1, s.histlen())
    }

    pub fn backlog_memory(&self) -> usize {
        self.stream.lock().memory()
    }

    /// A new history starts here (promotion): the old id becomes
    /// `master_replid2`, valid up to the current offset (Redis's
    /// shiftReplicationId).
    pub fn shift_replid(&self) {
        let mut ids = self.ids.lock();
        ids.replid2 = std::mem::replace(&mut ids.replid, new_replid());
        ids.second_offset = self.offset() as i64 + 1;
    }

    /// The primary continued with another id (`+CONTINUE <id>` after its
    /// promotion): ours shifts the same way, to its id.
    pub fn adopt_replid(&self, id: &str) {
        let mut ids = self.ids.lock();
        if ids.replid != id {
            ids.replid2 = std::mem::replace(&mut ids.replid, id.to_string());
            ids.second_offset = self.offset() as i64 + 1;
        }
    }

    /// A full sync from a primary: its history, from `offset`, replaces
    /// ours; the backlog restarts there.
    pub fn reset_history(&self, id: &str, offset: u64) {
        let mut ids = self.ids.lock();
        ids.replid = id.to_string();
        ids.replid2 = NO_ID.into();
        ids.second_offset = -1;
        drop(ids);
        let mut s = self.stream.lock();
        s.reset(offset);
        self.buffer_mem.store(0, Relaxed);
        s.active = true;
        self.active.store(true, Relaxed);
        self.offset.store(offset, Relaxed);
    }

    /// The history a restarted replica loaded from its RDB (`repl-id`,
    /// `repl-offset`, `repl-stream-db` aux fields).
    pub fn restore_history(&self, id: &str, offset: u64, db: usize) {
        self.ids.lock().replid = id.to_string();
        let mut s = self.stream.lock();
        s.reset(offset);
        self.buffer_mem.store(0, Relaxed);
        s.active = true;
        self.active.store(true, Relaxed);
        self.offset.store(offset, Relaxed);
        self.link_db.store(db, Relaxed);
    }

    /// A snapshot's start, every shard held: the offset the image is taken
    /// at. Commands after it select their database again, so a replica
    /// loading the image starts the stream right whatever database it is
    /// in.
    pub fn image_taken(&self) -> u64 {
        let mut s = self.stream.lock();
        s.selected_db = -1;
        s.end()
    }

    /// The aux fields of an image (history id, stream database), when
    /// there is a history to continue: a backlog, or a primary.
    pub fn image_aux(&self) -> Option<(String, usize)> {
        if self.is_replica() {
            return Some((self.ids().replid, self.link_db.load(Relaxed)));
        }
        self.active().then(|| (self.ids().replid, 0))
    }

    pub fn set_primary(&self, p: Option<Primary>) {
        let mut primary = self.primary.lock();
        self.follows.store(p.is_some(), Relaxed);
        *primary = p;
    }

    /// Closes every replica's connection (they reconnect and PSYNC).
    pub fn disconnect_replicas(&self) {
        for r in self.replicas.read().iter() {
            r.info.kill();
        }
    }

    pub fn register(&self, link: Arc<ReplicaLink>) {
        self.replicas.write().push(link);
    }

    pub fn unregister(&self, id: u64) {
        self.replicas.write().retain(|r| r.info.id != id);
        self.refresh_good_replicas(crate::command::unix_ms());
        self.acked.notify_waiters();
    }

    /// Whether the replica named `id` (`REPLCONF node-id`) is online and
    /// acknowledged `offset`.
    pub fn node_acked(&self, id: &str, offset: u64) -> bool {
        self.replicas.read().iter().any(|r| {
            r.node_id.as_deref() == Some(id)
                && r.state.load(Relaxed) == ONLINE
                && r.ack.load(Relaxed) >= offset
        })
    }

    /// Replicas whose acknowledged offset reached `offset`.
    pub fn acked_at_least(&self, offset: u64) -> usize {
        self.replicas
            .read()
            .iter()
            .filter(|r| r.state.load(Relaxed) == ONLINE && r.ack.load(Relaxed) >= offset)
            .count()
    }

    /// Once a second from the cron: the good replicas' count, and a PING
    /// into the stream every `repl-ping-replica-period` seconds while
    /// replicas are connected (so they can tell a silent primary from a
    /// dead one), as Redis's replicationCron; none while clients are
    /// `paused` (the offsets must stay still for a failover).
    pub fn cron(&self, now_ms: u64, ping_period: u64, paused: bool) {
        self.refresh_good_replicas(now_ms);
        self.expire_backlog(now_ms);
        let secs = now_ms / 1000;
        if self.is_replica()
            || paused
            || self.replicas.read().is_empty()
            || ping_period == 0
            || self.failover.state.load(Relaxed) != failover::NONE
        {
            return;
        }
        if secs.is_multiple_of(ping_period) {
            self.feed_control(&[b"PING"]);
        }
    }

    /// Online replicas whose AOF holds `offset` fsynced (WAITAOF).
    pub fn aof_acked_at_least(&self, offset: u64) -> usize {
        self.replicas
            .read()
            .iter()
            .filter(|r| r.state.load(Relaxed) == ONLINE && r.aof_ack.load(Relaxed) >= offset)
            .count()
    }

    /// WAIT: waits until `wanted` replicas acknowledged `offset`, or the
    /// deadline; returns how many did.
    pub async fn wait_acks(
        &self,
        offset: u64,
        wanted: usize,
        deadline: Option<std::time::Instant>,
    ) -> usize {
        loop {
            let acked = self.acked.notified();
            tokio::pin!(acked);
            acked.as_mut().enable();
            let n = self.acked_at_least(offset);
            if n >= wanted {
                return n;
            }
            match deadline {
                Some(d) => {
                    let now = std::time::Instant::now();
                    if now >= d {
                        return n;
                    }
                    tokio::select! {
                        _ = acked => {}
                        _ = tokio::time::sleep(d - now) => {}
                    }
                }
                None => acked.await,
            }
        }
    }

    /// The cron's count of replicas that acknowledged within
    /// `min-replicas-max-lag` seconds (Redis's refreshGoodSlavesCount).
    pub fn refresh_good_replicas(&self, now_ms: u64) {
        let lag = self.min_replicas_max_lag.load(Relaxed) * 1000;
        let good = self
            .replicas
            .read()
            .iter()
            .filter(|r| {
                r.state.load(Relaxed) == ONLINE
                    && now_ms.saturating_sub(r.ack_ms.load(Relaxed)) <= lag
            })
            .count();
        self.good_replicas.store(good, Relaxed);
    }

    /// Writes are refused: fewer good replicas than `min-replicas-to-write`.
    #[inline]
    pub fn too_few_replicas(&self) -> bool {
        let min = self.min_replicas.load(Relaxed);
        min > 0 && self.good_replicas.load(Relaxed) < min && !self.is_replica()
    }
}

impl Replication {
    /// `client-output-buffer-limit replica`: the hard limit is how far
    /// behind the backlog keeps a connected replica; one behind by more
    /// than the soft limit for longer than its seconds is cut off too.
    pub fn set_limits(&self, l: crate::config::BufferLimit) {
        self.hard_limit.store(l.hard, Relaxed);
        self.soft_limit.store(l.soft, Relaxed);
        self.soft_secs.store(l.soft_secs, Relaxed);
    }

    /// A replica `lag` bytes behind, over the soft limit since `since`
    /// (updated here): whether it must be cut off.
    pub fn over_soft_limit(&self, lag: u64, since: &mut Option<std::time::Instant>) -> bool {
        let soft = self.soft_limit.load(Relaxed);
        if soft == 0 || lag <= soft {
            *since = None;
            return false;
        }
        let start = *since.get_or_insert_with(std::time::Instant::now);
        start.elapsed().as_secs() >= self.soft_secs.load(Relaxed)
    }

    /// `repl-backlog-ttl`: a primary without replicas for that long frees
    /// its backlog and starts a new history (Redis's replicationCron), so
    /// a replica that comes back syncs in full.
    fn expire_backlog(&self, now_ms: u64) {
        let ttl = self.backlog_ttl.load(Relaxed);
        if self.is_replica() || !self.replicas.read().is_empty() {
            self.alone_since_ms.store(0, Relaxed);
            return;
        }
        let since = self.alone_since_ms.load(Relaxed);
        if since == 0 {
            self.alone_since_ms.store(now_ms, Relaxed);
            return;
        }
        if ttl == 0 || !self.active() || now_ms.saturating_sub(since) < ttl * 1000 {
            return;
        }
        let mut s = self.stream.lock();
        let at = s.end();
        s.reset(at);
        self.buffer_mem.store(0, Relaxed);
        s.active = false;
        self.active.store(false, Relaxed);
        drop(s);
        let mut ids = self.ids.lock();
        ids.replid = new_replid();
        ids.replid2 = NO_ID.into();
        ids.second_offset = -1;
        tracing::info!("Replication backlog freed after {ttl} seconds without connected replicas.");
    }
}
