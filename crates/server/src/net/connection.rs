//! One client connection: read a batch, decode and dispatch every complete
//! request in it in order, write all their replies with one write.
//!
//! Reading again only after the replies are written is the backpressure: a
//! client that pipelines without reading cannot make us buffer without
//! bound. Between batches a connection may move to another worker (see
//! `balance`): its [`Session`] travels with the socket.

use std::io::IoSlice;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use resp::RequestDecoder;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::balance::NO_MIGRATION;
use super::replies::Replies;
use super::tls::TlsStream;
use super::{into_tokio_tcp, into_tokio_unix, Incoming, RawStream, Stream};
use crate::client::{Client, ClientInfo};
use crate::command::{self, Next};
use crate::observe::stats::ThreadStats;
use crate::server::Server;

/// Read size when no large bulk is pending (Redis's PROTO_IOBUF_LEN).
const READ_CHUNK: usize = 16 * 1024;
/// The most one read asks for, when a client keeps the socket full.
const MAX_READ: usize = 256 * 1024;
/// Replies beyond this are written out mid-batch instead of accumulating.
const FLUSH_AT: usize = 1024 * 1024;

/// `client-query-buffer-limit`: read on every read, so kept out of the
/// config lock (set by [`configure`]).
static QUERY_BUFFER_LIMIT: AtomicUsize = AtomicUsize::new(1 << 30);
/// `client-output-buffer-limit`'s `normal` and `pubsub` classes: hard,
/// soft, soft seconds each (0: none).
static OUTPUT_LIMITS: [AtomicU64; 6] = [const { AtomicU64::new(0) }; 6];

/// Re-reads the limits connections check on every batch (at start and
/// after CONFIG SET).
pub fn configure(settings: &crate::config::Settings) {
    QUERY_BUFFER_LIMIT.store(settings.client_query_buffer_limit, Relaxed);
    use crate::config::BufferClass;
    for (i, class) in [BufferClass::Normal, BufferClass::Pubsub]
        .into_iter()
        .enumerate()
    {
        let l = settings.buffer_limit(class);
        for (j, v) in [l.hard, l.soft, l.soft_secs].into_iter().enumerate() {
            OUTPUT_LIMITS[i * 3 + j].store(v, Relaxed);
        }
    }
}

/// A client's output buffer limits (Redis's client-output-buffer-limit
/// class: `pubsub` while it has subscriptions, else `normal`; a replica's
/// connection, `replica`, is limited where its stream is sent:
/// `replication::Replication`).
#[derive(Clone, Copy)]
struct OutputLimit {
    /// Unsent replies above this close the client (usize::MAX: none).
    hard: usize,
    /// ... and above this for longer than `soft_secs` (usize::MAX: none).
    soft: usize,
    soft_secs: u64,
}

impl OutputLimit {
    fn of(client: &Client) -> OutputLimit {
        let base = if client.subscriptions() > 0 { 3 } else { 0 };
        let bytes = |i: usize| match OUTPUT_LIMITS[base + i].load(Relaxed) {
            0 => usize::MAX,
            n => n as usize,
        };
        OutputLimit {
            hard: bytes(0),
            soft: bytes(1),
            soft_secs: OUTPUT_LIMITS[base + 2].load(Relaxed),
        }
    }
}

/// What a write of replies may wait for before the client is closed
/// (see [`write_out`]).
#[derive(Clone, Copy)]
struct WriteGuard {
    /// `timeout`: no byte written for this long (a client not reading its
    /// replies is idle, as in Redis, where the write refreshes it).
    idle: Option<Duration>,
    /// The output buffer limit's soft part.
    limit: Option<OutputLimit>,
}

impl WriteGuard {
    const NONE: WriteGuard = WriteGuard {
        idle: None,
        limit: None,
    };

    /// The guard of a normal client's replies.
    fn of(server: &Server, client: &Client) -> WriteGuard {
        // Subscribers are never idle (Redis's clientsCronHandleTimeout).
        let timeout = match client.subscriptions() {
            0 => server.timeout_secs.load(Relaxed),
            _ => 0,
        };
        let limit = OutputLimit::of(client);
        WriteGuard {
            idle: (timeout > 0).then(|| Duration::from_secs(timeout)),
            limit: (limit.soft != usize::MAX).then_some(limit),
        }
    }
}

/// Whether the client has authenticated, or needs not: one that must
/// still authenticate (Redis's authRequired) is held to Redis's tighter
/// request limits (`resp::request::UNAUTH_MAX_MULTIBULK`, `UNAUTH_MAX_BULK`:
/// `-ERR Protocol error: unauthenticated multibulk length` / `bulk
/// length`).
fn authenticated(server: &Server, client: &Client) -> bool {
    server.acl.authenticated(&client.auth)
}

