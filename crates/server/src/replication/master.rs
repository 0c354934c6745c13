//! The primary's side: a replica's connection after PSYNC or SYNC.
//!
//! [`serve`] takes the connection over from the ordinary request loop:
//! it answers `+CONTINUE` when the backlog holds the replica's position,
//! or `+FULLRESYNC` and sends a snapshot, then sends the stream from the
//! replica's position as it grows and reads the replica's `REPLCONF ACK`s.
//!
//! Full syncs share images: replicas that ask while one is being prepared
//! (during `repl-diskless-sync-delay`, or while a BGSAVE finishes) get the
//! same one. The image is a temporary file written by the snapshot
//! machinery (point in time without fork, see `persistence::snapshot`),
//! sent with a length prefix, or with the EOF mark of a diskless transfer
//! under `repl-diskless-sync yes` to a replica with `capa eof`: the file
//! spares the primary a snapshot per slow replica.

use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;

use super::{ReplicaLink, ONLINE, SEND_BULK, WAIT_BGSAVE};
use crate::client::Client;
use crate::persistence::snapshot::{SnapshotError, Target};
use crate::server::Server;

/// What a replica asked for (PSYNC / SYNC), set by the command for the
/// connection to act on once the replies before it are written.
#[derive(Debug, Clone)]
pub struct SyncRequest {
    /// PSYNC's history id (`?` for none); empty for SYNC.
    pub replid: String,
    /// PSYNC's offset − 1: the first position the replica needs.
    pub pos: Option<u64>,
    /// PSYNC (else the old SYNC: the image, no `+FULLRESYNC` line).
    pub psync: bool,
}

/// What REPLCONF told about a replica before its PSYNC.
#[derive(Debug, Clone, Default)]
pub struct ReplConf {
    pub listening_port: u16,
    pub ip: Option<String>,
    pub capa_eof: bool,
    pub capa_psync2: bool,
    /// `REPLCONF node-id` (a keel replica in cluster mode).
    pub node_id: Option<String>,
}

/// A finished image: deleted when the last replica sending it is done.
pub struct Image {
    pub path: PathBuf,
    pub len: u64,
    /// The history and offset it was taken at.
    pub replid: String,
    pub offset: u64,
}

