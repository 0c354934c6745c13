//! The cluster's state in etcd. Keys under `/keel/<cluster-name>/`:
//!
//! - `topology`: the [`Topology`] (JSON). Its etcd `mod_revision` is the
//!   topology's version: every change is a transaction compared on the
//!   revision the writer read ([`Store::replace_topology`]).
//! - `nodes/<id>`: each node's [`Node`] (address), written by the node at
//!   start and kept after it stops (a restarted node finds its id by its
//!   address there).
//! - `alive/<id>`: attached to the node's lease; gone once the node has not
//!   renewed its lease for the lease's TTL. Failover waits for it to go.
//! - `election/<shard>/<epoch>/<id>`: replicas' bids (their replication
//!   offsets) to replace a primary whose lease expired.
//! - `vouch/<primary>/<replica>`: under the replica's lease, while it hears
//!   its primary and the primary's `alive` key is gone (the primary is cut
//!   from etcd but serves on its replicas' promises): other nodes do not
//!   count its slots as failing.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Context, Result};
use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, GetOptions, LeaseKeepAliveStream, LeaseKeeper,
    PutOptions, Txn, TxnOp, WatchOptions, WatchStream,
};

use crate::topology::{Node, Topology};

/// A lease and its open keep-alive stream.
pub struct Lease {
    pub id: i64,
    keeper: LeaseKeeper,
    stream: LeaseKeepAliveStream,
}

impl Lease {
    /// Renews the lease once; returns the TTL etcd granted (0 or less: the
    /// lease has expired).
    pub async fn renew(&mut self) -> Result<i64> {
        self.keeper.keep_alive().await?;
        match self.stream.message().await? {
            Some(resp) => Ok(resp.ttl()),
            // Not an expired lease: a stream etcd closed (a new session
            // after the usual pause, not at once).
            None => anyhow::bail!("the lease keep-alive stream ended"),
        }
    }
}

/// Cheap to clone: clones share one connection to etcd.
#[derive(Clone)]
pub struct Store {
    client: Client,
    prefix: String,
}

/// Everything under the cluster's prefix at one etcd revision.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub topology: Option<Topology>,
    /// `mod_revision` of the topology key (0: no topology yet).
    pub version: i64,
    pub nodes: BTreeMap<String, Node>,
    pub alive: BTreeSet<String>,
    /// The etcd revision each `alive` key was created at: one per
    /// incarnation of a node's lease (elections are named by it).
    pub alive_since: BTreeMap<String, i64>,
    /// The lease each `alive` key is attached to (a replica that finds its
    /// primary's process gone revokes it, rather than wait for its TTL).
    pub alive_lease: BTreeMap<String, i64>,
    /// The `mod_revision` of each `nodes/<id>` key: a node rewrites it at
    /// the start of every session with etcd, before it takes a lease, so
    /// a failover that read it knows no new lease of the node began since.
    pub registered: BTreeMap<String, i64>,
    /// Who vouches for whom: primary id to the ids of the nodes that
    /// vouch for it (`vouch/<primary>/<replica>`).
    pub vouched: BTreeMap<String, BTreeSet<String>>,
    /// The etcd revision the snapshot was read at (watch from the next).
    pub revision: i64,
}

impl Snapshot {
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.get(id)
    }
}

impl Store {
    /// Connects to `endpoints` (`host:port`, comma-separated lists split by
    /// the caller); `timeout` bounds every request.
    pub async fn connect(endpoints: &[String], cluster: &str, timeout: Duration) -> Result<Store> {
        let urls: Vec<String> = endpoints
            .iter()
            .map(|e| {
                if e.contains("://") {
                    e.clone()
                } else {
                    format!("http://{e}")
                }
            })
            .collect();
        let options = ConnectOptions::new()
            .with_connect_timeout(timeout)
            .with_timeout(timeout)
            .with_keep_alive(timeout, timeout);
        let client = Client::connect(urls, Some(options))
            .await
            .with_context(|| format!("connecting to etcd at {}", endpoints.join(",")))?;
        Ok(Store {
            client,
            prefix: format!("/keel/{cluster}/"),
        })
    }