/// Redis's reply to a client refused by protected mode.
const DENIED: &[u8] = b"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// Protected mode (Redis 7.0's clientAcceptHandler): while it is on and
/// the default user has no password, only Unix-socket clients and TCP
/// clients from 127.0.0.1 or ::1 are served.
fn refused_by_protected_mode(server: &Server, info: &ClientInfo) -> bool {
    if info.unix || !server.settings().protected_mode {
        return false;
    }
    if !server.acl.default_user().nopass {
        return false;
    }
    let ip = match info.addr.rsplit_once(':') {
        Some((ip, _)) => ip.trim_start_matches('[').trim_end_matches(']'),
        None => info.addr.as_str(),
    };
    ip != "127.0.0.1" && ip != "::1"
}

/// Closes a client over its output buffer limit, as Redis's
/// closeClientOnOutputBufferLimitReached: logged; the replies not yet
/// written are dropped.
fn over_output_limit(client: &Client, pending: usize) -> std::io::Error {
    tracing::warn!(
        id = client.info.id,
        addr = %client.info.addr,
        pending,
        "Client scheduled to be closed ASAP for overcoming of output buffer limits."
    );
    client.info.killed.store(true, Relaxed);
    std::io::Error::other("output buffer limit reached")
}

/// Everything a connection needs besides its socket.
pub struct Session {
    client: Client,
    rbuf: Vec<u8>,
    /// Bytes of `rbuf` already consumed.
    start: usize,
    dec: RequestDecoder,
    /// Not yet served: the protected-mode check is still to be made.
    fresh: bool,
}

enum Exit {
    Closed,
    Migrate(usize),
}

fn client_info(
    server: &Server,
    addr: String,
    laddr: String,
    fd: i32,
    unix: bool,
) -> Arc<ClientInfo> {
    Arc::new(ClientInfo::new(
        server.clients.next_id(),
        addr,
        laddr,
        fd,
        unix,
    ))
}

fn raw_fd(s: &RawStream) -> i32 {
    match s {
        RawStream::Tcp(s) | RawStream::TlsNew(s) | RawStream::Tls(s, _) => s.as_raw_fd(),
        RawStream::Unix(s) => s.as_raw_fd(),
    }
}

/// Serves a connection on worker `me` until it closes or moves away.
/// Times one request waits for the disk tier before it reads on the
/// worker (see `Next::Load`).
const MAX_DISK_WAITS: u32 = 4;

pub async fn serve(server: Arc<Server>, incoming: Incoming, me: usize, stats: Arc<ThreadStats>) {
    let (stream, mut session) = match incoming {
        Incoming::New {
            stream,
            addr,
            laddr,
        } => {
            let unix = matches!(stream, RawStream::Unix(_));
            let info = client_info(&server, addr, laddr, raw_fd(&stream), unix);
            let maxclients = server.settings().maxclients;
            if server.clients.len() >= maxclients {
                server.stats.rejected_connections.fetch_add(1, Relaxed);
                reject(stream).await;
                return;
            }
            server.clients.register(info.clone());
            // No buffers yet: they come with the first bytes (see
            // `Stream::read_or_idle`).
            let mut client = Client::connected(info, &server.acl);
            client.parks_for_disk = true;
            let session = Box::new(Session {
                client,
                rbuf: Vec::new(),
                start: 0,
                dec: RequestDecoder::new(server.proto_max_bulk_len.load(Relaxed)),
                fresh: true,
            });
            (stream, session)
        }
        Incoming::Resume { stream, session } => (stream, session),
    };
    let info = session.client.info.clone();
    info.worker.store(me, Relaxed);
    server.workers.conns[me].fetch_add(1, Relaxed);
    let exit = match stream {
        RawStream::Tcp(s) => match into_tokio_tcp(s) {
            Ok(s) => serve_stream(&server, s, &mut session, me, &stats).await,
            Err(_) => close_session(&server, &mut session),
        },
        RawStream::Unix(s) => match into_tokio_unix(s) {
            Ok(s) => serve_stream(&server, s, &mut session, me, &stats).await,
            Err(_) => close_session(&server, &mut session),
        },
        // The handshake runs here, on the worker, not in the accept loop:
        // a slow client delays nobody else.
        RawStream::TlsNew(s) => {
            let config = server.tls.get();
            match (into_tokio_tcp(s), config) {
                (Ok(s), Some(config)) => match TlsStream::accept(s, config).await {
                    Ok(s) => serve_stream(&server, s, &mut session, me, &stats).await,
                    Err(e) => {
                        tracing::debug!(addr = %info.addr, "Error accepting a client connection: {e}");
                        close_session(&server, &mut session)
                    }
                },
                _ => close_session(&server, &mut session),
            }
        }
        RawStream::Tls(s, tls) => match into_tokio_tcp(s) {
            Ok(s) => {
                let s = TlsStream::from_parts(s, tls);
                serve_stream(&server, s, &mut session, me, &stats).await
            }
            Err(_) => close_session(&server, &mut session),
        },
    };
    server.workers.conns[me].fetch_sub(1, Relaxed);
    if let Some((to, stream)) = exit {
        server
            .workers
            .send(to, Incoming::Resume { stream, session });
    }
}

