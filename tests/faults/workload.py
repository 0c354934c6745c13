"""The workload: clients appending unique values to lists (RPUSH), reading
them back (LRANGE), incrementing a counter (INCR), and writing and reading
a few registers (SET/GET), against whichever node is the primary now. Every operation is recorded with its invocation
and completion times and its outcome:

- "ok": the server answered it;
- "fail": the server refused it (an error reply: it did not happen);
- "info": no answer (a timeout or a dropped connection): it may or may
  not have happened.

Under a replicated topology, some appends are followed by `WAIT 1`; the
number of replicas it reports is recorded with the append. Where the log
may lose a window of acknowledged writes (`appendfsync everysec`), some
appends are followed by `WAITAOF 1 0 100`; whether it reports the append
fsynced is recorded with it.
"""
import random
import threading
import time

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

KEYS = 4
# Registers (SET/GET), checked for linearizability.
REGISTERS = 3
# A key is retired after this many appends (LRANGE stays cheap).
KEY_LIMIT = 400
PAD = "p" * 48


class Op:
    __slots__ = ("process", "f", "key", "value", "invoke", "complete", "outcome", "read", "waited",
                 "fsynced")

    def __init__(self, process, f, key, value=None):
        self.process = process
        self.f = f
        self.key = key
        self.value = value
        self.invoke = time.monotonic()
        self.complete = None
        self.outcome = None
        self.read = None
        self.waited = None
        self.fsynced = None


def perform(op, call):
    """Runs `call` for `op` and records its outcome; returns its reply and
    whether the connection is still usable."""
    try:
        reply = call()
        op.outcome = "ok"
        return reply, True
    except redis.ResponseError:
        op.outcome = "fail"
        return None, True
    except (redis.ConnectionError, redis.TimeoutError, OSError):
        op.outcome = "info"
        return None, False


class Workload:
    def __init__(self, topology, clients=4, seed=0, wait_share=0.5):
        self.topology = topology
        self.clients = clients
        self.seed = seed
        self.wait_share = wait_share if topology.replicated else 0.0
        self.fsync_wait_share = 0.3 if topology.loss_window > 0 else 0.0
        self.history = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = []
        self.counter = 0
        self.key_gen = [0] * KEYS
        self.appends = [0] * KEYS
        # A topology may put every key in one slot (the cluster's hash tag).
        self.tag = getattr(topology, "key_tag", "")

    def key_for(self, rng):
        slot = rng.randrange(KEYS)
        with self.lock:
            if self.appends[slot] >= KEY_LIMIT:
                self.key_gen[slot] += 1
                self.appends[slot] = 0
            self.appends[slot] += 1
            return f"list:{slot}:{self.key_gen[slot]}"

    def record(self, op):
        op.complete = time.monotonic()
        with self.lock:
            self.history.append(op)

    def start(self):
        for p in range(self.clients):
            t = threading.Thread(target=self.run_client, args=(p,), daemon=True, name=f"client-{p}")
            t.start()
            self.threads.append(t)

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join()

    def run_client(self, process):
        rng = random.Random(self.seed * 1000 + process)
        conn, port = None, None
        n = 0
        while not self.stop.is_set():
            primary = self.topology.primary
            if conn is None or port != primary.port:
                conn = self.connect(primary)
                port = primary.port
                if conn is None:
                    time.sleep(0.05)
                    continue
            roll = rng.random()
            if roll < 0.15:
                op = Op(process, "read", self.read_key(rng))
                op.read, ok = perform(op, lambda: conn.lrange(self.tag + op.key, 0, -1))
            elif roll < 0.25:
                op = Op(process, "incr", "counter")
                _, ok = perform(op, lambda: conn.incr(self.tag + "counter"))
            elif roll < 0.30:
                n += 1
                op = Op(process, "write", f"reg:{rng.randrange(REGISTERS)}", f"{process}-{n}")
                _, ok = perform(op, lambda: conn.set(self.tag + op.key, op.value))
            elif roll < 0.35:
                op = Op(process, "get", f"reg:{rng.randrange(REGISTERS)}")
                op.read, ok = perform(op, lambda: conn.get(self.tag + op.key))
            else:
                n += 1
                op = Op(process, "append", self.key_for(rng), f"{process}-{n}-{PAD}")
                _, ok = perform(op, lambda: conn.rpush(self.tag + op.key, op.value))
                if op.outcome == "ok" and rng.random() < self.wait_share:
                    try:
                        op.waited = conn.execute_command("WAIT", 1, 100)
                    except (redis.ResponseError, redis.ConnectionError, redis.TimeoutError, OSError):
                        ok = False
                elif op.outcome == "ok" and rng.random() < self.fsync_wait_share:
                    try:
                        op.fsynced = conn.execute_command("WAITAOF", 1, 0, 100)[0]
                    except (redis.ResponseError, redis.ConnectionError, redis.TimeoutError, OSError):
                        ok = False
            if not ok:
                conn = None
            self.record(op)
            if op.outcome != "ok":
                # A node that is down or loading: do not spin.
                time.sleep(0.01)

    @staticmethod
    def connect(node):
        try:
            return redis.Redis(host=node.ip, port=node.port, socket_timeout=1,
                               socket_connect_timeout=1, decode_responses=True,
                               single_connection_client=True,
                               # A retried RPUSH would append twice: the
                               # history must see each attempt once.
                               retry=Retry(NoBackoff(), 0), retry_on_error=[])
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            return None

    def read_key(self, rng):
        slot = rng.randrange(KEYS)
        with self.lock:
            return f"list:{slot}:{self.key_gen[slot]}"
