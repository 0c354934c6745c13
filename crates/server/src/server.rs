//! The server: shared state and the threads that serve it.
//!
//! Threads: `threads` workers, each a single-threaded tokio runtime that
//! owns the connections handed to it (no work stealing: an idle worker
//! sleeps in epoll instead of spinning, which matters when the benchmark
//! client shares the machine), plus the main thread, which accepts
//! connections, deals them out round-robin, runs the cron (active expiry)
//! and waits for a shutdown signal.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use tokio::sync::{mpsc, Notify};

use crate::client::Clients;
use crate::command::{self, table::CommandTable};
use crate::config::Config;
use crate::net::balance::{Balancer, Workers};
use crate::net::{self, Incoming};
use crate::observe::stats::Stats;
use crate::persistence::aof::Aof;
use crate::persistence::snapshot::Target;
use crate::storage::keyspace::{Keyspace, View, SHARDS};
use crate::storage::value::EncodingLimits;

/// SHUTDOWN without SAVE/NOSAVE: save if save points are configured.
pub const SHUTDOWN_DEFAULT: u8 = 0;
pub const SHUTDOWN_SAVE: u8 = 1;
pub const SHUTDOWN_NOSAVE: u8 = 2;

pub struct Server {
    /// The configuration by name: CONFIG GET/SET/REWRITE, and where a
    /// change is made. Everything else reads `settings`.
    pub config: RwLock<Config>,
    /// The typed settings, a snapshot swapped whole after each change
    /// (`config_changed`), read without a lock.
    settings: arc_swap::ArcSwap<crate::config::Settings>,
    pub aof: Arc<Aof>,
    pub snapshots: crate::persistence::snapshot::Snapshots,
    /// Log size after the last rewrite, for auto-aof-rewrite-percentage.
    pub aof_base_size: AtomicU64,
    me: std::sync::OnceLock<Weak<Server>>,
    pub keyspace: Keyspace,
    pub commands: CommandTable,
    /// Users and permissions.
    pub acl: crate::acl::Acl,
    /// The TLS configuration of `tls-port` connections.
    pub tls: crate::net::tls::Tls,
    /// The accept loops of `port` and `tls-port`.
    pub listeners: crate::net::listeners::Listeners,
    pub clients: Clients,
    pub blocking: crate::clients::blocking::Blocking,
    pub watches: crate::clients::watch::Watches,
    pub pubsub: crate::clients::pubsub::PubSub,
    pub tracking: crate::clients::tracking::Tracking,
    pub monitors: crate::clients::monitor::Monitors,
    pub pause: crate::clients::pause::Pause,
    pub workers: Workers,
    pub stats: Stats,
    /// Writes since the last save (`rdb_changes_since_last_save`).
    pub dirty: AtomicU64,
    pub started: Instant,
    pub start_unix_ms: u64,
    pub run_id: String,
    pub lastsave: AtomicU64,
    pub threads: usize,
    pub tcp_port: AtomicUsize,
    pub shutdown: Notify,
    pub shutting_down: AtomicBool,
    /// What SHUTDOWN asked for: SHUTDOWN_DEFAULT, SHUTDOWN_SAVE or
    /// SHUTDOWN_NOSAVE.
    pub shutdown_save: std::sync::atomic::AtomicU8,
    /// Hot copies of config values read on every request.
    pub proto_max_bulk_len: AtomicUsize,
    /// `hll-sparse-max-bytes`: the size past which a sparse HyperLogLog
    /// turns dense.
    pub hll_sparse_max_bytes: AtomicUsize,
    pub timeout_secs: AtomicU64,
    pub hz: AtomicU64,
    /// Wakes the cron when `hz` changes, so a long sleep at an old low hz
    /// is not waited out.
    pub cron_wake: Notify,
    /// `dynamic-hz`: the cron runs faster with many clients.
    pub dynamic_hz: AtomicBool,
    pub expired_stale_perc: AtomicU64,
    /// Hash fields removed because their TTL passed (INFO's
    /// `expired_subkeys`).
    pub expired_subkeys: AtomicU64,
    /// Active expiry cycles stopped by their time budget, and the time
    /// they took (INFO's expired_time_cap_reached_count and
    /// expire_cycle_cpu_milliseconds).
    pub expire_cycle: ExpireCycleStats,
    /// The cron's active expiry cycle (DEBUG SET-ACTIVE-EXPIRE).
    pub active_expire: AtomicBool,
    pub(crate) limits: [AtomicI64; 10],
    /// `notify-keyspace-events` as class bits (0: off, one load to check).
    pub notify_flags: std::sync::atomic::AtomicU32,
    /// maxmemory and its policy, eviction counters.
    pub memory: crate::memory::Limits,
    /// Eviction's pool of best candidates (memory::evict).
    pub eviction_pool: parking_lot::Mutex<crate::memory::evict::Pool>,
    /// The candidates for moving to the disk tier (scored by a policy of
    /// its own, so kept apart from eviction's).
    pub spill_pool: parking_lot::Mutex<crate::memory::evict::Pool>,
    /// SLOWLOG's entries and thresholds (see `slowlog`).
    pub slowlog: crate::observe::slowlog::SlowLog,
    /// The latency monitor (LATENCY), shared with the log's threads.
    pub latency: Arc<crate::observe::latency::Monitor>,
    /// Replication in both roles (see `replication`).
    pub repl: crate::replication::Replication,
    /// Cluster mode: the topology from etcd and the lease deadline.
    pub cluster: crate::cluster::Cluster,
}

