//! Automatic failover, decided in etcd: when a shard's primary has lost
//! its lease (its `alive` key is gone) and a replica's promise to it has
//! run out (so the primary has stopped serving, see `cluster::promise`),
//! the replica bids its replication offset; once every live replica has
//! bid, or a second has passed, the bidder with the highest offset (then
//! the lowest id) writes the new topology: itself primary, the old
//! primary its replica, the shard's epoch raised past the cluster's. The
//! write is one transaction that holds only if the topology is still the
//! one it read, the old primary is still not alive and the winner still
//! is, so two replicas cannot both win and a primary that came back in
//! time keeps its place.
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

use crate::server::Server;

/// How long the bidders wait for a replica that has not bid.
const BID_WAIT: Duration = Duration::from_secs(1);

#[derive(Default)]
pub struct Election {
    /// `<shard id>/<epoch>/<incarnation>` of the election this node has
    /// bid in.
    round: Option<String>,
    since: Option<Instant>,
    /// The shard's primary as last seen alive: its id and the revision of
    /// its `alive` key.
    primary_seen: Option<(String, i64)>,
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
        let c = server.config.read();
        (
            c.get_int("cluster-node-timeout").max(0) as u64,
            c.get_int("cluster-replica-validity-factor").max(0) as u64,
            c.get_int("repl-ping-replica-period").max(0) as u64,
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

/// One step, run after each lease renewal.
pub async fn step(
    server: &Arc<Server>,
    store: &mut Store,
    election: &mut Election,
    lease: i64,
) -> Result<()> {
    let view = server.cluster.view();
    let Some((i, false)) = view.me else {
        *election = Election::default();
        return Ok(());
    };
    let shard = &view.topology().shards[i];
    let no_failover = server.config.read().get("cluster-replica-no-failover") == "yes";
    if view.alive(&shard.primary) {
        let revision = view
            .snapshot
            .alive_since
            .get(&shard.primary)
            .copied()
            .unwrap_or(0);
        election.primary_seen = Some((shard.primary.clone(), revision));
        election.reset();
        return Ok(());
    }
    // Bound by its promise, the replica lets its primary serve.
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
        election.round = Some(round);
        election.since = Some(Instant::now());
        return Ok(());
    }
    let bids = store.bids(&round).await?;
    let live = shard.replicas.iter().filter(|r| view.alive(r));
    let all_in = live.clone().all(|r| bids.iter().any(|(id, _)| id == r));
    if !all_in && election.since.is_some_and(|t| t.elapsed() < BID_WAIT) {
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
    if store
        .promote(view.snapshot.version, &topology, &old, me)
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
