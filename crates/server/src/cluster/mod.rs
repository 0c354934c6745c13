//! Cluster mode (`cluster-enabled yes`): Redis Cluster's client protocol
//! on a topology kept in etcd.
//!
//! - [`control`]: one thread per node talks to etcd: registers the node,
//!   holds its lease, watches the topology and applies it (which shard's
//!   primary or replica this node is, through `crate::replication`), and
//!   promotes a replica when its primary's lease has expired.
//! - [`redirect`]: the dispatch gate that answers MOVED, ASK, CROSSSLOT,
//!   TRYAGAIN and CLUSTERDOWN, as Redis's getNodeByQuery.
//! - `command::cluster`: CLUSTER, ASKING, READONLY, READWRITE.
//!
//! What the data plane reads is one immutable [`View`] (the topology at one
//! etcd revision, and who is alive), swapped whole when etcd says
//! something changed, and the lease deadline.
//!
//! Fencing: a node's lease in etcd lives `cluster-lease-ttl` seconds past
//! its last renewal, counted by etcd from when the renewal arrived. The
//! node serves on a renewal only for the [`window`] after it *sent* it,
//! renewing four times a window; a replica promotes itself only a window
//! and an eighth after it saw its primary's lease gone (expired, or
//! revoked by the replica once it found the primary's process gone, see
//! `failover`), so the old primary stopped serving on any renewal etcd
//! took before. A short window, not the lease's TTL (etcd grants no TTL
//! under 2 s), is what makes failover take less than a second. A primary
//! also serves past its lease while every
//! replica of its shard has promised, over the replication link, not to
//! bid ([`promise`]): so etcd is not on the data path, and a stalled or
//! unreachable etcd changes nothing for clients. Past both the node's
//! cluster state is `fail`: it serves no key (CLUSTERDOWN), so a paused or
//! partitioned primary cannot take writes a new primary does not have.
//!
//! Another shard's primary whose `alive` key has gone counts as failing
//! (CLUSTERDOWN everywhere, with `cluster-require-full-coverage`) unless
//! one of its replicas vouches for it in etcd (it hears it: the primary is
//! cut from etcd alone and serves on its replicas' promises), and only
//! once it has been gone for a lease period: an etcd that expired every
//! lease while it stalled does not take the cluster down while the nodes
//! register again, and a primary that really died has been replaced by
//! then.

pub mod control;
pub mod failover;
pub mod promise;
pub mod redirect;
pub mod slot_stats;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use keel_cluster::topology::UNOWNED;
use keel_cluster::{Node, Shard, Snapshot, Topology, SLOTS};
use parking_lot::RwLock;

/// How long one lease renewal, or one replica's promise, lets a node
/// serve: a fifth of `cluster-lease-ttl` (400 ms at its default of 2 s).
/// A failover waits a little longer than this once the primary's lease is
/// gone, so it sets how fast failover can be; renewals and promises are
/// refreshed several times a window, so a slow answer or two cost nothing.
pub fn window(server: &crate::server::Server) -> Duration {
    let ttl = server.settings().cluster_lease_ttl.max(2);
    Duration::from_millis(ttl * 200)
}

/// The topology as this node last read it from etcd.
pub struct View {
    pub myself: Node,
    pub snapshot: Snapshot,
    /// `topology.owners()`: the shard index of each slot.
    pub owner: Vec<u16>,
    /// This node's shard and whether it is its primary.
    pub me: Option<(usize, bool)>,
    /// `topology.moving()`: the shard each migrating slot goes to.
    pub moving: Vec<u16>,
    /// `topology.moving_out()`: the same, for the moves opened on the
    /// source too (see `Migration::importing_only`).
    pub moving_out: Vec<u16>,
    /// `topology.closing()`: slots whose move is closing (the target
    /// serves them to every client).
    pub closing: Vec<bool>,
    /// Some slot is migrating (the gates then look at keys).
    pub migrating: bool,
    /// Slots owned by some shard, and of those, slots whose primary has
    /// lost its lease and has no replica vouching for it: counted once here, read by every keyed command's
    /// cluster state check.
    pub slots_assigned: usize,
    pub slots_failing: usize,
    /// Since when some shard's primary has been failing without a break
    /// (carried over from the view before; `None`: none is).
    pub failing_since: Option<Instant>,
}

