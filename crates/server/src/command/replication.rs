//! REPLICAOF (SLAVEOF), REPLCONF, PSYNC, SYNC, WAIT, ROLE: the commands of
//! replication (`crate::replication` does the work).

use std::sync::atomic::Ordering::Relaxed;

use super::args::is;
use super::table::Registry;
use super::{CmdError, CmdResult, Ctx};
use crate::replication::master::{ReplConf, SyncRequest};
use crate::replication::{replica, Primary};

pub(super) fn register(r: &mut Registry) {
    r.add("replicaof", replicaof);
    r.add("slaveof", replicaof);
    r.add("replconf", replconf);
    r.add("psync", psync);
    r.add("sync", sync);
    r.add("wait", wait);
    r.add("role", role);
}

/// REPLICAOF host port | NO ONE
fn replicaof(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let server = cx.server;
    if is(argv[1], "no") && is(argv[2], "one") {
        if server.repl.is_replica() {
            replica::set_primary(server, None);
            server
                .config
                .write()
                .set_internal("replicaof", String::new());
            tracing::info!(
                "MASTER MODE enabled (user request from '{}')",
                cx.client.info.addr
            );
        }
        cx.ok();
        return Ok(());
    }
    let port = resp::parse_i64(argv[2])
        .ok_or_else(|| CmdError::new("ERR value is not an integer or out of range"))?;
    if !(0..=65535).contains(&port) {
        return Err(CmdError::new("ERR Invalid master port"));
    }
    let host = String::from_utf8_lossy(argv[1]).into_owned();
    if let Some(p) = server.repl.primary() {
        if p.host.eq_ignore_ascii_case(&host) && p.port as i64 == port {
            cx.simple(b"OK Already connected to specified master");
            return Ok(());
        }
    }
    replica::set_primary(
        server,
        Some(Primary {
            host: host.clone(),
            port: port as u16,
        }),
    );
    server
        .config
        .write()
        .set_internal("replicaof", format!("{host} {port}"));
    if let Some(arc) = server.arc() {
        replica::start_link(&arc);
    }
    tracing::info!(
        "REPLICAOF {host}:{port} enabled (user request from '{}')",
        cx.client.info.addr
    );
    cx.ok();
    Ok(())
}

/// REPLCONF option value [option value ...]: what a replica tells its
/// primary before PSYNC (acknowledgements after it go to the replica's
/// stream reader, see `replication::master`).
fn replconf(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if argv.len().is_multiple_of(2) {
        return Err(CmdError::new("ERR syntax error"));
    }
    let mut conf = cx.client.repl_conf.take().unwrap_or_default();
    let result = apply_replconf(&mut conf, argv);
    cx.client.repl_conf = Some(conf);
    match result {
        Ok(true) => cx.ok(),
        // ACK and GETACK outside a replication link: no reply.
        Ok(false) => {}
        Err(e) => return Err(e),
    }
    Ok(())
}

fn apply_replconf(conf: &mut ReplConf, argv: &[&[u8]]) -> Result<bool, CmdError> {
    for pair in argv[1..].chunks(2) {
        let (opt, val) = (pair[0], pair[1]);
        if is(opt, "listening-port") {
            let port = resp::parse_i64(val)
                .ok_or_else(|| CmdError::new("ERR value is not an integer or out of range"))?;
            conf.listening_port = port.clamp(0, 65535) as u16;
        } else if is(opt, "ip-address") {
            let ip = String::from_utf8_lossy(val).into_owned();
            if ip.len() >= 46 {
                return Err(CmdError::new(format!(
                    "ERR REPLCONF ip-address provided by replica instance is too long: {} bytes",
                    ip.len()
                )));
            }
            conf.ip = Some(ip);
        } else if is(opt, "capa") {
            if is(val, "eof") {
                conf.capa_eof = true;
            } else if is(val, "psync2") {
                conf.capa_psync2 = true;
            }
        } else if is(opt, "ack") || is(opt, "getack") {
            return Ok(false);
        } else if is(opt, "rdb-only") || is(opt, "rdb-filter-only") {
            // Accepted as Redis 7.0 does (redis-cli --rdb); the image is
            // sent in full.
        } else {
            return Err(CmdError::new(format!(
                "ERR Unrecognized REPLCONF option: {}",
                String::from_utf8_lossy(opt)
            )));
        }
    }
    Ok(true)
}

