//! Network: listeners (TCP and Unix socket), accepting, and handing each
//! connection to a worker thread.

pub mod balance;
pub mod buffer_pool;
pub mod busy;
pub mod connection;
pub mod idle_poll;
pub mod listeners;
pub mod output_budget;
pub mod replies;
pub mod tls;

use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

use crate::server::{Server, StartError};

pub enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, String),
    /// `tls-port`: connections speak TLS.
    Tls(TcpListener),
}

/// A socket between runtimes: std types cross threads, and the receiving
/// worker registers them with its own reactor.
pub enum RawStream {
    Tcp(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
    /// Accepted on `tls-port`, before the TLS handshake.
    TlsNew(std::net::TcpStream),
    /// A TLS connection moving between workers: its socket and state.
    Tls(std::net::TcpStream, Box<rustls::ServerConnection>),
}

/// A connection on its way to a worker: just accepted, or moved from
/// another worker with its session state (see `balance`).
pub enum Incoming {
    New {
        stream: RawStream,
        addr: String,
        laddr: String,
    },
    Resume {
        stream: RawStream,
        session: Box<connection::Session>,
    },
}

/// The sockets a server starts with: `port` and `tls-port` on every
/// `bind` address (see `listeners::bind`), and `unixsocket` if set.
pub struct Bound {
    pub plain: Vec<std::net::TcpListener>,
    pub tls: Vec<std::net::TcpListener>,
    pub unix: Option<Listener>,
}

/// Binds what the configuration asks for (see [`Bound`]).
pub fn listen(server: &Server) -> Result<Bound, StartError> {
    let maxclients = server.settings().maxclients as u64;
    if let Err(fits) = fit_open_files(maxclients) {
        if fits == 0 {
            return Err(StartError::Listen(
                "the open files limit ('ulimit -n') is too low to start".into(),
            ));
        }
        let fits = fits.to_string();
        let _ = server
            .config
            .write()
            .set_many(&[(b"maxclients", fits.as_bytes())], false);
    }
    let cfg = server.config.read().clone();
    let s = cfg.settings();
    let backlog = s.tcp_backlog.clamp(1, 65535);
    if s.tls_port != 0 {
        server
            .tls
            .configure(&cfg)
            .map_err(|e| StartError::Listen(format!("Failed to configure TLS: {e}")))?;
    }
    let plain = listeners::bind(&s.bind, s.port, backlog).map_err(StartError::Listen)?;
    let tls = listeners::bind(&s.bind, s.tls_port, backlog).map_err(StartError::Listen)?;
    let mut unix = None;
    if let Some(path) = &s.unixsocket {
        let _ = std::fs::remove_file(path);
        let l = UnixListener::bind(path)
            .map_err(|e| StartError::Listen(format!("Failed opening Unix socket {path}: {e}")))?;
        let perm = s.unixsocketperm;
        if perm != 0 {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(perm))?;
        }
        if let Some(group) = &s.unixsocketgroup {
            listeners::chown_group(path, group).map_err(|e| {
                StartError::Listen(format!("Failed opening Unix socket {path}: {e}"))
            })?;
        }
        unix = Some(Listener::Unix(l, path.clone()));
    }
    if plain.is_empty() && tls.is_empty() && unix.is_none() {
        return Err(StartError::Listen(
            "no listening socket configured (port 0 and no unixsocket)".into(),
        ));
    }
    Ok(Bound { plain, tls, unix })
}

/// Accepts forever, dealing connections to workers in turn.
pub async fn accept_loop(server: Arc<Server>, listener: &Listener) {
    loop {
        let incoming = match listener {
            Listener::Tcp(l) | Listener::Tls(l) => match l.accept().await {
                Ok((s, peer)) => {
                    let local = s.local_addr().unwrap_or(peer);
                    tune_tcp(&server, &s);
                    let tls = matches!(listener, Listener::Tls(_));
                    s.into_std().map(|s| Incoming::New {
                        stream: if tls {
                            RawStream::TlsNew(s)
                        } else {
                            RawStream::Tcp(s)
                        },
                        addr: peer.to_string(),
                        laddr: local.to_string(),
                    })
                }
                Err(e) => Err(e),
            },
            Listener::Unix(l, path) => match l.accept().await {
                Ok((s, _)) => s.into_std().map(|s| Incoming::New {
                    stream: RawStream::Unix(s),
                    addr: format!("{path}:0"),
                    laddr: format!("{path}:0"),
                }),
                Err(e) => Err(e),
            },
        };
        let incoming = match incoming {
            Ok(i) => i,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!("accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        server.stats.connections_received.fetch_add(1, Relaxed);
        let worker = server.workers.place();
        server.workers.send(worker, incoming);
    }
}

fn tune_tcp(server: &Server, s: &TcpStream) {
    let _ = s.set_nodelay(true);
    let idle = server.settings().tcp_keepalive;
    if idle > 0 {
        let fd = s.as_raw_fd();
        let on: libc::c_int = 1;
        let idle = idle as libc::c_int;
        let size = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: setsockopt on a valid, open socket with int-sized options.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_KEEPALIVE,
                &on as *const _ as *const libc::c_void,
                size,
            );
            libc::setsockopt(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_KEEPIDLE,
                &idle as *const _ as *const libc::c_void,
                size,
            );
        }
    }
}

