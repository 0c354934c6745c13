#!/usr/bin/env python3
"""Memory for the same data in keel-server and redis-server.

For each dataset: starts both servers fresh, sends the same commands to both
(pipelined), and reports the increase of `INFO memory` used_memory and of
the process RSS (/proc/PID/status VmRSS) over the empty server.

Usage: bench/memory.py [--only NAME[,NAME]]
"""
import argparse
import os
import signal
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import KEEL, encode, free_port, proc_status, start  # noqa: E402


def send_all(port, commands, batch=2000):
    """Sends commands in pipelined batches and reads as many replies."""
    s = socket.create_connection(("127.0.0.1", port))
    buf = []
    for c in commands:
        buf.append(c)
        if len(buf) == batch:
            flush(s, buf)
            buf = []
    if buf:
        flush(s, buf)
    s.close()


def flush(s, buf):
    s.sendall(b"".join(buf))
    want = len(buf)
    data = b""
    # Every reply of these commands is a single line (+OK, :n, -ERR).
    while data.count(b"\r\n") < want:
        chunk = s.recv(1 << 16)
        if not chunk:
            sys.exit("connection closed")
        data += chunk
    if b"-" in data[:1] or b"\r\n-" in data:
        sys.exit(f"error reply: {data[:200]!r}")


def info_used(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(encode("INFO", "memory"))
    data = b""
    while True:
        data += s.recv(1 << 16)
        if data.startswith(b"$"):
            n = int(data[1:data.index(b"\r\n")])
            if len(data) >= data.index(b"\r\n") + 2 + n:
                break
    s.close()
    for line in data.decode().splitlines():
        if line.startswith("used_memory:"):
            return int(line.split(":")[1])
    sys.exit("no used_memory")


def rss(pid):
    return proc_status(pid, "VmRSS")


def zset_big():
    for i in range(0, 1_000_000, 100):
        args = ["ZADD", "zset"]
        for j in range(i, i + 100):
            args += [j, f"member:{j}"]
        yield encode(*args)


def hash_big():
    for i in range(0, 1_000_000, 100):
        args = ["HSET", "hash"]
        for j in range(i, i + 100):
            args += [f"field:{j}", f"value:{j}"]
        yield encode(*args)


def hashes_small():
    for i in range(100_000):
        args = ["HSET", f"hash:{i}"]
        for j in range(10):
            args += [f"field:{j}", f"value:{j}"]
        yield encode(*args)


def strings():
    for i in range(100_000):
        yield encode("SET", f"key:{i}", f"value:{i}")


DATASETS = {
    "zset-1M": ("1,000,000-member sorted set", zset_big),
    "hash-1M": ("1,000,000-field hash", hash_big),
    "hashes-100k": ("100,000 hashes of 10 fields", hashes_small),
    "strings-100k": ("100,000 strings", strings),
}


def measure(cmd, port, workdir, gen):
    proc = start(cmd, port, workdir)
    try:
        time.sleep(0.3)
        used0, rss0 = info_used(port), rss(proc.pid)
        send_all(port, gen())
        time.sleep(0.5)
        return info_used(port) - used0, rss(proc.pid) - rss0
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    names = a.only.split(",") if a.only else list(DATASETS)
    workdir = tempfile.mkdtemp(prefix="keel-memory-")
    mb = lambda b: f"{b / 1e6:.1f} MB"
    print("| data | keel used_memory | Redis used_memory | keel RSS | Redis RSS |")
    print("|---|---:|---:|---:|---:|")
    for name in names:
        title, gen = DATASETS[name]
        kport, rport = free_port(), free_port()
        k_used, k_rss = measure([KEEL, "--port", str(kport), "--save", ""], kport, workdir, gen)
        r_used, r_rss = measure(["redis-server", "--port", str(rport), "--save", "", "--appendonly", "no"],
                                rport, workdir, gen)
        print(f"| {title} | {mb(k_used)} | {mb(r_used)} | {mb(k_rss)} | {mb(r_rss)} |", flush=True)


if __name__ == "__main__":
    main()
