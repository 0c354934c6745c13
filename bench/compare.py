#!/usr/bin/env python3
"""Run redis-benchmark against keel-server and redis-server side by side.

Starts both servers (same machine, same flags to the benchmark), runs every
test of `-t` separately against each, alternating which server goes first,
repeats `--runs` times, and prints a markdown table of medians: rps, p50,
p99, the keel/redis rps ratio, requests per server CPU-second (from
/proc/PID/stat utime+stime) for both, and the benchmark client's own CPU
microseconds per request against each (on a machine whose cores the client
shares with the server, the client's cost bounds the rate).

Usage: bench/compare.py [--runs 3] [--warmup N] [--spread] [--keel-args "..."] [--redis-args "..."]
                        [--label text] [--setup FILE] [--baseline BIN [--baseline-args "..."]]
                        [--keel-bench-args "..."] [--tls] -- <redis-benchmark args>

With --baseline, the other server is that keel-server binary (an earlier
build; --keel-args, or --baseline-args when given) instead of redis-server:
what a change (or a setting) costs. --keel-bench-args are benchmark options
for keel only (`--user u -a pw` against a keel that requires them).
With --tls, both servers also listen on a TLS port (certificates made with
openssl in a scratch directory, client certificates required) and the
benchmark runs over TLS against it.
Example: bench/compare.py -- -q -n 100000 -c 50 -t set,get
         bench/compare.py -- -n 100000 -r 100000 eval "return 1" 0
"""
import argparse
import resource
import os
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEEL = os.path.join(ROOT, "target", "release", "keel-server")
TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_ready(port, proc, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"server on port {port} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
                s.sendall(b"PING\r\n")
                # A server asking for a password answers too.
                if s.recv(16).startswith((b"+PONG", b"-NOAUTH")):
                    return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"server on port {port} did not start")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 (1-based) of the whole line.
    return (int(fields[11]) + int(fields[12])) / TICK


PRELOAD = ""


def server_command(kind, port, extra=()):
    """The command line of a fresh keel-server or redis-server on `port`,
    neither of them snapshotting or logging."""
    if kind == "keel":
        return [KEEL, "--port", str(port), "--save", "", *extra]
    return ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no", *extra]