    fn key(&self, rest: &str) -> String {
        format!("{}{rest}", self.prefix)
    }

    /// Reads the whole cluster state in one request.
    pub async fn snapshot(&mut self) -> Result<Snapshot> {
        let resp = self
            .client
            .get(self.prefix.clone(), Some(GetOptions::new().with_prefix()))
            .await?;
        let mut snap = Snapshot {
            revision: resp.header().map(|h| h.revision()).unwrap_or(0),
            ..Snapshot::default()
        };
        for kv in resp.kvs() {
            let Some(rest) = kv.key().strip_prefix(self.prefix.as_bytes()) else {
                continue;
            };
            let rest = String::from_utf8_lossy(rest);
            if rest == "topology" {
                snap.topology = Some(serde_json::from_slice(kv.value()).context("topology")?);
                snap.version = kv.mod_revision();
            } else if let Some(id) = rest.strip_prefix("nodes/") {
                if let Ok(node) = serde_json::from_slice::<Node>(kv.value()) {
                    snap.nodes.insert(id.to_string(), node);
                    snap.registered.insert(id.to_string(), kv.mod_revision());
                }
            } else if let Some(path) = rest.strip_prefix("vouch/") {
                if let Some((primary, replica)) = path.split_once('/') {
                    snap.vouched
                        .entry(primary.to_string())
                        .or_default()
                        .insert(replica.to_string());
                }
            } else if let Some(id) = rest.strip_prefix("alive/") {
                snap.alive.insert(id.to_string());
                snap.alive_since
                    .insert(id.to_string(), kv.create_revision());
                snap.alive_lease.insert(id.to_string(), kv.lease());
            }
        }
        Ok(snap)
    }

    /// Records (or updates) a node's address.
    pub async fn register(&mut self, node: &Node) -> Result<()> {
        let key = self.key(&format!("nodes/{}", node.id));
        self.client
            .put(key, serde_json::to_vec(node)?, None)
            .await?;
        Ok(())
    }

    /// Forgets a node (keel-ctl del-node).
    pub async fn unregister(&mut self, id: &str) -> Result<()> {
        let key = self.key(&format!("nodes/{id}"));
        self.client.delete(key, None).await?;
        Ok(())
    }

    /// A new lease of `ttl` seconds, with its keep-alive stream open.
    pub async fn lease(&mut self, ttl: i64) -> Result<Lease> {
        let id = self.client.lease_grant(ttl, None).await?.id();
        let (keeper, stream) = self.client.lease_keep_alive(id).await?;
        Ok(Lease { id, keeper, stream })
    }

    /// Puts `key` (under the prefix) for as long as `lease` lives.
    async fn put_leased(&mut self, key: &str, value: Vec<u8>, lease: i64) -> Result<()> {
        let key = self.key(key);
        self.client
            .put(key, value, Some(PutOptions::new().with_lease(lease)))
            .await?;
        Ok(())
    }

    /// Marks `id` alive for as long as `lease` lives.
    pub async fn set_alive(&mut self, id: &str, lease: i64) -> Result<()> {
        self.put_leased(&format!("alive/{id}"), b"1".to_vec(), lease)
            .await
    }

    /// Ends a lease now: its keys go at once (a node's own at shutdown; a
    /// dead primary's, found gone by its replica).
    pub async fn revoke(&mut self, lease: i64) -> Result<()> {
        self.client.lease_revoke(lease).await?;
        Ok(())
    }

    /// Writes `topology` if the stored one is still at `version` (0: none
    /// stored yet). Returns whether it was written.
    pub async fn replace_topology(&mut self, version: i64, topology: &Topology) -> Result<bool> {
        self.write_topology(version, topology, Vec::new()).await
    }

