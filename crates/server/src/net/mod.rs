//! Network: listeners (TCP and Unix socket), accepting, and handing each
//! connection to a worker thread.

pub mod balance;
pub mod busy;
pub mod connection;
pub mod idle_poll;
pub mod output_budget;

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use tokio::net::{TcpListener, TcpSocket, TcpStream, UnixListener, UnixStream};

use crate::server::{Server, StartError};

pub enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, String),
}

/// A socket between runtimes: std types cross threads, and the receiving
/// worker registers them with its own reactor.
pub enum RawStream {
    Tcp(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
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

/// Binds every address in `bind` on `port` (a leading `-` marks an address
/// whose failure is not fatal, as in Redis; `*` means all IPv4, `::*` all
/// IPv6), and `unixsocket` if set.
pub async fn listen(server: &Server) -> Result<Vec<Listener>, StartError> {
    let cfg = server.config.read().clone();
    let port = cfg.get_int("port") as u16;
    let backlog = cfg.get_int("tcp-backlog").clamp(1, 65535) as u32;
    let mut out = Vec::new();
    if port != 0 {
        for addr in cfg.get("bind").split_whitespace() {
            let (optional, addr) = match addr.strip_prefix('-') {
                Some(a) => (true, a),
                None => (false, addr),
            };
            let ip = match addr {
                "*" => "0.0.0.0",
                "::*" => "::",
                a => a,
            };
            let sock_addr: SocketAddr = match format!("{ip}:{port}")
                .parse()
                .or_else(|_| format!("[{ip}]:{port}").parse())
            {
                Ok(a) => a,
                Err(_) => return Err(StartError::Listen(format!("Invalid bind address '{addr}'"))),
            };
            match bind_tcp(sock_addr, backlog) {
                Ok(l) => {
                    if let Ok(a) = l.local_addr() {
                        server.tcp_port.store(a.port() as usize, Relaxed);
                    }
                    out.push(Listener::Tcp(l));
                }
                Err(e) if optional => tracing::warn!("could not bind {sock_addr}: {e}"),
                Err(e) => {
                    return Err(StartError::Listen(format!(
                        "Could not create server TCP listening socket {sock_addr}: {e}"
                    )))
                }
            }
        }
    }
    let path = cfg.get("unixsocket");
    if !path.is_empty() {
        let _ = std::fs::remove_file(path);
        let l = UnixListener::bind(path)
            .map_err(|e| StartError::Listen(format!("Failed opening Unix socket {path}: {e}")))?;
        let perm = cfg.get_int("unixsocketperm");
        if perm != 0 {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(perm as u32))?;
        }
        out.push(Listener::Unix(l, path.to_string()));
    }
    if out.is_empty() {
        return Err(StartError::Listen(
            "no listening socket configured (port 0 and no unixsocket)".into(),
        ));
    }
    Ok(out)
}

fn bind_tcp(addr: SocketAddr, backlog: u32) -> std::io::Result<TcpListener> {
    let sock = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    sock.set_reuseaddr(true)?;
    sock.bind(addr)?;
    sock.listen(backlog)
}

/// Accepts forever, dealing connections to workers in turn.
pub async fn accept_loop(server: Arc<Server>, listener: Listener) {
    loop {
        let incoming = match &listener {
            Listener::Tcp(l) => match l.accept().await {
                Ok((s, peer)) => {
                    let local = s.local_addr().unwrap_or(peer);
                    tune_tcp(&server, &s);
                    s.into_std().map(|s| Incoming::New {
                        stream: RawStream::Tcp(s),
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
    let idle = server.config.read().get_int("tcp-keepalive");
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
/// Unix; TLS next): the one connection loop reads and writes it, and
/// hands it back as a [`RawStream`] to move it to another worker.
pub trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin {
    fn into_raw(self) -> std::io::Result<RawStream>;
}

impl Stream for TcpStream {
    fn into_raw(self) -> std::io::Result<RawStream> {
        self.into_std().map(RawStream::Tcp)
    }
}

impl Stream for UnixStream {
    fn into_raw(self) -> std::io::Result<RawStream> {
        self.into_std().map(RawStream::Unix)
    }
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