/// Config parameters behind `Server::encoding_limits`, in field order.

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Table(#[from] command::table::TableError),
    #[error("{0}")]
    Listen(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Load(String),
    #[error("{0}")]
    Acl(String),
    #[error("{0}")]
    Cluster(String),
}

fn run_id() -> String {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    (0..40)
        .map(|_| format!("{:x}", rng.gen_range(0..16u8)))
        .collect()
}

impl Server {
    pub fn new(config: Config) -> Result<Server, StartError> {
        let s = config.settings();
        let databases = s.databases.max(1);
        let threads = s.threads.max(1);
        let now = command::unix_ms();
        let aof = Arc::new(Aof::new(
            &s.dir,
            &s.appenddirname,
            &s.appendfilename,
            s.appendfsync,
        ));
        let commands = command::build_table()?;
        let acl = crate::acl::Acl::new(&commands.acl);
        let server = Server {
            acl,
            tls: Default::default(),
            listeners: Default::default(),
            latency: aof.latency.clone(),
            aof,
            snapshots: Default::default(),
            aof_base_size: AtomicU64::new(0),
            me: std::sync::OnceLock::new(),
            keyspace: Keyspace::new(databases),
            commands,
            clients: Clients::default(),
            blocking: Default::default(),
            watches: Default::default(),
            pubsub: Default::default(),
            tracking: Default::default(),
            monitors: Default::default(),
            pause: Default::default(),
            workers: Workers::new(threads),
            stats: Stats::default(),
            dirty: AtomicU64::new(0),
            started: Instant::now(),
            start_unix_ms: now,
            run_id: run_id(),
            lastsave: AtomicU64::new(now / 1000),
            threads,
            tcp_port: AtomicUsize::new(s.port as usize),
            shutdown: Notify::new(),
            shutting_down: AtomicBool::new(false),
            shutdown_save: Default::default(),
            proto_max_bulk_len: AtomicUsize::new(s.proto_max_bulk_len),
            hll_sparse_max_bytes: AtomicUsize::new(s.hll_sparse_max_bytes),
            timeout_secs: AtomicU64::new(s.timeout),
            hz: AtomicU64::new(s.hz),
            cron_wake: Notify::new(),
            dynamic_hz: AtomicBool::new(true),
            expired_stale_perc: AtomicU64::new(0),
            expired_subkeys: AtomicU64::new(0),
            expire_cycle: ExpireCycleStats::default(),
            active_expire: AtomicBool::new(true),
            limits: Default::default(),
            notify_flags: Default::default(),
            memory: Default::default(),
            eviction_pool: Default::default(),
            spill_pool: Default::default(),
            slowlog: Default::default(),
            repl: crate::replication::Replication::new(s.repl_backlog_size.max(1)),
            cluster: Default::default(),
            settings: arc_swap::ArcSwap::new(config.snapshot()),
            config: RwLock::new(config),
        };
        server.config_changed(None);
        server.load_users().map_err(StartError::Acl)?;
        Ok(server)
    }

    /// The users at start, as Redis's ACLLoadUsersAtStartup: the default
    /// user's `requirepass`, then the config's `user` lines or the ACL
    /// file (not both).
    fn load_users(&self) -> Result<(), String> {
        let cat = &self.commands.acl;
        let c = self.config.read();
        let pubsub_all = c.settings().acl_pubsub_allchannels;
        self.acl.pubsub_all.store(pubsub_all, Relaxed);
        self.acl
            .set_requirepass(cat, c.settings().requirepass.as_bytes());
        let aclfile = c.settings().aclfile.clone();
        if aclfile.is_some() && !c.users.is_empty() {
            return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.".into());
        }
        if !c.users.is_empty() {
            let mut users = crate::acl::parse_users(cat, &c.users, pubsub_all, None)?;
            // Users not named keep the default user as it is.
            if !users.iter().any(|u| u.name == b"default") {
                users.push((*self.acl.default_user()).clone());
            }
            self.acl.replace_all(users, cat);
        }
        drop(c);
        if let Some(aclfile) = aclfile {
            crate::command::acl::load_file(self, &aclfile)
                .map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"))?;
        }
        Ok(())
    }

    /// Publishes the configuration's new settings, then runs the apply
    /// functions of the parameters `changed` (every parameter's with
    /// `None`, at start) with them.
    pub fn config_changed(&self, changed: Option<&[&str]>) {
        let settings = self.config.read().snapshot();
        self.settings.store(Arc::clone(&settings));
        for apply in crate::config::applies(changed) {
            apply(self, &settings);
        }
    }

    /// The typed settings as of the last change. Holding the guard keeps
    /// that snapshot, not the configuration's lock.
    #[inline]
    pub fn settings(&self) -> arc_swap::Guard<Arc<crate::config::Settings>> {
        self.settings.load()
    }

    /// Current encoding thresholds; plain loads, no lock, as they are read
    /// by every command that grows a collection.
    pub fn encoding_limits(&self) -> EncodingLimits {
        let l = |i: usize| self.limits[i].load(Relaxed);
        EncodingLimits {
            hash_max_listpack_entries: l(0) as usize,
            hash_max_listpack_value: l(1) as usize,
            set_max_intset_entries: l(2) as usize,
            zset_max_listpack_entries: l(3) as usize,
            zset_max_listpack_value: l(4) as usize,
            list_max_listpack_size: l(5),
            stream_node_max_bytes: l(6) as usize,
            stream_node_max_entries: l(7) as usize,
            set_max_listpack_entries: l(8) as usize,
            set_max_listpack_value: l(9) as usize,
            sets_as_7_2: crate::speaks_7_4(),
        }
    }

    /// Publishes a keyspace event if `notify-keyspace-events` selects it.
    #[inline]
    pub fn notify(&self, class: u32, event: &str, key: &[u8], db: usize) {
        let flags = self.notify_flags.load(Relaxed);
        if flags != 0 {
            crate::clients::notify::publish(&self.pubsub, flags, class, event, key, db);
        }
    }

    /// CLIENT PAUSE (or FAILOVER's) until `end_ms` covering `mode`: the
    /// paused commands wait (`pause`), and the keyspace stops lazy expiry
    /// for as long, so the dataset and the stream stay still.
    pub fn pause_clients(&self, end_ms: u64, mode: u8) {
        self.pause.pause(end_ms, mode);
        self.keyspace.pause_expiry(self.pause.end_ms());
    }

    /// CLIENT UNPAUSE, or the end of FAILOVER's pause.
    pub fn unpause_clients(&self) {
        self.pause.unpause();
        self.keyspace.pause_expiry(0);
    }

    /// After CONFIG SET lowered `maxmemory` below what is used: warn, and
    /// evict down to it on a background thread (Redis's
    /// startEvictionTimeProc), not within the CONFIG SET's time budget.
    pub fn maxmemory_lowered(self: &Arc<Self>) {
        let max = self.memory.maxmemory();
        let used = crate::memory::alloc::used();
        if max == 0 || used as u64 <= max {
            return;
        }
        tracing::warn!("WARNING: the new maxmemory value set via CONFIG SET ({max}) is smaller than the current memory usage ({used}). This will result in key eviction and/or the inability to accept new write commands depending on the maxmemory-policy.");
        let server = self.clone();
        let started = std::thread::Builder::new()
            .name("keel-evict".into())
            .spawn(move || {
                while crate::memory::evict::perform(&server)
                    == crate::memory::evict::Outcome::Running
                {
                    std::thread::yield_now();
                }
                crate::memory::alloc::flush_thread();
            });
        if let Err(e) = started {
            tracing::warn!("eviction thread: {e}; the cron evicts instead");
        }
    }

    /// Starts BGREWRITEAOF on a background thread; false if one runs.
    /// `held`: the caller's shards, every one or none (a command inside
    /// EXEC holds them all; see `Keyspace::with_every_shard`).
    pub fn rewrite_aof(self: &Arc<Self>, held: &mut View) -> bool {
        if self.aof.rewriting() || !self.aof.enabled() {
            return false;
        }
        let started = self.keyspace.with_every_shard(held, |all| {
            let format = {
                let c = self.settings();
                crate::persistence::aof::BaseFormat {
                    incremental_fsync: c.aof_rewrite_incremental_fsync,
                    rdb: (c.aof_use_rdb_preamble).then(|| (c.rdbcompression, c.rdbchecksum)),
                    functions: crate::scripting::library_codes(self),
                }
            };
            self.aof.start_rewrite(all, format)
        });
        if let Err(e) = started {
            tracing::error!("Can't rewrite append only file: {e}");
            self.aof.rewrite_failures.fetch_add(1, Relaxed);
            return false;
        }
        tracing::info!("Background append only file rewriting started");
        let server = self.clone();
        let spawned = std::thread::Builder::new()
            .name("keel-aof-rewrite".into())
            .spawn(move || {
                let delay = || server.settings().rdb_key_save_delay;
                match server.aof.finish_rewrite(&server.keyspace, &delay) {
                    Ok(()) => {
                        server
                            .aof_base_size
                            .store(server.aof.size_on_disk(), Relaxed);
                        server.aof.rewrite_failures.store(0, Relaxed);
                        server.aof.set_holds_dataset(true);
                        tracing::info!("Background AOF rewrite finished successfully");
                    }
                    Err(e) => {
                        server.aof.abort_rewrite();
                        server.aof.rewrite_failures.fetch_add(1, Relaxed);
                        tracing::error!("Background AOF rewrite failed: {e}");
                    }
                }
            });
        if spawned.is_err() {
            self.aof.abort_rewrite();
            return false;
        }
        true
    }

    /// CONFIG SET appendonly yes|no at runtime (`held`: as for
    /// [`Server::rewrite_aof`]).
    pub fn set_appendonly(self: &Arc<Self>, on: bool, held: &mut View) -> Result<(), String> {
        if on == self.aof.enabled() {
            return Ok(());
        }
        if on {
            // The data that exists now is in the log once the rewrite
            // below ends.
            self.aof.set_holds_dataset(false);
            self.aof.open().map_err(|e| e.to_string())?;
            // Capture the data that exists now, as Redis does.
            self.rewrite_aof(held);
        } else {
            self.aof.disable();
        }
        Ok(())
    }

    /// SAVE: writes a snapshot now, from the calling thread (other clients
    /// keep being served meanwhile).
    /// `held`: as for [`Server::rewrite_aof`].
    pub fn save_rdb(&self, held: &mut View) -> Result<(), String> {
        self.snapshots
            .start(self, held, Target::DbFile)
            .map_err(|e| e.to_string())?;
        self.snapshots.finish(self).map_err(|e| e.to_string())
    }

    /// BGSAVE: takes the snapshot now and writes it on a background thread
    /// (`held`: as for [`Server::rewrite_aof`]).
    pub fn bgsave(self: &Arc<Self>, held: &mut View) -> Result<(), String> {
        self.snapshots
            .start(self, held, Target::DbFile)
            .map_err(|e| e.to_string())?;
        tracing::info!("Background saving started");
        let server = self.clone();
        std::thread::Builder::new()
            .name("keel-rdb-save".into())
            .spawn(move || {
                if server.snapshots.finish(&server).is_ok() {
                    tracing::info!("Background saving terminated with success");
                }
            })
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Writes are refused after a failed save while save points are
    /// configured and stop-writes-on-bgsave-error is yes, as in Redis.
    #[inline]
    pub fn rdb_writes_refused(&self) -> bool {
        if self.snapshots.last_ok.load(Relaxed) {
            return false;
        }
        let c = self.settings();
        c.stop_writes_on_bgsave_error && !c.save.is_empty()
    }

    /// The shared handle of this server (for work that outlives a call).
    pub fn arc(&self) -> Option<Arc<Server>> {
        self.me.get().and_then(Weak::upgrade)
    }

    pub fn request_shutdown(&self) {
        self.shutting_down.store(true, Relaxed);
        self.shutdown.notify_one();
    }
}

/// Loads the append-only log when `appendonly yes` (and opens it for
/// writing), else the RDB snapshot `dir`/`dbfilename` if there is one.
fn load_persistence(server: &Arc<Server>) -> Result<(), StartError> {
    let c = server.settings();
    if !c.appendonly {
        let path = crate::persistence::snapshot::rdb_path(server);
        let data = match crate::persistence::image_file::ImageFile::open(&path) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(StartError::Load(format!(
                    "Fatal error loading the DB {}: {e}. Exiting.",
                    path.display()
                )))
            }
        };
        let start = Instant::now();
        let image = crate::persistence::snapshot::load_image(server, &data, &path)
            .map_err(StartError::Load)?;
        // A replica restarted continues its primary's history from where
        // the image was taken: PSYNC can then resume partially.
        if let (Some((id, offset, db)), true) = (image.repl, server.repl.is_replica()) {
            server.repl.restore_history(&id, offset, db);
        }
        tracing::info!(
            keys = image.keys,
            "DB loaded from disk: {:.3} seconds",
            start.elapsed().as_secs_f64()
        );
        return Ok(());
    }
    let files = server
        .aof
        .files_to_load(&c.dir)
        .map_err(|e| StartError::Load(e.to_string()))?;
    let start = Instant::now();
    let n = crate::persistence::load::replay(server, &files, c.aof_load_truncated)
        .map_err(|e| StartError::Load(e.to_string()))?;
    if !files.is_empty() {
        tracing::info!(
            commands = n,
            "DB loaded from append only file: {:.3} seconds",
            start.elapsed().as_secs_f64()
        );
    }
    server
        .aof
        .open()
        .map_err(|e| StartError::Load(e.to_string()))?;
    server
        .aof_base_size
        .store(server.aof.size_on_disk(), Relaxed);
    Ok(())
}

