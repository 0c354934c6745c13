//! Automatic failover, decided in etcd: when a shard's primary has lost
//! its lease (its `alive` key is gone) and a replica's promise to it has
//! run out (so the primary has stopped serving, see `cluster::promise`),
//! the replica bids its replication offset; once every live replica has
//! bid, or a serving window has passed, the bidder with the highest
//! offset (then the lowest id) writes the new topology: itself primary,
//! the old primary its replica, the shard's epoch raised past the
//! cluster's. It writes it no sooner than a window and an eighth after it
//! first saw the lease gone: the old primary serves on a renewal for a
//! window past sending it, and every renewal etcd took was sent before
//! the lease went (`cluster` module note). The write is one transaction
//! that holds only if the topology is still the one it read, the old
//! primary is still not alive and has not begun a new session with etcd
//! since (it rewrites its `nodes/` key first), and the winner is alive,
//! so two replicas cannot both win and a primary that came back in time
//! keeps its place.
//!
//! Detection: a replica whose link to its primary is down probes the
//! primary's port; a refused connection means the process is gone (kill
//! -9, a crash, a shutdown), and the replica revokes the primary's lease
//! instead of waiting for etcd to expire it. A primary that is paused or
//! cut off still accepts connections or answers none: its lease runs out
//! on its own `cluster-lease-ttl`. A primary that is alive (only its
//! replica's connections are refused) finds its lease gone at its next
//! renewal and takes a new one at once, well within the window and an
//! eighth the replica waits: it keeps its place, and the replica does
//! not revoke again until its link has been up.
//!
//! A replica that hears its primary while the primary's `alive` key is
//! gone vouches for it in etcd (`vouch/<primary>/<replica>`, under its
//! own lease): the primary is cut from etcd alone and serves on its
//! replicas' promises, so the other nodes must not count its slots as
//! failing. The vouch goes when the replica stops hearing it.
//!
//! An election is named by the shard, its epoch and the incarnation of
//! the lost primary (the etcd revision of its last `alive` key): bids of
//! an earlier loss of the same primary, which came back since, are not
//! read. A replica whose data is too old does not bid (Redis's rule with
//! `cluster-replica-validity-factor`), nor does one that has not heard its
//! primary since it started (even with the factor 0).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use keel_cluster::Store;

use crate::replication::LINK_UP;
use crate::server::Server;

#[derive(Default)]
struct Election {
    /// `<shard id>/<epoch>/<incarnation>` of the election this node has
    /// bid in, and when it bid.
    round: Option<String>,
    since: Option<Instant>,
    /// The shard's primary as last seen alive: its id and the revision of
    /// its `alive` key.
    primary_seen: Option<(String, i64)>,
    /// The shard's primary as first seen gone: its id, the revision of
    /// its `nodes/` key then, and when.
    gone: Option<(String, i64, Instant)>,
    /// This node revoked its primary's lease since its link was last up.
    revoked: bool,
    /// The primary this node vouches for in etcd.
    vouched: Option<String>,
}

impl Election {
    fn reset(&mut self) {
        self.round = None;
        self.since = None;
    }
}

/// Redis's clusterHandleSlaveFailover rule: the data is too old to bid
/// with once the link has been down (or silent) for longer than
/// `repl-ping-replica-period` + `cluster-node-timeout` x
/// `cluster-replica-validity-factor` (past the node timeout itself);
/// factor 0: never too old. A link never up since start: too old.
fn data_too_old(server: &Server) -> bool {
    let (timeout_ms, factor, ping_secs) = {
        let c = server.settings();
        (
            c.cluster_node_timeout,
            c.cluster_replica_validity_factor,
            c.repl_ping_replica_period,
        )
    };
    if factor == 0 {
        return false;
    }
    let repl = &server.repl;
    let now = crate::command::unix_ms();
    let since = if repl.link_state.load(Relaxed) == crate::replication::LINK_UP {
        repl.link_last_io_ms.load(Relaxed)
    } else {
        repl.link_down_since_ms.load(Relaxed)
    };
    if since == 0 {
        return true;
    }
    let mut age = now.saturating_sub(since);
    if age > timeout_ms {
        age -= timeout_ms;
    }
    age > ping_secs * 1000 + timeout_ms.saturating_mul(factor)
}

/// A session's elections: a step four times a serving window, for as
/// long as the session (holding `lease`) lasts.
pub async fn run(server: Arc<Server>, mut store: Store, lease: i64) {
    let mut election = Election::default();
    loop {
        let window = super::window(&server);
        tokio::time::sleep(window / 4).await;
        match tokio::time::timeout(window, step(&server, &mut store, &mut election, lease)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("Cluster: election step: {e:#}"),
            Err(_) => tracing::warn!("Cluster: an election step timed out"),
        }
    }
}

/// Whether the primary's process is certainly gone: the replication link
/// is down and the primary's port refuses connections.
async fn process_gone(server: &Server, ip: &str, port: u16, limit: Duration) -> bool {
    if server.repl.link_state.load(Relaxed) == LINK_UP {
        return false;
    }
    let connect = tokio::net::TcpStream::connect((ip, port));
    matches!(
        tokio::time::timeout(limit, connect).await,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused
    )
}

/// Vouches for `primary` in etcd (or for nobody), writing only changes.
async fn vouch(
    store: &mut Store,
    election: &mut Election,
    me: &str,
    primary: Option<&str>,
    lease: i64,
) -> Result<()> {
    if election.vouched.as_deref() == primary {
        return Ok(());
    }
    if let Some(old) = election.vouched.clone() {
        store.unvouch(&old, me).await?;
        election.vouched = None;
    }
    if let Some(p) = primary {
        store.vouch(p, me, lease).await?;
        election.vouched = Some(p.to_string());
    }
    Ok(())
}

