#!/usr/bin/env python3
"""The seed capacity test: redis-benchmark's default suite with large values
under a maxmemory limit, against keel-server and redis-server in one run.

For each (value size, pipeline) and each policy, both servers start fresh
with `--maxmemory LIMIT --maxmemory-policy POLICY`; every test of the
default suite runs as its own redis-benchmark invocation (redis-benchmark
exits at the first error reply, so a test refused with OOM does not take
the rest of the suite with it). Reported per test: rps and p99 of each
server, or the error that ended it; per run: peak RSS (VmHWM) of each
server and whether it still answers PING afterwards.

Without -r every test of the suite writes one key, so only the lists grow:
-n must be large enough for LPUSH to reach the limit (20000 x 18 KB is
360 MB); the LRANGE tests, a thousand times slower per request, take
--n-lrange requests instead.

Usage: bench/capacity.py [--sizes 18000:5,24000:10,30000:10]
                         [--policies noeviction,allkeys-lru]
                         [--maxmemory 256mb] [-n 20000] [--n-lrange 1000]
                         [-c 50] [--runs 1] [--only keel|redis]

With --runs N, each configuration runs N times (servers alternating which
goes first) and the tables give medians (peak RSS: the highest).
"""
import argparse
import csv
import io
import os
import signal
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import free_port, proc_status, server_command, start  # noqa: E402

# The default suite in redis-benchmark's order; `lrange` runs LPUSH
# first, then LRANGE_100/300/500/600.
SUITE = ["ping_inline", "ping_mbulk", "set", "get", "incr", "lpush", "rpush", "lpop",
         "rpop", "sadd", "hset", "spop", "zadd", "zpopmin", "lrange", "mset"]


def peak_rss(pid):
    return proc_status(pid, "VmHWM")


def answers(port):
    r = subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True, timeout=30)
    return r.stdout.strip() == "PONG"


def run_suite(port, size, pipeline, n, n_lrange, clients):
    """{test name: (rps, p99) or error text}"""
    out = {}
    for t in SUITE:
        r = subprocess.run(["redis-benchmark", "-p", str(port), "-d", str(size), "-P", str(pipeline),
                            "-n", str(n_lrange if t == "lrange" else n), "-c", str(clients), "-t", t,
                            "--csv"],
                           capture_output=True, text=True, timeout=1800)
        rows = list(csv.reader(io.StringIO(r.stdout)))
        for row in rows[1:]:
            if len(row) >= 7:
                out[row[0]] = (float(row[1]), float(row[6]))
        if r.returncode != 0:
            err = (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
            out[t.upper() + " (failed)"] = err
    return out


def measure(kind, size, pipeline, policy, args, workdir):
    port = free_port()
    cmd = server_command(kind, port, ["--maxmemory", args.maxmemory, "--maxmemory-policy", policy])
    proc = start(cmd, port, workdir)
    try:
        results = run_suite(port, size, pipeline, args.n, args.n_lrange, args.c)
        alive = answers(port)
        return results, peak_rss(proc.pid), alive
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


def combine(runs):
    """Medians of rps and p99 over runs (a test that failed in any run
    shows its error), the highest peak RSS, and whether every run ended
    with the server answering."""
    names = []
    for results, _, _ in runs:
        for name in results:
            if name not in names:
                names.append(name)
    merged = {}
    for name in names:
        vals = [r[0].get(name) for r in runs]
        errors = [v for v in vals if isinstance(v, str)]
        nums = [v for v in vals if isinstance(v, tuple)]
        if errors:
            merged[name] = errors[0]
        elif nums:
            merged[name] = (statistics.median(v[0] for v in nums), statistics.median(v[1] for v in nums))
    return merged, max(r[1] for r in runs), all(r[2] for r in runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="18000:5,24000:10,30000:10")
    ap.add_argument("--policies", default="noeviction,allkeys-lru")
    ap.add_argument("--maxmemory", default="256mb")
    ap.add_argument("-n", type=int, default=20000)
    ap.add_argument("--n-lrange", type=int, default=1000)
    ap.add_argument("-c", type=int, default=50)
    ap.add_argument("--only", default="")
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="keel-capacity-")
    kinds = [args.only] if args.only else ["keel", "redis"]
    for spec in args.sizes.split(","):
        size, pipeline = (int(x) for x in spec.split(":"))
        for policy in args.policies.split(","):
            runs = []
            for run in range(args.runs):
                order = kinds if run % 2 == 0 else kinds[::-1]
                runs.append({k: measure(k, size, pipeline, policy, args, workdir) for k in order})
            res = {k: combine([r[k] for r in runs]) for k in kinds}
            print(f"\n### -d {size} -P {pipeline}, maxmemory {args.maxmemory}, {policy}\n")
            for k in kinds:
                _, rss, alive = res[k]
                print(f"- {k}: peak RSS {rss / 2**20:.0f} MB, answers PING afterwards: {'yes' if alive else 'NO'}")
            print()
            head = "| test | " + " | ".join(f"{k} rps | {k} p99 ms" for k in kinds)
            if len(kinds) == 2:
                head += " | keel/redis rps"
            print(head + " |")
            print("|---|" + "---:|" * (2 * len(kinds) + (1 if len(kinds) == 2 else 0)))
            names = []
            for k in kinds:
                for name in res[k][0]:
                    if name not in names:
                        names.append(name)
            for name in names:
                cells = []
                vals = []
                for k in kinds:
                    v = res[k][0].get(name)
                    if isinstance(v, tuple):
                        cells += [f"{v[0]:.0f}", f"{v[1]:.2f}"]
                        vals.append(v[0])
                    elif v is None:
                        cells += ["-", "-"]
                        vals.append(None)
                    else:
                        cells += [v.replace("|", "/"), ""]
                        vals.append(None)
                if len(kinds) == 2:
                    a, b = vals
                    cells.append(f"{a / b:.2f}" if a and b else "")
                print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
