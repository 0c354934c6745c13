#!/usr/bin/env python3
"""The kernel's floor under a request: CPU per request of servers that do no
work (bench/floor: `+PONG` to every line, over epoll and over io_uring)
beside redis-server and keel, on the same redis-benchmark rows.

What it answers: how much of a request's server CPU any server pays on this
machine before it does anything, and how much an io_uring data path (one
`io_uring_enter` per round for every connection's recv and send) saves of
it against one `read` and one `write` per request over epoll.

Servers run one after another in each round (`--runs` rounds), each fresh;
per row the median over rounds of server CPU microseconds per request
(user and system, from /proc/PID/stat) and of the rate.

Usage: bench/floor.py [--keel BIN] [--runs 5]
                      [--rows "-c 50 -n 600000;-c 512 --threads 2 -n 600000;-c 1 -n 100000"]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import KEEL, ROOT, TICK, free_port, server_command, start  # noqa: E402
from per_request import bench, cpu_ticks  # noqa: E402

FLOOR_DIR = os.path.join(ROOT, "bench", "floor")
FLOOR = os.path.join(FLOOR_DIR, "target", "release", "keel-floor")


def split_row(row):
    """(-n, -c, the other redis-benchmark arguments) of a row."""
    n, c, extra = 100000, 50, []
    words = iter(row)
    for w in words:
        if w == "-n":
            n = int(next(words))
        elif w == "-c":
            c = int(next(words))
        else:
            extra.append(w)
    return n, c, extra


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keel", default=KEEL)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rows", default="-c 50 -n 600000;-c 512 --threads 2 -n 600000;-c 1 -n 100000")
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-q", "--manifest-path",
                    os.path.join(FLOOR_DIR, "Cargo.toml")], check=True)
    servers = {
        "floor, epoll": lambda port: [FLOOR, "epoll", str(port)],
        "floor, io_uring": lambda port: [FLOOR, "uring", str(port)],
        "redis-server": lambda port: server_command("redis", port),
        "keel": lambda port: [os.path.abspath(a.keel), *server_command("keel", port)[1:]],
    }
    rows = [r.split() for r in a.rows.split(";")]
    seen = {}  # (server, row) -> [(rate, user µs, system µs)]
    for _ in range(a.runs):
        for name, command in servers.items():
            port = free_port()
            work = tempfile.mkdtemp(prefix="keel-floor-")
            proc = start(command(port), port, work)
            try:
                for row in rows:
                    n, c, extra = split_row(row)
                    u0, s0 = cpu_ticks(proc.pid)
                    rate = bench(port, "ping_inline", n, c, extra)
                    u1, s1 = cpu_ticks(proc.pid)
                    seen.setdefault((name, " ".join(row)), []).append(
                        (rate, (u1 - u0) / TICK * 1e6 / n, (s1 - s0) / TICK * 1e6 / n))
            finally:
                proc.terminate()
                proc.wait(timeout=60)
    print(f"\n`redis-benchmark -t ping_inline <row>`, medians of {a.runs} rounds\n")
    print("| row | server | rps | user µs/req | system µs/req | CPU µs/req | CPU ÷ redis-server's |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for row in rows:
        key = " ".join(row)
        redis_cpu = statistics.median(u + s for _, u, s in seen[("redis-server", key)])
        for name in servers:
            runs = seen[(name, key)]
            rate = statistics.median(r for r, _, _ in runs)
            user = statistics.median(u for _, u, _ in runs)
            system = statistics.median(s for _, _, s in runs)
            cpu = statistics.median(u + s for _, u, s in runs)
            print(f"| `{key}` | {name} | {rate:,.0f} | {user:.2f} | {system:.2f} | {cpu:.2f} "
                  f"| {cpu / redis_cpu:.2f} |")


if __name__ == "__main__":
    main()