def encode(*args):
    """A request in RESP."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def client_cpu_seconds():
    """CPU seconds of this script's finished children (the benchmarks)."""
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def proc_status(pid, field):
    """A /proc/PID/status memory field (VmRSS, VmHWM) in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def start(cmd, port, workdir):
    env = dict(os.environ)
    if PRELOAD:
        env["LD_PRELOAD"] = PRELOAD
    proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(port, proc)
    return proc


def split_tests(bench_args):
    """Returns (common args, list of (test name, args selecting it))."""
    args = list(bench_args)
    tests = None
    if "-t" in args:
        i = args.index("-t")
        tests = args[i + 1].split(",")
        del args[i : i + 2]
    # A custom command is what follows the options; redis-benchmark names
    # its test after the command text.
    opts_with_value = {"-h", "-p", "-s", "-a", "-u", "-c", "-n", "-d", "--dbnum", "--threads", "-k", "-r",
                       "-P", "--precision", "-l", "-I", "--user", "-x"}
    j = 0
    while j < len(args):
        if args[j] in opts_with_value:
            j += 2
        elif args[j].startswith("-"):
            j += 1
        else:
            break
    custom = args[j:]
    common = args[:j]
    if custom:
        return common, [(" ".join(custom), custom)]
    if not tests:
        sys.exit("give -t tests or a custom command")
    return common, [(t, ["-t", t]) for t in tests]


TOOL = "redis-benchmark"


def make_certs(d):
    """A CA, a server certificate for 127.0.0.1 and a client certificate
    (X.509 v3, as rustls requires), made with the openssl command."""
    def sh(*args):
        subprocess.run(args, cwd=d, check=True, capture_output=True)
    sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
       "-days", "2", "-subj", "/CN=bench CA")
    for name, ext in [("server", "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"),
                      ("client", "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")]:
        with open(os.path.join(d, f"{name}.ext"), "w") as f:
            f.write(ext)
        sh("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
           "-subj", f"/CN={name}")
        sh("openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
           "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext")


def tls_server_args(d, port):
    return ["--tls-port", str(port), "--tls-cert-file", os.path.join(d, "server.crt"),
            "--tls-key-file", os.path.join(d, "server.key"), "--tls-ca-cert-file", os.path.join(d, "ca.crt")]


def tls_bench_args(d):
    return ["--tls", "--cacert", os.path.join(d, "ca.crt"), "--cert", os.path.join(d, "client.crt"),
            "--key", os.path.join(d, "client.key")]


def run_bench(port, common, selector):
    cmd = [TOOL, "-p", str(port), "--csv"] + common + selector
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        sys.exit(f"redis-benchmark failed: {' '.join(cmd)}\n{out.stderr}")
    rows = []
    for line in out.stdout.splitlines():
        if line.startswith('"test"') or not line.startswith('"'):
            continue
        f = [x.strip('"') for x in line.split('","')]
        rows.append({"test": f[0], "rps": float(f[1]), "p50": float(f[4]), "p99": float(f[6])})
    if "ERR" in out.stdout or "rror" in out.stderr:
        sys.exit(f"errors in benchmark output:\n{out.stdout}\n{out.stderr}")
    return rows


def requests_of(common):
    n = 100000
    if "-n" in common:
        n = int(common[common.index("-n") + 1])
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keel-args", default="")
    ap.add_argument("--redis-args", default="")
    ap.add_argument("--label", default="")
    ap.add_argument("--preload", default="",
                    help="LD_PRELOAD for both servers (e.g. bench/slowfsync.so, a slow disk)")
    ap.add_argument("--tool", default="redis-benchmark",
                    help="load generator with redis-benchmark's CLI, e.g. target/release/keel-benchmark "
                         "(which also takes command sequences: MULTI ';' INCR a ';' EXEC)")
    ap.add_argument("--baseline", default="",
                    help="compare against this keel-server binary (an earlier build) instead of redis-server")
    ap.add_argument("--baseline-args", default=None,
                    help="server options of the baseline keel (default: --keel-args)")
    ap.add_argument("--keel-bench-args", default="",
                    help="benchmark options for keel only, e.g. --user app -a pw")
    ap.add_argument("--tls", action="store_true", help="benchmark over TLS (both servers)")
    ap.add_argument("--setup", default="",
                    help="file of commands (redis-cli syntax, one per line) run on both servers before "
                         "the benchmark, e.g. to fill keys it reads")
    ap.add_argument("--warmup", type=int, default=0,
                    help="unmeasured runs first (each test on each server): the keyspace a run leaves "
                         "(new keys, grown lists) then no longer differs between the measured runs")
    ap.add_argument("--spread", action="store_true",
                    help="also print every run's rps per row (the spread of repeated runs)")
    ap.add_argument("bench", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    global TOOL, PRELOAD
    TOOL = a.tool
    PRELOAD = os.path.abspath(a.preload) if a.preload else ""
    bench = a.bench[1:] if a.bench and a.bench[0] == "--" else a.bench
    common, tests = split_tests(bench)
    n = requests_of(common)
    # One directory each: with the same appendonly settings the servers
    # would otherwise share (and both append to) one log.
    workdir = tempfile.mkdtemp(prefix="keel-compare-")
    keel_dir, redis_dir = os.path.join(workdir, "keel"), os.path.join(workdir, "redis")
    os.mkdir(keel_dir)
    os.mkdir(redis_dir)
    kport, rport = free_port(), free_port()
    ktls, rtls = [], []
    bench_port = {"keel": kport, "redis": rport}
    if a.tls:
        make_certs(workdir)
        kt, rt = free_port(), free_port()
        ktls, rtls = tls_server_args(workdir, kt), tls_server_args(workdir, rt)
        bench_port = {"keel": kt, "redis": rt}
        common = tls_bench_args(workdir) + common
    keel = start([KEEL, "--port", str(kport), "--save", ""] + ktls + shlex.split(a.keel_args), kport, keel_dir)
    if a.baseline:
        base_args = a.keel_args if a.baseline_args is None else a.baseline_args
        redis = start([os.path.abspath(a.baseline), "--port", str(rport), "--save", ""]
                      + rtls + shlex.split(base_args), rport, redis_dir)
    else:
        redis = start(["redis-server", "--port", str(rport), "--save", "", "--appendonly", "no"]
                      + rtls + shlex.split(a.redis_args), rport, redis_dir)
    servers = {"redis": (redis, bench_port["redis"]), "keel": (keel, bench_port["keel"])}
    if a.setup:
        for port in (kport, rport):
            with open(a.setup, "rb") as f:
                subprocess.run(["redis-cli", "-p", str(port)], stdin=f, stdout=subprocess.DEVNULL, check=True)
    extra = {"redis": [], "keel": shlex.split(a.keel_bench_args)}
    results = {}  # (name, server) -> list of rows
    try:
        for _ in range(a.warmup):
            for name, selector in tests:
                for srv in ("redis", "keel"):
                    run_bench(servers[srv][1], extra[srv] + common, selector)
        for run in range(a.runs):
            for name, selector in tests:
                order = ["redis", "keel"] if run % 2 == 0 else ["keel", "redis"]
                for srv in order:
                    proc, port = servers[srv]
                    before = cpu_seconds(proc.pid)
                    client_before = client_cpu_seconds()
                    rows = run_bench(port, extra[srv] + common, selector)
                    cpu = cpu_seconds(proc.pid) - before
                    client_cpu = client_cpu_seconds() - client_before
                    for r in rows:
                        # Tests like LRANGE_* run several benchmarks in one
                        # selection; CPU is shared among them equally.
                        r["req_per_cpu"] = n * len(rows) / cpu if cpu > 0 else float("inf")
                        r["client_us"] = client_cpu * 1e6 / (n * len(rows))
                        results.setdefault((r["test"], srv), []).append(r)
    finally:
        for proc, _ in servers.values():
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)
    med = lambda rows, k: statistics.median(r[k] for r in rows)
    names = []
    for (t, _s) in results:
        if t not in names:
            names.append(t)
    label = a.label or " ".join(shlex.quote(x) for x in bench)
    print(f"\n`{os.path.basename(TOOL)} {label}`, median of {a.runs} runs\n")
    o = "baseline" if a.baseline else "redis"
    print(f"| test | {o} rps | keel rps | keel/{o} | {o} p50 ms | keel p50 ms | {o} p99 ms | keel p99 ms | {o} req/CPU-s | keel req/CPU-s | keel/{o} req/CPU-s | client CPU µs/req ({o} / keel) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for t in names:
        r, k = results.get((t, "redis"), []), results.get((t, "keel"), [])
        if not r or not k:
            continue
        rr, kr = med(r, "rps"), med(k, "rps")
        rc, kc = med(r, "req_per_cpu"), med(k, "req_per_cpu")
        print(f"| {t} | {rr:,.0f} | {kr:,.0f} | {kr / rr:.2f} | {med(r, 'p50'):.3f} | {med(k, 'p50'):.3f} | "
              f"{med(r, 'p99'):.3f} | {med(k, 'p99'):.3f} | {rc:,.0f} | {kc:,.0f} | {kc / rc:.2f} | "
              f"{med(r, 'client_us'):.1f} / {med(k, 'client_us'):.1f} |")
    if a.spread:
        print(f"\nEvery run's rps, in run order ({o}; keel), and max/min of each:\n")
        print(f"| test | {o} runs | keel runs | {o} max/min | keel max/min |")
        print("|---|---|---|---:|---:|")
        for t in names:
            r, k = results.get((t, "redis"), []), results.get((t, "keel"), [])
            if not r or not k:
                continue
            runs = lambda rows: " / ".join(f"{x['rps']:,.0f}" for x in rows)
            ratio = lambda rows: max(x["rps"] for x in rows) / max(min(x["rps"] for x in rows), 1e-9)
            print(f"| {t} | {runs(r)} | {runs(k)} | {ratio(r):.2f} | {ratio(k):.2f} |")


if __name__ == "__main__":
    main()
