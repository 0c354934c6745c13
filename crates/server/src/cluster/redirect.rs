//! The cluster redirection gate: where a request's keys are served, as
//! Redis 7.0's getNodeByQuery decides it (same order, same errors).

use std::borrow::Cow;

use super::View;
use crate::client::Client;
use crate::command::table::{flag, Command};
use crate::command::CmdError;
use crate::server::Server;

pub const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";
pub const UNBOUND: &str = "CLUSTERDOWN Hash slot not served";
pub const DOWN: &str = "CLUSTERDOWN The cluster is down";
pub const DOWN_RO: &str = "CLUSTERDOWN The cluster is down and only accepts read commands";
pub const UNSTABLE: &str = "TRYAGAIN Multiple keys request during rehashing of slot";

fn err(s: &'static str) -> CmdError {
    CmdError(Cow::Borrowed(s))
}

/// What the keys of a request (or of a transaction's queued requests) say.
#[derive(Default)]
struct Query<'a> {
    first: Option<&'a [u8]>,
    slot: usize,
    /// Index of the shard serving `slot`.
    shard: usize,
    multiple_keys: bool,
    write: bool,
}

/// `None` when this node serves the request; the error to answer
/// otherwise.
pub fn check(server: &Server, client: &Client, cmd: &Command, argv: &[&[u8]]) -> Option<CmdError> {
    let exec = cmd.has(flag::EXEC);
    if client.from_primary || (!exec && !cmd.has_key_specs() && !cmd.has(flag::MOVABLEKEYS)) {
        return None;
    }
    let view = server.cluster.view();
    let q = match query(server, &view, client, cmd, argv, exec) {
        Ok(q) => q,
        Err(e) => return Some(e),
    };
    // No key at all: served here in every state.
    q.first?;
    // SPUBLISH, SSUBSCRIBE, SUNSUBSCRIBE: routed by their channels' slots.
    let shard_channels = cmd.has(flag::PUBSUB);
    if !server.cluster.state_ok(&view) {
        let c = server.config.read();
        if shard_channels && c.get("cluster-allow-pubsubshard-when-down") == "yes" {
            return None;
        }
        let reads_ok = c.get("cluster-allow-reads-when-down") == "yes";
        return if !reads_ok {
            Some(err(DOWN))
        } else if q.write {
            Some(err(DOWN_RO))
        } else {
            None
        };
    }
    if let Some((shard, primary)) = view.me {
        // A replica serves reads of its own shard to READONLY clients, and
        // shard channels to everyone.
        if shard == q.shard
            && (primary || ((client.cluster_readonly || shard_channels) && !q.write))
        {
            return None;
        }
    }
    Some(moved(server, &view, q.slot, q.shard))
}

/// The slot and shard of the request's keys (of every queued request for
/// EXEC).
fn query<'a>(
    server: &Server,
    view: &View,
    client: &'a Client,
    cmd: &Command,
    argv: &[&'a [u8]],
    exec: bool,
) -> Result<Query<'a>, CmdError> {
    let mut q = Query::default();
    let mut pos = Vec::new();
    if exec {
        let Some(queue) = client.multi.as_ref() else {
            return Ok(q);
        };
        for queued in queue {
            let args: Vec<&[u8]> = queued.iter().map(Vec::as_slice).collect();
            let Ok(qcmd) = crate::command::resolve(&server.commands, &args) else {
                continue;
            };
            pos.clear();
            qcmd.key_positions(&args, &mut pos);
            q.write |= qcmd.has(flag::WRITE);
            for &i in &pos {
                add_key(view, &mut q, &queued[i])?;
            }
        }
    } else {
        cmd.key_positions(argv, &mut pos);
        q.write = cmd.has(flag::WRITE);
        for &i in &pos {
            add_key(view, &mut q, argv[i])?;
        }
    }
    Ok(q)
}

/// Adds one key: CROSSSLOT when it is not in the slot of the first,
/// unbound slot errors first.
fn add_key<'a>(view: &View, q: &mut Query<'a>, key: &'a [u8]) -> Result<(), CmdError> {
    let slot = resp::slot::key_slot(key);
    match q.first {
        None => {
            let Some((shard, _)) = view.shard_of(slot) else {
                return Err(err(UNBOUND));
            };
            q.first = Some(key);
            q.slot = slot;
            q.shard = shard;
        }
        Some(first) => {
            if first != key {
                if slot != q.slot {
                    return Err(err(CROSSSLOT));
                }
                q.multiple_keys = true;
            }
        }
    }
    Ok(())
}

/// `MOVED <slot> <endpoint>:<port>` to the shard's primary.
fn moved(server: &Server, view: &View, slot: usize, shard: usize) -> CmdError {
    let primary = &view.topology().shards[shard].primary;
    let endpoint = view
        .node(primary)
        .map(|n| endpoint(server, n))
        .unwrap_or_else(|| "?:0".to_string());
    CmdError(Cow::Owned(format!("MOVED {slot} {endpoint}")))
}

/// `host:port` as `cluster-preferred-endpoint-type` asks.
pub fn endpoint(server: &Server, node: &keel_cluster::Node) -> String {
    format!("{}:{}", preferred_host(server, node), node.port)
}

pub fn preferred_host<'n>(server: &Server, node: &'n keel_cluster::Node) -> &'n str {
    match server.config.read().get("cluster-preferred-endpoint-type") {
        "hostname" if !node.hostname.is_empty() => &node.hostname,
        "hostname" | "unknown-endpoint" => "?",
        _ => &node.ip,
    }
}