/// Opens the disk tier if `tiering-dir` is set: before loading, so a
/// dataset larger than `maxmemory` loads by spilling.
pub fn open_tier(server: &Arc<Server>) -> Result<(), StartError> {
    let s = server.settings();
    if let Some(tier) = &s.tiering_dir {
        // Relative to `dir`, as every file of the server.
        let path = s.dir.join(tier);
        crate::tier::open(server, &path, s.tiering_max_disk)
            .map_err(|e| StartError::Load(e.to_string()))?;
    }
    Ok(())
}

/// Starts the workers and the listeners, and serves until SIGTERM/SIGINT or
/// SHUTDOWN.
pub fn run(config: Config) -> Result<(), StartError> {
    // First: the command table built next follows the version presented.
    crate::present_redis_version(&config.settings().redis_version);
    let server = Arc::new(Server::new(config)?);
    crate::scripting::set_busy_duty(net::busy::answer_stuck);
    let _ = server.me.set(Arc::downgrade(&server));
    server.memory.mark_startup();
    let replicaof = server.settings().replicaof.clone();
    if let Some(primary) = replicaof {
        crate::replication::replica::set_primary_at_start(&server, primary);
    }
    open_tier(&server)?;
    load_persistence(&server)?;
    crate::memory::purge();
    crate::memory::start_background_purge();
    server.aof.start_writer()?;
    let mut senders = Vec::new();
    // Every worker, the standby included (see `Workers::regular`).
    for i in 0..server.workers.len() {
        let (tx, rx) = mpsc::unbounded_channel::<Incoming>();
        senders.push(tx);
        let server = server.clone();
        std::thread::Builder::new()
            .name(format!("keel-worker-{i}"))
            .spawn(move || worker(server, i, rx))?;
    }
    server.workers.set_senders(senders);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let bound = net::listen(&server)?;
        // Cluster mode needs the bound port to announce.
        crate::cluster::control::init(&server).map_err(StartError::Cluster)?;
        // `metrics-port`: the Prometheus endpoint, on a thread of its own.
        crate::observe::metrics::start(&server)?;
        let c = server.settings();
        if let Some(pidfile) = &c.pidfile {
            let _ = std::fs::write(pidfile, format!("{}\n", std::process::id()));
        }
        tracing::info!(
            threads = server.threads,
            port = server.tcp_port.load(Relaxed),
            "keel {} ready to accept connections",
            env!("CARGO_PKG_VERSION")
        );
        let listeners = &server.listeners;
        listeners.start(&server, net::listeners::Port::Plain, bound.plain);
        listeners.start(&server, net::listeners::Port::Tls, bound.tls);
        if let Some(unix) = bound.unix {
            let server = server.clone();
            tokio::spawn(async move { net::accept_loop(server, &unix).await });
        }
        tokio::spawn(supervise_cron(server.clone()));
        crate::replication::replica::start_link(&server);
        crate::cluster::control::start(&server);
        wait_for_shutdown(&server).await;
        tracing::info!("shutting down");
        let save = match server.shutdown_save.load(Relaxed) {
            SHUTDOWN_SAVE => true,
            SHUTDOWN_NOSAVE => false,
            _ => !c.save.is_empty() && !server.aof.enabled(),
        };
        if save {
            tracing::info!("Saving the final RDB snapshot before exiting.");
            if let Err(e) = server.save_rdb(&mut server.keyspace.none()) {
                tracing::error!("Error trying to save the DB, can't exit: {e}");
            }
        }
        if server.aof.enabled() {
            server.aof.flush_all();
        }
        server.aof.stop();
        if let Some(path) = &c.unixsocket {
            let _ = std::fs::remove_file(path);
        }
        if let Some(pidfile) = &c.pidfile {
            let _ = std::fs::remove_file(pidfile);
        }
        Ok::<(), StartError>(())
    })?;
    Ok(())
}