impl View {
    pub fn new(myself: Node, snapshot: Snapshot) -> View {
        let (owner, me, moving, moving_out, closing) = match &snapshot.topology {
            Some(t) => (
                t.owners(),
                t.role_of(&myself.id),
                t.moving(),
                t.moving_out(),
                t.closing(),
            ),
            None => (
                vec![UNOWNED; SLOTS as usize],
                None,
                vec![UNOWNED; SLOTS as usize],
                vec![UNOWNED; SLOTS as usize],
                vec![false; SLOTS as usize],
            ),
        };
        let migrating = snapshot
            .topology
            .as_ref()
            .is_some_and(|t| !t.migrations.is_empty());
        let mut view = View {
            myself,
            snapshot,
            owner,
            me,
            moving,
            moving_out,
            closing,
            migrating,
            slots_assigned: 0,
            slots_failing: 0,
            failing_since: None,
        };
        view.slots_assigned = view.topology().slots_assigned();
        view.slots_failing = view
            .topology()
            .shards
            .iter()
            .filter(|s| !view.alive(&s.primary) && !view.vouched(s))
            .map(Shard::slot_count)
            .sum();
        view
    }

    pub fn topology(&self) -> &Topology {
        static EMPTY: Topology = Topology {
            current_epoch: 0,
            shards: Vec::new(),
            migrations: Vec::new(),
        };
        self.snapshot.topology.as_ref().unwrap_or(&EMPTY)
    }

    /// The shard serving `slot`.
    pub fn shard_of(&self, slot: usize) -> Option<(usize, &Shard)> {
        let i = *self.owner.get(slot)?;
        (i != UNOWNED).then(|| (i as usize, &self.topology().shards[i as usize]))
    }

    /// This node is the primary of the shard `slot` is migrating out of:
    /// the target shard's index.
    pub fn migrating_to(&self, slot: usize) -> Option<usize> {
        let to = self.moving_out[slot];
        match self.me {
            Some((mine, true)) if to != UNOWNED && self.owner[slot] as usize == mine => {
                Some(to as usize)
            }
            _ => None,
        }
    }

    /// This node is the primary of the shard `slot` is migrating into, and
    /// the move is closing: every key is here, every client is served.
    pub fn taking_over(&self, slot: usize) -> bool {
        self.closing[slot] && self.importing(slot)
    }

    /// This node is the primary of the shard `slot` is migrating into.
    pub fn importing(&self, slot: usize) -> bool {
        matches!(self.me, Some((mine, true)) if self.moving[slot] as usize == mine)
    }

    /// A node's address: this node's own as it announces it, the others'
    /// as registered in etcd.
    pub fn node(&self, id: &str) -> Option<&Node> {
        if id == self.myself.id {
            return Some(&self.myself);
        }
        self.snapshot.nodes.get(id)
    }

    /// One of the shard's own replicas vouches for its primary (it hears
    /// it while its lease is gone, see `failover`).
    pub fn vouched(&self, shard: &Shard) -> bool {
        self.snapshot
            .vouched
            .get(&shard.primary)
            .is_some_and(|by| by.iter().any(|r| shard.replicas.contains(r)))
    }

    pub fn alive(&self, id: &str) -> bool {
        id == self.myself.id || self.snapshot.alive.contains(id)
    }
}

pub struct Cluster {
    enabled: AtomicBool,
    view: RwLock<Arc<View>>,
    base: Instant,
    /// Nanoseconds after `base` until which this node's lease certainly
    /// lives (0: no lease yet).
    deadline_ns: AtomicU64,
    /// `replication::promise::now_ns` until which every replica of this
    /// primary's shard is bound by its promise (0: not a primary, or
    /// some replica has not promised; see `promise`).
    promised_until_ns: AtomicU64,
    /// How long another shard's primary may be gone from etcd before its
    /// slots count as failing (the lease period).
    failing_grace: RwLock<Duration>,
    /// Whether `cluster-require-full-coverage` is on (hot copy).
    pub full_coverage: AtomicBool,
    /// Requests to and events from etcd (CLUSTER INFO's message counts).
    pub sent: AtomicU64,
    pub received: AtomicU64,
    /// Slots MIGRATE took keys out of, with where their deletes end in the
    /// replication stream and in the log ([`Cluster::may_redirect`]);
    /// `None` until the first look after the MIGRATE reads them.
    leaving: parking_lot::Mutex<std::collections::HashMap<usize, Option<(u64, u64)>>>,
    /// Replicas that connected to this primary while the topology it had
    /// read did not name them, counted; and that count as it was when the
    /// last topology read from etcd began. While the first is ahead, the
    /// replicas' promises are void (`promise`): the topology may have
    /// changed behind this node's back.
    strangers: AtomicU64,
    strangers_read: AtomicU64,
    /// CLUSTER SLOT-STATS's counters (Valkey 8.0).
    pub slot_stats: slot_stats::SlotStats,
}

