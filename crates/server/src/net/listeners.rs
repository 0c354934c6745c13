//! The TCP listening sockets of `port` and `tls-port` on the `bind`
//! addresses, which CONFIG SET can change while the server runs (Redis's
//! changeListenPort and changeBindAddr): the old sockets are closed, the
//! new ones bound, and a failure leaves none of the new ones open (CONFIG
//! SET then restores the old values and binds them again). Connections
//! already accepted are not touched.

use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::oneshot;

use super::{accept_loop, Listener};
use crate::server::Server;

/// Which port a set of sockets serves.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Port {
    Plain,
    Tls,
}

/// The accept loops running, per port, and the runtime they run on.
#[derive(Default)]
pub struct Listeners {
    runtime: std::sync::OnceLock<tokio::runtime::Handle>,
    plain: Mutex<Vec<Running>>,
    tls: Mutex<Vec<Running>>,
}

/// One accept loop: a message on `stop` ends it; it answers on the
/// channel it is given once its socket is closed.
struct Running {
    stop: oneshot::Sender<std::sync::mpsc::SyncSender<()>>,
}

impl Running {
    fn close(self) {
        let (done, closed) = std::sync::mpsc::sync_channel(1);
        if self.stop.send(done).is_ok() {
            // The loop drops its socket at its next poll, on the
            // accepting runtime: wait for it, so the address is free
            // before anyone binds it again.
            let _ = closed.recv_timeout(Duration::from_secs(5));
        }
    }
}

impl Listeners {
    fn running(&self, port: Port) -> &Mutex<Vec<Running>> {
        match port {
            Port::Plain => &self.plain,
            Port::Tls => &self.tls,
        }
    }

    /// Starts accepting on `sockets` (bound by [`bind`]) for `port`, on
    /// the runtime of the first call (the main thread's).
    pub fn start(&self, server: &Arc<Server>, port: Port, sockets: Vec<std::net::TcpListener>) {
        let runtime = self
            .runtime
            .get_or_init(tokio::runtime::Handle::current)
            .clone();
        let mut running = self.running(port).lock();
        for socket in sockets {
            let (stop, stopped) = oneshot::channel::<std::sync::mpsc::SyncSender<()>>();
            let server = server.clone();
            runtime.spawn(async move {
                let listener = match tokio::net::TcpListener::from_std(socket) {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::warn!("could not watch a listening socket: {e}");
                        return;
                    }
                };
                let listener = match port {
                    Port::Plain => Listener::Tcp(listener),
                    Port::Tls => Listener::Tls(listener),
                };
                tokio::select! {
                    () = accept_loop(server, &listener) => {}
                    asked = stopped => {
                        drop(listener);
                        if let Ok(done) = asked {
                            let _ = done.send(());
                        }
                    }
                }
            });
            running.push(Running { stop });
        }
    }

    fn close(&self, port: Port) {
        let running = std::mem::take(&mut *self.running(port).lock());
        for r in running {
            r.close();
        }
    }

    /// `port` or `tls-port` changed: closes that port's sockets and
    /// binds the new one on every `bind` address (none for 0).
    pub fn change_port(&self, server: &Arc<Server>, port: Port) -> Result<(), String> {
        self.close(port);
        let sockets = bind_port(server, port)?;
        self.start(server, port, sockets);
        Ok(())
    }

    /// `bind` changed: closes both ports' sockets and binds both on the
    /// new addresses; on a failure, neither is left open.
    pub fn change_bind(&self, server: &Arc<Server>) -> Result<(), String> {
        self.close(Port::Plain);
        self.close(Port::Tls);
        let plain = bind_port(server, Port::Plain)?;
        let tls = bind_port(server, Port::Tls)?;
        self.start(server, Port::Plain, plain);
        self.start(server, Port::Tls, tls);
        Ok(())
    }
}

