//! Commands: the table, dispatch with every generic check, the context a
//! handler runs in, and the command families.
//!
//! One request: `dispatch` looks the command up without allocating, checks
//! arity, locks the shards its keys live in (all of them in ascending order,
//! so a multi-key command is atomic), runs the handler, and then, if the
//! command wrote, passes it through the one propagation point
//! ([`Ctx::propagate`]). Handlers parse, call storage, and write their reply;
//! they never lock, never await.

pub mod acl;
pub mod args;
mod bitmap;
pub mod collate;
pub mod error;
pub mod table;

pub mod call;
mod connection;
mod dump;
pub mod gates;
mod geo;
mod hash;
mod hll;
mod keys;
mod latency;
mod list;
mod lolwut;
pub(crate) mod memory;
mod multi;
pub mod typed;
pub use multi::discard_transaction;
mod cluster;
pub mod propagate;
pub mod pubsub;
mod replication;
mod server;
mod set;
mod slowlog;
mod sort;
mod stream;
mod string;
mod zset;

use std::sync::atomic::Ordering::Relaxed;

use resp::encode;

use call::Call;
pub use error::{CmdError, CmdResult};
use table::{Access, Command, CommandTable, Registry};

use crate::client::{Client, ReplyMode};
use crate::net::replies::Replies;
use crate::observe::stats::ThreadStats;
use crate::persistence::aof::Fsync;
use crate::server::Server;
use crate::storage::keyspace::View;

pub type Handler = fn(&mut Ctx, &[&[u8]]) -> CmdResult;

/// Every family registers its handlers here.
pub fn build_table() -> Result<CommandTable, table::TableError> {
    let mut r = Registry::default();
    string::register(&mut r);
    bitmap::register(&mut r);
    keys::register(&mut r);
    dump::register(&mut r);
    list::register(&mut r);
    hash::register(&mut r);
    hll::register(&mut r);
    set::register(&mut r);
    sort::register(&mut r);
    zset::register(&mut r);
    geo::register(&mut r);
    stream::register(&mut r);
    connection::register(&mut r);
    acl::register(&mut r);
    multi::register(&mut r);
    pubsub::register(&mut r);
    crate::scripting::register(&mut r);
    server::register(&mut r);
    memory::register(&mut r);
    lolwut::register(&mut r);
    slowlog::register(&mut r);
    replication::register(&mut r);
    cluster::register(&mut r);
    latency::register(&mut r);
    CommandTable::build(r)
}

/// The reply a blocked client gets when its timeout passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutReply {
    /// `*-1` (RESP2) / `_` (RESP3): every blocking command of Redis 7.0
    /// (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN/MAX, BZMPOP,
    /// XREAD, XREADGROUP).
    NullArray,
    /// `$-1` / `_`.
    NullBulk,
}

/// What a handler sees: the server, its client, the shards it holds, and
/// the reply buffer.
pub struct Ctx<'a, 's> {
    pub server: &'s Server,
    pub client: &'a mut Client,
    pub view: View<'s>,
    pub out: &'a mut Replies,
    pub cmd: &'a Command,
    /// Wall-clock time of this command, in Unix milliseconds: one reading
    /// per command, as Redis's `commandTimeSnapshot`.
    pub now_ms: u64,
    /// Keys changed by this command (Redis's `server.dirty` delta).
    pub dirty: u64,
    /// This worker's statistics (EXEC counts the commands it runs).
    pub stats: &'a ThreadStats,
    /// What to log instead of the command as sent, when replaying it would
    /// not reproduce its effect (relative TTLs, random picks...).
    pub propagate_as: Option<Vec<Vec<Vec<u8>>>>,
    /// `HDEL`s of hash fields this command found expired, or expired at
    /// once (HEXPIRE with a time past): logged before the command's own
    /// records, even when the command itself wrote nothing.
    pub field_deletions: Vec<Vec<Vec<u8>>>,
    /// Keys that may now serve clients blocked on them (a push to a list,
    /// an add to a sorted set...): the keys written, recorded by the
    /// propagation path (see `propagate`).
    pub ready: Vec<propagate::Ready>,
    /// What the connection does after this command's reply (see `Next`).
    pub next: Next,
    /// The reply is a push ((un)subscribe confirmations): it leaves even
    /// under CLIENT REPLY OFF/SKIP, as Redis's CLIENT_PUSHING.
    pub pushing: bool,
    /// Argument positions (bits, below 64) of keys the command may write
    /// by its key specs but left as they were this time (SMOVE of a member
    /// the destination already has): not changed keys, so WATCH and
    /// tracking see no change there, as Redis signals none.
    pub unchanged: u64,
}

/// What the connection does once a request has run: handlers say it
/// through `Ctx`, `dispatch` returns it, and `net` carries it out without
/// knowing which command asked.
#[must_use]
pub enum Next {
    /// Go on with the next request.
    Continue,
    /// Send the replies so far, then close the connection (QUIT, CLIENT
    /// KILL of itself, a deleted or changed user...).
    Close,
    /// CLIENT PAUSE holds the request back: send the replies so far, wait
    /// for the pause to end, then run the same request again.
    Postpone,
    /// Park the connection until one of the keys is written or the
    /// deadline passes, then run the command again (blocking commands).
    Park(Box<crate::client::BlockRequest>),
    /// The reply comes later: send the replies so far, then append what
    /// the future gives (WAIT's count of acknowledgements).
    Await(Pending),
    /// The connection becomes a replica's link once the replies so far are
    /// sent (SYNC, PSYNC).
    HandOver(Box<crate::replication::master::SyncRequest>),
    /// Values the request needs are on disk (the tier): send the replies
    /// so far, wait for the reads to put them back in memory, then run
    /// the same request again. Only a client that `parks_for_disk` gets
    /// it.
    Load(crate::tier::load::Loading),
}