enum Signal {
    Term,
    Int,
}

async fn wait_for_shutdown(server: &Server) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        server.shutdown.notified().await;
        return;
    };
    let signal = tokio::select! {
        _ = term.recv() => {
            tracing::info!("Received SIGTERM scheduling shutdown...");
            Signal::Term
        }
        _ = int.recv() => {
            tracing::info!("Received SIGINT scheduling shutdown...");
            Signal::Int
        }
        _ = server.shutdown.notified() => {
            tracing::info!("SHUTDOWN requested");
            return;
        }
    };
    // shutdown-on-sigterm / shutdown-on-sigint: save or nosave as SHUTDOWN
    // SAVE / NOSAVE would ("now" and "force" change nothing here: keel has
    // no replicas to wait for, and exits even when the final save fails).
    let flags = match signal {
        Signal::Term => server.settings().shutdown_on_sigterm.clone(),
        Signal::Int => server.settings().shutdown_on_sigint.clone(),
    };
    for flag in flags {
        match flag.as_str() {
            "save" => server.shutdown_save.store(SHUTDOWN_SAVE, Relaxed),
            "nosave" => server.shutdown_save.store(SHUTDOWN_NOSAVE, Relaxed),
            _ => {}
        }
    }
}

fn worker(server: Arc<Server>, me: usize, mut rx: mpsc::UnboundedReceiver<Incoming>) {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    server.workers.tids[me].store(tid, Relaxed);
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(net::idle_poll::before_park)
        .on_thread_unpark(net::idle_poll::after_unpark)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("worker runtime: {e}");
            return;
        }
    };
    let stats = server.stats.register_thread(server.commands.len());
    match net::idle_poll::runtime_epoll(&rt) {
        Some(fd) => net::idle_poll::init_worker(me, fd, stats.clone()),
        None => tracing::warn!("worker {me}: runtime epoll not found, no idle polling"),
    }
    crate::tier::ring::on_worker();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        tokio::task::spawn_local(server.aof.clone().relay_durable());
        while let Some(conn) = rx.recv().await {
            tokio::task::spawn_local(net::connection::serve(
                server.clone(),
                conn,
                me,
                stats.clone(),
            ));
        }
    });
}

