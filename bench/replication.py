#!/usr/bin/env python3
"""Replication throughput, lag and full-sync time: keel against redis-server.

For each pair (master -> replica) of servers, in the same run:

1. stream: the replica attached, `redis-benchmark -t set -P 16` against the
   master; reports the master's rps, the replica's lag (master_repl_offset
   minus the replica's offset) when the benchmark ends, and how long the
   lag takes to reach 0 after the load stops;
2. full sync (with --sync-keys N): `DEBUG POPULATE N` on the master, then
   REPLICAOF on an empty replica; reports the time from REPLICAOF until the
   replica's link is up and its offset equals the master's, and the p99 and
   max latency of a probe client sending GET to the master meanwhile.

Medians of --runs runs, the pairs alternating within each run.

Usage: bench/replication.py [--runs 3] [-n 2000000] [--sync-keys 10000000]
                            [--pairs keel:keel,keel:redis,redis:redis]
"""
import argparse
import os
import socket
import statistics
import subprocess
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEEL = os.path.join(ROOT, "target", "release", "keel-server")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Node:
    def __init__(self, kind):
        self.kind = kind
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix=f"repl-bench-{kind}-")
        common = ["--port", str(self.port), "--save", "", "--appendonly", "no",
                  "--dir", self.dir, "--repl-diskless-sync-delay", "0",
                  "--enable-debug-command", "yes"]
        if kind == "keel":
            cmd = [KEEL] + common + ["--logfile", os.path.join(self.dir, "log")]
        else:
            cmd = ["redis-server"] + common + ["--daemonize", "no", "--logfile",
                                               os.path.join(self.dir, "log")]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", self.port))
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.02)
        self.f = self.sock.makefile("rb")

    def cmd(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        return self.read()

    def read(self):
        line = self.f.readline()
        t, rest = line[:1], line[1:-2]
        if t in (b"+", b"-", b":"):
            return rest.decode()
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return data.decode(errors="replace")
        if t == b"*":
            return [self.read() for _ in range(int(rest))]
        raise RuntimeError(f"bad reply {line!r}")

    def info(self, section="replication"):
        text = self.cmd("INFO", section)
        return dict(l.split(":", 1) for l in text.split("\r\n") if ":" in l)

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def in_sync(m, r):
    ri = r.info()
    return ri.get("master_link_status") == "up" and \
        int(ri["master_repl_offset"]) == int(m.info()["master_repl_offset"])


def wait(cond, timeout=600):
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            raise RuntimeError("timed out")
        time.sleep(0.01)


def stream_run(mk, rk, n):
    m, r = Node(mk), Node(rk)
    try:
        r.cmd("REPLICAOF", "127.0.0.1", m.port)
        wait(lambda: in_sync(m, r))
        out = subprocess.run(
            ["redis-benchmark", "-p", str(m.port), "--csv", "-t", "set", "-P", "16",
             "-c", "50", "-n", str(n), "-r", "100000"],
            capture_output=True, text=True, check=True).stdout
        stopped = time.time()
        lag = int(m.info()["master_repl_offset"]) - int(r.info()["master_repl_offset"])
        wait(lambda: in_sync(m, r))
        caught_up = time.time() - stopped
        row = [l for l in out.splitlines() if l.startswith('"SET"')][0]
        rps = float(row.split(",")[1].strip('"'))
        return rps, lag, caught_up
    finally:
        m.stop()
        r.stop()


def sync_run(mk, rk, keys):
    m, r = Node(mk), Node(rk)
    try:
        m.cmd("DEBUG", "POPULATE", keys)
        stop = threading.Event()
        lat = []

        def probe():
            p = socket.create_connection(("127.0.0.1", m.port))
            f = p.makefile("rb")
            while not stop.is_set():
                t = time.perf_counter()
                p.sendall(b"*2\r\n$3\r\nGET\r\n$7\r\nkey:100\r\n")
                line = f.readline()
                if line.startswith(b"$") and int(line[1:]) >= 0:
                    f.read(int(line[1:]) + 2)
                lat.append(time.perf_counter() - t)
                time.sleep(0.001)
            p.close()

        th = threading.Thread(target=probe)
        th.start()
        time.sleep(0.5)
        lat.clear()
        start = time.time()
        r.cmd("REPLICAOF", "127.0.0.1", m.port)
        wait(lambda: in_sync(m, r))
        took = time.time() - start
        stop.set()
        th.join()
        lat.sort()
        p99 = lat[int(len(lat) * 0.99)] * 1000
        return took, p99, lat[-1] * 1000
    finally:
        m.stop()
        r.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("-n", type=int, default=2_000_000)
    ap.add_argument("--sync-keys", type=int, default=0)
    ap.add_argument("--pairs", default="keel:keel,keel:redis,redis:keel,redis:redis")
    a = ap.parse_args()
    pairs = [tuple(p.split(":")) for p in a.pairs.split(",")]
    stream = {p: [] for p in pairs}
    sync = {p: [] for p in pairs}
    for run in range(a.runs):
        order = pairs if run % 2 == 0 else list(reversed(pairs))
        for p in order:
            stream[p].append(stream_run(*p, a.n))
            if a.sync_keys:
                sync[p].append(sync_run(*p, a.sync_keys))
    base = ("redis", "redis")
    base_rps = statistics.median(x[0] for x in stream[base]) if base in stream else None
    print(f"\nSET -P 16 -c 50 -n {a.n} -r 100000 on the master, one replica attached; "
          f"median of {a.runs}\n")
    print("| master -> replica | rps | vs redis->redis | lag at end (bytes) | lag to 0 (s) |")
    print("|---|---|---|---|---|")
    for p in pairs:
        rps = statistics.median(x[0] for x in stream[p])
        lag = statistics.median(x[1] for x in stream[p])
        back = statistics.median(x[2] for x in stream[p])
        ratio = f"{rps / base_rps:.2f}x" if base_rps else "-"
        print(f"| {p[0]} -> {p[1]} | {rps:,.0f} | {ratio} | {lag:,.0f} | {back:.2f} |")
    if a.sync_keys:
        print(f"\nFull sync of {a.sync_keys:,} keys (DEBUG POPULATE); median of {a.runs}\n")
        print("| master -> replica | sync time (s) | probe p99 (ms) | probe max (ms) |")
        print("|---|---|---|---|")
        for p in pairs:
            t = statistics.median(x[0] for x in sync[p])
            p99 = statistics.median(x[1] for x in sync[p])
            mx = statistics.median(x[2] for x in sync[p])
            print(f"| {p[0]} -> {p[1]} | {t:.2f} | {p99:.2f} | {mx:.1f} |")


if __name__ == "__main__":
    main()