/// A reply that comes later (see `Next::Await`).
pub type Pending = std::pin::Pin<Box<dyn std::future::Future<Output = Vec<u8>> + Send>>;

/// Time readings for one batch of requests. One clock read per command:
/// the end of one command is the start of the next, and wall-clock time is
/// derived from the monotonic reading (clock_gettime was 12% of a
/// pipelined profile at three reads per command). Readings are
/// nanoseconds of [`mono_ns`], so a command's duration is a subtraction.
pub struct Clock {
    batch_start: u64,
    batch_unix_ms: u64,
    last: u64,
}

impl Clock {
    /// When the batch started, in [`mono_ms`]'s milliseconds.
    #[inline]
    pub fn batch_start_ms(&self) -> u64 {
        self.batch_start / 1_000_000
    }

    pub fn start() -> Clock {
        let now = mono_ns();
        Clock {
            batch_start: now,
            batch_unix_ms: unix_ms(),
            last: now,
        }
    }

    #[inline]
    fn unix_ms_at(&self, t: u64) -> u64 {
        self.batch_unix_ms + t.saturating_sub(self.batch_start) / 1_000_000
    }
}

/// The clock `Instant` reads (CLOCK_MONOTONIC), in nanoseconds, as one
/// number: `Instant`'s differences subtract two normalised timespecs, and
/// a command takes two of them.
#[inline]
pub fn mono_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// [`mono_ns`] in milliseconds (client idle times).
pub fn mono_ms() -> u64 {
    mono_ns() / 1_000_000
}

/// Wall-clock time since the Unix epoch, in nanoseconds (0 before it).
fn unix_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

#[inline]
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    let r = unsafe { libc::clock_gettime(clock, &mut ts) };
    if r != 0 || ts.tv_sec < 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn unix_ms() -> u64 {
    unix_ns() / 1_000_000
}

/// Microseconds since the Unix epoch (MONITOR's timestamps).
pub fn unix_us() -> u64 {
    unix_ns() / 1_000
}

impl Ctx<'_, '_> {
    #[inline]
    pub fn db(&self) -> usize {
        self.client.db
    }

    /// Blocks the client on `keys` of the current database until one of
    /// them is written (see `propagate`) or `timeout` passes
    /// (`None`: forever). The handler writes no reply: when a key becomes
    /// ready the same command runs again from the start (and may block
    /// again); on timeout the client gets the null reply `timeout_reply`
    /// names. Clients are woken in FIFO order per key.
    pub fn block(
        &mut self,
        keys: &[&[u8]],
        timeout: Option<std::time::Duration>,
        timeout_reply: TimeoutReply,
    ) {
        self.next = Next::Park(Box::new(crate::client::BlockRequest {
            db: self.client.db,
            keys: keys.iter().map(|k| k.to_vec()).collect(),
            deadline: timeout.map(|t| std::time::Instant::now() + t),
            timeout_reply,
            rerun: None,
        }));
    }

    /// Like [`Ctx::block`], but on wake-up the connection runs `rerun`
    /// instead of the command as sent.
    pub fn block_rerun(
        &mut self,
        keys: &[&[u8]],
        timeout: Option<std::time::Duration>,
        timeout_reply: TimeoutReply,
        rerun: Vec<Vec<u8>>,
    ) {
        self.block(keys, timeout, timeout_reply);
        if let Next::Park(req) = &mut self.next {
            req.rerun = Some(rerun);
        }
    }

    /// The `T` at `key` of the current database, for a read (see
    /// `typed::read`).
    #[inline]
    pub fn read<T: typed::Type>(&mut self, key: &[u8]) -> Result<Option<&mut T>, CmdError> {
        typed::read(&mut self.view, self.client.db, key, self.now_ms)
    }

    /// The `T` at `key` of the current database, for a write (see
    /// `typed::write`).
    #[inline]
    pub fn write<T: typed::Type>(&mut self, key: &[u8]) -> Result<Option<&mut T>, CmdError> {
        typed::write(&mut self.view, self.client.db, key, self.now_ms)
    }

    /// `f` on the `T` at `key` of the current database, or on `make()`
    /// stored there if `f` leaves something in it (see
    /// `typed::create_or`).
    #[inline]
    pub fn create_or<T: typed::Collection, R>(
        &mut self,
        key: &[u8],
        make: impl FnOnce() -> T,
        f: impl FnOnce(&mut T) -> Result<R, CmdError>,
    ) -> Result<R, CmdError> {
        typed::create_or(&mut self.view, self.client.db, key, self.now_ms, make, f)
    }

    /// The connection closes once this reply is sent.
    pub fn close_after_reply(&mut self) {
        self.next = Next::Close;
    }

