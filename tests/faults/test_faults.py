"""A short pass of the fault suite with fixed seeds, one run per topology
(CI's replay; scripts/faults.sh runs the long randomized passes). Each
seed's schedule holds the faults that topology's promise is about: kill -9
of the node under `always`/`everysec`, a failover and a cut link with
replicas, partitions, reshards and both kinds of failover in the cluster."""
import pytest

from run import run_once

SHORT = [
    ("single-always", 2),
    ("single-everysec", 2),
    # Every value moved to the disk tier, then kill -9, another spill.
    ("single-tiered", 2),
    ("replicas", 7),
    ("replicas-mixed", 7),
    ("replicas-maxmemory", 7),
    # A replica's link cut, a reshard with its source primary killed in
    # the middle, a node cut from the clients, a node isolated from etcd
    # and the other nodes, a keel-ctl failover.
    ("cluster", 1710),
    # A primary isolated, reshards (two with a kill in the middle), kill -9
    # of a primary.
    ("cluster", 1148),
]


@pytest.mark.parametrize("topology,seed", SHORT)
def test_a_short_fixed_seed_pass_holds_the_promise(topology, seed):
    lines = []
    result = run_once(topology, seed, 20, log=lines.append)
    report = "\n".join(lines)
    assert result.faults > 0, report
    assert sum(n for k, n in result.counts.items() if k == "append:ok") > 0, report
    assert result.ok, report
