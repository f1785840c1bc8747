#!/usr/bin/env bash
# The cost of iosat's block-latency BPF program (issue 14), side by side in one run:
#
#   A. Kernel CPU per completion: iosat's one-hook program (tp_btf/block_io_done, or block_rq_complete before 6.5, attached
#      by `iosat stat`) against a biolatency-style issue+complete pair with an in-flight map
#      (bpftrace on the block_rq_issue/block_rq_complete tracepoints, keyed by device and
#      sector), each under the same fio load. From the kernel's own BPF run-time statistics
#      (sysctl kernel.bpf_stats_enabled, switched on for the run and restored on exit;
#      `bpftool prog show` gives run_time_ns and run_cnt). Target: iosat's at most half.
#   B. fio's IOPS at iodepth 1 and 16 with and without iosat attached, interleaved (the order
#      alternates between repeats) and repeated: the ratio with/without (target: no loss
#      beyond the noise, i.e. the median ratio within the spread of the runs).
#
# Needs root, fio, jq, bpftool, bpftrace. Environment: REPEATS (5), DURATION seconds per run
# (5), IOSAT (a built binary: skips the release build), STAT_ARGS (more arguments for the
# attached `iosat stat`, e.g. "--cgroups" for the per-cgroup counters of issue 40), DIR (where
# the temporary directory and test file go; the machine's disk, never a raw device), SIZE_MB
# (1024), SECTIONS ("A B"). Markdown to stdout, one line per run to stderr.
#   STAT_ARGS_B: section A also runs iosat with these arguments instead of STAT_ARGS in every
#     repeat (e.g. STAT_ARGS_B=--cgroups: without and with the per-cgroup counters, side by
#     side), and gives the difference of the medians. IOSAT_B: the binary for those runs
#     (default IOSAT; e.g. IOSAT=<an older build> against the new one with --cgroups).
#   RATE_IOPS: section A's fio at this fixed rate, so every run has the same completions per
#     second (the cost per completion depends on the rate through the caches).
#   LOOP=1: section A's file is a loop device over a file in /dev/shm (made and removed by the
#     script), so the disk's own variation is out of the runs.
# Only the programs this iosat loaded are counted (by their ids), not another iosat's.
set -euo pipefail

REPEATS=${REPEATS:-5}
DURATION=${DURATION:-5}
SIZE_MB=${SIZE_MB:-1024}
SECTIONS=${SECTIONS:-"A B"}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

. "$ROOT/bench/lib.sh"
bpf_bench_setup fio jq bpftool bpftrace
OLD_STATS=$(sysctl -n kernel.bpf_stats_enabled)
BG=""
# bpftrace finds tracepoints in tracefs: mount it for the run when it is not (and only then
# unmount it again).
MOUNTED_TRACEFS=""
if [[ " $SECTIONS " == *" A "* ]] && [ ! -d /sys/kernel/tracing/events/block ]; then
  mount -t tracefs nodev /sys/kernel/tracing && MOUNTED_TRACEFS=1
fi
cleanup() {
  [ -n "$BG" ] && kill -KILL "$BG" 2>/dev/null && wait "$BG" 2>/dev/null || true
  sysctl -q -w kernel.bpf_stats_enabled="$OLD_STATS" || true
  [ -n "$MOUNTED_TRACEFS" ] && umount /sys/kernel/tracing || true
  rm -rf "$WORK"
}
on_exit cleanup

# fio_iops DEPTH -> IOPS of 4 KiB random direct reads
fio_iops() {
  fio --name=r --filename="$FILE" --size="${SIZE_MB}m" --rw=randread --bs=4k --direct=1 \
    --ioengine=io_uring --iodepth="$1" --runtime="$DURATION" --time_based ${RATE:+--rate_iops=$RATE} \
    --output-format=json --output="$WORK/fio.json"
  jq -r '.jobs[0].read.iops' "$WORK/fio.json"
}

# start_iosat: iosat stat attached (its program loaded) in the background; waits for the
# first sample so the program is attached before the load starts.
start_iosat() {
  # shellcheck disable=SC2086 # STAT_ARGS is a list of words
  "$IOSAT" stat -i 1 --json --no-profile ${STAT_ARGS:-} --record "$WORK/rec" >/dev/null 2>"$WORK/iosat.err" &
  BG=$!
  wait_for_line '^T ' "$WORK/rec" 100 0.05 || true
  grep -q '^B ' "$WORK/rec" || { echo "iosat did not attach: $(cat "$WORK/iosat.err")" >&2; exit 1; }
}
# bpftrace prints its maps on SIGINT; give it a few seconds, then make sure it is gone.
stop_bpftrace() {
  kill -INT "$BG" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$BG" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$BG" 2>/dev/null || true
  wait "$BG" 2>/dev/null || true
  BG=""
}
stop_iosat() { kill "$BG"; wait "$BG" 2>/dev/null || true; BG=""; rm -f "$WORK/rec"; }

# prog_stats SELECTOR -> "run_time_ns run_cnt" summed over the programs jq selects
prog_stats() {
  bpftool prog show -j | jq -r "[.[] | select($1)] | \"\(map(.run_time_ns // 0) | add // 0) \(map(.run_cnt // 0) | add // 0)\""
}

# ids: the ids of the programs loaded now, as a JSON array.
ids() { bpftool prog show -j | jq -c '[.[] | .id]'; }