    /// True when this run is the re-run of a blocked command after one of
    /// its keys was signalled.
    pub fn woken(&self) -> bool {
        self.client.woken
    }

    /// Whether an expiry time `at` (unix ms) set now means the key is gone
    /// at once, as Redis's checkAlreadyExpired: never for the primary's
    /// stream on a replica, which keeps the key until the primary's DEL.
    #[inline]
    pub fn already_expired(&self, at: i64) -> bool {
        at <= self.now_ms as i64 && !self.client.from_primary
    }

    /// Logs `cmds` instead of the command as sent (see `propagate_as`).
    pub fn propagate_instead(&mut self, cmds: Vec<Vec<Vec<u8>>>) {
        self.propagate_as = Some(cmds);
    }

    /// Publishes keyspace event `event` for `key` of the current database
    /// (a no-op unless notify-keyspace-events selects `class`).
    #[inline]
    pub fn notify(&mut self, class: u32, event: &str, key: &[u8]) {
        self.publish_new_keys();
        self.server.notify(class, event, key, self.client.db);
    }

    /// The `new` events of the keys this command added so far: before the
    /// command's own event, as Redis's dbAdd publishes it when it adds.
    #[inline]
    pub fn publish_new_keys(&mut self) {
        if self.view.has_new_keys() {
            self.publish_new_keys_now();
        }
    }

    #[cold]
    #[inline(never)]
    fn publish_new_keys_now(&mut self) {
        for (db, key) in self.view.take_new_keys() {
            self.server
                .notify(crate::clients::notify::NEW, "new", &key, db);
        }
    }

    /// The thresholds for compact collection encodings.
    #[inline]
    pub fn limits(&self) -> crate::storage::value::EncodingLimits {
        self.server.encoding_limits()
    }

    #[inline]
    pub fn proto(&self) -> u8 {
        self.client.proto
    }

    #[inline]
    pub fn ok(&mut self) {
        self.out.extend_from_slice(b"+OK\r\n");
    }

    #[inline]
    pub fn simple(&mut self, s: &[u8]) {
        encode::simple(self.out, s);
    }

    #[inline]
    pub fn bulk(&mut self, b: &[u8]) {
        encode::bulk(self.out, b);
    }

    #[inline]
    pub fn int(&mut self, n: i64) {
        encode::integer(self.out, n);
    }

    #[inline]
    pub fn null(&mut self) {
        encode::null(self.out, self.client.proto);
    }

    #[inline]
    pub fn null_array(&mut self) {
        encode::null_array(self.out, self.client.proto);
    }

    #[inline]
    pub fn array(&mut self, n: usize) {
        encode::array(self.out, n);
    }

    #[inline]
    pub fn map(&mut self, n: usize) {
        encode::map(self.out, n, self.client.proto);
    }

    #[inline]
    pub fn set(&mut self, n: usize) {
        encode::set(self.out, n, self.client.proto);
    }

    pub fn boolean(&mut self, b: bool) {
        encode::boolean(self.out, b, self.client.proto);
    }

    pub fn verbatim(&mut self, s: &[u8]) {
        encode::verbatim(self.out, b"txt", s, self.client.proto);
    }

    /// A HELP reply: an array of status lines, as Redis's addReplyHelp,
    /// whose common last line 7.2 reworded.
    pub fn help(&mut self, lines: &[&str]) {
        encode::array(self.out, lines.len());
        for &l in lines {
            let l = if l == "    Prints this help." && crate::speaks_7_4() {
                "    Print this help."
            } else {
                l
            };
            encode::simple(self.out, l.as_bytes());
        }
    }

    pub fn error(&mut self, msg: &str) {
        encode::error(self.out, msg.as_bytes());
    }
}

fn unknown_command(argv: &[&[u8]]) -> CmdError {
    let mut args = String::new();
    for a in &argv[1..] {
        if args.len() >= 128 {
            break;
        }
        let room = 128 - args.len();
        args.push_str(&format!("'{}' ", error::truncate(a, room)));
    }
    CmdError::new(format!(
        "ERR unknown command '{}', with args beginning with: {}",
        error::truncate(argv[0], 128),
        args
    ))
}

/// Why a request names no command it may run (see [`lookup`]).
pub enum Unresolved<'t> {
    UnknownCommand,
    UnknownSubcommand,
    /// The command, with the wrong number of arguments.
    Arity(&'t Command),
}

/// The resolver: the command `argv` names (following subcommands), its
/// arity checked. Requests (`Call::resolve`), scripts' `redis.call` and
/// the busy hook all resolve through it; each says the refusal its own way.
pub fn lookup<'t>(table: &'t CommandTable, argv: &[&[u8]]) -> Result<&'t Command, Unresolved<'t>> {
    let Some(mut cmd) = table.lookup(argv[0]) else {
        return Err(Unresolved::UnknownCommand);
    };
    if !cmd.subcommands.is_empty() && argv.len() >= 2 {
        cmd = table
            .subcommand(cmd, argv[1])
            .ok_or(Unresolved::UnknownSubcommand)?;
    }
    let argc = argv.len() as i64;
    if (cmd.arity > 0 && argc != cmd.arity) || argc < -cmd.arity {
        return Err(Unresolved::Arity(cmd));
    }
    Ok(cmd)
}

