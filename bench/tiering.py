#!/usr/bin/env python3
"""The disk tier measured as issue-style figures, in a memory-capped cgroup.

This machine's RAM would cache the whole tier in the page cache, so keel
runs in a cgroup-v1 memory group (`memory.limit_in_bytes` caps its RSS plus
its page cache). Steps, all in one run:

1. load: KEYS values of SIZE bytes (`key:%012d`, redis-benchmark's key
   names, each value derived from its key) into keel with `maxmemory MAX`
   and `tiering-dir`; then every value read back and compared; peak RSS
   (VmHWM) against maxmemory plus the empty server's RSS.
2. hot: `redis-benchmark -t get -r HOT` (only the first HOT keys, 5% by
   default: with every key and stub in memory too, 10% would not fit
   in memory) against the tiered keel, and against a keel with everything
   in memory (same keys, no maxmemory, no cgroup) - the ratio of rates.
3. uniform: `redis-benchmark -t get -r KEYS -c INFLIGHT` over the whole
   dataset against the tiered keel, beside `fio --rw=randread --bs=SIZE
   --iodepth=INFLIGHT --direct=1` on a file of the dataset's size in the
   same directory: rate / IOPS and p99s.
4. overwrite: `redis-benchmark -t set -r KEYS -n KEYS` (each key written
   again about once, at random) against the tiered keel, then compaction
   given up to a minute to settle: disk bytes / live bytes, and write
   amplification (bytes the tier wrote, spills plus compaction, / bytes
   clients wrote).
5. full sync: a tiered replica (its own memory group of the same size)
   syncs from the tiered keel, and an in-memory replica from the in-memory
   keel: time until the replica is up at the primary's offset, and the
   tiered replica's peak RSS.
6. restart: the tiered keel restarted from its RDB file (SAVE), time to
   serve and peak RSS.

Usage (as root): bench/tiering.py --keel target/release/keel-server
    [--keys 327680 --size 4096 --maxmemory 128mb --group-mb 320]
"""

import argparse
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import time

CGROUP = "/sys/fs/cgroup/memory/keel-tier-bench"
# The tiered replica's group, of the same size.
REPLICA_CGROUP = CGROUP + "-replica"


