//! CLUSTER, ASKING, READONLY, READWRITE: Redis Cluster's commands, answered
//! from the topology this node read from etcd (`crate::cluster`).
//!
//! The subcommands that change the topology by talking to other nodes
//! (MEET, ADDSLOTS, SETSLOT, REPLICATE, FAILOVER, ...) have no meaning
//! here: the topology changes only through etcd (keel-ctl). They answer an
//! error saying so.

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;

use super::error::{CmdError, CmdResult};
use super::table::Registry;
use super::Ctx;
use crate::cluster::redirect::preferred_host;
use crate::cluster::View;
use keel_cluster::{Node, SLOTS};

pub(super) fn register(r: &mut Registry) {
    r.add("cluster|info", info);
    r.add("cluster|myid", myid);
    r.add("cluster|myshardid", myshardid);
    r.add("cluster|nodes", nodes);
    r.add("cluster|slots", slots);
    r.add("cluster|shards", shards);
    r.add("cluster|replicas", replicas);
    r.add("cluster|slaves", replicas);
    r.add("cluster|links", links);
    r.add("cluster|keyslot", keyslot);
    r.add("cluster|countkeysinslot", countkeysinslot);
    r.add("cluster|slot-stats", slot_stats);
    r.add("cluster|getkeysinslot", getkeysinslot);
    r.add("cluster|count-failure-reports", count_failure_reports);
    r.add("cluster|saveconfig", saveconfig);
    r.add("cluster|help", help);
    for sub in [
        "cluster|addslots",
        "cluster|addslotsrange",
        "cluster|delslots",
        "cluster|delslotsrange",
        "cluster|flushslots",
        "cluster|meet",
        "cluster|forget",
        "cluster|replicate",
        "cluster|reset",
        "cluster|setslot",
        "cluster|bumpepoch",
        "cluster|set-config-epoch",
        "cluster|failover",
    ] {
        r.add(sub, managed_by_etcd);
    }
    r.add("asking", asking);
    r.add("readonly", readonly);
    r.add("readwrite", readwrite);
}

const DISABLED: &str = "ERR This instance has cluster support disabled";

fn enabled(cx: &Ctx) -> Result<(), CmdError> {
    if cx.server.cluster.enabled() {
        Ok(())
    } else {
        Err(CmdError::new(DISABLED))
    }
}

fn managed_by_etcd(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    enabled(cx)?;
    Err(CmdError::new(format!(
        "ERR CLUSTER {} is not available: this cluster's topology is kept in etcd, change it with keel-ctl",
        String::from_utf8_lossy(argv[1]).to_uppercase()
    )))
}

fn asking(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    enabled(cx)?;
    cx.client.asking = true;
    cx.ok();
    Ok(())
}

/// READONLY: in cluster mode, or (Valkey 8.0) for a client that claimed
/// `CLIENT CAPA redirect`, whose reads a replica then serves.
fn readonly(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    if !cx.client.capa_redirect {
        enabled(cx)?;
    }
    cx.client.cluster_readonly = true;
    cx.ok();
    Ok(())
}

fn readwrite(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    if !cx.client.capa_redirect {
        enabled(cx)?;
    }
    cx.client.cluster_readonly = false;
    cx.ok();
    Ok(())
}

fn myid(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    enabled(cx)?;
    let id = cx.server.cluster.myself().id;
    cx.bulk(id.as_bytes());
    Ok(())
}

/// CLUSTER MYSHARDID (Redis 7.2): the id of the shard this node serves
/// in (the topology's shard id, 40 hex characters).
fn myshardid(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    enabled(cx)?;
    let view = cx.server.cluster.view();
    let Some((i, _)) = view.me else {
        return Err(CmdError::new("ERR No shard ID yet"));
    };
    let id = view.topology().shards[i].id.clone();
    drop(view);
    cx.bulk(id.as_bytes());
    Ok(())
}