async fn step(
    server: &Arc<Server>,
    store: &mut Store,
    election: &mut Election,
    lease: i64,
) -> Result<()> {
    let view = server.cluster.view();
    let Some((i, false)) = view.me else {
        server.repl.heard.stop_electing();
        vouch(store, election, &view.myself.id, None, lease).await?;
        *election = Election::default();
        return Ok(());
    };
    let shard = &view.topology().shards[i];
    let window = super::window(server);
    let no_failover = server.settings().cluster_replica_no_failover;
    if view.alive(&shard.primary) {
        let revision = view
            .snapshot
            .alive_since
            .get(&shard.primary)
            .copied()
            .unwrap_or(0);
        election.primary_seen = Some((shard.primary.clone(), revision));
        election.gone = None;
        election.reset();
        server.repl.heard.stop_electing();
        vouch(store, election, &view.myself.id, None, lease).await?;
        if server.repl.link_state.load(Relaxed) == LINK_UP {
            election.revoked = false;
        }
        // Once per loss of the link: a primary that took a new lease
        // since is alive (only this replica cannot reach it), and keeps
        // its place until its lease lapses on its own.
        let primary = view.node(&shard.primary);
        let lease = view.snapshot.alive_lease.get(&shard.primary);
        if let (Some(p), Some(&lease), false, false) =
            (primary, lease, no_failover, election.revoked)
        {
            if process_gone(server, &p.ip, p.port, window / 4).await {
                election.revoked = true;
                tracing::info!(
                    "Cluster: primary {} refuses connections; revoking its lease",
                    shard.primary
                );
                // Already gone (expired meanwhile) is as good.
                if let Err(e) = store.revoke(lease).await {
                    tracing::debug!("Cluster: revoking lease {lease:x}: {e:#}");
                }
            }
        }
        return Ok(());
    }
    let registered = view
        .snapshot
        .registered
        .get(&shard.primary)
        .copied()
        .unwrap_or(0);
    let seen_before = election
        .gone
        .as_ref()
        .is_some_and(|(id, r, _)| *id == shard.primary && *r == registered);
    if !seen_before {
        election.gone = Some((shard.primary.clone(), registered, Instant::now()));
    }
    // Bound by its promise, the replica lets its primary serve, and
    // while it hears it, tells the other nodes it does.
    let hears = server.repl.link_state.load(Relaxed) == LINK_UP
        && server.repl.heard.last_ns() != 0
        && server.repl.heard.bound(super::promise::period(server));
    let primary = hears.then_some(shard.primary.as_str());
    vouch(store, election, &view.myself.id, primary, lease).await?;
    if no_failover || server.repl.heard.bound(super::promise::period(server)) {
        election.reset();
        return Ok(());
    }
    let incarnation = match &election.primary_seen {
        Some((id, revision)) if *id == shard.primary => *revision,
        _ => 0,
    };
    let me = &view.myself.id;
    let round = format!("{}/{}/{incarnation}", shard.id, shard.epoch);
    if election.round.as_deref() != Some(round.as_str()) {
        // A replica that has not heard its primary since it started never
        // bids, whatever the factor: a primary cut from etcd may be
        // serving on its other replicas' promises, and never knew this
        // one (added behind its back) to wait for its promise.
        if server.repl.heard.last_ns() == 0 || data_too_old(server) {
            return Ok(());
        }
        let offset = server.repl.offset();
        store.bid(&round, me, offset, lease).await?;
        tracing::info!(
            "Cluster: primary {} lost its lease; bidding offset {offset}",
            shard.primary
        );
        election.round = Some(round.clone());
        election.since = Some(Instant::now());
    }
    let gone_for = election
        .gone
        .as_ref()
        .map_or(Duration::ZERO, |g| g.2.elapsed());
    if gone_for < window + window / 8 {
        return Ok(());
    }
    let bids = store.bids(&round).await?;
    let live = shard.replicas.iter().filter(|r| view.alive(r));
    let all_in = live.clone().all(|r| bids.iter().any(|(id, _)| id == r));
    if !all_in && election.since.is_some_and(|t| t.elapsed() < window) {
        return Ok(());
    }
    let best = bids
        .iter()
        .filter(|(id, _)| view.alive(id) && shard.replicas.contains(id))
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)));
    if best.map(|b| &b.0) != Some(me) {
        return Ok(());
    }
    let mut topology = view.topology().clone();
    topology.current_epoch += 1;
    let s = &mut topology.shards[i];
    let old = std::mem::replace(&mut s.primary, me.clone());
    s.replicas.retain(|r| r != me);
    s.replicas.push(old.clone());
    s.epoch = topology.current_epoch;
    let shard_id = s.id.clone();
    // No promise from here on; one made since the check above (the
    // primary came back and was heard) stops the promotion.
    server.repl.heard.start_electing();
    if server.repl.heard.bound(super::promise::period(server)) {
        server.repl.heard.stop_electing();
        return Ok(());
    }
    if store
        .promote(view.snapshot.version, &topology, &old, registered, me)
        .await?
    {
        tracing::info!(
            "Cluster: failover won; this node replaces {old} (epoch {})",
            topology.current_epoch
        );
        store.clear_bids(&shard_id).await?;
    }
    Ok(())
}
