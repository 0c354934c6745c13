//! The cluster's shape: nodes, shards and their slots, as stored (JSON) in
//! etcd under `/keel/<cluster-name>/`.

use serde::{Deserialize, Serialize};

/// Redis Cluster's hash slots.
pub const SLOTS: u16 = 16384;

/// A keel node as clients reach it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Node {
    /// 40 hex characters, as Redis Cluster node ids.
    pub id: String,
    pub ip: String,
    pub port: u16,
    /// The bus port shown in CLUSTER NODES / SHARDS (nothing listens
    /// there: keel nodes talk through etcd).
    pub cport: u16,
    #[serde(default)]
    pub hostname: String,
}

impl Node {
    pub fn addr(&self) -> String {
        format!("{}:{}", self.ip, self.port)
    }
}

/// One primary, its replicas, and the slots they serve.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Shard {
    /// 40 hex characters; names the shard in etcd keys.
    pub id: String,
    /// The configuration epoch (Redis's configEpoch, the shard's term):
    /// unique among shards, raised past the cluster's current epoch each
    /// time the shard's primary changes.
    pub epoch: u64,
    pub primary: String,
    #[serde(default)]
    pub replicas: Vec<String>,
    /// Inclusive ranges, sorted, disjoint.
    #[serde(default)]
    pub slots: Vec<[u16; 2]>,
}

impl Shard {
    pub fn has_node(&self, id: &str) -> bool {
        self.primary == id || self.replicas.iter().any(|r| r == id)
    }

    pub fn slot_count(&self) -> usize {
        self.slots.iter().map(|r| (r[1] - r[0]) as usize + 1).sum()
    }
}

/// Slots on their way from one shard to another (online resharding): the
/// source still owns them and serves the keys it has, asking clients to
/// go to the target (ASK) for the rest; the target takes those from
/// clients that say ASKING, and the keys the source MIGRATEs to it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Migration {
    /// Inclusive range.
    pub slots: [u16; 2],
    /// Shard ids.
    pub from: String,
    pub to: String,
    /// Opened on the target only: the target takes ASKING requests for
    /// the slots, the source does not send any yet. A move opens in two
    /// steps, target first (as `redis-cli --cluster` sets IMPORTING before
    /// MIGRATING), so no node sends a client to a target that does not
    /// know of the move yet.
    #[serde(default)]
    pub importing_only: bool,
    /// Every key has moved: the target serves the slots to every client
    /// (not only ASKING ones) before the move closes, so a source that
    /// reads the close first sends clients (MOVED) to a target that serves
    /// them rather than one that sends them back.
    #[serde(default)]
    pub closing: bool,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Topology {
    /// The highest epoch any shard has had (CLUSTER INFO's
    /// cluster_current_epoch).
    pub current_epoch: u64,
    pub shards: Vec<Shard>,
    #[serde(default)]
    pub migrations: Vec<Migration>,
}

/// No shard owns the slot.
pub const UNOWNED: u16 = u16::MAX;

impl Topology {
    /// For each slot, the index of the shard owning it, or [`UNOWNED`].
    pub fn owners(&self) -> Vec<u16> {
        let mut owner = vec![UNOWNED; SLOTS as usize];
        for (i, shard) in self.shards.iter().enumerate() {
            for r in &shard.slots {
                for s in r[0]..=r[1].min(SLOTS - 1) {
                    owner[s as usize] = i as u16;
                }
            }
        }
        owner
    }

    /// For each slot being migrated, the index of the shard it goes to, or
    /// [`UNOWNED`].
    pub fn moving(&self) -> Vec<u16> {
        let mut to = vec![UNOWNED; SLOTS as usize];
        for m in &self.migrations {
            if let Some(i) = self.shard_index(&m.to) {
                for s in m.slots[0]..=m.slots[1].min(SLOTS - 1) {
                    to[s as usize] = i as u16;
                }
            }
        }
        to
    }

