#!/usr/bin/env python3
"""BITCOUNT (and BITPOS, BITOP) on a 256 MB string: keel-server against
redis-server, side by side.

Starts both servers (no snapshots), builds the same bitmaps in each (a
1 MB pseudo-random block written with SETRANGE over the whole length, so
both hold identical bytes), then times each command `--calls` times per
run on one connection, alternating which server goes first, for `--runs`
runs. Prints a markdown table of the median milliseconds per call and the
speed ratio (redis time / keel time: above 1.0, keel is faster).

Usage: bench/bitcount.py [--runs 5] [--calls 10] [--mb 256]
"""
import argparse
import os
import socket
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import encode, free_port, server_command, start  # noqa: E402


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                sys.exit("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def call(self, *args):
        """Sends one command; returns its reply (simple, integer or error
        lines only: no bulk replies are needed here)."""
        self.s.sendall(encode(*args))
        line = self._line()
        if line.startswith(b"-"):
            sys.exit(f"{args[0]}: {line.decode()}")
        return line[1:].decode()


def block(seed, n):
    """n pseudo-random bytes (xorshift), the same for both servers."""
    x = seed | 1
    out = bytearray(n)
    for i in range(0, n, 8):
        x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 7
        x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
        out[i:i + 8] = x.to_bytes(8, "little")[: n - i]
    return bytes(out)


def fill(c, key, total, seed):
    data = block(seed, 1 << 20)
    for off in range(0, total, len(data)):
        c.call("SETRANGE", key, off, data[: total - off])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--mb", type=int, default=256)
    o = ap.parse_args()
    total = o.mb << 20
    bits = total * 8
    commands = [
        ("BITCOUNT k", ["BITCOUNT", "k"]),
        ("BITCOUNT k 1000 -1000", ["BITCOUNT", "k", 1000, -1000]),
        (f"BITCOUNT k 5 {bits - 13} BIT", ["BITCOUNT", "k", 5, bits - 13, "BIT"]),
        ("BITPOS z 1 (one bit at the end)", ["BITPOS", "z", 1]),
        ("BITOP AND d k k2", ["BITOP", "AND", "d", "k", "k2"]),
        ("BITOP XOR d k k2", ["BITOP", "XOR", "d", "k", "k2"]),
        ("BITOP NOT d k", ["BITOP", "NOT", "d", "k"]),
    ]
    times = {(name, srv): [] for name, _ in commands for srv in ("keel", "redis")}
    with tempfile.TemporaryDirectory() as d:
        procs, conns = {}, {}
        try:
            for srv in ("keel", "redis"):
                port = free_port()
                procs[srv] = start(server_command(srv, port), port, d)
                c = Conn(port)
                fill(c, "k", total, 1)
                # Shorter than k, so BITOP pads it.
                fill(c, "k2", total - 12345, 2)
                c.call("SETRANGE", "z", total - 1, b"\x01")
                conns[srv] = c
            for run in range(o.runs):
                order = ("keel", "redis") if run % 2 == 0 else ("redis", "keel")
                for name, cmd in commands:
                    for srv in order:
                        c = conns[srv]
                        c.call(*cmd)  # warm-up
                        t = time.perf_counter()
                        for _ in range(o.calls):
                            c.call(*cmd)
                        times[(name, srv)].append((time.perf_counter() - t) / o.calls * 1000)
        finally:
            for p in procs.values():
                p.terminate()
                p.wait()
    print(f"{o.mb} MB strings, {o.calls} calls per run, median of {o.runs} runs")
    print()
    print("| command | keel ms | redis ms | keel speed (redis time / keel time) |")
    print("|---|---:|---:|---:|")
    for name, _ in commands:
        k = statistics.median(times[(name, "keel")])
        r = statistics.median(times[(name, "redis")])
        print(f"| `{name}` | {k:.2f} | {r:.2f} | {r / k:.2f}x |")


if __name__ == "__main__":
    main()
