"""The nemesis: a schedule of faults drawn from a seed, then run against a
topology while the workload runs. The same seed gives the same schedule
(faults, targets, durations, gaps); what the clients do in between varies
with timing, as in any Jepsen test.

A fault is a name in `FAULTS`: a function that injects it, holds it for
its duration and heals it. Adding one is a few lines here and its name in
the topology's `faults()`.
"""
import random
import time

from nodes import set_disk


class Step:
    def __init__(self, fault, target, hold, gap):
        self.fault, self.target, self.hold, self.gap = fault, target, hold, gap

    def __repr__(self):
        return f"{self.fault}(node {self.target}, {self.hold:.1f}s) then {self.gap:.1f}s"


def schedule(seed, topology, seconds):
    """The faults of a run of `seconds`, from `seed`."""
    rng = random.Random(seed)
    steps, at = [], 1.0
    faults = topology.faults()
    while at < seconds:
        fault = rng.choice(faults)
        target = rng.randrange(len(topology.nodes))
        hold = rng.uniform(0.5, 6.0)
        gap = rng.uniform(0.5, 3.0)
        steps.append(Step(fault, target, hold, gap))
        at += hold + gap
    return steps


def kill(ctx, node, hold):
    """kill -9, down for `hold` seconds, started again on its directory."""
    if node is ctx.topology.primary:
        ctx.events.kills.append(time.monotonic())
    node.kill()
    time.sleep(hold)
    node.start()


def pause(ctx, node, hold):
    """SIGSTOP for `hold` seconds (longer than repl-timeout at times)."""
    node.pause()
    time.sleep(hold)
    node.resume()


def partition(ctx, node, hold):
    """The replica's link to its primary cut (both ways) for `hold`."""
    link = ctx.topology.links.get(node.name)
    if link is None or node is ctx.topology.primary:
        return
    link.cut()
    time.sleep(hold)
    link.heal()


def etcd_member(ctx, node):
    etcd = ctx.topology.etcd
    return etcd, ctx.topology.nodes.index(node) % len(etcd.names)


def etcd_kill(ctx, node, hold):
    """kill -9 of an etcd member (the target's index among them), started
    again after `hold`."""
    etcd, i = etcd_member(ctx, node)
    etcd.kill(i)
    time.sleep(hold)
    etcd.start(i)


def etcd_pause(ctx, node, hold):
    """SIGSTOP of an etcd member for `hold` (a stalled member, or the
    leader: an election)."""
    etcd, i = etcd_member(ctx, node)
    etcd.pause(i)
    time.sleep(hold)
    etcd.resume(i)


def cut(what):
    """A partition of the node's links (cluster.Cluster.cut) for `hold`."""

    def fault(ctx, node, hold):
        ips = ctx.topology.cut(node, what)
        ctx.log(f"  cut from {' '.join(ips) or 'nothing'}")
        try:
            time.sleep(hold)
        finally:
            ctx.topology.heal(node)

    return fault


def membership(ctx, node, hold):
    """keel-ctl add-node or del-node of the cluster's spare node."""
    ctx.topology.membership(ctx.log)
    time.sleep(hold)


def ctl_failover(ctx, node, hold):
    """keel-ctl failover of the workload's shard (cluster)."""
    ctx.topology.manual_failover(ctx.log)
    time.sleep(hold)


def reshard(ctx, node, hold):
    """keel-ctl reshard of the workload's slot to another shard (cluster)."""
    ctx.topology.reshard(ctx.log)
    time.sleep(hold)


def reshard_kill(ctx, node, hold):
    """keel-ctl reshard with kill -9 of the source primary in the middle
    (cluster); the delay comes from the hold, so the seed fixes it."""
    ctx.events.kills.append(time.monotonic())
    ctx.topology.reshard_under_kill(ctx.log, (hold % 1.0) * 0.05, hold)


def bgrewriteaof(ctx, node, hold):
    node.client().execute_command("BGREWRITEAOF")
    time.sleep(hold)


def bgsave(ctx, node, hold):
    node.client().execute_command("BGSAVE")
    time.sleep(hold)


def spill(ctx, node, hold):
    """DEBUG SPILL: every value of the node to its disk tier (tiered
    topologies), twice over the hold."""
    for _ in range(2):
        node.client().execute_command("DEBUG", "SPILL")
        time.sleep(hold / 2)


def maxmemory(ctx, node, hold):
    """CONFIG SET maxmemory far below the data on a replica."""
    if node is ctx.topology.primary:
        return
    c = node.client()
    before = c.config_get("maxmemory")["maxmemory"]
    c.config_set("maxmemory", "1mb")
    time.sleep(hold)
    c.config_set("maxmemory", before)


def disk(mode):
    """The node's log disk fails or slows for `hold` (keel nodes: the
    LD_PRELOAD shim of nodes.disk_shim; redis-server exits on a failed
    fsync under `always` by design, so it is spared)."""

    def fault(ctx, node, hold):
        if not node.env:
            return
        primary = node is ctx.topology.primary
        set_disk(node, mode)
        try:
            time.sleep(hold)
        finally:
            set_disk(node, None)
        if mode == "f" and node.crashed() and "Can't persist append only file" in node.tail(5):
            # Under `always` a failed fsync ends the process, as Redis does
            # (the page cache's state is unknown after it): a supervisor
            # starts it again, as here. Like a kill -9 for the promise.
            ctx.log(f"  {node.name} exited on the failed fsync, as designed; started again")
            if primary:
                ctx.events.kills.append(time.monotonic())
            node.start()

    return fault


def failover(ctx, node, hold):
    if ctx.topology.failover(ctx.log):
        ctx.events.failovers.append(time.monotonic())
    time.sleep(hold)


FAULTS = {
    "kill": kill,
    "pause": pause,
    "partition": partition,
    "bgrewriteaof": bgrewriteaof,
    "bgsave": bgsave,
    "maxmemory": maxmemory,
    "spill": spill,
    "failover": failover,
    "etcd-kill": etcd_kill,
    "etcd-pause": etcd_pause,
    "ctl-failover": ctl_failover,
    "reshard": reshard,
    "reshard-kill": reshard_kill,
    "cut-etcd": cut("etcd"),
    "cut-link": cut("link"),
    "cut-clients": cut("clients"),
    "isolate": cut("isolate"),
    "membership": membership,
    "disk-full": disk("w"),
    "fsync-error": disk("f"),
    "slow-fsync": disk("s"),
}


class Context:
    def __init__(self, topology, events, log):
        self.topology, self.events, self.log = topology, events, log


def run(ctx, steps, deadline):
    """Runs `steps` in order until `deadline` (monotonic); returns the
    nodes that crashed (ended without the nemesis killing them)."""
    import redis

    crashed = []
    for step in steps:
        if time.monotonic() >= deadline:
            break
        node = ctx.topology.nodes[step.target]
        ctx.log(f"{step.fault} {node.name}{' (primary)' if node is ctx.topology.primary else ''} for {step.hold:.1f}s")
        try:
            FAULTS[step.fault](ctx, node, step.hold)
        except redis.ResponseError as e:
            # BGSAVE while one runs, and the like: refused, not a fault.
            ctx.log(f"  {step.fault} refused: {e}")
        except (redis.ConnectionError, redis.TimeoutError) as e:
            ctx.log(f"  {step.fault}: {e}")
        for n in ctx.topology.nodes:
            if n.crashed():
                crashed.append(f"{n.name} exited with {n.proc.returncode}: {n.tail(10)}")
                n.start()
        time.sleep(step.gap)
    return crashed