    /// [`Topology::moving`] for the source's side: the migrations opened
    /// on both ends.
    pub fn moving_out(&self) -> Vec<u16> {
        let mut to = vec![UNOWNED; SLOTS as usize];
        for m in self.migrations.iter().filter(|m| !m.importing_only) {
            if let Some(i) = self.shard_index(&m.to) {
                for s in m.slots[0]..=m.slots[1].min(SLOTS - 1) {
                    to[s as usize] = i as u16;
                }
            }
        }
        to
    }

    pub fn shard_index(&self, id: &str) -> Option<usize> {
        self.shards.iter().position(|s| s.id == id)
    }

    /// The shard whose primary is node `id`.
    pub fn shard_of_primary(&self, id: &str) -> Option<usize> {
        self.shards.iter().position(|s| s.primary == id)
    }

    /// Starts moving `slots` (owned by shard `from`) to shard `to`: opens
    /// the move on the target ([`Migration::importing_only`]);
    /// [`Topology::open_source`] opens it on the source.
    pub fn begin_migration(&mut self, from: usize, to: usize, slots: [u16; 2]) {
        self.migrations.push(Migration {
            slots,
            from: self.shards[from].id.clone(),
            to: self.shards[to].id.clone(),
            importing_only: true,
            closing: false,
        });
    }

    /// The first step of closing the move of `slots`: the target serves
    /// them to every client ([`Migration::closing`]).
    pub fn close_on_target(&mut self, slots: [u16; 2]) {
        for m in self.migrations.iter_mut().filter(|m| m.slots == slots) {
            m.closing = true;
        }
    }

    /// For each slot, whether its move is closing on the target.
    pub fn closing(&self) -> Vec<bool> {
        let mut out = vec![false; SLOTS as usize];
        for m in self.migrations.iter().filter(|m| m.closing) {
            for s in m.slots[0]..=m.slots[1].min(SLOTS - 1) {
                out[s as usize] = true;
            }
        }
        out
    }

    /// The second step of opening the move of `slots`: the source sends
    /// clients of keys it no longer has to the target (ASK).
    pub fn open_source(&mut self, slots: [u16; 2]) {
        for m in self.migrations.iter_mut().filter(|m| m.slots == slots) {
            m.importing_only = false;
        }
    }

    /// Ends the migration of `slots`: the target owns them, with its epoch
    /// raised past the cluster's (as Redis's SETSLOT NODE bumps it).
    pub fn finish_migration(&mut self, slots: [u16; 2]) {
        let Some(pos) = self.migrations.iter().position(|m| m.slots == slots) else {
            return;
        };
        let m = self.migrations.remove(pos);
        let (Some(from), Some(to)) = (self.shard_index(&m.from), self.shard_index(&m.to)) else {
            return;
        };
        let moved = slots[0]..=slots[1];
        let keep: Vec<u16> = expand(&self.shards[from].slots)
            .into_iter()
            .filter(|s| !moved.contains(s))
            .collect();
        self.shards[from].slots = ranges(keep);
        let mut gain = expand(&self.shards[to].slots);
        gain.extend(moved);
        self.shards[to].slots = ranges(gain);
        self.current_epoch += 1;
        self.shards[to].epoch = self.current_epoch;
    }

    /// The shard `id` belongs to, and whether it is that shard's primary.
    pub fn role_of(&self, id: &str) -> Option<(usize, bool)> {
        self.shards
            .iter()
            .position(|s| s.has_node(id))
            .map(|i| (i, self.shards[i].primary == id))
    }

    pub fn slots_assigned(&self) -> usize {
        self.shards.iter().map(Shard::slot_count).sum()
    }

    pub fn node_ids(&self) -> impl Iterator<Item = &String> {
        self.shards
            .iter()
            .flat_map(|s| std::iter::once(&s.primary).chain(s.replicas.iter()))
    }

