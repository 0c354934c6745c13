#!/usr/bin/env bash
# Builds keel-server (release), installs redis-server/redis-tools if missing,
# and runs bench/compare.py with the given arguments.
#   bench/compare.sh -- -q -n 100000 -c 50 -t ping_inline,set,get
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
  apt-get update -qq && apt-get install -y -qq redis-server redis-tools >/dev/null
fi
cargo build --release -q -p keel-server
exec python3 bench/compare.py "$@"