impl Default for Cluster {
    fn default() -> Cluster {
        let myself = Node {
            id: keel_cluster::topology::new_id(),
            ip: "127.0.0.1".into(),
            port: 6379,
            cport: 16379,
            hostname: String::new(),
        };
        Cluster {
            enabled: AtomicBool::new(false),
            view: RwLock::new(Arc::new(View::new(myself, Snapshot::default()))),
            base: Instant::now(),
            deadline_ns: AtomicU64::new(0),
            promised_until_ns: AtomicU64::new(0),
            failing_grace: RwLock::new(Duration::from_secs(2)),
            full_coverage: AtomicBool::new(true),
            sent: AtomicU64::new(0),
            received: AtomicU64::new(0),
            leaving: Default::default(),
            strangers: AtomicU64::new(0),
            strangers_read: AtomicU64::new(0),
            slot_stats: Default::default(),
        }
    }
}

impl Cluster {
    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    pub fn enable(&self, myself: Node) {
        self.enabled.store(true, Ordering::Relaxed);
        *self.view.write() = Arc::new(View::new(myself, Snapshot::default()));
    }

    pub fn view(&self) -> Arc<View> {
        self.view.read().clone()
    }

    /// Installs a newer view (the deadline store after it publishes it to
    /// a reader that sees the deadline).
    pub fn set_view(&self, mut view: View) {
        let mut current = self.view.write();
        if view.slots_failing > 0 {
            view.failing_since = current
                .failing_since
                .filter(|_| current.slots_failing > 0)
                .or_else(|| Some(Instant::now()));
        }
        // Marks of slots no longer moving out of this node go: a later
        // move of the slot starts from a fresh mark.
        self.leaving
            .lock()
            .retain(|&slot, _| view.migrating_to(slot).is_some());
        *current = Arc::new(view);
    }

    pub fn set_failing_grace(&self, grace: Duration) {
        *self.failing_grace.write() = grace;
    }

    /// Every replica of this primary's shard is bound by its promise
    /// until `until` (`promise::now_ns`; 0: no promise holds).
    pub fn set_promised_until(&self, until: u64) {
        self.promised_until_ns.store(until, Ordering::Release);
    }

    /// Whether this node may serve its slots: its lease certainly lives,
    /// or its replicas' promises certainly bind them.
    #[inline]
    pub fn serving(&self) -> bool {
        self.lease_valid() || self.promised()
    }

    /// Whether the promises (a replica's: its primary's link) let this
    /// node serve without its lease.
    pub fn promised(&self) -> bool {
        crate::replication::promise::now_ns() < self.promised_until_ns.load(Ordering::Acquire)
    }

    pub fn myself(&self) -> Node {
        self.view.read().myself.clone()
    }

    /// The lease lives at least until `until`.
    pub fn extend_lease(&self, until: Instant) {
        let ns = until.saturating_duration_since(self.base).as_nanos() as u64;
        self.deadline_ns.fetch_max(ns, Ordering::Release);
    }

    /// Whether the lease certainly still lives.
    #[inline]
    pub fn lease_valid(&self) -> bool {
        let deadline = self.deadline_ns.load(Ordering::Acquire);
        deadline != 0 && (self.base.elapsed().as_nanos() as u64) < deadline
    }

