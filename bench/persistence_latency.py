#!/usr/bin/env python3
"""Latency of a probe client while a big dataset is persisted in the
background: BGREWRITEAOF and BGSAVE, alone and with a write that locks
every shard (SWAPDB, SORT of a missing key with BY/GET patterns, FLUSHALL
ASYNC: last, it empties the dataset) in the middle of them.

Fills the server with DEBUG POPULATE (--keys values of --size bytes), then
for each scenario runs a probe (SET and GET of random keys, one at a time,
one connection) from the start of the background job until it ends, and
prints the probe's p50/p99/p99.9/max in ms and the peak used_memory against
the dataset's. Runs against keel-server, or with --binary any other build
(an earlier keel), or --redis for redis-server.

    bench/persistence_latency.py --keys 2000000 --size 1000
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(binary, args, d):
    port = free_port()
    log = open(os.path.join(d, "server.log"), "wb")
    proc = subprocess.Popen([binary, "--port", str(port), "--dir", d, "--save", ""] + args, stdout=log, stderr=log)
    c = redis.Redis(port=port, decode_responses=True)
    for _ in range(500):
        try:
            c.ping()
            return proc, c
        except redis.RedisError:
            time.sleep(0.02)
    sys.exit("server did not start")


WRITE_SHARE = float(os.environ.get("PROBE_WRITE_SHARE", "0.5"))


def probe(port, keys, stop, lat):
    c = redis.Redis(port=port)
    rng = random.Random(1)
    while not stop.is_set():
        k = f"key:{rng.randrange(keys)}"
        t = time.perf_counter()
        if rng.random() < WRITE_SHARE:
            c.set(k, "x" * 100)
        else:
            c.get(k)
        lat.append(time.perf_counter() - t)


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))] * 1000


def scenario(c, port, keys, name, start_job, job_running, during=None):
    used0 = c.info("memory")["used_memory"]
    stop, lat = threading.Event(), []
    t = threading.Thread(target=probe, args=(port, keys, stop, lat))
    t.start()
    time.sleep(0.5)
    peak = used0
    begin = time.time()
    start_job(c)
    if during:
        during(c)
    # Polled twice a second: INFO takes every shard, and polling it as
    # fast as a probe would measure the poll, not the job.
    while job_running(c):
        peak = max(peak, c.info("memory")["used_memory"])
        time.sleep(0.5)
    took = time.time() - begin
    stop.set()
    t.join()
    print(f"| {name} | {took:.1f} | {len(lat)} | {percentile(lat, .5):.3f} | {percentile(lat, .99):.3f} | "
          f"{percentile(lat, .999):.3f} | {max(lat) * 1000:.1f} | {peak / used0:.2f} |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "keel-server"))
    ap.add_argument("--redis", action="store_true")
    ap.add_argument("--keys", type=int, default=2_000_000)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--only", help="comma-separated scenario names")
    ap.add_argument("--fsync", default="everysec", help="appendfsync")
    a = ap.parse_args()
    binary = shutil.which("redis-server") if a.redis else a.binary
    d = tempfile.mkdtemp(prefix="persist-lat-")
    proc, c = start(binary, ["--appendonly", "yes", "--appendfsync", a.fsync, "--enable-debug-command", "yes"], d)
    try:
        c.execute_command("DEBUG", "POPULATE", a.keys, "key", a.size)
        port = c.connection_pool.connection_kwargs["port"]
        print(f"{os.path.basename(binary)}, appendfsync {a.fsync}: {a.keys} keys of {a.size} bytes, used_memory "
              f"{c.info('memory')['used_memory'] / 2**30:.2f} GiB")
        print("| scenario | seconds | probes | p50 ms | p99 ms | p99.9 ms | max ms | peak used_memory / before |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")

        def rewriting(c):
            i = c.info("persistence")
            return i["aof_rewrite_in_progress"] or i["aof_rewrite_scheduled"]

        def saving(c):
            return c.info("persistence")["rdb_bgsave_in_progress"]

        scenarios = {
            "BGREWRITEAOF": (lambda c: c.bgrewriteaof(), rewriting, None),
            "BGSAVE": (lambda c: c.bgsave(), saving, None),
            "BGSAVE + SWAPDB 0 1 twice": (lambda c: c.bgsave(), saving,
                                           lambda c: (c.swapdb(0, 1), c.swapdb(0, 1))),
            "BGSAVE + SORT nokey BY/GET": (lambda c: c.bgsave(), saving,
                                            lambda c: c.execute_command("SORT", "nokey", "BY", "w_*", "GET", "o_*")),
            "BGREWRITEAOF + SWAPDB 0 1 twice": (lambda c: c.bgrewriteaof(), rewriting,
                                                 lambda c: (c.swapdb(0, 1), c.swapdb(0, 1))),
            "BGREWRITEAOF + SORT nokey BY/GET": (lambda c: c.bgrewriteaof(), rewriting,
                                                  lambda c: c.execute_command("SORT", "nokey", "BY", "w_*", "GET", "o_*")),
            "BGSAVE + FLUSHALL ASYNC": (lambda c: c.bgsave(), saving,
                                         lambda c: c.execute_command("FLUSHALL", "ASYNC")),
        }
        only = a.only.split(",") if a.only else list(scenarios)
        for name in only:
            start_job, running, during = scenarios[name]
            scenario(c, port, a.keys, name, start_job, running, during)
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
