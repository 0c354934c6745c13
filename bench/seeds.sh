#!/usr/bin/env bash
# The seed reports' workloads against keel and redis-server, one table each
# (bench/compare.py: rps, p50/p99, server CPU per request, client CPU per
# request), as docs/benchmarks.md lists them ("The seeds' workloads").
#   bench/seeds.sh [--runs 3]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3
[ "${1:-}" = "--runs" ] && runs=$2
cargo build --release -q -p keel-server -p keel-benchmark
c() { python3 bench/compare.py --runs "$runs" -- "$@"; }
# Seed 003 (multi-threaded server, 16 client threads, 512 connections),
# scaled to this machine: 2 client threads. -n large: redis-benchmark's
# multi-thread mode ends runs on a 250 ms tick.
for d in 64 128 256; do
  c --threads 2 -c 512 -n 600000 -r 100000 -d "$d" -q -t set,get,incr,mset
done
# Seed 004 (large values, pipelined), no memory limit.
# LRANGE_100 of these values is a 2-3 MB reply (Redis: ~300 per second), so
# it runs on its own with fewer requests.
# Two unmeasured runs first: the first runs' new keys and the list LPUSH
# grows would otherwise make each run a different workload
# (docs/benchmarks.md, "Large values: why repeated runs spread").
cw() { python3 bench/compare.py --runs "$runs" --warmup 2 -- "$@"; }
cw -c 50 -P 5 -n 100000 -d 18000 -q -t set,get,lpush
cw -c 50 -P 10 -n 100000 -d 30000 -q -t set,get,lpush
c -c 50 -P 5 -n 2000 -d 18000 -q -t lrange_100
# The default suite: 50 clients, pipelined, one client.
tests=ping_inline,ping_mbulk,set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange,mset
c -q -n 200000 -c 50 -t "$tests"
c -q -n 1000000 -P 16 -t "${tests%,lrange,mset},mset"
c -q -n 100000 -P 16 -t lrange
c -q -n 50000 -c 1 -t set,get,incr,lpush,hset
# The same client-bound rows with keel's idle polling off: what the polling
# buys in rate and costs in CPU.
python3 bench/compare.py --runs "$runs" --keel-args "--idle-poll-us 0" -- -q -n 200000 -c 50 -t set,get,incr,lpush,hset
python3 bench/compare.py --runs "$runs" --keel-args "--idle-poll-us 0" -- -q -n 50000 -c 1 -t set,get,incr,lpush,hset
