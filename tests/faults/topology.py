"""The topologies the suite runs on: what nodes, how they link, which
faults apply to them, and what they promise (which acknowledged writes a
fault may take away). Also the waits that tell a topology has settled.
"""
from nodes import Node, keel_with_disk_faults, wait_until
from proxy import Proxy


def replica_caught_up(primary, replica, timeout=120):
    """Waits until `replica`'s link is up and it has applied everything its
    primary has written so far (its primary reached through a proxy or
    directly)."""
    target = primary.info()["master_repl_offset"]

    def probe():
        info = replica.info()
        return (info.get("master_link_status") == "up"
                and info.get("slave_repl_offset", -1) >= target)

    wait_until(f"{replica.name} to reach offset {target} of {primary.name}", probe, timeout=timeout)


class Single:
    """One keel node with the append-only log. Promise: under `always`, an
    acknowledged write survives kill -9; under `everysec`, one acknowledged
    within `loss_window` seconds before the kill may be lost."""

    replicated = False

    def __init__(self, fsync, scratch=None):
        self.name = f"single-{fsync}"
        self.fsync = fsync
        self.loss_window = 0.0 if fsync == "always" else 3.0
        self.nodes = [keel_with_disk_faults(["--appendonly", "yes", "--appendfsync", fsync], "n1", scratch)]
        self.primary = self.nodes[0]

    def start(self):
        self.primary.start()

    def replicas(self):
        return []

    def faults(self):
        return ["kill", "pause", "bgrewriteaof", "bgsave", "disk-full", "fsync-error", "slow-fsync"]

    def settle(self, timeout=120):
        wait_until("the node to answer", lambda: self.primary.client().ping(), timeout=timeout)

    def close(self, keep=False):
        for n in self.nodes:
            n.destroy(keep)


class Replicated:
    """A primary and two replicas, each replica's link through its own proxy
    (partitions, and failover by re-pointing). Every node logs with
    `appendfsync always`, so kill -9 of any node loses nothing it
    acknowledged. Promise: asynchronous replication, as Redis's: a write is
    lost at a failover only if no replica had it; one acknowledged by
    `WAIT 1` survives the loss of the primary (the replica promoted is the
    one with the highest offset, among replicas whose links were up)."""

    replicated = True
    loss_window = 0.0

    def __init__(self, kinds=("keel", "keel", "keel"), maxmemory=False, scratch=None):
        self.name = "replicas" + ("-mixed" if "redis" in kinds else "") + ("-maxmemory" if maxmemory else "")
        self.maxmemory = maxmemory
        self.nodes = []
        for i, kind in enumerate(kinds):
            args = ["--appendonly", "yes", "--appendfsync", "always", "--repl-timeout", "4",
                    "--repl-diskless-sync-delay", "0"]
            if maxmemory:
                # Eviction is on (the limit is above this workload's data,
                # so the replication buffer of a replica that is behind
                # must not count); the nemesis lowers a replica's limit
                # far below its data, which it must ignore
                # (replica-ignore-maxmemory).
                args += ["--maxmemory", "16mb", "--maxmemory-policy", "allkeys-lru"]
            if kind == "keel":
                if "redis" in kinds:
                    # redis-server 7.0 reads RDB version 10 only: a keel
                    # primary of it presents 7.0, as a Redis 7.0 primary.
                    args += ["--redis-version", "7.0.15"]
                self.nodes.append(keel_with_disk_faults(args, f"n{i + 1}", scratch))
            else:
                self.nodes.append(Node(kind, args, name=f"n{i + 1}", scratch=scratch))
        self.primary = self.nodes[0]
        self.links = {}

    def replicas(self):
        return [n for n in self.nodes if n is not self.primary]

    def start(self):
        self.primary.start()
        for r in self.replicas():
            link = Proxy(self.primary.port, name=r.name)
            self.links[r.name] = link
            r.role_args = ["--replicaof", "127.0.0.1", str(link.port)]
            r.start()
        self.settle()

    def faults(self):
        return ["kill", "pause", "partition", "bgrewriteaof", "bgsave", "maxmemory", "failover",
                "disk-full", "fsync-error", "slow-fsync"]

    def settle(self, timeout=180):
        """Every replica linked and caught up with the primary."""
        for r in self.replicas():
            replica_caught_up(self.primary, r, timeout=timeout)

    def failover(self, log):
        """The primary is lost (kill -9); the replica with the highest
        offset among those whose links are up takes over; the others follow
        it; the old primary comes back as a replica."""
        old = self.primary

        def linked():
            return all(r.info().get("master_link_status") == "up" for r in self.replicas())

        try:
            wait_until("replica links up before a failover", linked, timeout=20)
        except AssertionError:
            log("failover skipped: a replica link is down")
            return False
        old.kill()
        offsets = {r.name: r.info()["slave_repl_offset"] for r in self.replicas()}
        new = max(self.replicas(), key=lambda r: offsets[r.name])
        new.client().execute_command("REPLICAOF", "NO", "ONE")
        new.role_args = []
        self.primary = new
        log(f"failover: {old.name} lost, {new.name} promoted (offsets {offsets})")
        self.links.pop(new.name).close()
        for r in self.nodes:
            if r is new:
                continue
            if r.name in self.links:
                self.links[r.name].retarget(new.port)
            else:
                link = Proxy(new.port, name=r.name)
                self.links[r.name] = link
                r.role_args = ["--replicaof", "127.0.0.1", str(link.port)]
        old.start()
        return True

    def close(self, keep=False):
        for link in self.links.values():
            link.close()
        for n in self.nodes:
            n.destroy(keep)


def cluster_topology(scratch=None):
    from cluster import Cluster
    return Cluster(scratch)


class SingleTiered(Single):
    """One keel node with the log under `always` and a disk tier; the
    nemesis moves every value to disk now and then (`spill`), so the
    workload reads and writes values on disk. The promise is Single's: the
    tier is not a durable record, where a value lives changes nothing."""

    def __init__(self, scratch=None):
        self.name = "single-tiered"
        self.fsync = "always"
        self.loss_window = 0.0
        args = ["--appendonly", "yes", "--appendfsync", "always",
                "--tiering-dir", "tier", "--enable-debug-command", "yes"]
        self.nodes = [keel_with_disk_faults(args, "n1", scratch)]
        self.primary = self.nodes[0]

    def faults(self):
        return ["kill", "spill", "spill", "bgrewriteaof", "bgsave", "pause", "slow-fsync"]


TOPOLOGIES = {
    "single-tiered": lambda scratch=None: SingleTiered(scratch),
    "cluster": cluster_topology,
    "single-always": lambda scratch=None: Single("always", scratch),
    "single-everysec": lambda scratch=None: Single("everysec", scratch),
    "replicas": lambda scratch=None: Replicated(scratch=scratch),
    "replicas-mixed": lambda scratch=None: Replicated(("keel", "keel", "redis"), scratch=scratch),
    "replicas-maxmemory": lambda scratch=None: Replicated(maxmemory=True, scratch=scratch),
}
