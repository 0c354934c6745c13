#!/usr/bin/env bash
# Long randomized passes of the fault-injection suite (tests/faults) on a
# release build: every topology for --minutes each, one seed after another.
#   scripts/faults.sh --minutes 60 [--topology replicas] [--seed 42] [--seconds 60] [--keep]
# Prints each run's seed and schedule; exits non-zero if any run found an
# anomaly or a crash. The same seed replays the same schedule of faults.
set -euo pipefail
cd "$(dirname "$0")/.."
# keel-ctl too: the cluster topology creates and reshards with it.
cargo build --release -q -p keel-server -p keel-ctl
command -v redis-server >/dev/null || { echo "redis-server is needed (apt-get install redis-server)"; exit 1; }
command -v etcd >/dev/null || { echo "etcd is needed for the cluster topology (apt-get install etcd-server)"; exit 1; }
command -v nft >/dev/null || { echo "nftables is needed for the cluster topology's partitions (apt-get install nftables)"; exit 1; }
python3 -c 'import redis' 2>/dev/null || python3 -m pip install -q redis
KEEL_SERVER="$PWD/target/release/keel-server" exec python3 tests/faults/run.py "$@"