/// [`lookup`], refused with a client's error reply.
pub fn resolve<'t>(table: &'t CommandTable, argv: &[&[u8]]) -> Result<&'t Command, CmdError> {
    lookup(table, argv).map_err(|u| match u {
        Unresolved::UnknownCommand => unknown_command(argv),
        Unresolved::UnknownSubcommand => error::unknown_subcommand(argv[0], argv[1]),
        Unresolved::Arity(cmd) => error::wrong_arity(&cmd.name),
    })
}

/// The command a request [`resolve`] refused names, if it names one (a
/// wrong number of arguments): Redis counts the refusal in its
/// rejected_calls.
#[cold]
pub fn refused_command<'t>(table: &'t CommandTable, argv: &[&[u8]]) -> Option<&'t Command> {
    let cmd = table.lookup(argv[0])?;
    if !cmd.subcommands.is_empty() && argv.len() >= 2 {
        return table.subcommand(cmd, argv[1]);
    }
    Some(cmd)
}

/// The gates' view of the server and the requesting client.
struct Gates<'a> {
    server: &'a Server,
    client: &'a Client,
}

impl gates::World for Gates<'_> {
    #[inline]
    fn authenticated(&self) -> bool {
        self.server.acl.authenticated(&self.client.auth)
    }

    #[inline]
    fn acl_denied(&self, cmd: &Command, argv: &[&[u8]]) -> Option<CmdError> {
        let context = if self.client.tx.is_some() {
            crate::acl::log::Context::Multi
        } else {
            crate::acl::log::Context::Toplevel
        };
        acl::check(self.server, self.client, cmd, argv, context)
            .err()
            .map(|d| acl::denied_error(cmd, d, &self.client.info.user.lock()))
    }

    #[inline]
    fn in_multi(&self) -> bool {
        self.client.tx.is_some()
    }

    fn multi_writes(&self) -> bool {
        self.client.tx.as_ref().is_some_and(|tx| tx.writes)
    }

    fn multi_denyoom(&self) -> bool {
        self.client.tx.as_ref().is_some_and(|tx| tx.denyoom)
    }

    #[inline]
    fn out_of_memory(&self) -> bool {
        // One load while no limit is set. A script past
        // busy-reply-threshold holds shards eviction would wait for; Redis
        // too skips eviction while one runs.
        if self.client.from_primary {
            // The primary's stream always applies; a tiered replica still
            // moves values to disk to stay under its limit.
            crate::memory::evict::spill_only(self.server);
            crate::memory::evict::set_pre_command_oom(false);
            return false;
        }
        let oom = self.server.memory.maxmemory() != 0
            && !crate::scripting::any_busy()
            && crate::memory::evict::perform(self.server) == crate::memory::evict::Outcome::Fail;
        crate::memory::evict::set_pre_command_oom(oom);
        oom
    }

    #[inline]
    fn disk_error(&self) -> Option<CmdError> {
        // Three loads in the common case; the error path is out of line.
        if (self.server.snapshots.last_ok.load(Relaxed) && self.server.aof.write_ok())
            || self.client.from_primary
        {
            return None;
        }
        disk_error(self.server)
    }

    #[inline]
    fn paused(&self, flags: u32) -> bool {
        match self.server.pause.mode() {
            crate::clients::pause::NONE => false,
            _ if self.client.info.monitor.load(Relaxed) || self.client.from_primary => false,
            crate::clients::pause::ALL => true,
            _ => {
                flags & (table::flag::WRITE | table::flag::REPLICATES) != 0
                    || (flags & table::flag::EXEC != 0 && self.multi_writes())
            }
        }
    }

    #[inline]
    fn redirect(&self, call: &Call) -> Option<CmdError> {
        if !self.server.cluster.enabled() {
            return None;
        }
        crate::cluster::redirect::check(self.server, self.client, call)
    }

    #[inline]
    fn primary_redirect(&self, call: &Call) -> Option<CmdError> {
        if !self.client.capa_redirect || self.client.from_primary {
            return None;
        }
        primary_redirect(self.server, self.client, call)
    }

    fn replica_client(&self) -> bool {
        self.client.info.monitor.load(Relaxed)
            || self.client.info.kind.load(Relaxed) == crate::client::KIND_REPLICA
    }

    #[inline]
    fn readonly_replica(&self) -> bool {
        self.server.keyspace.is_replica()
            && !self.client.from_primary
            && self.server.repl.read_only.load(Relaxed)
    }

    #[inline]
    fn too_few_replicas(&self) -> bool {
        self.server.repl.too_few_replicas()
    }

    #[inline]
    fn stale_replica(&self) -> bool {
        self.server.keyspace.is_replica()
            && !self.client.from_primary
            && self.server.repl.link_state.load(Relaxed) != crate::replication::LINK_UP
            && !self.server.repl.serve_stale.load(Relaxed)
    }

    fn subscribed_resp2(&self) -> bool {
        self.client.proto == 2 && self.client.pubsub.is_some() && self.client.subscriptions() > 0
    }

    #[inline]
    fn busy(&self, call: &Call) -> Option<CmdError> {
        if !crate::scripting::any_busy() {
            return None;
        }
        crate::scripting::busy_error(self.server, call).map(CmdError::new)
    }
}

