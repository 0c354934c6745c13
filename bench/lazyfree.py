#!/usr/bin/env python3
"""How long deleting a huge set stalls other clients: DEL against UNLINK.

For each server (keel-server, redis-server) and each command (DEL, UNLINK):
fill a set of --members members, then delete it from one connection while
another sends PING after PING; report the deleting command's own latency and
the longest PING round trip seen while it ran.

Usage: bench/lazyfree.py [--members 5000000] [--runs 3]
"""
import argparse
import os
import signal
import socket
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import encode, free_port, server_command, start  # noqa: E402


def read_line(s):
    data = b""
    while not data.endswith(b"\r\n"):
        chunk = s.recv(1)
        if not chunk:
            sys.exit("connection closed")
        data += chunk
    return data


def fill(port, members):
    s = socket.create_connection(("127.0.0.1", port))
    batch = []
    for i in range(0, members, 1000):
        batch.append(encode("SADD", "big", *[f"member:{j}" for j in range(i, min(i + 1000, members))]))
        if len(batch) == 50:
            s.sendall(b"".join(batch))
            for _ in batch:
                read_line(s)
            batch = []
    if batch:
        s.sendall(b"".join(batch))
        for _ in batch:
            read_line(s)
    s.close()


def pinger(port, stop, worst):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while not stop.is_set():
        t = time.perf_counter()
        s.sendall(b"PING\r\n")
        read_line(s)
        worst[0] = max(worst[0], time.perf_counter() - t)
    s.close()


def measure(kind, cmd_name, members, workdir):
    port = free_port()
    proc = start(server_command(kind, port), port, workdir)
    try:
        fill(port, members)
        stop, worst = threading.Event(), [0.0]
        th = threading.Thread(target=pinger, args=(port, stop, worst))
        th.start()
        time.sleep(0.3)
        worst[0] = 0.0
        s = socket.create_connection(("127.0.0.1", port))
        t = time.perf_counter()
        s.sendall(encode(cmd_name, "big"))
        read_line(s)
        took = time.perf_counter() - t
        time.sleep(0.3)
        stop.set()
        th.join()
        return took, worst[0]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", type=int, default=5_000_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="keel-lazyfree-")
    print(f"| server | command | command latency (median of {args.runs}) | worst PING meanwhile (median) |")
    print("|---|---|---:|---:|")
    for kind in ("keel", "redis"):
        for cmd_name in ("DEL", "UNLINK"):
            runs = [measure(kind, cmd_name, args.members, workdir) for _ in range(args.runs)]
            took = statistics.median(r[0] for r in runs)
            worst = statistics.median(r[1] for r in runs)
            print(f"| {kind} | {cmd_name} | {took * 1000:.2f} ms | {worst * 1000:.2f} ms |", flush=True)


if __name__ == "__main__":
    main()
