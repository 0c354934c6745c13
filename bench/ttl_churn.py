#!/usr/bin/env python3
"""TTL churn: used_memory over rounds of keys that expire, keel and
redis-server side by side.

Each round turns the active expiry cycle off (DEBUG SET-ACTIVE-EXPIRE 0),
SETs `--keys` keys with PX 1 (pipelined), waits until they have expired,
GETs the first half (each found expired on access), turns the cycle back on
for the rest, waits until DBSIZE is 0, and reads INFO memory's used_memory.
A server that frees what expires stays flat from the first round on.

Usage: bench/ttl_churn.py [--keys 200000] [--rounds 4] [--keel BIN]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import free_port, wait_ready, KEEL  # noqa: E402


def churn(port, keys, rounds):
    r = redis.Redis(port=port)
    used = []
    for _ in range(rounds):
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        p = r.pipeline(transaction=False)
        for i in range(keys):
            p.set(f"k:{i}", "v", px=1)
        p.execute()
        while r.pttl(f"k:{keys - 1}") != -2:
            time.sleep(0.001)
        p = r.pipeline(transaction=False)
        for i in range(keys // 2):
            p.get(f"k:{i}")
        assert all(v is None for v in p.execute())
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        while r.dbsize() != 0:
            time.sleep(0.01)
        used.append(int(r.info("memory")["used_memory"]))
    return used


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=200000)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--keel", default=KEEL)
    a = ap.parse_args()
    results = {}
    for name, cmd in [("keel", [os.path.abspath(a.keel)]), ("redis", ["redis-server"])]:
        port = free_port()
        work = tempfile.mkdtemp(prefix="keel-churn-")
        proc = subprocess.Popen(cmd + ["--port", str(port), "--save", "", "--enable-debug-command", "yes"], cwd=work,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_ready(port, proc)
            results[name] = churn(port, a.keys, a.rounds)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(f"\nused_memory (MB) after each round of {a.keys:,} keys with PX 1\n")
    print("| round | keel | redis |")
    print("|---:|---:|---:|")
    for i in range(a.rounds):
        print(f"| {i + 1} | {results['keel'][i] / 1e6:.1f} | {results['redis'][i] / 1e6:.1f} |")
    k = results["keel"]
    print(f"\nkeel: largest growth over round 1: {(max(k) - k[0]) / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
