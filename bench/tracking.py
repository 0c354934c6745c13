#!/usr/bin/env python3
"""What client-side caching costs keel: the default suite with half of the
clients tracking, against the same suite with tracking off.

Starts one keel-server and, per test and per run, two redis-benchmark
processes at once, each with half of the clients: in the "on" case one of
them sends CLIENT TRACKING on (`--enable-tracking`) for its connections, so
every key its reads touch is remembered and every write to such a key
invalidates it; in the "off" case neither does. The two cases alternate;
the table has the medians of the summed requests per second.

Usage: bench/tracking.py [--runs 5] [-n 100000] [-c 50] [-t set,get,...]
       [--resp3]   (the tracking half speaks RESP3 and receives invalidation
                    pushes; without it the tracking half is RESP2, where
                    keys are remembered and invalidated but nothing is sent)
"""
import argparse
import os
import socket
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEEL = os.path.join(ROOT, "target", "release", "keel-server")
TESTS = "ping_inline,ping_mbulk,set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,mset"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port):
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise SystemExit("server did not start")


def run_pair(port, test, n, clients, tracking, resp3):
    """Two benchmark processes at once; returns the summed rps."""
    half = clients // 2
    procs = []
    for i in range(2):
        args = ["redis-benchmark", "-p", str(port), "-q", "--csv", "-t", test,
                "-n", str(n // 2), "-c", str(half)]
        if tracking and i == 0:
            args.append("--enable-tracking")
            if resp3:
                args.append("-3")
        procs.append(subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
    total = 0.0
    for p in procs:
        out, _ = p.communicate()
        for line in out.splitlines():
            cols = [c.strip('"') for c in line.split(",")]
            if len(cols) >= 2 and cols[0] != "test":
                total += float(cols[1])
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("-n", type=int, default=100000)
    ap.add_argument("-c", type=int, default=50)
    ap.add_argument("-t", default=TESTS)
    ap.add_argument("--resp3", action="store_true")
    a = ap.parse_args()
    port = free_port()
    d = tempfile.mkdtemp(prefix="keel-tracking-bench-")
    server = subprocess.Popen([KEEL, "--port", str(port), "--save", "", "--dir", d],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(port)
        print(f"| test | tracking off rps | half tracking rps | on/off |")
        print(f"|---|---:|---:|---:|")
        ratios = []
        for test in a.t.split(","):
            off, on = [], []
            for r in range(a.runs):
                order = [False, True] if r % 2 == 0 else [True, False]
                for tracking in order:
                    rps = run_pair(port, test, a.n, a.c, tracking, a.resp3)
                    (on if tracking else off).append(rps)
            mo, mn = statistics.median(off), statistics.median(on)
            ratios.append(mn / mo)
            print(f"| {test} | {mo:,.0f} | {mn:,.0f} | {mn / mo:.2f} |", flush=True)
        print(f"\nmedian on/off over the tests: {statistics.median(ratios):.2f}, "
              f"lowest {min(ratios):.2f}")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
