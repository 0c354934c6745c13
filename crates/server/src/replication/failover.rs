//! FAILOVER: a coordinated hand-over from this primary to one of its
//! replicas, as Redis 6.2+ does it.
//!
//! 1. `waiting-for-sync`: writes are paused (CLIENT PAUSE WRITE) and the
//!    replicas asked for their offset until the target (or, without TO,
//!    any replica) has acknowledged everything; past TIMEOUT the failover
//!    is aborted, or with FORCE goes on anyway.
//! 2. `failover-in-progress`: this server becomes a replica of the target
//!    and sends it `PSYNC <id> <offset> FAILOVER`, which makes the target
//!    promote itself and continue the same history (`+CONTINUE <new id>`).
//!    Writes resume once the link is up; if the target refuses, this
//!    server is a primary again.
//!
//! One thread (`keel-failover`) runs a failover from start to end.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{replica, Primary, LINK_UP, ONLINE};
use crate::server::Server;

pub const NONE: u8 = 0;
pub const WAITING_FOR_SYNC: u8 = 1;
pub const IN_PROGRESS: u8 = 2;

/// The failover state and its abort request.
#[derive(Default)]
pub struct Failover {
    pub state: AtomicU8,
    abort: std::sync::atomic::AtomicBool,
    /// The link's next PSYNC carries FAILOVER.
    pub psync_failover: std::sync::atomic::AtomicBool,
}

impl Failover {
    pub fn state_name(&self) -> &'static str {
        match self.state.load(Relaxed) {
            WAITING_FOR_SYNC => "waiting-for-sync",
            IN_PROGRESS => "failover-in-progress",
            _ => "no-failover",
        }
    }

    pub fn request_abort(&self) {
        self.abort.store(true, Relaxed);
    }
}

/// What FAILOVER asked for, checked.
pub struct Request {
    pub target: Option<Primary>,
    pub timeout: Option<Duration>,
    pub force: bool,
}

/// Starts the failover thread (the command has checked the request).
pub fn start(server: &Arc<Server>, req: Request) -> std::io::Result<()> {
    let f = &server.repl.failover;
    f.abort.store(false, Relaxed);
    f.state.store(WAITING_FOR_SYNC, Relaxed);
    server.pause_clients(u64::MAX, crate::clients::pause::WRITE);
    let server2 = server.clone();
    std::thread::Builder::new()
        .name("keel-failover".into())
        .spawn(move || run(&server2, req))
        .map(drop)
        .inspect_err(|_| {
            server.unpause_clients();
            server.repl.failover.state.store(NONE, Relaxed);
        })
}

fn end(server: &Server, why: &str) {
    if !why.is_empty() {
        tracing::warn!("FAILOVER aborted: {why}");
    }
    server.repl.failover.state.store(NONE, Relaxed);
    server.unpause_clients();
}

fn run(server: &Arc<Server>, req: Request) {
    let repl = &server.repl;
    tracing::info!("FAILOVER requested");
    // Writes that passed the pause gate before it closed are in the
    // offset the replica must reach.
    server.stats.wait_in_flight();
    let deadline = req.timeout.map(|t| Instant::now() + t);
    // Ask once: a GETACK grows the stream itself (the replica answers
    // with its offset before it), so the replicas' next periodic ACK is
    // the one that can match; the cron sends no PING meanwhile.
    repl.feed_control(&[b"REPLCONF", b"GETACK", b"*"]);
    // Wait for a replica (the target) to have everything.
    let target = loop {
        if repl.failover.abort.load(Relaxed) {
            return end(server, "Failover manually aborted");
        }
        let offset = repl.offset();
        let caught_up = repl.replicas.read().iter().find_map(|r| {
            let matches = req
                .target
                .as_ref()
                .is_none_or(|t| t.host == r.ip && t.port == r.port.load(Relaxed));
            (matches && r.state.load(Relaxed) == ONLINE && r.ack.load(Relaxed) >= offset).then(
                || Primary {
                    host: r.ip.clone(),
                    port: r.port.load(Relaxed),
                },
            )
        });
        if let Some(t) = caught_up {
            break t;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            match (&req.target, req.force) {
                (Some(t), true) => break t.clone(),
                _ => return end(server, "Replica never caught up before timeout"),
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    tracing::info!(
        "Failover target {}:{} is synced, failing over.",
        target.host,
        target.port
    );
    repl.failover.state.store(IN_PROGRESS, Relaxed);
    repl.failover.psync_failover.store(true, Relaxed);
    replica::set_primary(server, Some(target.clone()));
    server
        .config
        .write()
        .set_internal("replicaof", format!("{} {}", target.host, target.port));
    replica::start_link(server);
    // Writes resume once the target has taken over (or refused).
    let until = Instant::now()
        + req
            .timeout
            .unwrap_or(Duration::from_secs(10))
            .max(Duration::from_secs(5));
    while Instant::now() < until {
        if repl.link_state.load(Relaxed) == LINK_UP {
            tracing::info!("Failover target accepted the PSYNC FAILOVER; now a replica.");
            return end(server, "");
        }
        if repl.failover.abort.load(Relaxed) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // Refused or unreachable: a primary again, as before.
    repl.failover.psync_failover.store(false, Relaxed);
    replica::set_primary(server, None);
    server
        .config
        .write()
        .set_internal("replicaof", String::new());
    end(server, "the target did not accept the PSYNC FAILOVER");
}
