#!/usr/bin/env python3
"""Builds of keel against each other on one tiered read phase, alternating.

Each round, for each build in turn: a fresh tiered keel (maxmemory, a disk
tier, allkeys-lru) in bench/tiering.py's memory-capped cgroup, loaded with
KEYS values of SIZE bytes, then GETs with redis-benchmark:

- uniform (default): random keys over the whole dataset, -c 32, after
  20,000 GETs to settle;
- hot (--hot N): random keys among the first N, -c 50, after WARM x N
  GETs over them.

Printed per run: the rate and latencies, the server's CPU per request
(user + system, from /proc), and the tier's counts over the measured phase
(loads, spills that wrote, spills that reused a clean copy, values put on
probation, hit rate). fio's random reads on a file of the dataset's size
with --fio, after each round.

Usage (as root): bench/tiering_ab.py --keel <build A> --keel <build B>
    [--rounds 3 --hot 16384 --warm 4 --requests 200000]
"""

import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiering as T  # noqa: E402


def cpu_us(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    return ticks * 1_000_000 // os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keel", action="append", required=True)
    ap.add_argument("--keys", type=int, default=327680)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--maxmemory", default="128mb")
    ap.add_argument("--group-mb", type=int, default=320)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=100000)
    ap.add_argument("--hot", type=int, default=0)
    ap.add_argument("--warm", type=int, default=4)
    ap.add_argument("--fio", action="store_true")
    ap.add_argument("--workdir", default="/tmp/keel-tier-ab")
    ap.add_argument("--port", type=int, default=7411)
    a = ap.parse_args()
    os.makedirs(T.CGROUP, exist_ok=True)
    with open(f"{T.CGROUP}/memory.limit_in_bytes", "w") as f:
        f.write(str(a.group_mb << 20))
    tiered = ["--maxmemory", a.maxmemory, "--maxmemory-policy", "allkeys-lru", "--tiering-dir", "tier"]
    over = a.hot or a.keys
    clients = "50" if a.hot else "32"
    warm = a.hot * a.warm if a.hot else 20000
    rates = {k: [] for k in a.keel}
    for r in range(a.rounds):
        for keel in a.keel:
            shutil.rmtree(a.workdir, ignore_errors=True)
            p, c = T.start(keel, a.port, a.workdir, tiered, True)
            T.load(c, a.keys, a.size)
            T.benchmark(a.port, ["-t", "get", "-n", str(warm), "-r", str(over), "-c", clients, "--threads", "2"])
            t0, c0 = T.info(c, "tiering"), cpu_us(p.pid)
            rps, p50, p99 = T.benchmark(
                a.port, ["-t", "get", "-n", str(a.requests), "-r", str(over), "-c", clients, "--threads", "2"])
            t1, c1 = T.info(c, "tiering"), cpu_us(p.pid)
            d = lambda f: int(t1.get(f, 0)) - int(t0.get(f, 0))
            mem, disk = d("tiering_values_in_memory"), d("tiering_values_on_disk")
            print(f"{keel} round {r}: {rps:.0f} rps p50 {p50} p99 {p99} ms, "
                  f"server CPU {(c1 - c0) / a.requests:.1f} us/req; loads {d('tiering_loads')}, "
                  f"spills written {d('tiering_spills')}, reused {d('tiering_reused_copies')}, "
                  f"probation {d('tiering_probation_loads')}, hit rate {mem / max(1, mem + disk):.4f}",
                  flush=True)
            rates[keel].append(rps)
            p.terminate()
            p.wait()
        if a.fio:
            iops, p99 = T.fio(os.path.join(a.workdir, "fio.dat"), a.keys * a.size, a.size, 32, 10)
            print(f"fio: {iops:.0f} IOPS, p99 {p99} ms", flush=True)
    shutil.rmtree(a.workdir, ignore_errors=True)
    for keel, v in rates.items():
        print(f"{keel}: median {sorted(v)[len(v) // 2]:.0f} rps of {[round(x) for x in v]}")


if __name__ == "__main__":
    main()