/// Binds the configured number of `port` on every `bind` address.
fn bind_port(server: &Server, port: Port) -> Result<Vec<std::net::TcpListener>, String> {
    let s = server.settings();
    let number = match port {
        Port::Plain => s.port,
        Port::Tls => s.tls_port,
    };
    let sockets = bind(&s.bind, number, s.tcp_backlog.clamp(1, 65535)).map_err(|e| {
        tracing::warn!("{e}");
        e
    })?;
    if port == Port::Plain {
        server.tcp_port.store(number as usize, Relaxed);
    }
    Ok(sockets)
}

/// Binds `port` on every address of `bind` (none when `port` is 0), as
/// Redis's listenToPort: a leading `-` marks an address that may be
/// unavailable, `*` means all IPv4 and `::*` all IPv6 addresses, and an
/// address family the machine lacks is skipped. On an error, the sockets
/// already bound are closed.
pub fn bind(
    bind: &[String],
    port: u16,
    backlog: u32,
) -> Result<Vec<std::net::TcpListener>, String> {
    let mut out = Vec::new();
    if port == 0 {
        return Ok(out);
    }
    for addr in bind {
        let (optional, addr) = match addr.strip_prefix('-') {
            Some(a) => (true, a),
            None => (false, addr.as_str()),
        };
        let ip = match addr {
            "*" => "0.0.0.0",
            "::*" => "::",
            a => a,
        };
        let sock_addr: SocketAddr = format!("{ip}:{port}")
            .parse()
            .or_else(|_| format!("[{ip}]:{port}").parse())
            .map_err(|_| format!("Invalid bind address '{addr}'"))?;
        match bind_tcp(sock_addr, backlog) {
            Ok(l) => out.push(l),
            Err(e) => {
                tracing::warn!("Could not create server TCP listening socket {sock_addr}: {e}");
                let skip = match e.raw_os_error() {
                    Some(libc::EADDRNOTAVAIL) => optional,
                    Some(
                        libc::ENOPROTOOPT
                        | libc::EPROTONOSUPPORT
                        | libc::ESOCKTNOSUPPORT
                        | libc::EPFNOSUPPORT
                        | libc::EAFNOSUPPORT,
                    ) => true,
                    _ => false,
                };
                if !skip {
                    return Err(format!(
                        "Could not create server TCP listening socket {sock_addr}: {e}"
                    ));
                }
            }
        }
    }
    Ok(out)
}

fn bind_tcp(addr: SocketAddr, backlog: u32) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    sock.set_reuse_address(true)?;
    if addr.is_ipv6() {
        // As Redis's anetV6Only: `::` then does not take the IPv4 port
        // that `*` binds beside it.
        sock.set_only_v6(true)?;
    }
    sock.bind(&addr.into())?;
    sock.listen(backlog as i32)?;
    sock.set_nonblocking(true)?;
    Ok(sock.into())
}

/// Valkey 8.0's `unixsocketgroup`: gives the Unix socket at `path` to the
/// group named `group` (its owner unchanged), as Valkey's anetListen.
pub fn chown_group(path: &str, group: &str) -> Result<(), String> {
    let gid = group_id(group)
        .ok_or_else(|| format!("getgrnam error for group '{group}': no such group"))?;
    std::os::unix::fs::chown(path, None, Some(gid))
        .map_err(|e| format!("chown error for group '{group}': {e}"))
}

/// The id of the group named `name`, from the system's group database.
fn group_id(name: &str) -> Option<u32> {
    let name = std::ffi::CString::new(name).ok()?;
    // SAFETY: all-zero is a valid `struct group` to be filled in.
    let mut grp: libc::group = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::group = std::ptr::null_mut();
    let mut buf = vec![0 as libc::c_char; 1 << 16];
    // SAFETY: every pointer is valid for the call; getgrnam_r writes only
    // into `grp`, `buf` (of the length given) and `found`.
    let rc = unsafe {
        libc::getgrnam_r(
            name.as_ptr(),
            &mut grp,
            buf.as_mut_ptr(),
            buf.len(),
            &mut found,
        )
    };
    (rc == 0 && !found.is_null()).then_some(grp.gr_gid)
}