    /// A new cluster: the slots split into equal ranges over `primaries`
    /// (redis-cli's rounding), and
    /// `replicas` handed out round robin, `per_primary` each, as
    /// `redis-cli --cluster create` lays a cluster out. Epochs 1..=n.
    pub fn create(primaries: &[String], replicas: &[String], per_primary: usize) -> Topology {
        // redis-cli's split: a float cursor advanced 16384/n per primary,
        // each range ending at the rounded cursor, the last at 16383.
        let n = primaries.len().max(1);
        let per = f64::from(SLOTS) / n as f64;
        let mut first = 0u16;
        let mut cursor = 0f64;
        let mut shards = Vec::with_capacity(n);
        for (i, p) in primaries.iter().enumerate() {
            let mut last = (cursor + per - 1.0).round() as u16;
            if last >= SLOTS || i == n - 1 {
                last = SLOTS - 1;
            }
            last = last.max(first);
            shards.push(Shard {
                id: new_id(),
                epoch: i as u64 + 1,
                primary: p.clone(),
                replicas: Vec::new(),
                slots: vec![[first, last]],
            });
            first = last + 1;
            cursor += per;
        }
        let mut next = replicas.iter();
        'outer: for _ in 0..per_primary {
            for shard in shards.iter_mut() {
                match next.next() {
                    Some(r) => shard.replicas.push(r.clone()),
                    None => break 'outer,
                }
            }
        }
        Topology {
            current_epoch: shards.len() as u64,
            shards,
            migrations: Vec::new(),
        }
    }
}

/// Every slot of `ranges`.
pub fn expand(ranges: &[[u16; 2]]) -> Vec<u16> {
    ranges.iter().flat_map(|r| r[0]..=r[1]).collect()
}

/// Sorted, merged inclusive ranges of `slots`.
pub fn ranges(mut slots: Vec<u16>) -> Vec<[u16; 2]> {
    slots.sort_unstable();
    slots.dedup();
    let mut out: Vec<[u16; 2]> = Vec::new();
    for s in slots {
        match out.last_mut() {
            Some(r) if r[1] + 1 == s => r[1] = s,
            _ => out.push([s, s]),
        }
    }
    out
}

/// A random 40-hex-character id, as Redis's getRandomHexChars.
pub fn new_id() -> String {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    (0..40)
        .map(|_| char::from(b"0123456789abcdef"[rng.gen_range(0..16)]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_splits_slots_as_redis_cli() {
        let p: Vec<String> = (0..3).map(|i| format!("p{i}")).collect();
        let r: Vec<String> = (0..3).map(|i| format!("r{i}")).collect();
        let t = Topology::create(&p, &r, 1);
        let got: Vec<_> = t.shards.iter().map(|s| s.slots[0]).collect();
        assert_eq!(got, vec![[0, 5460], [5461, 10922], [10923, 16383]]);
        assert_eq!(t.shards[1].replicas, vec!["r1".to_string()]);
        assert_eq!(t.slots_assigned(), 16384);
        assert_eq!(t.role_of("r2"), Some((2, false)));
        assert_eq!(t.role_of("p0"), Some((0, true)));
        assert_eq!(t.owners()[5461], 1);
    }

    #[test]
    fn migration_moves_slots_and_raises_the_epoch() {
        let p: Vec<String> = (0..2).map(|i| format!("p{i}")).collect();
        let mut t = Topology::create(&p, &[], 0);
        t.begin_migration(0, 1, [0, 99]);
        assert_eq!(t.moving()[50], 1);
        assert_eq!(t.owners()[50], 0);
        t.finish_migration([0, 99]);
        assert!(t.migrations.is_empty());
        assert_eq!(t.shards[0].slots, vec![[100, 8191]]);
        assert_eq!(t.shards[1].slots, vec![[0, 99], [8192, 16383]]);
        assert_eq!((t.current_epoch, t.shards[1].epoch), (3, 3));
        assert_eq!(t.owners()[50], 1);
    }

    #[test]
    fn ranges_merge() {
        assert_eq!(ranges(vec![5, 1, 2, 3, 9, 8]), vec![[1, 3], [5, 5], [8, 9]]);
    }
}