    /// A failover's write of `topology`: only if the stored one is still
    /// at `version`, the old primary `dead`'s `alive` key is gone (no
    /// failover while its lease lives), `dead` has not begun a session
    /// since `dead_registered` (its `nodes/` key's revision when the
    /// winner saw it gone: a lease taken since may still be serving) and
    /// the `winner`'s `alive` key is there (a winner whose own lease
    /// lapsed meanwhile does not take the shard).
    pub async fn promote(
        &mut self,
        version: i64,
        topology: &Topology,
        dead: &str,
        dead_registered: i64,
        winner: &str,
    ) -> Result<bool> {
        let alive = |id: &str| self.key(&format!("alive/{id}"));
        let when = vec![
            Compare::create_revision(alive(dead), CompareOp::Equal, 0),
            Compare::mod_revision(
                self.key(&format!("nodes/{dead}")),
                CompareOp::Equal,
                dead_registered,
            ),
            Compare::create_revision(alive(winner), CompareOp::NotEqual, 0),
        ];
        self.write_topology(version, topology, when).await
    }

    async fn write_topology(
        &mut self,
        version: i64,
        topology: &Topology,
        mut when: Vec<Compare>,
    ) -> Result<bool> {
        let key = self.key("topology");
        when.push(if version == 0 {
            Compare::create_revision(key.clone(), CompareOp::Equal, 0)
        } else {
            Compare::mod_revision(key.clone(), CompareOp::Equal, version)
        });
        let txn = Txn::new().when(when).and_then(vec![TxnOp::put(
            key,
            serde_json::to_vec(topology)?,
            None,
        )]);
        Ok(self.client.txn(txn).await?.succeeded())
    }

    /// `replica` vouches for `primary` (it hears it) for as long as
    /// `lease` lives, or until [`Store::unvouch`].
    pub async fn vouch(&mut self, primary: &str, replica: &str, lease: i64) -> Result<()> {
        self.put_leased(&format!("vouch/{primary}/{replica}"), b"1".to_vec(), lease)
            .await
    }

    pub async fn unvouch(&mut self, primary: &str, replica: &str) -> Result<()> {
        let key = self.key(&format!("vouch/{primary}/{replica}"));
        self.client.delete(key, None).await?;
        Ok(())
    }

    /// A replica's bid to replace its shard's lost primary in election
    /// `round` (`<shard id>/<epoch>/<incarnation>`): its replication
    /// offset, under its lease (a bidder that dies withdraws).
    pub async fn bid(&mut self, round: &str, id: &str, offset: u64, lease: i64) -> Result<()> {
        let key = format!("election/{round}/{id}");
        self.put_leased(&key, offset.to_string().into_bytes(), lease)
            .await
    }

    /// The bids of election `round`: node id and offset.
    pub async fn bids(&mut self, round: &str) -> Result<Vec<(String, u64)>> {
        let prefix = self.key(&format!("election/{round}/"));
        let resp = self
            .client
            .get(prefix.clone(), Some(GetOptions::new().with_prefix()))
            .await?;
        Ok(resp
            .kvs()
            .iter()
            .filter_map(|kv| {
                let id = kv.key().strip_prefix(prefix.as_bytes())?;
                let offset = std::str::from_utf8(kv.value()).ok()?.parse().ok()?;
                Some((String::from_utf8_lossy(id).into_owned(), offset))
            })
            .collect())
    }

    /// Forgets every election of a shard.
    pub async fn clear_bids(&mut self, shard: &str) -> Result<()> {
        let prefix = self.key(&format!("election/{shard}/"));
        self.client
            .delete(
                prefix,
                Some(etcd_client::DeleteOptions::new().with_prefix()),
            )
            .await?;
        Ok(())
    }

    /// Watches every key of the cluster from etcd revision `from`.
    pub async fn watch(&mut self, from: i64) -> Result<WatchStream> {
        let options = WatchOptions::new().with_prefix().with_start_revision(from);
        Ok(self
            .client
            .watch(self.prefix.clone(), Some(options))
            .await?)
    }
}