/// Valkey 8.0's `-REDIRECT host:port` for a client that claimed `CLIENT
/// CAPA redirect`, on a replica outside cluster mode: its writes, and its
/// reads unless it sent READONLY, go to the primary (EXEC by what it
/// queued).
#[cold]
fn primary_redirect(server: &Server, client: &Client, call: &Call) -> Option<CmdError> {
    if server.cluster.enabled() || !server.keyspace.is_replica() {
        return None;
    }
    let primary = server.repl.primary()?;
    let tx = client
        .tx
        .as_ref()
        .filter(|_| call.cmd.has(table::flag::EXEC));
    let writes = call.has(table::flag::WRITE) || tx.is_some_and(|t| t.writes);
    let reads = call.has(table::flag::READONLY) || tx.is_some_and(|t| t.reads);
    (writes || (reads && !client.cluster_readonly))
        .then(|| CmdError::new(format!("REDIRECT {}:{}", primary.host, primary.port)))
}

/// The MISCONF error while writes are refused after a failed save or log
/// write, in Redis's order (writeCommandsDeniedByDiskError): the snapshot
/// first, then the log. Dispatch's gate and scripts' `redis.call` ask.
#[inline]
pub fn disk_error(server: &Server) -> Option<CmdError> {
    if server.rdb_writes_refused() {
        Some(error::MISCONF_RDB)
    } else if server.aof.enabled() && !server.aof.write_ok() {
        Some(aof_misconf(server))
    } else {
        None
    }
}

#[cold]
fn aof_misconf(server: &Server) -> CmdError {
    CmdError::new(format!(
        "MISCONF Errors writing to the AOF file: {}",
        server.aof.last_error()
    ))
}

/// Runs one request, appends its reply to `out`, and says what the
/// connection does next.
pub fn dispatch(
    server: &Server,
    client: &mut Client,
    argv: &[&[u8]],
    out: &mut Replies,
    stats: &ThreadStats,
    clock: &mut Clock,
) -> Next {
    let in_flight = InFlight::enter(&stats.in_flight);
    let next = run_request(server, client, argv, out, stats, clock);
    drop(in_flight);
    // Out of flight itself first: two pausers must not wait on each other.
    if std::mem::take(&mut client.pause_barrier) {
        server.stats.wait_in_flight();
    }
    next
}

/// This worker's command past the pause gate (`pause::InFlight`), until
/// dropped.
struct InFlight<'a>(Option<&'a crate::clients::pause::InFlight>);

impl<'a> InFlight<'a> {
    #[inline]
    fn enter(f: &'a crate::clients::pause::InFlight) -> InFlight<'a> {
        InFlight(f.enter().then_some(f))
    }
}

impl Drop for InFlight<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Some(f) = self.0 {
            f.leave();
        }
    }
}

