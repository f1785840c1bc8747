#!/usr/bin/env bash
# iosat's live block-layer p50 against fio's own percentiles (issue 14): fio 4 KiB random
# direct reads at iodepth 1 and 16 on a temporary file on the machine's disk (in a temp
# directory, never the raw device), while `iosat stat` watches the disk under it with one
# interval spanning the run. The block layer sees less of the path than fio, so iosat's p50
# should lie between fio's `clat` p50 (completion latency) and `lat` p50 (submission to
# completion), within a few percent.
#
# Needs root (the BPF program), fio, jq. Environment: REPEATS (3), DURATION seconds per run
# (5), DIR (where the temp dir goes), SIZE_MB (1024), DEV (the disk to watch; default: the
# whole disk under DIR — a dm/md volume has no requests, name the disk beneath it),
# IOSAT (a built binary: skips the release build). Markdown to stdout, runs to stderr.
# The interval also holds the half second before and after fio and any other I/O on the
# disk: run it on a quiet machine.
set -euo pipefail

REPEATS=${REPEATS:-3}
DURATION=${DURATION:-5}
SIZE_MB=${SIZE_MB:-1024}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

. "$ROOT/bench/lib.sh"
bpf_bench_setup fio jq
BG=""
trap '[ -n "$BG" ] && kill "$BG" 2>/dev/null; rm -rf "$WORK"' EXIT INT TERM
if [ -z "${DEV:-}" ]; then
  src=$(findmnt -no SOURCE -T "$WORK")
  DEV=$(lsblk -no PKNAME "$src" 2>/dev/null | head -n 1)
  [ -n "$DEV" ] || DEV=$(basename "$src")
fi
echo "watching $DEV" >&2

echo "## iosat's block-layer p50 vs fio (randread 4 KiB, direct, ${DURATION}s x $REPEATS, $DEV)"
echo
echo "| iodepth | fio clat p50 us | iosat p50 us | fio lat p50 us | iosat/clat | iosat/lat | coverage % |"
echo "|---|---|---|---|---|---|---|"
for depth in 1 16; do
  : > "$WORK/rows"
  for rep in $(seq "$REPEATS"); do
    # One interval spanning fio's run: the first sample, half a second, fio, half a second.
    "$IOSAT" stat "$DEV" --json --no-profile -i "$((DURATION + 1))" -c 1 \
      --record "$WORK/rec" >"$WORK/stat.json" 2>"$WORK/stat.err" &
    BG=$!
    for _ in $(seq 100); do
      grep -q '^T ' "$WORK/rec" 2>/dev/null && break
      sleep 0.05
    done
    sleep 0.5
    fio --name=r --filename="$FILE" --size="${SIZE_MB}m" --rw=randread --bs=4k --direct=1 \
      --ioengine=io_uring --iodepth="$depth" --runtime="$DURATION" --time_based \
      --lat_percentiles=1 --clat_percentiles=1 --output-format=json --output="$WORK/fio.json"
    wait "$BG"; BG=""
    rm -f "$WORK/rec"
    grep -q latency "$WORK/stat.json" || { echo "no live percentiles: $(cat "$WORK/stat.err")" >&2; exit 1; }
    clat=$(jq '.jobs[0].read.clat_ns.percentile["50.000000"] / 1000' "$WORK/fio.json")
    lat=$(jq '.jobs[0].read.lat_ns.percentile["50.000000"] / 1000' "$WORK/fio.json")
    ours=$(jq '.devices[0].latency.read.p50_ms * 1000' "$WORK/stat.json")
    cov=$(jq '.devices[0].latency.coverage_pct' "$WORK/stat.json")
    echo "depth $depth rep $rep: clat $clat lat $lat iosat $ours us, coverage $cov %" >&2
    echo "$clat $ours $lat $cov" >> "$WORK/rows"
  done
  col() { awk -v c="$1" '{print $c}' "$WORK/rows" | median; }
  r1() { awk -v x="$1" 'BEGIN {printf "%.1f", x}'; }
  c=$(r1 "$(col 1)"); o=$(r1 "$(col 2)"); l=$(r1 "$(col 3)"); v=$(r1 "$(col 4)")
  echo "| $depth | $c | $o | $l | $(awk -v a="$o" -v b="$c" 'BEGIN {printf "%.3f", a / b}') | $(awk -v a="$o" -v b="$l" 'BEGIN {printf "%.3f", a / b}') | $v |"
done
