//! The verbs: each reads the cluster from etcd, changes it with one
//! compare-and-swap transaction if it changes anything, and asks the nodes
//! what only they know.

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use keel_cluster::topology::{expand, ranges};
use keel_cluster::{Node, Snapshot, Store, Topology, SLOTS};

use crate::nodes::Conn;

fn short(id: &str) -> &str {
    &id[..id.len().min(8)]
}

fn ranges_text(slots: &[[u16; 2]]) -> String {
    slots
        .iter()
        .map(|r| format!("{}-{}", r[0], r[1]))
        .collect::<Vec<_>>()
        .join(",")
}

/// The topology as `redis-cli --cluster check` prints it.
fn print_topology(snap: &Snapshot, t: &Topology) {
    let addr = |id: &str| snap.node(id).map(Node::addr).unwrap_or_else(|| "?".into());
    for s in &t.shards {
        println!("M: {} {}", s.primary, addr(&s.primary));
        println!(
            "   slots:[{}] ({} slots) master",
            ranges_text(&s.slots),
            s.slot_count()
        );
        if !s.replicas.is_empty() {
            println!("   {} additional replica(s)", s.replicas.len());
        }
    }
    for s in &t.shards {
        for r in &s.replicas {
            println!("S: {r} {}", addr(r));
            println!("   slots: (0 slots) slave");
            println!("   replicates {}", s.primary);
        }
    }
}

