#!/usr/bin/env python3
"""Publish/subscribe fan-out throughput, keel-server against redis-server.

For each server: SUBSCRIBEs `--subscribers` connections to one channel,
runs `redis-benchmark -n N -c C publish <channel> <payload>`, and counts
the messages every subscriber receives. Reports messages delivered per
second (all subscribers together, from the first publish to the last
message received), the publishers' rps, and the median over `--runs`
runs, alternating which server goes first. Every run checks that each
subscriber got exactly N messages.

Usage: bench/pubsub.py [--runs 3] [--subscribers 50] [-n 100000] [-c 50] [-d 16]
"""
import argparse
import os
import selectors
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import KEEL, cpu_seconds, free_port, start  # noqa: E402

CHANNEL = b"bench:pubsub"
MARK = b"$7\r\nmessage\r\n"


def subscribe(port, n):
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"SUBSCRIBE " + CHANNEL + b"\r\n")
        socks.append(s)
    for s in socks:
        got = b""
        while not got.endswith(b":1\r\n"):
            got += s.recv(256)
        s.setblocking(False)
    return socks


def count_messages(socks, expected, counts, done, deadline):
    """Counts message frames per socket until each has `expected` or time runs out."""
    sel = selectors.DefaultSelector()
    tails = {}
    for i, s in enumerate(socks):
        sel.register(s, selectors.EVENT_READ, i)
        tails[i] = b""
    remaining = len(socks)
    while remaining and time.time() < deadline:
        for key, _ in sel.select(timeout=0.5):
            i = key.data
            try:
                data = key.fileobj.recv(1 << 20)
            except BlockingIOError:
                continue
            if not data:
                sel.unregister(key.fileobj)
                remaining -= 1
                continue
            buf = tails[i] + data
            counts[i] += buf.count(MARK)
            # Keep a tail shorter than the mark, so a mark split across
            # reads is counted once.
            cut = max(len(buf) - (len(MARK) - 1), buf.rfind(MARK) + len(MARK))
            tails[i] = buf[max(cut, 0):]
            if counts[i] >= expected:
                sel.unregister(key.fileobj)
                remaining -= 1
    done.append(time.time())


def run_once(port, proc, a):
    socks = subscribe(port, a.subscribers)
    counts = [0] * len(socks)
    done = []
    t = threading.Thread(target=count_messages,
                         args=(socks, a.n, counts, done, time.time() + 600))
    t.start()
    payload = "x" * a.d
    cpu0 = cpu_seconds(proc.pid)
    t0 = time.time()
    out = subprocess.run(["redis-benchmark", "-p", str(port), "-n", str(a.n), "-c", str(a.c),
                          "--csv", "publish", CHANNEL.decode(), payload],
                         capture_output=True, text=True, timeout=600)
    t.join()
    cpu = cpu_seconds(proc.pid) - cpu0
    for s in socks:
        s.close()
    if out.returncode != 0:
        sys.exit(f"redis-benchmark failed: {out.stderr}")
    if any(c != a.n for c in counts):
        sys.exit(f"subscribers got {min(counts)}..{max(counts)} messages, expected {a.n} each")
    rows = [l for l in out.stdout.splitlines() if l.startswith('"') and not l.startswith('"test"')]
    pub_rps = float(rows[-1].split('","')[1])
    elapsed = done[0] - t0
    delivered = a.n * a.subscribers
    return {"msgs": delivered / elapsed, "pub_rps": pub_rps, "per_cpu": delivered / cpu if cpu else 0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--subscribers", type=int, default=50)
    ap.add_argument("-n", type=int, default=100000)
    ap.add_argument("-c", type=int, default=50)
    ap.add_argument("-d", type=int, default=16)
    ap.add_argument("--keel-args", default="")
    ap.add_argument("--redis-args", default="")
    a = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="keel-pubsub-")
    kport, rport = free_port(), free_port()
    # No output-buffer disconnects for the benchmark's own subscribers.
    unlimited = ["--client-output-buffer-limit", "pubsub 0 0 0"]
    keel = start([KEEL, "--port", str(kport), "--save", ""] + unlimited + shlex.split(a.keel_args), kport, workdir)
    redis = start(["redis-server", "--port", str(rport), "--save", "", "--appendonly", "no"]
                  + unlimited + shlex.split(a.redis_args), rport, workdir)
    servers = {"redis": (redis, rport), "keel": (keel, kport)}
    results = {"redis": [], "keel": []}
    try:
        for run in range(a.runs):
            for srv in (["redis", "keel"] if run % 2 == 0 else ["keel", "redis"]):
                proc, port = servers[srv]
                results[srv].append(run_once(port, proc, a))
    finally:
        for proc, _ in servers.values():
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)
    med = lambda srv, k: statistics.median(r[k] for r in results[srv])
    print(f"\n`bench/pubsub.py --subscribers {a.subscribers} -n {a.n} -c {a.c} -d {a.d}`, "
          f"median of {a.runs} runs\n")
    print("| server | messages delivered/s | publishes/s | messages per server CPU-s |")
    print("|---|---:|---:|---:|")
    for srv in ("redis", "keel"):
        print(f"| {srv} | {med(srv, 'msgs'):,.0f} | {med(srv, 'pub_rps'):,.0f} | {med(srv, 'per_cpu'):,.0f} |")
    print(f"\nkeel/redis messages delivered/s: {med('keel', 'msgs') / med('redis', 'msgs'):.2f}")


if __name__ == "__main__":
    main()
