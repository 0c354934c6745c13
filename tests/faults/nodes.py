"""Real server processes for the fault suite: keel-server or redis-server,
each in a scratch directory, started, killed (SIGKILL), paused (SIGSTOP),
resumed and restarted on the same port and directory.

Nothing here knows a workload or a checker: a topology is a list of nodes
and of links (proxies, see proxy.py) between them.
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KEEL = os.path.abspath(os.environ.get("KEEL_SERVER", os.path.join(ROOT, "target", "debug", "keel-server")))
REDIS = os.environ.get("REDIS_SERVER", shutil.which("redis-server") or "redis-server")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_until(what, probe, timeout=60.0, step=0.02):
    """Polls `probe` until it returns a true value; fails after `timeout`
    seconds (a guard against a hang, never a pass condition)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            got = probe()
            if got:
                return got
        except (redis.RedisError, OSError) as e:
            last = e
        time.sleep(step)
    raise AssertionError(f"timed out waiting for {what} (last error: {last})")


class Node:
    """One server process. `kind` is "keel" or "redis"; `args` are
    redis.conf directives as command-line pairs (["--appendonly", "yes"])."""

    def __init__(self, kind, args=(), name=None, scratch=None, env=None, host=None):
        self.kind = kind
        # A netns.Host the process runs in, or None: the machine's loopback.
        self.host = host
        self.ip = host.ip if host else "127.0.0.1"
        self.env = env
        self.args = list(args)
        # Arguments of the node's current role (`--replicaof ...`), kept
        # apart so a restart comes back in the role it had.
        self.role_args = []
        self.port = free_port()
        self.name = name or f"{kind}-{self.port}"
        self.dir = tempfile.mkdtemp(prefix=f"keel-faults-{self.name}-", dir=scratch)
        self.proc = None
        self.paused = False
        self.log = os.path.join(self.dir, "server.log")

    def command_line(self):
        binary = KEEL if self.kind == "keel" else REDIS
        prefix = self.host.prefix if self.host else []
        base = prefix + [binary, "--port", str(self.port), "--bind", self.ip, "--dir", self.dir]
        if self.kind == "keel":
            base += ["--threads", "2"]
        else:
            base += ["--daemonize", "no", "--save", "", "--protected-mode", "no"]
        return base + self.args + self.role_args

    def start(self):
        assert self.proc is None or self.proc.poll() is not None
        with open(self.log, "ab") as log:
            env = dict(os.environ, **self.env) if self.env else None
            self.proc = subprocess.Popen(self.command_line(), stdout=log, stderr=log, cwd=self.dir, env=env)
        self.paused = False
        wait_until(f"{self.name} to answer PING", self._answers, timeout=120)
        return self

    def _answers(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"{self.name} exited with {self.proc.returncode}: {self.tail()}")
        try:
            return self.client(timeout=1).ping()
        except redis.BusyLoadingError:
            return False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def client(self, timeout=5):
        return redis.Redis(host=self.ip, port=self.port, socket_timeout=timeout,
                           socket_connect_timeout=timeout, decode_responses=True)

    def kill(self):
        """SIGKILL: no shutdown, no final save."""
        if self.alive():
            if self.paused:
                os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()
        self.paused = False

    def pause(self):
        if self.alive() and not self.paused:
            os.kill(self.proc.pid, signal.SIGSTOP)
            self.paused = True

    def resume(self):
        if self.alive() and self.paused:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.paused = False

    def shutdown(self):
        """SHUTDOWN (a clean stop); a crash in it shows as a non-zero exit."""
        self.resume()
        if not self.alive():
            return None
        try:
            self.client().execute_command("SHUTDOWN")
        except redis.ConnectionError:
            pass
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"{self.name} did not stop on SHUTDOWN")

    def wipe(self):
        """Empties the data directory (a node replaced with a new disk)."""
        assert not self.alive()
        for entry in os.listdir(self.dir):
            if entry == "server.log":
                continue
            path = os.path.join(self.dir, entry)
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)

    def info(self, section="replication"):
        return self.client().info(section)

    def tail(self, lines=30):
        try:
            with open(self.log, "rb") as f:
                return b"".join(f.readlines()[-lines:]).decode(errors="replace")
        except OSError:
            return ""

    def crashed(self):
        """A process that ended without being told to (a crash)."""
        return self.proc is not None and self.proc.poll() is not None

    def destroy(self, keep=False):
        self.kill()
        if not keep:
            shutil.rmtree(self.dir, ignore_errors=True)


_SHIM = None


def disk_shim():
    """tests/it/faildisk.c built once per run: an LD_PRELOAD shim that makes
    the log's writes fail (disk full), its fsyncs fail or slow, while a
    control file says so."""
    global _SHIM
    if _SHIM is None:
        out = os.path.join(tempfile.mkdtemp(prefix="keel-faults-shim-"), "faildisk.so")
        src = os.path.join(ROOT, "crates", "server", "tests", "it", "faildisk.c")
        subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", out, src, "-ldl"], check=True)
        _SHIM = out
    return _SHIM


def keel_with_disk_faults(args, name, scratch=None, host=None):
    """A keel node whose log's disk the nemesis can fail (`set_disk`)."""
    node = Node("keel", args, name=name, scratch=scratch, host=host)
    node.env = {"LD_PRELOAD": disk_shim(), "FAILDISK_CONTROL": os.path.join(node.dir, "disk-fault")}
    return node


def set_disk(node, mode):
    """'w': writes fail (ENOSPC), 'f': fsyncs fail (EIO), 's': fsyncs slow;
    None: the disk is healthy again."""
    path = node.env["FAILDISK_CONTROL"]
    if mode is None:
        if os.path.exists(path):
            os.remove(path)
    else:
        with open(path, "w") as f:
            f.write(mode)


def redis_binary_available():
    return shutil.which(REDIS) is not None or os.path.exists(REDIS)