/// Every node CLUSTER NODES knows: this one, then the topology's.
fn known_nodes(view: &View) -> Vec<&Node> {
    let mut ids: Vec<&String> = vec![&view.myself.id];
    for id in view.topology().node_ids() {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids.into_iter().filter_map(|id| view.node(id)).collect()
}

fn info(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    enabled(cx)?;
    let cluster = &cx.server.cluster;
    let view = cluster.view();
    let t = view.topology();
    let (assigned, failing) = (view.slots_assigned, view.slots_failing);
    let my_epoch = view.me.map(|(i, _)| t.shards[i].epoch).unwrap_or(0);
    let size = t.shards.iter().filter(|s| !s.slots.is_empty()).count();
    let text = format!(
        "cluster_state:{}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{}\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:{failing}\r\ncluster_known_nodes:{}\r\ncluster_size:{size}\r\ncluster_current_epoch:{}\r\ncluster_my_epoch:{my_epoch}\r\ncluster_stats_messages_sent:{}\r\ncluster_stats_messages_received:{}\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n",
        if cluster.state_ok(&view) { "ok" } else { "fail" },
        assigned - failing,
        known_nodes(&view).len(),
        t.current_epoch,
        cluster.sent.load(Relaxed),
        cluster.received.load(Relaxed),
    );
    cx.verbatim(text.as_bytes());
    Ok(())
}

/// One CLUSTER NODES line (without its newline), as Redis's
/// clusterGenNodeDescription.
fn node_line(view: &View, node: &Node, now_ms: u64) -> String {
    let t = view.topology();
    let me = node.id == view.myself.id;
    let role = t.role_of(&node.id);
    let primary = role.is_none_or(|(_, p)| p);
    let alive = view.alive(&node.id);
    let mut flags = String::new();
    if me {
        flags.push_str("myself,");
    }
    flags.push_str(if primary { "master" } else { "slave" });
    if !alive {
        flags.push_str(",fail");
    }
    let master = match role {
        Some((i, false)) => t.shards[i].primary.as_str(),
        _ => "-",
    };
    let epoch = role.map(|(i, _)| t.shards[i].epoch).unwrap_or(0);
    let pong = if me || !alive { 0 } else { now_ms };
    let mut line = format!("{} {}:{}@{}", node.id, node.ip, node.port, node.cport);
    if !node.hostname.is_empty() {
        let _ = write!(line, ",{}", node.hostname);
    }
    let _ = write!(
        line,
        " {flags} {master} 0 {pong} {epoch} {}",
        if alive { "connected" } else { "disconnected" }
    );
    if let Some((i, true)) = role {
        for r in &t.shards[i].slots {
            if r[0] == r[1] {
                let _ = write!(line, " {}", r[0]);
            } else {
                let _ = write!(line, " {}-{}", r[0], r[1]);
            }
        }
        // This node's own open slots, as Redis shows them on its myself
        // line: `[slot->-target]` moving out, `[slot-<-source]` in.
        if me {
            for m in &t.migrations {
                let (Some(from), Some(to)) = (t.shard_index(&m.from), t.shard_index(&m.to)) else {
                    continue;
                };
                for slot in m.slots[0]..=m.slots[1] {
                    if from == i && !m.importing_only {
                        let _ = write!(line, " [{slot}->-{}]", t.shards[to].primary);
                    } else if to == i && !m.closing {
                        let _ = write!(line, " [{slot}-<-{}]", t.shards[from].primary);
                    }
                }
            }
        }
    }
    line
}

fn nodes(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    enabled(cx)?;
    let view = cx.server.cluster.view();
    let mut text = String::new();
    for node in known_nodes(&view) {
        text.push_str(&node_line(&view, node, cx.now_ms));
        text.push('\n');
    }
    cx.verbatim(text.as_bytes());
    Ok(())
}

/// A node in CLUSTER SLOTS: preferred endpoint, port, id, and the other
/// known endpoints.
fn slots_node(cx: &mut Ctx, node: &Node) {
    let endpoint = preferred_host(cx.server, node).to_string();
    let mut extra: Vec<(&str, &str)> = Vec::new();
    if endpoint != node.ip {
        extra.push(("ip", &node.ip));
    }
    if !node.hostname.is_empty() && endpoint != node.hostname {
        extra.push(("hostname", &node.hostname));
    }
    cx.array(4);
    cx.bulk(endpoint.as_bytes());
    cx.int(node.port as i64);
    cx.bulk(node.id.as_bytes());
    cx.map(extra.len());
    for (k, v) in extra {
        cx.bulk(k.as_bytes());
        cx.bulk(v.as_bytes());
    }
}

fn slots(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    enabled(cx)?;
    let view = cx.server.cluster.view();
    let t = view.topology();
    let mut ranges: Vec<([u16; 2], usize)> = t
        .shards
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.slots.iter().map(move |r| (*r, i)))
        .collect();
    ranges.sort_unstable();
    cx.array(ranges.len());
    for (r, i) in ranges {
        let shard = &t.shards[i];
        let primary = view.node(&shard.primary).cloned();
        let replicas: Vec<Node> = shard
            .replicas
            .iter()
            .filter(|id| view.alive(id))
            .filter_map(|id| view.node(id).cloned())
            .collect();
        cx.array(2 + usize::from(primary.is_some()) + replicas.len());
        cx.int(r[0] as i64);
        cx.int(r[1] as i64);
        for node in primary.iter().chain(replicas.iter()) {
            slots_node(cx, node);
        }
    }
    Ok(())
}

