//! One client connection: read a batch, decode and dispatch every complete
//! request in it in order, write all their replies with one write.
//!
//! Reading again only after the replies are written is the backpressure: a
//! client that pipelines without reading cannot make us buffer without
//! bound. Between batches a connection may move to another worker (see
//! `balance`): its [`Session`] travels with the socket.

use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use resp::RequestDecoder;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::balance::NO_MIGRATION;
use super::{into_tokio_tcp, into_tokio_unix, Incoming, RawStream, Stream};
use crate::client::{Client, ClientInfo};
use crate::command;
use crate::server::Server;
use crate::stats::ThreadStats;

/// Read size when no large bulk is pending (Redis's PROTO_IOBUF_LEN).
const READ_CHUNK: usize = 16 * 1024;
/// The most one read asks for, when a client keeps the socket full.
const MAX_READ: usize = 256 * 1024;
/// Replies beyond this are written out mid-batch instead of accumulating.
const FLUSH_AT: usize = 1024 * 1024;

/// Everything a connection needs besides its socket.
pub struct Session {
    client: Client,
    rbuf: Vec<u8>,
    /// Bytes of `rbuf` already consumed.
    start: usize,
    dec: RequestDecoder,
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
        RawStream::Tcp(s) => s.as_raw_fd(),
        RawStream::Unix(s) => s.as_raw_fd(),
    }
}

