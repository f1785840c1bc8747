#!/usr/bin/env bash
# Benchmark of `iosat top` (figures go to BENCHMARKS.md, "## iosat top"): CPU time per refresh
# over the same minute, side by side, of
#  1. `iosat top -i 1` in a real terminal (tmux, 160x48, charts drawn) with this machine's
#     devices, against `iostat -x 1` and `atop 1` (when installed; Debian: apt install atop);
#  2. `iosat top -i 1 --all` over a synthetic /proc/diskstats of 1,000 devices (--proc-root).
# Target (issue 15): at most 2x iostat's CPU per refresh; under 5 ms per refresh at 1,000.
# Usage: bench/top.sh [SECONDS]   (default 60; builds a release binary; needs tmux)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
secs=${1:-60}
cargo build --release --quiet
bin=$PWD/target/release/iosat
tmp=$(mktemp -d)
sock="iosat-bench-top-$$"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  tmux -L "$sock" kill-server 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# A 1,000-device diskstats (bench/lib.sh).
mkdir -p "$tmp/proc" "$tmp/sys"
synthetic_diskstats "$tmp/proc/diskstats"

ticks=$(getconf CLK_TCK)
cpu_s() { # user+system seconds of a running pid (/proc/PID/stat fields 14 and 15)
  awk -v t="$ticks" '{ printf "%.3f", ($14 + $15) / t }' "/proc/$1/stat"
}

# iosat top in a terminal of its own; the pane's shell execs it, so the pane pid is iosat's.
start_top() { # window name, extra args...
  local name=$1
  shift
  tmux -L "$sock" new-window -d -n "$name" -t bench "exec $bin top -i 1 --no-profile $*"
  sleep 0.5
  tmux -L "$sock" display-message -p -t "bench:$name" '#{pane_pid}'
}
tmux -L "$sock" new-session -d -s bench -x 160 -y 48
top_pid=$(start_top live)
top1k_pid=$(start_top fixture --all --proc-root "$tmp/proc" --sys-root "$tmp/sys")
iostat -x 1 > /dev/null &
pids+=($!)
iostat_pid=$!
atop_pid=
if command -v atop > /dev/null; then
  atop 1 > /dev/null &
  pids+=($!)
  atop_pid=$!
fi

sleep "$secs"
per() { awk -v c="$1" -v n="$secs" 'BEGIN { printf "%.2f ms", c / n * 1e3 }'; }
t=$(cpu_s "$top_pid")
echo "iosat top -i 1 (this machine's devices): CPU ${t} s in ${secs} s = $(per "$t") per refresh"
t=$(cpu_s "$iostat_pid")
echo "iostat -x 1:                             CPU ${t} s in ${secs} s = $(per "$t") per refresh"
if [ -n "$atop_pid" ]; then
  t=$(cpu_s "$atop_pid")
  echo "atop 1:                                  CPU ${t} s in ${secs} s = $(per "$t") per refresh"
else
  echo "atop: not installed (skipped)"
fi
t=$(cpu_s "$top1k_pid")
echo "iosat top -i 1 --all, 1,000 devices:     CPU ${t} s in ${secs} s = $(per "$t") per refresh"
