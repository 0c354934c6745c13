"""Paths to lost or stalled replication that reading the code suggested,
each tried against keel and redis-server."""
import pytest

from nodes import wait_until
from test_reproductions import KINDS, fill, nodes  # noqa: F401 (a fixture)
from topology import replica_caught_up


@pytest.mark.parametrize("kind", KINDS)
def test_a_replica_that_stopped_reading_is_disconnected_after_repl_timeout(nodes, kind):  # noqa: F811
    primary = nodes(kind, "--repl-timeout", "2").start()
    replica = nodes(kind, "--replicaof", "127.0.0.1", primary.port).start()
    primary.client().set("first", 1)
    replica_caught_up(primary, replica)
    replica.pause()
    try:
        fill(primary, 20_000, 1000)
        # Not listed online for ever, and not counted by WAIT.
        wait_until("the primary to drop the silent replica",
                   lambda: primary.info()["connected_slaves"] == 0, timeout=120)
        assert primary.client().execute_command("WAIT", 1, 10) == 0
    finally:
        replica.resume()
    replica_caught_up(primary, replica)
    assert replica.client().dbsize() == primary.client().dbsize()


@pytest.mark.parametrize("kind", KINDS)
def test_writes_on_a_writable_replica_stay_out_of_its_stream(nodes, kind):  # noqa: F811
    primary = nodes(kind).start()
    replica = nodes(kind, "--replica-read-only", "no", "--replicaof", "127.0.0.1", primary.port).start()
    chained = nodes(kind, "--replicaof", "127.0.0.1", replica.port).start()
    primary.client().set("from-primary", 1)
    replica_caught_up(primary, replica)
    replica_caught_up(replica, chained)
    replica.client().set("local", "x" * 1000)
    primary.client().set("again", 2)
    replica_caught_up(primary, replica)
    replica_caught_up(replica, chained)
    # The replica acknowledges and bids with its primary's offset; what a
    # chain below it gets is the primary's stream, not the local write.
    assert replica.info()["master_repl_offset"] == primary.info()["master_repl_offset"]
    assert chained.client().get("local") is None
    assert chained.client().get("again") == "2"


def server_ms(node):
    secs, micros = node.client().time()
    return secs * 1000 + micros // 1000


@pytest.mark.parametrize("kind", KINDS)
def test_client_pause_write_keeps_the_stream_still(nodes, kind):  # noqa: F811
    """A failover pauses writes and waits for a replica to reach the
    primary's offset: expiry, eviction and PINGs must not move it."""
    primary = nodes(kind, "--repl-ping-replica-period", "1", "--hz", "100").start()
    replica = nodes(kind, "--replicaof", "127.0.0.1", primary.port).start()
    c = primary.client()
    c.set("first", 1)
    replica_caught_up(primary, replica)
    expired_before = primary.info("stats")["expired_keys"]
    p = c.pipeline(transaction=False)
    for i in range(200):
        p.set(f"ttl:{i}", "v", px=500)
    p.execute()
    c.execute_command("CLIENT", "PAUSE", 60_000, "WRITE")
    try:
        offset = primary.info()["master_repl_offset"]
        start = server_ms(primary)
        # Past the keys' TTL and two PING periods, by the server's clock.
        wait_until("2.5 s of the server's clock", lambda: server_ms(primary) > start + 2500, timeout=60)
        assert c.get("ttl:0") is None
        if kind == "keel":
            # Redis 7.0 still PINGs its replicas unless a failover is in
            # progress; 7.2 stops them under any pause (PAUSE_ACTION_REPLICA),
            # as keel does.
            assert primary.info()["master_repl_offset"] == offset
        assert primary.info("stats")["expired_keys"] == expired_before
    finally:
        c.execute_command("CLIENT", "UNPAUSE")
    wait_until("the keys to expire once unpaused",
               lambda: primary.info("stats")["expired_keys"] == expired_before + 200, timeout=60)
    replica_caught_up(primary, replica)
    assert replica.client().dbsize() == 1
