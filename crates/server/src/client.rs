//! Connected clients: the per-connection state a command may change
//! (database, protocol, name) and the registry CLIENT LIST/KILL read.
//!
//! A connection task owns its [`Client`]; the fields other connections may
//! read live in the shared [`ClientInfo`] as atomics or small locks, written
//! only by the owner, so the hot path takes no lock.

use std::collections::BTreeMap;
use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed,
};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

/// What CLIENT REPLY asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyMode {
    On,
    Off,
    /// Skip the reply of the next command only.
    SkipNext,
    /// Skipping the reply of the current command.
    Skip,
}

/// A connection's fixed state besides its buffers (client record,
/// session, decoder), counted in its memory.
pub const CLIENT_STATE_BYTES: u64 = 1024;

pub struct ClientInfo {
    pub id: u64,
    pub addr: String,
    pub laddr: String,
    pub fd: i32,
    pub unix: bool,
    pub created: Instant,
    pub name: Mutex<Vec<u8>>,
    pub lib_name: Mutex<Vec<u8>>,
    pub lib_ver: Mutex<Vec<u8>>,
    pub db: AtomicU32,
    pub resp: AtomicU8,
    /// When the last command ran (or the connection opened), in
    /// `command::mono_ms`'s milliseconds.
    pub last_interaction_ms: AtomicU64,
    /// Command-table id of the last command run.
    pub last_cmd: AtomicU32,
    pub no_evict: AtomicBool,
    /// CLIENT NO-TOUCH: this client's commands leave the keys' access
    /// time and frequency alone (TOUCH excepted).
    pub no_touch: AtomicBool,
    pub killed: AtomicBool,
    /// The read and reply buffers' sizes (allocated), as of the last
    /// batch: the client's memory.
    pub qbuf: AtomicU64,
    pub obuf: AtomicU64,
    /// Bytes received and not yet run (CLIENT LIST's qbuf: while a batch
    /// runs, its requests; between batches, half a request), and replies
    /// not yet written (omem: while a write waits for the socket).
    pub unread: AtomicU64,
    pub unsent: AtomicU64,
    /// The worker serving this connection.
    pub worker: AtomicUsize,
    /// Set by the balancer: the worker to move to at the next batch
    /// boundary (`net::balance::NO_MIGRATION` for none).
    pub migrate_to: AtomicUsize,
    /// The connection waits for a request with nothing half-read: while
    /// its worker is stuck in a busy script, the script's hook may answer
    /// it (`net::busy`).
    pub parked_idle: AtomicBool,
    /// The connection's transaction state (`net::busy::TxShadow`),
    /// published when it parks.
    pub tx_state: AtomicU8,
    /// The hook answered this connection: apply `busy_shadow` on resume.
    pub busy_changed: AtomicBool,
    pub busy_shadow: Mutex<crate::net::busy::BusyShadow>,
    /// The user the client is authenticated as (CLIENT LIST `user=`,
    /// CLIENT KILL USER).
    pub user: Mutex<Vec<u8>>,
    /// Mirrors `Client::auth.authenticated`, for those answering the
    /// connection while its task is parked (`net::busy`).
    pub authenticated: AtomicBool,
    /// Messages for the connection that are not replies: pub/sub,
    /// tracking invalidations, MONITOR.
    pub inbox: crate::clients::inbox::Inbox,
    /// CLIENT TRACKING state (read by writers invalidating keys).
    pub tracking: crate::clients::tracking::ClientTracking,
    /// The client has a subscription of some kind (Redis's CLIENT_PUBSUB:
    /// a RESP2 tracking redirect needs it).
    pub subscribed: AtomicBool,
    /// In MONITOR mode.
    pub monitor: AtomicBool,
    /// Subscriptions: channels, patterns, shard channels (CLIENT LIST).
    pub sub_counts: [AtomicU32; 3],
    /// Commands queued since MULTI, -1 outside a transaction.
    pub multi_len: AtomicI64,
    /// Waiting in a blocking command.
    pub blocked: AtomicBool,
    /// What the connection is: [`KIND_NORMAL`], [`KIND_REPLICA`] (a
    /// replica's connection to this primary) or [`KIND_PRIMARY`] (this
    /// replica's link to its primary).
    pub kind: AtomicU8,
}

pub const KIND_NORMAL: u8 = 0;
pub const KIND_REPLICA: u8 = 1;
pub const KIND_PRIMARY: u8 = 2;

