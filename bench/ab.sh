#!/usr/bin/env bash
# iosat against itself at another commit: did a change move the engines' speed? The two
# binaries run the same 4 KiB random-read levels on one file, interleaved and repeated:
#
#   A. direct I/O on a file of this machine's own filesystem (the disk decides; its drift is
#      why the runs alternate), depths from DEPTHS;
#   B. buffered reads of a file held in the page cache, depths 1 and 16 (CPU-bound: the
#      engine's own cost per I/O, the signal a hot-loop change would move).
#
# Usage: BASE=<rev> bash bench/ab.sh   (BASE defaults to HEAD~1). Environment as in
# sweep_vs_fio.sh: REPEATS (5), DURATION seconds per run (3), DIR (a temporary directory under
# the current one), SIZE_MB (1024), DEPTHS of section A ("1 16 64"), ENGINE (uring).
# Writes a Markdown summary to stdout and raw per-run lines to stderr.
set -euo pipefail

REPEATS=${REPEATS:-5}
DURATION=${DURATION:-3}
SIZE_MB=${SIZE_MB:-1024}
DEPTHS=${DEPTHS:-"1 16 64"}
ENGINE=${ENGINE:-uring}
BASE=${BASE:-HEAD~1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

for tool in fio jq /usr/bin/time git; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
WORK=$(mktemp -d "${DIR:-$PWD}/iosat-ab.XXXXXX")
cleanup() {
  git -C "$ROOT" worktree remove --force "$WORK/base" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

BASE_SHA=$(git -C "$ROOT" rev-parse --short "$BASE")
HEAD_SHA=$(git -C "$ROOT" rev-parse --short HEAD)
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
git -C "$ROOT" worktree add --quiet --detach "$WORK/base" "$BASE_SHA"
CARGO_TARGET_DIR="$WORK/base-target" cargo build --release --quiet --manifest-path "$WORK/base/Cargo.toml"
NEW="$ROOT/target/release/iosat"
OLD="$WORK/base-target/release/iosat"

FILE="$WORK/data"
fio --name=layout --filename="$FILE" --size="${SIZE_MB}m" --rw=write --bs=1m --direct=1 \
  --refill_buffers --output=/dev/null

cpu_of() { awk '/^cpu/ {print $2 + $3}' "$1"; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# run BIN DEPTH DIRECT -> "iops ios cpu_s p50_ns"
run() {
  /usr/bin/time -f "cpu %U %S" -o "$WORK/t" \
    "$1" sweep "$FILE" --engine "$ENGINE" --levels "$2" --duration "$DURATION" \
      --ramp 0 --direct "$3" --no-progress --json >"$WORK/out.json"
  jq -r --arg cpu "$(cpu_of "$WORK/t")" \
    '.levels[0] | "\(.iops) \(.ios) \($cpu) \(.latency_ns.p50)"' "$WORK/out.json"
}

declare -a ROWS
compare() { # LABEL DEPTH DIRECT
  : >"$WORK/ratios"
  for r in $(seq 1 "$REPEATS"); do
    local a b
    if (( r % 2 )); then a=$(run "$NEW" "$2" "$3"); b=$(run "$OLD" "$2" "$3");
    else b=$(run "$OLD" "$2" "$3"); a=$(run "$NEW" "$2" "$3"); fi
    echo "$1 run $r: new [$a] base [$b]" >&2
    # shellcheck disable=SC2086
    set -- "$1" "$2" "$3" $a $b
    awk -v ai="$4" -v an="$5" -v ac="$6" -v ap="$7" -v bi="$8" -v bn="$9" -v bc="${10}" -v bp="${11}" \
      'BEGIN {printf "%.0f %.0f %.3f %.3f %.3f %.2f %.2f\n", ai, bi, ai/bi, (ac/an)/(bc/bn), ap/bp, ac/an*1e6, bc/bn*1e6}' \
      >>"$WORK/ratios"
  done
  local line="| $1"
  for c in 1 2 3 4 5 6 7; do
    line+=" | $(awk -v c="$c" '{print $c}' "$WORK/ratios" | median)"
  done
  line+=" | $(awk '{printf "%s ", $3}' "$WORK/ratios")|"
  ROWS+=("$line")
}

for d in $DEPTHS; do compare "A depth $d" "$d" true; done
# Section B: warm the page cache first.
cat "$FILE" >/dev/null
for d in 1 16; do compare "B depth $d" "$d" false; done

echo "## iosat $HEAD_SHA against $BASE_SHA ($(date -u '+%F %H:%M') UTC, $(uname -r), $(nproc) CPUs, ${SIZE_MB} MiB file, engine $ENGINE, ${DURATION} s per run, median of $REPEATS interleaved repeats)"
echo
echo "| level | new IOPS | base IOPS | IOPS ratio | CPU/IO ratio | p50 ratio | new CPU µs/IO | base CPU µs/IO | per-repeat IOPS ratios |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---|"
printf '%s\n' "${ROWS[@]}"
