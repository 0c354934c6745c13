"""The cluster topology: 3 primaries and 3 replicas of keel over a
3-member etcd on this machine. The workload's keys all carry one hash tag,
so they live in one slot of one shard: the history is that shard's, and
the checkers read it as they read a single primary's; the faults hit every
node and every etcd member, so the other shards and etcd act on it
(failover, fencing, the cluster's state).

Promise: as the replicated topology's: a write `WAIT 1` confirmed survives
the loss of its primary; a write its primary alone acknowledged may be
lost at a failover. Every node logs with `appendfsync always`.
"""
import json
import os
import shutil
import subprocess
import threading
import time
import urllib.request

import redis

from netns import Network
from nodes import KEEL, free_port, keel_with_disk_faults, wait_until

CTL = os.path.join(os.path.dirname(KEEL), "keel-ctl")
# The workload's keys: one slot (11), among the first of its shard's, so
# `keel-ctl reshard --slots 16` from its owner moves it.
TAG = "{w1716}"


class Etcd:
    """`n` etcd members; each can be killed, paused and restarted."""

    def __init__(self, scratch_dir, hosts):
        self.dir, self.names = scratch_dir, [f"e{i}" for i in range(len(hosts))]
        self.hosts = hosts
        self.client = [free_port() for _ in hosts]
        self.peer = [free_port() for _ in hosts]
        self.initial = ",".join(f"{m}=http://{h.ip}:{p}" for m, h, p in zip(self.names, hosts, self.peer))
        self.endpoints = ",".join(f"{h.ip}:{p}" for h, p in zip(hosts, self.client))
        self.procs = [None] * len(hosts)
        self.paused = [False] * len(hosts)

    def start(self, i, state="existing"):
        ip = self.hosts[i].ip
        c, p = f"http://{ip}:{self.client[i]}", f"http://{ip}:{self.peer[i]}"
        log = open(os.path.join(self.dir, f"etcd-{i}.log"), "ab")
        self.procs[i] = subprocess.Popen(
            [*self.hosts[i].prefix, "etcd", "--name", self.names[i],
             "--data-dir", os.path.join(self.dir, f"etcd-{i}"),
             "--listen-client-urls", c, "--advertise-client-urls", c, "--listen-peer-urls", p,
             "--initial-advertise-peer-urls", p, "--initial-cluster", self.initial,
             "--initial-cluster-state", state], stdout=log, stderr=log)
        self.paused[i] = False

    def start_all(self):
        for i in range(len(self.names)):
            self.start(i, "new")
        wait_until("an etcd leader", self.healthy, timeout=60)

    def healthy(self):
        for i in range(len(self.names)):
            req = urllib.request.Request(f"http://{self.hosts[i].ip}:{self.client[i]}/v3/maintenance/status",
                                         data=b"{}", method="POST")
            status = json.loads(urllib.request.urlopen(req, timeout=1).read())
            if not status.get("leader"):
                return False
        return True

    def kill(self, i):
        if self.procs[i] is not None:
            self.procs[i].kill()
            self.procs[i].wait()
            self.procs[i] = None

    def pause(self, i):
        if self.procs[i] is not None and not self.paused[i]:
            self.procs[i].send_signal(19)
            self.paused[i] = True

    def resume(self, i):
        if self.procs[i] is not None and self.paused[i]:
            self.procs[i].send_signal(18)
            self.paused[i] = False

    def heal(self):
        for i in range(len(self.names)):
            self.resume(i)
            if self.procs[i] is None or self.procs[i].poll() is not None:
                self.start(i)

    def close(self, keep=False):
        for i in range(len(self.names)):
            self.resume(i)
            self.kill(i)
        if not keep:
            shutil.rmtree(self.dir, ignore_errors=True)


def slot_of(key):
    """CRC16 (XMODEM) of the hash tag, as Redis Cluster."""
    s = key.find("{")
    if s >= 0:
        e = key.find("}", s + 1)
        if e > s + 1:
            key = key[s + 1:e]
    crc = 0
    for b in key.encode():
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc % 16384


