#!/usr/bin/env python3
"""BGSAVE of a large dataset, keel-server against redis-server.

For each server: start it (no persistence configured), fill it with
`DEBUG POPULATE <keys>` (string keys `key:N` = `value:N`), read its steady
RSS, then run BGSAVE while one client keeps sending GETs of random keys,
and report:
- the snapshot's duration (BGSAVE to `rdb_bgsave_in_progress:0`),
- peak memory during it: the server's RSS, plus for Redis the private
  (copy-on-write) pages of its fork child, sampled every 10 ms from
  /proc (smaps_rollup), as a ratio of the steady RSS,
- the probe client's GET latency p50/p99/max during the snapshot, and the
  same before it (baseline),
- the dump.rdb size.

Usage: bench/snapshot.py [--keys 10000000] [--runs 3] [--writes]
  --writes: the probe alternates GET and SET (keel copies a shard before a
  write changes it; Redis's pages are copied on write by the kernel).
"""
import argparse
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
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


class Conn:
    """A minimal RESP client (one request at a time)."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.s.makefile("rb")

    def call(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.s.sendall(b"".join(out))
        return self.read()

    def read(self):
        line = self.f.readline()
        t, rest = line[:1], line[1:-2]
        if t in (b"+", b":"):
            return rest
        if t == b"-":
            raise RuntimeError(rest.decode())
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)
            return data[:-2]
        if t == b"*":
            return [self.read() for _ in range(int(rest))]
        raise RuntimeError(f"unexpected reply {line!r}")


def wait_ready(port, proc):
    deadline = time.time() + 20
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"server exited with {proc.returncode}")
        try:
            Conn(port).call("PING")
            return
        except OSError:
            time.sleep(0.05)
    sys.exit("server did not start")


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def private_kb(pid):
    """Pages of `pid` not shared with anyone (a fork child's copies)."""
    total = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith(("Private_Clean:", "Private_Dirty:")):
                    total += int(line.split()[1])
    except OSError:
        pass
    return total


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def info_field(conn, field):
    text = conn.call("INFO", "persistence").decode()
    for line in text.split("\r\n"):
        if line.startswith(field + ":"):
            return line.split(":", 1)[1]
    return None


def pct(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(len(v) * p / 100))]


def probe(port, keys, writes, stop, samples):
    c = Conn(port)
    rnd = random.Random(7)
    i = 0
    while not stop.is_set():
        k = "key:%d" % rnd.randrange(keys)
        t0 = time.perf_counter()
        if writes and i % 2:
            c.call("SET", k, "new")
        else:
            c.call("GET", k)
        t1 = time.perf_counter()
        samples.append((t0, (t1 - t0) * 1000.0))
        i += 1


def one_run(name, cmd, keys, writes):
    work = tempfile.mkdtemp(prefix=f"snap-{name}-")
    port = free_port()
    proc = subprocess.Popen(cmd + ["--port", str(port), "--dir", work],
                            cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(port, proc)
        c = Conn(port)
        c.call("DEBUG", "POPULATE", keys)
        time.sleep(1.0)
        steady = rss_kb(proc.pid)
        stop = threading.Event()
        samples = []
        t = threading.Thread(target=probe, args=(port, keys, writes, stop, samples))
        t.start()
        time.sleep(2.0)
        start = time.perf_counter()
        c.call("BGSAVE")
        peak = steady
        while True:
            mem = rss_kb(proc.pid) + sum(private_kb(ch) for ch in children(proc.pid))
            peak = max(peak, mem)
            if info_field(c, "rdb_bgsave_in_progress") == "0":
                break
            time.sleep(0.01)
        end = time.perf_counter()
        time.sleep(1.0)
        stop.set()
        t.join()
        status = info_field(c, "rdb_last_bgsave_status")
        size = os.path.getsize(os.path.join(work, "dump.rdb"))
        during = [l for (ts, l) in samples if start <= ts <= end]
        before = [l for (ts, l) in samples if ts < start]
        return {
            "secs": end - start,
            "steady_mb": steady / 1024,
            "peak_mb": peak / 1024,
            "peak_ratio": peak / steady,
            "p50": pct(during, 50),
            "p99": pct(during, 99),
            "max": max(during) if during else float("nan"),
            "base_p99": pct(before, 99),
            "size_mb": size / 1e6,
            "ok": status,
        }
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--writes", action="store_true")
    a = ap.parse_args()
    common = ["--save", "", "--appendonly", "no", "--enable-debug-command", "yes"]
    servers = [("redis", ["redis-server"] + common), ("keel", [KEEL] + common)]
    results = {n: [] for n, _ in servers}
    for r in range(a.runs):
        order = servers if r % 2 == 0 else servers[::-1]
        for name, cmd in order:
            res = one_run(name, cmd, a.keys, a.writes)
            print(f"run {r + 1} {name}: {res}", file=sys.stderr)
            results[name].append(res)
    cols = [("secs", "snapshot s", "{:.2f}"), ("steady_mb", "steady RSS MB", "{:.0f}"),
            ("peak_mb", "peak MB", "{:.0f}"), ("peak_ratio", "peak/steady", "{:.2f}"),
            ("p50", "probe p50 ms", "{:.3f}"), ("p99", "probe p99 ms", "{:.3f}"),
            ("max", "probe max ms", "{:.1f}"), ("base_p99", "p99 before ms", "{:.3f}"),
            ("size_mb", "dump.rdb MB", "{:.0f}")]
    probe_kind = "GET/SET" if a.writes else "GET"
    print(f"BGSAVE of {a.keys:,} keys (DEBUG POPULATE), probe: one client, {probe_kind}; "
          f"median of {a.runs} runs\n")
    print("| server | " + " | ".join(c[1] for c in cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for name, _ in servers:
        rs = results[name]
        cells = [fmt.format(statistics.median(x[k] for x in rs)) for k, _, fmt in cols]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