/// The id each address's node has, once it is registered in etcd.
async fn node_ids(store: &mut Store, addrs: &[String]) -> Result<Vec<String>> {
    let mut ids = Vec::new();
    for addr in addrs {
        let id = Conn::open(addr)?.text(&["CLUSTER", "MYID"])?;
        ids.push(id);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let snap = store.snapshot().await?;
        let missing: Vec<&String> = addrs
            .iter()
            .zip(&ids)
            .filter(|(_, id)| !snap.alive.contains(*id))
            .map(|(a, _)| a)
            .collect();
        if missing.is_empty() {
            return Ok(ids);
        }
        if Instant::now() > deadline {
            bail!(
                "not registered in etcd (is cluster-name the same?): {}",
                missing
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

pub async fn create(store: &mut Store, addrs: &[String], replicas: usize) -> Result<bool> {
    let snap = store.snapshot().await?;
    if snap.topology.is_some() {
        bail!("this cluster already exists in etcd");
    }
    let primaries = addrs.len() / (replicas + 1);
    if primaries == 0 {
        bail!(
            "{} nodes are too few for {replicas} replica(s) per primary",
            addrs.len()
        );
    }
    let ids = node_ids(store, addrs).await?;
    for addr in addrs {
        let keys = Conn::open(addr)?.int(&["DBSIZE"])?;
        if keys != 0 {
            bail!("Node {addr} is not empty. Either the node already knows other nodes (check with CLUSTER NODES) or contains some key in database 0.");
        }
    }
    let t = Topology::create(&ids[..primaries], &ids[primaries..], replicas);
    println!(
        ">>> Performing hash slots allocation on {} nodes...",
        addrs.len()
    );
    for (i, s) in t.shards.iter().enumerate() {
        println!("Master[{i}] -> Slots {} - {}", s.slots[0][0], s.slots[0][1]);
    }
    for s in &t.shards {
        let p = addrs[ids.iter().position(|x| *x == s.primary).unwrap_or(0)].clone();
        for r in &s.replicas {
            let ra = &addrs[ids.iter().position(|x| x == r).unwrap_or(0)];
            println!("Adding replica {ra} to {p}");
        }
    }
    let snap = store.snapshot().await?;
    print_topology(&snap, &t);
    println!(">>> Writing the topology to etcd");
    if !store.replace_topology(0, &t).await? {
        bail!("another writer created this cluster first");
    }
    println!(">>> Waiting for the cluster to join");
    wait_joined(&snap, &t).await?;
    println!("[OK] All {SLOTS} slots covered.");
    Ok(true)
}

/// Until every node reports `cluster_state:ok` and every replica's link
/// is up.
async fn wait_joined(snap: &Snapshot, t: &Topology) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    for s in &t.shards {
        for (id, primary) in
            std::iter::once((&s.primary, true)).chain(s.replicas.iter().map(|r| (r, false)))
        {
            let Some(node) = snap.node(id) else { continue };
            loop {
                let ok = Conn::open(&node.addr()).and_then(|mut c| {
                    let state = c.info_field(&["CLUSTER", "INFO"], "cluster_state")?;
                    let link = if primary {
                        Some("up".to_string())
                    } else {
                        c.info_field(&["INFO", "replication"], "master_link_status")?
                    };
                    Ok(state.as_deref() == Some("ok") && link.as_deref() == Some("up"))
                });
                if matches!(ok, Ok(true)) {
                    break;
                }
                if Instant::now() > deadline {
                    bail!("node {} did not join in 60 s", node.addr());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    Ok(())
}

pub async fn check(store: &mut Store) -> Result<bool> {
    let snap = store.snapshot().await?;
    let Some(t) = snap.topology.clone() else {
        bail!("no such cluster in etcd");
    };
    println!(
        ">>> Performing Cluster Check (topology at etcd revision {})",
        snap.version
    );
    print_topology(&snap, &t);
    let mut good = true;
    for s in &t.shards {
        for id in std::iter::once(&s.primary).chain(&s.replicas) {
            let addr = snap.node(id).map(Node::addr).unwrap_or_default();
            if !snap.alive.contains(id) {
                println!(
                    "[ERR] Node {addr} ({}) has no live lease in etcd.",
                    short(id)
                );
                good = false;
                continue;
            }
            let seen = Conn::open(&addr)
                .and_then(|mut c| c.info_field(&["CLUSTER", "INFO"], "cluster_current_epoch"));
            match seen {
                Ok(Some(e)) if e == t.current_epoch.to_string() => {}
                Ok(e) => {
                    println!(
                        "[ERR] Node {addr} is at epoch {} instead of {}.",
                        e.unwrap_or_default(),
                        t.current_epoch
                    );
                    good = false;
                }
                Err(e) => {
                    println!("[ERR] Node {addr}: {e:#}");
                    good = false;
                }
            }
        }
    }
    if good {
        println!("[OK] All nodes agree about slots configuration.");
    }
    println!(">>> Check for open slots...");
    for m in &t.migrations {
        println!(
            "[WARNING] Slots {}-{} are moving from shard {} to shard {}.",
            m.slots[0],
            m.slots[1],
            short(&m.from),
            short(&m.to)
        );
        good = false;
    }
    println!(">>> Check slots coverage...");
    let covered = t.slots_assigned();
    if covered == SLOTS as usize {
        println!("[OK] All {SLOTS} slots covered.");
    } else {
        println!("[ERR] Not all {SLOTS} slots are covered by nodes.");
        good = false;
    }
    Ok(good)
}

pub async fn info(store: &mut Store) -> Result<bool> {
    let snap = store.snapshot().await?;
    let Some(t) = snap.topology.clone() else {
        bail!("no such cluster in etcd");
    };
    let mut total = 0i64;
    for s in &t.shards {
        let addr = snap.node(&s.primary).map(Node::addr).unwrap_or_default();
        let keys = Conn::open(&addr)
            .and_then(|mut c| c.int(&["DBSIZE"]))
            .unwrap_or(0);
        total += keys;
        println!(
            "{addr} ({}...) -> {keys} keys | {} slots | {} slaves.",
            short(&s.primary),
            s.slot_count(),
            s.replicas.len()
        );
    }
    println!("[OK] {total} keys in {} masters.", t.shards.len());
    println!(
        "{:.2} keys per slot on average.",
        total as f64 / f64::from(SLOTS)
    );
    Ok(true)
}

/// Applies `change` to the topology in one compare-and-swap, re-reading
/// and retrying if another writer got there first.
async fn update(store: &mut Store, change: impl Fn(&mut Topology)) -> Result<()> {
    loop {
        let snap = store.snapshot().await?;
        let Some(mut t) = snap.topology else {
            bail!("no such cluster in etcd");
        };
        change(&mut t);
        if store.replace_topology(snap.version, &t).await? {
            return Ok(());
        }
    }
}

/// How long a step of a move keeps trying while a shard's primary is
/// away (killed, cut off, failing over) before it gives up.
const MOVE_RETRY: Duration = Duration::from_secs(60);

/// The current primary of shard `shard` (a failover changes it).
async fn primary_of(store: &mut Store, shard: &str) -> Result<Node> {
    let snap = store.snapshot().await?;
    let Some(t) = snap.topology.as_ref() else {
        bail!("no such cluster in etcd");
    };
    let Some(s) = t.shards.iter().find(|s| s.id == shard) else {
        bail!("shard {} is gone from the topology", short(shard));
    };
    snap.node(&s.primary)
        .cloned()
        .ok_or_else(|| anyhow!("unknown node {}", s.primary))
}

/// Which end of a move [`wait_seen`] asks, for what.
#[derive(Clone, Copy, Debug)]
enum End {
    /// The source shows the move open.
    Source,
    /// The target shows the move open.
    Target,
    /// The target no longer shows it: it serves every client (closing).
    TargetServing,
}

/// Until one end of the move of `slot` shows it on its own CLUSTER NODES
/// line: the source's primary `[slot->-<target>]`, the target's
/// `[slot-<-<source>]`, whoever the primaries are by then.
async fn wait_seen(store: &mut Store, from: &str, to: &str, slot: u16, end: End) -> Result<()> {
    let deadline = Instant::now() + MOVE_RETRY;
    loop {
        let seen = match (primary_of(store, from).await, primary_of(store, to).await) {
            (Ok(src), Ok(dst)) => {
                let (node, marker) = match end {
                    End::Source => (&src, format!("[{slot}->-{}]", dst.id)),
                    End::Target | End::TargetServing => (&dst, format!("[{slot}-<-{}]", src.id)),
                };
                let shown = matches!(end, End::Source | End::Target);
                Conn::open(&node.addr())
                    .and_then(|mut c| c.text(&["CLUSTER", "NODES"]))
                    .map(|lines| {
                        lines
                            .lines()
                            .find(|l| l.contains("myself"))
                            .is_some_and(|l| l.contains(&marker) == shown)
                    })
            }
            (Err(e), _) | (_, Err(e)) => Err(e),
        };
        if matches!(seen, Ok(true)) {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the {end:?} of the move of slot {slot} does not show it: {seen:?}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Moves keys from one shard's primary to another's with MIGRATE,
/// following each shard to its new primary after a failover.
struct Mover<'a> {
    from: &'a str,
    to: &'a str,
    pipeline: String,
    timeout: String,
    /// The source primary's connection and the target primary, as last
    /// resolved; dropped on an error and resolved again.
    ends: Option<(Conn, Node)>,
}

impl<'a> Mover<'a> {
    fn new(from: &'a str, to: &'a str, pipeline: usize, timeout_ms: u64) -> Mover<'a> {
        Mover {
            from,
            to,
            pipeline: pipeline.max(1).to_string(),
            timeout: timeout_ms.to_string(),
            ends: None,
        }
    }

    /// Every key of `slot`: how many it moved. An error (a primary killed
    /// or failing over) is retried on the shards' primaries of the moment
    /// until MOVE_RETRY passes without progress.
    async fn slot(&mut self, store: &mut Store, slot: u16) -> Result<usize> {
        let mut moved = 0;
        let mut deadline = Instant::now() + MOVE_RETRY;
        loop {
            match self.batch(store, slot).await {
                Ok(0) => return Ok(moved),
                Ok(n) => {
                    moved += n;
                    deadline = Instant::now() + MOVE_RETRY;
                }
                Err(e) if Instant::now() < deadline => {
                    eprintln!("[WARNING] moving slot {slot}: {e:#}; trying again");
                    self.ends = None;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(e.context(format!("moving slot {slot}"))),
            }
        }
    }

    /// One MIGRATE of up to `pipeline` keys of `slot`.
    async fn batch(&mut self, store: &mut Store, slot: u16) -> Result<usize> {
        if self.ends.is_none() {
            let src = primary_of(store, self.from).await?;
            let dst = primary_of(store, self.to).await?;
            self.ends = Some((Conn::open(&src.addr())?, dst));
        }
        let Some((conn, dst)) = self.ends.as_mut() else {
            unreachable!("resolved above");
        };
        let slot_s = slot.to_string();
        let keys = conn.list(&["CLUSTER", "GETKEYSINSLOT", &slot_s, &self.pipeline])?;
        if keys.is_empty() {
            return Ok(0);
        }
        let port = dst.port.to_string();
        let (ip, timeout) = (dst.ip.as_str(), self.timeout.as_str());
        match conn.call(&migrate_args(ip, &port, timeout, &keys, false)) {
            Ok(_) => Ok(keys.len()),
            Err(e) if e.to_string().contains("BUSYKEY") => {
                // The target has some of these keys already: a MIGRATE was
                // cut off after the target stored them (its connection
                // broke, or the source failed over or restarted without
                // the delete). The source's copy is the one clients used:
                // the source sends nobody to the target for a key until
                // its delete is on every replica and on disk
                // (`Cluster::may_redirect` on the nodes), so nobody wrote
                // the target's copy. It replaces the target's.
                for key in &keys {
                    let one = std::slice::from_ref(key);
                    match conn.call(&migrate_args(ip, &port, timeout, one, false)) {
                        Ok(_) => {}
                        Err(e) if e.to_string().contains("BUSYKEY") => {
                            eprintln!(
                                "[WARNING] key {} was on both ends (a move cut off): the source's copy replaces the target's",
                                String::from_utf8_lossy(key)
                            );
                            conn.call(&migrate_args(ip, &port, timeout, one, true))?;
                        }
                        Err(e) => return Err(e),
                    }
                }
                Ok(keys.len())
            }
            Err(e) => Err(e),
        }
    }
}

/// MIGRATE of `keys` to `ip:port` (database 0; REPLACE when `replace`).
fn migrate_args<'a>(
    ip: &'a str,
    port: &'a str,
    timeout: &'a str,
    keys: &'a [Vec<u8>],
    replace: bool,
) -> Vec<&'a [u8]> {
    let mut args: Vec<&[u8]> = vec![
        b"MIGRATE",
        ip.as_bytes(),
        port.as_bytes(),
        b"",
        b"0",
        timeout.as_bytes(),
    ];
    if replace {
        args.push(b"REPLACE");
    }
    args.push(b"KEYS");
    args.extend(keys.iter().map(Vec::as_slice));
    args
}

pub struct Reshard<'a> {
    pub from: &'a str,
    pub to: &'a str,
    pub slots: usize,
    /// Slots per step (one etcd transaction to open them, one to close).
    pub batch: usize,
    /// Keys per MIGRATE.
    pub pipeline: usize,
    pub timeout_ms: u64,
}

/// Moves `slots` slots from the shard whose primary is `from` to the one
/// whose primary is `to`, `batch` slots at a time: the slots are marked
/// migrating in etcd (the source answers ASK for keys it no longer has,
/// the target takes ASKING requests), their keys are MIGRATEd `pipeline`
/// at a time, then the target is made their owner. A failover of either
/// shard on the way is followed: the move goes on with the new primary.
pub async fn reshard(store: &mut Store, r: Reshard<'_>) -> Result<bool> {
    let snap = store.snapshot().await?;
    let Some(t) = snap.topology.clone() else {
        bail!("no such cluster in etcd");
    };
    if !t.migrations.is_empty() {
        bail!("slots are already moving: keel-ctl fix finishes that move");
    }
    let (Some(src), Some(dst)) = (t.shard_of_primary(r.from), t.shard_of_primary(r.to)) else {
        bail!("--from and --to must be primaries' node ids");
    };
    if src == dst {
        bail!("--from and --to are the same shard");
    }
    let addr = |id: &str| snap.node(id).map(Node::addr).unwrap_or_default();
    let (src_addr, dst_addr) = (addr(r.from), addr(r.to));
    let (from, to) = (t.shards[src].id.clone(), t.shards[dst].id.clone());
    let slots: Vec<u16> = expand(&t.shards[src].slots)
        .into_iter()
        .take(r.slots)
        .collect();
    println!("Ready to move {} slots.", slots.len());
    println!("  Source nodes:\n    M: {} {src_addr}", r.from);
    println!("  Destination node:\n    M: {} {dst_addr}", r.to);
    let mut mover = Mover::new(&from, &to, r.pipeline, r.timeout_ms);
    let mut moved_keys = 0usize;
    for chunk in slots.chunks(r.batch.max(1)) {
        let open = ranges(chunk.to_vec());
        update(store, |t| {
            for range in &open {
                t.begin_migration(src, dst, *range);
            }
        })
        .await?;
        moved_keys += finish_move(store, &mut mover, &open).await?;
        println!(
            "Moved slots {}-{} from {src_addr} to {dst_addr} ({moved_keys} keys so far)",
            chunk[0],
            chunk[chunk.len() - 1]
        );
    }
    Ok(true)
}

/// Moves the keys of the migration of `open` (ranges of slots) and closes
/// it: the target shard owns them. The move is opened on the source only
/// once the target shows it, so the source sends nobody to a target that
/// would answer MOVED.
async fn finish_move(store: &mut Store, mover: &mut Mover<'_>, open: &[[u16; 2]]) -> Result<usize> {
    let Some(first) = open.first() else {
        return Ok(0);
    };
    wait_seen(store, mover.from, mover.to, first[0], End::Target).await?;
    update(store, |t| {
        for range in open {
            t.open_source(*range);
        }
    })
    .await?;
    wait_seen(store, mover.from, mover.to, first[0], End::Source).await?;
    let mut moved = 0;
    for range in open {
        for slot in range[0]..=range[1] {
            moved += mover.slot(store, slot).await?;
        }
    }
    // Closed on the target first, as it was opened: once the target
    // serves every client, the source may send them there with MOVED.
    update(store, |t| {
        for range in open {
            t.close_on_target(*range);
        }
    })
    .await?;
    wait_seen(store, mover.from, mover.to, first[0], End::TargetServing).await?;
    update(store, |t| {
        for range in open {
            t.finish_migration(*range);
        }
    })
    .await?;
    Ok(moved)
}

/// Finishes the migrations left open (a keel-ctl reshard that stopped
/// midway): their remaining keys are moved and the targets made owners,
/// as `redis-cli --cluster fix` closes open slots.
pub async fn fix(store: &mut Store) -> Result<bool> {
    let snap = store.snapshot().await?;
    let Some(t) = snap.topology.clone() else {
        bail!("no such cluster in etcd");
    };
    if t.migrations.is_empty() {
        println!("[OK] No slots are moving.");
        return Ok(true);
    }
    for m in &t.migrations {
        let known = |id: &str| t.shards.iter().any(|s| s.id == id);
        if !known(&m.from) || !known(&m.to) {
            // A shard removed while its slots moved (older keel-ctl
            // allowed it): the move cannot finish; the source keeps the
            // slots it still owns.
            println!(
                "[WARNING] Slots {}-{} were moving between shards {} and {}, and one of them is gone: the move is dropped",
                m.slots[0],
                m.slots[1],
                short(&m.from),
                short(&m.to)
            );
            update(store, |t| t.migrations.retain(|x| x.slots != m.slots)).await?;
            continue;
        }
        println!(
            ">>> Finishing the move of slots {}-{} to shard {}",
            m.slots[0],
            m.slots[1],
            short(&m.to)
        );
        let mut mover = Mover::new(&m.from, &m.to, 100, 60000);
        let moved = finish_move(store, &mut mover, &[m.slots]).await?;
        println!("[OK] Moved {moved} keys.");
    }
    Ok(true)
}

/// Adds a running, empty node: a replica of `replica_of` (a primary's
/// node id), or a primary of a new shard with no slots (reshard or
/// rebalance then gives it some).
pub async fn add_node(store: &mut Store, addr: &str, replica_of: Option<&str>) -> Result<bool> {
    let id = node_ids(store, &[addr.to_string()]).await?.remove(0);
    if Conn::open(addr)?.int(&["DBSIZE"])? != 0 {
        bail!("Node {addr} is not empty. Either the node already knows other nodes (check with CLUSTER NODES) or contains some key in database 0.");
    }
    let snap = store.snapshot().await?;
    if snap
        .topology
        .as_ref()
        .is_some_and(|t| t.role_of(&id).is_some())
    {
        bail!("Node {addr} is already part of the cluster");
    }
    let primary = replica_of.map(str::to_string);
    let new_id = id.clone();
    update(store, move |t| match &primary {
        Some(p) => {
            if let Some(i) = t.shard_of_primary(p) {
                t.shards[i].replicas.push(new_id.clone());
            }
        }
        None => {
            t.current_epoch += 1;
            t.shards.push(keel_cluster::Shard {
                id: keel_cluster::topology::new_id(),
                epoch: t.current_epoch,
                primary: new_id.clone(),
                replicas: Vec::new(),
                slots: Vec::new(),
            });
        }
    })
    .await?;
    let snap = store.snapshot().await?;
    let Some(t) = snap.topology.clone() else {
        bail!("no such cluster in etcd");
    };
    if t.role_of(&id).is_none() {
        bail!("no primary with id {}", replica_of.unwrap_or_default());
    }
    println!(">>> Adding node {addr} to the cluster");
    wait_joined(&snap, &t).await?;
    println!("[OK] New node added correctly.");
    Ok(true)
}

/// Removes a node that holds no slots (a replica, or a primary emptied
/// by reshard) from the topology and forgets its address.
pub async fn del_node(store: &mut Store, id: &str) -> Result<bool> {
    let snap = store.snapshot().await?;
    let Some(t) = snap.topology.clone() else {
        bail!("no such cluster in etcd");
    };
    if let Some((i, true)) = t.role_of(id) {
        let shard = &t.shards[i].id;
        if t.migrations
            .iter()
            .any(|m| &m.from == shard || &m.to == shard)
        {
            bail!("Node {id}'s shard has slots moving in or out: keel-ctl fix finishes the move first.");
        }
    }
    match t.role_of(id) {
        None => bail!("No such node ID {id}"),
        Some((i, true)) if !t.shards[i].slots.is_empty() => {
            bail!("Node {id} is not empty! Reshard data away and try again.")
        }
        Some((i, true)) if !t.shards[i].replicas.is_empty() => {
            bail!("Node {id} has replicas: remove them first.")
        }
        Some(_) => {}
    }
    println!(">>> Removing node {id} from cluster");
    let gone = id.to_string();
    update(store, move |t| {
        t.shards.retain(|s| s.primary != gone);
        for s in t.shards.iter_mut() {
            s.replicas.retain(|r| *r != gone);
        }
    })
    .await?;
    store.unregister(id).await?;
    println!(">>> Node {id} removed; it can be shut down.");
    Ok(true)
}

/// A manual failover without data loss: writes on the primary pause, the
/// replica catches up to its offset, the topology swaps their roles
/// (epoch raised), then the old primary (now a replica) resumes and
/// redirects what was held.
pub async fn failover(store: &mut Store, replica: &str) -> Result<bool> {
    let snap = store.snapshot().await?;
    let Some(t) = snap.topology.clone() else {
        bail!("no such cluster in etcd");
    };
    let Some((i, false)) = t.role_of(replica) else {
        bail!("{replica} is not a replica");
    };
    let primary = t.shards[i].primary.clone();
    let addr = |id: &str| snap.node(id).map(Node::addr).unwrap_or_default();
    let (p_addr, r_addr) = (addr(&primary), addr(replica));
    let mut p = Conn::open(&p_addr)?;
    p.call(&["CLIENT", "PAUSE", "10000", "WRITE"])?;
    let result = async {
        let offset = |c: &mut Conn| -> Result<u64> {
            Ok(
                c.info_field(&["INFO", "replication"], "master_repl_offset")?
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
            )
        };
        let target = offset(&mut p)?;
        let deadline = Instant::now() + Duration::from_secs(8);
        loop {
            let seen = offset(&mut Conn::open(&r_addr)?)?;
            // Past it is as good: with writes paused only control
            // requests (the promises' GETACK) can follow the target.
            if seen >= target {
                break;
            }
            if Instant::now() > deadline {
                bail!("the replica did not catch up (offset {seen} of {target})");
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let (new, old) = (replica.to_string(), primary.clone());
        update(store, move |t| {
            t.current_epoch += 1;
            let s = &mut t.shards[i];
            s.primary = new.clone();
            s.replicas.retain(|r| *r != new);
            s.replicas.push(old.clone());
            s.epoch = t.current_epoch;
        })
        .await?;
        // Until the old primary itself redirects, held writes stay held.
        let deadline = Instant::now() + Duration::from_secs(8);
        loop {
            let role = p.call(&["ROLE"])?;
            let is_replica = matches!(&role, resp::reply::Value::Array(v)
                if v.first() == Some(&resp::reply::Value::Bulk(b"slave".to_vec())));
            if is_replica {
                break;
            }
            if Instant::now() > deadline {
                bail!("{p_addr} did not become a replica");
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }
    .await;
    p.call(&["CLIENT", "UNPAUSE"])?;
    result?;
    println!("[OK] {r_addr} is the primary; {p_addr} its replica.");
    Ok(true)
}

/// Evens out the slots over the primaries (as `redis-cli --cluster
/// rebalance`, weights all 1): moves from those above their share to
/// those below, with reshard's steps.
pub async fn rebalance(store: &mut Store, batch: usize, pipeline: usize) -> Result<bool> {
    loop {
        let snap = store.snapshot().await?;
        let Some(t) = snap.topology.clone() else {
            bail!("no such cluster in etcd");
        };
        let n = t.shards.len();
        if n == 0 {
            bail!("no primaries");
        }
        let share = |i: usize| SLOTS as usize / n + usize::from(i < SLOTS as usize % n);
        let mut counts: Vec<(usize, usize)> = t
            .shards
            .iter()
            .enumerate()
            .map(|(i, s)| (i, s.slot_count()))
            .collect();
        counts.sort_by_key(|&(_, c)| std::cmp::Reverse(c));
        let over: Vec<(usize, usize)> = counts
            .iter()
            .enumerate()
            .filter(|(rank, (_, c))| *c > share(*rank))
            .map(|(rank, &(i, c))| (i, c - share(rank)))
            .collect();
        let under: Vec<(usize, usize)> = counts
            .iter()
            .enumerate()
            .filter(|(rank, (_, c))| *c < share(*rank))
            .map(|(rank, &(i, c))| (i, share(rank) - c))
            .collect();
        let (Some(&(from, extra)), Some(&(to, need))) = (over.first(), under.first()) else {
            println!("[OK] The slots are balanced.");
            return Ok(true);
        };
        let r = Reshard {
            from: &t.shards[from].primary.clone(),
            to: &t.shards[to].primary.clone(),
            slots: extra.min(need),
            batch,
            pipeline,
            timeout_ms: 60000,
        };
        reshard(store, r).await?;
    }
}
