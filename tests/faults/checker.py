"""Checkers over a recorded history and the final state, as Elle's
list-append checker reasons (Jepsen): every value is unique, so each list
tells which appends took effect and in what order.

For every list key, against its final value F:
- duplicate: a value appears twice in F;
- phantom: a value in F (or in a read) that no client appended;
- lost: an acknowledged append missing from F, unless the topology's
  promise allows it (a crash within the fsync window, or a failover of an
  append no replica confirmed);
- lost-waited: an append that `WAIT 1` confirmed, missing from F;
- lost-fsynced: an append that `WAITAOF 1 0` reported fsynced, missing
  from F (even within `everysec`'s window);
- order: F puts b before a although a was acknowledged before b was sent;
- stale-read: a read missing an append acknowledged before the read was
  sent, or not a prefix of F (when nothing could be lost in between).
Counter: the final value of INCR's key lies between the acknowledged and
the attempted increments (less what a permitted loss may take).
Registers: linearizable per key (linearizable.py), when no loss the
promise allows happened (a lost write makes any register history
non-linearizable, by definition).
Convergence: every replica holds exactly its primary's lists.
"""
import bisect

from linearizable import check_registers


class Events:
    """What the nemesis did that may take acknowledged writes away."""

    def __init__(self):
        self.kills = []  # times the primary was killed
        self.failovers = []  # times a failover happened

    def registers_checkable(self, topology):
        """Linearizability is promised: no failover, and no kill inside a
        loss window."""
        return not self.failovers and (topology.loss_window == 0 or not self.kills)

    def loss_allowed(self, op, topology):
        """Whether losing acknowledged `op` is within the promise."""
        if op.waited or op.fsynced:
            return False
        if topology.loss_window > 0 and any(
                op.complete - topology.loss_window <= k and op.invoke <= k for k in self.kills):
            return True
        return any(f >= op.invoke for f in self.failovers)


def check(history, finals, topology, events, replica_finals=()):
    """Returns a list of anomalies (strings); empty means the run holds
    its promise. `finals`: {key: list} from the primary at the end;
    `replica_finals`: [(node name, {key: list})]."""
    anomalies = []
    appends = {}
    for op in history:
        if op.f == "append":
            appends[op.value] = op
    by_key = {}
    for op in appends.values():
        by_key.setdefault(op.key, []).append(op)

    for key, ops in sorted(by_key.items()):
        final = finals.get(key, [])
        pos = {}
        for i, v in enumerate(final):
            if v in pos:
                anomalies.append(f"duplicate: {key} holds {v} at {pos[v]} and {i}")
            else:
                pos[v] = i
            if v not in appends:
                anomalies.append(f"phantom: {key} holds {v}, never appended")
            elif appends[v].outcome == "fail":
                anomalies.append(f"phantom: {key} holds {v}, whose append was refused")
        for op in ops:
            if op.outcome != "ok" or op.value in pos:
                continue
            if op.waited:
                anomalies.append(f"lost-waited: {key} lost {op.value} (WAIT 1 answered {op.waited})")
            elif op.fsynced:
                anomalies.append(f"lost-fsynced: {key} lost {op.value} (WAITAOF reported it fsynced)")
            elif not events.loss_allowed(op, topology):
                anomalies.append(f"lost: {key} lost acknowledged {op.value}")
        # Real-time order: a value acknowledged before another was sent
        # comes first.
        latest_invoke, latest_value = float("-inf"), None
        for v in final:
            op = appends.get(v)
            if op is None:
                continue
            if op.outcome == "ok" and op.complete < latest_invoke:
                anomalies.append(f"order: {key} has {latest_value} before {v}, acknowledged before it was sent")
            if op.invoke > latest_invoke:
                latest_invoke, latest_value = op.invoke, v

    anomalies += check_reads(history, finals, appends, topology, events)
    if events.registers_checkable(topology):
        anomalies += check_registers(history)
    anomalies += check_counter(history, finals, topology, events)
    for name, lists in replica_finals:
        for key in sorted(set(lists) | set(finals)):
            if lists.get(key) != finals.get(key):
                anomalies.append(f"diverged: {name} holds {lists.get(key)!r:.80} at {key}, "
                                 f"the primary {finals.get(key)!r:.80}")
                break
    return anomalies


def check_reads(history, finals, appends, topology, events):
    anomalies = []
    acked = {}
    for op in appends.values():
        if op.outcome == "ok":
            acked.setdefault(op.key, []).append(op)
    for ops in acked.values():
        ops.sort(key=lambda o: o.complete)
    for op in history:
        if op.f != "read" or op.outcome != "ok":
            continue
        final = finals.get(op.key, [])
        seen = set()
        for v in op.read:
            if v in seen:
                anomalies.append(f"duplicate-read: {op.key} read {v} twice")
            seen.add(v)
            if v not in appends:
                anomalies.append(f"phantom-read: {op.key} read {v}, never appended")
        # Everything acknowledged before the read was sent is in it, unless
        # it was lost later as the promise allows.
        done = acked.get(op.key, [])
        before = done[:bisect.bisect_left([o.complete for o in done], op.invoke)]
        for prior in before:
            if prior.value not in seen and not (prior.value not in final
                                                and events.loss_allowed(prior, topology)):
                anomalies.append(f"stale-read: a read of {op.key} misses {prior.value}, acknowledged before it")
                break
        # What the read saw is the final list's beginning, except a tail
        # that a permitted loss took away afterwards.
        common = 0
        while common < len(op.read) and common < len(final) and op.read[common] == final[common]:
            common += 1
        for v in op.read[common:]:
            writer = appends.get(v)
            if v in final:
                anomalies.append(f"read-order: a read of {op.key} is not a prefix of its final value at {v}")
                break
            if writer is not None and not events.loss_allowed(writer, topology):
                anomalies.append(f"lost-read: {op.key} lost {v}, which a read saw")
                break
    return anomalies


def check_counter(history, finals, topology, events):
    incrs = [op for op in history if op.f == "incr"]
    ok = [op for op in incrs if op.outcome == "ok"]
    maybe = [op for op in incrs if op.outcome == "info"]
    value = finals.get("counter", 0)
    may_lose = sum(1 for op in ok if events.loss_allowed(op, topology))
    anomalies = []
    if value < len(ok) - may_lose:
        anomalies.append(f"counter: {value} after {len(ok)} acknowledged INCRs "
                         f"({may_lose} of them may be lost)")
    if value > len(ok) + len(maybe):
        anomalies.append(f"counter: {value} after at most {len(ok) + len(maybe)} INCRs")
    return anomalies
