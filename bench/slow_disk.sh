#!/usr/bin/env bash
# appendfsync always on a slow disk: both servers' fsync/fdatasync delayed
# by SLOWFSYNC_US microseconds (default 2000) with an LD_PRELOAD shim.
#   bench/slow_disk.sh [--runs 3] [-- redis-benchmark args]
set -euo pipefail
cd "$(dirname "$0")/.."
gcc -shared -fPIC -O2 -o target/slowfsync.so bench/slowfsync.c -ldl
export SLOWFSYNC_US="${SLOWFSYNC_US:-2000}"
runs=3
if [ "${1:-}" = "--runs" ]; then runs=$2; shift 2; fi
[ "${1:-}" = "--" ] && shift
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(-n 50000 -c 50 -t set,incr,lpush,hset)
exec bench/compare.sh --runs "$runs" --preload target/slowfsync.so \
  --keel-args "--appendonly yes --appendfsync always" \
  --redis-args "--appendonly yes --appendfsync always" -- "${args[@]}"
