//! The node's link to etcd, on a thread of its own ("keel-cluster") with
//! a small tokio runtime: register, hold the lease, watch, apply, and
//! fail over (see `failover`).
//!
//! A session: connect; settle the node id (kept in `cluster-config-file`;
//! with none, the id etcd has for this node's address, so a node restarted
//! with an empty directory takes its old place); register the address;
//! take a lease and mark the node alive under it; read the whole cluster
//! state and apply it; then renew the lease four times per serving
//! window (`cluster::window`) and re-read the state whenever the watch
//! reports a change, while a task of its own runs the elections. Any
//! error ends the session (the lease deadline then lapses on its own: the
//! node stops serving keys unless its replicas' promises hold) and a new
//! one starts half a second later; a lease found gone (expired, or
//! revoked by a replica, see `failover`) ends it too, and a new one starts
//! at once.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use keel_cluster::{Node, Snapshot, Store};

use super::failover;
use super::View;
use crate::replication::{replica, Primary};
use crate::server::Server;

struct Settings {
    endpoints: Vec<String>,
    name: String,
    ttl: u64,
}

fn settings(server: &Server) -> Settings {
    let c = server.settings();
    let s = &*c;
    Settings {
        endpoints: s.cluster_etcd_endpoints.clone(),
        name: s.cluster_name.clone(),
        ttl: s.cluster_lease_ttl.max(2),
    }
}

fn id_file(server: &Server) -> PathBuf {
    let c = server.settings();
    c.dir.join(&c.cluster_config_file)
}

/// The node id stored in `cluster-config-file`, if any.
fn stored_id(server: &Server) -> Option<String> {
    let text = std::fs::read_to_string(id_file(server)).ok()?;
    text.lines()
        .map(str::trim)
        .find(|l| l.len() == 40 && l.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(str::to_string)
}

fn store_id(server: &Server, id: &str) {
    let text = format!("# keel node id; the cluster's topology is kept in etcd\n{id}\n");
    if let Err(e) = std::fs::write(id_file(server), text) {
        tracing::warn!("Could not write the cluster config file: {e}");
    }
}

/// This node as clients reach it: `cluster-announce-*` where set, else
/// the first bound address (127.0.0.1 for a wildcard) and the port.
fn announced(server: &Server, id: String) -> Node {
    let c = server.settings();
    let s = &*c;
    let port = match s.cluster_announce_port {
        0 => server.tcp_port.load(std::sync::atomic::Ordering::Relaxed) as u16,
        p => p,
    };
    let ip = match s.cluster_announce_ip.as_str() {
        "" => s
            .bind
            .iter()
            .map(|a| a.trim_start_matches('-'))
            .find(|a| !matches!(*a, "*" | "0.0.0.0" | "::" | "::*"))
            .unwrap_or("127.0.0.1")
            .to_string(),
        ip => ip.to_string(),
    };
    let cport = match (s.cluster_announce_bus_port, s.cluster_port) {
        (0, 0) => port.wrapping_add(10000),
        (0, p) | (p, _) => p,
    };
    Node {
        id,
        ip,
        port,
        cport,
        hostname: s.cluster_announce_hostname.clone(),
    }
}

/// Turns cluster mode on before the first client connects (the gates
/// redirect from the first command). Fails without etcd endpoints.
pub fn init(server: &Server) -> Result<(), String> {
    if !server.settings().cluster_enabled {
        return Ok(());
    }
    if settings(server).endpoints.is_empty() {
        return Err("cluster-enabled yes needs cluster-etcd-endpoints host:port[,...]".into());
    }
    let id = stored_id(server).unwrap_or_else(keel_cluster::topology::new_id);
    server.cluster.enable(announced(server, id));
    server.cluster.full_coverage.store(
        server
            .config
            .read()
            .settings()
            .cluster_require_full_coverage,
        std::sync::atomic::Ordering::Relaxed,
    );
    server
        .cluster
        .set_failing_grace(Duration::from_secs(settings(server).ttl));
    Ok(())
}

/// Starts the control thread (cluster mode only).
pub fn start(server: &Arc<Server>) {
    if !server.cluster.enabled() {
        return;
    }
    let server = server.clone();
    let spawned = std::thread::Builder::new()
        .name("keel-cluster".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::error!("Cluster control thread: {e}");
                    return;
                }
            };
            rt.block_on(async move {
                tokio::spawn(super::promise::keep(server.clone()));
                run(server).await
            });
        });
    if let Err(e) = spawned {
        tracing::error!("Can't start the cluster control thread: {e}");
    }
}

