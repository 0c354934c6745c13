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
import subprocess
import threading
import time
import urllib.request

import redis

from nodes import KEEL, free_port, keel_with_disk_faults, wait_until

CTL = os.path.join(os.path.dirname(KEEL), "keel-ctl")
# The workload's keys: one slot (11), among the first of its shard's, so
# `keel-ctl reshard --slots 16` from its owner moves it.
TAG = "{w1716}"


class Etcd:
    """`n` etcd members; each can be killed, paused and restarted."""

    def __init__(self, scratch_dir, n=3):
        self.dir, self.names = scratch_dir, [f"e{i}" for i in range(n)]
        self.client = [free_port() for _ in range(n)]
        self.peer = [free_port() for _ in range(n)]
        self.initial = ",".join(f"{m}=http://127.0.0.1:{p}" for m, p in zip(self.names, self.peer))
        self.endpoints = ",".join(f"127.0.0.1:{p}" for p in self.client)
        self.procs = [None] * n
        self.paused = [False] * n

    def start(self, i, state="existing"):
        c, p = f"http://127.0.0.1:{self.client[i]}", f"http://127.0.0.1:{self.peer[i]}"
        log = open(os.path.join(self.dir, f"etcd-{i}.log"), "ab")
        self.procs[i] = subprocess.Popen(
            ["etcd", "--name", self.names[i], "--data-dir", os.path.join(self.dir, f"etcd-{i}"),
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
            req = urllib.request.Request(f"http://127.0.0.1:{self.client[i]}/v3/maintenance/status",
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

    def close(self):
        for i in range(len(self.names)):
            self.resume(i)
            self.kill(i)


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
        self.etcd = Etcd(tempfile.mkdtemp(prefix="keel-faults-etcd-", dir=scratch))
        self.cluster_name = f"faults{free_port()}"
        self.nodes = []
        for i in range(6):
            args = ["--appendonly", "yes", "--appendfsync", "always", "--repl-timeout", "4",
                    "--repl-diskless-sync-delay", "0", "--cluster-enabled", "yes",
                    "--cluster-etcd-endpoints", self.etcd.endpoints, "--cluster-name", self.cluster_name]
            self.nodes.append(keel_with_disk_faults(args, f"n{i + 1}", scratch))
        self.slot = slot_of(TAG)
        self.lock = threading.Lock()
        self.owner, self.owner_id, self.checked = self.nodes[0], None, 0.0
        # Times the workload's slot changed primary on its own (a
        # failover: set by `primary`), and whether the nemesis is moving it
        # itself (keel-ctl failover or reshard: no loss is allowed then).
        self.failovers_seen = []
        self.planned = False

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
        for n in self.nodes:
            if not n.alive() or n.paused:
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
                        node = next((m for m in self.nodes if m.port == port), None)
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
        return [n for n in self.nodes if n.port in ports]

    def start(self):
        self.etcd.start_all()
        for n in self.nodes:
            n.start()
        addrs = [f"127.0.0.1:{n.port}" for n in self.nodes]
        r = subprocess.run([CTL, "--etcd", self.etcd.endpoints, "--cluster", self.cluster_name, "create",
                            *addrs, "--replicas", "1"], capture_output=True, text=True)
        assert r.returncode == 0, f"keel-ctl create: {r.stdout}{r.stderr}"
        self.settle()

    def faults(self):
        return ["kill", "pause", "etcd-kill", "etcd-pause", "bgrewriteaof", "bgsave",
                "disk-full", "fsync-error", "slow-fsync", "ctl-failover", "reshard"]

    def ctl(self, *args):
        return subprocess.run([CTL, "--etcd", self.etcd.endpoints, "--cluster", self.cluster_name, *args],
                              capture_output=True, text=True, timeout=300)

    def planned_move(self, log, action):
        """Runs `action` (keel-ctl moving the workload's slot or its
        primary) on a settled cluster; the move it makes is not a failover:
        nothing acknowledged may be lost to it."""
        try:
            self.settle(timeout=30)
        except AssertionError as e:
            log(f"  skipped: the cluster did not settle ({e})")
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
        def action():
            lines = self.owner.client().execute_command("CLUSTER", "NODES")
            lines = lines if isinstance(lines, str) else lines.decode()
            primaries = sorted(f.split()[0] for f in lines.splitlines()
                               if "master" in f.split()[2] and len(f.split()) > 8)
            to = primaries[(primaries.index(self.owner_id) + 1) % len(primaries)]
            return self.ctl("reshard", "--from", self.owner_id, "--to", to, "--slots", "16")
        self.planned_move(log, action)

    def settle(self, timeout=180):
        """etcd whole, every node in state ok with its link up, and the
        workload's shard's replicas caught up."""
        self.etcd.heal()
        wait_until("etcd healthy", self.etcd.healthy, timeout=timeout)

        def ok(n):
            c = n.client(timeout=2)
            info = c.execute_command("CLUSTER", "INFO")
            if isinstance(info, bytes):
                info = info.decode()
            repl = c.info("replication")
            return "cluster_state:ok" in info and repl.get("master_link_status", "up") == "up"

        for n in self.nodes:
            wait_until(f"{n.name} in state ok", lambda n=n: ok(n), timeout=timeout)
        with self.lock:
            self.refresh()
        primary = self.owner
        target = primary.info()["master_repl_offset"]
        for r in self.replicas():
            wait_until(f"{r.name} to catch up", lambda r=r: r.info().get("slave_repl_offset", -1) >= target,
                       timeout=timeout)

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
        for n in self.nodes:
            if n is owner or n.client().execute_command("ROLE")[0] != "master":
                continue
            count = n.client().execute_command("CLUSTER", "COUNTKEYSINSLOT", self.slot)
            if count:
                out.append(f"two primaries: {n.name} holds {count} keys of slot {self.slot}, "
                           f"which {owner.name} owns")
        return out

    def close(self, keep=False):
        for n in self.nodes:
            n.destroy(keep)
        self.etcd.close()
