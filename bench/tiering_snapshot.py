#!/usr/bin/env python3
"""Time to write a snapshot of a tiered dataset (SAVE) and a new tiered
replica's full sync, for several keel builds alternating in one sitting
(as root: the servers run in cgroup-v1 memory groups, see
bench/tiering.py).

Each round, for each build: a fresh tiered keel loads KEYS values of SIZE
bytes (most of them spill), SAVE is timed, then writing an AOF base
(`CONFIG SET appendonly yes`), then a new tiered replica's full sync from
it. Prints every run and the medians.

Usage: bench/tiering_snapshot.py --keel NAME=BIN [--keel NAME=BIN ...]
           [--keys 327680] [--size 4096] [--maxmemory 128mb] [--group-mb 320]
           [--runs 3] [--no-sync]
"""
import argparse
import os
import shutil
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiering import CGROUP, REPLICA_CGROUP, full_sync, info, load, start  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keel", action="append", required=True, help="NAME=BIN")
    ap.add_argument("--keys", type=int, default=327680)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--maxmemory", default="128mb")
    ap.add_argument("--group-mb", type=int, default=320)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-sync", action="store_true")
    ap.add_argument("--workdir", default="/work/keel-tier-snapshot")
    ap.add_argument("--port", type=int, default=7611)
    a = ap.parse_args()
    builds = [k.split("=", 1) for k in a.keel]
    for group in (CGROUP, REPLICA_CGROUP):
        os.makedirs(group, exist_ok=True)
        with open(f"{group}/memory.limit_in_bytes", "w") as f:
            f.write(str(a.group_mb << 20))
    tiered = ["--maxmemory", a.maxmemory, "--maxmemory-policy", "allkeys-lru", "--tiering-dir", "tier"]
    results = {name: {"save": [], "rewrite": [], "sync": []} for name, _ in builds}
    for run in range(a.runs):
        for name, binary in builds:
            tdir = a.workdir + "/primary"
            shutil.rmtree(tdir, ignore_errors=True)
            p, c = start(binary, a.port, tdir, tiered, True)
            load(c, a.keys, a.size)
            spilled = int(info(c, "tiering")["tiering_spilled_keys"])
            t0 = time.time()
            c.cmd("SAVE")
            save = time.time() - t0
            results[name]["save"].append(save)
            line = f"run {run + 1} {name}: SAVE {save:.1f} s ({spilled} of {a.keys} values on disk)"
            # Turning the AOF on writes its base (an RDB preamble) in the
            # background, as BGREWRITEAOF does.
            t0 = time.time()
            c.cmd("CONFIG", "SET", "appendonly", "yes")
            while True:
                p_info = info(c, "persistence")
                if p_info["aof_rewrite_in_progress"] == "0" and p_info["aof_rewrite_scheduled"] == "0":
                    break
                time.sleep(0.05)
            rewrite = time.time() - t0
            results[name]["rewrite"].append(rewrite)
            line += f", AOF base {rewrite:.1f} s"
            if not a.no_sync:
                took, _peak = full_sync(binary, a.port, a.port + 2, a.workdir + "/replica", tiered, REPLICA_CGROUP)
                results[name]["sync"].append(took)
                line += f", full sync {took:.1f} s"
            print(line, flush=True)
            p.terminate(); p.wait()
            shutil.rmtree(tdir, ignore_errors=True)
    for name, r in results.items():
        line = (f"{name}: SAVE median {statistics.median(r['save']):.1f} s, AOF base median "
                f"{statistics.median(r['rewrite']):.1f} s")
        if r["sync"]:
            line += f", full sync median {statistics.median(r['sync']):.1f} s"
        print(line)


if __name__ == "__main__":
    main()