impl ClientInfo {
    /// A client's shared state at connection time (`fd` -1 for the
    /// log loader's pseudo-client).
    pub fn new(id: u64, addr: String, laddr: String, fd: i32, unix: bool) -> ClientInfo {
        ClientInfo {
            id,
            addr,
            laddr,
            fd,
            unix,
            created: Instant::now(),
            name: Mutex::new(Vec::new()),
            lib_name: Mutex::new(Vec::new()),
            lib_ver: Mutex::new(Vec::new()),
            db: AtomicU32::new(0),
            resp: AtomicU8::new(2),
            last_interaction_ms: AtomicU64::new(crate::command::mono_ms()),
            last_cmd: AtomicU32::new(u32::MAX),
            no_evict: AtomicBool::new(false),
            no_touch: AtomicBool::new(false),
            killed: AtomicBool::new(false),
            qbuf: AtomicU64::new(0),
            obuf: AtomicU64::new(0),
            unread: AtomicU64::new(0),
            unsent: AtomicU64::new(0),
            worker: AtomicUsize::new(0),
            migrate_to: AtomicUsize::new(crate::net::balance::NO_MIGRATION),
            parked_idle: AtomicBool::new(false),
            tx_state: AtomicU8::new(0),
            busy_changed: AtomicBool::new(false),
            busy_shadow: Mutex::new(Default::default()),
            user: Mutex::new(b"default".to_vec()),
            authenticated: AtomicBool::new(false),
            inbox: Default::default(),
            tracking: Default::default(),
            subscribed: AtomicBool::new(false),
            monitor: AtomicBool::new(false),
            sub_counts: Default::default(),
            multi_len: AtomicI64::new(-1),
            blocked: AtomicBool::new(false),
            kind: AtomicU8::new(KIND_NORMAL),
        }
    }

    pub fn idle_secs(&self) -> u64 {
        self.idle_ms() / 1000
    }

    /// Milliseconds since the last command (or since the connection
    /// opened).
    pub fn idle_ms(&self) -> u64 {
        crate::command::mono_ms().saturating_sub(self.last_interaction_ms.load(Relaxed))
    }

    /// What the connection holds: its buffers (as published at its last
    /// batch, or while a large reply is built) and its fixed state.
    pub fn memory(&self) -> u64 {
        self.qbuf.load(Relaxed) + self.obuf.load(Relaxed) + CLIENT_STATE_BYTES
    }

    /// Marks the client killed and wakes its connection by shutting the
    /// socket down; the task then sees EOF and cleans up.
    pub fn kill(&self) {
        self.killed.store(true, Relaxed);
        // SAFETY: shutdown(2) on an fd the registry keeps open (the
        // connection unregisters before its socket is dropped).
        unsafe {
            libc::shutdown(self.fd, libc::SHUT_RDWR);
        }
    }
}

/// Set by a blocking command that found nothing to serve.
#[derive(Debug, Clone)]
pub struct BlockRequest {
    pub db: usize,
    pub keys: Vec<Vec<u8>>,
    pub deadline: Option<std::time::Instant>,
    pub timeout_reply: crate::command::TimeoutReply,
    /// The command to run on wake-up instead of the one sent (XREAD with
    /// `$` resolved to the IDs it meant when first called).
    pub rerun: Option<Vec<Vec<u8>>>,
}

impl BlockRequest {
    /// What a woken command that still cannot be served leaves: the
    /// connection keeps the wait it is in (its keys, its deadline).
    pub fn keep_waiting(db: usize) -> BlockRequest {
        BlockRequest {
            db,
            keys: Vec::new(),
            deadline: None,
            timeout_reply: crate::command::TimeoutReply::NullArray,
            rerun: None,
        }
    }
}

/// A client's subscriptions (messages arrive in its `ClientInfo::inbox`).
#[derive(Default)]
pub struct PubSubState {
    pub channels: Vec<Vec<u8>>,
    pub patterns: Vec<Vec<u8>>,
    pub shard_channels: Vec<Vec<u8>>,
}

impl PubSubState {
    pub fn total(&self) -> usize {
        self.channels.len() + self.patterns.len() + self.shard_channels.len()
    }
}