/// Runs the connection loop on `stream`: where to move it next, or None
/// once it closed.
async fn serve_stream<S: Stream>(
    server: &Server,
    mut stream: S,
    session: &mut Session,
    me: usize,
    stats: &ThreadStats,
) -> Option<(usize, RawStream)> {
    if session.fresh {
        session.fresh = false;
        if refused_by_protected_mode(server, &session.client.info) {
            server.stats.rejected_connections.fetch_add(1, Relaxed);
            let _ = stream.write_all(DENIED).await;
            let _ = stream.flush().await;
            return close_session(server, session);
        }
    }
    if let Exit::Migrate(to) = run(server, &mut stream, session, me, stats).await {
        if let Ok(raw) = stream.into_raw() {
            return Some((to, raw));
        }
    }
    // Before the socket closes, so CLIENT KILL never shuts down a reused
    // fd.
    close_session(server, session)
}

/// Writes the replies gathered so far, once the log holds what they
/// acknowledge (before a request waits: blocked, paused; or a large batch).
async fn flush_replies<S: Stream>(
    server: &Server,
    stream: &mut S,
    client: &Client,
    me: usize,
    out: &mut Replies,
    big_out: &mut Option<super::output_budget::Held>,
    stats: &ThreadStats,
) -> std::io::Result<()> {
    if out.is_empty() {
        return Ok(());
    }
    durable_before_reply(server, client, me).await?;
    server.aof.written_before_reply(client.aof_offset);
    let guard = WriteGuard::of(server, client);
    client.info.unsent.store(out.pending() as u64, Relaxed);
    write_out(stream, out, big_out, guard, client).await?;
    client.info.unsent.store(0, Relaxed);
    stats.add_net(0, out.pending() as u64);
    stats.add_io(0, 1);
    out.clear();
    Ok(())
}

/// Moves what the client's inbox holds into its replies.
#[inline]
fn take_inbox(client: &Client, out: &mut Replies) {
    if client.info.inbox.pending() > 0 {
        let bytes = client.info.inbox.take(out, usize::MAX);
        client.info.inbox.written(bytes);
    }
}

/// Writes what the client's inbox holds (pub/sub messages, invalidations,
/// MONITOR lines) while it waits for a request.
async fn write_inbox<S: Stream>(
    stream: &mut S,
    client: &mut Client,
    out: &mut Replies,
    big_out: &mut Option<super::output_budget::Held>,
    stats: &ThreadStats,
) -> std::io::Result<()> {
    loop {
        let bytes = client.info.inbox.take(out, FLUSH_AT);
        if bytes == 0 {
            return Ok(());
        }
        let r = write_out(stream, out, big_out, WriteGuard::NONE, client).await;
        client.info.inbox.written(bytes);
        r?;
        stats.add_net(0, out.pending() as u64);
        stats.add_io(0, 1);
        out.clear();
    }
}

/// A closed connection leaves the registries.
fn close_session(server: &Server, session: &mut Session) -> Option<(usize, RawStream)> {
    server.clients.unregister(session.client.info.id);
    server.watches.unwatch_all(&session.client.watch);
    command::pubsub::unsubscribe_all(server, &mut session.client);
    server.tracking.disable(&session.client.info);
    server.monitors.remove(&session.client.info);
    None
}

async fn reject(stream: RawStream) {
    let msg = b"-ERR max number of clients reached\r\n";
    match stream {
        // Before its handshake a TLS client cannot read the reply.
        RawStream::TlsNew(_) | RawStream::Tls(..) => {}
        RawStream::Tcp(s) => {
            if let Ok(mut s) = into_tokio_tcp(s) {
                let _ = s.write_all(msg).await;
            }
        }
        RawStream::Unix(s) => {
            if let Ok(mut s) = into_tokio_unix(s) {
                let _ = s.write_all(msg).await;
            }
        }
    }
}

