//! The cluster redirection gate: where a request's keys are served, as
//! Redis 7.0's getNodeByQuery decides it (same order, same errors), and
//! its second look once the keys' shards are locked (a request or a whole
//! transaction): fencing (a write runs only while the node serves, see
//! `cluster`), and while a slot migrates, the keys MIGRATE took since.

use std::borrow::Cow;

use super::View;
use crate::client::Client;
use crate::command::call::Call;
use crate::command::table::{flag, Command};
use crate::command::CmdError;
use crate::server::Server;
use crate::storage::keyspace::View as Keys;

pub const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";
pub const UNBOUND: &str = "CLUSTERDOWN Hash slot not served";
pub const DOWN: &str = "CLUSTERDOWN The cluster is down";
pub const DOWN_RO: &str = "CLUSTERDOWN The cluster is down and only accepts read commands";
pub const UNSTABLE: &str = "TRYAGAIN Multiple keys request during rehashing of slot";
/// keel's own: a key moved out, its delete not on every replica or on
/// disk yet.
pub const LEAVING: &str = "TRYAGAIN The key is moving to another node, try again";

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
    /// This node's shard is moving `slot` to this shard.
    migrating_to: Option<usize>,
    importing: bool,
    missing: usize,
    existing: usize,
}

/// `None` when this node serves the request; the error to answer
/// otherwise.
pub fn check(server: &Server, client: &Client, call: &Call) -> Option<CmdError> {
    let cmd = call.cmd;
    let exec = cmd.has(flag::EXEC);
    if client.from_primary || (!exec && !cmd.has_key_specs() && !cmd.has(flag::MOVABLEKEYS)) {
        return None;
    }
    let view = server.cluster.view();
    let q = match query(server, &view, client, call, exec) {
        Ok(q) => q,
        Err(e) => return Some(e),
    };
    // No key at all: served here in every state.
    q.first?;
    // SPUBLISH, SSUBSCRIBE, SUNSUBSCRIBE: routed by their channels' slots.
    let shard_channels = cmd.has(flag::PUBSUB);
    if !server.cluster.state_ok(&view) {
        if shard_channels
            && server
                .config
                .read()
                .settings()
                .cluster_allow_pubsubshard_when_down
        {
            return None;
        }
        return down(server, q.write);
    }
    let migrate = cmd.name == "migrate";
    if (q.migrating_to.is_some() || q.importing) && migrate {
        return None;
    }
    if let Some(to) = q.migrating_to {
        if q.missing > 0 {
            return Some(if q.existing > 0 {
                err(UNSTABLE)
            } else {
                // Under the key's shard lock, as the second look decides
                // it: a MIGRATE that took the key has fed its delete to
                // the stream and the log by the time the lock is free.
                let _held = q.first.map(|k| server.keyspace.lock_key(k));
                ask_when_moved(server, &view, q.slot, to)
            });
        }
    }
    if q.importing && (client.asking || cmd.has(flag::ASKING) || view.taking_over(q.slot)) {
        return if q.multiple_keys && q.missing > 0 {
            Some(err(UNSTABLE))
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
    Some(redirect("MOVED", server, &view, q.slot, q.shard))
}

/// What a node whose cluster state is `fail` answers a request (`write`:
/// one that writes), as Redis.
fn down(server: &Server, write: bool) -> Option<CmdError> {
    let reads_ok = server
        .config
        .read()
        .settings()
        .cluster_allow_reads_when_down;
    if !reads_ok {
        Some(err(DOWN))
    } else if write {
        Some(err(DOWN_RO))
    } else {
        None
    }
}

/// The slot and shard of the request's keys (of every queued request for
/// EXEC), and while the slot migrates, how many of them exist here.
fn query<'a>(
    server: &Server,
    view: &View,
    client: &'a Client,
    call: &Call<'a>,
    exec: bool,
) -> Result<Query<'a>, CmdError> {
    let mut q = Query::default();
    if exec {
        let Some(tx) = client.tx.as_ref() else {
            return Ok(q);
        };
        for queued in &tx.queue {
            q.write |= server.commands.get(queued.cmd).has(flag::WRITE);
            for key in queued.keys.as_slice() {
                add_key(
                    server,
                    view,
                    &mut q,
                    &queued.argv[key.pos()],
                    key.slot(),
                    false,
                )?;
            }
        }
    } else if call.cmd.name == "migrate" {
        // MIGRATE's key specs cannot say which of their keys it takes (its
        // key argument, or its KEYS list when that is empty): the keys
        // are its getkeys rule's, as Redis's getKeysFromCommand finds them.
        q.write = call.has(flag::WRITE);
        let argv = call.argv;
        for (p, _) in call.cmd.keys_with_flags(argv) {
            add_key(
                server,
                view,
                &mut q,
                argv[p],
                resp::slot::key_slot(argv[p]),
                false,
            )?;
        }
    } else {
        let channels = call.cmd.has(flag::PUBSUB);
        q.write = call.has(flag::WRITE);
        for key in call.keys() {
            add_key(
                server,
                view,
                &mut q,
                call.argv[key.pos()],
                key.slot(),
                channels,
            )?;
        }
    }
    Ok(q)
}