    /// A replica named `id` (None: it did not say) connected to this
    /// node: if the view does not name it in this primary's shard, its
    /// replicas' promises are void until a topology read from etcd after
    /// now says who the shard's replicas are.
    pub fn replica_connected(&self, id: Option<&str>) {
        // Whatever the role the view gives this node: a replica that
        // connects while it is being promoted counts too.
        let view = self.view();
        let named = view.me.is_some_and(|(shard, _)| {
            id.is_some_and(|id| {
                view.topology().shards[shard]
                    .replicas
                    .iter()
                    .any(|r| r == id)
            })
        });
        if !named {
            self.strangers.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// The strangers counted so far: read before a topology read begins,
    /// and given to [`Cluster::topology_read`] once it is applied.
    pub fn strangers(&self) -> u64 {
        self.strangers.load(Ordering::Acquire)
    }

    pub fn topology_read(&self, strangers_before: u64) {
        self.strangers_read
            .fetch_max(strangers_before, Ordering::AcqRel);
    }

    /// A replica the topology did not name connected since the last
    /// topology read from etcd began.
    pub fn stranger_pending(&self) -> bool {
        self.strangers() > self.strangers_read.load(Ordering::Acquire)
    }

    /// MIGRATE deleted keys of `slot` here (their copies are on the
    /// target now).
    pub fn moved_out(&self, slot: usize) {
        self.leaving.lock().insert(slot, None);
    }

    /// Whether a key of `slot` missing here may be sent to the target with
    /// ASK: only once the deletes of the MIGRATEs that moved the slot's
    /// keys are on every replica of this shard and in this node's log on
    /// disk. Before, a failover (a replica without the delete) or a
    /// restart (a log without it) could bring a moved key back here and
    /// hide what clients wrote to the target's copy meanwhile (the caller
    /// answers TRYAGAIN). The first look after a MIGRATE reads the offsets
    /// to wait for (the deletes were fed to the stream and the log under
    /// the keys' locks, before the look could take them) and asks the
    /// replicas for theirs at once.
    pub fn may_redirect(&self, server: &crate::server::Server, view: &View, slot: usize) -> bool {
        let mut leaving = self.leaving.lock();
        let Some(mark) = leaving.get_mut(&slot) else {
            return true;
        };
        let (repl, log) = *mark.get_or_insert_with(|| {
            let at = (server.repl.offset(), server.aof.appended_hint());
            // A replica answers GETACK with its offset before it: at least
            // `at` once it has the deletes.
            server.repl.feed_control(&[b"REPLCONF", b"GETACK", b"*"]);
            at
        });
        let on_replicas = view.me.is_none_or(|(shard, _)| {
            view.topology().shards[shard]
                .replicas
                .iter()
                .all(|id| server.repl.node_acked(id, repl))
        });
        let on_disk = !server.aof.enabled() || server.aof.durable_at_least(log);
        if on_replicas && on_disk {
            leaving.remove(&slot);
            return true;
        }
        false
    }

    /// Redis's cluster state: `ok` while this node serves and, with
    /// `cluster-require-full-coverage`, every slot has a primary that has
    /// not been gone from etcd for the grace period.
    pub fn state_ok(&self, view: &View) -> bool {
        if !self.serving() || view.me.is_none() && view.topology().shards.is_empty() {
            return false;
        }
        if !self.full_coverage.load(Ordering::Relaxed) {
            return true;
        }
        let failing = view.slots_failing > 0
            && view
                .failing_since
                .is_none_or(|t| t.elapsed() >= *self.failing_grace.read());
        view.slots_assigned == SLOTS as usize && !failing
    }
}

#[cfg(test)]
mod tests {
    use keel_cluster::{Shard, Snapshot, Topology};

    use super::*;

    /// A cluster whose view makes this node the primary of one shard with
    /// replica `r1`.
    fn primary_of_r1() -> Cluster {
        let cluster = Cluster::default();
        let myself = cluster.myself();
        let snapshot = Snapshot {
            topology: Some(Topology {
                current_epoch: 1,
                shards: vec![Shard {
                    id: keel_cluster::topology::new_id(),
                    epoch: 1,
                    primary: myself.id.clone(),
                    replicas: vec!["r1".to_string()],
                    slots: vec![[0, SLOTS - 1]],
                }],
                migrations: Vec::new(),
            }),
            ..Snapshot::default()
        };
        cluster.set_view(View::new(myself, snapshot));
        cluster
    }

    #[test]
    fn a_replica_the_topology_does_not_name_voids_promises_until_a_later_read() {
        let cluster = primary_of_r1();
        cluster.replica_connected(Some("r1"));
        assert!(!cluster.stranger_pending());

        // A read that began before the stranger connected does not clear it.
        let before = cluster.strangers();
        cluster.replica_connected(Some("r2"));
        assert!(cluster.stranger_pending());
        cluster.topology_read(before);
        assert!(cluster.stranger_pending());
        // Nor does the stranger's leaving: only a read begun after it.
        let after = cluster.strangers();
        cluster.topology_read(after);
        assert!(!cluster.stranger_pending());

        // A replica that did not say its id is a stranger too.
        cluster.replica_connected(None);
        assert!(cluster.stranger_pending());
    }
}
