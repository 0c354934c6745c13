//! The replica's side: the link to the primary.
//!
//! One thread (`keel-repl-link`) per REPLICAOF, with blocking sockets: it
//! connects, runs Redis 7.0's handshake (PING, AUTH, REPLCONF
//! listening-port / ip-address / capa eof psync2, PSYNC), loads the image
//! of a full sync or continues from its offset, then applies the stream as
//! the primary's client (`Client::from_primary`) and acknowledges it
//! (`REPLCONF ACK` every second and on `GETACK`). Each command's bytes go
//! on, as received, to this server's own backlog (its replicas, chained,
//! see the same stream and offsets). A new REPLICAOF bumps `link_gen`:
//! the old thread sees it between reads and ends.
//!
//! Under `tls-replication yes` the link is TLS (rustls, the client
//! configuration from the `tls-*` parameters, `net::tls::client_config`).
//!
//! A blocking thread rather than a worker task: applying the stream is
//! one command after the other anyway (its order is the primary's), and
//! the thread may wait on shard locks without stalling a worker's other
//! connections.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Primary, LINK_CONNECTING, LINK_DOWN, LINK_SYNC, LINK_UP};
use crate::client::{Client, ClientInfo, KIND_PRIMARY};
use crate::command::{self, Clock};
use crate::observe::stats::ThreadStats;
use crate::persistence::aof::ImageSource;
use crate::persistence::image_file::ImageFile;
use crate::server::Server;

/// Makes this server a replica of `primary` (or a primary again, with
/// `None`), as REPLICAOF and the `replicaof` parameter do. The link
/// thread starts only once the server runs (`start_link`).
pub fn set_primary(server: &Server, primary: Option<Primary>) {
    let was_replica = server.repl.is_replica();
    server.repl.link_gen.fetch_add(1, Relaxed);
    // The link thread holds the apply lock while it applies a command:
    // taking it here waits for the command in progress.
    let _apply = server.repl.apply_lock.lock();
    server.repl.link_state.store(LINK_DOWN, Relaxed);
    match &primary {
        Some(_) => {
            server.keyspace.set_replica(true);
            // Redis's replicationCacheMasterUsingMyself: a primary turned
            // replica keeps its history, so it can continue partially
            // from the new primary if it was its replica before.
            server.repl.ensure_backlog();
        }
        None => {
            server.keyspace.set_replica(false);
            if was_replica {
                // A new history from here; the old one stays valid up to
                // this offset for the old primary's other replicas.
                server.repl.shift_replid();
            }
        }
    }
    server.repl.set_primary(primary);
    server
        .repl
        .link_down_since_ms
        .store(command::unix_ms(), Relaxed);
    // Replicas of this server reconnect and continue partially (with
    // `+CONTINUE <new id>`).
    server.repl.disconnect_replicas();
}

/// The `replicaof` parameter at start: a replica from the first command
/// (the link starts once the listeners are up). Its history, if any, comes
/// from the RDB it loads (`restore_history`).
pub fn set_primary_at_start(server: &Server, primary: crate::config::ReplicaOf) {
    server.keyspace.set_replica(true);
    server.repl.set_primary(Some(Primary {
        host: primary.host,
        port: primary.port,
    }));
    server.repl.link_down_since_ms.store(0, Relaxed);
}

/// Starts the link thread for the current primary, if any.
pub fn start_link(server: &Arc<Server>) {
    if server.repl.primary().is_none() {
        return;
    }
    let gen = server.repl.link_gen.load(Relaxed);
    let server = server.clone();
    let spawned = std::thread::Builder::new()
        .name("keel-repl-link".into())
        .spawn(move || supervise_link(&server, gen));
    if let Err(e) = spawned {
        tracing::error!("Can't start the replication link: {e}");
    }
}

/// Runs the link, and again after a panic in it: the link must not stay
/// `up` with nobody applying the stream. The link goes down (INFO shows
/// it) and reconnects, resuming from its offset.
fn supervise_link(server: &Arc<Server>, gen: u64) {
    loop {
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| link_main(server, gen)));
        if run.is_ok() {
            return;
        }
        let _apply = server.repl.apply_lock.lock();
        if !current(server, gen) {
            return;
        }
        tracing::error!("The replication link panicked; it connects again");
        link_down(server);
        drop(_apply);
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// The link is down (INFO's `master_link_status`), since now if it was up.
fn link_down(server: &Server) {
    if server.repl.link_state.swap(LINK_DOWN, Relaxed) == LINK_UP {
        server
            .repl
            .link_down_since_ms
            .store(command::unix_ms(), Relaxed);
    }
}

