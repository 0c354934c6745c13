#!/usr/bin/env python3
"""Memory per key: the whole process, keel-server against redis-server.

Both servers start empty; each gets
`redis-benchmark -t set -r KEYS -n REQUESTS -d SIZE -P 16` (about 95% of
the key space is then written); then, once the dataset is idle for a moment,
the process RSS (VmRSS), `used_memory` and DBSIZE of each are reported,
with RSS per key over the empty process and the ratio of the whole RSS.

Usage: bench/keys_rss.py [--keys 1000000] [--requests 3000000] [--size 16] [--runs 3]
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import free_port, proc_status, server_command, start  # noqa: E402


def rss(pid):
    return proc_status(pid, "VmRSS")


def cli(port, *args):
    r = subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True, timeout=60)
    return r.stdout.strip()


def used_memory(port):
    for line in cli(port, "info", "memory").splitlines():
        if line.startswith("used_memory:"):
            return int(line.split(":")[1])
    return 0


def measure(kind, args, workdir):
    port = free_port()
    proc = start(server_command(kind, port), port, workdir)
    try:
        time.sleep(0.5)
        empty = rss(proc.pid)
        subprocess.run(["redis-benchmark", "-p", str(port), "-t", "set", "-r", str(args.keys),
                        "-n", str(args.requests), "-d", str(args.size), "-P", "16", "-q"],
                       capture_output=True, timeout=1800, check=True)
        time.sleep(2)
        return empty, rss(proc.pid), used_memory(port), int(cli(port, "dbsize"))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--requests", type=int, default=3_000_000)
    ap.add_argument("--size", type=int, default=16)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="keel-keys-rss-")
    mb = lambda b: f"{b / 2**20:.1f} MB"
    print("| run | server | keys | empty RSS | RSS | used_memory | RSS per key over empty |")
    print("|---|---|---:|---:|---:|---:|---:|")
    ratios = []
    for run in range(1, args.runs + 1):
        got = {}
        for kind in (["keel", "redis"] if run % 2 else ["redis", "keel"]):
            got[kind] = measure(kind, args, workdir)
        for kind in ("keel", "redis"):
            empty, full, used, keys = got[kind]
            print(f"| {run} | {kind} | {keys} | {mb(empty)} | {mb(full)} | {mb(used)} | "
                  f"{(full - empty) / keys:.1f} B |", flush=True)
        ratios.append(got["keel"][1] / got["redis"][1])
    print(f"\nkeel/redis whole RSS: {', '.join(f'{r:.3f}' for r in ratios)}; "
          f"median {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