/// A node's replication offset as this node knows it: its own, and its
/// replicas' acknowledged offsets when it is their primary (keel nodes do
/// not gossip offsets; others show 0).
fn offset_of(cx: &Ctx, view: &View, node: &Node) -> i64 {
    let repl = &cx.server.repl;
    if node.id == view.myself.id {
        return repl.offset() as i64;
    }
    repl.replicas
        .read()
        .iter()
        .find(|r| r.ip == node.ip && r.port.load(Relaxed) == node.port)
        .map(|r| r.ack.load(Relaxed) as i64)
        .unwrap_or(0)
}

fn shards(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    enabled(cx)?;
    let view = cx.server.cluster.view();
    let t = view.topology();
    cx.array(t.shards.len());
    for shard in &t.shards {
        cx.map(2);
        cx.bulk(b"slots");
        cx.array(shard.slots.len() * 2);
        for r in &shard.slots {
            cx.int(r[0] as i64);
            cx.int(r[1] as i64);
        }
        cx.bulk(b"nodes");
        let members: Vec<(Node, bool)> = std::iter::once((&shard.primary, true))
            .chain(shard.replicas.iter().map(|r| (r, false)))
            .filter_map(|(id, p)| view.node(id).cloned().map(|n| (n, p)))
            .collect();
        cx.array(members.len());
        for (node, primary) in members {
            let offset = offset_of(cx, &view, &node);
            let health = if !view.alive(&node.id) {
                "fail"
            } else if !primary && offset == 0 && node.id == view.myself.id {
                "loading"
            } else {
                "online"
            };
            let endpoint = preferred_host(cx.server, &node).to_string();
            cx.map(7 + usize::from(!node.hostname.is_empty()));
            cx.bulk(b"id");
            cx.bulk(node.id.as_bytes());
            cx.bulk(b"port");
            cx.int(node.port as i64);
            cx.bulk(b"ip");
            cx.bulk(node.ip.as_bytes());
            cx.bulk(b"endpoint");
            cx.bulk(endpoint.as_bytes());
            if !node.hostname.is_empty() {
                cx.bulk(b"hostname");
                cx.bulk(node.hostname.as_bytes());
            }
            cx.bulk(b"role");
            cx.bulk(if primary { b"master" } else { b"replica" });
            cx.bulk(b"replication-offset");
            cx.int(offset);
            cx.bulk(b"health");
            cx.bulk(health.as_bytes());
        }
    }
    Ok(())
}

fn replicas(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    enabled(cx)?;
    let view = cx.server.cluster.view();
    let id = String::from_utf8_lossy(argv[2]).into_owned();
    if view.node(&id).is_none() || !known_nodes(&view).iter().any(|n| n.id == id) {
        return Err(CmdError::new(format!("ERR Unknown node {id}")));
    }
    let t = view.topology();
    let shard = match t.role_of(&id) {
        Some((i, true)) => Some(&t.shards[i]),
        None => None,
        Some((_, false)) => {
            return Err(CmdError::new("ERR The specified node is not a master"));
        }
    };
    let lines: Vec<String> = shard
        .map(|s| s.replicas.as_slice())
        .unwrap_or_default()
        .iter()
        .filter_map(|r| view.node(r))
        .map(|n| node_line(&view, n, cx.now_ms))
        .collect();
    cx.array(lines.len());
    for l in lines {
        cx.bulk(l.as_bytes());
    }
    Ok(())
}

/// keel nodes keep no links to each other (they meet in etcd).
fn links(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    enabled(cx)?;
    cx.array(0);
    Ok(())
}

