"""Runs the fault suite: a topology, a workload, a nemesis from a seed, and
the checkers over the history. Prints the seed first: the same seed
replays the same schedule of faults.

    python3 tests/faults/run.py --topology replicas --seconds 60 --seed 7
    python3 tests/faults/run.py --minutes 60 --topology single-always   # runs of --seconds, seeds counting up

Exits non-zero when any run found an anomaly, a crash, or a node that did
not answer at the end. scripts/faults.sh wraps it with a release build.
"""
import argparse
import os
import random
import signal
import sys
import time

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checker  # noqa: E402
import nemesis  # noqa: E402
from topology import TOPOLOGIES  # noqa: E402
from workload import REGISTERS, Op, Workload  # noqa: E402


class Result:
    def __init__(self, topology, seed):
        self.topology, self.seed = topology, seed
        self.anomalies, self.crashed = [], []
        self.counts = {}
        self.faults = 0

    @property
    def ok(self):
        return not self.anomalies and not self.crashed

    def summary(self):
        counts = " ".join(f"{k}={v}" for k, v in sorted(self.counts.items()))
        verdict = "ok" if self.ok else f"{len(self.anomalies)} anomalies, {len(self.crashed)} crashes"
        return f"{self.topology} seed={self.seed} faults={self.faults} {counts}: {verdict}"


def read_state(node, keys, tag=""):
    c = node.client(timeout=30)
    p = c.pipeline(transaction=False)
    if tag:
        # Cluster mode: a replica serves reads to READONLY clients.
        p.execute_command("READONLY")
    for k in keys:
        p.lrange(tag + k, 0, -1)
    p.get(tag + "counter")
    for i in range(REGISTERS):
        p.get(f"{tag}reg:{i}")
    values = p.execute()[1 if tag else 0:]
    state = dict(zip(keys, values[:len(keys)]))
    state["counter"] = int(values[len(keys)] or 0)
    for i, v in enumerate(values[len(keys) + 1:]):
        state[f"reg:{i}"] = v
    return state


def run_once(name, seed, seconds, log=print, keep=False):
    result = Result(name, seed)
    log(f"--- {name} seed={seed} seconds={seconds}")
    topology = TOPOLOGIES[name]()
    try:
        topology.start()
        events = checker.Events()
        steps = nemesis.schedule(seed, topology, seconds)
        result.faults = len(steps)
        workload = Workload(topology, seed=seed)
        workload.start()
        deadline = time.monotonic() + seconds
        ctx = nemesis.Context(topology, events, lambda m: log(f"  [{time.monotonic() - start:6.1f}s] {m}"))
        start = time.monotonic()
        result.crashed = nemesis.run(ctx, steps, deadline)
        # A quiet second: the workload ends on a healthy topology.
        time.sleep(1)
        workload.finish()
        for n in topology.nodes:
            n.resume()
            if not n.alive():
                n.start()
        for link in getattr(topology, "links", {}).values():
            link.heal()
        if hasattr(topology, "etcd"):
            topology.etcd.heal()
        # A cluster that does not converge still has its history checked
        # against what its primary holds (not its replicas, which may be
        # behind): whether it lost a write matters more than that it is slow.
        unsettled = None
        try:
            topology.settle()
        except AssertionError as e:
            unsettled = f"run failed: {e}"
            result.anomalies.append(unsettled)
        history = workload.history
        for op in history:
            result.counts[f"{op.f}:{op.outcome}"] = result.counts.get(f"{op.f}:{op.outcome}", 0) + 1
        keys = sorted({op.key for op in history if op.f == "append"})
        # Failovers the topology made on its own (the cluster's).
        events.failovers += getattr(topology, "failovers_seen", [])
        if hasattr(topology, "failovers_seen"):
            result.counts["failovers-seen"] = len(topology.failovers_seen)
        tag = getattr(topology, "key_tag", "")
        finals = read_state(topology.primary, keys, tag)
        replica_finals = [] if unsettled else [(r.name, read_state(r, keys, tag)) for r in topology.replicas()]
        # The final values are reads too: the registers' last word.
        for i in range(REGISTERS):
            final_read = Op(-1, "get", f"reg:{i}")
            final_read.read, final_read.outcome = finals[f"reg:{i}"], "ok"
            final_read.complete = time.monotonic()
            history.append(final_read)
        result.anomalies += checker.check(history, finals, topology, events, replica_finals)
        result.counts["registers-checked"] = int(events.registers_checkable(topology))
        result.counts["kills"] = len(events.kills)
        fsynced = sum(1 for op in history if op.f == "append" and op.fsynced)
        if fsynced:
            result.counts["append:fsynced"] = fsynced
        for n in topology.nodes:
            if not n.client().ping():
                result.anomalies.append(f"{n.name} does not answer at the end")
        if hasattr(topology, "final_anomalies"):
            result.anomalies += topology.final_anomalies()
    except AssertionError as e:
        result.anomalies.append(f"run failed: {e}")
    except (redis.RedisError, OSError) as e:
        # (A cluster that did not settle may not answer the checks' reads.)
        result.anomalies.append(f"run failed: {e!r}")
    finally:
        topology.close(keep=keep and not result.ok)
        if keep and not result.ok:
            log("  node directories kept: " + " ".join(n.dir for n in topology.nodes))
    for a in result.anomalies[:20]:
        log(f"  ANOMALY {a}")
    for c in result.crashed:
        log(f"  CRASH {c}")
    log(result.summary())
    return result


def main():
    # SIGTERM ends the pass as Ctrl-C does: through the topologies' cleanup
    # (processes, network namespaces), not around it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topology", action="append", choices=sorted(TOPOLOGIES),
                    help="repeatable; default: all")
    ap.add_argument("--seed", type=int, help="first seed (default: random)")
    ap.add_argument("--seconds", type=float, default=60, help="length of one run")
    ap.add_argument("--minutes", type=float, help="run each topology this long, one seed after another")
    ap.add_argument("--keep", action="store_true", help="keep the data directories of a failed run")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    print(f"seed {seed}", flush=True)
    topologies = args.topology or sorted(TOPOLOGIES)
    results = []

    def log(m):
        print(m, flush=True)

    for name in topologies:
        s = seed
        until = time.monotonic() + (args.minutes or 0) * 60
        while True:
            results.append(run_once(name, s, args.seconds, log, args.keep))
            s += 1
            if args.minutes is None or time.monotonic() >= until:
                break
    print("=== summary")
    for r in results:
        print(r.summary())
    sys.exit(0 if all(r.ok for r in results) else 1)


if __name__ == "__main__":
    main()
