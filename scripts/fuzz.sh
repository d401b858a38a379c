#!/usr/bin/env bash
# Runs every fuzz target of fuzz/ (cargo fuzz, nightly): each for a short
# time (default, CI: `--seconds 20`) or for a number of executions
# (`--runs 1000000`, the long runs RELIABILITY.md reports), or only builds
# them (`--build-only`, which CI starts early in the background). Installs the
# nightly toolchain and cargo-fuzz when missing. adapter_configuration
# loads target/plugins: run `cargo xtask build-plugins` first.
#
# The checked-in seeds (fuzz/corpus/<target>) are read, never written: what
# a run finds goes to a scratch directory, and a crash to
# fuzz/artifacts/<target>, which makes the script fail.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
budget=(-max_total_time=20)
build_only=
case "${1:-}" in
    --seconds) budget=(-max_total_time="$2") ;;
    --runs) budget=(-runs="$2") ;;
    --build-only) build_only=1 ;;
    "") ;;
    *) echo "usage: scripts/fuzz.sh [--seconds N | --runs N | --build-only]" >&2; exit 2 ;;
esac
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
export OAC_PLUGIN_DIR="${OAC_PLUGIN_DIR:-$PWD/../target/plugins}"
# Safe Rust throughout (unsafe is forbidden in the host's crates): coverage
# guidance without AddressSanitizer.
cargo +nightly fuzz build --sanitizer none
[ -z "$build_only" ] || exit 0
for target in $(cargo +nightly fuzz list); do
    scratch=$(mktemp -d)
    log=$(mktemp)
    if ! cargo +nightly fuzz run --sanitizer none "$target" "$scratch" "corpus/$target" -- \
        "${budget[@]}" -rss_limit_mb=4096 -print_final_stats=1 >"$log" 2>&1; then
        tail -n 40 "$log"
        echo "== fuzz target $target FAILED (artifact in fuzz/artifacts/$target)" >&2
        exit 1
    fi
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    seconds=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o 'in [0-9]*' | grep -o '[0-9]*' || echo "?")
    echo "== fuzz $target: $runs executions in ${seconds}s, no crash"
    rm -rf "$scratch" "$log"
done
