//! The connections of a worker stuck in a script past busy-reply-threshold.
//!
//! A worker runs its connections one at a time: while one of them runs a
//! long script, the others on that thread cannot run. Redis in the same
//! state keeps reading its clients from the script's hook and refuses
//! their commands with `-BUSY` (processEventsWhileBlocked). keel does the
//! same from the script's hook ([`answer_stuck`]), for every connection of
//! the worker parked waiting for a request with nothing half-read
//! (`ClientInfo::parked_idle`; the connection task is suspended on this
//! very thread, so nothing races with it):
//! - it peeks at the socket and takes the complete requests it finds;
//! - commands without `allow_busy` get `-BUSY` (inside MULTI that dooms the
//!   transaction; EXEC then discards it with EXECABORT), as Redis;
//! - the others do what their table column `WhileBusy` says, so this
//!   module knows no command by name: those that read no state of the
//!   connection run (SCRIPT KILL, SHUTDOWN...); QUIT closes; MULTI and
//!   DISCARD change a shadow of the connection's transaction state
//!   ([`BusyShadow`]) that the connection applies when it runs again;
//! - anything else (a request cut short, AUTH, HELLO, WATCH, RESET: they
//!   need the connection's own state) and everything after it stays in
//!   the socket, for the connection to read once the script ends.
//!
//! New connections never land on a busy worker: placement skips it, and a
//! standby worker (`Workers::standby`) takes them when every worker is
//! busy, so a fresh `redis-cli SCRIPT KILL` always gets through.

use std::sync::atomic::Ordering::Relaxed;

use resp::{encode, RequestDecoder};

use crate::client::{Client, ClientInfo};
use crate::command::{self, table::flag, table::WhileBusy};
use crate::observe::stats::ThreadStats;
use crate::server::Server;

/// The transaction state of a connection, as the hook changed it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum TxShadow {
    #[default]
    None,
    Open,
    /// Open, and a command was refused: EXEC will abort.
    Doomed,
}

impl TxShadow {
    /// `ClientInfo::tx_state` encoding, published by the connection.
    pub fn from_u8(v: u8) -> TxShadow {
        match v {
            1 => TxShadow::Open,
            2 => TxShadow::Doomed,
            _ => TxShadow::None,
        }
    }

    pub fn to_u8(self) -> u8 {
        match self {
            TxShadow::None => 0,
            TxShadow::Open => 1,
            TxShadow::Doomed => 2,
        }
    }
}

/// What the hook did to a connection while its task was suspended.
#[derive(Debug, Default)]
pub struct BusyShadow {
    pub tx: TxShadow,
    /// Replies the socket did not take; the connection writes them first.
    pub unsent: Vec<u8>,
}

/// Largest peek: a request longer than this waits for the connection.
const PEEK: usize = 64 * 1024;

/// Answers the parked connections of `worker` (see the module docs).
/// `busy_error` is the BUSY text for the script that runs.
pub fn answer_stuck(server: &Server, worker: usize, busy_error: &str, stats: &ThreadStats) {
    let stuck: Vec<std::sync::Arc<ClientInfo>> = server
        .clients
        .snapshot()
        .into_iter()
        .filter(|c| c.worker.load(Relaxed) == worker && c.parked_idle.load(Relaxed))
        .collect();
    let mut buf = vec![0u8; PEEK];
    for info in stuck {
        answer_one(server, &info, busy_error, stats, &mut buf);
    }
}

