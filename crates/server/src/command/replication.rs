//! REPLICAOF (SLAVEOF), REPLCONF, PSYNC, SYNC, WAIT, ROLE: the commands of
//! replication (`crate::replication` does the work).

use std::sync::atomic::Ordering::Relaxed;

use super::args::{self, is, Args};
use super::table::Registry;
use super::{CmdError, CmdResult, Ctx, Next};
use crate::replication::master::{ReplConf, SyncRequest};
use crate::replication::{failover, replica, Primary};

pub(super) fn register(r: &mut Registry) {
    r.add("replicaof", replicaof);
    r.add("slaveof", replicaof);
    r.add("replconf", replconf);
    r.add("psync", psync);
    r.add("sync", sync);
    r.add("wait", wait);
    r.add("waitaof", waitaof);
    r.add("role", role);
    r.add("failover", failover);
}

/// REPLICAOF host port | NO ONE
fn replicaof(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let server = cx.server;
    if server.cluster.enabled() {
        return Err(CmdError::new("ERR REPLICAOF not allowed in cluster mode."));
    }
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
        .filter(|p| (0..=65535).contains(p))
        .ok_or_else(|| CmdError::new("ERR Invalid master port"))?;
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
        } else if is(opt, "node-id") {
            // keel's own: a cluster replica names itself, so its primary
            // knows whose promise an ACK carries (replication::promise).
            conf.node_id = Some(String::from_utf8_lossy(val).into_owned());
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
    if repl.failover.state.load(Relaxed) != failover::NONE {
        return Some(CmdError::new("NOMASTERLINK Can't SYNC while failing over"));
    }
    (repl.is_replica() && repl.link_state.load(Relaxed) != crate::replication::LINK_UP)
        .then(|| CmdError::new("NOMASTERLINK Can't SYNC while not connected with my master"))
}

/// PSYNC replicationid offset [FAILOVER]
fn psync(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if cx.client.info.kind.load(Relaxed) == crate::client::KIND_REPLICA {
        return Ok(());
    }
    if argv.len() > 3 && is(argv[3], "failover") {
        // In a cluster the topology in etcd says who is primary, and no
        // node runs FAILOVER: a handover from anyone would detach this
        // replica behind the topology's back.
        if cx.server.cluster.enabled() {
            return Err(CmdError::new(
                "ERR PSYNC FAILOVER not allowed in cluster mode.",
            ));
        }
        // Our primary hands over (its FAILOVER): we continue its history
        // as the primary.
        let server = cx.server;
        if argv[1] != server.repl.ids().replid.as_bytes() {
            return Err(CmdError::new(
                "ERR PSYNC FAILOVER replid must match my replid.",
            ));
        }
        tracing::info!(
            "Failover request received for replid {}.",
            String::from_utf8_lossy(argv[1])
        );
        replica::set_primary(server, None);
        server
            .config
            .write()
            .set_internal("replicaof", String::new());
    }
    if let Some(e) = sync_refused(cx) {
        return Err(e);
    }
    let offset = resp::parse_i64(argv[2])
        .ok_or_else(|| CmdError::new("ERR value is not an integer or out of range"))?;
    cx.next = Next::HandOver(Box::new(SyncRequest {
        replid: String::from_utf8_lossy(argv[1]).into_owned(),
        pos: (offset >= 1).then(|| offset as u64 - 1),
        psync: true,
    }));
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
    cx.next = Next::HandOver(Box::new(SyncRequest {
        replid: String::new(),
        pos: None,
        psync: false,
    }));
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
    if acked as i64 >= wanted || cx.client.in_exec || cx.client.in_script {
        cx.int(acked as i64);
        return Ok(());
    }
    let deadline =
        (ms > 0).then(|| std::time::Instant::now() + std::time::Duration::from_millis(ms as u64));
    let Some(server) = cx.server.arc() else {
        cx.int(acked as i64);
        return Ok(());
    };
    let offset = cx.client.repl_offset;
    let wanted = wanted.max(0) as usize;
    cx.next = Next::Await(Box::pin(async move {
        let acked = server.repl.wait_acks(offset, wanted, deadline).await;
        let mut reply = Vec::new();
        resp::encode::integer(&mut reply, acked as i64);
        reply
    }));
    // Ask every replica for its offset now rather than within a second.
    repl.feed_control(&[b"REPLCONF", b"GETACK", b"*"]);
    Ok(())
}

