#!/usr/bin/env bash
# iosat sweep's engines against their peers, side by side in one run, interleaved and repeated.
#
#   A. uring vs fio --ioengine=io_uring: 4 KiB random direct reads at depths 1,4,16,64 on a file
#      of this machine's own filesystem: IOPS ratio, CPU time per I/O (user+sys from
#      /usr/bin/time, i.e. getrusage of the whole process) ratio, and at depth 1 iosat's p50
#      against fio's end-to-end `lat` p50 (not clat).
#   B. CPU-bound: buffered 4 KiB random reads of a file held in the page cache, depth 1 and 16.
#   C. sync vs sysbench fileio --file-io-mode=sync --file-extra-flags=direct at 1, 4, 16 threads.
#
# Each figure is the median over REPEATS runs; within a repeat the order of the two tools
# alternates. Environment: REPEATS (3), DURATION seconds per run (5), DIR (a temporary
# directory under the current one), SIZE_MB of the test file (1024), SECTIONS ("A B C"),
# DEPTHS of section A ("1 4 16 64"; e.g. DEPTHS=1 REPEATS=15 to pin down the depth-1 p50).
# fio runs with --invalidate=0 so section B really reads from the page cache.
# Writes a Markdown summary to stdout and raw per-run lines to stderr.
set -euo pipefail

REPEATS=${REPEATS:-3}
DURATION=${DURATION:-5}
SIZE_MB=${SIZE_MB:-1024}
SECTIONS=${SECTIONS:-"A B C"}
DEPTHS=${DEPTHS:-"1 4 16 64"}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

for tool in fio sysbench jq /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
IOSAT="$ROOT/target/release/iosat"