/// Adds one key: CROSSSLOT when it is not in the slot of the first,
/// unbound slot errors first; while the slot migrates, whether it exists.
fn add_key<'a>(
    server: &Server,
    view: &View,
    q: &mut Query<'a>,
    key: &'a [u8],
    slot: usize,
    channel: bool,
) -> Result<(), CmdError> {
    match q.first {
        None => {
            let Some((shard, _)) = view.shard_of(slot) else {
                return Err(err(UNBOUND));
            };
            q.first = Some(key);
            q.slot = slot;
            q.shard = shard;
            if view.migrating {
                q.migrating_to = view.migrating_to(slot);
                q.importing = q.migrating_to.is_none() && view.importing(slot);
            }
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
    if (q.migrating_to.is_some() || q.importing) && !channel {
        let now = crate::command::unix_ms();
        let mut keys = server.keyspace.lock_key(key);
        if keys.peek_meta(0, key, now).is_some() {
            q.existing += 1;
        } else {
            q.missing += 1;
        }
    }
    Ok(())
}

/// The second look, once the request's shards are locked. `None` to run.
pub fn recheck(server: &Server, client: &Client, call: &Call, keys: &mut Keys) -> Option<CmdError> {
    recheck_all(server, client, std::slice::from_ref(call), keys)
}

/// The second look at a transaction's queued requests, once EXEC holds
/// their shards. `None` to run.
pub fn recheck_transaction(
    server: &Server,
    client: &Client,
    requests: &[Call],
    keys: &mut Keys,
) -> Option<CmdError> {
    recheck_all(server, client, requests, keys)
}

/// Right before the requests run, with their shards held: a write with
/// keys runs only while this node serves (its lease or its replicas'
/// promises may have lapsed since the gate, while the request waited for
/// a lock or its thread was descheduled); and while a slot migrates,
/// MIGRATE may have taken a key since the gate's look, which the requests
/// must not recreate here.
fn recheck_all(
    server: &Server,
    client: &Client,
    requests: &[Call],
    keys: &mut Keys,
) -> Option<CmdError> {
    if client.from_primary {
        return None;
    }
    let keyed_write =
        |c: &Command| c.has(flag::WRITE) && (c.has_key_specs() || c.has(flag::MOVABLEKEYS));
    if requests.iter().any(|r| keyed_write(r.cmd)) && !server.cluster.serving() {
        return down(server, true);
    }
    let view = server.cluster.view();
    if !view.migrating {
        return None;
    }
    let now = crate::command::unix_ms();
    let (mut slot, mut total, mut missing) = (None, 0, 0);
    for call in requests {
        if call.cmd.name == "migrate" || call.cmd.has(flag::PUBSUB) {
            continue;
        }
        for key in call.keys() {
            slot.get_or_insert(key.slot());
            total += 1;
            if keys.peek_meta(0, call.argv[key.pos()], now).is_none() {
                missing += 1;
            }
        }
    }
    let slot = slot?;
    let to = view.migrating_to(slot)?;
    match missing {
        0 => None,
        m if m < total => Some(err(UNSTABLE)),
        _ => Some(ask_when_moved(server, &view, slot, to)),
    }
}

/// ASK for keys MIGRATE moved from `slot`, once their deletes are on
/// every replica and on disk here (`Cluster::may_redirect`); TRYAGAIN
/// until then.
fn ask_when_moved(server: &Server, view: &View, slot: usize, shard: usize) -> CmdError {
    if server.cluster.may_redirect(server, view, slot) {
        ask(server, view, slot, shard)
    } else {
        err(LEAVING)
    }
}

/// `ASK <slot> <endpoint>:<port>` to the target shard's primary.
fn ask(server: &Server, view: &View, slot: usize, shard: usize) -> CmdError {
    redirect("ASK", server, view, slot, shard)
}

/// `MOVED|ASK <slot> <endpoint>:<port>` to the shard's primary.
fn redirect(kind: &str, server: &Server, view: &View, slot: usize, shard: usize) -> CmdError {
    let primary = &view.topology().shards[shard].primary;
    let endpoint = view
        .node(primary)
        .map(|n| endpoint(server, n))
        .unwrap_or_else(|| "?:0".to_string());
    CmdError(Cow::Owned(format!("{kind} {slot} {endpoint}")))
}

/// `host:port` as `cluster-preferred-endpoint-type` asks.
pub fn endpoint(server: &Server, node: &keel_cluster::Node) -> String {
    format!("{}:{}", preferred_host(server, node), node.port)
}

pub fn preferred_host<'n>(server: &Server, node: &'n keel_cluster::Node) -> &'n str {
    use crate::config::EndpointType;
    match server
        .config
        .read()
        .settings()
        .cluster_preferred_endpoint_type
    {
        EndpointType::Hostname if !node.hostname.is_empty() => &node.hostname,
        EndpointType::Hostname | EndpointType::UnknownEndpoint => "?",
        EndpointType::Ip => &node.ip,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::client::ClientInfo;

    fn server() -> Server {
        let server = match Server::new(crate::config::Config::default()) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        server.cluster.enable(keel_cluster::Node {
            id: keel_cluster::topology::new_id(),
            ip: "127.0.0.1".into(),
            port: 7000,
            cport: 17000,
            hostname: String::new(),
        });
        server
    }

    fn recheck_of(server: &Server, client: &Client, argv: &[&[u8]]) -> Option<CmdError> {
        let cmd = server.commands.lookup(argv[0]).expect("command");
        let mut keys = server.keyspace.lock_key(b"k");
        recheck(server, client, &Call::new(cmd, argv), &mut keys)
    }

    #[test]
    fn once_the_shards_are_held_a_keyed_write_runs_only_while_the_node_serves() {
        let server = server();
        let mut client = Client::new(Arc::new(ClientInfo::new(
            1,
            "127.0.0.1:1".into(),
            "127.0.0.1:7000".into(),
            -1,
            false,
        )));
        let set: &[&[u8]] = &[b"set", b"k", b"v"];
        let get: &[&[u8]] = &[b"get", b"k"];
        let flushall: &[&[u8]] = &[b"flushall"];
        // No lease, no promise: keyed writes are refused, as Redis's
        // CLUSTERDOWN; reads and keyless commands are not fenced here.
        assert!(!server.cluster.serving());
        assert_eq!(recheck_of(&server, &client, set), Some(err(DOWN)));
        assert_eq!(recheck_of(&server, &client, get), None);
        assert_eq!(recheck_of(&server, &client, flushall), None);
        // A transaction with a write among its requests is refused whole.
        let (get_cmd, set_cmd) = (
            server.commands.lookup(b"get").expect("get"),
            server.commands.lookup(b"set").expect("set"),
        );
        let mut keys = server.keyspace.lock_key(b"k");
        assert_eq!(
            recheck_transaction(
                &server,
                &client,
                &[Call::new(get_cmd, get), Call::new(set_cmd, set)],
                &mut keys
            ),
            Some(err(DOWN))
        );
        assert_eq!(
            recheck_transaction(&server, &client, &[Call::new(get_cmd, get)], &mut keys),
            None
        );
        drop(keys);
        // With reads allowed while down, the write gets the read-only text.
        server
            .config
            .write()
            .set_internal("cluster-allow-reads-when-down", "yes".into());
        assert_eq!(recheck_of(&server, &client, set), Some(err(DOWN_RO)));
        // The primary's stream is never fenced.
        client.from_primary = true;
        assert_eq!(recheck_of(&server, &client, set), None);
        client.from_primary = false;
        // A live lease lets it run.
        server
            .cluster
            .extend_lease(Instant::now() + Duration::from_secs(60));
        assert_eq!(recheck_of(&server, &client, set), None);
    }
}