fn run_request(
    server: &Server,
    client: &mut Client,
    argv: &[&[u8]],
    out: &mut Replies,
    stats: &ThreadStats,
    clock: &mut Clock,
) -> Next {
    let mark = out.len();
    let mut call = match Call::resolve(&server.commands, argv) {
        Ok(call) => call,
        Err(e) => {
            // Refused as the command it names, if any (a wrong number of
            // arguments: `EXEC x` inside MULTI discards the transaction,
            // as Redis's rejectCommand).
            let cmd = refused_command(&server.commands, argv);
            reject(server, client, cmd, e, out, stats);
            finish_reply(client, out, mark, false);
            return Next::Continue;
        }
    };
    let cmd = call.cmd;
    if cmd.has(table::flag::SCRIPT_CALL) {
        if let Some(declared) = crate::scripting::declared_flags(server, cmd, argv) {
            call.declare_flags(declared);
        }
    }
    // Set before the gates, as Redis's processCommand does: a refused
    // command is the one CLIENT LIST (and ACL LOG's client-info) shows.
    client.info.last_cmd.store(cmd.id as u32, Relaxed);
    server.acl.refresh(&mut client.auth);
    match gates::check(&Gates { server, client }, &call) {
        None => {}
        Some(gates::Stop::Queue) => {
            if let Some(tx) = client.tx.as_mut() {
                tx.queue.push(call::Queued::of(&call));
                client.info.multi_len.store(tx.queue.len() as i64, Relaxed);
                tx.writes |= call.has(table::flag::WRITE);
                tx.denyoom |= call.has(table::flag::DENYOOM);
                tx.reads |= call.has(table::flag::READONLY);
            }
            encode::simple(out, b"QUEUED");
            if server.cluster.slot_stats.enabled() {
                count_queued_slot_usage(server, client, &call, out.written_since(mark));
            }
            finish_reply(client, out, mark, false);
            return Next::Continue;
        }
        // (`Fail` is a script's; a client's request is never refused so.)
        Some(gates::Stop::Reject(e) | gates::Stop::Fail(e)) => {
            reject(server, client, Some(cmd), e, out, stats);
            finish_reply(client, out, mark, false);
            return Next::Continue;
        }
        Some(gates::Stop::Redirect(e)) => {
            stats.rejected(Some(cmd.id));
            if let Some(tx) = client.tx.as_mut() {
                if cmd.has(table::flag::EXEC) {
                    multi::discard_transaction(server, client);
                } else {
                    tx.doomed = true;
                }
            }
            reply_error(out, stats, e.0.as_bytes());
            finish_reply(client, out, mark, false);
            return Next::Continue;
        }
        Some(gates::Stop::Postpone) => return Next::Postpone,
    }
    let start = clock.last;
    // The slot CLUSTER SLOT-STATS adds this request to, found before EXEC
    // spends its queue.
    let stats_slot = (server.cluster.slot_stats.enabled() && server.cluster.enabled())
        .then(|| crate::cluster::slot_stats::request_slot(client, &call))
        .flatten();
    let mut view = lock_for(server, &call);
    if server.cluster.enabled() {
        // Fencing, and a slot migrating out: the lease may have lapsed, and
        // MIGRATE taken a key, since the gate.
        if let Some(e) = crate::cluster::redirect::recheck(server, client, &call, &mut view) {
            drop(view);
            stats.rejected(Some(cmd.id));
            reply_error(out, stats, e.0.as_bytes());
            finish_reply(client, out, mark, false);
            return Next::Continue;
        }
    }
    // Values on disk are read off the worker while the connection waits;
    // the request runs once they are back (see `tier::load`).
    if client.parks_for_disk && crate::tier::any_spilled() {
        if let Some(loading) = crate::tier::load::missing(
            server,
            client.db,
            &call,
            &mut view,
            clock.unix_ms_at(start),
            !client.values_looked_at,
        ) {
            drop(view);
            return Next::Load(loading);
        }
    }
    let run = execute(
        server,
        client,
        &call,
        out,
        stats,
        view,
        clock.unix_ms_at(start),
    );
    drop(run.view);
    // ASKING covers the next command (or transaction), as Redis's
    // resetClient.
    if client.asking && client.tx.is_none() && cmd.name != "asking" {
        client.asking = false;
    }
    // After the shards are released, so a woken client does not wait on
    // the locks we held.
    propagate::wake(server, run.ready);
    if server.tracking.active() {
        tracking_after(server, client, cmd);
    }
    let end = mono_ns();
    clock.last = end;
    let took = std::time::Duration::from_nanos(end.saturating_sub(start));
    // A blocking command is one call however many times it runs (Redis
    // counts the request; a blocked client served later adds its time),
    // and its latency is taken once, when it no longer waits.
    let parked = matches!(run.next, Next::Park(_));
    stats.record_run(
        cmd.id,
        took,
        run.failed,
        !parked && server.stats.latency_tracking.load(Relaxed),
        !client.woken,
    );
    // Slow log and latency monitor: one compare unless slow (a blocking
    // command is logged when its wait ends, see `slowlog`).
    let us = took.as_micros() as u64;
    if us >= server.slowlog.watch_us() || cmd.has(table::flag::BLOCKING) {
        crate::observe::slowlog::command_done(server, client, cmd, argv, us, parked);
    }
    if let Some(slot) = stats_slot.filter(|_| !parked) {
        add_slot_usage(server, slot, argv, cmd, took, out.written_since(mark));
    }
    finish_reply(client, out, mark, run.pushing);
    run.next
}

/// CLUSTER SLOT-STATS: a queued request's bytes and its `+QUEUED` (its
/// time is EXEC's).
#[cold]
fn count_queued_slot_usage(server: &Server, client: &Client, call: &Call, reply: usize) {
    if !server.cluster.enabled() {
        return;
    }
    if let Some(slot) = crate::cluster::slot_stats::request_slot(client, call) {
        let zero = std::time::Duration::ZERO;
        add_slot_usage(server, slot, call.argv, call.cmd, zero, reply);
    }
}

#[cold]
fn add_slot_usage(
    server: &Server,
    slot: usize,
    argv: &[&[u8]],
    cmd: &Command,
    took: std::time::Duration,
    reply: usize,
) {
    use crate::cluster::slot_stats::{request_bytes, Usage};
    server.cluster.slot_stats.add(
        slot,
        Usage {
            cpu_usec: took.as_micros() as u64,
            bytes_in: request_bytes(argv, cmd.has(table::flag::EXEC)),
            bytes_out: reply as u64,
        },
    );
}

/// After a command while some client tracks: BCAST announcements of the
/// keys it wrote, and CLIENT CACHING's flag spent (it covers the next
/// command, or the transaction EXEC runs, as Redis's resetClient).
#[cold]
fn tracking_after(server: &Server, client: &mut Client, cmd: &Command) {
    server.tracking.flush_broadcast(&server.clients);
    let t = &client.info.tracking;
    if t.has(crate::clients::tracking::flag::CACHING)
        && client.tx.is_none()
        && !cmd.name.starts_with("client")
    {
        t.flags
            .fetch_and(!crate::clients::tracking::flag::CACHING, Relaxed);
    }
}

/// A request refused before its handler (Redis's rejectCommand): counted,
/// and inside MULTI the transaction is doomed; a refused EXEC discards it
/// at once.
fn reject(
    server: &Server,
    client: &mut Client,
    cmd: Option<&Command>,
    e: CmdError,
    out: &mut Vec<u8>,
    stats: &ThreadStats,
) {
    stats.rejected(cmd.map(|c| c.id));
    if let Some(tx) = client.tx.as_mut() {
        if cmd.is_some_and(|c| c.has(table::flag::EXEC)) {
            multi::discard_transaction(server, client);
            let msg = format!("EXECABORT Transaction discarded because of: {}", e.0);
            reply_error(out, stats, msg.as_bytes());
            return;
        }
        tx.doomed = true;
    }
    reply_error(out, stats, e.0.as_bytes());
}

