#!/usr/bin/env bash
# Runs redis-benchmark and keel-benchmark alternately against one server and
# prints the median rps of each per test.
#   usage: vs-redis-benchmark.sh PORT RUNS -- <shared redis-benchmark options>
#   e.g.   vs-redis-benchmark.sh 7100 3 -- -t set,get -n 1000000 -P 16
set -euo pipefail
PORT=$1; RUNS=$2; shift 2; [ "${1:-}" = "--" ] && shift
KB=${KB:-$(dirname "$0")/../../../target/release/keel-benchmark}
TMP=$(mktemp -d)
for i in $(seq 1 "$RUNS"); do
  # Quiet lines; redis-benchmark's progress output is cut at the last \r.
  redis-benchmark -p "$PORT" -q "$@" 2>/dev/null | tr '\r' '\n' | grep 'requests per second' \
    | sed 's/^/redis-benchmark /' >> "$TMP/out"
  "$KB" -p "$PORT" -q "$@" 2>>"$TMP/warn" | grep 'requests per second' \
    | sed 's/^/keel-benchmark /' >> "$TMP/out"
done
python3 - "$TMP/out" <<'PY'
import sys, statistics, collections
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    tool, rest = line.split(" ", 1)
    name, tail = rest.rsplit(": ", 1)
    runs[(name, tool)].append(float(tail.split()[0]))
names = sorted({n for n, _ in runs}, key=lambda n: list(k[0] for k in runs).index(n))
print(f"{'test':<10} {'redis-benchmark':>16} {'keel-benchmark':>16} {'keel/redis':>10}   runs")
for n in names:
    a, b = runs[(n, 'redis-benchmark')], runs[(n, 'keel-benchmark')]
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"{n:<10} {ma:>16.0f} {mb:>16.0f} {mb/ma:>10.3f}   rb={[round(x) for x in a]} kb={[round(x) for x in b]}")
PY
grep -h WARNING "$TMP/warn" | sort | uniq -c || true
rm -rf "$TMP"