fn keyslot(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    enabled(cx)?;
    cx.int(resp::slot::key_slot(argv[2]) as i64);
    Ok(())
}

fn integer(arg: &[u8]) -> Result<i64, CmdError> {
    resp::parse_i64(arg).ok_or_else(|| CmdError::new("ERR value is not an integer or out of range"))
}

/// Calls `f` with each key of `slot` in database 0 until it returns false.
fn keys_in_slot(cx: &Ctx, slot: usize, mut f: impl FnMut(&[u8]) -> bool) {
    let view = cx
        .server
        .keyspace
        .lock_shard(crate::storage::keyspace::shard_of(slot));
    let mut going = true;
    view.for_each_in_slot(slot, |db, key, _| {
        if going && db == 0 {
            going = f(key);
        }
    });
}

fn countkeysinslot(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    enabled(cx)?;
    let slot = integer(argv[2])?;
    if !(0..SLOTS as i64).contains(&slot) {
        return Err(CmdError::new("ERR Invalid slot"));
    }
    let mut n = 0i64;
    keys_in_slot(cx, slot as usize, |_| {
        n += 1;
        true
    });
    cx.int(n);
    Ok(())
}

/// CLUSTER SLOT-STATS SLOTSRANGE start end | ORDERBY metric [LIMIT n]
/// [ASC|DESC] (Valkey 8.0): per slot of this node's shard, its key count,
/// and with `cluster-slot-stats-enabled` its CPU time and network bytes
/// (`cluster::slot_stats`), as Valkey's clusterSlotStatsCommand.
fn slot_stats(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    enabled(cx)?;
    let detailed = cx.server.cluster.slot_stats.enabled();
    let view = cx.server.cluster.view();
    let mine = |slot: usize| match (view.me, view.shard_of(slot)) {
        (Some((me, _)), Some((owner, _))) => me == owner,
        _ => false,
    };
    let slots: Vec<usize> = if argv.len() == 5 && super::args::is(argv[2], "slotsrange") {
        let start = slot_arg(argv[3])?;
        let end = slot_arg(argv[4])?;
        if start > end {
            return Err(CmdError::new(format!(
                "ERR Start slot number {start} is greater than end slot number {end}"
            )));
        }
        (start..=end).filter(|&s| mine(s)).collect()
    } else if argv.len() >= 4 && super::args::is(argv[2], "orderby") {
        let metric = argv[3];
        let metric = if super::args::is(metric, "key-count") {
            0
        } else if detailed && super::args::is(metric, "cpu-usec") {
            1
        } else if detailed && super::args::is(metric, "network-bytes-in") {
            2
        } else if detailed && super::args::is(metric, "network-bytes-out") {
            3
        } else {
            return Err(CmdError::new("ERR Unrecognized sort metric for ORDERBY."));
        };
        let (mut desc, mut limit) = (true, SLOTS as usize);
        let (mut limits, mut orders) = (0, 0);
        let mut i = 4;
        while i < argv.len() {
            if super::args::is(argv[i], "limit") && i + 1 < argv.len() {
                limit = resp::parse_i64(argv[i + 1])
                    .filter(|n| (1..=SLOTS as i64).contains(n))
                    .ok_or_else(|| {
                        CmdError::new(
                            "ERR Limit has to lie in between 1 and 16384 (maximum number of slots).",
                        )
                    })? as usize;
                i += 1;
                limits += 1;
            } else if super::args::is(argv[i], "asc") {
                desc = false;
                orders += 1;
            } else if super::args::is(argv[i], "desc") {
                desc = true;
                orders += 1;
            } else {
                return Err(super::error::SYNTAX);
            }
            if limits > 1 || orders > 1 {
                return Err(CmdError::new(
                    "ERR Multiple filters of the same type are disallowed.",
                ));
            }
            i += 1;
        }
        let mut by: Vec<(u64, usize)> = (0..SLOTS as usize)
            .filter(|&s| mine(s))
            .map(|s| {
                let u = cx.server.cluster.slot_stats.get(s);
                let stat = match metric {
                    0 => key_count(cx, s),
                    1 => u.cpu_usec,
                    2 => u.bytes_in,
                    _ => u.bytes_out,
                };
                (stat, s)
            })
            .collect();
        // By the metric, ties by slot number ascending either way.
        by.sort_by(|a, b| {
            let c = if desc { b.0.cmp(&a.0) } else { a.0.cmp(&b.0) };
            c.then(a.1.cmp(&b.1))
        });
        by.into_iter().take(limit).map(|(_, s)| s).collect()
    } else {
        return Err(super::error::subcommand_syntax(argv));
    };
    cx.array(slots.len());
    for slot in slots {
        cx.array(2);
        cx.int(slot as i64);
        cx.map(if detailed { 4 } else { 1 });
        cx.bulk(b"key-count");
        cx.int(key_count(cx, slot) as i64);
        if detailed {
            let u = cx.server.cluster.slot_stats.get(slot);
            for (name, v) in [
                ("cpu-usec", u.cpu_usec),
                ("network-bytes-in", u.bytes_in),
                ("network-bytes-out", u.bytes_out),
            ] {
                cx.bulk(name.as_bytes());
                cx.int(v as i64);
            }
        }
    }
    Ok(())
}