/// A transaction being queued (MULTI ... EXEC).
#[derive(Debug, Default)]
pub struct Tx {
    /// The commands queued (owned: the read buffer moves on).
    pub queue: Vec<crate::command::call::Queued>,
    /// A command failed to queue: EXEC must abort (EXECABORT).
    pub doomed: bool,
    /// A write was queued (EXEC then counts as a write for the MISCONF
    /// gate).
    pub writes: bool,
    /// ... and one flagged `denyoom` (EXEC is refused when out of memory).
    pub denyoom: bool,
    /// ... and a read (a replica redirects EXEC as a read then, under
    /// `CLIENT CAPA redirect`).
    pub reads: bool,
}

/// Per-connection state owned by the connection task.
pub struct Client {
    pub info: Arc<ClientInfo>,
    pub db: usize,
    pub proto: u8,
    pub reply_mode: ReplyMode,
    /// True while a blocked command runs again after a wake-up.
    pub woken: bool,
    /// The transaction being queued, from MULTI to EXEC or DISCARD.
    pub tx: Option<Tx>,
    /// CLIENT PAUSE ran: its reply waits until every command that passed
    /// the pause gate before it has finished (`pause::InFlight`).
    pub pause_barrier: bool,
    pub watch: Arc<crate::clients::watch::WatchState>,
    pub pubsub: Option<Box<PubSubState>>,
    /// Log offset of this client's last write: with `appendfsync always`
    /// its replies leave once the log is durable up to here.
    pub aof_offset: u64,
    /// While EXEC or a script runs: the records of its commands, which
    /// leave as one MULTI ... EXEC block at the end so replay is all or
    /// nothing (see `command::propagate`).
    pub tx_records: Option<Vec<crate::command::propagate::Record>>,
    /// A script's `redis.set_repl(redis.REPL_NONE)`: the running command's
    /// records are not logged.
    pub skip_records: bool,
    /// Who the client is (ACL user) and whether it has authenticated.
    pub auth: crate::acl::ClientAuth,
    /// A script's `redis.call` is running (MONITOR shows it as `lua`).
    pub in_script: bool,
    /// EXEC is running this client's queued commands: nothing may wait
    /// (WAIT and WAITAOF answer at once, as under Redis's
    /// CLIENT_DENY_BLOCKING).
    pub in_exec: bool,
    /// MONITOR lines of the running script's commands, sent when it ends.
    pub script_monitor_lines: Vec<Vec<u8>>,
    /// Slow-log entries of the running script's commands, logged when it
    /// ends (dropped if it restarts, as its commands run again).
    pub script_slowlog: Vec<crate::observe::slowlog::Entry>,
    /// A blocked command's runs, for the slow log once its wait ends.
    pub blocked_run: Option<crate::observe::slowlog::BlockedRun>,
    /// The primary's link on a replica: its commands obey (no read-only,
    /// memory or pause gate; expired keys are still there) and reach the
    /// log but not the stream, which gets the primary's bytes as sent.
    pub from_primary: bool,
    /// Cluster mode: ASKING was sent; the next command (or transaction)
    /// may use a slot this node is importing.
    pub asking: bool,
    /// Cluster mode: READONLY was sent; a replica serves this client's
    /// reads of its shard's slots.
    pub cluster_readonly: bool,
    /// `CLIENT CAPA redirect` (Valkey 8.0): on a replica, this client's
    /// writes, and its reads unless it sent READONLY, answer `-REDIRECT
    /// host:port` (the primary) instead of running.
    pub capa_redirect: bool,
    /// What REPLCONF said before PSYNC (a replica's connection).
    pub repl_conf: Option<crate::replication::master::ReplConf>,
    /// The replication stream's end after this client's last write (what
    /// WAIT waits for replicas to acknowledge).
    pub repl_offset: u64,
    /// A request that needs values from the disk tier may park this
    /// client's connection (`Next::Load`) rather than read them on the
    /// worker: set by the network connection, which waits for the reads,
    /// and cleared for the one run after a wait, so a request whose value
    /// went back to disk meanwhile still runs.
    pub parks_for_disk: bool,
    /// Where the values this request needs are was counted already (it
    /// runs again after its reads, or a prefetch looked at it): the
    /// tier's hit rate counts each request once.
    pub values_looked_at: bool,
}

impl Client {
    pub fn new(info: Arc<ClientInfo>) -> Client {
        Client {
            info,
            db: 0,
            proto: 2,
            reply_mode: ReplyMode::On,
            woken: false,
            tx: None,
            watch: Default::default(),
            pubsub: None,
            aof_offset: 0,
            tx_records: None,
            skip_records: false,
            auth: crate::acl::ClientAuth::internal(),
            in_script: false,
            in_exec: false,
            script_monitor_lines: Vec::new(),
            script_slowlog: Vec::new(),
            blocked_run: None,
            from_primary: false,
            asking: false,
            pause_barrier: false,
            cluster_readonly: false,
            capa_redirect: false,
            repl_conf: None,
            repl_offset: 0,
            parks_for_disk: false,
            values_looked_at: false,
        }
    }