WORK=$(mktemp -d "${DIR:-$PWD}/iosat-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM
FILE="$WORK/data"
# Real data, written once (never sparse).
fio --name=layout --filename="$FILE" --size="${SIZE_MB}m" --rw=write --bs=1m --direct=1 \
  --refill_buffers --output=/dev/null

# cpu_of TIMEFILE -> user+sys seconds
cpu_of() { awk '/^cpu/ {print $2 + $3}' "$1"; }

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# run_fio DEPTH DIRECT -> "iops ios cpu_s lat_p50_ns"
run_fio() {
  local depth=$1 direct=$2
  /usr/bin/time -f "cpu %U %S" -o "$WORK/t" \
    fio --name=r --filename="$FILE" --size="${SIZE_MB}m" --rw=randread --bs=4k \
      --direct="$direct" --ioengine=io_uring --iodepth="$depth" --runtime="$DURATION" \
      --time_based --invalidate=0 --lat_percentiles=1 --output-format=json --output="$WORK/fio.json"
  jq -r --arg cpu "$(cpu_of "$WORK/t")" \
    '.jobs[0].read | "\(.iops) \(.total_ios) \($cpu) \(.lat_ns.percentile["50.000000"])"' \
    "$WORK/fio.json"
}

# run_iosat ENGINE DEPTH DIRECT -> "iops ios cpu_s p50_ns"
run_iosat() {
  local engine=$1 depth=$2 direct=$3
  /usr/bin/time -f "cpu %U %S" -o "$WORK/t" \
    "$IOSAT" sweep "$FILE" --engine "$engine" --levels "$depth" --duration "$DURATION" \
      --ramp 0 --direct "$direct" --no-progress --json >"$WORK/iosat.json"
  jq -r --arg cpu "$(cpu_of "$WORK/t")" \
    '.levels[0] | "\(.iops) \(.ios) \($cpu) \(.latency_ns.p50)"' "$WORK/iosat.json"
}

# run_sysbench THREADS -> "iops"
run_sysbench() {
  (cd "$WORK" && sysbench fileio --file-num=1 --file-total-size="${SIZE_MB}M" \
    --file-test-mode=rndrd --file-io-mode=sync --file-extra-flags=direct \
    --file-block-size=4096 --file-fsync-freq=0 --threads="$1" --time="$DURATION" \
    --max-requests=0 run) | awk '/reads\/s:/ {print $2}'
}

# compare LABEL CMD_A CMD_B: interleaved repeats; prints "label a_iops b_iops ratio cpu_ratio p50..."
declare -a ROWS
compare() {
  local label=$1 a=$2 b=$3
  : >"$WORK/ratios"
  for r in $(seq 1 "$REPEATS"); do
    local ra rb
    if (( r % 2 )); then ra=$(eval "$a"); rb=$(eval "$b"); else rb=$(eval "$b"); ra=$(eval "$a"); fi
    echo "$label run $r: iosat [$ra] peer [$rb]" >&2
    # shellcheck disable=SC2086
    set -- $ra $rb
    if [ $# -ge 8 ]; then
      # iops ratio, cpu-per-io ratio, p50 ratio
      awk -v ai="$1" -v an="$2" -v ac="$3" -v ap="$4" -v bi="$5" -v bn="$6" -v bc="$7" -v bp="$8" \
        'BEGIN {printf "%.0f %.0f %.3f %.3f %.3f %.2f %.2f %.0f %.0f\n", ai, bi, ai/bi, (ac/an)/(bc/bn), ap/bp, ac/an*1e6, bc/bn*1e6, ap, bp}' \
        >>"$WORK/ratios"
    else
      awk -v ai="$1" -v bi="$2" 'BEGIN {printf "%.0f %.0f %.3f\n", ai, bi, ai/bi}' >>"$WORK/ratios"
    fi
  done
  local cols; cols=$(awk '{print NF; exit}' "$WORK/ratios")
  local line="| $label"
  for c in $(seq 1 "$cols"); do
    line+=" | $(awk -v c="$c" '{print $c}' "$WORK/ratios" | median)"
  done
  ROWS+=("$line |")
}

echo "## iosat sweep vs peers ($(date -u +%F), $(uname -r), $(nproc) CPUs, ${SIZE_MB} MiB file, ${DURATION} s per run, median of $REPEATS interleaved repeats)"
echo

if [[ $SECTIONS == *A* ]]; then
  ROWS=()
  for d in $DEPTHS; do
    compare "$d" "run_iosat uring $d true" "run_fio $d 1"
  done
  echo "### A. uring vs fio io_uring, 4 KiB random direct reads"
  echo
  echo "| depth | iosat IOPS | fio IOPS | IOPS ratio | CPU/IO ratio | p50 ratio (fio lat) | iosat CPU µs/IO | fio CPU µs/IO | iosat p50 ns | fio lat p50 ns |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  printf '%s\n' "${ROWS[@]}"
  echo
fi

if [[ $SECTIONS == *B* ]]; then
  ROWS=()
  cat "$FILE" >/dev/null  # into the page cache
  for d in 1 16; do
    compare "$d" "run_iosat uring $d false" "run_fio $d 0"
  done
  echo "### B. CPU-bound: buffered 4 KiB random reads from the page cache"
  echo
  echo "| depth | iosat IOPS | fio IOPS | IOPS ratio | CPU/IO ratio | p50 ratio | iosat CPU µs/IO | fio CPU µs/IO | iosat p50 ns | fio lat p50 ns |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  printf '%s\n' "${ROWS[@]}"
  echo
fi

if [[ $SECTIONS == *C* ]]; then
  ROWS=()
  # sysbench reads its own file name; give it ours.
  mv "$FILE" "$WORK/test_file.0"
  FILE="$WORK/test_file.0"
  run_iosat_iops() { run_iosat sync "$1" true | awk '{print $1}'; }
  for t in 1 4 16; do
    compare "$t" "run_iosat_iops $t" "run_sysbench $t"
  done
  echo "### C. sync vs sysbench fileio --file-io-mode=sync, 4 KiB random direct reads"
  echo
  echo "| threads | iosat IOPS | sysbench IOPS | IOPS ratio |"
  echo "|---|---:|---:|---:|"
  printf '%s\n' "${ROWS[@]}"
  echo
fi
