//! One client connection: read a batch, decode and dispatch every complete
//! request in it in order, write all their replies with one write.
//!
//! Reading again only after the replies are written is the backpressure: a
//! client that pipelines without reading cannot make us buffer without
//! bound.

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use resp::RequestDecoder;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::{into_tokio_tcp, into_tokio_unix, Incoming};
use crate::client::{Client, ClientInfo};
use crate::command;
use crate::server::Server;
use crate::stats::ThreadStats;

/// Read size when no large bulk is pending (Redis's PROTO_IOBUF_LEN).
const READ_CHUNK: usize = 16 * 1024;
/// Replies beyond this are written out mid-batch instead of accumulating.
const FLUSH_AT: usize = 1024 * 1024;

fn client_info(server: &Server, addr: String, laddr: String, fd: i32, unix: bool) -> Arc<ClientInfo> {
    Arc::new(ClientInfo {
        id: server.clients.next_id(),
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
        last_interaction_ms: AtomicU64::new(0),
        last_cmd: AtomicU32::new(u32::MAX),
        no_evict: AtomicBool::new(false),
        killed: AtomicBool::new(false),
        qbuf: AtomicU64::new(0),
        obuf: AtomicU64::new(0),
    })
}

pub async fn serve(server: Arc<Server>, conn: Incoming, stats: Arc<ThreadStats>) {
    match conn {
        Incoming::Tcp(s, peer, local) => {
            let Ok(s) = into_tokio_tcp(s) else { return };
            let info = client_info(&server, peer.to_string(), local.to_string(), s.as_raw_fd(), false);
            run(&server, s, info, &stats).await;
        }
        Incoming::Unix(s, path) => {
            let Ok(s) = into_tokio_unix(s) else { return };
            let info = client_info(&server, format!("{path}:0"), format!("{path}:0"), s.as_raw_fd(), true);
            run(&server, s, info, &stats).await;
        }
    }
}

async fn run<S: AsyncRead + AsyncWrite + Unpin>(server: &Server, mut stream: S, info: Arc<ClientInfo>, stats: &ThreadStats) {
    let maxclients = server.config.read().get_int("maxclients") as usize;
    if server.clients.len() >= maxclients {
        server.stats.rejected_connections.fetch_add(1, Relaxed);
        let _ = stream.write_all(b"-ERR max number of clients reached\r\n").await;
        return;
    }
    server.clients.register(info.clone());
    let mut client = Client::new(info.clone());
    if let Err(e) = session(server, &mut stream, &mut client, stats).await {
        tracing::debug!(id = info.id, "connection closed: {e}");
    }
    // Unregister before the socket closes so CLIENT KILL never acts on a
    // reused fd.
    server.clients.unregister(info.id);
    drop(stream);
}

/// Gives an empty vector of argument slices a new lifetime, keeping its
/// allocation (in-place collect), so no request allocates its argv.
fn recycle<'b>(mut v: Vec<&[u8]>) -> Vec<&'b [u8]> {
    v.clear();
    v.into_iter().map(|_| -> &'b [u8] { unreachable!() }).collect()
}

async fn session<S: AsyncRead + AsyncWrite + Unpin>(
    server: &Server,
    stream: &mut S,
    client: &mut Client,
    stats: &ThreadStats,
) -> std::io::Result<()> {
    let mut rbuf: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut start = 0usize;
    let mut out: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut dec = RequestDecoder::new(server.proto_max_bulk_len.load(Relaxed));
    let mut argv_store: Vec<&'static [u8]> = Vec::with_capacity(16);
    loop {
        // Make room: drop consumed bytes, then reserve for the next read
        // or, for a large bulk in progress, for all of it at once.
        if start == rbuf.len() {
            rbuf.clear();
            start = 0;
        } else if start > 0 && (start >= rbuf.len() / 2 || rbuf.capacity() - rbuf.len() < READ_CHUNK / 4) {
            rbuf.drain(..start);
            start = 0;
        }
        let pending = rbuf.len() - start;
        let want = dec.bytes_wanted().saturating_sub(pending).max(READ_CHUNK);
        rbuf.reserve(want);
        let timeout = server.timeout_secs.load(Relaxed);
        let n = if timeout > 0 {
            match tokio::time::timeout(Duration::from_secs(timeout), stream.read_buf(&mut rbuf)).await {
                Ok(r) => r?,
                Err(_) => return Ok(()),
            }
        } else {
            stream.read_buf(&mut rbuf).await?
        };
        if n == 0 || client.info.killed.load(Relaxed) {
            return Ok(());
        }
        client.info.last_interaction_ms.store(client.info.created.elapsed().as_millis() as u64, Relaxed);
        dec.set_max_bulk_len(server.proto_max_bulk_len.load(Relaxed));
        let mut protocol_error = false;
        loop {
            match dec.decode(&rbuf[start..]) {
                Ok(Some(len)) => {
                    let frame = &rbuf[start..start + len];
                    start += len;
                    if dec.argc() == 0 {
                        continue;
                    }
                    let mut argv = recycle(std::mem::take(&mut argv_store));
                    argv.extend((0..dec.argc()).map(|i| dec.arg(frame, i)));
                    command::dispatch(server, client, &argv, &mut out, stats);
                    argv_store = recycle(argv);
                    if client.close_after_reply {
                        break;
                    }
                    if out.len() >= FLUSH_AT {
                        stream.write_all(&out).await?;
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
        if !out.is_empty() {
            stream.write_all(&out).await?;
            out.clear();
            if out.capacity() > FLUSH_AT * 4 {
                out = Vec::with_capacity(READ_CHUNK);
            }
        }
        if protocol_error || client.close_after_reply {
            return Ok(());
        }
        if server.shutting_down.load(Relaxed) {
            return Ok(());
        }
    }
}