/// Parks a client whose command blocked until a key it waits on is
/// signalled (then re-runs the command), its timeout passes (null reply),
/// or the peer goes away. Bytes the client sends meanwhile are kept for
/// after (those from `start` on are unread requests, held to
/// `client-query-buffer-limit`). Returns false if the connection closed.
#[allow(clippy::too_many_arguments)]
async fn wait_blocked<S: AsyncRead + AsyncWrite + Unpin>(
    server: &Server,
    stream: &mut S,
    client: &mut Client,
    rbuf: &mut Vec<u8>,
    start: usize,
    req: crate::client::BlockRequest,
    argv: Vec<Vec<u8>>,
    out: &mut Replies,
    stats: &ThreadStats,
) -> std::io::Result<bool> {
    let waiter = Arc::new(crate::clients::blocking::Waiter::new(client.info.id));
    server.blocking.register(req.db, &req.keys, &waiter);
    client.info.blocked.store(true, Relaxed);
    // A push that landed between the command releasing its shards and this
    // registration woke nobody: run the command once more before sleeping.
    waiter.wake.notify_one();
    let argv: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
    let deadline = req.deadline.map(tokio::time::Instant::from_std);
    let result = loop {
        let timeout = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending::<()>().await,
            }
        };
        rbuf.reserve(READ_CHUNK);
        tokio::select! {
            _ = waiter.wake.notified() => {
                match waiter.unblock.load(Relaxed) {
                    crate::clients::blocking::UNBLOCK_TIMEOUT => {
                        timeout_reply(out, client.proto, req.timeout_reply);
                        break Ok(true);
                    }
                    crate::clients::blocking::UNBLOCK_ERROR => {
                        command::reply_error(out, stats, b"UNBLOCKED client unblocked via CLIENT UNBLOCK");
                        break Ok(true);
                    }
                    _ => {}
                }
                let mark = out.len();
                let mut clock = command::Clock::start();
                client.woken = true;
                let next = command::dispatch(server, client, &argv, out, stats, &mut clock);
                client.woken = false;
                match next {
                    Next::Park(_) => {
                        // Still nothing to serve (another client was
                        // faster): keep our place at the head of the queue.
                        out.truncate(mark);
                        continue;
                    }
                    Next::Postpone => {
                        // Paused (a write that CLIENT PAUSE WRITE holds):
                        // run again once the pause ends.
                        out.truncate(mark);
                        let _held = server.blocking.hold();
                        server.pause.wait().await;
                        waiter.wake.notify_one();
                        continue;
                    }
                    _ => break Ok(true),
                }
            }
            _ = timeout => {
                timeout_reply(out, client.proto, req.timeout_reply);
                break Ok(true);
            }
            r = stream.read_buf(rbuf) => match r {
                Ok(0) => break Ok(false),
                Ok(_) if client.info.killed.load(Relaxed) => break Ok(false),
                Ok(_) if over_query_limit(client, &rbuf[start..]) => break Ok(false),
                Ok(_) => continue,
                Err(e) => break Err(e),
            },
        }
    };
    server.blocking.unregister(req.db, &req.keys, &waiter);
    client.info.blocked.store(false, Relaxed);
    // A command served was logged as it ran; one that timed out or was
    // unblocked is not, as in Redis 7.0.
    client.blocked_run = None;
    if matches!(result, Ok(true)) {
        // The keys may hold more than we took: pass the turn on.
        for k in &req.keys {
            server.blocking.signal(req.db, k);
        }
    }
    result
}

/// A blocked command's reply when its timeout passes.
fn timeout_reply(out: &mut Vec<u8>, proto: u8, reply: command::TimeoutReply) {
    match reply {
        command::TimeoutReply::NullArray => resp::encode::null_array(out, proto),
        command::TimeoutReply::NullBulk => resp::encode::null(out, proto),
    }
}

/// Whether the unread requests `pending` (what is not yet parsed into
/// arguments) went over `client-query-buffer-limit`: then the client is
/// closed without a reply, as Redis's readQueryFromClient does.
fn over_query_limit(client: &Client, pending: &[u8]) -> bool {
    if pending.len() <= QUERY_BUFFER_LIMIT.load(Relaxed) {
        return false;
    }
    let head = &pending[..pending.len().min(64)];
    tracing::warn!(
        id = client.info.id,
        addr = %client.info.addr,
        qbuf = pending.len(),
        "Closing client that reached max query buffer length (qbuf initial bytes: {:?})",
        String::from_utf8_lossy(head)
    );
    true
}

/// Writes replies. A write that makes no headway for
/// `output_budget::STALLED` stops counting the buffer against the
/// worker's budget: a client that does not read keeps its own buffer
/// (as it would in Redis) but cannot hold the worker's other clients back.
/// `guard` closes a client that reads nothing for `timeout` seconds, or
/// leaves more than the soft output limit unread for longer than its
/// seconds (Redis counts unsent replies the same way; it would also read
/// and run more requests meanwhile, which keel does not, so the hard
/// limit is checked as replies are built, in `session_loop`).
async fn write_out<S: AsyncWrite + Unpin>(
    stream: &mut S,
    out: &Replies,
    held: &mut Option<super::output_budget::Held>,
    guard: WriteGuard,
    client: &Client,
) -> std::io::Result<()> {
    write_all_guarded(stream, out, held, guard, client).await?;
    // A TLS stream may hold the last records (nothing for a socket).
    stream.flush().await
}

