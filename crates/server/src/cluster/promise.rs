//! The primary's side of the replicas' promises (`replication::promise`):
//! every tick it marks the stream and asks its replicas for an ACK, and
//! the earliest promise among its shard's replicas is how long it may
//! serve without its etcd lease (`Cluster::serving`).
//!
//! Why two primaries of a shard never both acknowledge a write: a replica
//! is promoted only by winning an election it enters once its primary's
//! `alive` key is gone from etcd *and* its own promise has run out
//! (`failover::step`). The old primary acknowledges a write only while
//! its lease certainly lives (then its `alive` key does too) or while
//! every replica the topology names has a promise that certainly still
//! binds it (counted from instants before the replica heard it, with a
//! margin). A replica the primary does not know of (one that connected,
//! even briefly, while the topology it last read does not name it) voids
//! the promises until it reads a newer topology: the topology changed
//! behind its back, and that replica may bid once it loses its link. A
//! replica that has not heard its primary since it started never bids
//! (`failover::step`).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use crate::replication::promise;
use crate::server::Server;

/// How long a promise binds a replica: the serving window, so that after
/// a primary dies its replicas are free to bid by the time a failover
/// could complete anyway (it waits for the window after the lease).
pub fn period(server: &Server) -> Duration {
    super::window(server)
}

/// Marks and asks eight times a period, so a promise is renewed long
/// before it runs out.
pub async fn keep(server: Arc<Server>) {
    loop {
        let period = period(&server);
        tokio::time::sleep(period / 8).await;
        if server.shutting_down.load(Relaxed) {
            return;
        }
        tick(&server, period);
    }
}

fn tick(server: &Server, period: Duration) {
    let cluster = &server.cluster;
    let view = cluster.view();
    let margin = period.as_nanos() as u64 * 9 / 10;
    let i = match view.me {
        Some((i, true)) => i,
        // A replica serves (reads, redirects) while it hears its primary.
        Some((_, false)) => {
            let heard = server.repl.heard.last_ns();
            cluster.set_promised_until(if heard == 0 { 0 } else { heard + margin });
            return;
        }
        None => {
            cluster.set_promised_until(0);
            return;
        }
    };
    let shard = &view.topology().shards[i];
    let repl = &server.repl;
    let links = repl.replicas.read().clone();
    let unknown = links.iter().any(|l| {
        !l.node_id
            .as_ref()
            .is_some_and(|id| shard.replicas.contains(id))
    }) || cluster.stranger_pending();
    let until = if unknown {
        0
    } else {
        shard
            .replicas
            .iter()
            .map(|r| {
                let heard = links
                    .iter()
                    .filter(|l| l.node_id.as_deref() == Some(r.as_str()))
                    .map(|l| l.heard_after_ns.load(Relaxed))
                    .max()
                    .unwrap_or(0);
                if heard == 0 {
                    0
                } else {
                    heard + margin
                }
            })
            .min()
            .unwrap_or(u64::MAX)
    };
    cluster.set_promised_until(until);
    // While clients are paused the stream stays still (keel-ctl failover
    // waits for a replica to reach the primary's offset): no mark, and
    // the promises run out unless renewed after the pause.
    let paused = server.pause.mode() != crate::clients::pause::NONE;
    if !shard.replicas.is_empty() && repl.active() && !paused {
        // The instant first, then the offset: whatever is fed after lies
        // past it, so an ACK past it was heard after the instant.
        let at = promise::now_ns();
        repl.marks.mark(at, repl.offset());
        repl.feed_control(&[b"REPLCONF", b"GETACK", b"*"]);
    }
}