/// WAITAOF numlocal numreplicas timeout (Redis 7.2): waits until this
/// client's writes are fsynced in the local AOF (`numlocal`, 0 or 1) and
/// in the AOFs of `numreplicas` replicas; answers how many of each are.
fn waitaof(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let numlocal = resp::parse_i64(argv[1])
        .ok_or_else(|| CmdError::new("ERR value is not an integer or out of range"))?;
    if !(0..=1).contains(&numlocal) {
        return Err(CmdError::new(
            "ERR value is out of range, value must between 0 and 1",
        ));
    }
    let numreplicas = resp::parse_i64(argv[2])
        .filter(|n| *n >= 0)
        .ok_or_else(|| CmdError::new("ERR value is out of range, must be positive"))?;
    let ms = resp::parse_i64(argv[3])
        .ok_or_else(|| CmdError::new("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(CmdError::new("ERR timeout is negative"));
    }
    let repl = &cx.server.repl;
    if repl.is_replica() {
        return Err(CmdError::new("ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated."));
    }
    if numlocal > 0 && !cx.server.aof.enabled() {
        return Err(CmdError::new(NO_LOCAL_AOF));
    }
    let (log_at, stream_at) = (cx.client.aof_offset, cx.client.repl_offset);
    let counts = move |server: &crate::server::Server| {
        let local = i64::from(server.aof.fsynced().is_some_and(|f| f >= log_at));
        (local, server.repl.aof_acked_at_least(stream_at) as i64)
    };
    let (local, replicas) = counts(cx.server);
    let Some(server) = cx.server.arc() else {
        return Err(CmdError::new("ERR the server is shutting down"));
    };
    if (local >= numlocal && replicas >= numreplicas) || cx.client.in_exec || cx.client.in_script {
        cx.array(2);
        cx.int(local);
        cx.int(replicas);
        return Ok(());
    }
    let deadline =
        (ms > 0).then(|| std::time::Instant::now() + std::time::Duration::from_millis(ms as u64));
    cx.next = Next::Await(Box::pin(async move {
        let mut reply = Vec::new();
        loop {
            // Armed before the counts are read: a change after the read
            // wakes the wait below.
            let fsynced = server.aof.fsynced_changed.notified();
            let acked = server.repl.acked.notified();
            tokio::pin!(fsynced, acked);
            fsynced.as_mut().enable();
            acked.as_mut().enable();
            if numlocal > 0 && !server.aof.enabled() {
                resp::encode::error(&mut reply, NO_LOCAL_AOF.as_bytes());
                return reply;
            }
            let (local, replicas) = counts(&server);
            let expired = deadline.is_some_and(|d| std::time::Instant::now() >= d);
            if (local >= numlocal && replicas >= numreplicas) || expired {
                resp::encode::array(&mut reply, 2);
                resp::encode::integer(&mut reply, local);
                resp::encode::integer(&mut reply, replicas);
                return reply;
            }
            let sleep = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = fsynced => {}
                _ = acked => {}
                _ = sleep => {}
            }
        }
    }));
    // Ask every replica for its offsets now rather than within a second.
    repl.feed_control(&[b"REPLCONF", b"GETACK", b"*"]);
    Ok(())
}

const NO_LOCAL_AOF: &str =
    "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.";

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
                crate::replication::LINK_CONNECTING => "handshake",
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

/// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT milliseconds]
fn failover(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if cx.server.cluster.enabled() {
        return Err(CmdError::new(
            "ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead.",
        ));
    }
    let repl = &cx.server.repl;
    if argv.len() == 2 && is(argv[1], "abort") {
        if repl.failover.state.load(Relaxed) == failover::NONE {
            return Err(CmdError::new("ERR No failover in progress."));
        }
        repl.failover.request_abort();
        cx.ok();
        return Ok(());
    }
    // Each option once, as Redis's failoverCommand: a repeated one is a
    // syntax error.
    let (mut target, mut timeout, mut force) = (None, None, false);
    let mut args = Args::new(argv, 1);
    while args.more() {
        if let Some(ms) = args.option_if(timeout.is_none(), "timeout") {
            match args.check(args::int(ms)) {
                Some(ms) if ms <= 0 => {
                    args.fail(CmdError::new("ERR FAILOVER timeout must be greater than 0"))
                }
                Some(ms) => timeout = Some(std::time::Duration::from_millis(ms as u64)),
                None => {}
            }
        } else if target.is_none() && args.left() >= 3 && args.word("to") {
            let host = args.value();
            let port = args.value();
            if let Some(port) = args.check(args::int(port)) {
                target = Some((String::from_utf8_lossy(host).into_owned(), port));
            }
        } else if !force && args.word("force") {
            force = true;
        } else {
            args.fail(super::error::SYNTAX);
        }
    }
    args.finish()?;
    if repl.failover.state.load(Relaxed) != failover::NONE {
        return Err(CmdError::new("ERR FAILOVER already in progress."));
    }
    if repl.is_replica() {
        return Err(CmdError::new(
            "ERR FAILOVER is not valid when server is a replica.",
        ));
    }
    if repl.replicas.read().is_empty() {
        return Err(CmdError::new("ERR FAILOVER requires connected replicas."));
    }
    if force && (timeout.is_none() || target.is_none()) {
        return Err(CmdError::new(
            "ERR FAILOVER with force option requires both a timeout and target HOST and IP.",
        ));
    }
    // A port out of range names no replica.
    let target = target.map(|(host, port)| Primary {
        host,
        port: u16::try_from(port).unwrap_or(0),
    });
    if let Some(t) = &target {
        let state = repl
            .replicas
            .read()
            .iter()
            .find(|r| r.ip == t.host && t.port != 0 && r.port.load(Relaxed) == t.port)
            .map(|r| r.state.load(Relaxed));
        match state {
            None => {
                return Err(CmdError::new(
                    "ERR FAILOVER target HOST and PORT is not a replica.",
                ))
            }
            Some(s) if s != crate::replication::ONLINE => {
                return Err(CmdError::new("ERR FAILOVER target replica is not online."))
            }
            Some(_) => {}
        }
    }
    let Some(server) = cx.server.arc() else {
        return Err(CmdError::new("ERR FAILOVER could not start"));
    };
    failover::start(
        &server,
        failover::Request {
            target,
            timeout,
            force,
        },
    )
    .map_err(|e| CmdError::new(format!("ERR FAILOVER could not start: {e}")))?;
    cx.ok();
    Ok(())
}
