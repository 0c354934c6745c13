#!/usr/bin/env python3
"""What one request costs the server, keel against redis-server: CPU split
into user and system time, system calls, and user-space instructions.

For redis-server, keel as shipped and keel with `--idle-poll-us 0` (no
polling), on the same redis-benchmark workload (`-c 50` by default):
- rps, and server user / system CPU microseconds per request, from
  /proc/PID/stat around each run (median of `--runs`);
- system calls per request by name, from `strace -c -f` attached for one
  run (strace slows the server: its rate is not reported);
- user-space instructions per request, from callgrind (`bench/instructions.py`'s
  measure; idle polling off, `-n` 20000). This VM exposes no hardware
  counters to `perf stat`, so the kernel's instructions are not counted:
  the system time stands for them.

Usage: bench/per_request.py [--keel BIN] [--runs 3] [-n 300000] [-c 50]
                            [-t set,get] [--bench-args "..."]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import KEEL, TICK, free_port, server_command, start  # noqa: E402
from instructions import measure  # noqa: E402


def cpu_ticks(pid):
    """(user, system) clock ticks of a process, its threads included."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])


def bench(port, test, n, clients, extra):
    out = subprocess.run(
        ["redis-benchmark", "-p", str(port), "-q", "-n", str(n), "-c", str(clients), "-t", test, *extra],
        check=True, capture_output=True, text=True, timeout=3600).stdout
    m = re.findall(r"([\d.]+) requests per second", out)
    return float(m[-1]) if m else 0.0


def strace_counts(pid, port, test, n, clients, extra):
    """System calls per request by name during one run."""
    out = tempfile.mktemp(prefix="keel-strace-")
    tracer = subprocess.Popen(["strace", "-c", "-f", "-q", "-p", str(pid), "-o", out],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    bench(port, test, n, clients, extra)
    tracer.send_signal(2)
    tracer.wait(timeout=60)
    counts = {}
    with open(out) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 5 and parts[0][0].isdigit() and parts[-1] != "total":
                calls = int(parts[3])
                counts[parts[-1]] = calls / n
    os.unlink(out)
    return counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keel", default=KEEL)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("-n", type=int, default=300000)
    ap.add_argument("-c", type=int, default=50)
    ap.add_argument("-t", default="set,get")
    ap.add_argument("--bench-args", default="")
    a = ap.parse_args()
    extra = a.bench_args.split()
    servers = [
        ("redis-server", "redis", []),
        ("keel", "keel", []),
        ("keel, no polling", "keel", ["--idle-poll-us", "0"]),
    ]
    rows = []
    for name, kind, args in servers:
        for test in a.t.split(","):
            work = tempfile.mkdtemp(prefix="keel-per-request-")
            port = free_port()
            cmd = server_command(kind, port, args)
            if kind == "keel":
                cmd[0] = os.path.abspath(a.keel)
            proc = start(cmd, port, work)
            try:
                bench(port, test, min(a.n, 100000), a.c, extra)
                rates, users, systems = [], [], []
                for _ in range(a.runs):
                    u0, s0 = cpu_ticks(proc.pid)
                    rates.append(bench(port, test, a.n, a.c, extra))
                    u1, s1 = cpu_ticks(proc.pid)
                    users.append((u1 - u0) / TICK * 1e6 / a.n)
                    systems.append((s1 - s0) / TICK * 1e6 / a.n)
                calls = strace_counts(proc.pid, port, test, a.n, a.c, extra)
            finally:
                proc.terminate()
                proc.wait(timeout=60)
            binary = "redis-server" if kind == "redis" else os.path.abspath(a.keel)
            instr = measure(binary, [], [test], 20000, a.c, 1, extra)[test] if "polling" not in name else None
            rows.append((name, test, statistics.median(rates), statistics.median(users),
                         statistics.median(systems), calls, instr))
    print(f"\n`redis-benchmark -n {a.n} -c {a.c} {a.bench_args}`, medians of {a.runs} runs\n")
    print("| server | test | rps | user µs/req | system µs/req | CPU µs/req | syscalls/req "
          "| of which reads / writes / epoll_wait / futex | user instructions/req |")
    print("|---|---|---:|---:|---:|---:|---:|---|---:|")
    for name, test, rate, user, system, calls, instr in rows:
        total = sum(calls.values())
        reads = calls.get("read", 0) + calls.get("recvfrom", 0)
        writes = calls.get("write", 0) + calls.get("sendto", 0)
        detail = f"{reads:.2f} / {writes:.2f} / {calls.get('epoll_wait', 0):.3f} / {calls.get('futex', 0):.3f}"
        ins = f"{instr:,.0f}" if instr else "(as above)"
        print(f"| {name} | {test.upper()} | {rate:,.0f} | {user:.2f} | {system:.2f} | {user + system:.2f} "
              f"| {total:.2f} | {detail} | {ins} |")


if __name__ == "__main__":
    main()
