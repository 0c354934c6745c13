"""A linearizability checker for single registers (SET/GET), Wing & Gong's
search with Lowe's memoization, as Knossos and Porcupine do it: find an
order of the operations, each taking effect at one instant between its
invocation and its completion, in which every read returns the last value
written. Keys are checked one at a time (a register history is
linearizable iff each key's is).

An operation with no reply ("info") may take effect at any time after its
invocation, or never; a refused one never took effect and is left out.
"""
INFINITY = float("inf")


class _Entry:
    __slots__ = ("op", "id", "call", "time", "match", "prev", "next")

    def __init__(self, op, id_, call, time_):
        self.op, self.id, self.call, self.time = op, id_, call, time_
        self.match = self.prev = self.next = None


def _step(state, op):
    """(legal, next state) of applying `op` (f, value) to `state`."""
    f, value = op
    if f == "write":
        return True, value
    return value == state, state


def linearizable(ops):
    """`ops`: [(invoke, complete or None, f, value)], f "write" or "read"
    (value: what was written, or what the read returned). True or False."""
    entries = []
    for i, (invoke, complete, f, value) in enumerate(ops):
        call = _Entry((f, value), i, True, invoke)
        ret = _Entry(None, i, False, INFINITY if complete is None else complete)
        call.match = ret
        entries += [call, ret]
    # Calls before returns at the same instant: concurrent, not ordered.
    entries.sort(key=lambda e: (e.time, not e.call))
    head = _Entry(None, -1, False, 0)
    prev = head
    for e in entries:
        prev.next, e.prev = e, prev
        prev = e

    def lift(e):
        e.prev.next = e.next
        if e.next:
            e.next.prev = e.prev
        m = e.match
        m.prev.next = m.next
        if m.next:
            m.next.prev = m.prev

    def unlift(e):
        m = e.match
        m.prev.next = m
        if m.next:
            m.next.prev = m
        e.prev.next = e
        if e.next:
            e.next.prev = e

    state, linearized = None, 0
    cache = set()
    stack = []
    entry = head.next
    while head.next is not None:
        if entry.call:
            legal, new_state = _step(state, entry.op)
            if legal:
                new_lin = linearized | (1 << entry.id)
                if (new_lin, new_state) not in cache:
                    cache.add((new_lin, new_state))
                    stack.append((entry, state))
                    state, linearized = new_state, new_lin
                    lift(entry)
                    entry = head.next
                    continue
            entry = entry.next
        else:
            if not stack:
                return False
            entry, state = stack.pop()
            linearized &= ~(1 << entry.id)
            unlift(entry)
            entry = entry.next
    return True


def check_registers(history):
    """Anomalies of the register operations in `history` (Op objects with
    f "write"/"get" on keys reg:*)."""
    by_key = {}
    for op in history:
        if op.f in ("write", "get") and op.outcome in ("ok", "info"):
            if op.f == "get" and op.outcome != "ok":
                continue
            f = "write" if op.f == "write" else "read"
            value = op.value if f == "write" else op.read
            complete = op.complete if op.outcome == "ok" else None
            by_key.setdefault(op.key, []).append((op.invoke, complete, f, value))
    anomalies = []
    for key, ops in sorted(by_key.items()):
        if not linearizable(ops):
            anomalies.append(f"nonlinearizable: the {len(ops)} operations on {key} have no legal order")
    return anomalies