async fn run(server: Arc<Server>) {
    let mut settled = stored_id(&server).is_some();
    loop {
        let result = session(&server, &mut settled).await;
        if server
            .shutting_down
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        match result {
            // The lease is gone but etcd answers: a new one at once (a
            // replica that revoked it waits longer before it promotes
            // itself, see `failover`).
            Ok(()) => tracing::warn!("Cluster: the lease expired or was revoked; taking a new one"),
            Err(e) => {
                tracing::warn!("Cluster: {e:#}; reconnecting to etcd");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

/// One session with etcd: `Ok` once the lease is found gone, `Err` on
/// any error.
async fn session(server: &Arc<Server>, settled: &mut bool) -> Result<()> {
    let s = settings(server);
    let ttl = Duration::from_secs(s.ttl);
    let window = super::window(server);
    // Every request must answer well within the lease.
    let timeout = ttl / 2;
    let cluster = &server.cluster;
    let mut store = Store::connect(&s.endpoints, &s.name, timeout).await?;
    let snap = within(timeout, store.snapshot()).await?;
    let mut id = cluster.myself().id;
    if !*settled {
        let here = announced(server, String::new());
        if let Some(known) = snap
            .nodes
            .values()
            .find(|n| n.ip == here.ip && n.port == here.port)
        {
            tracing::info!(
                "Cluster: this address was node {}; taking its place",
                known.id
            );
            id = known.id.clone();
        }
        store_id(server, &id);
        *settled = true;
    }
    let myself = announced(server, id);
    within(timeout, store.register(&myself)).await?;
    let sent = Instant::now();
    let mut lease = within(timeout, store.lease(s.ttl as i64)).await?;
    within(timeout, store.set_alive(&myself.id, lease.id)).await?;
    let strangers = cluster.strangers();
    let snap = within(timeout, store.snapshot()).await?;
    cluster
        .sent
        .fetch_add(5, std::sync::atomic::Ordering::Relaxed);
    apply(server, &myself, snap.clone());
    cluster.topology_read(strangers);
    cluster.extend_lease(deadline(sent, s.ttl as i64, window));
    tracing::info!(
        "Cluster: node {} joined '{}' at etcd revision {}",
        myself.id,
        s.name,
        snap.revision
    );
    let mut watch = within(timeout, store.watch(snap.revision + 1)).await?;
    let mut renew = tokio::time::interval(window / 4);
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Elections talk to etcd on a task of their own: a slow answer to
    // one never delays a renewal.
    let elections = tokio::spawn(failover::run(server.clone(), store.clone(), lease.id));
    let _elections = AbortOnDrop(elections);
    loop {
        tokio::select! {
            _ = renew.tick() => {
                let sent = Instant::now();
                let granted = within(timeout, lease.renew()).await?;
                cluster.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if granted <= 0 {
                    return Ok(());
                }
                cluster.extend_lease(deadline(sent, granted, window));
                // A replica the topology did not name connected: read
                // the topology again (the promises are void until then).
                if cluster.stranger_pending() {
                    let strangers = cluster.strangers();
                    let snap = within(timeout, store.snapshot()).await?;
                    apply(server, &myself, snap);
                    cluster.topology_read(strangers);
                }
            }
            msg = watch.message() => {
                let resp = msg.context("watch")?;
                match resp {
                    None => bail!("the watch ended"),
                    Some(r) if r.canceled() => bail!("the watch was cancelled"),
                    Some(_) => {}
                }
                cluster.received.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let strangers = cluster.strangers();
                let snap = within(timeout, store.snapshot()).await?;
                apply(server, &myself, snap);
                cluster.topology_read(strangers);
            }
        }
    }
}

/// The lease renewed (or granted) by a request sent at `sent` lives at
/// least `ttl` seconds past it on etcd's clock; the node serves on it for
/// the serving window past `sent` (never more than 90% of the TTL, against
/// clock drift).
fn deadline(sent: Instant, ttl: i64, window: Duration) -> Instant {
    sent + Duration::from_millis(ttl.max(0) as u64 * 900).min(window)
}

/// Ends the session's election task with the session.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn within<T>(limit: Duration, f: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    tokio::time::timeout(limit, f)
        .await
        .context("etcd did not answer in time")?
}

/// Installs a snapshot: the new view, and the replication role it gives
/// this node. A promoted node stops replicating before the view says it
/// is primary (until then clients are sent to the old primary); a demoted
/// one takes the view first (until its link is up, writes are redirected
/// rather than refused).
pub fn apply(server: &Arc<Server>, myself: &Node, snap: Snapshot) {
    let cluster = &server.cluster;
    if snap.revision < cluster.view().snapshot.revision {
        return;
    }
    let view = View::new(myself.clone(), snap);
    let role = view.me.map(|(i, primary)| {
        let shard = &view.topology().shards[i];
        (
            primary,
            view.snapshot.nodes.get(&shard.primary).cloned(),
            shard.epoch,
        )
    });
    match role {
        Some((true, _, epoch)) => {
            if server.repl.is_replica() {
                replica::set_primary(server, None);
                tracing::info!("Cluster: this node is now its shard's primary (epoch {epoch})");
            }
            cluster.set_view(view);
        }
        Some((false, Some(p), _)) => {
            cluster.set_view(view);
            let current = server.repl.primary();
            if !current.is_some_and(|c| c.host == p.ip && c.port == p.port) {
                tracing::info!("Cluster: replicating {} ({})", p.id, p.addr());
                replica::set_primary(
                    server,
                    Some(Primary {
                        host: p.ip.clone(),
                        port: p.port,
                    }),
                );
                replica::start_link(server);
            }
        }
        _ => {
            // Not (or no longer) in the topology (keel-ctl del-node): a
            // replica stops following its old primary.
            let was_member = cluster.view().me.is_some();
            cluster.set_view(view);
            if was_member && server.repl.is_replica() {
                replica::set_primary(server, None);
                tracing::info!("Cluster: this node left the topology");
            }
        }
    }
}
