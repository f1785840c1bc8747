#!/usr/bin/env bash
# iosat sweep's p50 at depth 1 against fio's end-to-end `lat` p50 (issue 17), with the disk's
# drift between the two runs taken out.
#
# On a shared virtual disk the device's own latency moves by several percent from one run to
# the next, so the per-run ratio iosat p50 ÷ fio lat p50 (what bench/sweep_vs_fio.sh gives)
# mixes the disk's drift with the tools' difference. Here every run also times the same
# requests in the block layer (iosat's BPF source: the sweep's own `kernel.block_latency`, and
# for fio's run an `iosat stat` interval spanning it), and the ratio is also given as if both
# had met the disk fio met:
#
#   aligned ratio = (fio blk p50 + (iosat p50 − iosat blk p50)) ÷ fio lat p50
#
# i.e. iosat's own path above the block layer (syscall, io_uring, ext4, wake-up), added to the
# block-layer time of fio's run. Both runs pay the BPF program's cost per request.
#
# Each repeat runs fio and iosat back to back on the same file, the order alternating; both
# ratios are judged against "within TOL of 1" on the median's distribution-free 95 % interval
# (bench/lib.sh `verdict`).
#
# Where the scheduler puts the waiting thread moves both figures by far more than 3 % on a VM
# whose disk interrupts all land on one vCPU: woken on the other, a request pays a cross-CPU
# wake-up above the block layer and a halted vCPU's wake-up below it. PIN=CPU runs both tools
# (and the script) on that CPU, so that they are compared in the same place.
#
# Needs root (BPF), fio, jq. Environment: REPEATS (15), DURATION seconds per run (3), DEPTHS
# ("1"), SIZE_MB (1024), SETTLE (10), TOL (0.03), PIN (unset: wherever the scheduler puts
# them), DIR (a temporary directory under the current one), DEV (the disk to watch; default:
# the whole disk under DIR), IOSAT (a built binary).
# Markdown to stdout, raw runs to stderr. Run it on a quiet machine: the `iosat stat` interval
# also holds the half second around fio's run.
set -euo pipefail

REPEATS=${REPEATS:-15}
DURATION=${DURATION:-3}
DEPTHS=${DEPTHS:-1}
SIZE_MB=${SIZE_MB:-1024}
SETTLE=${SETTLE:-10}
TOL=${TOL:-0.03}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

if [ -n "${PIN:-}" ]; then
  taskset -cp "$PIN" $$ >/dev/null || { echo "PIN=$PIN: not a CPU this machine has" >&2; exit 2; }
fi
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time" >&2; exit 1; }
bpf_bench_setup fio jq
BG=""
on_exit '[ -n "$BG" ] && kill "$BG" 2>/dev/null; rm -rf "$WORK"'
[ -n "${DEV:-}" ] || DEV=$(disk_under "$WORK")
echo "watching $DEV; settling ${SETTLE} s after the layout" >&2
sleep "$SETTLE"

# fio_run DEPTH -> "lat_p50_ns blk_p50_ns": fio (bench/lib.sh run_fio) inside one `iosat stat`
# interval of the disk (stat_around).
fio_run() {
  local lat blk
  stat_around "$WORK/stat.json" run_fio "$1" 1 >"$WORK/fio.out"
  lat=$(awk '{print $4}' "$WORK/fio.out")
  blk=$(jq -r '.devices[0].latency.read.p50_ms // empty' "$WORK/stat.json")
  [ -n "$blk" ] || { echo "no block-layer p50 from iosat stat: $(cat "$WORK/stat.err")" >&2; exit 1; }
  awk -v l="$lat" -v b="$blk" 'BEGIN { printf "%s %.0f\n", l, b * 1e6 }'
}

# iosat_run DEPTH -> "p50_ns blk_p50_ns": one level of iosat sweep (bench/lib.sh run_iosat).
iosat_run() {
  local p50 blk
  p50=$(run_iosat uring "$1" true | awk '{print $4}')
  blk=$(jq -r '.levels[0].kernel.block_latency.read.p50_ms // empty' "$WORK/iosat.json")
  [ -n "$blk" ] || { echo "no block-layer p50 in the sweep's JSON" >&2; exit 1; }
  awk -v p="$p50" -v b="$blk" 'BEGIN { printf "%s %.0f\n", p, b * 1e6 }'
}

us() { awk -v c="$1" '{print $c / 1000}' "$WORK/runs" | median | xargs printf '%.1f'; }

echo "## iosat's depth-1 p50 against fio's lat p50, the disk's drift taken out ($(date -u '+%F %H:%M') UTC, $(uname -r), $DEV, ${SIZE_MB} MiB file, ${DURATION} s per run, $REPEATS alternating repeats${PIN:+, both tools on CPU $PIN})"
echo
echo "| depth | fio lat p50 µs | fio blk p50 µs | iosat p50 µs | iosat blk p50 µs | fio above blk µs | iosat above blk µs | iosat ÷ fio lat | aligned ratio |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
declare -a LINES=()
for depth in $DEPTHS; do
  : >"$WORK/runs"
  for r in $(seq "$REPEATS"); do
    # Not in $(...): stat_around's BG must reach the trap of this shell.
    if [ $((r % 2)) = 1 ]; then fio_run "$depth" >"$WORK/f"; iosat_run "$depth" >"$WORK/i"
    else iosat_run "$depth" >"$WORK/i"; fio_run "$depth" >"$WORK/f"; fi
    f=$(cat "$WORK/f") i=$(cat "$WORK/i")
    echo "depth $depth repeat $r: fio lat/blk [$f] iosat p50/blk [$i] ns" >&2
    echo "$f $i" >>"$WORK/runs"
  done
  # Per run: fio lat, fio blk, iosat p50, iosat blk, raw ratio, aligned ratio, the two
  # paths above the block layer.
  awk '{ print $1, $2, $3, $4, $3 / $1, ($2 + $3 - $4) / $1, $1 - $2, $3 - $4 }' "$WORK/runs" >"$WORK/r"
  mv "$WORK/r" "$WORK/runs"
  echo "| $depth | $(us 1) | $(us 2) | $(us 3) | $(us 4) | $(us 7) | $(us 8) | $(awk '{print $5}' "$WORK/runs" | stats) | $(awk '{print $6}' "$WORK/runs" | stats) |"
  LINES+=("$(awk '{print $5}' "$WORK/runs" | verdict "depth $depth, iosat p50 ÷ fio lat p50" near "$TOL")")
  LINES+=("$(awk '{print $6}' "$WORK/runs" | verdict "depth $depth, aligned ratio" near "$TOL")")
done
echo
printf '%s\n' "${LINES[@]}"
