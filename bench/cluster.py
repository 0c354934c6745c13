#!/usr/bin/env python3
"""Cluster benchmarks: keel clusters (topology in a local etcd) against
redis-server clusters made by redis-cli, in one run.

  capacity  The seed capacity workload (`redis-benchmark --cluster -d SIZE
            -P PIPE`, the default suite one test at a time) on one node and
            on a 2-primary cluster, every node with the same --maxmemory:
            per test, rps or the error that ended it.
  scaling   redis-benchmark --cluster (SET and GET, -P 16) against 1, 2
            and 3 primaries of each server, the client held constant.
  reshard   5,000 slots holding 1,000,000 keys moved between two primaries
            (keel-ctl reshard; redis-cli --cluster reshard for Redis) while a
            probe client sends GET and SET of random keys through a cluster
            client: its latency percentiles before and during the move.
  failover  kill -9 of a primary of a 3+3 cluster under a client writing
            with WAIT 1 100 after each write: time from the kill to the
            first write the new primary accepts (p50, p99), and
            acknowledged writes missing after; keel at its defaults, Redis
            Cluster at each --redis-node-timeouts.
  etcd-pause  kill -STOP of etcd for --pause seconds under one client per
            primary writing a key of that primary every millisecond: the
            replies other than OK, by kind, before, during and after.
  etcd-leader-kills  kill -9 of the leader of a 3-member etcd, --kills times
            (restarted after --down s), under redis-benchmark --cluster and
            one probe client per primary: error lines and replies by kind.

Usage: bench/cluster.py capacity [--size 24000] [--pipeline 10] [-n 20000]
                                 [--maxmemory 600mb] [--runs 1]
       bench/cluster.py scaling [-n 1000000] [--runs 3] [--threads 1]
       bench/cluster.py reshard [--keys 1000000] [--slots 5000]
       bench/cluster.py failover [--runs 20] [--redis-runs 5]
                                 [--redis-node-timeouts 15000 1000]
       bench/cluster.py etcd-pause [--pause 3] [--primaries 3] [--replicas 0]
       bench/cluster.py etcd-leader-kills [--kills 5] [--down 3] [--between 3]
Needs etcd, redis-server, redis-tools, python redis; keel built with
`cargo build --release` (or KEEL_SERVER=path/to/keel-server, keel-ctl beside it).
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import KEEL, free_port, server_command, start  # noqa: E402

# KEEL_SERVER: another build (an earlier one, to compare), with its
# keel-ctl beside it.
KEEL = os.environ.get("KEEL_SERVER", KEEL)
CTL = os.path.join(os.path.dirname(KEEL), "keel-ctl")
SUITE = ["ping_inline", "ping_mbulk", "set", "get", "incr", "lpush", "rpush", "lpop",
         "rpop", "sadd", "hset", "spop", "zadd", "zpopmin", "lrange", "mset"]


def cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True).stdout


def wait(cond, what, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        try:
            if cond():
                return
        except Exception:
            pass
        time.sleep(0.05)
    raise SystemExit(f"timed out waiting for {what}")


class Etcd:
    def __init__(self, work):
        self.port, peer = free_port(), free_port()
        c, p = f"http://127.0.0.1:{self.port}", f"http://127.0.0.1:{peer}"
        self.proc = subprocess.Popen(
            ["etcd", "--name", "b", "--data-dir", os.path.join(work, "etcd"), "--listen-client-urls", c,
             "--advertise-client-urls", c, "--listen-peer-urls", p, "--initial-advertise-peer-urls", p,
             "--initial-cluster", f"b={p}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait(lambda: b'"health":"true"' in urllib.request.urlopen(f"{c}/health", timeout=1).read(), "etcd")
        self.endpoints = f"127.0.0.1:{self.port}"

    def stop(self):
        self.proc.kill()
        self.proc.wait()


class EtcdCluster:
    """`n` etcd members on this machine; members can be killed and restarted."""

    def __init__(self, work, n=3):
        self.work, self.names = work, [f"m{i}" for i in range(n)]
        self.client = [free_port() for _ in range(n)]
        self.peer = [free_port() for _ in range(n)]
        self.initial = ",".join(f"{m}=http://127.0.0.1:{p}" for m, p in zip(self.names, self.peer))
        self.endpoints = ",".join(f"127.0.0.1:{p}" for p in self.client)
        self.procs = [None] * n
        for i in range(n):
            self.start(i, "new")
        wait(lambda: self.leader() is not None, "an etcd leader")

    def start(self, i, state="existing"):
        c, p = f"http://127.0.0.1:{self.client[i]}", f"http://127.0.0.1:{self.peer[i]}"
        self.procs[i] = subprocess.Popen(
            ["etcd", "--name", self.names[i], "--data-dir", os.path.join(self.work, f"etcd-{i}"),
             "--listen-client-urls", c, "--advertise-client-urls", c, "--listen-peer-urls", p,
             "--initial-advertise-peer-urls", p, "--initial-cluster", self.initial,
             "--initial-cluster-state", state], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def status(self, i):
        req = urllib.request.Request(f"http://127.0.0.1:{self.client[i]}/v3/maintenance/status",
                                     data=b"{}", method="POST")
        return json.loads(urllib.request.urlopen(req, timeout=0.5).read())

    def leader(self):
        """The index of the member every live member names leader, if any."""
        seen = set()
        for i, proc in enumerate(self.procs):
            if proc is None or proc.poll() is not None:
                continue
            try:
                st = self.status(i)
            except Exception:
                return None
            seen.add((st["leader"], st["header"]["member_id"] == st["leader"], i))
        leaders = [i for (_, me, i) in seen if me]
        return leaders[0] if len({l for (l, _, _) in seen}) == 1 and len(leaders) == 1 else None

    def kill(self, i):
        self.procs[i].kill()
        self.procs[i].wait()
        self.procs[i] = None

    def stop(self):
        for p in self.procs:
            if p is not None:
                p.kill()
                p.wait()


class Cluster:
    """`primaries` primaries and `replicas` replicas each, of `kind`."""

    def __init__(self, kind, work, primaries, replicas=0, extra=(), etcd=None):
        self.kind, self.procs, self.ports, self.bus = kind, [], [], {}
        n = primaries * (replicas + 1)
        name = self.name = f"b{free_port()}"
        for i in range(n):
            port = free_port()
            d = os.path.join(work, f"{kind}-{port}")
            os.makedirs(d)
            if kind == "keel":
                cmd = [KEEL, "--port", str(port), "--save", "", "--dir", d, "--cluster-enabled", "yes",
                       "--cluster-etcd-endpoints", etcd.endpoints, "--cluster-name", name, *extra]
            else:
                # The bus port must be given: port + 10000 may pass 65535.
                bus = free_port()
                self.bus[port] = bus
                cmd = ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", d,
                       "--cluster-enabled", "yes", "--cluster-port", str(bus), *extra]
            self.procs.append(subprocess.Popen(cmd, cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            self.ports.append(port)
        for p in self.ports:
            wait(lambda p=p: redis.Redis(port=p).ping(), f"{kind} on {p}")
        addrs = [f"127.0.0.1:{p}" for p in self.ports]
        if kind == "keel":
            r = subprocess.run([CTL, "--etcd", etcd.endpoints, "--cluster", name, "create", *addrs,
                                "--replicas", str(replicas)], capture_output=True, text=True)
        else:
            # By hand (redis-cli --cluster create wants 3 primaries): MEET,
            # redis-cli's slot split, REPLICATE.
            for p in self.ports[1:]:
                cli(self.ports[0], "CLUSTER", "MEET", "127.0.0.1", str(p), str(self.bus[p]))
            wait(lambda: all(f"cluster_known_nodes:{n}" in cli(p, "CLUSTER", "INFO") for p in self.ports),
                 "redis nodes to meet")
            per, first, cursor = 16384 / primaries, 0, 0.0
            for i in range(primaries):
                last = 16383 if i == primaries - 1 else round(cursor + per - 1)
                cli(self.ports[i], "CLUSTER", "ADDSLOTSRANGE", str(first), str(last))
                first, cursor = last + 1, cursor + per
            for j, p in enumerate(self.ports[primaries:]):
                pid = cli(self.ports[j % primaries], "CLUSTER", "MYID").strip()
                wait(lambda p=p, pid=pid: cli(p, "CLUSTER", "REPLICATE", pid).strip() == "OK", "REPLICATE")
            r = subprocess.CompletedProcess([], 0, "", "")
        if r.returncode != 0:
            raise SystemExit(f"{kind} cluster create failed: {r.stdout}{r.stderr}")
        for p in self.ports:
            wait(lambda p=p: "cluster_state:ok" in cli(p, "CLUSTER", "INFO"), f"{kind} {p} ok")

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def bench(port, args, cluster=True):
    cmd = ["redis-benchmark", "-p", str(port), *(["--cluster"] if cluster else []), "--csv", *args]
    r = subprocess.run(cmd, capture_output=True, text=True)
    rows = [l for l in r.stdout.splitlines() if l.startswith('"') and not l.startswith('"test"')]
    err = [l for l in (r.stdout + r.stderr).splitlines() if "ERR" in l or "OOM" in l or "rror" in l]
    return rows, err


def capacity(a):
    """Per test: rps or the error, single node vs 2-primary cluster."""
    results = {}
    for kind in ["keel", "redis"]:
        for shape in ["single", "cluster"]:
            work = tempfile.mkdtemp(prefix="keel-cap-")
            etcd = Etcd(work) if kind == "keel" else None
            try:
                limit = ["--maxmemory", a.maxmemory, "--maxmemory-policy", "noeviction"]
                if shape == "single":
                    # The seed's non-clustered node: a plain server.
                    port = free_port()
                    proc = start(server_command(kind, port, limit), port, work)
                    c = None
                else:
                    c = Cluster(kind, work, 2, extra=limit, etcd=etcd)
                    port = c.ports[0]
                row = {}
                for t in SUITE:
                    n = a.n_lrange if t == "lrange" else a.n
                    rows, err = bench(port, ["-d", str(a.size), "-P", str(a.pipeline), "-c", "50",
                                             "-n", str(n), "-t", t], cluster=c is not None)
                    if err:
                        row[t] = "OOM" if any("OOM" in e for e in err) else err[0][:40]
                    else:
                        row[t] = ", ".join(f"{r.split(',')[0].strip(chr(34))} {float(r.split(',')[1].strip(chr(34))):,.0f}"
                                           for r in rows)
                results[(kind, shape)] = row
                if c:
                    c.stop()
                else:
                    proc.kill()
                    proc.wait()
            finally:
                if etcd:
                    etcd.stop()
                shutil.rmtree(work, ignore_errors=True)
    print(f"\n-d {a.size} -P {a.pipeline} -n {a.n} (LRANGE -n {a.n_lrange}), maxmemory {a.maxmemory} per node, noeviction\n")
    cols = [("keel", "single"), ("keel", "cluster"), ("redis", "single"), ("redis", "cluster")]
    print("| test | " + " | ".join(f"{k} {'1 node' if s == 'single' else '2 primaries'}" for k, s in cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for t in SUITE:
        print(f"| {t} | " + " | ".join(results[c].get(t, "") for c in cols) + " |")


def scaling(a):
    out = {}
    for run in range(a.runs):
        for kind in (["keel", "redis"] if run % 2 == 0 else ["redis", "keel"]):
            for n in [1, 2, 3]:
                work = tempfile.mkdtemp(prefix="keel-scale-")
                etcd = Etcd(work) if kind == "keel" else None
                extra = ["--threads", str(a.threads)] if kind == "keel" else []
                try:
                    c = Cluster(kind, work, n, extra=extra, etcd=etcd)
                    # redis-benchmark --cluster refuses a 1-node cluster:
                    # that node owns every slot, so plain mode is the same.
                    rows, err = bench(c.ports[0], ["-t", "set,get", "-P", "16", "-c", "50", "-r", "100000",
                                                   "-n", str(a.n), "--threads", "2"], cluster=n > 1)
                    if err:
                        raise SystemExit(f"{kind} x{n}: {err[:3]}")
                    for r in rows:
                        f = [x.strip('"') for x in r.split(",")]
                        out.setdefault((kind, n, f[0]), []).append(float(f[1]))
                    c.stop()
                finally:
                    if etcd:
                        etcd.stop()
                    shutil.rmtree(work, ignore_errors=True)
    print(f"\nredis-benchmark --cluster -t set,get -P 16 -c 50 -r 100000 -n {a.n} --threads 2; "
          f"keel nodes --threads {a.threads}; median of {a.runs}\n")
    print("| test | primaries | keel rps | redis rps | keel/redis | keel vs its 1 primary |")
    print("|---|---|---|---|---|---|")
    for t in ["SET", "GET"]:
        base = statistics.median(out[("keel", 1, t)])
        for n in [1, 2, 3]:
            k, r = statistics.median(out[("keel", n, t)]), statistics.median(out[("redis", n, t)])
            print(f"| {t} | {n} | {k:,.0f} | {r:,.0f} | {k / r:.2f}x | {k / base:.2f}x |")


def slot_primary_and_replica(port, slot):
    """The ports of the primary serving `slot` and of one of its replicas."""
    nodes = [l.split() for l in cli(port, "CLUSTER", "NODES").splitlines() if l.strip()]
    for n in nodes:
        if "master" not in n[2]:
            continue
        for r in n[8:]:
            lo, _, hi = r.partition("-")
            if lo.isdigit() and int(lo) <= slot <= int(hi or lo):
                replica = next(m for m in nodes if m[3] == n[0])
                return int(n[1].split("@")[0].rsplit(":", 1)[1]), \
                    int(replica[1].split("@")[0].rsplit(":", 1)[1])
    raise SystemExit(f"no primary with a replica serves slot {slot}")


def failover_once(kind, etcd, extra):
    """kill -9 of the primary of key {fo}'s slot in a 3+3 cluster, under a
    client writing with WAIT 1 100: seconds from the kill to the first
    write its replica accepts, and acknowledged writes missing there."""
    work = tempfile.mkdtemp(prefix="keel-fo-")
    c = None
    try:
        c = Cluster(kind, work, 3, replicas=1, extra=extra, etcd=etcd)
        slot = int(cli(c.ports[0], "CLUSTER", "KEYSLOT", "{fo}").strip())
        primary, replica = slot_primary_and_replica(c.ports[0], slot)
        wait(lambda: "master_link_status:up" in cli(replica, "INFO", "replication"), "the replica's link")
        acked, stop, first, killed = [], threading.Event(), [], []

        def connect(port):
            # No client-side retries: redis-py's default backoff would be
            # counted as failover time.
            from redis.backoff import NoBackoff
            from redis.retry import Retry
            return redis.Redis(port=port, socket_timeout=5, retry=Retry(NoBackoff(), 0))

        def writer():
            n, con = 0, connect(primary)
            while not stop.is_set():
                key = f"{{fo}}{n}"
                n += 1
                after_kill = bool(killed)
                try:
                    con.set(key, "v")
                except redis.RedisError:
                    # Gone, or the replica's MOVED until it is promoted.
                    con = connect(replica)
                    time.sleep(0.005)
                    continue
                if after_kill and not first:
                    first.append(time.monotonic() - killed[0])
                try:
                    if con.execute_command("WAIT", 1, 100) >= 1:
                        acked.append(key)
                except redis.RedisError:
                    pass
        t = threading.Thread(target=writer)
        t.start()
        wait(lambda: len(acked) > 1000, "writes before the kill")
        killed.append(time.monotonic())
        c.procs[c.ports.index(primary)].send_signal(signal.SIGKILL)
        wait(lambda: first, "the first write after the kill", timeout=120)
        stop.set()
        t.join()
        con = redis.Redis(port=replica)
        return first[0], sum(1 for k in acked if not con.exists(k))
    finally:
        if c:
            c.stop()
        shutil.rmtree(work, ignore_errors=True)


def failover(a):
    """keel at its defaults, then Redis Cluster at the node timeouts asked."""
    work = tempfile.mkdtemp(prefix="keel-fo-etcd-")
    etcd = Etcd(work)
    cases = [("keel", "defaults", (), a.runs)]
    for t in a.redis_node_timeouts:
        cases.append(("redis", f"cluster-node-timeout {t}", ("--cluster-node-timeout", str(t)), a.redis_runs))
    results = []
    try:
        for kind, label, extra, runs in cases:
            times, lost = [], []
            for _ in range(runs):
                secs, missing = failover_once(kind, etcd, extra)
                times.append(secs)
                lost.append(missing)
                print(f"{kind} ({label}): {secs:.3f} s, {missing} acknowledged writes missing", flush=True)
            results.append((kind, label, times, lost))
    finally:
        etcd.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("\nkill -9 of a primary in a 3 primary + 3 replica cluster: kill to the first write its "
          "replica accepts (s)")
    print("| server | settings | runs | p50 | p99 | min | max | acknowledged writes missing |")
    print("|---|---|---|---|---|---|---|---|")
    for kind, label, times, lost in results:
        print(f"| {kind} | {label} | {len(times)} | {pct(times, .5) / 1000:.2f} | {pct(times, .99) / 1000:.2f} | "
              f"{min(times):.2f} | {max(times):.2f} | {sum(lost)} |")


def keys_in_slots(count, below):
    """`count` key names whose slots are below `below`."""
    from redis.crc import key_slot
    out, n = [], 0
    while len(out) < count:
        k = f"key:{n}"
        if key_slot(k.encode()) < below:
            out.append(k)
        n += 1
    return out


def load(ports, names):
    """Each key (100-byte values) SET through a cluster client."""
    from redis.cluster import RedisCluster
    rc = RedisCluster(host="127.0.0.1", port=ports[0])
    for start in range(0, len(names), 10000):
        p = rc.pipeline()
        for k in names[start:start + 10000]:
            p.set(k, "x" * 100)
        p.execute()


def probe(port, stop, samples, names):
    """GET or SET of a random key, one at a time; (time, latency) each."""
    import random
    from redis.cluster import RedisCluster
    rc = RedisCluster(host="127.0.0.1", port=port)
    while not stop.is_set():
        k = random.choice(names)
        t = time.perf_counter()
        if random.random() < 0.5:
            rc.get(k)
        else:
            rc.set(k, "y" * 100)
        samples.append((t, time.perf_counter() - t))


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] * 1000 if v else float("nan")


def reshard(a):
    rows = []
    # Every key lives in the slots that move (the source's first ones).
    names = keys_in_slots(a.keys, a.slots)
    for kind in ["keel", "redis"]:
        work = tempfile.mkdtemp(prefix="keel-reshard-")
        etcd = Etcd(work) if kind == "keel" else None
        try:
            c = Cluster(kind, work, 2, etcd=etcd)
            load(c.ports, names)
            ids = [cli(p, "CLUSTER", "MYID").strip() for p in c.ports]
            stop, samples = threading.Event(), []
            t = threading.Thread(target=probe, args=(c.ports[0], stop, samples, names))
            t.start()
            time.sleep(3)
            began = time.perf_counter()
            if kind == "keel":
                cmd = [CTL, "--etcd", etcd.endpoints, "--cluster", c.name, "reshard", "--from", ids[0],
                       "--to", ids[1], "--slots", str(a.slots)]
            else:
                cmd = ["redis-cli", "--cluster", "reshard", f"127.0.0.1:{c.ports[0]}", "--cluster-from", ids[0],
                       "--cluster-to", ids[1], "--cluster-slots", str(a.slots), "--cluster-yes",
                       "--cluster-pipeline", "100"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            ended = time.perf_counter()
            stop.set()
            t.join()
            if r.returncode != 0:
                raise SystemExit(f"{kind} reshard failed: {r.stdout[-500:]}{r.stderr[-500:]}")
            before = [l for (ts, l) in samples if ts < began]
            during = [l for (ts, l) in samples if began <= ts < ended]
            rows.append((kind, ended - began, before, during))
            c.stop()
        finally:
            if etcd:
                etcd.stop()
            shutil.rmtree(work, ignore_errors=True)
    print(f"\nslots 0-{a.slots - 1}, holding {a.keys:,} keys (100-byte values), moved from one primary to the "
          "other; probe: redis-py RedisCluster, GET or SET of a random one of those keys, one at a time\n")
    print("| server | move took | probe ops during | p50 before | p99 before | p50 during | p99 during | max during |")
    print("|---|---|---|---|---|---|---|---|")
    for kind, took, before, during in rows:
        print(f"| {kind} | {took:.1f} s | {len(during):,} | {pct(before, .5):.2f} ms | {pct(before, .99):.2f} ms | "
              f"{pct(during, .5):.2f} ms | {pct(during, .99):.2f} ms | {max(during) * 1000 if during else 0:.1f} ms |")


class Probes:
    """One client per primary writing a key of that primary every
    millisecond: the replies by kind, per phase."""

    def __init__(self, primaries):
        self.phase, self.stop_flag, self.tally = "before", threading.Event(), {}
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.writer, args=(p,)) for p in primaries]
        for t in self.threads:
            t.start()

    @staticmethod
    def own_key(port):
        con = redis.Redis(port=port)
        for n in range(100000):
            try:
                con.get(f"k{n}")
                return f"k{n}"
            except redis.ResponseError:
                continue
        raise SystemExit(f"no key of {port}")

    def writer(self, port):
        key, con = self.own_key(port), redis.Redis(port=port, socket_timeout=10)
        while not self.stop_flag.is_set():
            try:
                con.set(key, "v")
                kind = "OK"
            except redis.ResponseError as e:
                kind = str(e).split(" ")[0]
            except redis.RedisError as e:
                kind = type(e).__name__
            with self.lock:
                self.tally.setdefault(self.phase, {}).setdefault(kind, 0)
                self.tally[self.phase][kind] += 1
            time.sleep(0.001)

    def stop(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join()

    def report(self, phases):
        for name in phases:
            print(f"  {name}: " + ", ".join(f"{k} {v}" for k, v in sorted(self.tally.get(name, {}).items())))


def etcd_pause(a):
    work = tempfile.mkdtemp(prefix="keel-etcd-pause-")
    etcd = Etcd(work)
    try:
        c = Cluster("keel", work, a.primaries, replicas=a.replicas, etcd=etcd)
        primaries = [p for p in c.ports if cli(p, "ROLE").startswith("master")]
        probes = Probes(primaries)
        time.sleep(2)
        probes.phase = "during"
        etcd.proc.send_signal(signal.SIGSTOP)
        time.sleep(a.pause)
        etcd.proc.send_signal(signal.SIGCONT)
        probes.phase = "after"
        time.sleep(5)
        probes.stop()
        c.stop()
    finally:
        etcd.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"etcd stopped for {a.pause} s; {len(primaries)} primaries, {a.replicas} replica(s) each; "
          "replies per phase (before: 2 s, after: the 5 s after SIGCONT)")
    probes.report(("before", "during", "after"))


def etcd_leader_kills(a):
    work = tempfile.mkdtemp(prefix="keel-etcd-kill-")
    etcd = EtcdCluster(work, 3)
    c, bench = None, None
    elections = []
    try:
        c = Cluster("keel", work, a.primaries, replicas=a.replicas, etcd=etcd)
        primaries = [p for p in c.ports if cli(p, "ROLE").startswith("master")]
        for p in c.ports:
            wait(lambda p=p: "keel_cluster_promised:1" in cli(p, "INFO", "keel"), f"promises on {p}")
        bench = subprocess.Popen(
            ["redis-benchmark", "-p", str(primaries[0]), "--cluster", "-t", "set,get", "-r", "100000",
             "-c", "50", "-l", "-q"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        probes = Probes(primaries)
        time.sleep(2)
        probes.phase = "kills"
        for _ in range(a.kills):
            leader = etcd.leader()
            if leader is None:
                wait(lambda: etcd.leader() is not None, "an etcd leader")
                leader = etcd.leader()
            t0 = time.monotonic()
            etcd.kill(leader)
            wait(lambda: etcd.leader() is not None, "a new etcd leader")
            elections.append(time.monotonic() - t0)
            time.sleep(a.down)
            etcd.start(leader)
            wait(lambda: etcd.leader() is not None and all(p is not None for p in etcd.procs)
                 and etcd.status(leader) is not None, "the killed member back")
            time.sleep(a.between)
        probes.phase = "after"
        time.sleep(3)
        probes.stop()
        bench.send_signal(signal.SIGINT)
        out, _ = bench.communicate(timeout=30)
        bench = None
        checks = subprocess.run([CTL, "--etcd", etcd.endpoints, "--cluster", c.name, "check"],
                                capture_output=True, text=True)
    finally:
        if bench:
            bench.kill()
        if c:
            c.stop()
        etcd.stop()
        shutil.rmtree(work, ignore_errors=True)
    errors = [l for l in out.replace("\r", "\n").splitlines() if "rror" in l or "CLUSTERDOWN" in l]
    print(f"{a.kills} kills of the etcd leader (3 members; each down {a.down} s, then restarted), "
          f"{len(primaries)} primaries with {a.replicas} replica(s) each, under redis-benchmark --cluster "
          "-t set,get -r 100000 -c 50 -l")
    print(f"  new etcd leader after: " + ", ".join(f"{e:.2f} s" for e in elections))
    print(f"  redis-benchmark error lines: {len(errors)}" + "".join(f"\n    {l}" for l in errors[:10]))
    print("  probe replies:")
    probes.report(("before", "kills", "after"))
    print(f"  keel-ctl check after: exit {checks.returncode}")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("capacity")
    c.add_argument("--size", type=int, default=24000)
    c.add_argument("--pipeline", type=int, default=10)
    c.add_argument("-n", type=int, default=20000)
    c.add_argument("--n-lrange", type=int, default=1000)
    c.add_argument("--maxmemory", default="600mb")
    s = sub.add_parser("scaling")
    s.add_argument("-n", type=int, default=1000000)
    s.add_argument("--runs", type=int, default=3)
    s.add_argument("--threads", type=int, default=1)
    r = sub.add_parser("reshard")
    r.add_argument("--keys", type=int, default=1000000)
    r.add_argument("--slots", type=int, default=5000)
    f = sub.add_parser("failover")
    f.add_argument("--runs", type=int, default=20)
    f.add_argument("--redis-runs", type=int, default=5)
    f.add_argument("--redis-node-timeouts", type=int, nargs="*", default=[15000, 1000])
    e = sub.add_parser("etcd-pause")
    e.add_argument("--pause", type=float, default=3)
    e.add_argument("--primaries", type=int, default=3)
    e.add_argument("--replicas", type=int, default=0)
    k = sub.add_parser("etcd-leader-kills")
    k.add_argument("--kills", type=int, default=5)
    k.add_argument("--down", type=float, default=3)
    k.add_argument("--between", type=float, default=3)
    k.add_argument("--primaries", type=int, default=3)
    k.add_argument("--replicas", type=int, default=1)
    a = ap.parse_args()
    {"capacity": capacity, "scaling": scaling, "reshard": reshard, "failover": failover,
     "etcd-pause": etcd_pause, "etcd-leader-kills": etcd_leader_kills}[a.what](a)


if __name__ == "__main__":
    main()
