"""The checkers against histories with known anomalies: a checker that
cannot fail proves nothing."""
import checker
from topology import TOPOLOGIES
from workload import Op


class FakeTopology:
    def __init__(self, loss_window=0.0):
        self.loss_window = loss_window


def append(value, key, invoke, complete, outcome="ok", waited=None, fsynced=None):
    op = Op(0, "append", key, value)
    op.invoke, op.complete, op.outcome, op.waited = invoke, complete, outcome, waited
    op.fsynced = fsynced
    return op


def read(key, values, invoke, complete):
    op = Op(0, "read", key)
    op.invoke, op.complete, op.outcome, op.read = invoke, complete, "ok", values
    return op


def incr(invoke, complete, outcome="ok"):
    op = Op(0, "incr", "counter")
    op.invoke, op.complete, op.outcome = invoke, complete, outcome
    return op


def kinds(anomalies):
    return sorted({a.split(":")[0] for a in anomalies})


def test_a_clean_history_passes():
    h = [append("a", "k", 0, 1), append("b", "k", 2, 3), read("k", ["a", "b"], 4, 5),
         append("c", "k", 6, 7, outcome="info"), incr(0, 1)]
    assert checker.check(h, {"k": ["a", "b"], "counter": 1}, FakeTopology(), checker.Events()) == []


def test_each_anomaly_is_found():
    h = [append("a", "k", 0, 1), append("b", "k", 2, 3), append("c", "k", 4, 5, waited=1),
         append("d", "k", 6, 7, outcome="fail"), read("k", ["a"], 8, 9), incr(0, 1), incr(2, 3)]
    final = {"k": ["b", "a", "a", "d", "zz"], "counter": 1}
    found = kinds(checker.check(h, final, FakeTopology(), checker.Events(), [("r1", {"k": ["b"]})]))
    assert found == ["counter", "diverged", "duplicate", "lost-waited", "order", "phantom", "read-order",
                     "stale-read"]


def test_losses_the_promise_allows():
    h = [append("a", "k", 0, 1), append("b", "k", 10, 11), append("c", "k", 10, 11, waited=1),
         read("k", ["a", "b"], 10.5, 10.6)]
    events = checker.Events()
    events.kills.append(12.0)
    # everysec: "b" acknowledged within the window before the kill may go.
    assert kinds(checker.check(h, {"k": ["a", "c"]}, FakeTopology(3.0), events)) == []
    # ... but not one WAITAOF reported fsynced.
    h2 = h + [append("e", "k", 10, 11, fsynced=1)]
    assert kinds(checker.check(h2, {"k": ["a", "c"]}, FakeTopology(3.0), events)) == ["lost-fsynced"]
    # always: nothing acknowledged may go.
    assert kinds(checker.check(h, {"k": ["a", "c"]}, FakeTopology(0.0), events)) == ["lost", "lost-read"]
    # A failover may take what no replica confirmed, never what WAIT did.
    events = checker.Events()
    events.failovers.append(12.0)
    assert kinds(checker.check(h, {"k": ["a"]}, FakeTopology(), events)) == ["lost-waited"]


def test_every_topology_names_its_faults():
    from nemesis import FAULTS
    for make in TOPOLOGIES.values():
        topology = make()
        try:
            assert set(topology.faults()) <= set(FAULTS)
        finally:
            topology.close()


def test_the_register_checker_tells_linearizable_from_not():
    from linearizable import linearizable
    # Sequential: write 1, read 1, write 2, read 2.
    assert linearizable([(0, 1, "write", 1), (2, 3, "read", 1), (4, 5, "write", 2), (6, 7, "read", 2)])
    # A read concurrent with a write may see either value.
    assert linearizable([(0, 1, "write", 1), (2, 5, "write", 2), (3, 4, "read", 1), (3.5, 4.5, "read", 2)])
    # Stale: the read starts after write 2 completed but sees 1.
    assert not linearizable([(0, 1, "write", 1), (2, 3, "write", 2), (4, 5, "read", 1)])
    # Two reads that disagree on the order of two writes.
    assert not linearizable([(0, 10, "write", 1), (0, 10, "write", 2), (1, 2, "read", 1), (3, 4, "read", 2),
                             (5, 6, "read", 1)])
    # A write with no reply may take effect late, or never.
    assert linearizable([(0, None, "write", 1), (2, 3, "read", None), (4, 5, "read", 1)])
    assert linearizable([(0, None, "write", 1), (2, 3, "read", None)])
    # A read of a value nobody wrote.
    assert not linearizable([(0, 1, "write", 1), (2, 3, "read", 7)])