fn answer_one(
    server: &Server,
    info: &std::sync::Arc<ClientInfo>,
    busy_error: &str,
    stats: &ThreadStats,
    buf: &mut [u8],
) {
    // SAFETY: `info.fd` is the connection's socket, kept open while the
    // client is registered; `buf` is a valid writable buffer.
    let n = unsafe {
        libc::recv(
            info.fd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    if n <= 0 {
        return;
    }
    let data = &buf[..n as usize];
    let mut shadow = info.busy_shadow.lock();
    if !info.busy_changed.load(Relaxed) {
        shadow.tx = TxShadow::from_u8(info.tx_state.load(Relaxed));
    }
    if !shadow.unsent.is_empty() {
        // The socket was full last time: leave the rest to the connection.
        return;
    }
    let mut dec = RequestDecoder::new(server.proto_max_bulk_len.load(Relaxed));
    let mut out = super::replies::Replies::plain();
    let mut used = 0;
    let mut quit = false;
    while let Ok(Some(len)) = dec.decode(&data[used..]) {
        let frame = &data[used..used + len];
        let argv: Vec<&[u8]> = (0..dec.argc()).map(|i| dec.arg(frame, i)).collect();
        if !argv.is_empty()
            && !answer(
                server,
                info,
                &argv,
                &mut shadow,
                busy_error,
                &mut out,
                stats,
                &mut quit,
            )
        {
            break;
        }
        used += len;
        if quit {
            break;
        }
    }
    if used == 0 {
        return;
    }
    // Take the answered requests out of the socket (they are there: we
    // just peeked them), then send the replies.
    // SAFETY: as above; `used <= n` bytes are queued on the socket.
    unsafe {
        libc::recv(info.fd, buf.as_mut_ptr().cast(), used, libc::MSG_DONTWAIT);
    }
    let mut sent = 0;
    while sent < out.len() {
        // SAFETY: `out[sent..]` is a valid readable buffer.
        let w = unsafe {
            libc::send(
                info.fd,
                out[sent..].as_ptr().cast(),
                out.len() - sent,
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if w <= 0 {
            break;
        }
        sent += w as usize;
    }
    shadow.unsent.extend_from_slice(&out[sent..]);
    info.busy_changed.store(true, Relaxed);
    if quit {
        info.kill();
    }
}

/// Answers one request; false leaves it (and what follows) for the
/// connection.
#[allow(clippy::too_many_arguments)]
fn answer(
    server: &Server,
    info: &std::sync::Arc<ClientInfo>,
    argv: &[&[u8]],
    shadow: &mut BusyShadow,
    busy_error: &str,
    out: &mut super::replies::Replies,
    stats: &ThreadStats,
    quit: &mut bool,
) -> bool {
    let cmd = match command::resolve(&server.commands, argv) {
        Ok(cmd) => cmd,
        Err(e) => {
            stats.rejected(command::refused_command(&server.commands, argv).map(|c| c.id));
            if shadow.tx != TxShadow::None {
                shadow.tx = TxShadow::Doomed;
            }
            command::reply_error(out, stats, e.0.as_bytes());
            return true;
        }
    };
    if !cmd.has(flag::ALLOW_BUSY) {
        stats.rejected(Some(cmd.id));
        if cmd.has(flag::EXEC) && shadow.tx != TxShadow::None {
            shadow.tx = TxShadow::None;
            let msg = format!("EXECABORT Transaction discarded because of: {busy_error}");
            command::reply_error(out, stats, msg.as_bytes());
        } else {
            if shadow.tx != TxShadow::None {
                shadow.tx = TxShadow::Doomed;
            }
            command::reply_error(out, stats, busy_error.as_bytes());
        }
        return true;
    }
    match cmd.while_busy {
        WhileBusy::Run => {
            // It reads nothing of the connection but its protocol and
            // database; what it would ask of the connection is dropped
            // with the stand-in.
            let mut client = Client::stand_in(info.clone(), &server.acl);
            client.proto = info.resp.load(Relaxed);
            client.db = info.db.load(Relaxed) as usize;
            let mut clock = command::Clock::start();
            let _ = command::dispatch(server, &mut client, argv, out, stats, &mut clock);
            true
        }
        WhileBusy::OpenTx => {
            if shadow.tx == TxShadow::None {
                shadow.tx = TxShadow::Open;
                encode::simple(out, b"OK");
            } else {
                encode::error(out, b"ERR MULTI calls can not be nested");
            }
            true
        }
        WhileBusy::DiscardTx if shadow.tx != TxShadow::None => {
            shadow.tx = TxShadow::None;
            encode::simple(out, b"OK");
            true
        }
        WhileBusy::Close => {
            encode::simple(out, b"OK");
            *quit = true;
            true
        }
        WhileBusy::DiscardTx | WhileBusy::Wait | WhileBusy::Refuse => false,
    }
}

/// The connection's side, when it runs again: applies what the hook did.
#[inline]
pub fn resume(server: &Server, client: &mut Client) -> Option<Vec<u8>> {
    // A plain load first: a swap is a locked instruction, on every read.
    if !client.info.busy_changed.load(Relaxed) {
        return None;
    }
    Some(apply_shadow(server, client))
}

#[cold]
fn apply_shadow(server: &Server, client: &mut Client) -> Vec<u8> {
    client.info.busy_changed.store(false, Relaxed);
    let shadow = std::mem::take(&mut *client.info.busy_shadow.lock());
    match shadow.tx {
        TxShadow::None if client.tx.is_some() => {
            command::discard_transaction(server, client);
        }
        TxShadow::None => {}
        TxShadow::Open | TxShadow::Doomed => {
            let tx = client.tx.get_or_insert_with(|| {
                client.info.multi_len.store(0, Relaxed);
                Default::default()
            });
            tx.doomed |= shadow.tx == TxShadow::Doomed;
        }
    }
    shadow.unsent
}
