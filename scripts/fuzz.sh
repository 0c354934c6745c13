#!/usr/bin/env bash
# Runs keel's fuzz targets (fuzz/, cargo-fuzz on nightly) one after the
# other, each for the given number of seconds, niced, one job each. See
# docs/fuzzing.md.
#
#   scripts/fuzz.sh [seconds-per-target] [target...]   default: 60 s, all
#   scripts/fuzz.sh --cmin [target...]                 fold new inputs into
#                                                      fuzz/corpus, minimised
#                                                      (libFuzzer's set cover merge)
#
# New inputs go to fuzz/corpus-local/<target> (not committed); the
# committed corpus fuzz/corpus/<target> is read only. A crash leaves its
# input in fuzz/artifacts/<target>/ and makes the script fail; reproduce it
# with `cargo +nightly fuzz run <target> <file>`.
set -euo pipefail

cd "$(dirname "$0")/.."
ALL_TARGETS=(resp_decoder commands rdb_load aof_load)

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "needs cargo-fuzz and a nightly toolchain:" >&2
    echo "  rustup toolchain install nightly && cargo install cargo-fuzz" >&2
    exit 2
fi

cmin=0
if [[ "${1:-}" == "--cmin" ]]; then
    cmin=1
    shift
fi
secs=60
if [[ $cmin == 0 && "${1:-}" =~ ^[0-9]+$ ]]; then
    secs=$1
    shift
fi
targets=("$@")
if [[ ${#targets[@]} == 0 ]]; then
    targets=("${ALL_TARGETS[@]}")
fi

nice -n 19 cargo +nightly fuzz build

if [[ $cmin == 1 ]]; then
    for t in "${targets[@]}"; do
        # Named inputs (seed-*, crash-*, regress-*) stay as they are. Of the
        # others, committed and new, libFuzzer keeps a smallest set that
        # covers the same edges (hit counts aside: with them it kept 8
        # times as many inputs, and the replay in `cargo test` runs every
        # one). fuzz/corpus-local keeps everything for the next runs.
        out=$(mktemp -d)
        cp fuzz/corpus/"$t"/seed-* fuzz/corpus/"$t"/crash-* fuzz/corpus/"$t"/regress-* "$out"/ 2>/dev/null || true
        mkdir -p fuzz/corpus-local/"$t"
        nice -n 19 cargo +nightly fuzz run "$t" "$out" fuzz/corpus/"$t" fuzz/corpus-local/"$t" -- \
            -set_cover_merge=1 -use_counters=0
        cp -n fuzz/corpus/"$t"/* fuzz/corpus-local/"$t"/
        rm -rf fuzz/corpus/"$t"
        mv "$out" fuzz/corpus/"$t"
        chmod 755 fuzz/corpus/"$t"
        echo "$t: $(ls fuzz/corpus/"$t" | wc -l) inputs, $(du -sh --apparent-size fuzz/corpus/"$t" | cut -f1)"
    done
    exit 0
fi

failed=()
for t in "${targets[@]}"; do
    mkdir -p fuzz/corpus-local/"$t"
    extra=()
    if [[ -f fuzz/$t.dict ]]; then
        extra+=("-dict=fuzz/$t.dict")
    fi
    echo "== $t: ${secs}s"
    # -timeout: an input running 10 s is a hang (scripts that loop are
    # killed after 20 ms, see keel::fuzzing). -malloc_limit_mb: one
    # allocation past 1 GB is a size taken from the input unchecked.
    if ! nice -n 19 cargo +nightly fuzz run "$t" fuzz/corpus-local/"$t" fuzz/corpus/"$t" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -malloc_limit_mb=1024 \
        -print_final_stats=1 "${extra[@]}"; then
        failed+=("$t")
    fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
    echo "crashed: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
    exit 1
fi
