#!/usr/bin/env python3
"""Instructions per request of two keel-server builds, under callgrind.

Wall-clock ratios on a shared 2-core machine move by +-10% between runs of
the same binary; instruction counts do not (callgrind counts them, whatever
else the machine is doing). This runs the same redis-benchmark workload
against each binary under `valgrind --tool=callgrind` with instrumentation
on only while the benchmark runs, and prints instructions per request.
Idle polling is off for both (it spins for a time, not a count).

Usage: bench/instructions.py --baseline OLD_BIN [--keel NEW_BIN] [-n 20000]
                             [-P 1] [-c 50] [-t set,get,...] [--bench-args "..."]
                             [--keel-args "..."] [--baseline-args "..."]
(the same binary twice with different options measures what an option costs)
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import free_port, wait_ready, KEEL  # noqa: E402


def totals(path):
    """The `totals:` line of a dump, once the dump is complete."""
    for _ in range(300):
        with open(path) as f:
            for line in f:
                if line.startswith("totals:"):
                    return int(line.split()[1])
        time.sleep(0.1)
    sys.exit(f"no totals in {path}")


def measure(binary, args, tests, n, clients, pipeline, bench_args=()):
    work = tempfile.mkdtemp(prefix="keel-instr-")
    port = free_port()
    out = os.path.join(work, "callgrind.out")
    # A redis-server binary (bench/per_request.py compares with Redis)
    # takes neither keel's setting nor needs it.
    own = ["--appendonly", "no"] if os.path.basename(binary) == "redis-server" else ["--idle-poll-us", "0"]
    proc = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}.%p",
         binary, "--port", str(port), "--save", "", *own, *args],
        cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(port, proc, timeout=120)
    result = {}
    try:
        for t in tests:
            subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True, capture_output=True)
            subprocess.run(["callgrind_control", "-i", "on", str(proc.pid)], check=True, capture_output=True)
            subprocess.run(["redis-benchmark", "-p", str(port), "-q", "-n", str(n), "-c", str(clients),
                            "-P", str(pipeline), "-t", t, *bench_args], check=True, capture_output=True,
                           timeout=3600)
            subprocess.run(["callgrind_control", "-i", "off", str(proc.pid)], check=True, capture_output=True)
            before = set(glob.glob(out + "*"))
            subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True, capture_output=True)
            for _ in range(100):
                new = set(glob.glob(out + "*")) - before
                if new:
                    break
                time.sleep(0.1)
            if not new:
                sys.exit("callgrind wrote no dump")
            path = max(new, key=os.path.getmtime)
            # LRANGE selects several benchmarks; they share the count.
            result[t] = totals(path) / n
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--keel", default=KEEL)
    ap.add_argument("-n", type=int, default=20000)
    ap.add_argument("-c", type=int, default=50)
    ap.add_argument("-P", type=int, default=1)
    ap.add_argument("-t", default="ping_inline,ping_mbulk,set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,mset")
    ap.add_argument("--bench-args", default="",
                    help="more redis-benchmark arguments, e.g. \"--threads 2 -r 100000 -d 64\"")
    ap.add_argument("--keel-args", default="")
    ap.add_argument("--baseline-args", default="")
    a = ap.parse_args()
    tests = a.t.split(",")
    extra = a.bench_args.split()
    old = measure(os.path.abspath(a.baseline), a.baseline_args.split(), tests, a.n, a.c, a.P, extra)
    new = measure(os.path.abspath(a.keel), a.keel_args.split(), tests, a.n, a.c, a.P, extra)
    print(f"\ninstructions per request (callgrind), `redis-benchmark -n {a.n} -c {a.c} -P {a.P} {a.bench_args}`\n")
    print("| test | baseline | keel | keel/baseline |")
    print("|---|---:|---:|---:|")
    for t in tests:
        print(f"| {t} | {old[t]:,.0f} | {new[t]:,.0f} | {new[t] / old[t]:.3f} |")


if __name__ == "__main__":
    main()