/// A connection's socket on a worker's runtime, whatever its kind (TCP,
/// Unix, TLS): the one connection loop reads and writes it, and
/// hands it back as a [`RawStream`] to move it to another worker.
// Connection tasks run on each worker's LocalSet: the futures need not be
// Send, so `async fn` (whose futures cannot promise Send) is fine here.
#[allow(async_fn_in_trait)]
pub trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin {
    fn into_raw(self) -> std::io::Result<RawStream>;

    /// Reads into `buf`'s spare room once something arrives (data, the end
    /// of the stream, an error). A stream that can wait for data without a
    /// buffer calls `idle` when nothing has arrived yet, which may give the
    /// connection's buffers back (an empty `buf` among them), and waits
    /// holding none: ten thousand idle clients then cost no buffers at
    /// all, as Redis frees an idle client's query buffer. `buf` gets its
    /// room back when data comes. The default, for a stream that cannot
    /// tell whether bytes wait (TLS keeps decrypted bytes its socket does
    /// not show), waits in the read.
    async fn read_or_idle(
        &mut self,
        buf: &mut Vec<u8>,
        idle: impl FnMut(&mut Vec<u8>),
    ) -> std::io::Result<usize> {
        let _ = idle;
        tokio::io::AsyncReadExt::read_buf(self, buf).await
    }
}