impl Drop for Image {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[derive(Clone)]
pub enum JobState {
    Pending,
    /// The image is taken at this offset of this history.
    Started(u64, String),
    Done(Result<Arc<Image>, String>),
}

/// One image being prepared for the replicas waiting for it.
pub struct SyncJob {
    state: watch::Sender<JobState>,
    /// Replicas attached (`repl-diskless-sync-max-replicas` starts it
    /// without waiting out the delay).
    waiting: std::sync::atomic::AtomicUsize,
}

/// Joins the image being prepared, or starts preparing one.
fn request_image(server: &Arc<Server>) -> watch::Receiver<JobState> {
    let mut slot = server.repl.full_sync.lock();
    if let Some(job) = slot.as_ref() {
        if matches!(*job.state.borrow(), JobState::Pending) {
            job.waiting.fetch_add(1, Relaxed);
            return job.state.subscribe();
        }
    }
    let (tx, rx) = watch::channel(JobState::Pending);
    let job = Arc::new(SyncJob {
        state: tx,
        waiting: std::sync::atomic::AtomicUsize::new(1),
    });
    *slot = Some(job.clone());
    drop(slot);
    let server = server.clone();
    let spawned = std::thread::Builder::new()
        .name("keel-repl-sync".into())
        .spawn(move || prepare_image(&server, &job));
    if let Err(e) = spawned {
        tracing::error!("Can't start the replication snapshot: {e}");
    }
    rx
}

static IMAGES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The sync thread: waits out the diskless delay and any snapshot in
/// progress, takes the image, writes it.
fn prepare_image(server: &Arc<Server>, job: &Arc<SyncJob>) {
    let (diskless, delay, max_replicas, dir) = {
        let c = server.settings();
        (
            c.repl_diskless_sync,
            c.repl_diskless_sync_delay,
            c.repl_diskless_sync_max_replicas,
            c.dir.clone(),
        )
    };
    if diskless {
        // Redis's delay: more replicas may come for the same image.
        let until = std::time::Instant::now() + Duration::from_secs(delay);
        while std::time::Instant::now() < until
            && !(max_replicas > 0 && job.waiting.load(Relaxed) >= max_replicas)
        {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let n = IMAGES.fetch_add(1, Relaxed);
    let path = dir.join(format!("temp-repl-{}-{n}.rdb", std::process::id()));
    let result = loop {
        // One snapshot at a time: a BGSAVE in progress finishes first.
        while server.snapshots.in_progress() {
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut none = server.keyspace.none();
        // Joining ends as the image is taken.
        let mut slot = server.repl.full_sync.lock();
        if slot.as_ref().is_some_and(|j| Arc::ptr_eq(j, job)) {
            *slot = None;
        }
        drop(slot);
        match server
            .snapshots
            .start(server, &mut none, Target::Replicas(path.clone()))
        {
            Ok(offset) => {
                let id = server.repl.ids().replid;
                tracing::info!(
                    "Starting BGSAVE for SYNC with target: {}",
                    if diskless { "replicas sockets" } else { "disk" }
                );
                job.state
                    .send_replace(JobState::Started(offset, id.clone()));
                break server
                    .snapshots
                    .finish(server)
                    .map_err(|e| e.to_string())
                    .and_then(|()| {
                        let len = std::fs::metadata(&path).map_err(|e| e.to_string())?.len();
                        Ok(Arc::new(Image {
                            path: path.clone(),
                            len,
                            replid: id,
                            offset,
                        }))
                    });
            }
            Err(SnapshotError::InProgress) => continue,
            Err(e) => break Err(e.to_string()),
        }
    };
    if let Err(e) = &result {
        tracing::warn!("Replication snapshot failed: {e}");
        let _ = std::fs::remove_file(&path);
    }
    job.state.send_replace(JobState::Done(result));
}

/// Waits for the image to reach a state `pick` accepts, sending the
/// replica a newline every second meanwhile (as Redis, so neither side
/// times out while the image is prepared).
async fn wait_image<S, T>(
    stream: &mut S,
    rx: &mut watch::Receiver<JobState>,
    keepalive: bool,
    mut pick: impl FnMut(&JobState) -> Option<T>,
) -> std::io::Result<T>
where
    S: AsyncWrite + Unpin,
{
    loop {
        if let Some(t) = pick(&rx.borrow_and_update()) {
            return Ok(t);
        }
        tokio::select! {
            r = rx.changed() => {
                if r.is_err() {
                    return Err(std::io::Error::other("the replication snapshot was dropped"));
                }
            }
            _ = tokio::time::sleep(Duration::from_secs(1)) => {
                if keepalive {
                    stream.write_all(b"\n").await?;
                }
            }
        }
    }
}

/// Serves a replica's connection from its PSYNC/SYNC to its end.
pub async fn serve<S>(
    server: &Server,
    stream: &mut S,
    client: &mut Client,
    req: SyncRequest,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let Some(server_arc) = server.arc() else {
        return Ok(());
    };
    let repl = &server.repl;
    let conf = client.repl_conf.take().unwrap_or_default();
    repl.ensure_backlog();
    client.info.kind.store(crate::client::KIND_REPLICA, Relaxed);
    let ip = conf
        .ip
        .clone()
        .unwrap_or_else(|| peer_ip(&client.info.addr));
    let link = Arc::new(ReplicaLink {
        info: client.info.clone(),
        ip,
        port: std::sync::atomic::AtomicU16::new(conf.listening_port),
        state: std::sync::atomic::AtomicU8::new(WAIT_BGSAVE),
        sent: std::sync::atomic::AtomicU64::new(repl.offset()),
        ack: std::sync::atomic::AtomicU64::new(0),
        aof_ack: std::sync::atomic::AtomicU64::new(0),
        ack_ms: std::sync::atomic::AtomicU64::new(crate::command::unix_ms()),
        psync2: conf.capa_psync2,
        node_id: conf.node_id.clone(),
        heard_after_ns: std::sync::atomic::AtomicU64::new(0),
    });
    if server.cluster.enabled() {
        server.cluster.replica_connected(conf.node_id.as_deref());
    }
    let ids = repl.ids();
    let partial = req.psync && req.pos.is_some_and(|p| repl.can_continue(&req.replid, p));
    if partial {
        let pos = req.pos.unwrap_or(0);
        link.sent.store(pos, Relaxed);
        link.state.store(ONLINE, Relaxed);
        repl.register(link.clone());
        repl.sync_partial_ok.fetch_add(1, Relaxed);
        let line = if conf.capa_psync2 {
            format!("+CONTINUE {}\r\n", ids.replid)
        } else {
            "+CONTINUE\r\n".to_string()
        };
        tracing::info!(
            "Partial resynchronization request from {} accepted. Sending {} bytes of backlog starting from offset {}.",
            client.info.addr,
            repl.offset().saturating_sub(pos),
            pos + 1
        );
        stream.write_all(line.as_bytes()).await?;
    } else {
        if req.psync && req.replid != "?" {
            repl.sync_partial_err.fetch_add(1, Relaxed);
        }
        repl.sync_full.fetch_add(1, Relaxed);
        repl.register(link.clone());
        let result = full_sync(server, &server_arc, stream, &link, &conf, &req).await;
        if let Err(e) = result {
            repl.unregister(client.info.id);
            return Err(e);
        }
    }
    let result = stream_to(server, stream, &link).await;
    repl.unregister(client.info.id);
    tracing::info!("Connection with replica {} lost.", client.info.addr);
    result
}

fn peer_ip(addr: &str) -> String {
    match addr.rsplit_once(':') {
        Some((ip, _)) => ip.to_string(),
        None => addr.to_string(),
    }
}

/// `+FULLRESYNC`, the image, and the replica's position at its offset.
async fn full_sync<S>(
    server: &Server,
    server_arc: &Arc<Server>,
    stream: &mut S,
    link: &ReplicaLink,
    conf: &ReplConf,
    req: &SyncRequest,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut rx = request_image(server_arc);
    // No newline before +FULLRESYNC: the replica reads a line for it.
    let started = wait_image(stream, &mut rx, false, |s| match s {
        JobState::Started(off, id) => Some(Ok((*off, id.clone()))),
        JobState::Done(Ok(image)) => Some(Ok((image.offset, image.replid.clone()))),
        JobState::Done(Err(e)) => Some(Err(e.clone())),
        _ => None,
    })
    .await?;
    let (offset, id) = started.map_err(std::io::Error::other)?;
    link.sent.store(offset, Relaxed);
    if server.repl.read_from(offset, 0, &mut Vec::new()).is_none() {
        return Err(std::io::Error::other("the backlog moved past the image"));
    }
    if req.psync {
        tracing::info!("Full resync requested by replica {}", link.info.addr);
        stream
            .write_all(format!("+FULLRESYNC {id} {offset}\r\n").as_bytes())
            .await?;
    }
    let image = wait_image(stream, &mut rx, true, |s| match s {
        JobState::Done(r) => Some(r.clone()),
        _ => None,
    })
    .await?
    .map_err(std::io::Error::other)?;
    link.state.store(SEND_BULK, Relaxed);
    let eof_mark = (conf.capa_eof && server.settings().repl_diskless_sync).then(super::new_replid);
    match &eof_mark {
        Some(mark) => {
            stream
                .write_all(format!("$EOF:{mark}\r\n").as_bytes())
                .await?
        }
        None => {
            stream
                .write_all(format!("${}\r\n", image.len).as_bytes())
                .await?
        }
    }
    let mut file = tokio::fs::File::open(&image.path).await?;
    let mut buf = vec![0u8; 256 * 1024];
    let mut sent = 0u64;
    while sent < image.len {
        let n = file.read(&mut buf).await?;
        if n == 0 {
            return Err(std::io::Error::other("the image file ended early"));
        }
        tokio::time::timeout(repl_timeout(server), stream.write_all(&buf[..n]))
            .await
            .map_err(|_| std::io::Error::other("Timeout sending the image to the replica"))??;
        sent += n as u64;
    }
    server.repl.net_out.fetch_add(sent, Relaxed);
    let diskless_framing = eof_mark.is_some();
    if let Some(mark) = eof_mark {
        stream.write_all(mark.as_bytes()).await?;
    }
    drop(image);
    // As Redis: a replica sent the image by length is online at once; one
    // sent it diskless (EOF mark) once it acknowledges (`read_acks`).
    if !diskless_framing {
        link.state.store(ONLINE, Relaxed);
    }
    link.ack_ms.store(crate::command::unix_ms(), Relaxed);
    tracing::info!("Synchronization with replica {} succeeded", link.info.addr);
    Ok(())
}

/// Most bytes sent per write.
const CHUNK: usize = 1 << 20;

/// Sends the stream from the replica's position as it grows; reads its
/// acknowledgements. Ends when either side closes or the replica falls
/// out of the backlog (its output limit).
async fn stream_to<S>(server: &Server, stream: &mut S, link: &ReplicaLink) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let repl = &server.repl;
    let mut out = Vec::with_capacity(64 * 1024);
    let mut input: Vec<u8> = Vec::with_capacity(1024);
    let mut dec = resp::RequestDecoder::new(64 * 1024);
    // Since when the replica has been over the soft output limit.
    let mut over_since = None;
    let mut timeout = repl_timeout(server);
    loop {
        if link.info.killed.load(Relaxed) {
            return Ok(());
        }
        // As Redis's replicationCron: a replica that has not acknowledged
        // for `repl-timeout` is gone (stopped, or its link is cut without
        // a reset): it is disconnected, so it is no longer listed online
        // nor counted as good, and the backlog stops growing for it.
        // (A diskless replica waiting to acknowledge its image counts too:
        // it may have stopped before its first ACK.)
        let silent_ms = crate::command::unix_ms().saturating_sub(link.ack_ms.load(Relaxed));
        if silent_ms > timeout.as_millis() as u64 {
            tracing::warn!(
                "Disconnecting timedout replica (streaming sync): {}",
                link.info.addr
            );
            return Ok(());
        }
        let behind = repl.offset().saturating_sub(link.sent.load(Relaxed));
        if repl.over_soft_limit(behind, &mut over_since) {
            tracing::warn!(
                "Client {} scheduled to be closed ASAP for overcoming of output buffer limits.",
                link.info.addr
            );
            return Ok(());
        }
        let fed = repl.fed.notified();
        tokio::pin!(fed);
        fed.as_mut().enable();
        out.clear();
        let pos = link.sent.load(Relaxed);
        // After a diskless image, nothing until the replica's first ACK:
        // it finds the image's end by its last 40 bytes, so stream bytes
        // in the same read would hide the mark (Redis waits the same way).
        let online = link.state.load(Relaxed) == ONLINE;
        match if online {
            repl.read_from(pos, CHUNK, &mut out)
        } else {
            Some(0)
        } {
            None => {
                tracing::warn!(
                    "Client {} scheduled to be closed ASAP for overcoming of output buffer limits.",
                    link.info.addr
                );
                return Ok(());
            }
            Some(0) => {}
            Some(n) => {
                // A replica that stopped reading must not hold this task
                // (and its place in the backlog) forever.
                match tokio::time::timeout(timeout, stream.write_all(&out)).await {
                    Ok(written) => written?,
                    Err(_) => {
                        tracing::warn!(
                            "Disconnecting timedout replica (streaming sync): {}",
                            link.info.addr
                        );
                        return Ok(());
                    }
                }
                link.sent.store(pos + n as u64, Relaxed);
                repl.net_out.fetch_add(n as u64, Relaxed);
                continue;
            }
        }
        let mut chunk = [0u8; 4096];
        tokio::select! {
            _ = fed => {}
            r = stream.read(&mut chunk) => {
                let n = r?;
                if n == 0 {
                    return Ok(());
                }
                repl.net_in.fetch_add(n as u64, Relaxed);
                input.extend_from_slice(&chunk[..n]);
                read_acks(server, link, &mut dec, &mut input)?;
            }
            _ = tokio::time::sleep(Duration::from_millis(100)) => {
                timeout = repl_timeout(server);
            }
        }
    }
}

/// `repl-timeout`.
fn repl_timeout(server: &Server) -> Duration {
    Duration::from_secs(server.settings().repl_timeout.max(1))
}

/// Applies the complete `REPLCONF ACK <offset> [FACK <offset>]` requests
/// in `input`.
fn read_acks(
    server: &Server,
    link: &ReplicaLink,
    dec: &mut resp::RequestDecoder,
    input: &mut Vec<u8>,
) -> std::io::Result<()> {
    let mut used = 0;
    loop {
        match dec.decode(&input[used..]) {
            Ok(Some(len)) => {
                let frame = &input[used..used + len];
                let argv: Vec<&[u8]> = (0..dec.argc()).map(|i| dec.arg(frame, i)).collect();
                used += len;
                if argv.len() >= 3
                    && argv[0].eq_ignore_ascii_case(b"replconf")
                    && argv[1].eq_ignore_ascii_case(b"ack")
                {
                    if let Some(off) = std::str::from_utf8(argv[2])
                        .ok()
                        .and_then(|s| s.parse::<u64>().ok())
                    {
                        // An offset past what was sent names bytes this
                        // primary never wrote (a replica that fed its own
                        // stream): WAIT must not count them.
                        let off = off.min(link.sent.load(Relaxed));
                        if off > link.ack.load(Relaxed) {
                            link.ack.store(off, Relaxed);
                        }
                        link.ack_ms.store(crate::command::unix_ms(), Relaxed);
                        if let Some(at) = server.repl.marks.fed_after(off) {
                            link.heard_after_ns.fetch_max(at, Relaxed);
                        }
                        // `FACK <offset>` (7.2): how far the replica's
                        // own AOF is fsynced, for WAITAOF.
                        if argv.len() >= 5 && argv[3].eq_ignore_ascii_case(b"fack") {
                            if let Some(f) = std::str::from_utf8(argv[4])
                                .ok()
                                .and_then(|s| s.parse::<u64>().ok())
                            {
                                link.aof_ack.fetch_max(f.min(off), Relaxed);
                            }
                        }
                        // A diskless replica is online from its first ACK.
                        link.state.store(ONLINE, Relaxed);
                        server.repl.refresh_good_replicas(crate::command::unix_ms());
                        server.repl.acked.notify_waiters();
                    }
                }
            }
            Ok(None) => break,
            Err(e) => return Err(std::io::Error::other(e.to_string())),
        }
    }
    input.drain(..used);
    Ok(())
}