/// A key removed by active expiry goes through the propagation path.
fn on_active_expire(server: &Server, db: usize, key: &[u8]) {
    command::propagate::expired(server, None, db, key);
}

/// auto-aof-rewrite-percentage / auto-aof-rewrite-min-size.
fn auto_rewrite(server: &Arc<Server>) {
    // A busy script holds shards the rewrite would wait for, on the
    // thread that accepts connections.
    if !server.aof.enabled() || server.aof.rewriting() || crate::scripting::any_busy() {
        return;
    }
    let (perc, min) = {
        let c = server.settings();
        (c.auto_aof_rewrite_percentage, c.auto_aof_rewrite_min_size)
    };
    if perc == 0 {
        return;
    }
    let size = server.aof.size_on_disk();
    let base = server.aof_base_size.load(Relaxed).max(1);
    if size > min && (size - base.min(size)) * 100 / base >= perc {
        tracing::info!(
            size,
            base,
            "Starting automatic rewriting of AOF on {}% growth",
            perc
        );
        server.rewrite_aof(&mut server.keyspace.none());
    }
}

/// Starts a BGSAVE when a `save <seconds> <changes>` point is due.
fn scheduled_save(server: &Arc<Server>) {
    // Starting takes every shard: not while a script holds some.
    if server.snapshots.in_progress() || crate::scripting::any_busy() {
        return;
    }
    let now = command::unix_ms() / 1000;
    if server.snapshots.scheduled.swap(false, Relaxed) {
        if let Err(e) = server.bgsave(&mut server.keyspace.none()) {
            tracing::error!("Can't start the scheduled background save: {e}");
        }
    } else if crate::persistence::snapshot::save_point_due(server, now) {
        tracing::info!("changes since the last save reached a save point: saving...");
        if let Err(e) = server.bgsave(&mut server.keyspace.none()) {
            tracing::error!("Can't save in background: {e}");
        }
    }
}