/// Keys in `slot` (database 0, the only one in cluster mode).
fn key_count(cx: &Ctx, slot: usize) -> u64 {
    let view = cx
        .server
        .keyspace
        .lock_shard(crate::storage::keyspace::shard_of(slot));
    view.slot_len(0, slot) as u64
}

/// A slot argument, as Redis's getSlotOrReply.
fn slot_arg(arg: &[u8]) -> Result<usize, CmdError> {
    resp::parse_i64(arg)
        .filter(|n| (0..SLOTS as i64).contains(n))
        .map(|n| n as usize)
        .ok_or_else(|| CmdError::new("ERR Invalid or out of range slot"))
}

fn getkeysinslot(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    enabled(cx)?;
    let slot = integer(argv[2])?;
    let max = integer(argv[3])?;
    if !(0..SLOTS as i64).contains(&slot) || max < 0 {
        return Err(CmdError::new("ERR Invalid slot or number of keys"));
    }
    let mut keys: Vec<Vec<u8>> = Vec::new();
    keys_in_slot(cx, slot as usize, |k| {
        if keys.len() as i64 >= max {
            return false;
        }
        keys.push(k.to_vec());
        true
    });
    cx.array(keys.len());
    for k in keys {
        cx.bulk(&k);
    }
    Ok(())
}

/// No node reports failures to another here (failure is a lease expiring
/// in etcd): 0 for every known node.
fn count_failure_reports(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    enabled(cx)?;
    let view = cx.server.cluster.view();
    let id = String::from_utf8_lossy(argv[2]).into_owned();
    if !known_nodes(&view).iter().any(|n| n.id == id) {
        return Err(CmdError::new(format!("ERR Unknown node {id}")));
    }
    cx.int(0);
    Ok(())
}

/// The node's own state on disk is its id (cluster-config-file), written
/// when it joins; nothing else to save.
fn saveconfig(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    enabled(cx)?;
    cx.ok();
    Ok(())
}

fn help(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    enabled(cx)?;
    cx.help(&[
        "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "COUNTKEYSINSLOT <slot>",
        "    Return the number of keys in <slot>.",
        "COUNT-FAILURE-REPORTS <node-id>",
        "    Return number of failure reports for <node-id>.",
        "GETKEYSINSLOT <slot> <count>",
        "    Return key names stored by current node in a slot.",
        "INFO",
        "    Return information about the cluster.",
        "KEYSLOT <key>",
        "    Return the hash slot for <key>.",
        "LINKS",
        "    Return information about all network links between this node and its peers.",
        "    Output format is an array where each array element is a map containing attributes of a link",
        "MYID",
        "    Return the node id.",
        "NODES",
        "    Return cluster configuration seen by node. Output format:",
        "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
        "REPLICAS <node-id>",
        "    Return <node-id> replicas.",
        "SAVECONFIG",
        "    Force saving cluster configuration on disk.",
        "SHARDS",
        "    Return information about slot range mappings and the nodes associated with them.",
        "SLOTS",
        "    Return information about slots range mappings. Each range is made of:",
        "    start, end, master and replicas IP addresses, ports and ids",
        "The topology (MEET, ADDSLOTS, SETSLOT, REPLICATE, FAILOVER...) is kept in etcd",
        "and changed with keel-ctl.",
    ]);
    Ok(())
}
