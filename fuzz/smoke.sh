#!/usr/bin/env bash
# Fuzz smoke for CI: builds every target without a sanitizer and runs each for
# a few seconds (FUZZ_SMOKE_SECONDS, default 4) from its seeds, so a target that
# no longer builds, or crashes on a seed or a short mutation run, fails the
# suite. The smoke builds in the dev profile (overflow checks and debug
# assertions on, no optimization): 1.5 min instead of 3.5 on 2 cores, for
# fewer runs in its few seconds; the long runs build optimized. cargo-fuzz passes nightly-only flags; RUSTC_BOOTSTRAP=1 lets the
# stable toolchain take them (no nightly needed). The long runs are described
# in fuzz/README.md.
set -euo pipefail
cd "$(dirname "$0")"
secs=${FUZZ_SMOKE_SECONDS:-4}
export RUSTC_BOOTSTRAP=1
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz smoke: installing cargo-fuzz"
    cargo install --quiet --locked cargo-fuzz
fi
cargo fuzz build --dev -s none
bin=target/x86_64-unknown-linux-gnu/debug
for t in $(cargo fuzz list); do
    corpus=$(mktemp -d)
    seeds=()
    [ -d "seeds/$t" ] && seeds=("seeds/$t")
    "$bin/$t" "$corpus" "${seeds[@]}" -max_total_time="$secs" -print_final_stats=1 \
        -artifact_prefix="$corpus/" 2>"$corpus/log" || {
        tail -40 "$corpus/log" >&2
        echo "fuzz smoke: $t failed; the input is in $corpus" >&2
        exit 1
    }
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$corpus/log")
    echo "fuzz smoke: $t ok, $runs runs in ${secs}s"
    rm -rf "$corpus"
done