/// Counts the error replies a script's result held (Redis counts those
/// its commands returned when they ran); whether it held any, which makes
/// the script's call a failed one.
#[cold]
fn script_errors(stats: &ThreadStats) -> bool {
    let (errors, any) = crate::scripting::take_reply_errors();
    for e in errors {
        stats.error_reply(&e);
    }
    any
}

/// Writes the error reply `msg` (without its '-') and counts it in
/// errorstats: the one way an error reaches a client.
pub fn reply_error(out: &mut Vec<u8>, stats: &ThreadStats, msg: &[u8]) {
    stats.error_reply(msg);
    encode::error(out, msg);
}

/// The one shard every key of `argv` lives in, for a command that touches
/// nothing but its keys; `None` for anything else (no keys, several
/// shards, the whole keyspace, an unknown command). A replica applies
/// commands of different shards in parallel (`replication::replica`).
pub fn single_shard(server: &Server, argv: &[&[u8]]) -> Option<usize> {
    let cmd = lookup(&server.commands, argv).ok()?;
    // Containers' subcommands are never a shard's alone.
    if cmd.name.contains('|') || !cmd.subcommands.is_empty() || cmd.access != Access::Keys {
        return None;
    }
    let call = Call::new(cmd, argv);
    let (first, rest) = call.keys().split_first()?;
    let shard = crate::storage::keyspace::shard_of(first.slot());
    rest.iter()
        .all(|k| crate::storage::keyspace::shard_of(k.slot()) == shard)
        .then_some(shard)
}

/// Locks the shards a request needs.
pub fn lock_for<'s>(server: &'s Server, call: &Call) -> View<'s> {
    match call.cmd.access {
        Access::None => server.keyspace.none(),
        Access::All => server.keyspace.lock_all(),
        Access::Keys => match call.keys() {
            [] => server.keyspace.none(),
            // (dispatch drops the view before the request's argv.)
            [key] => server
                .keyspace
                .lock_slot(key.slot())
                .knowing(call.argv[key.pos()], key.slot()),
            keys => server.keyspace.lock_slots(keys.iter().map(|k| k.slot())),
        },
    }
}

/// What [`execute`] hands back: the view (still locked), the keys to
/// signal once it is released, and whether the command failed.
pub struct Executed<'s> {
    pub view: View<'s>,
    pub ready: Vec<propagate::Ready>,
    pub failed: bool,
    /// What the handler asked the connection to do next.
    pub next: Next,
    /// The reply is a push (see `Ctx::pushing`).
    pub pushing: bool,
}

