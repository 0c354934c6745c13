#!/usr/bin/env python3
"""How keel scales with worker threads: a thread-count sweep.

For each worker count 1..N, starts keel-server with `--threads T
--active-threads-min T` (every worker serving from the start, not waiting
for the balancer) and runs keel-benchmark against it, without pipelining
and with `-P 16`, `--runs` times each; prints a markdown table of median
rps per test and the speed-up over one worker, with the server's CPU
cores in use.

The client needs cores of its own: on a machine with C cores give it
`--client-threads` about C - T so that it is not what saturates (on a
2-core machine nothing is left to spare, which the table then shows).

Usage: bench/threads.py [--max-threads N] [--runs 3] [--client-threads K]
                        [--tests set,get] [-n 1000000] [-c 50]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (free_port, wait_ready, cpu_seconds)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEEL = os.path.join(ROOT, "target", "release", "keel-server")
BENCH = os.path.join(ROOT, "target", "release", "keel-benchmark")


def run(port, args):
    out = subprocess.run([BENCH, "-p", str(port), "--csv", *args], capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        sys.exit(f"keel-benchmark failed: {args}\n{out.stderr}")
    rows = {}
    for line in out.stdout.splitlines():
        if line.startswith('"test"') or not line.startswith('"'):
            continue
        f = [x.strip('"') for x in line.split('","')]
        rows[f[0]] = float(f[1])
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--client-threads", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    ap.add_argument("--tests", default="set,get")
    ap.add_argument("-n", type=int, default=1000000)
    ap.add_argument("-c", type=int, default=50)
    a = ap.parse_args()
    modes = [("1", []), ("16", ["-P", "16"])]
    results = {}  # (threads, pipeline, test) -> [rps]
    cores = {}  # threads -> [server cores in use]
    for t in range(1, a.max_threads + 1):
        port = compare.free_port()
        workdir = f"/tmp/keel-threads-{port}"
        os.makedirs(workdir, exist_ok=True)
        proc = subprocess.Popen([KEEL, "--port", str(port), "--save", "", "--threads", str(t),
                                 "--active-threads-min", str(t)], cwd=workdir,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            compare.wait_ready(port, proc)
            for _ in range(a.runs):
                for p, extra in modes:
                    before, started = compare.cpu_seconds(proc.pid), time.time()
                    rows = run(port, ["-n", str(a.n), "-c", str(a.c), "-r", "100000",
                                      "--threads", str(a.client_threads), "-t", a.tests, *extra])
                    cores.setdefault((t, p), []).append(
                        (compare.cpu_seconds(proc.pid) - before) / (time.time() - started))
                    for test, rps in rows.items():
                        results.setdefault((t, p, test), []).append(rps)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    tests = []
    for (_t, _p, test) in results:
        if test not in tests:
            tests.append(test)
    print(f"\n`bench/threads.py --max-threads {a.max_threads} --runs {a.runs} --client-threads "
          f"{a.client_threads} --tests {a.tests} -n {a.n} -c {a.c}` ({os.cpu_count()} cores), median of {a.runs}\n")
    print("| workers | pipeline | " + " | ".join(f"{x} rps | {x} vs 1 worker" for x in tests) + " | server cores busy |")
    print("|---:|---:|" + "---:|---:|" * len(tests) + "---:|")
    for p, _ in modes:
        for t in range(1, a.max_threads + 1):
            cells = []
            for x in tests:
                rps = statistics.median(results[(t, p, x)])
                one = statistics.median(results[(1, p, x)])
                cells.append(f"{rps:,.0f} | {rps / one:.2f}x")
            print(f"| {t} | {p} | " + " | ".join(cells) + f" | {statistics.median(cores[(t, p)]):.2f} |")


if __name__ == "__main__":
    main()