def value(i, size):
    # Incompressible (the RDB file is as large as the dataset), and the
    # same for the same key in every run.
    return random.Random(i).randbytes(size)


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def _fill(self):
        chunk = self.s.recv(1 << 20)
        if not chunk:
            raise EOFError("connection closed")
        self.buf += chunk

    def reply(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, _, rest = self.buf.partition(b"\r\n")
        kind = line[:1]
        if kind == b"$":
            n = int(line[1:])
            if n < 0:
                self.buf = rest
                return None
            while len(rest) < n + 2:
                self._fill()
                line, _, rest = self.buf.partition(b"\r\n")
            self.buf = rest[n + 2:]
            return rest[:n]
        self.buf = rest
        if kind == b"-":
            raise RuntimeError(line.decode())
        return line[1:]

    def cmd(self, *args):
        self.send(resp(*args))
        return self.reply()


def info(conn, section):
    text = conn.cmd("INFO", section).decode()
    return dict(l.split(":", 1) for l in text.splitlines() if ":" in l)


def vm(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def start(keel, port, workdir, extra, cgroup):
    """keel on `port`; in the memory group at path `cgroup` (True: CGROUP)."""
    os.makedirs(workdir, exist_ok=True)
    args = [keel, "--port", str(port), "--save", "", "--dir", workdir] + extra
    if cgroup:
        group = CGROUP if cgroup is True else cgroup
        cmd = ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh"] + args
    else:
        cmd = args
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(os.path.join(workdir, "log"), "w"))
    for _ in range(6000):
        try:
            c = Conn(port)
            if c.cmd("PING") == b"PONG":
                return p, c
        except (OSError, EOFError, RuntimeError):
            pass
        time.sleep(0.05)
    sys.exit(f"keel on port {port} did not start")


def load(conn, keys, size, batch=200):
    for start in range(0, keys, batch):
        n = min(batch, keys - start)
        conn.send(b"".join(resp("SET", b"key:%012d" % i, value(i, size)) for i in range(start, start + n)))
        for _ in range(n):
            r = conn.reply()
            if r != b"OK":
                sys.exit(f"SET answered {r!r}")


def verify(conn, keys, size, batch=200):
    bad = 0
    for start in range(0, keys, batch):
        n = min(batch, keys - start)
        conn.send(b"".join(resp("GET", b"key:%012d" % i) for i in range(start, start + n)))
        for i in range(start, start + n):
            if conn.reply() != value(i, size):
                bad += 1
    return bad


def benchmark(port, args):
    out = subprocess.run(
        ["redis-benchmark", "-p", str(port), "-q", "--csv"] + args,
        capture_output=True, text=True, check=True).stdout
    rows = [l for l in out.splitlines() if l.startswith('"GET')]
    cols = rows[-1].replace('"', "").split(",")
    # "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
    return float(cols[1]), float(cols[4]), float(cols[6])


def fio(path, size_bytes, bs, depth, seconds):
    out = subprocess.run(
        ["fio", "--name=tier", f"--filename={path}", f"--size={size_bytes}", "--rw=randread",
         f"--bs={bs}", f"--iodepth={depth}", "--ioengine=libaio", "--direct=1",
         f"--runtime={seconds}", "--time_based", "--group_reporting",
         "--output-format=terse", "--terse-version=3"],
        capture_output=True, text=True, check=True).stdout
    f = out.strip().splitlines()[-1].split(";")
    iops = float(f[7])
    # terse v3: read clat percentiles start at field 17 as "p=usec".
    p99 = next(float(x.split("=")[1]) for x in f[17:37] if x.startswith("99.000000%"))
    return iops, p99 / 1000.0


def full_sync(keel, primary_port, port, workdir, extra, cgroup):
    """Seconds until a new replica of `primary_port` is up at its offset,
    and the replica's peak RSS."""
    shutil.rmtree(workdir, ignore_errors=True)
    p, c = start(keel, port, workdir, extra, cgroup)
    primary = Conn(primary_port)
    t0 = time.time()
    c.cmd("REPLICAOF", "127.0.0.1", str(primary_port))
    while True:
        offset = int(info(primary, "replication")["master_repl_offset"])
        r = info(c, "replication")
        if r.get("master_link_status") == "up" and int(r.get("master_repl_offset", -1)) >= offset:
            break
        time.sleep(0.05)
    took = time.time() - t0
    peak = vm(p.pid, "VmHWM")
    p.terminate(); p.wait()
    shutil.rmtree(workdir, ignore_errors=True)
    return took, peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keel", required=True)
    ap.add_argument("--keys", type=int, default=327680)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--maxmemory", default="128mb")
    ap.add_argument("--group-mb", type=int, default=320)
    ap.add_argument("--hot", type=int, default=0, help="hot keys (default: 5%% of --keys, which fits in memory beside every key)")
    ap.add_argument("--requests", type=int, default=200000)
    ap.add_argument("--inflight", type=int, default=32)
    ap.add_argument("--workdir", default="/tmp/keel-tier-bench")
    ap.add_argument("--port", type=int, default=7411)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    hot = a.hot or a.keys * 5 // 100
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    for group in (CGROUP, REPLICA_CGROUP):
        os.makedirs(group, exist_ok=True)
        with open(f"{group}/memory.limit_in_bytes", "w") as f:
            f.write(str(a.group_mb << 20))
    tiered = ["--maxmemory", a.maxmemory, "--maxmemory-policy", "allkeys-lru", "--tiering-dir", "tier"]
    print(f"# {a.keys} keys of {a.size} B, maxmemory {a.maxmemory}, cgroup {a.group_mb} MB, hot {hot} keys")

    # The empty server's RSS.
    p, c = start(a.keel, a.port, a.workdir + "/empty", [], True)
    empty_rss = vm(p.pid, "VmRSS")
    p.terminate(); p.wait()

    tdir = a.workdir + "/tiered"
    p, c = start(a.keel, a.port, tdir, tiered, True)
    t0 = time.time()
    load(c, a.keys, a.size)
    load_s = time.time() - t0
    t0 = time.time()
    bad = verify(c, a.keys, a.size)
    verify_s = time.time() - t0
    t = info(c, "tiering")
    m = info(c, "memory")
    maxmem = int(m["maxmemory"])
    peak = vm(p.pid, "VmHWM")
    print(f"load: {load_s:.1f} s ({a.keys / load_s:.0f} SET/s); verify: {verify_s:.1f} s, {bad} wrong values")
    print(f"peak RSS {peak >> 20} MB = {peak / (maxmem + empty_rss):.3f} x (maxmemory {maxmem >> 20} MB + empty server {empty_rss >> 20} MB)")
    print(f"evicted_keys {info(c, 'stats')['evicted_keys']}, spilled keys {t['tiering_spilled_keys']}, "
          f"disk {int(t['tiering_disk_bytes']) >> 20} MB, live {int(t['tiering_live_bytes']) >> 20} MB")

    client_bytes = a.keys * a.size
    print(f"written to the tier: {int(t['tiering_spilled_bytes']) >> 20} MB for {client_bytes >> 20} MB "
          f"written by clients ({int(t['tiering_spilled_bytes']) / client_bytes:.2f}x)")

    # Everything in memory, no cgroup, beside it.
    mport = a.port + 1
    mdir = a.workdir + "/memory"
    mp, mc = start(a.keel, mport, mdir, [], False)
    load(mc, a.keys, a.size)

    hot_args = ["-t", "get", "-n", str(a.requests), "-r", str(hot), "-c", "50", "--threads", "2"]
    # The hot keys read first (from disk, on the tiered server), about
    # four times each: the steady state is measured. (A value read back
    # for a key unused longer than memory holds values is admitted on its
    # second read from disk, docs/tiering.md.)
    benchmark(a.port, ["-t", "get", "-n", str(hot * 4), "-r", str(hot), "-c", "50", "--threads", "2"])
    # The tier's hit rate of each phase, from INFO's counts of the values
    # requests needed (in memory or on disk when they first looked).
    # (A build without those counts shows "n/a".)
    def hit_rate(before, after):
        count = lambda t, f: int(t.get(f, 0))
        mem = count(after, "tiering_values_in_memory") - count(before, "tiering_values_in_memory")
        disk = count(after, "tiering_values_on_disk") - count(before, "tiering_values_on_disk")
        return f"{mem / (mem + disk):.4f}" if mem + disk else "n/a"
    before_hot = info(c, "tiering")
    hot_t, hot_m = [], []
    for _ in range(a.runs):
        hot_t.append(benchmark(a.port, hot_args))
        hot_m.append(benchmark(mport, hot_args))
    uni_args = ["-t", "get", "-n", str(a.requests // 4), "-r", str(a.keys), "-c", str(a.inflight), "--threads", "2"]
    before_uni = info(c, "tiering")
    uni_t, fios = [], []
    for _ in range(a.runs):
        uni_t.append(benchmark(a.port, uni_args))
        fios.append(fio(os.path.join(a.workdir, "fio.dat"), a.keys * a.size, a.size, a.inflight, 10))
    t2 = info(c, "tiering")
    print(f"tier hit rate: hot-set runs {hit_rate(before_hot, before_uni)}, "
          f"uniform runs {hit_rate(before_uni, t2)}")

    # Sustained overwrites, then compaction.
    before = info(c, "tiering")
    written = a.keys * a.size
    subprocess.run(["redis-benchmark", "-p", str(a.port), "-q", "-t", "set", "-d", str(a.size),
                    "-r", str(a.keys), "-n", str(a.keys), "-c", "50", "--threads", "2"],
                   capture_output=True, check=True)
    tier_wrote = lambda t: int(t["tiering_spilled_bytes"]) + int(t["tiering_compacted_bytes"])
    just_after = info(c, "tiering")
    deadline = time.time() + 60
    while True:
        t3 = info(c, "tiering")
        disk, live = int(t3["tiering_disk_bytes"]), int(t3["tiering_live_bytes"])
        if disk <= 1.5 * live + (64 << 20) or time.time() > deadline:
            break
        time.sleep(0.5)
    amplification = (tier_wrote(t3) - tier_wrote(before)) / written

    # Full syncs: tiered replica of the tiered keel, in-memory replica of
    # the in-memory keel.
    sync_t, sync_peak = full_sync(a.keel, a.port, a.port + 2, a.workdir + "/replica", tiered, REPLICA_CGROUP)
    sync_m, _ = full_sync(a.keel, mport, a.port + 3, a.workdir + "/replica-memory", [], False)

    # Restarts from the RDB file written with most values on disk, and
    # from the same dataset's file in memory.
    c.cmd("SAVE")
    p.terminate(); p.wait()
    t0 = time.time()
    p, c = start(a.keel, a.port, tdir, tiered, True)
    restart_s = time.time() - t0
    restart_peak = vm(p.pid, "VmHWM")
    restart_keys = int(info(c, "keyspace").get("db0", "keys=0").split(",")[0].split("=")[1])
    p.terminate(); p.wait()
    mc.cmd("SAVE")
    mp.terminate(); mp.wait()
    t0 = time.time()
    mp, mc = start(a.keel, mport, mdir, [], False)
    restart_m = time.time() - t0
    mp.terminate(); mp.wait()

    print(f"overwrite of {a.keys} keys: disk / live {int(just_after['tiering_disk_bytes']) / int(just_after['tiering_live_bytes']):.2f} "
          f"right after, {disk / live:.2f} after compaction ({disk >> 20} MB / {live >> 20} MB, "
          f"{int(t3['tiering_compacted_segments']) - int(before['tiering_compacted_segments'])} segments compacted); "
          f"write amplification {amplification:.2f} (tier wrote "
          f"{(tier_wrote(t3) - tier_wrote(before)) >> 20} MB for {written >> 20} MB from clients)")
    med = lambda rows, i: sorted(r[i] for r in rows)[len(rows) // 2]
    print()
    print(f"| measure (median of {a.runs}) | tiered | in memory | ratio |")
    print("|---|---|---|---|")
    print(f"| GET -r {hot} (hot set), rps | {med(hot_t, 0):.0f} | {med(hot_m, 0):.0f} | {med(hot_t, 0) / med(hot_m, 0):.3f} |")
    print(f"| GET -r {hot}, p50 / p99 ms | {med(hot_t, 1)} / {med(hot_t, 2)} | {med(hot_m, 1)} / {med(hot_m, 2)} | |")
    print(f"| full sync to a new replica, s | {sync_t:.1f} (replica's peak RSS {sync_peak >> 20} MB = "
          f"{sync_peak / (maxmem + empty_rss):.3f} x) | {sync_m:.1f} | {sync_t / sync_m:.2f} |")
    print(f"| restart from RDB, s | {restart_s:.1f} ({restart_keys} keys, peak RSS {restart_peak >> 20} MB = "
          f"{restart_peak / (maxmem + empty_rss):.3f} x) | {restart_m:.1f} | {restart_s / restart_m:.2f} |")
    print()
    print(f"| uniform random GET over the dataset (median of {a.runs}) | keel tiered | fio randread direct | ratio |")
    print("|---|---|---|---|")
    print(f"| rate at {a.inflight} in flight | {med(uni_t, 0):.0f} rps | {med(fios, 0):.0f} IOPS | {med(uni_t, 0) / med(fios, 0):.3f} |")
    print(f"| p99 ms | {med(uni_t, 2)} | {med(fios, 1):.3f} | {med(uni_t, 2) - med(fios, 1):+.3f} |")
    print(f"(all runs: tiered {[round(r[0]) for r in uni_t]}, fio {[round(r[0]) for r in fios]}; "
          f"loads {t2['tiering_loads']}, clean copies reused {t2['tiering_reused_copies']}, "
          f"disk {int(t2['tiering_disk_bytes']) >> 20} MB, live {int(t2['tiering_live_bytes']) >> 20} MB)")
    shutil.rmtree(a.workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