/// A replica of a replica whose own link is down cannot sync from it.
fn sync_refused(cx: &Ctx) -> Option<CmdError> {
    let repl = &cx.server.repl;
    (repl.is_replica() && repl.link_state.load(Relaxed) != crate::replication::LINK_UP)
        .then(|| CmdError::new("NOMASTERLINK Can't SYNC while not connected with my master"))
}

/// PSYNC replicationid offset
fn psync(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if cx.client.info.kind.load(Relaxed) == crate::client::KIND_REPLICA {
        return Ok(());
    }
    if let Some(e) = sync_refused(cx) {
        return Err(e);
    }
    let offset = resp::parse_i64(argv[2])
        .ok_or_else(|| CmdError::new("ERR value is not an integer or out of range"))?;
    cx.client.sync_request = Some(SyncRequest {
        replid: String::from_utf8_lossy(argv[1]).into_owned(),
        pos: (offset >= 1).then(|| offset as u64 - 1),
        psync: true,
    });
    Ok(())
}

/// SYNC: the old full synchronisation (an image, then the stream).
fn sync(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    if cx.client.info.kind.load(Relaxed) == crate::client::KIND_REPLICA {
        return Ok(());
    }
    if let Some(e) = sync_refused(cx) {
        return Err(e);
    }
    cx.client.sync_request = Some(SyncRequest {
        replid: String::new(),
        pos: None,
        psync: false,
    });
    Ok(())
}

/// WAIT numreplicas timeout
fn wait(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let repl = &cx.server.repl;
    if repl.is_replica() {
        return Err(CmdError::new("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated."));
    }
    let wanted = resp::parse_i64(argv[1])
        .ok_or_else(|| CmdError::new("ERR value is not an integer or out of range"))?;
    let ms = resp::parse_i64(argv[2])
        .ok_or_else(|| CmdError::new("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(CmdError::new("ERR timeout is negative"));
    }
    let acked = repl.acked_at_least(cx.client.repl_offset);
    if acked as i64 >= wanted || cx.client.multi.is_some() || cx.client.in_script {
        cx.int(acked as i64);
        return Ok(());
    }
    let deadline =
        (ms > 0).then(|| std::time::Instant::now() + std::time::Duration::from_millis(ms as u64));
    cx.client.wait_replicas = Some((wanted.max(0) as usize, deadline));
    // Ask every replica for its offset now rather than within a second.
    repl.feed_control(&[b"REPLCONF", b"GETACK", b"*"]);
    Ok(())
}

/// ROLE
fn role(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let repl = &cx.server.repl;
    match repl.primary() {
        None => {
            cx.array(3);
            cx.bulk(b"master");
            cx.int(repl.offset() as i64);
            let replicas: Vec<_> = repl
                .replicas
                .read()
                .iter()
                .filter(|r| r.state.load(Relaxed) == crate::replication::ONLINE)
                .map(|r| (r.ip.clone(), r.port.load(Relaxed), r.ack.load(Relaxed)))
                .collect();
            cx.array(replicas.len());
            for (ip, port, ack) in replicas {
                cx.array(3);
                cx.bulk(ip.as_bytes());
                cx.bulk(port.to_string().as_bytes());
                cx.bulk(ack.to_string().as_bytes());
            }
        }
        Some(p) => {
            let state = match repl.link_state.load(Relaxed) {
                crate::replication::LINK_UP => "connected",
                crate::replication::LINK_SYNC => "sync",
                crate::replication::LINK_CONNECTING => "connecting",
                _ => "connect",
            };
            cx.array(5);
            cx.bulk(b"slave");
            cx.bulk(p.host.as_bytes());
            cx.int(p.port as i64);
            cx.bulk(state.as_bytes());
            let up = repl.link_state.load(Relaxed) == crate::replication::LINK_UP;
            cx.int(if up { repl.offset() as i64 } else { -1 });
        }
    }
    Ok(())
}
