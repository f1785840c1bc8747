#!/bin/sh
# Run the stable fuzz harness (tests/it/fuzz.rs) longer than `cargo test` does: each target
# for SECS seconds (default 180), once per seed, in an optimised build that keeps overflow
# checks (so an integer overflow is a panic, as in debug builds). A failure leaves its input in
# target/fuzz-failures/ and the script exits non-zero.
#
#   scripts/fuzz.sh            # 3 minutes per target, seed 1
#   scripts/fuzz.sh 600 1 2 3  # 10 minutes per target, seeds 1, 2 and 3
set -eu
cd "$(dirname "$0")/.."
secs=${1:-180}
[ $# -gt 0 ] && shift
seeds=${*:-1}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
for seed in $seeds; do
    echo "== seed $seed, $secs s per target"
    if ! IOSAT_FUZZ_SECS=$secs IOSAT_FUZZ_SEED=$seed \
        CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true \
        cargo test --release --test it fuzz:: -- --nocapture --test-threads 8 >"$log" 2>&1; then
        status=1
    fi
    grep -E '^fuzz |^test fuzz|panicked|saved in|test result' "$log" || true
done
exit $status
