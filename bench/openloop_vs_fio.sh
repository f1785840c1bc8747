#!/usr/bin/env bash
# iosat sweep --rate (the open loop) against fio --rate_iops --rate_process=poisson, side by side
# on the same file at the same offered rates, interleaved and repeated.
#
# 4 KiB random direct reads of a file of this machine's own filesystem. For each rate in RATES
# (IOPS) and each repeat, the two tools run back to back, in an order that alternates from
# repeat to repeat, and the ratios are taken within the repeat:
#   - throughput: iosat's achieved IOPS ÷ fio's IOPS (issue 30: within 2 %),
#   - from-submission latency: iosat's service_latency_ns (mean, p50, p99) ÷ fio's clat
#     (mean, p50, p99) (issue 30: within 10 % at low load),
#   - from the intended start: iosat's latency_ns (mean, p99) ÷ fio's lat (mean, p99): fio
#     stamps a request after sleeping until it is due, so its lat is from the intended start
#     only while it keeps its schedule.
# A cell gives the median of the per-run ratios and their spread (min–max).
#
# fio: libaio at iodepth DEPTH (64), one job, Poisson arrivals at the rate, with
# io_submit_mode=offload: in its default inline mode fio waits for every request in flight
# before each sleep for its next arrival (io_u.c rate_ddir -> io_u_quiesce) and then issues in
# bursts, which is not an open loop (FIO_MODE=inline shows it); iosat: at most 64 requests in
# flight (--max-inflight 64) on the generator its engine gives: io_uring (one thread on a ring)
# on a plain disk by default, a pool of threads with one pread each with ENGINE=sync. Both run
# at real-time priority (chrt -f 1): fio 3.33's offload mode deadlocks at the end of most jobs
# at normal priority (a workqueue stall fixed upstream in axboe/fio#2058) and in none seen at
# real-time priority; fio runs under a hard timeout anyway, and a pair whose fio hung is left
# out and counted.
# FIO_ENGINE=psync (with ENGINE=sync) times fio's requests as iosat's threads do: fio stamps a
# synchronous engine's request before the blocking call, where libaio's is stamped after
# io_submit returns (engines/libaio.c), leaving the submission call out of its clat.
# ARRIVALS=uniform runs iosat --arrivals uniform against fio rate_process=linear: no Poisson
# sampling noise in the counts, so the throughput ratio measures the tools, not the draw.
#
# Environment: REPEATS (5), DURATION seconds per run (5), RATES ("500 1000 2000"), DEPTH (64),
# FIO_MODE (offload), FIO_ENGINE (libaio), ARRIVALS (poisson),
# DIR (a temporary directory under the current one), SIZE_MB of the test file (1024), SETTLE
# seconds after the layout (10), IOSAT (the release build unless set), ENGINE (iosat's
# --engine: unset for its default choice, uring or sync).
# Writes a Markdown summary to stdout and raw per-run lines to stderr.
set -euo pipefail

REPEATS=${REPEATS:-5}
DURATION=${DURATION:-5}
RATES=${RATES:-"500 1000 2000"}
DEPTH=${DEPTH:-64}
SIZE_MB=${SIZE_MB:-1024}
FIO_MODE=${FIO_MODE:-offload}
FIO_ENGINE=${FIO_ENGINE:-libaio}
ARRIVALS=${ARRIVALS:-poisson}
case $ARRIVALS in
  poisson) FIO_PROCESS=poisson ;;
  uniform) FIO_PROCESS=linear ;;
  *) echo "ARRIVALS: must be poisson or uniform, not '$ARRIVALS'" >&2; exit 2 ;;
esac
SETTLE=${SETTLE:-10}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

for tool in fio jq; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
iosat_binary

WORK=$(mktemp -d "${DIR:-$PWD}/.iosat-bench-openloop.XXXXXX")
on_exit "rm -rf '$WORK'"
FILE="$WORK/data"
lay_out "$FILE"
sleep "$SETTLE"

