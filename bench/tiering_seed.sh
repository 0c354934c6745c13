#!/bin/sh
# The seed workload (redis-benchmark --threads 2 -c 512 -r 100000, SET then
# GET) against keel with everything in memory and against keel with a disk
# tier and maxmemory just above its keys (most values on disk), in one run.
# Usage: bench/tiering_seed.sh target/release/keel-server
set -e
KEEL=${1:-target/release/keel-server}
PORT=7413
W=$(mktemp -d)
run() { # $1: label, rest: extra keel args
    label=$1; shift
    for d in 64 128 256; do
        rm -rf "$W/data"; mkdir -p "$W/data"
        "$KEEL" --port $PORT --save "" --dir "$W/data" "$@" > "$W/log" 2>&1 &
        pid=$!
        until redis-cli -p $PORT ping > /dev/null 2>&1; do sleep 0.05; done
        out=$(redis-benchmark -p $PORT --threads 2 -c 512 -n 300000 -r 100000 -d $d -t set,get -q --csv | grep -E '^"(SET|GET)"' | tr -d '"' | awk -F, '{printf "%s %s p50 %s p99 %s; ", $1, $2, $5, $7}')
        spilled=$(redis-cli -p $PORT info tiering | grep -E '^tiering_spilled_keys' | tr -d '\r' | cut -d: -f2)
        used=$(redis-cli -p $PORT info memory | grep -E '^used_memory:' | tr -d '\r' | cut -d: -f2)
        echo "$label -d $d: $out spilled_keys=${spilled:-0} used_memory=$used"
        kill $pid; wait $pid 2>/dev/null || true
    done
}
# Keys and stubs of 100000 keys take about 7 MB above the empty server
# and the 512 clients take about 25 MB: 40 MB leaves room for about half
# the values.
run memory
run tiered --maxmemory 40mb --maxmemory-policy allkeys-lru --tiering-dir tier
rm -rf "$W"