/// `Stream::read_or_idle` for a socket whose readiness tokio tracks
/// (`ready`: its poll_read_ready).
async fn read_or_idle_socket<S: tokio::io::AsyncRead + Unpin>(
    s: &mut S,
    buf: &mut Vec<u8>,
    mut idle: impl FnMut(&mut Vec<u8>),
    ready: fn(&S, &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>>,
) -> std::io::Result<usize> {
    use std::future::Future;
    use std::task::Poll;
    let room = buf.capacity() - buf.len();
    loop {
        // One attempt through poll_read, not try_read: poll_read takes a
        // short read for a drained socket and reads again only after the
        // next readiness event, so connections are served in the order
        // their bytes came. An eager try_read here took a request that
        // arrived after another connection's, which then ran first (a
        // PING sent after an EVAL got its reply only after the script).
        {
            let mut read = std::pin::pin!(tokio::io::AsyncReadExt::read_buf(&mut *s, &mut *buf));
            if let Poll::Ready(r) =
                std::future::poll_fn(|cx| Poll::Ready(read.as_mut().poll(cx))).await
            {
                return r;
            }
        }
        idle(buf);
        std::future::poll_fn(|cx| ready(s, cx)).await?;
        buffer_pool::refill(buf, room);
    }
}

impl Stream for TcpStream {
    fn into_raw(self) -> std::io::Result<RawStream> {
        self.into_std().map(RawStream::Tcp)
    }

    async fn read_or_idle(
        &mut self,
        buf: &mut Vec<u8>,
        idle: impl FnMut(&mut Vec<u8>),
    ) -> std::io::Result<usize> {
        read_or_idle_socket(self, buf, idle, TcpStream::poll_read_ready).await
    }
}

impl Stream for tls::TlsStream {
    fn into_raw(self) -> std::io::Result<RawStream> {
        let (io, tls) = self.into_parts();
        io.into_std().map(|s| RawStream::Tls(s, tls))
    }
}

impl Stream for UnixStream {
    fn into_raw(self) -> std::io::Result<RawStream> {
        self.into_std().map(RawStream::Unix)
    }

    async fn read_or_idle(
        &mut self,
        buf: &mut Vec<u8>,
        idle: impl FnMut(&mut Vec<u8>),
    ) -> std::io::Result<usize> {
        read_or_idle_socket(self, buf, idle, UnixStream::poll_read_ready).await
    }
}

/// Descriptors kept besides the clients' (Redis's
/// CONFIG_MIN_RESERVED_FDS): listeners, log and snapshot files.
pub const RESERVED_FDS: u64 = 32;

/// Raises the open-files limit so `maxclients` clients fit, as Redis's
/// adjustOpenFilesLimit (at start and on CONFIG SET maxclients): a limit
/// already high enough is left alone; one that cannot be raised that far
/// is raised as far as it goes (in Redis's steps of 16 below the wanted
/// limit; the hard limit is set to the same value, as Redis does), and the
/// number of clients that fit is the error, logged with Redis's warnings.
pub fn fit_open_files(maxclients: u64) -> Result<(), u64> {
    let maxfiles = maxclients.saturating_add(RESERVED_FDS);
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) writes one rlimit we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == -1 {
        let e = std::io::Error::last_os_error();
        tracing::warn!("Unable to obtain the current NOFILE limit ({}), assuming 1024 and setting the max clients configuration accordingly.", strerror(&e));
        return Err(1024 - RESERVED_FDS);
    }
    let old = limit.rlim_cur;
    if old >= maxfiles {
        return Ok(());
    }
    let set = |n: u64| {
        let l = libc::rlimit {
            rlim_cur: n,
            rlim_max: n,
        };
        // SAFETY: setrlimit(2) reads one rlimit we own.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &l) } == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    };
    let error = match set(maxfiles) {
        Ok(()) => {
            tracing::info!(
                "Increased maximum number of open files to {maxfiles} (it was originally set to {old})."
            );
            return Ok(());
        }
        Err(e) => e,
    };
    // Redis tries maxfiles - 16, - 32, ... down to the old limit; without
    // the privilege to raise the hard limit the first that works is the
    // first at or under it, found here without the thousands of calls.
    let ceiling = limit.rlim_max.max(old);
    let steps = (maxfiles - ceiling).div_ceil(16);
    let mut best = maxfiles.saturating_sub(steps * 16).max(old);
    while best > old && set(best).is_err() {
        best = best.saturating_sub(16).max(old);
    }
    if best <= RESERVED_FDS {
        tracing::warn!("Your current 'ulimit -n' of {old} is not enough for the server to start. Please increase your open file limit to at least {maxfiles}. Exiting.");
        return Err(0);
    }
    let fits = best - RESERVED_FDS;
    tracing::warn!(
        "You requested maxclients of {maxclients} requiring at least {maxfiles} max file descriptors."
    );
    tracing::warn!(
        "Server can't set maximum open files to {maxfiles} because of OS error: {}.",
        strerror(&error)
    );
    tracing::warn!("Current maximum open files is {best}. maxclients has been reduced to {fits} to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'.");
    Err(fits)
}

/// An OS error's text as C's strerror gives it.
fn strerror(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// Closes the clients idle for more than `timeout` seconds, as Redis's
/// clientsCronHandleTimeout: only those parked between requests (a client
/// blocked on keys or subscribed is never idle in this sense; half a
/// request or an unread reply has its own clock in the connection, see
/// `connection`). Run from the cron, so CONFIG SET timeout reaches clients
/// already waiting, and waiting costs no timer.
pub fn close_idle_clients(server: &Server) {
    let timeout = server.timeout_secs.load(Relaxed);
    if timeout == 0 {
        return;
    }
    let limit_ms = timeout.saturating_mul(1000);
    server.clients.kill_where(|c| {
        let idle_ms = c.idle_ms();
        let close = c.parked_idle.load(Relaxed) && !c.killed.load(Relaxed) && idle_ms > limit_ms;
        if close {
            tracing::debug!(id = c.id, addr = %c.addr, "Closing idle client");
        }
        close
    });
}

/// Reconstitutes a tokio stream on the worker's runtime.
pub fn into_tokio_tcp(s: std::net::TcpStream) -> std::io::Result<TcpStream> {
    s.set_nonblocking(true)?;
    TcpStream::from_std(s)
}

pub fn into_tokio_unix(s: std::os::unix::net::UnixStream) -> std::io::Result<UnixStream> {
    s.set_nonblocking(true)?;
    UnixStream::from_std(s)
}