async fn write_all_guarded<S: AsyncWrite + Unpin>(
    stream: &mut S,
    out: &Replies,
    held: &mut Option<super::output_budget::Held>,
    guard: WriteGuard,
    client: &Client,
) -> std::io::Result<()> {
    let mut slices = Vec::new();
    if guard.idle.is_none() && guard.limit.is_none() {
        if held.is_none() {
            return write_all(stream, out, &mut slices).await;
        }
        let mut write = std::pin::pin!(write_all(stream, out, &mut slices));
        tokio::select! {
            r = &mut write => return r,
            _ = tokio::time::sleep(super::output_budget::STALLED) => {}
        }
        *held = None;
        return write.await;
    }
    let started = tokio::time::Instant::now();
    let mut progress = started;
    let mut over_soft_since = None;
    let mut pos = 0;
    while pos < out.pending() {
        let left = out.pending() - pos;
        if let Some(limit) = guard.limit {
            if left > limit.soft {
                over_soft_since.get_or_insert(progress);
            } else {
                over_soft_since = None;
            }
        }
        let mut deadline = None::<tokio::time::Instant>;
        let mut sooner = |t: tokio::time::Instant| {
            deadline = Some(deadline.map_or(t, |d| d.min(t)));
        };
        if held.is_some() {
            sooner(started + super::output_budget::STALLED);
        }
        if let Some(idle) = guard.idle {
            sooner(progress + idle);
        }
        if let (Some(since), Some(limit)) = (over_soft_since, guard.limit) {
            // Redis closes once more than the soft seconds have passed.
            sooner(since + Duration::from_secs(limit.soft_secs) + Duration::from_millis(1));
        }
        let written = match deadline {
            None => write_some(stream, out, pos, &mut slices).await?,
            Some(d) => tokio::select! {
                r = write_some(stream, out, pos, &mut slices) => r?,
                _ = tokio::time::sleep_until(d) => {
                    let now = tokio::time::Instant::now();
                    if held.is_some() && now >= started + super::output_budget::STALLED {
                        *held = None;
                    }
                    if guard.idle.is_some_and(|idle| now >= progress + idle) {
                        tracing::debug!(id = client.info.id, "Closing idle client");
                        return Err(std::io::ErrorKind::TimedOut.into());
                    }
                    if let (Some(since), Some(limit)) = (over_soft_since, guard.limit) {
                        if now > since + Duration::from_secs(limit.soft_secs) {
                            return Err(over_output_limit(client, left));
                        }
                    }
                    continue;
                }
            },
        };
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        pos += written;
        progress = tokio::time::Instant::now();
    }
    Ok(())
}

/// Writes all of `out`.
async fn write_all<'a, S: AsyncWrite + Unpin>(
    stream: &mut S,
    out: &'a Replies,
    slices: &mut Vec<IoSlice<'a>>,
) -> std::io::Result<()> {
    if !out.has_shared() {
        return stream.write_all(out).await;
    }
    let mut pos = 0;
    while pos < out.pending() {
        match write_some(stream, out, pos, slices).await? {
            0 => return Err(std::io::ErrorKind::WriteZero.into()),
            n => pos += n,
        }
    }
    Ok(())
}

/// One write of what `out` holds from `pos` on: values held by reference
/// are gathered with the bytes around them (one `writev`).
async fn write_some<'a, S: AsyncWrite + Unpin>(
    stream: &mut S,
    out: &'a Replies,
    pos: usize,
    slices: &mut Vec<IoSlice<'a>>,
) -> std::io::Result<usize> {
    if !out.has_shared() {
        return stream.write(&out[pos..]).await;
    }
    out.slices_from(pos, slices);
    stream.write_vectored(slices).await
}

/// The client's transaction state as `net::busy` encodes it.
fn tx_state(client: &Client) -> u8 {
    use super::busy::TxShadow;
    match &client.tx {
        None => TxShadow::None,
        Some(tx) if tx.doomed => TxShadow::Doomed,
        Some(_) => TxShadow::Open,
    }
    .to_u8()
}