fn current(server: &Server, gen: u64) -> bool {
    server.repl.link_gen.load(Relaxed) == gen
}

/// One lane of the parallel apply: its own client (the primary's, with the
/// database each command ran in) and counters.
struct Lane {
    client: Client,
    stats: Arc<ThreadStats>,
    /// Frames queued: database and range in the read buffer.
    queue: Vec<(usize, std::ops::Range<usize>)>,
}

fn link_main(server: &Arc<Server>, gen: u64) {
    let stats = server.stats.register_thread(server.commands.len());
    // As many lanes as workers: commands of different shards apply at
    // once, each shard's in the stream's order.
    let mut lanes: Vec<Lane> = (0..server.threads.max(1))
        .map(|_| Lane {
            client: primary_client(server, -1),
            stats: server.stats.register_thread(server.commands.len()),
            queue: Vec::new(),
        })
        .collect();
    let mut client = primary_client(server, -1);
    client.db = server.repl.link_db.load(Relaxed);
    while current(server, gen) {
        let Some(primary) = server.repl.primary() else {
            return;
        };
        tracing::info!("Connecting to MASTER {}:{}", primary.host, primary.port);
        let result = session(server, gen, &primary, &mut client, &stats, &mut lanes);
        server.clients.unregister(client.info.id);
        // A newer REPLICAOF owns the link state now.
        let _apply = server.repl.apply_lock.lock();
        if !current(server, gen) {
            return;
        }
        if let Err(e) = result {
            tracing::warn!("Replication with {}:{}: {e}", primary.host, primary.port);
        }
        link_down(server);
        drop(_apply);
        // A half-received transaction is dropped (the primary sends it
        // again, whole, after a partial resync: the offset stopped at its
        // MULTI).
        command::discard_transaction(server, &mut client);
        for _ in 0..10 {
            if !current(server, gen) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The primary's pseudo-client; `fd` is the link's socket (CLIENT KILL
/// TYPE master shuts it down).
fn primary_client(server: &Server, fd: i32) -> Client {
    let info = ClientInfo::new(
        server.clients.next_id(),
        String::new(),
        String::new(),
        fd,
        false,
    );
    info.kind.store(KIND_PRIMARY, Relaxed);
    let mut c = Client::new(Arc::new(info));
    c.from_primary = true;
    c
}

/// The link's byte stream: the socket, or TLS over it
/// (`tls-replication`).
trait Conn: Read + Write + Send {}
impl<T: Read + Write + Send> Conn for T {}

type Link = BufReader<Box<dyn Conn>>;

fn err(msg: impl Into<String>) -> std::io::Error {
    std::io::Error::other(msg.into())
}

/// Sends a command and reads its one-line reply (empty lines, the
/// primary's keepalives, skipped).
fn call(link: &mut Link, argv: &[&[u8]]) -> std::io::Result<String> {
    let mut buf = Vec::new();
    resp::encode::command(&mut buf, argv);
    link.get_mut().write_all(&buf)?;
    read_line(link)
}

fn read_line(link: &mut Link) -> std::io::Result<String> {
    loop {
        let mut line = String::new();
        if link.read_line(&mut line)? == 0 {
            return Err(err("the primary closed the connection"));
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if !line.is_empty() {
            return Ok(line.to_string());
        }
    }
}

/// One connection to the primary: handshake, sync, stream.
fn session(
    server: &Arc<Server>,
    gen: u64,
    primary: &Primary,
    client: &mut Client,
    stats: &ThreadStats,
    lanes: &mut [Lane],
) -> std::io::Result<()> {
    {
        let _apply = server.repl.apply_lock.lock();
        if !current(server, gen) {
            return Ok(());
        }
        server.repl.link_state.store(LINK_CONNECTING, Relaxed);
    }
    let (timeout, announce_ip, announce_port, user, pass) = {
        let c = server.settings();
        (
            c.repl_timeout.max(1),
            c.replica_announce_ip.clone(),
            c.replica_announce_port,
            c.masteruser.clone(),
            c.masterauth.clone(),
        )
    };
    let addr = (primary.host.as_str(), primary.port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| err("no address for the primary"))?;
    let sock = TcpStream::connect_timeout(&addr, Duration::from_secs(timeout))?;
    sock.set_nodelay(true)?;
    sock.set_read_timeout(Some(Duration::from_secs(timeout)))?;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&sock);
    let local = sock.local_addr().map(|a| a.to_string()).unwrap_or_default();
    // The same socket, for read timeouts under TLS too.
    let timeouts = sock.try_clone()?;
    let tls = server.settings().tls_replication;
    let conn: Box<dyn Conn> = if tls {
        let config = crate::net::tls::client_config(&server.config.read()).map_err(err)?;
        let name = rustls::pki_types::ServerName::try_from(primary.host.clone())
            .map_err(|e| err(format!("Invalid primary host for TLS: {e}")))?;
        let conn = rustls::ClientConnection::new(Arc::new(config), name)
            .map_err(|e| err(format!("TLS: {e}")))?;
        Box::new(rustls::StreamOwned::new(conn, sock))
    } else {
        Box::new(sock)
    };
    let mut link = BufReader::with_capacity(64 * 1024, conn);

    let pong = call(&mut link, &[b"PING"])?;
    // An -NOAUTH (or -NOPERM) is fine here: AUTH comes next.
    if pong.starts_with('-') && !pong.starts_with("-NOAUTH") && !pong.starts_with("-NOPERM") {
        return Err(err(format!("Error reply to PING from master: '{pong}'")));
    }
    if !pass.is_empty() {
        let reply = if user.is_empty() {
            call(&mut link, &[b"AUTH", pass.as_bytes()])?
        } else {
            call(&mut link, &[b"AUTH", user.as_bytes(), pass.as_bytes()])?
        };
        if reply.starts_with('-') {
            return Err(err(format!("Unable to AUTH to MASTER: {reply}")));
        }
    }
    let port = if announce_port > 0 {
        announce_port as usize
    } else {
        server.tcp_port.load(Relaxed)
    };
    // Errors of the REPLCONFs are not fatal (an old primary).
    call(
        &mut link,
        &[b"REPLCONF", b"listening-port", port.to_string().as_bytes()],
    )?;
    if !announce_ip.is_empty() {
        call(
            &mut link,
            &[b"REPLCONF", b"ip-address", announce_ip.as_bytes()],
        )?;
    }
    call(
        &mut link,
        &[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"],
    )?;
    if server.cluster.enabled() {
        let id = server.cluster.myself().id;
        call(&mut link, &[b"REPLCONF", b"node-id", id.as_bytes()])?;
    }
    if !current(server, gen) {
        return Ok(());
    }
    // PSYNC with our history when we have one, else `? -1`.
    let ids = server.repl.ids();
    let have_history = server.repl.active();
    let (id, from) = if have_history {
        (ids.replid.clone(), (server.repl.offset() + 1).to_string())
    } else {
        ("?".to_string(), "-1".to_string())
    };
    // A failover's demoted primary tells the target to take over.
    let reply = if server.repl.failover.psync_failover.swap(false, Relaxed) {
        call(
            &mut link,
            &[b"PSYNC", id.as_bytes(), from.as_bytes(), b"FAILOVER"],
        )?
    } else {
        call(&mut link, &[b"PSYNC", id.as_bytes(), from.as_bytes()])?
    };
    let mut fresh = primary_client(server, fd);
    fresh.db = client.db;
    *client = fresh;
    let info = ClientInfo::new(
        client.info.id,
        format!("{}:{}", primary.host, primary.port),
        local,
        fd,
        false,
    );
    info.kind.store(KIND_PRIMARY, Relaxed);
    client.info = Arc::new(info);
    if let Some(rest) = reply.strip_prefix("+FULLRESYNC ") {
        let mut parts = rest.split(' ');
        let (Some(id), Some(off)) = (parts.next(), parts.next().and_then(|o| o.parse().ok()))
        else {
            return Err(err(format!("Unexpected reply to PSYNC: {reply}")));
        };
        tracing::info!("Full resync from master: {id}:{off}");
        if current(server, gen) {
            server.repl.link_state.store(LINK_SYNC, Relaxed);
        }
        let db = receive_image(server, gen, &mut link, id, off)?;
        client.db = db;
        // At once, as Redis after an image sent diskless: the primary
        // streams nothing to a diskless replica until its first ACK. The
        // image is bytes of the primary: heard before the ACK promises.
        server.repl.heard.heard();
        send_ack(&mut link, server, server.repl.offset())?;
    } else if let Some(rest) = reply.strip_prefix("+CONTINUE") {
        let id = rest.trim();
        tracing::info!("Successful partial resynchronization with master.");
        if !id.is_empty() && id != ids.replid {
            tracing::info!("Master replication ID changed to {id}");
            server.repl.adopt_replid(id);
            server.repl.disconnect_replicas();
        }
    } else {
        return Err(err(format!("Unexpected reply to PSYNC: {reply}")));
    }
    server.clients.register(client.info.clone());
    {
        let _apply = server.repl.apply_lock.lock();
        if !current(server, gen) {
            return Ok(());
        }
        server.repl.link_state.store(LINK_UP, Relaxed);
    }
    server
        .repl
        .link_last_io_ms
        .store(command::unix_ms(), Relaxed);
    tracing::info!("MASTER <-> REPLICA sync: Finished with success");
    apply_stream(server, gen, &mut link, &timeouts, client, stats, lanes)
}

/// The most a full sync's image buffer is sized for before its bytes
/// arrive.
const IMAGE_PREALLOC_MAX: usize = 64 << 20;

/// Where a full sync's image goes as it arrives.
enum Received {
    Memory(Vec<u8>),
    /// A file in `dir`, written as the bytes come.
    File(std::io::BufWriter<std::fs::File>),
}

impl Received {
    fn push(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Received::Memory(v) => {
                v.extend_from_slice(bytes);
                Ok(())
            }
            Received::File(f) => f.write_all(bytes),
        }
    }
}

/// Reads the image (`$<len>` or `$EOF:<mark>`), stores it as
/// `dbfilename` (unless `repl-diskless-load` says otherwise), and loads
/// it in place of the dataset. Returns the stream's database.
///
/// The image goes to a file as it arrives when it is to be kept, as
/// Redis's `repl-diskless-load disabled`, and whenever a disk tier is
/// open: the image of a dataset larger than memory must not be held in
/// memory. It then loads from the file mapped, a part at a time, as a
/// restart does.
fn receive_image(
    server: &Arc<Server>,
    gen: u64,
    link: &mut Link,
    id: &str,
    offset: u64,
) -> std::io::Result<usize> {
    let path = crate::persistence::snapshot::rdb_path(server);
    let store = server.settings().repl_diskless_load == crate::config::DisklessLoad::Disabled;
    // (Named per link: an older link still ending must not touch it.)
    let tmp = path.with_file_name(format!("temp-repl-in-{}-{gen}.rdb", std::process::id()));
    let to_file = store || crate::tier::active().is_some();
    let received = if to_file {
        std::fs::File::create(&tmp)
            .map(|f| Received::File(std::io::BufWriter::with_capacity(1 << 20, f)))
            .map_err(|e| err(format!("Failed trying to store the image: {e}")))?
    } else {
        Received::Memory(Vec::new())
    };
    let result = receive_and_load(server, gen, link, id, offset, received, store, &tmp, &path);
    let _ = std::fs::remove_file(&tmp);
    result
}

#[allow(clippy::too_many_arguments)]
fn receive_and_load(
    server: &Arc<Server>,
    gen: u64,
    link: &mut Link,
    id: &str,
    offset: u64,
    mut received: Received,
    store: bool,
    tmp: &std::path::Path,
    path: &std::path::Path,
) -> std::io::Result<usize> {
    let header = read_line(link)?;
    let Some(size) = header.strip_prefix('$') else {
        return Err(err(format!(
            "Bad protocol from MASTER, the first byte is not '$' (we received '{header}')"
        )));
    };
    let repl = &server.repl;
    repl.sync_read.store(0, Relaxed);
    let stored = |e: std::io::Error| err(format!("Failed trying to store the image: {e}"));
    let mut total = 0u64;
    if let Some(mark) = size.strip_prefix("EOF:") {
        let mark = mark.as_bytes().to_vec();
        if mark.len() != 40 {
            return Err(err("Bad EOF mark from MASTER"));
        }
        repl.sync_total.store(-1, Relaxed);
        let mut chunk = vec![0u8; 256 * 1024];
        // The last bytes are held back until the next read shows they are
        // not the mark.
        let mut tail: Vec<u8> = Vec::with_capacity(chunk.len() + 40);
        loop {
            let n = link.read(&mut chunk)?;
            if n == 0 {
                return Err(err("the primary closed the connection during the sync"));
            }
            repl.sync_read.fetch_add(n as u64, Relaxed);
            tail.extend_from_slice(&chunk[..n]);
            if tail.ends_with(&mark) {
                let body = tail.len() - 40;
                received.push(&tail[..body]).map_err(stored)?;
                total += body as u64;
                break;
            }
            if tail.len() > 40 {
                let body = tail.len() - 40;
                received.push(&tail[..body]).map_err(stored)?;
                total += body as u64;
                tail.drain(..body);
            }
            if !current(server, gen) {
                return Err(err("REPLICAOF changed during the sync"));
            }
        }
    } else {
        let len: usize = size
            .parse()
            .map_err(|_| err(format!("Bad bulk length from MASTER: {size}")))?;
        repl.sync_total.store(len as i64, Relaxed);
        // A buffer in memory grows with what arrives, not with what the
        // header announces: a wrong length must not allocate it up front.
        if let Received::Memory(v) = &mut received {
            v.reserve(len.min(IMAGE_PREALLOC_MAX));
        }
        let mut chunk = vec![0u8; 256 * 1024];
        let mut got = 0;
        while got < len {
            let want = (len - got).min(chunk.len());
            let n = link.read(&mut chunk[..want])?;
            if n == 0 {
                return Err(err("the primary closed the connection during the sync"));
            }
            received.push(&chunk[..n]).map_err(stored)?;
            got += n;
            repl.sync_read.store(got as u64, Relaxed);
            if !current(server, gen) {
                return Err(err("REPLICAOF changed during the sync"));
            }
        }
        total = len as u64;
    }
    repl.net_in.fetch_add(total, Relaxed);
    tracing::info!("MASTER <-> REPLICA sync: receiving {total} bytes from master");
    // The image to load: in memory, or the file it went to (which, kept,
    // becomes the replica's dump.rdb: a restart resumes from its offset).
    let (image, file) = match received {
        Received::Memory(data) => (ImageFile::from_vec(data), None),
        Received::File(w) => {
            let f = w.into_inner().map_err(|e| stored(e.into_error()))?;
            let file = if store {
                crate::persistence::atomic_file::install(f, tmp, path).map_err(stored)?;
                path
            } else {
                drop(f);
                tmp
            };
            // The AOF's new base is copied from this handle, not from
            // the path: a snapshot ending meanwhile may replace the file
            // at the path.
            let handle = std::fs::File::open(file).map_err(stored)?;
            (ImageFile::open(file).map_err(stored)?, Some(handle))
        }
    };
    tracing::info!("MASTER <-> REPLICA sync: Flushing old data");
    let _apply = repl.apply_lock.lock();
    if !current(server, gen) {
        return Err(err("REPLICAOF changed during the sync"));
    }
    let mut view = server.keyspace.lock_all();
    crate::persistence::snapshot::empty_dataset(server, &mut view, command::unix_ms());
    tracing::info!("MASTER <-> REPLICA sync: Loading DB in memory");
    let loaded =
        crate::persistence::snapshot::load_into_releasing(server, &mut view, &image, path, &|| {
            image.release_resident()
        })
        .map_err(|e| {
            err(format!(
                "Failed trying to load the MASTER synchronization DB from socket: {e}"
            ))
        })?;
    // The log must hold the new dataset before any of its stream does:
    // the image becomes its base (Redis rewrites its AOF after a sync).
    // Where this history's stream stands in the AOF (see `fack`): the
    // image is its base, or, off, the log counts from when it turns on.
    let mut logged = Some(if server.aof.enabled() { offset } else { 0 });
    if server.aof.enabled() {
        let source = match &file {
            Some(f) => ImageSource::File(f),
            None => ImageSource::Bytes(&image),
        };
        let restarted = server.aof.restart_from_image(source);
        if restarted.is_ok() {
            server.aof.set_holds_dataset(true);
        }
        if let Err(e) = restarted {
            tracing::error!(
                "Can't restart the AOF from the synchronization image: {e}; rewriting it instead"
            );
            // (A rewrite started holds the image only once it ends.)
            logged = None;
            server.aof.set_holds_dataset(false);
            if !server.rewrite_aof(&mut view) {
                tracing::error!("Can't rewrite the AOF after the synchronization: the log misses the loaded data until a rewrite succeeds");
            }
        }
    }
    // The new history, whose bytes from `offset` on follow; this
    // server's own replicas must sync again.
    repl.reset_history(id, offset);
    repl.aof_marks.lock().restart(logged);
    drop(view);
    repl.disconnect_replicas();
    let db = loaded.repl.map_or(0, |(_, _, db)| db);
    repl.link_db.store(db, Relaxed);
    Ok(db)
}

/// Applies the primary's stream until the link ends.
fn apply_stream(
    server: &Arc<Server>,
    gen: u64,
    link: &mut Link,
    timeouts: &TcpStream,
    client: &mut Client,
    stats: &ThreadStats,
    lanes: &mut [Lane],
) -> std::io::Result<()> {
    let repl = &server.repl;
    let timeout = server.settings().repl_timeout.max(1);
    timeouts.set_read_timeout(Some(Duration::from_millis(100)))?;
    let mut dec = resp::RequestDecoder::new(usize::MAX);
    // buf[..fed]: applied and passed on; buf[fed..start]: applied, not
    // passed on yet (a transaction still open); buf[start..]: not decoded.
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    let (mut fed, mut start) = (0, 0);
    let mut out = crate::net::replies::Replies::plain();
    let mut last_ack = Instant::now();
    let mut last_fack = aof_fsynced_offset(server);
    let mut last_io = Instant::now();
    loop {
        if !current(server, gen) || client.info.killed.load(Relaxed) {
            return Ok(());
        }
        // Every second, and as soon as this replica's AOF holds more of
        // the stream fsynced (a WAITAOF on the primary waits for it).
        let fack = aof_fsynced_offset(server);
        if last_ack.elapsed() >= Duration::from_secs(1) || fack > last_fack {
            send_ack(link, server, repl.offset())?;
            last_ack = Instant::now();
            last_fack = fack;
        }
        if last_io.elapsed() >= Duration::from_secs(timeout) {
            return Err(err("MASTER timeout: no data nor PING received..."));
        }
        let n = match link.read(&mut chunk) {
            Ok(0) => return Err(err("the primary closed the connection")),
            Ok(n) => n,
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                continue;
            }
            Err(e) => return Err(e),
        };
        if fed == buf.len() {
            buf.clear();
            (fed, start) = (0, 0);
        } else if fed > 0 {
            buf.drain(..fed);
            (fed, start) = (0, start - fed);
        }
        buf.extend_from_slice(&chunk[..n]);
        last_io = Instant::now();
        repl.link_last_io_ms.store(command::unix_ms(), Relaxed);
        repl.heard.heard();
        repl.net_in.fetch_add(n as u64, Relaxed);
        // The complete commands of this read are applied as one batch:
        // their bytes go on to the backlog together, under the apply lock
        // (a snapshot's start sees the data and the offset agree). As
        // Redis counts a replica's offset, an open MULTI is not passed on
        // (nor acknowledged) until its EXEC: a link lost in between
        // resumes from the MULTI, the half-queued transaction discarded.
        let apply = repl.apply_lock.lock();
        if !current(server, gen) {
            return Ok(());
        }
        let mut done = if client.tx.is_none() { start } else { fed };
        let mut clock = Clock::start();
        loop {
            match dec.decode(&buf[start..]) {
                Ok(Some(len)) => {
                    let frame = &buf[start..start + len];
                    let argv: Vec<&[u8]> = (0..dec.argc()).map(|i| dec.arg(frame, i)).collect();
                    if argv.len() >= 2
                        && argv[0].eq_ignore_ascii_case(b"replconf")
                        && argv[1].eq_ignore_ascii_case(b"getack")
                    {
                        // The offset before this request, as Redis answers
                        // (what is queued counts once applied).
                        run_lanes(server, &buf, lanes);
                        let end = repl.feed_raw(&buf[fed..done]);
                        note_applied(server, end);
                        fed = done;
                        send_ack(link, server, repl.offset())?;
                        last_ack = Instant::now();
                    } else if argv.is_empty() {
                    } else if let Some(shard) = client
                        .tx
                        .is_none()
                        .then(|| command::single_shard(server, &argv))
                        .flatten()
                    {
                        // One shard's keys, outside a transaction: queued
                        // in its lane, applied with the lanes below.
                        let lane = shard % lanes.len();
                        lanes[lane].queue.push((client.db, start..start + len));
                    } else {
                        // Anything else waits for what is queued before
                        // it, and runs alone.
                        run_lanes(server, &buf, lanes);
                        // The primary's stream obeys: nothing it sends
                        // parks, pauses or closes the link.
                        let _ =
                            command::dispatch(server, client, &argv, &mut out, stats, &mut clock);
                        out.clear();
                    }
                    start += len;
                    if client.tx.is_none() {
                        done = start;
                    }
                }
                Ok(None) => break,
                Err(e) => return Err(err(format!("Protocol error from MASTER: {e}"))),
            }
        }
        run_lanes(server, &buf, lanes);
        if done > fed {
            let end = repl.feed_raw(&buf[fed..done]);
            note_applied(server, end);
            fed = done;
        }
        repl.link_db.store(client.db, Relaxed);
        drop(apply);
    }
}

/// Below this many queued commands a lane runs on the link's thread (a
/// thread's start costs more than a few commands).
const LANE_THREAD_MIN: usize = 64;

/// Applies the lanes' queues: each lane in order, the lanes at once (their
/// shards differ). Returns once every queue is applied and empty.
fn run_lanes(server: &Server, buf: &[u8], lanes: &mut [Lane]) {
    let busy = lanes.iter().filter(|l| !l.queue.is_empty()).count();
    if busy == 0 {
        return;
    }
    if busy == 1 || lanes.iter().all(|l| l.queue.len() < LANE_THREAD_MIN) {
        for lane in lanes.iter_mut() {
            run_lane(server, buf, lane);
        }
        return;
    }
    std::thread::scope(|scope| {
        let Some((first, rest)) = lanes.split_first_mut() else {
            return;
        };
        for lane in rest.iter_mut().filter(|l| !l.queue.is_empty()) {
            scope.spawn(move || run_lane(server, buf, lane));
        }
        run_lane(server, buf, first);
    });
}

fn run_lane(server: &Server, buf: &[u8], lane: &mut Lane) {
    let mut dec = resp::RequestDecoder::new(usize::MAX);
    let mut out = crate::net::replies::Replies::plain();
    let mut clock = Clock::start();
    for (db, range) in lane.queue.drain(..) {
        let frame = &buf[range];
        if !matches!(dec.decode(frame), Ok(Some(_))) {
            continue;
        }
        let argv: Vec<&[u8]> = (0..dec.argc()).map(|i| dec.arg(frame, i)).collect();
        lane.client.db = db;
        let _ = command::dispatch(
            server,
            &mut lane.client,
            &argv,
            &mut out,
            &lane.stats,
            &mut clock,
        );
        out.clear();
    }
}

/// The stream up to `end` is applied: notes where this replica's AOF
/// ended then (see `fack`).
fn note_applied(server: &Server, end: u64) {
    if server.aof.enabled() {
        server
            .repl
            .aof_marks
            .lock()
            .applied(server.aof.appended_hint(), end);
    }
}

/// How far this replica's AOF holds the stream fsynced; `None` while the
/// AOF is off or its first rewrite runs (as Redis, no FACK then).
fn aof_fsynced_offset(server: &Server) -> Option<u64> {
    let fsynced = server.aof.fsynced()?;
    Some(server.repl.aof_marks.lock().fsynced(fsynced))
}

/// `REPLCONF ACK <offset>`, with `FACK <offset>` (how far this replica's
/// AOF holds the stream fsynced, for the primary's WAITAOF) while its AOF
/// is on: in a cluster also a promise not to bid for a while
/// (`replication::promise`), so none is sent once this replica has begun
/// to take its primary's place.
fn send_ack(link: &mut Link, server: &Server, offset: u64) -> std::io::Result<()> {
    if !server.repl.heard.may_promise() {
        return Ok(());
    }
    let off = offset.to_string();
    let fack = aof_fsynced_offset(server).map(|f| f.to_string());
    let mut argv: Vec<&[u8]> = vec![b"REPLCONF", b"ACK", off.as_bytes()];
    if let Some(f) = &fack {
        argv.extend_from_slice(&[b"FACK".as_slice(), f.as_bytes()]);
    }
    let mut buf = Vec::new();
    resp::encode::command(&mut buf, &argv);
    link.get_mut().write_all(&buf)
}
