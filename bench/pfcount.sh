#!/usr/bin/env bash
# PFCOUNT over 10 dense HyperLogLogs (merged on the fly at every call),
# keel against redis-server: both filled with the same 20,000 elements per
# key, then `redis-benchmark PFCOUNT k0 ... k9`, medians of RUNS runs.
#   bench/pfcount.sh            (RUNS=5 N=20000 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-5}
n=${N:-20000}
setup=$(mktemp)
trap 'rm -f "$setup"' EXIT
python3 - "$setup" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for k in range(10):
        for start in range(0, 20000, 1000):
            f.write(f"PFADD k{k} " + " ".join(f"k{k}:{j}" for j in range(start, start + 1000)) + "\n")
PY
cargo build --release -q -p keel-server
exec python3 bench/compare.py --runs "$runs" --setup "$setup" \
  --label "-n $n -c 50 PFCOUNT k0 ... k9 (10 dense HLLs)" \
  -- -n "$n" -c 50 PFCOUNT k0 k1 k2 k3 k4 k5 k6 k7 k8 k9