    /// A client of a network connection: the default user, authenticated
    /// when that user needs no password.
    pub fn connected(info: Arc<ClientInfo>, acl: &crate::acl::Acl) -> Client {
        let mut c = Client::new(info);
        c.auth = acl.new_client();
        c.info.authenticated.store(c.auth.authenticated, Relaxed);
        c
    }

    /// A stand-in for a parked connection's own client (`net::busy`):
    /// the same user and authentication state.
    pub fn stand_in(info: Arc<ClientInfo>, acl: &crate::acl::Acl) -> Client {
        let mut c = Client::connected(info, acl);
        let name = c.info.user.lock().clone();
        match acl.get(&name) {
            Some(cell) if c.info.authenticated.load(Relaxed) => acl.login(&mut c.auth, cell),
            _ => c.auth.authenticated = false,
        }
        c
    }

    /// Authenticates as `cell` (AUTH, HELLO AUTH).
    pub fn login(&mut self, acl: &crate::acl::Acl, cell: Arc<crate::acl::UserCell>) {
        *self.info.user.lock() = cell.name.clone();
        acl.login(&mut self.auth, cell);
        self.info.authenticated.store(true, Relaxed);
    }

    /// Back to the default user (RESET).
    pub fn logout(&mut self, acl: &crate::acl::Acl) {
        acl.reset_client(&mut self.auth);
        *self.info.user.lock() = self.auth.user_name().to_vec();
        self.info
            .authenticated
            .store(self.auth.authenticated, Relaxed);
    }

    pub fn set_db(&mut self, db: usize) {
        self.db = db;
        self.info.db.store(db as u32, Relaxed);
    }

    pub fn set_proto(&mut self, proto: u8) {
        self.proto = proto;
        self.info.resp.store(proto, Relaxed);
    }

    /// Subscriptions of every kind (a RESP2 client with any is in
    /// subscribed mode).
    pub fn subscriptions(&self) -> usize {
        self.pubsub.as_ref().map_or(0, |p| p.total())
    }
}

#[derive(Default)]
pub struct Clients {
    next_id: AtomicU64,
    by_id: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
}

impl Clients {
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Relaxed) + 1
    }

    pub fn register(&self, info: Arc<ClientInfo>) {
        self.by_id.lock().insert(info.id, info);
    }

    pub fn unregister(&self, id: u64) {
        self.by_id.lock().remove(&id);
    }

    pub fn len(&self) -> usize {
        self.by_id.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, id: u64) -> Option<Arc<ClientInfo>> {
        self.by_id.lock().get(&id).cloned()
    }

    pub fn snapshot(&self) -> Vec<Arc<ClientInfo>> {
        self.by_id.lock().values().cloned().collect()
    }

    /// `maxmemory-clients`: while the clients together hold more than
    /// `limit` bytes, disconnects the one holding the most (Redis 7's
    /// client eviction; clients with CLIENT NO-EVICT on are spared).
    /// Returns how many were evicted.
    pub fn evict_over(&self, limit: u64) -> usize {
        let map = self.by_id.lock();
        let mut total: u64 = map.values().map(|c| c.memory()).sum();
        if total <= limit {
            return 0;
        }
        let mut by_size: Vec<&Arc<ClientInfo>> = map
            .values()
            .filter(|c| !c.no_evict.load(Relaxed) && !c.killed.load(Relaxed))
            .collect();
        by_size.sort_by_key(|c| std::cmp::Reverse(c.memory()));
        let mut n = 0;
        for c in by_size {
            if total <= limit {
                break;
            }
            total -= c.memory();
            tracing::warn!(id = c.id, addr = %c.addr, "client evicted (maxmemory-clients)");
            c.kill();
            n += 1;
        }
        n
    }

    /// Kills the clients `pred` selects while holding the registry lock, so
    /// no fd can be closed and reused under us. Returns how many.
    pub fn kill_where(&self, mut pred: impl FnMut(&ClientInfo) -> bool) -> usize {
        let map = self.by_id.lock();
        let mut n = 0;
        for c in map.values() {
            if pred(c) {
                c.kill();
                n += 1;
            }
        }
        n
    }
}
