#!/usr/bin/env bash
# Runs the whole test suite. Installs what it needs when missing:
# redis-server and redis-tools (the differential tests and the redis-cli /
# redis-benchmark compatibility tests drive the real ones), etcd (the cluster
# tests), iproute2 and nftables (the fault suite's partitions), gcc, and the Python client used by the redis-py tests.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v redis-server >/dev/null || need_apt+=(redis-server)
command -v redis-benchmark >/dev/null || need_apt+=(redis-tools)
# The cluster tests start their own etcd (the topology store).
command -v etcd >/dev/null || need_apt+=(etcd-server)
# The fault suite's cluster topology runs each node in a network namespace
# and cuts its links with nftables.
command -v ip >/dev/null || need_apt+=(iproute2)
command -v nft >/dev/null || need_apt+=(nftables)
# gcc builds the vendored Lua and the failing-disk shim of the AOF error tests.
command -v gcc >/dev/null || need_apt+=(gcc libc6-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
if ! python3 -c 'import redis, pytest, prometheus_client' 2>/dev/null; then
  python3 -m pip install -q redis pytest prometheus-client 2>/dev/null || python3 -m pip install -q --break-system-packages redis pytest prometheus-client
fi

cargo fmt --all --check
cargo clippy --workspace --all-targets -q -- -D warnings
cargo test --workspace -q 2>&1
# redis-py (RESP2 and RESP3) against the server binary cargo test built.
python3 -m pytest -q tests/compat
# The fault-injection suite: the four replication/eviction reproductions
# against keel and redis-server, the checkers, and a short fixed-seed pass
# per topology (scripts/faults.sh runs the long randomized ones).
python3 -m pytest -q tests/faults