/// Serves a connection on worker `me` until it closes or moves away.
pub async fn serve(server: Arc<Server>, incoming: Incoming, me: usize, stats: Arc<ThreadStats>) {
    let (stream, mut session) = match incoming {
        Incoming::New {
            stream,
            addr,
            laddr,
        } => {
            let unix = matches!(stream, RawStream::Unix(_));
            let info = client_info(&server, addr, laddr, raw_fd(&stream), unix);
            let maxclients = server.config.read().get_int("maxclients") as usize;
            if server.clients.len() >= maxclients {
                server.stats.rejected_connections.fetch_add(1, Relaxed);
                reject(stream).await;
                return;
            }
            server.clients.register(info.clone());
            // The buffers a connection starts with (CLIENT LIST, memory).
            info.qbuf.store(READ_CHUNK as u64, Relaxed);
            info.obuf.store(READ_CHUNK as u64, Relaxed);
            let session = Box::new(Session {
                client: Client::new(info),
                rbuf: Vec::with_capacity(READ_CHUNK),
                start: 0,
                dec: RequestDecoder::new(server.proto_max_bulk_len.load(Relaxed)),
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
    if let Exit::Migrate(to) = run(server, &mut stream, session, me, stats).await {
        if let Ok(raw) = stream.into_raw() {
            return Some((to, raw));
        }
    }
    // Before the socket closes, so CLIENT KILL never shuts down a reused
    // fd.
    close_session(server, session)
}

/// A closed connection leaves the registries.
fn close_session(server: &Server, session: &mut Session) -> Option<(usize, RawStream)> {
    server.clients.unregister(session.client.info.id);
    server.watches.unwatch_all(&session.client.watch);
    command::pubsub::unsubscribe_all(server, &mut session.client);
    None
}

async fn reject(stream: RawStream) {
    let msg = b"-ERR max number of clients reached\r\n";
    match stream {
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
/// after. Returns false if the connection closed.
#[allow(clippy::too_many_arguments)]
async fn wait_blocked<S: AsyncRead + AsyncWrite + Unpin>(
    server: &Server,
    stream: &mut S,
    client: &mut Client,
    rbuf: &mut Vec<u8>,
    req: crate::client::BlockRequest,
    argv: Vec<Vec<u8>>,
    out: &mut Vec<u8>,
    stats: &ThreadStats,
) -> std::io::Result<bool> {
    let waiter = Arc::new(crate::blocking::Waiter {
        client_id: client.info.id,
        wake: tokio::sync::Notify::new(),
    });
    server.blocking.register(req.db, &req.keys, &waiter);
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
                let mark = out.len();
                let mut clock = command::Clock::start();
                client.woken = true;
                command::dispatch(server, client, &argv, out, stats, &mut clock);
                client.woken = false;
                if client.block.take().is_some() {
                    // Still nothing to serve (another client was faster):
                    // keep our place at the head of the queue.
                    out.truncate(mark);
                    continue;
                }
                break Ok(true);
            }
            _ = timeout => {
                let proto = client.proto;
                match req.timeout_reply {
                    command::TimeoutReply::NullArray => resp::encode::null_array(out, proto),
                    command::TimeoutReply::NullBulk => resp::encode::null(out, proto),
                }
                break Ok(true);
            }
            r = stream.read_buf(rbuf) => match r {
                Ok(0) => break Ok(false),
                Ok(_) if client.info.killed.load(Relaxed) => break Ok(false),
                Ok(_) => continue,
                Err(e) => break Err(e),
            },
        }
    };
    server.blocking.unregister(req.db, &req.keys, &waiter);
    if matches!(result, Ok(true)) {
        // The keys may hold more than we took: pass the turn on.
        for k in &req.keys {
            server.blocking.signal(req.db, k);
        }
    }
    result
}

/// Writes replies. A write that makes no headway for
/// `output_budget::STALLED` stops counting the buffer against the
/// worker's budget: a client that does not read keeps its own buffer
/// (as it would in Redis) but cannot hold the worker's other clients back.
async fn write_out<S: AsyncWrite + Unpin>(
    stream: &mut S,
    out: &[u8],
    held: &mut Option<super::output_budget::Held>,
) -> std::io::Result<()> {
    if held.is_none() {
        return stream.write_all(out).await;
    }
    let mut write = std::pin::pin!(stream.write_all(out));
    tokio::select! {
        r = &mut write => return r,
        _ = tokio::time::sleep(super::output_budget::STALLED) => {}
    }
    *held = None;
    write.await
}

/// The client's transaction state as `net::busy` encodes it.
fn tx_state(client: &Client) -> u8 {
    use super::busy::TxShadow;
    match (&client.multi, client.multi_error) {
        (None, _) => TxShadow::None,
        (Some(_), false) => TxShadow::Open,
        (Some(_), true) => TxShadow::Doomed,
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

async fn run<S: AsyncRead + AsyncWrite + Unpin>(
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

async fn session_loop<S: AsyncRead + AsyncWrite + Unpin>(
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
    } = session;
    let mut out: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    // The output buffer while it is large, counted in the worker's budget.
    let mut big_out: Option<super::output_budget::Held> = None;
    let mut argv_store: Vec<&'static [u8]> = Vec::with_capacity(16);
    // A migrated session may hold complete requests already read.
    let mut n = rbuf.len() - *start;
    let mut read_size = READ_CHUNK;
    loop {
        if n == 0 {
            // Make room: drop consumed bytes, then reserve for the next
            // read or, for a large bulk in progress, for all of it at once.
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
            let want = dec.bytes_wanted().saturating_sub(pending).max(read_size);
            rbuf.reserve(want);
            let spare = rbuf.capacity() - rbuf.len();
            let timeout = server.timeout_secs.load(Relaxed);
            n = if let Some(ps) = client.pubsub.as_mut() {
                // Subscribed: wait for a request or a message, whichever
                // comes first (no idle timeout, as in Redis).
                tokio::select! {
                    r = stream.read_buf(rbuf) => r?,
                    Some(first) = ps.rx.recv() => {
                        let mut bytes = first.len();
                        out.extend_from_slice(&first);
                        while out.len() < FLUSH_AT {
                            match ps.rx.try_recv() {
                                Ok(m) => {
                                    bytes += m.len();
                                    out.extend_from_slice(&m);
                                }
                                Err(_) => break,
                            }
                        }
                        write_out(stream, &out, &mut big_out).await?;
                        stats.add_net(0, out.len() as u64);
                        out.clear();
                        ps.sub.pending.fetch_sub(bytes, Relaxed);
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
                    client.info.parked_idle.store(true, Relaxed);
                }
                let r = if timeout > 0 {
                    tokio::time::timeout(Duration::from_secs(timeout), stream.read_buf(rbuf))
                        .await
                        .ok()
                } else {
                    Some(stream.read_buf(rbuf).await)
                };
                if idle {
                    client.info.parked_idle.store(false, Relaxed);
                    if let Some(unsent) = super::busy::resume(server, client) {
                        if !unsent.is_empty() {
                            stream.write_all(&unsent).await?;
                        }
                    }
                }
                match r {
                    Some(r) => r?,
                    None => return Ok(Exit::Closed),
                }
            };
            if n == 0 || client.info.killed.load(Relaxed) {
                return Ok(Exit::Closed);
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
        super::output_budget::room(if maxmemory == 0 {
            usize::MAX
        } else {
            maxmemory / 8
        })
        .await;
        client
            .info
            .last_interaction_ms
            .store(client.info.created.elapsed().as_millis() as u64, Relaxed);
        dec.set_max_bulk_len(server.proto_max_bulk_len.load(Relaxed));
        let mut protocol_error = false;
        let mut clock = command::Clock::start();
        loop {
            match dec.decode(&rbuf[*start..]) {
                Ok(Some(len)) => {
                    let frame = &rbuf[*start..*start + len];
                    *start += len;
                    if dec.argc() == 0 {
                        continue;
                    }
                    let mut argv = recycle(std::mem::take(&mut argv_store));
                    argv.extend((0..dec.argc()).map(|i| dec.arg(frame, i)));
                    command::dispatch(server, client, &argv, &mut out, stats, &mut clock);
                    if out.capacity() > FLUSH_AT
                        && big_out.as_ref().is_none_or(|h| h.bytes() != out.capacity())
                    {
                        // Counted until the batch ends and the buffer is
                        // dropped (see `output_budget`).
                        big_out = Some(super::output_budget::hold(out.capacity()));
                        // ... and in the client's memory (maxmemory-clients).
                        client.info.obuf.store(out.capacity() as u64, Relaxed);
                    }
                    let blocked = client.block.take().map(|mut req| {
                        let rerun = req.rerun.take();
                        (
                            req,
                            rerun.unwrap_or_else(|| argv.iter().map(|a| a.to_vec()).collect()),
                        )
                    });
                    argv_store = recycle(argv);
                    if let Some((req, owned)) = blocked {
                        // Replies of the requests before this one leave now.
                        if !out.is_empty() {
                            durable_before_reply(server, client, me).await?;
                            server.aof.written_before_reply(client.aof_offset);
                            write_out(stream, &out, &mut big_out).await?;
                            stats.add_net(0, out.len() as u64);
                            out.clear();
                        }
                        let served =
                            wait_blocked(server, stream, client, rbuf, req, owned, &mut out, stats)
                                .await?;
                        if !served {
                            return Ok(Exit::Closed);
                        }
                        clock = command::Clock::start();
                    }
                    if client.close_after_reply {
                        break;
                    }
                    if out.len() >= FLUSH_AT {
                        durable_before_reply(server, client, me).await?;
                        server.aof.written_before_reply(client.aof_offset);
                        write_out(stream, &out, &mut big_out).await?;
                        stats.add_net(0, out.len() as u64);
                        out.clear();
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    resp::encode::error(&mut out, e.message().as_bytes());
                    tracing::debug!(id = client.info.id, "protocol error: {e}");
                    protocol_error = true;
                    break;
                }
            }
        }
        stats.add_net(n as u64, out.len() as u64);
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
            write_out(stream, &out, &mut big_out).await?;
            out.clear();
        }
        // A large reply's buffer is kept through its batch (the next
        // large reply reuses it), not while the connection idles: fifty
        // idle clients after an LRANGE of 11 MB each held 800 MB.
        if out.capacity() > FLUSH_AT {
            out = Vec::with_capacity(READ_CHUNK);
        }
        big_out = None;
        if *start == rbuf.len() && rbuf.capacity() > FLUSH_AT * 4 {
            *rbuf = Vec::with_capacity(READ_CHUNK);
            *start = 0;
        }
        // What this connection's buffers hold between batches, for
        // CLIENT LIST and INFO memory (two stores per batch).
        client.info.qbuf.store(rbuf.capacity() as u64, Relaxed);
        client.info.obuf.store(out.capacity() as u64, Relaxed);
        if protocol_error || client.close_after_reply || server.shutting_down.load(Relaxed) {
            return Ok(Exit::Closed);
        }
        let to = client.info.migrate_to.swap(NO_MIGRATION, Relaxed);
        if to != NO_MIGRATION && to != me && to < server.workers.len() {
            return Ok(Exit::Migrate(to));
        }
    }
}
