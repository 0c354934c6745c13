"""A private network for the cluster topology: each process (a keel node,
an etcd member) runs in its own network namespace with its own address on
a bridge; the test's clients reach them from the host's namespace through
the bridge. A cut is a partition as a switch failure makes it: nftables in
the node's namespace drops every packet to and from the chosen addresses,
so connections hang instead of being refused, until the cut heals.

Needs root, iproute2 and nftables (scripts/test.sh installs the last two).
"""
import atexit
import os
import subprocess


def sh(*args, check=True):
    r = subprocess.run(args, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(args)}: {r.stderr.strip()}")
    return r


# Each namespace's filter: packets to or from an address in the set `cut`
# are dropped, both ways.
RULES = """
table inet keelcut {
    set cut { type ipv4_addr; }
    chain input { type filter hook input priority 0; ip saddr @cut drop; }
    chain output { type filter hook output priority 0; ip daddr @cut drop; }
}
"""


class Host:
    """One namespace: `ip` is its address, `prefix` the command prefix that
    runs a process inside it."""

    def __init__(self, network, name, ip):
        self.network, self.name, self.ip = network, name, ip
        self.netns = f"{network.tag}-{name}"
        self.prefix = ["ip", "netns", "exec", self.netns]
        self.cuts = set()

    def cut(self, ips):
        """Drops every packet between this host and `ips` (added to what is
        already cut)."""
        new = set(ips) - self.cuts - {self.ip}
        if new:
            sh(*self.prefix, "nft", "add", "element", "inet", "keelcut", "cut", "{ " + ", ".join(sorted(new)) + " }")
            self.cuts |= new

    def heal(self):
        if self.cuts:
            sh(*self.prefix, "nft", "flush", "set", "inet", "keelcut", "cut")
            self.cuts = set()


class Network:
    """A bridge on a /24 of its own (the third octet from the process id,
    so two runs on one machine do not meet) and the hosts on it. The
    host's namespace, where the clients run, is `client_ip`."""

    def __init__(self):
        n = os.getpid() % 250 + 1
        self.tag = f"kf{n}"
        self.net = f"10.200.{n}"
        self.bridge = f"{self.tag}br"
        self.client_ip = f"{self.net}.1"
        self.hosts = []
        self.close()
        sh("ip", "link", "add", self.bridge, "type", "bridge")
        sh("ip", "addr", "add", f"{self.client_ip}/24", "dev", self.bridge)
        sh("ip", "link", "set", self.bridge, "up")
        atexit.register(self.close)

    def host(self, name):
        h = Host(self, name, f"{self.net}.{10 + len(self.hosts)}")
        outer, inner = f"{self.tag}h{len(self.hosts)}", f"{self.tag}n{len(self.hosts)}"
        # A pair an earlier run left (its namespace outlived `ip netns del`
        # while a process in it was still exiting).
        sh("ip", "link", "del", outer, check=False)
        sh("ip", "netns", "add", h.netns)
        sh("ip", "link", "add", outer, "type", "veth", "peer", "name", inner)
        sh("ip", "link", "set", outer, "master", self.bridge)
        sh("ip", "link", "set", outer, "up")
        sh("ip", "link", "set", inner, "netns", h.netns)
        sh("ip", "-n", h.netns, "addr", "add", f"{h.ip}/24", "dev", inner)
        sh("ip", "-n", h.netns, "link", "set", inner, "up")
        sh("ip", "-n", h.netns, "link", "set", "lo", "up")
        subprocess.run([*h.prefix, "nft", "-f", "-"], input=RULES, text=True, check=True)
        self.hosts.append(h)
        return h

    def heal(self):
        for h in self.hosts:
            h.heal()

    def close(self):
        """Removes the namespaces (their veths go with them) and the bridge;
        also what an earlier run with this tag left behind."""
        # The host ends of the pairs first: deleting one deletes its peer,
        # even in a namespace a process still holds.
        for link in sh("ip", "-o", "link", "show", check=False).stdout.splitlines():
            name = link.split(": ")[1].split("@")[0] if ": " in link else ""
            if name.startswith(f"{self.tag}h"):
                sh("ip", "link", "del", name, check=False)
        listed = sh("ip", "netns", "list", check=False).stdout.split()
        for ns in listed:
            if ns.startswith(f"{self.tag}-"):
                sh("ip", "netns", "del", ns, check=False)
        sh("ip", "link", "del", self.bridge, check=False)
        self.hosts = []