/// Runs `cmd`'s handler in `view`, writes an error reply if it fails, and
/// passes a write through the propagation point while the shards are
/// still held. Shared by dispatch and EXEC.
#[allow(clippy::too_many_arguments)]
pub fn execute<'s>(
    server: &'s Server,
    client: &mut Client,
    call: &Call,
    out: &mut Replies,
    stats: &ThreadStats,
    view: View<'s>,
    now_ms: u64,
) -> Executed<'s> {
    let (cmd, argv) = (call.cmd, call.argv);
    let mark = out.len();
    let Some(handler) = cmd.handler else {
        reply_error(
            out,
            stats,
            error::unknown_subcommand(argv[0], b"").0.as_bytes(),
        );
        return Executed {
            view,
            ready: Vec::new(),
            failed: true,
            next: Next::Continue,
            pushing: false,
        };
    };
    let mut view = view;
    if client.from_primary {
        view.obey_primary();
    }
    // The `new` keyspace event: keys added are recorded while selected.
    view.record_new(server.notify_flags.load(Relaxed) & crate::clients::notify::NEW != 0);
    // CLIENT NO-TOUCH: set for each command (EXEC and scripts run several
    // on one view), TOUCH itself excepted.
    if client.info.no_touch.load(Relaxed) {
        view.touching(cmd.name == "touch");
    }
    // A rewrite in progress must capture these shards as they are before
    // this command changes them (see persistence::aof).
    // (A read-only command changes nothing an image holds: keys it finds
    // expired are deleted, but an image's expired keys are never loaded.)
    if !cmd.has(table::flag::READONLY) && (server.snapshots.in_progress() || server.aof.rewriting())
    {
        // A command changes only the slots of its keys (in any database:
        // MOVE, COPY DB), even one that locks every shard to read (SORT
        // writes its STORE key only). The keyless ones that change more
        // (FLUSHALL, FLUSHDB, SWAPDB) tell the captures what they do
        // (persistence::capture), which then copy nothing.
        let slots: Vec<usize> = call.keys().iter().map(|k| k.slot()).collect();
        server.aof.before_execute(&mut view, Some(&slots));
        server.snapshots.before_execute(&mut view, Some(&slots));
    }
    // Scripts are shown before they run, their commands after (Redis's
    // EVAL and FCALL feed the monitors themselves, first).
    if server.monitors.active() && cmd.has(table::flag::SCRIPT_CALL) {
        feed_monitors(server, client, argv);
    }
    let mut cx = Ctx {
        server,
        client,
        view,
        out,
        cmd,
        now_ms,
        dirty: 0,
        ready: Vec::new(),
        stats,
        propagate_as: None,
        field_deletions: Vec::new(),
        next: Next::Continue,
        pushing: false,
        unchanged: 0,
    };
    let failed = match handler(&mut cx, argv) {
        Ok(()) if cmd.has(table::flag::SCRIPT_CALL) => script_errors(stats),
        Ok(()) => false,
        // A blocked client is served only by a key of the type it waits
        // for (as Redis's handleClientsBlockedOnKeys): woken by a write
        // that left something else there, it keeps waiting.
        Err(e) if cx.client.woken && cmd.has(table::flag::BLOCKING) && e == error::WRONGTYPE => {
            cx.out.truncate(mark);
            cx.next = Next::Park(Box::new(crate::client::BlockRequest::keep_waiting(
                cx.client.db,
            )));
            false
        }
        Err(e) => {
            cx.out.truncate(mark);
            reply_error(cx.out, stats, e.0.as_bytes());
            true
        }
    };
    // Keys added without an event of the command's after them.
    cx.publish_new_keys();
    cx.propagate(argv, failed);
    if !cx.client.script_monitor_lines.is_empty() && cmd.has(table::flag::SCRIPT_CALL) {
        flush_script_monitor_lines(server, cx.client);
    }
    if !cx.client.script_slowlog.is_empty() && cmd.has(table::flag::SCRIPT_CALL) {
        crate::observe::slowlog::flush_script(server, cx.client);
    }
    // MONITOR: after the command ran (a blocked command once, when it
    // first ran), unless `admin` or `skip_monitor`.
    if server.monitors.active()
        && !cmd.has(table::flag::ADMIN | table::flag::SKIP_MONITOR)
        && !cx.client.woken
    {
        feed_monitors(server, cx.client, argv);
    }
    // Client-side caching: the keys a tracking client read (Redis's
    // call(): also those of commands inside EXEC and scripts, whose own
    // keys are not tracked as reads). After the keys it found expired were
    // invalidated, as Redis deletes them in the lookup, before.
    if cmd.has(table::flag::READONLY) && cx.client.info.tracking.remembers() {
        remember_keys(&cx, call);
    }
    if cmd.access != Access::None
        && server.aof.enabled()
        && server.aof.fsync_policy() == Fsync::Always
    {
        // What this command read may be a write still on its way to disk:
        // the reply waits for the log as far as it reached (see
        // `Aof::appended_hint`). PING, INFO and the like read no data.
        cx.client.aof_offset = cx.client.aof_offset.max(server.aof.appended_hint());
    }
    let Ctx {
        view,
        ready,
        next,
        pushing,
        ..
    } = cx;
    Executed {
        view,
        ready,
        failed,
        next,
        pushing,
    }
}

/// MONITOR's line for a command that ran. A script's commands wait in
/// the client until the script ends (a script that restarts with more
/// shards locked runs its first commands twice; they are shown once).
#[cold]
fn feed_monitors(server: &Server, client: &mut Client, argv: &[&[u8]]) {
    use crate::clients::monitor::{Monitors, Origin};
    if client.in_script {
        let line = Monitors::line(Origin::Lua, "", client.db, argv);
        client.script_monitor_lines.push(line);
        return;
    }
    let unixsocket = if client.info.unix {
        server
            .config
            .read()
            .settings()
            .unixsocket
            .clone()
            .unwrap_or_default()
    } else {
        String::new()
    };
    let line = Monitors::line(Origin::Client(&client.info), &unixsocket, client.db, argv);
    server.monitors.send(line);
}

/// A script ended: its commands' MONITOR lines leave.
#[cold]
fn flush_script_monitor_lines(server: &Server, client: &mut Client) {
    for line in std::mem::take(&mut client.script_monitor_lines) {
        server.monitors.send(line);
    }
}

#[cold]
fn remember_keys(cx: &Ctx, call: &Call) {
    // A read-only script's own keys are not a read; a read inside a
    // script remembers the script's declared keys, all of them (Redis's
    // call() remembers the keys of the script's caller, the EVAL or
    // FCALL, whatever the command read): see `scripting::run`.
    if cx.client.in_script || matches!(cx.cmd.name.as_str(), "eval_ro" | "evalsha_ro" | "fcall_ro")
    {
        return;
    }
    remember(cx.server, cx.client.info.id, call.key_args());
}

/// Remembers `keys` as read by tracking client `id`.
#[cold]
pub fn remember<'k>(server: &Server, id: u64, keys: impl Iterator<Item = &'k [u8]>) {
    server.tracking.remember(id, keys);
    server.tracking.limit(&server.clients);
}

/// Applies CLIENT REPLY OFF/SKIP by dropping the reply just written,
/// unless it is a push.
#[inline]
fn finish_reply(client: &mut Client, out: &mut Replies, mark: usize, keep: bool) {
    match client.reply_mode {
        ReplyMode::On => {}
        ReplyMode::Off if keep => {}
        ReplyMode::Off => out.truncate(mark),
        ReplyMode::Skip => {
            if !keep {
                out.truncate(mark);
            }
            client.reply_mode = ReplyMode::On;
        }
        ReplyMode::SkipNext => client.reply_mode = ReplyMode::Skip,
    }
}