if [[ " $SECTIONS " == *" A "* ]]; then
  SAVED_FILE=$FILE
  if [ "${LOOP:-}" = 1 ]; then
    SHM=$(mktemp -d /dev/shm/iosat-bench.XXXXXX)
    truncate -s "${SIZE_MB}m" "$SHM/data"
    LOOPDEV=$(losetup -f --show "$SHM/data")
    on_exit 'cleanup; [ -n "${LOOPDEV:-}" ] && losetup -d "$LOOPDEV"; rm -rf "${SHM:-/nonexistent}"'
    lay_out "$LOOPDEV"
    FILE=$LOOPDEV
  fi
  sysctl -q -w kernel.bpf_stats_enabled=1
  iosat_ns=(); iosat_b_ns=(); bt_ns=()
  whos="iosat bpftrace"
  [ -n "${STAT_ARGS_B:-}" ] && whos="iosat iosat_b bpftrace"
  for rep in $(seq "$REPEATS"); do
    for who in $whos; do
      if [ "$who" != bpftrace ]; then
        before=$(ids)
        if [ "$who" = iosat_b ]; then
          STAT_ARGS=$STAT_ARGS_B IOSAT=${IOSAT_B:-$IOSAT} start_iosat
        else start_iosat; fi
        sel="(.name == \"iolat_done\" or .name == \"iolat_complete\" or .name == \"iolat_size\") and ([.id] | inside($before) | not)"
      else
        bpftrace -e '
          tracepoint:block:block_rq_issue { @start[args->dev, args->sector] = nsecs; }
          tracepoint:block:block_rq_complete /@start[args->dev, args->sector]/ {
            @usecs = hist((nsecs - @start[args->dev, args->sector]) / 1000);
            delete(@start[args->dev, args->sector]);
          }' >/dev/null 2>&1 &
        BG=$!
        # bpftool names programs by their first 15 characters.
        sel='.type == "tracepoint" and (.name == "block_rq_issue" or .name == "block_rq_comple")'
        for _ in $(seq 600); do
          [ "$(bpftool prog show -j | jq "[.[] | select($sel)] | length")" -ge 2 ] && break
          sleep 0.1
        done
        # Loaded is not yet attached: bpftrace attaches after loading both.
        sleep 2
      fi
      read -r t0 _ < <(prog_stats "$sel")
      # Completions: the complete hook's count (bpftrace's issue hook runs as often).
      c0=$(bpftool prog show -j | jq "[.[] | select($sel)] | map(.run_cnt // 0) | max // 0")
      RATE=${RATE_IOPS:-} fio_iops 16 >/dev/null
      read -r t1 _ < <(prog_stats "$sel")
      c1=$(bpftool prog show -j | jq "[.[] | select($sel)] | map(.run_cnt // 0) | max // 0")
      ns=$(awk -v t="$((t1 - t0))" -v c="$((c1 - c0))" 'BEGIN {printf "%.1f", c ? t / c : 0}')
      echo "A rep $rep $who: $((c1 - c0)) completions, $ns ns of BPF per completion" >&2
      case $who in
        iosat) stop_iosat; iosat_ns+=("$ns") ;;
        iosat_b) stop_iosat; iosat_b_ns+=("$ns") ;;
        *) stop_bpftrace; bt_ns+=("$ns") ;;
      esac
    done
  done
  sysctl -q -w kernel.bpf_stats_enabled="$OLD_STATS"
  mi=$(printf '%s\n' "${iosat_ns[@]}" | median)
  mb=$(printf '%s\n' "${bt_ns[@]}" | median)
  echo "## A. Kernel CPU per completion (fio randread 4 KiB, iodepth 16, ${DURATION}s x $REPEATS)"
  echo
  echo "| program | ns per completion (median) |"
  echo "|---|---|"
  echo "| iosat (tp_btf block_io_done, per-CPU histogram) | $mi |"
  echo "| bpftrace issue+complete with in-flight map | $mb |"
  echo "| ratio iosat / bpftrace | $(awk -v a="$mi" -v b="$mb" 'BEGIN {printf "%.2f", b ? a / b : 0}') |"
  if [ -n "${STAT_ARGS_B:-}" ]; then
    mib=$(printf '%s\n' "${iosat_b_ns[@]}" | median)
    echo "| iosat with \`$STAT_ARGS_B\` | $mib |"
    echo "| difference of the medians | $(awk -v a="$mib" -v b="$mi" 'BEGIN {printf "%+.1f", a - b}') |"
  fi
  echo
  FILE=$SAVED_FILE
fi

if [[ " $SECTIONS " == *" B "* ]]; then
  echo "## B. fio IOPS with iosat attached / without (randread 4 KiB, ${DURATION}s x $REPEATS)"
  echo
  echo "| iodepth | median ratio | min | max |"
  echo "|---|---|---|---|"
  for depth in 1 16; do
    ratios=()
    for rep in $(seq "$REPEATS"); do
      if [ $((rep % 2)) = 1 ]; then order="without with"; else order="with without"; fi
      for o in $order; do
        if [ "$o" = with ]; then start_iosat; w=$(fio_iops "$depth"); stop_iosat
        else wo=$(fio_iops "$depth"); fi
      done
      r=$(awk -v a="$w" -v b="$wo" 'BEGIN {printf "%.4f", a / b}')
      echo "B depth $depth rep $rep: with $w without $wo ratio $r" >&2
      ratios+=("$r")
    done
    printf '%s\n' "${ratios[@]}" | sort -g > "$WORK/r"
    echo "| $depth | $(median < "$WORK/r") | $(head -1 "$WORK/r") | $(tail -1 "$WORK/r") |"
  done
  echo
fi