#[derive(Default)]
pub struct ExpireCycleStats {
    pub time_cap_reached: AtomicU64,
    pub cpu_us: AtomicU64,
}

/// The cron's frequency: `hz`, doubled (up to 500) while there are more
/// than 200 clients a tick when `dynamic-hz` is on, as Redis's serverCron.
pub fn cron_hz(server: &Server) -> u64 {
    let mut hz = server.hz.load(Relaxed).clamp(1, 500);
    if server.dynamic_hz.load(Relaxed) {
        let clients = server.clients.len() as u64;
        while clients / hz > 200 && hz < 500 {
            hz = (hz * 2).min(500);
        }
    }
    hz
}

/// Runs the cron, and again after a panic in it: expiry, eviction,
/// replication's PINGs and the save points must not stop without a sign.
async fn supervise_cron(server: Arc<Server>) {
    loop {
        match tokio::spawn(cron(server.clone())).await {
            Err(e) if e.is_panic() => {
                tracing::error!("The server cron panicked; it starts again: {e}");
            }
            _ => return,
        }
    }
}

/// Background duties at `hz`: active expiry (as Redis's
/// activeExpireCycle: sample, and keep going while a quarter or more of
/// what was examined had expired, within a time budget).
async fn cron(server: Arc<Server>) {
    let mut next_shard = 0;
    let mut next_field_shard = 0;
    let mut balancer = Balancer::new(server.workers.len());
    let mut last_balance = Instant::now();
    let mut last_repl_cron = Instant::now();
    loop {
        if last_balance.elapsed() >= Duration::from_millis(250) {
            balancer.tick(&server);
            last_balance = Instant::now();
            auto_rewrite(&server);
            scheduled_save(&server);
            net::close_idle_clients(&server);
        }
        if last_repl_cron.elapsed() >= Duration::from_secs(1) {
            last_repl_cron = Instant::now();
            let period = server.settings().repl_ping_replica_period;
            // While clients are paused the stream stays still too (no
            // PING), so a failover that waits for a replica to reach the
            // primary's offset sees it reached.
            let paused = server.pause.mode() != crate::clients::pause::NONE;
            server.repl.cron(command::unix_ms(), period, paused);
        }
        let hz = cron_hz(&server);
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(1000 / hz)) => {}
            _ = server.cron_wake.notified() => continue,
        }
        server.stats.sample_rates();
        server.memory.observe();
        let clients_limit = server.memory.clients.load(Relaxed);
        if clients_limit != 0 {
            let n = server.clients.evict_over(clients_limit);
            server.memory.evicted_clients.fetch_add(n as u64, Relaxed);
        }
        // What commands' time budgets left over (Redis's
        // evictionTimeProc); not while a busy script holds shards.
        // As Redis (checkClientPauseTimeoutAndReturnIfPaused): while
        // clients are paused the dataset is static, not only to clients:
        // no eviction, no active expiry, nothing enters the stream.
        let paused = server.pause.mode() != crate::clients::pause::NONE;
        if server.memory.maxmemory() != 0 && !crate::scripting::any_busy() && !paused {
            crate::memory::evict::perform(&server);
            crate::memory::bound_resident(server.memory.maxmemory());
        }
        // BCAST invalidations of what the last round evicted or expired
        // (gathered on this thread, as a command's are on its worker).
        server.tracking.flush_broadcast(&server.clients);
        if !server.active_expire.load(Relaxed) || server.keyspace.is_replica() || paused {
            continue;
        }
        // 25% of one core per second at most, as Redis's slow cycle.
        let budget = Duration::from_micros(250_000 / hz);
        let start = Instant::now();
        let (mut examined, mut expired) = (0usize, 0usize);
        for _ in 0..SHARDS {
            let now = command::unix_ms();
            let (e, x) = server
                .keyspace
                .active_expire_shard(next_shard, now, 64, |db, key| {
                    on_active_expire(&server, db, key)
                });
            next_shard = (next_shard + 1) % SHARDS;
            examined += e;
            expired += x;
            if start.elapsed() > budget {
                server.expire_cycle.time_cap_reached.fetch_add(1, Relaxed);
                break;
            }
        }
        // Hash fields past their TTL, earliest first, in what is left of
        // the budget (Redis's activeExpireCycle does them after the keys).
        for i in 0..SHARDS {
            if i > 0 && start.elapsed() > budget {
                break;
            }
            let now = command::unix_ms();
            server.keyspace.active_expire_fields_shard(
                next_field_shard,
                now,
                256,
                |db, key, fields, deleted| {
                    command::propagate::fields_expired(&server, db, key, fields, deleted)
                },
            );
            next_field_shard = (next_field_shard + 1) % SHARDS;
        }
        // Keep going on shards with a high share of expired keys.
        while expired * 4 > examined && start.elapsed() < budget {
            let now = command::unix_ms();
            let (e, x) = server
                .keyspace
                .active_expire_shard(next_shard, now, 256, |db, key| {
                    on_active_expire(&server, db, key)
                });
            next_shard = (next_shard + 1) % SHARDS;
            examined = e;
            expired = x;
        }
        if server.latency.enabled() {
            server
                .latency
                .add_if_needed("expire-cycle", start.elapsed());
        }
        if let Some(perc) = (expired * 100).checked_div(examined) {
            server.expired_stale_perc.store(perc as u64, Relaxed);
        }
        server
            .expire_cycle
            .cpu_us
            .fetch_add(start.elapsed().as_micros() as u64, Relaxed);
    }
}