# fio_at RATE -> "iops clat_mean clat_p50 clat_p99 lat_mean lat_p99" (ns)
fio_at() {
  rm -f "$WORK/fio.json"
  timeout -s KILL $((DURATION + 30)) chrt -f 1 fio --name=open --filename="$FILE" --size="${SIZE_MB}m" --rw=randread --bs=4k --direct=1 \
    --ioengine="$FIO_ENGINE" --iodepth="$DEPTH" --rate_iops="$1" --rate_process="$FIO_PROCESS" \
    --io_submit_mode="$FIO_MODE" \
    --ramp_time=0.5 --runtime="$DURATION" --time_based --invalidate=0 --lat_percentiles=1 \
    --clat_percentiles=1 --output-format=json --output="$WORK/fio.json" </dev/null >/dev/null 2>&1 \
    || { rc=$?; [ "$rc" = 137 ] && { echo hung; return; }; stop_if_interrupted "$rc"; }
  jq -r '.jobs[0].read | "\(.iops) \(.clat_ns.mean) \(.clat_ns.percentile["50.000000"]) \(.clat_ns.percentile["99.000000"]) \(.lat_ns.mean) \(.lat_ns.percentile["99.000000"])"' \
    "$WORK/fio.json"
}

# iosat_at RATE -> "iops svc_mean svc_p50 svc_p99 lat_mean lat_p99 late_p99 kept offered" (ns)
iosat_at() {
  chrt -f 1 "$IOSAT" sweep "$FILE" --rate "$1" --arrivals "$ARRIVALS" --max-inflight "$DEPTH" \
    --duration "$DURATION" --ramp 0.5 --no-progress --json ${ENGINE:+--engine "$ENGINE"} \
    >"$WORK/iosat.json" || stop_if_interrupted $?
  jq -r '.open_levels[0] | "\(.iops) \(.service_latency_ns.mean) \(.service_latency_ns.p50) \(.service_latency_ns.p99) \(.latency_ns.mean) \(.latency_ns.p99) \(.behind.p99_ns) \(.behind.kept) \(.offered_iops)"' \
    "$WORK/iosat.json"
}

echo "## iosat sweep --rate --arrivals $ARRIVALS ${ENGINE:+--engine $ENGINE }vs fio $FIO_ENGINE rate_iops (rate_process=$FIO_PROCESS, io_submit_mode=$FIO_MODE), $(date -u +%Y-%m-%d), $REPEATS repeats of ${DURATION} s"
echo
echo "| rate | IOPS iosat/fio | svc mean / clat mean | svc p50 / clat p50 | svc p99 / clat p99 | lat mean / fio lat mean | lat p99 / fio lat p99 | iosat late p99 (µs) | kept |"
echo "|---|---|---|---|---|---|---|---|---|"
hung=0
for rate in $RATES; do
  : >"$WORK/r"
  for rep in $(seq "$REPEATS"); do
    if [ $((rep % 2)) -eq 1 ]; then
      f=$(fio_at "$rate"); i=$(iosat_at "$rate")
    else
      i=$(iosat_at "$rate"); f=$(fio_at "$rate")
    fi
    echo "rate $rate rep $rep fio: $f | iosat: $i" >&2
    if [ "$f" = hung ]; then hung=$((hung + 1)); continue; fi
    # shellcheck disable=SC2086
    set -- $f $i
    awk -v fi="$1" -v fcm="$2" -v fc50="$3" -v fc99="$4" -v flm="$5" -v fl99="$6" \
        -v ii="$7" -v sm="$8" -v s50="$9" -v s99="${10}" -v lm="${11}" -v l99="${12}" \
        -v late="${13}" -v kept="${14}" \
      'BEGIN {printf "%f %f %f %f %f %f %f %s\n", ii/fi, sm/fcm, s50/fc50, s99/fc99, lm/flm, l99/fl99, late/1000, kept}' \
      >>"$WORK/r"
  done
  col() { awk -v c="$1" '{print $c}' "$WORK/r" | stats; }
  kept=$(awk '{print $8}' "$WORK/r" | sort | uniq -c | tr '\n' ' ')
  echo "| $rate | $(col 1) | $(col 2) | $(col 3) | $(col 4) | $(col 5) | $(col 6) | $(col 7) | $kept |"
done
[ "$hung" -eq 0 ] || { echo; echo "fio hung in $hung run(s) (killed; those pairs left out)"; }
