//! Automatic failover, decided in etcd: when a shard's primary has lost
//! its lease (its `alive` key is gone, so it has stopped serving, see the
//! fencing note in `cluster`), each live replica of the shard bids its
//! replication offset; once every live replica has bid, or a second has
//! passed, the bidder with the highest offset (then the lowest id) writes
//! the new topology: itself primary, the old primary its replica, the
//! shard's epoch raised past the cluster's. The write is one transaction
//! that holds only if the topology is still the one it read and the old
//! primary is still not alive, so two replicas cannot both win and a
//! primary that came back in time keeps its place.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use keel_cluster::Store;

use crate::server::Server;

/// How long the bidders wait for a replica that has not bid.
const BID_WAIT: Duration = Duration::from_secs(1);

#[derive(Default)]
pub struct Election {
    /// `<shard id>/<epoch>` of the election this node has bid in.
    round: Option<String>,
    since: Option<Instant>,
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
    if view.alive(&shard.primary) || no_failover {
        *election = Election::default();
        return Ok(());
    }
    let me = &view.myself.id;
    let round = format!("{}/{}", shard.id, shard.epoch);
    if election.round.as_deref() != Some(round.as_str()) {
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
        .replace_topology(view.snapshot.version, &topology, Some(&old))
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