/// Gives an empty vector of argument slices a new lifetime, keeping its
/// allocation (in-place collect), so no request allocates its argv.
fn recycle<'b>(mut v: Vec<&[u8]>) -> Vec<&'b [u8]> {
    v.clear();
    v.into_iter()
        .map(|_| -> &'b [u8] { unreachable!() })
        .collect()
}

async fn run<S: Stream>(
    server: &Server,
    stream: &mut S,
    session: &mut Session,
    me: usize,
    stats: &ThreadStats,
) -> Exit {
    match session_loop(server, stream, session, me, stats).await {
        Ok(exit) => exit,
        Err(e) => {
            tracing::debug!(id = session.client.info.id, "connection closed: {e}");
            Exit::Closed
        }
    }
}

/// What the log needs before replies that acknowledge this client's
/// writes leave (see `Aof::durable_before_reply`); `company`: other
/// connections on this worker may join the same fsync.
async fn durable_before_reply(
    server: &Server,
    client: &Client,
    me: usize,
) -> std::io::Result<bool> {
    // A client that never wrote waits for nothing (the common case: no
    // nested future).
    if client.aof_offset == 0 {
        return Ok(false);
    }
    let company = server.workers.conns[me].load(Relaxed) > 1;
    server
        .aof
        .durable_before_reply(client.aof_offset, company)
        .await
}

async fn session_loop<S: Stream>(
    server: &Server,
    stream: &mut S,
    session: &mut Session,
    me: usize,
    stats: &ThreadStats,
) -> std::io::Result<Exit> {
    let Session {
        client,
        rbuf,
        start,
        dec,
        ..
    } = session;
    // Allocated with the first request (see `Stream::read_or_idle`).
    let mut out = Replies::by_reference();
    // The output buffer while it is large, counted in the worker's budget.
    let mut big_out: Option<super::output_budget::Held> = None;
    // The last batch's replies: the room the next one likely needs.
    let mut last_reply = 0usize;
    let mut argv_store: Vec<&'static [u8]> = Vec::with_capacity(16);
    // A migrated session may hold complete requests already read.
    let mut n = rbuf.len() - *start;
    let mut read_size = READ_CHUNK;
    loop {
        if n == 0 {
            // Make room: drop consumed bytes, then reserve for the next
            // read.
            if *start == rbuf.len() {
                rbuf.clear();
                *start = 0;
            } else if *start > 0
                && (*start >= rbuf.len() / 2 || rbuf.capacity() - rbuf.len() < READ_CHUNK / 4)
            {
                rbuf.drain(..*start);
                *start = 0;
            }
            let pending = rbuf.len() - *start;
            match dec.bytes_wanted().saturating_sub(pending) {
                0 => rbuf.reserve(read_size),
                // A bulk on its way: room for as much again as has come
                // (at most what it still needs), so the buffer grows with
                // the data and never to a declared length no byte of which
                // was sent: `$536870912` alone costs nothing.
                rest => rbuf.reserve_exact(rest.min(pending.max(read_size))),
            }
            let spare = rbuf.capacity() - rbuf.len();
            let timeout = server.timeout_secs.load(Relaxed);
            // Gave its buffers back while waiting (see `read_or_idle`).
            let mut released = false;
            n = if client.subscriptions() > 0 || client.info.inbox.pending() > 0 {
                // Subscribed (or messages still queued): wait for a request
                // or a message, whichever comes first (no idle timeout, as
                // in Redis).
                let info = &client.info;
                tokio::select! {
                    r = stream.read_or_idle(rbuf, |b| {
                        // A request half-read stays.
                        if b.is_empty() {
                            super::buffer_pool::give_back(b);
                            info.qbuf.store(0, Relaxed);
                        }
                        if out.is_empty() {
                            super::buffer_pool::give_back(out.bytes_mut());
                            info.obuf.store(0, Relaxed);
                        }
                        released = true;
                    }) => r?,
                    _ = info.inbox.wait() => {
                        write_inbox(stream, client, &mut out, &mut big_out, stats).await?;
                        if client.info.killed.load(Relaxed) {
                            return Ok(Exit::Closed);
                        }
                        continue;
                    }
                }
            } else {
                // Parked with nothing half-read: a busy script on this
                // worker may answer the requests that arrive meanwhile
                // (`net::busy`).
                let idle = *start == rbuf.len();
                if idle {
                    client.info.tx_state.store(tx_state(client), Relaxed);
                    if timeout > 0 {
                        // The cron closes clients parked for longer than
                        // `timeout` (`net::close_idle_clients`), from their
                        // last reply, as Redis counts the write too.
                        client
                            .info
                            .last_interaction_ms
                            .store(command::mono_ms(), Relaxed);
                    }
                    client.info.parked_idle.store(true, Relaxed);
                    let info = &client.info;
                    // A message may come for a client that never asked
                    // (a tracking redirect's target, MONITOR): the inbox
                    // wakes this wait too (`biased`: the read is polled
                    // first, no random choice per wait).
                    let r = tokio::select! {
                        biased;
                        r = stream.read_or_idle(rbuf, |b| {
                            super::buffer_pool::give_back(b);
                            super::buffer_pool::give_back(out.bytes_mut());
                            info.qbuf.store(0, Relaxed);
                            info.obuf.store(0, Relaxed);
                            released = true;
                        }) => Some(r),
                        _ = info.inbox.wait() => None,
                    };
                    client.info.parked_idle.store(false, Relaxed);
                    if let Some(unsent) = super::busy::resume(server, client) {
                        if !unsent.is_empty() {
                            stream.write_all(&unsent).await?;
                        }
                    }
                    match r {
                        Some(r) => r?,
                        None => {
                            write_inbox(stream, client, &mut out, &mut big_out, stats).await?;
                            if client.info.killed.load(Relaxed) {
                                return Ok(Exit::Closed);
                            }
                            continue;
                        }
                    }
                } else {
                    // Half a request, then silence: closed as an idle
                    // client once `timeout` passes from the last read,
                    // looked at every second so that CONFIG SET reaches a
                    // client already waiting (the cron watches only those
                    // parked between requests).
                    let since = tokio::time::Instant::now();
                    loop {
                        tokio::select! {
                            r = stream.read_buf(rbuf) => break r?,
                            _ = tokio::time::sleep(Duration::from_secs(1)) => {
                                let timeout = server.timeout_secs.load(Relaxed);
                                if timeout > 0 && since.elapsed() > Duration::from_secs(timeout) {
                                    tracing::debug!(id = client.info.id, "Closing idle client");
                                    return Ok(Exit::Closed);
                                }
                            }
                        }
                    }
                }
            };
            if n == 0 || client.info.killed.load(Relaxed) {
                return Ok(Exit::Closed);
            }
            if released {
                // (A no-op if `out` was not given back.)
                super::buffer_pool::refill(out.bytes_mut(), last_reply.clamp(READ_CHUNK, FLUSH_AT));
                client.info.qbuf.store(rbuf.capacity() as u64, Relaxed);
                client.info.obuf.store(out.capacity() as u64, Relaxed);
            }
            // A read that filled the room left more waiting: read more at
            // once next time (a pipeline of 18 KB SETs took a system call
            // per 16 KB and ran at 0.8x Redis's rate); a small read brings
            // the size back down.
            if n >= spare {
                read_size = (read_size * 2).min(MAX_READ);
            } else if n < read_size / 4 {
                read_size = (read_size / 2).max(READ_CHUNK);
            }
        }
        // Large replies of other connections still unsent: let them
        // drain before building more (see `output_budget`).
        let maxmemory = server.memory.maxmemory() as usize;
        let reply_limit = if maxmemory == 0 {
            usize::MAX
        } else {
            maxmemory / 8
        };
        super::output_budget::room(reply_limit).await;
        let mut clock = command::Clock::start();
        // (The batch's clock reading, not one more.)
        client
            .info
            .last_interaction_ms
            .store(clock.batch_start_ms(), Relaxed);
        dec.set_max_bulk_len(server.proto_max_bulk_len.load(Relaxed));
        let mut protocol_error = false;
        // The request just run asked to close the connection (`Next::Close`).
        let mut closing = false;
        client
            .info
            .unread
            .store((rbuf.len() - *start) as u64, Relaxed);
        let limit = OutputLimit::of(client);
        // How far into this batch's requests the disk tier's reads were
        // started ahead (`tier::load::prefetch`).
        let mut prefetched_to = 0;
        // Their reads, kept until this batch's requests have run.
        let mut prefetched = Vec::new();
        loop {
            // Per request: an AUTH earlier in this read lifts the limits.
            dec.set_unauthenticated(!authenticated(server, client));
            match dec.decode(&rbuf[*start..]) {
                Ok(Some(len)) => {
                    let frame = &rbuf[*start..*start + len];
                    *start += len;
                    if dec.argc() == 0 {
                        continue;
                    }
                    let mut argv = recycle(std::mem::take(&mut argv_store));
                    argv.extend((0..dec.argc()).map(|i| dec.arg(frame, i)));
                    // Messages queued before this request was read come
                    // before its reply; those its own command caused (an
                    // invalidation of a key it tracks) follow it, as in
                    // Redis, where both go to the output buffer at once.
                    take_inbox(client, &mut out);
                    client.values_looked_at = *start <= prefetched_to;
                    let mut next =
                        command::dispatch(server, client, &argv, &mut out, stats, &mut clock);
                    // CLIENT PAUSE: the request waits for the pause to end
                    // (the replies before it leave now), then runs.
                    // Values on disk: the request waits for their reads
                    // (the replies before it leave now), then runs again.
                    // A value may be back on disk by then (memory is
                    // short): after a few waits the request reads what it
                    // still misses where it runs, so it always ends.
                    let mut loads = 0;
                    // The values read back and not admitted stay in memory
                    // until the request has run (`tier::admission`).
                    let mut tickets = Vec::new();
                    while matches!(next, Next::Postpone | Next::Load(_)) {
                        flush_replies(server, stream, client, me, &mut out, &mut big_out, stats)
                            .await?;
                        if let Next::Load(loading) = next {
                            if loads == 0 {
                                // The pipeline's next requests start their
                                // reads too, before this one waits.
                                let from = prefetched_to.max(*start);
                                prefetched_to = from
                                    + crate::tier::load::prefetch(
                                        server,
                                        client.db,
                                        &rbuf[from..],
                                        server.proto_max_bulk_len.load(Relaxed),
                                        &mut prefetched,
                                    );
                            }
                            tickets.push(loading.await);
                            loads += 1;
                            client.values_looked_at = true;
                            client.parks_for_disk = loads < MAX_DISK_WAITS;
                        } else {
                            let held = server.blocking.hold();
                            server.pause.wait().await;
                            drop(held);
                        }
                        clock = command::Clock::start();
                        next =
                            command::dispatch(server, client, &argv, &mut out, stats, &mut clock);
                        client.parks_for_disk = true;
                    }
                    drop(tickets);
                    if matches!(next, Next::HandOver(_) | Next::Await(_)) {
                        // The replies before this request leave first.
                        flush_replies(server, stream, client, me, &mut out, &mut big_out, stats)
                            .await?;
                    }
                    match next {
                        Next::HandOver(req) => {
                            // From here on the connection is a replica's.
                            // Boxed: a rare path whose state (buffers
                            // among it) would otherwise enlarge every
                            // connection's task.
                            let served = Box::pin(crate::replication::master::serve(
                                server, stream, client, *req,
                            ))
                            .await;
                            if let Err(e) = served {
                                tracing::warn!("Replica {}: {e}", client.info.addr);
                            }
                            return Ok(Exit::Closed);
                        }
                        Next::Await(reply) => {
                            let held = server.blocking.hold();
                            out.extend_from_slice(&reply.await);
                            drop(held);
                            clock = command::Clock::start();
                            next = Next::Continue;
                        }
                        _ => {}
                    }
                    take_inbox(client, &mut out);
                    if out.pending() > limit.hard {
                        // Redis closes the client as the reply goes over,
                        // with nothing of it sent.
                        return Err(over_output_limit(client, out.pending()));
                    }
                    let held = out.held();
                    if held > FLUSH_AT && big_out.as_ref().is_none_or(|h| h.bytes() != held) {
                        // Counted until the batch ends and the buffer is
                        // dropped (see `output_budget`).
                        big_out = Some(super::output_budget::hold(held, reply_limit));
                        // ... and in the client's memory (maxmemory-clients).
                        client.info.obuf.store(held as u64, Relaxed);
                    }
                    let blocked = match next {
                        Next::Park(mut req) => {
                            let rerun = req.rerun.take();
                            Some((
                                req,
                                rerun.unwrap_or_else(|| argv.iter().map(|a| a.to_vec()).collect()),
                            ))
                        }
                        Next::Close => {
                            closing = true;
                            None
                        }
                        _ => None,
                    };
                    argv_store = recycle(argv);
                    if let Some((req, owned)) = blocked {
                        // Replies of the requests before this one leave now.
                        flush_replies(server, stream, client, me, &mut out, &mut big_out, stats)
                            .await?;
                        let served = wait_blocked(
                            server, stream, client, rbuf, *start, *req, owned, &mut out, stats,
                        )
                        .await?;
                        if !served {
                            return Ok(Exit::Closed);
                        }
                        clock = command::Clock::start();
                    }
                    if closing {
                        break;
                    }
                    if out.pending() >= FLUSH_AT {
                        flush_replies(server, stream, client, me, &mut out, &mut big_out, stats)
                            .await?;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    command::reply_error(&mut out, stats, e.message().as_bytes());
                    tracing::debug!(id = client.info.id, "protocol error: {e}");
                    protocol_error = true;
                    break;
                }
            }
        }
        // What is left unparsed of a request in progress is the query
        // buffer Redis limits (the arguments it parsed it moved to the
        // command's argv); checked once this read is parsed, as Redis reads
        // a large argument no further than its end.
        if !protocol_error && over_query_limit(client, &rbuf[*start + dec.parsed_len()..]) {
            return Ok(Exit::Closed);
        }
        stats.add_net(n as u64, out.pending() as u64);
        stats.add_io(1, !out.is_empty() as u64);
        stats.buffers_seen(rbuf.capacity() as u64, out.capacity() as u64);
        n = 0;
        if !out.is_empty() {
            let waited = durable_before_reply(server, client, me).await?;
            // Let the worker's other ready connections run first, so the
            // replies of one round leave together, as Redis writes them
            // all at the end of its event-loop round. A reply sent while
            // the client sleeps in epoll costs a wake-up (an IPI on a VM):
            // spread-out replies found the client asleep every time, and
            // this took ~10% of the worker's CPU in the kernel's
            // sock_def_readable (measured: 50 clients of MULTI/INCR/INCR/
            // EXEC, +5-8%; GET/SET +2-4%). Connections released by one
            // fsync already reply together.
            if !waited && server.workers.conns[me].load(Relaxed) > 1 {
                tokio::task::yield_now().await;
            }
            // After the yield: the round's first connection here writes
            // the whole round's records in one system call.
            server.aof.written_before_reply(client.aof_offset);
            let guard = WriteGuard::of(server, client);
            client.info.unsent.store(out.pending() as u64, Relaxed);
            write_out(stream, &out, &mut big_out, guard, client).await?;
            client.info.unsent.store(0, Relaxed);
            last_reply = out.len();
            out.clear();
        }
        // A large reply's buffer is kept through its batch (the next
        // large reply reuses it), not while the connection idles: fifty
        // idle clients after an LRANGE of 11 MB each held 800 MB.
        if out.capacity() > FLUSH_AT {
            *out.bytes_mut() = Vec::with_capacity(READ_CHUNK);
        }
        big_out = None;
        if *start == rbuf.len() && rbuf.capacity() > FLUSH_AT * 4 {
            *rbuf = Vec::new();
            *start = 0;
        }
        // What this connection's buffers hold between batches, for
        // CLIENT LIST and INFO memory (two stores per batch).
        client.info.qbuf.store(rbuf.capacity() as u64, Relaxed);
        client.info.obuf.store(out.capacity() as u64, Relaxed);
        client
            .info
            .unread
            .store((rbuf.len() - *start) as u64, Relaxed);
        if protocol_error || closing || server.shutting_down.load(Relaxed) {
            return Ok(Exit::Closed);
        }
        let to = client.info.migrate_to.swap(NO_MIGRATION, Relaxed);
        if to != NO_MIGRATION && to != me && to < server.workers.len() {
            return Ok(Exit::Migrate(to));
        }
    }
}
