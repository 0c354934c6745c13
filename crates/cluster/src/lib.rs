//! keel's cluster control plane, shared by `keel-server` (each node) and
//! `keel-ctl` (the operator tool): the topology (which shard owns which
//! hash slots, which node is each shard's primary, with an epoch raised on
//! every change of primary) and its home in etcd.
//!
//! etcd is the only place the topology is decided: every change is one
//! etcd transaction compared on the revision the writer read, so two
//! writers cannot both win, and a node applies only topologies newer than
//! the one it holds. There is no gossip between nodes.

pub mod store;
pub mod topology;

pub use store::{Snapshot, Store};
pub use topology::{Migration, Node, Shard, Topology, SLOTS};
