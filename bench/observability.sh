#!/usr/bin/env bash
# What observability costs: keel with latency tracking on (the default) and
# its Prometheus endpoint scraped every second, against the same binary with
# both off, in the same run (compare.py's baseline is the second keel).
#   bench/observability.sh          (RUNS=3 by default; -c 50, then -P 16)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
port=${METRICS_PORT:-19100}
tests=ping_inline,ping_mbulk,set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange,mset
cargo build --release -q -p keel-server
bin=target/release/keel-server
# The scraper: one GET /metrics a second, whenever the server is up.
python3 - "$port" <<'PY' &
import sys, time, urllib.request
port = sys.argv[1]
while True:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1).read()
    except Exception:
        pass
    time.sleep(1)
PY
scraper=$!
trap 'kill $scraper 2>/dev/null' EXIT
common=(--runs "$runs" --baseline "$bin" --baseline-args "--latency-tracking no"
        --keel-args "--metrics-port $port")
python3 bench/compare.py "${common[@]}" --label "-c 50: tracking + scraped metrics vs both off" \
  -- -q -n 100000 -c 50 -t "$tests"
python3 bench/compare.py "${common[@]}" --label "-P 16: tracking + scraped metrics vs both off" \
  -- -q -n 1000000 -c 50 -P 16 -t "$tests"
