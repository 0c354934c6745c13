#!/usr/bin/env python3
"""Peak RSS of a tiered keel restarting from its RDB file and of a new
tiered replica's full sync, on a dataset larger than maxmemory: the
restart and full-sync rows of bench/tiering.py on their own (as root: the
servers run in cgroup-v1 memory groups, see bench/tiering.py).

Loads KEYS values of SIZE bytes into a tiered keel (once; --reload loads
again), SAVEs, restarts it --restarts times and prints each restart's time
and VmHWM against maxmemory plus the empty server's RSS; then, with
--sync, a new tiered replica's full sync from it.

Usage: bench/tiering_restart.py --keel BIN [--keys 4000000] [--size 1024]
           [--maxmemory 400mb] [--group-mb 1000] [--restarts 2] [--sync]
"""
import argparse
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiering import CGROUP, REPLICA_CGROUP, full_sync, info, load, start, vm  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keel", required=True)
    ap.add_argument("--keys", type=int, default=4000000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--maxmemory", default="400mb")
    ap.add_argument("--group-mb", type=int, default=1000)
    ap.add_argument("--restarts", type=int, default=2)
    ap.add_argument("--sync", action="store_true")
    ap.add_argument("--reload", action="store_true")
    ap.add_argument("--workdir", default="/work/keel-tier-restart")
    ap.add_argument("--port", type=int, default=7511)
    a = ap.parse_args()
    for group in (CGROUP, REPLICA_CGROUP):
        os.makedirs(group, exist_ok=True)
        with open(f"{group}/memory.limit_in_bytes", "w") as f:
            f.write(str(a.group_mb << 20))
    tiered = ["--maxmemory", a.maxmemory, "--maxmemory-policy", "allkeys-lru", "--tiering-dir", "tier"]
    p, c = start(a.keel, a.port, a.workdir + "/empty", [], True)
    empty = vm(p.pid, "VmRSS")
    p.terminate(); p.wait()
    tdir = a.workdir + "/tiered"
    if a.reload or not os.path.exists(tdir + "/dump.rdb"):
        shutil.rmtree(tdir, ignore_errors=True)
        p, c = start(a.keel, a.port, tdir, tiered, True)
        t0 = time.time()
        load(c, a.keys, a.size)
        print(f"load of {a.keys} x {a.size} B: {time.time() - t0:.1f} s, peak RSS {vm(p.pid, 'VmHWM') >> 20} MB",
              flush=True)
        c.cmd("SAVE")
        p.terminate(); p.wait()
    for _ in range(a.restarts):
        t0 = time.time()
        p, c = start(a.keel, a.port, tdir, tiered, True)
        took = time.time() - t0
        m = info(c, "memory")
        bound = int(m["maxmemory"]) + empty
        peak = vm(p.pid, "VmHWM")
        print(f"restart: {took:.1f} s, peak RSS {peak >> 20} MB = {peak / bound:.3f} x (maxmemory "
              f"{int(m['maxmemory']) >> 20} MB + empty server {empty >> 20} MB); used_memory "
              f"{int(m['used_memory']) >> 20} MB, RSS now {int(m['used_memory_rss']) >> 20} MB", flush=True)
        if not a.sync or _ < a.restarts - 1:
            p.terminate(); p.wait()
    if a.sync:
        took, peak = full_sync(a.keel, a.port, a.port + 2, a.workdir + "/replica", tiered, REPLICA_CGROUP)
        print(f"full sync: {took:.1f} s, replica's peak RSS {peak >> 20} MB = {peak / bound:.3f} x", flush=True)
        p.terminate(); p.wait()


if __name__ == "__main__":
    main()
