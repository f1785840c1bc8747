#!/usr/bin/env bash
# iosat's live block-layer p50 against fio's own percentiles (issue 14): fio 4 KiB random
# direct reads at iodepth 1 and 16 on a temporary file on the machine's disk (in a temp
# directory, never the raw device), while `iosat stat` watches the disk under it with one
# interval spanning the run. The block layer sees less of the path than fio, so iosat's p50
# should lie between fio's `clat` p50 (completion latency) and `lat` p50 (submission to
# completion), within a few percent.
#
# Where the rest of fio's time goes, measured on the same requests by an independent program:
# with bpftrace installed, a bpftrace script runs beside iosat in every run and times fio's
# requests per stage: `blk` from block_io_start to block_io_done (the span iosat measures, by
# another tool: iosat's p50 should equal it), `dev` from dispatch to the driver
# (block_rq_issue) to block_io_done, and `uring` from io_uring taking the request
# (io_uring_submit_req) to posting its completion (io_uring_complete). fio's clat minus
# `uring` is fio's own path around io_uring; `uring` minus `blk` is io_uring's, before the
# block layer and after it (with DEFER_TASKRUN, the completion waits for fio's next wait).
# Needs tracefs (mounted for the run when it is not, and unmounted after).
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
BT=""
MOUNTED=""
cleanup() {
  [ -n "$BG" ] && kill "$BG" 2>/dev/null
  [ -n "$BT" ] && kill -INT "$BT" 2>/dev/null && sleep 1 && kill -9 "$BT" 2>/dev/null
  [ -n "$MOUNTED" ] && umount /sys/kernel/tracing
  rm -rf "$WORK"
}
on_exit cleanup
STAGES=""
if command -v bpftrace >/dev/null; then
  STAGES=1
  if [ ! -e /sys/kernel/tracing/available_events ]; then
    mount -t tracefs nodev /sys/kernel/tracing && MOUNTED=1
  fi
  cat >"$WORK/stages.bt" <<'BT'
tracepoint:io_uring:io_uring_submit_req /comm == "fio"/ { @s[args->req] = nsecs; }
tracepoint:io_uring:io_uring_complete /@s[args->req]/ {
  @uring = lhist((nsecs - @s[args->req]) / 1000, 0, 2000, 2); delete(@s[args->req]); }
tracepoint:block:block_io_start /comm == "fio"/ { @b[args->dev, args->sector] = nsecs; }
tracepoint:block:block_rq_issue /@b[args->dev, args->sector]/ { @i[args->dev, args->sector] = nsecs; }
tracepoint:block:block_io_done /@b[args->dev, args->sector]/ {
  @blk = lhist((nsecs - @b[args->dev, args->sector]) / 1000, 0, 2000, 2);
  if (@i[args->dev, args->sector]) { @dev = lhist((nsecs - @i[args->dev, args->sector]) / 1000, 0, 2000, 2); }
  delete(@b[args->dev, args->sector]); delete(@i[args->dev, args->sector]); }
END { clear(@s); clear(@b); clear(@i); }
BT
fi
# p50_of FILE NAME: the median of bpftrace's lhist @NAME (2 µs buckets to 2 ms), interpolated.
p50_of() {
  awk -v want="@$2:" '
    /^@/ { on = ($1 == want) }
    on && /^\[/ { gsub(/[\[\),]/, " "); lo[++n] = $1; hi[n] = $2; c[n] = $3; t += $3 }
    END { a = 0; for (k = 1; k <= n; k++) { if (a + c[k] >= t / 2) { printf "%.1f", lo[k] + (hi[k] - lo[k]) * (t / 2 - a) / c[k]; exit } a += c[k] } print "-" }' "$1"
}
[ -n "${DEV:-}" ] || DEV=$(disk_under "$WORK")
echo "watching $DEV" >&2

echo "## iosat's block-layer p50 vs fio (randread 4 KiB, direct, ${DURATION}s x $REPEATS, $DEV)"
echo
if [ -n "$STAGES" ]; then
  echo "| iodepth | fio clat p50 us | iosat p50 us | fio lat p50 us | iosat/clat | iosat/lat | coverage % | bpftrace blk p50 us | iosat/blk | bpftrace dev p50 us | bpftrace uring p50 us |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
else
  echo "| iodepth | fio clat p50 us | iosat p50 us | fio lat p50 us | iosat/clat | iosat/lat | coverage % |"
  echo "|---|---|---|---|---|---|---|"
fi
for depth in 1 16; do
  : > "$WORK/rows"
  for rep in $(seq "$REPEATS"); do
    if [ -n "$STAGES" ]; then
      bpftrace "$WORK/stages.bt" >"$WORK/bt.out" 2>&1 &
      BT=$!
      wait_for_line '^Attaching' "$WORK/bt.out" 100 0.1 || true
      # Loaded is not yet attached.
      sleep 3
      kill -0 "$BT" 2>/dev/null || { echo "bpftrace stopped: $(cat "$WORK/bt.out")" >&2; exit 1; }
    fi
    # One interval spanning fio's run: the first sample, half a second, fio, half a second.
    stat_around "$WORK/stat.json" fio --name=r --filename="$FILE" --size="${SIZE_MB}m" \
      --rw=randread --bs=4k --direct=1 --ioengine=io_uring --iodepth="$depth" \
      --runtime="$DURATION" --time_based --lat_percentiles=1 --clat_percentiles=1 \
      --output-format=json --output="$WORK/fio.json"
    stages="- - -"
    if [ -n "$BT" ]; then
      kill -INT "$BT"
      wait "$BT" || true
      BT=""
      stages="$(p50_of "$WORK/bt.out" blk) $(p50_of "$WORK/bt.out" dev) $(p50_of "$WORK/bt.out" uring)"
    fi
    grep -q latency "$WORK/stat.json" || { echo "no live percentiles: $(cat "$WORK/stat.err")" >&2; exit 1; }
    clat=$(jq '.jobs[0].read.clat_ns.percentile["50.000000"] / 1000' "$WORK/fio.json")
    lat=$(jq '.jobs[0].read.lat_ns.percentile["50.000000"] / 1000' "$WORK/fio.json")
    ours=$(jq '.devices[0].latency.read.p50_ms * 1000' "$WORK/stat.json")
    cov=$(jq '.devices[0].latency.coverage_pct' "$WORK/stat.json")
    echo "depth $depth rep $rep: clat $clat lat $lat iosat $ours us, coverage $cov %, bpftrace blk dev uring: $stages" >&2
    echo "$clat $ours $lat $cov $stages" >> "$WORK/rows"
  done
  col() { awk -v c="$1" '{print $c}' "$WORK/rows" | median; }
  r1() { awk -v x="$1" 'BEGIN {printf "%.1f", x}'; }
  c=$(r1 "$(col 1)"); o=$(r1 "$(col 2)"); l=$(r1 "$(col 3)"); v=$(r1 "$(col 4)")
  row="| $depth | $c | $o | $l | $(awk -v a="$o" -v b="$c" 'BEGIN {printf "%.3f", a / b}') | $(awk -v a="$o" -v b="$l" 'BEGIN {printf "%.3f", a / b}') | $v |"
  if [ -n "$STAGES" ]; then
    b=$(r1 "$(col 5)"); d=$(r1 "$(col 6)"); u=$(r1 "$(col 7)")
    row+=" $b | $(awk -v a="$o" -v b="$b" 'BEGIN {printf "%.3f", a / b}') | $d | $u |"
  fi
  echo "$row"
done
