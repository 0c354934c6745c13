"""Topologies the suite runs on, and the waits that tell a topology has
settled (replicas caught up, links up)."""
from nodes import wait_until


def replica_caught_up(primary, replica, timeout=120):
    """Waits until `replica`'s link is up and it has applied everything its
    primary has written so far."""
    target = primary.info()["master_repl_offset"]

    def probe():
        info = replica.info()
        return (info.get("master_link_status") == "up"
                and info.get("master_port") == primary.port
                and info.get("slave_repl_offset", -1) >= target)

    wait_until(f"{replica.name} to reach offset {target} of {primary.name}", probe, timeout=timeout)
