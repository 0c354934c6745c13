#!/usr/bin/env python3
"""Latency of other clients while one client reads a large reply slowly.

Fills a list of --mb megabytes (--element byte elements), then one client
sends LRANGE of the whole list and reads the reply at --rate bytes per
second (a small receive buffer, fixed-size reads on a timer), while
--probes clients on the same server do SET/GET of random keys one at a
time. Prints the probes' p50/p99/p99.9/max in ms over the slow read, and
how long it took. keel runs with `--threads 1` so every connection shares
the slow reader's worker; --redis runs redis-server instead.

    bench/slow_reader.py --mb 40 --rate 1000000
"""
import argparse
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import free_port  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start(binary, args, d):
    port = free_port()
    log = open(os.path.join(d, "server.log"), "wb")
    proc = subprocess.Popen([binary, "--port", str(port), "--dir", d, "--save", "", "--appendonly", "no"] + args,
                            stdout=log, stderr=log)
    c = redis.Redis(port=port)
    for _ in range(500):
        try:
            c.ping()
            return proc, c, port
        except redis.RedisError:
            time.sleep(0.02)
    sys.exit("server did not start")


def probe(port, stop, lat, seed):
    c = redis.Redis(port=port)
    rng = random.Random(seed)
    while not stop.is_set():
        k = f"probe:{rng.randrange(10000)}"
        t = time.perf_counter()
        if rng.random() < 0.5:
            c.set(k, "x" * 100)
        else:
            c.get(k)
        lat.append(time.perf_counter() - t)


def slow_read(port, total, rate, chunk):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, chunk)
    s.connect(("127.0.0.1", port))
    s.sendall(b"*4\r\n$6\r\nLRANGE\r\n$3\r\nbig\r\n$1\r\n0\r\n$2\r\n-1\r\n")
    got = 0
    begin = time.time()
    while got < total:
        # Paced: `chunk` bytes per chunk/rate seconds, on a schedule.
        due = begin + got / rate
        pause = due - time.time()
        if pause > 0:
            time.sleep(pause)
        data = s.recv(chunk)
        if not data:
            sys.exit("server closed the slow reader")
        got += len(data)
    s.close()
    return time.time() - begin


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))] * 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "keel-server"))
    ap.add_argument("--redis", action="store_true")
    ap.add_argument("--mb", type=int, default=40)
    ap.add_argument("--element", type=int, default=10000)
    ap.add_argument("--rate", type=int, default=1_000_000, help="bytes per second the slow client reads")
    ap.add_argument("--chunk", type=int, default=65536)
    ap.add_argument("--probes", type=int, default=4)
    a = ap.parse_args()
    binary = shutil.which("redis-server") if a.redis else a.binary
    d = tempfile.mkdtemp(prefix="slow-reader-")
    proc, c, port = start(binary, [] if a.redis else ["--threads", "1"], d)
    try:
        n = a.mb * 1_000_000 // a.element
        element = b"v" * a.element
        pipe = c.pipeline(transaction=False)
        for i in range(n):
            pipe.rpush("big", element)
            if i % 100 == 99:
                pipe.execute()
        pipe.execute()
        # The reply's exact size: the array header, then each bulk string.
        total = len(f"*{n}\r\n") + n * (len(f"${a.element}\r\n") + a.element + 2)
        stop, lats = threading.Event(), []
        threads = []
        for i in range(a.probes):
            lat = []
            lats.append(lat)
            t = threading.Thread(target=probe, args=(port, stop, lat, i))
            t.start()
            threads.append(t)
        took = slow_read(port, total, a.rate, a.chunk)
        stop.set()
        for t in threads:
            t.join()
        lat = [x for l in lats for x in l]
        print(f"| {os.path.basename(binary)} | {total / 1e6:.1f} MB at {a.rate / 1e6:.1f} MB/s | {took:.1f} | "
              f"{len(lat)} | {percentile(lat, .5):.3f} | {percentile(lat, .99):.3f} | {percentile(lat, .999):.3f} | "
              f"{max(lat) * 1000:.1f} |", flush=True)
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