class Cluster:
    replicated = True
    loss_window = 0.0
    key_tag = TAG

    def __init__(self, scratch=None):
        self.name = "cluster"
        import tempfile
        self.net = Network()
        self.etcd = Etcd(tempfile.mkdtemp(prefix="keel-faults-etcd-", dir=scratch),
                         [self.net.host(f"e{i}") for i in range(3)])
        self.cluster_name = f"faults{free_port()}"

        def node(name):
            args = ["--protected-mode", "no", "--appendonly", "yes", "--appendfsync", "always", "--repl-timeout", "4",
                    "--repl-diskless-sync-delay", "0", "--cluster-enabled", "yes",
                    "--cluster-etcd-endpoints", self.etcd.endpoints, "--cluster-name", self.cluster_name]
            return keel_with_disk_faults(args, name, scratch, self.net.host(name))

        self.nodes = [node(f"n{i + 1}") for i in range(6)]
        # A seventh node, added to the cluster and removed again while the
        # faults run (`membership`); not a target of the other faults.
        self.spare, self.spare_id = node("n7"), None
        self.slot = slot_of(TAG)
        self.lock = threading.Lock()
        self.owner, self.owner_id, self.checked = self.nodes[0], None, 0.0
        # Times the workload's slot changed primary on its own (a
        # failover: set by `primary`), and whether the nemesis is moving it
        # itself (keel-ctl failover or reshard: no loss is allowed then).
        self.failovers_seen = []
        self.planned = False

    def members(self):
        """The nodes in the cluster now: the six, and the spare while added."""
        return self.nodes + ([self.spare] if self.spare_id else [])

    def reachable(self, n):
        """Alive, running, and not cut from the test's clients."""
        return n.alive() and not n.paused and self.net.client_ip not in n.host.cuts

    # The workload asks for the primary before each operation: the owner
    # of the workload's slot, asked again at most every 50 ms.
    @property
    def primary(self):
        with self.lock:
            if time.monotonic() - self.checked > 0.05:
                self.checked = time.monotonic()
                self.refresh()
            return self.owner

    def refresh(self):
        for n in self.members():
            if not self.reachable(n):
                continue
            try:
                lines = n.client(timeout=0.5).execute_command("CLUSTER", "NODES")
            except (redis.RedisError, OSError):
                continue
            if isinstance(lines, bytes):
                lines = lines.decode()
            for line in lines.splitlines():
                f = line.split()
                if len(f) < 8 or "master" not in f[2]:
                    continue
                for r in f[8:]:
                    lo, _, hi = r.partition("-")
                    if lo.isdigit() and int(lo) <= self.slot <= int(hi or lo):
                        port = int(f[1].split("@")[0].rsplit(":", 1)[1])
                        node = next((m for m in self.nodes + [self.spare] if m.port == port), None)
                        if node is not None:
                            if self.owner_id is not None and f[0] != self.owner_id and not self.planned:
                                self.failovers_seen.append(time.monotonic())
                            self.owner, self.owner_id = node, f[0]
                            return

    def replicas(self):
        """The replicas of the workload's shard."""
        primary = self.primary
        lines = primary.client().execute_command("CLUSTER", "NODES")
        if isinstance(lines, bytes):
            lines = lines.decode()
        ports = []
        for line in lines.splitlines():
            f = line.split()
            if len(f) >= 4 and f[3] == self.owner_id:
                ports.append(int(f[1].split("@")[0].rsplit(":", 1)[1]))
        return [n for n in self.members() if n.port in ports]

    def start(self):
        self.etcd.start_all()
        for n in self.nodes:
            n.start()
        addrs = [f"{n.ip}:{n.port}" for n in self.nodes]
        r = subprocess.run([CTL, "--etcd", self.etcd.endpoints, "--cluster", self.cluster_name, "create",
                            *addrs, "--replicas", "1"], capture_output=True, text=True)
        assert r.returncode == 0, f"keel-ctl create: {r.stdout}{r.stderr}"
        self.settle()

    def faults(self):
        return ["kill", "pause", "etcd-kill", "etcd-pause", "bgrewriteaof", "bgsave",
                "disk-full", "fsync-error", "slow-fsync", "ctl-failover", "reshard",
                "cut-etcd", "cut-link", "cut-clients", "isolate", "membership", "reshard-kill"]

    def cut(self, node, what):
        """Cuts `node`'s links: "etcd" (every etcd member), "link" (its
        replication links: a replica's to its primary, a primary's to its
        replicas), "clients" (the test's clients and keel-ctl) or
        "isolate" (etcd and every other node; its clients still reach it).
        Returns the addresses cut."""
        etcd = [h.ip for h in self.etcd.hosts]
        if what == "etcd":
            ips = etcd
        elif what == "clients":
            ips = [self.net.client_ip]
        elif what == "isolate":
            ips = etcd + [n.ip for n in self.nodes + [self.spare]]
        else:
            ips = self.replication_peers(node)
        node.host.cut(ips)
        return sorted(set(ips) - {node.ip})

    def replication_peers(self, node):
        if not self.reachable(node):
            return []
        try:
            role = node.client(timeout=1).execute_command("ROLE")
        except (redis.RedisError, OSError):
            return []
        if role[0] == "slave":
            return [role[1]]
        return [r[0] for r in role[2]]

    def heal(self, node):
        node.host.heal()

    def membership(self, log):
        """keel-ctl add-node of the spare as a replica of the workload's
        shard when it is out; keel-ctl del-node when it is in (after the
        shard's other replicas caught up with their primary, as an operator
        would before taking a copy away)."""
        if self.spare_id is None:
            self.spare.kill()
            self.spare.wipe()
            self.spare.start()
            with self.lock:
                self.refresh()
                owner = self.owner_id
            r = self.ctl("add-node", f"{self.spare.ip}:{self.spare.port}", "--replica-of", owner)
            log(f"  keel-ctl add-node n7 --replica-of {owner[:8]}: exit {r.returncode}"
                + ("" if r.returncode == 0 else f": {(r.stdout + r.stderr)[-300:]}"))
            if r.returncode == 0:
                self.spare_id = self.spare.client().execute_command("CLUSTER", "MYID")
            else:
                self.ctl("del-node", self.spare.client().execute_command("CLUSTER", "MYID"))
                self.spare.kill()
            return
        if self.spare.client().execute_command("ROLE")[0] != "slave":
            log("  n7 is a primary now: it stays")
            return
        try:
            primary = self.primary
            target = primary.info()["master_repl_offset"]
            for r in self.replicas():
                if r is not self.spare:
                    wait_until(f"{r.name} to catch up", lambda r=r: r.info().get("slave_repl_offset", -1) >= target,
                               timeout=30)
        except (AssertionError, redis.RedisError, OSError) as e:
            log(f"  del-node n7 put off: {e}")
            return
        r = self.ctl("del-node", self.spare_id)
        log(f"  keel-ctl del-node n7: exit {r.returncode}"
            + ("" if r.returncode == 0 else f": {(r.stdout + r.stderr)[-300:]}"))
        if r.returncode == 0:
            self.spare_id = None
            self.spare.kill()

    def ctl(self, *args):
        return subprocess.run([CTL, "--etcd", self.etcd.endpoints, "--cluster", self.cluster_name, *args],
                              capture_output=True, text=True, timeout=300)

    def settled(self, log):
        """Settles the cluster before a keel-ctl move; False (logged) when
        it does not settle in 30 s: the move is skipped."""
        try:
            self.settle(timeout=30)
            return True
        except AssertionError as e:
            log(f"  skipped: the cluster did not settle ({e})")
            return False

    def planned_move(self, log, action):
        """Runs `action` (keel-ctl moving the workload's slot or its
        primary) on a settled cluster; the move it makes is not a failover:
        nothing acknowledged may be lost to it."""
        if not self.settled(log):
            return
        with self.lock:
            self.refresh()
            self.planned = True
        try:
            r = action()
            log(f"  keel-ctl {' '.join(r.args[5:])}: exit {r.returncode}"
                + ("" if r.returncode == 0 else f": {(r.stdout + r.stderr)[-300:]}"))
        finally:
            with self.lock:
                self.refresh()
                self.planned = False

    def manual_failover(self, log):
        """keel-ctl failover to the workload's shard's replica."""
        def action():
            replica = self.replicas()[0]
            rid = replica.client().execute_command("CLUSTER", "MYID")
            return self.ctl("failover", rid if isinstance(rid, str) else rid.decode())
        self.planned_move(log, action)

    def reshard(self, log):
        """keel-ctl reshard of the workload's slot (its owner's first 16)
        to the next shard's primary."""
        self.planned_move(log, self.reshard_command)

    def reshard_under_kill(self, log, delay, hold):
        """keel-ctl reshard of the workload's slot with the source primary
        killed `delay` seconds into the move (a failover in the middle of the
        move: keel-ctl goes on from the promoted replica), started again
        after `hold`. Not a planned move: the kill is a failover."""
        if not self.settled(log):
            return
        with self.lock:
            self.refresh()
            victim = self.owner
        done = []
        # A long move (1024 slots, 16 per step) so the kill lands inside it.
        mover = threading.Thread(target=lambda: done.append(self.reshard_command(1024, 16)), daemon=True)
        mover.start()
        # The kill lands `delay` after the source shows the move open.
        while mover.is_alive() and "->-" not in self.own_line(victim):
            time.sleep(0.002)
        time.sleep(delay)
        log(f"  kill -9 of {victim.name} {delay * 1000:.0f} ms into the move"
            + ("" if mover.is_alive() else " (too late: the reshard had ended)"))
        victim.kill()
        mover.join()
        r = done[0]
        log(f"  keel-ctl {' '.join(r.args[5:])}: exit {r.returncode}"
            + ("" if r.returncode == 0 else f": {(r.stdout + r.stderr)[-300:]}"))
        time.sleep(hold)
        victim.start()

    @staticmethod
    def own_line(node):
        try:
            lines = node.client(timeout=1).execute_command("CLUSTER", "NODES")
        except (redis.RedisError, OSError):
            return ""
        return next((l for l in lines.splitlines() if "myself" in l), "")

    def reshard_command(self, slots=16, batch=64):
        """keel-ctl reshard of the owner's first `slots` slots (the
        workload's among them) to the next primary."""
        lines = self.owner.client().execute_command("CLUSTER", "NODES")
        lines = lines if isinstance(lines, str) else lines.decode()
        primaries = sorted(f.split()[0] for f in lines.splitlines()
                           if "master" in f.split()[2] and len(f.split()) > 8)
        to = primaries[(primaries.index(self.owner_id) + 1) % len(primaries)]
        return self.ctl("reshard", "--from", self.owner_id, "--to", to, "--slots", str(slots),
                        "--batch", str(batch), "--pipeline", "1")

    def settle(self, timeout=180):
        """etcd whole, every node in state ok with its link up, and the
        workload's shard's replicas caught up."""
        self.net.heal()
        self.etcd.heal()
        wait_until("etcd healthy", self.etcd.healthy, timeout=timeout)

        def ok(n):
            c = n.client(timeout=2)
            info = c.execute_command("CLUSTER", "INFO")
            if isinstance(info, bytes):
                info = info.decode()
            repl = c.info("replication")
            return "cluster_state:ok" in info and repl.get("master_link_status", "up") == "up"

        for n in self.members():
            wait_until(f"{n.name} in state ok", lambda n=n: ok(n), timeout=timeout)
        # A reshard that failed midway left its move open: an operator
        # finishes it (and a conflict it cannot settle fails the run).
        if "are moving from shard" in self.ctl("check").stdout:
            r = self.ctl("fix")
            assert r.returncode == 0, f"keel-ctl fix: {(r.stdout + r.stderr)[-500:]}"
        with self.lock:
            self.refresh()
        primary = self.owner
        target = primary.info()["master_repl_offset"]
        for r in self.replicas():
            try:
                wait_until(f"{r.name} to catch up", lambda r=r: r.info().get("slave_repl_offset", -1) >= target,
                           timeout=timeout)
            except AssertionError as e:
                raise AssertionError(f"{e}; {self.replication_state(primary, target)}") from None

    def replication_state(self, primary, target):
        """What each node says of its replication, for a run that did not
        converge: who it follows, its link, its offsets."""
        parts = [f"owner {primary.name} at {target}"]
        for n in self.members():
            try:
                i = n.client(timeout=1).info("replication")
                parts.append(
                    f"{n.name}: {i.get('role')} of {i.get('master_host', '-')}:{i.get('master_port', '-')} "
                    f"link {i.get('master_link_status', '-')} slave_repl_offset {i.get('slave_repl_offset', '-')} "
                    f"master_repl_offset {i.get('master_repl_offset')} replid {str(i.get('master_replid', ''))[:8]} "
                    f"replicas {i.get('connected_slaves')}")
            except (redis.RedisError, OSError) as e:
                parts.append(f"{n.name}: {e}")
        return "; ".join(parts)

    def final_anomalies(self):
        """No key of the workload's slot on a primary other than its owner
        (after a reshard, the source keeps none), unless a migration is
        still open (keel-ctl reshard failed midway: then both hold some,
        as ASK serves them)."""
        with self.lock:
            self.refresh()
        owner = self.owner
        lines = owner.client().execute_command("CLUSTER", "NODES")
        lines = lines if isinstance(lines, str) else lines.decode()
        if any("[" in l for l in lines.splitlines()):
            return []
        out = []
        if self.spare_id and not self.spare.client().ping():
            out.append("n7 (added) does not answer at the end")
        for n in self.members():
            if n is owner or n.client().execute_command("ROLE")[0] != "master":
                continue
            count = n.client().execute_command("CLUSTER", "COUNTKEYSINSLOT", self.slot)
            if count:
                out.append(f"two primaries: {n.name} holds {count} keys of slot {self.slot}, "
                           f"which {owner.name} owns")
        return out

    def close(self, keep=False):
        for n in self.nodes + [self.spare]:
            n.destroy(keep)
        self.etcd.close(keep)
        self.net.close()
