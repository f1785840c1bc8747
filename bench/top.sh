#!/usr/bin/env bash
# Benchmark of `iosat top` (figures go to BENCHMARKS.md, "## iosat top"): CPU time per refresh
# over the same minute, side by side, of
#  1. `iosat top -i 1` in a real terminal (tmux, 160x48, charts drawn) with this machine's
#     devices (with the block-latency source when it attaches, i.e. as root, and with
#     --no-bpf), against `iostat -x 1` and `atop 1` (when installed; Debian: apt install atop);
#  2. `iosat top -i 1 --all` over a synthetic /proc/diskstats of 1,000 devices (--proc-root).
# Target (issue 15): at most 2x iostat's CPU per refresh; under 5 ms per refresh at 1,000.
# Usage: bench/top.sh [SECONDS]   (default 60; builds a release binary; needs tmux)
#        IOSAT_BIN=path/to/iosat bench/top.sh ...   measures that binary instead (no build):
#        an earlier commit's release build, for a before/after pair in the same conditions.
#
#        bench/top.sh --instructions [SECONDS]   (default 20; needs valgrind)
# counts user-space instructions per refresh instead, which a busy or shared machine does not
# disturb: iosat top (160x48, charts drawn, -i 0.5; with the block-latency source when it can
# be attached, i.e. as root, and with --no-bpf) and the 1,000-device root under callgrind,
# counters zeroed after a warm-up so start-up is left out, divided by the frames drawn; and
# `iostat -x 1` for N and 2N reports, the difference divided by N. Kernel time (reading /proc,
# writing the terminal) is not in these counts: the CPU-time mode above has it.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
mode=cpu
if [ "${1:-}" = --instructions ]; then
  mode=instructions
  shift
fi
secs=${1:-60}
if [ -n "${IOSAT_BIN:-}" ]; then
  bin=$(realpath "$IOSAT_BIN")
else
  cargo build --release --quiet
  bin=$PWD/target/release/iosat
fi
tmp=$(mktemp -d)
sock="$tmp/tmux.sock"  # in $tmp: kill-server leaves the socket file behind
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  tmux -S "$sock" kill-server 2>/dev/null || true
  rm -rf "$tmp"
}
on_exit cleanup

# A 1,000-device diskstats (bench/lib.sh).
mkdir -p "$tmp/proc" "$tmp/sys"
synthetic_diskstats "$tmp/proc/diskstats"

if [ "$mode" = instructions ]; then
  secs=${1:-20}
  ir_total() { callgrind_annotate "$1" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'; }
  # calls of a function in a callgrind profile (compressed names: "(id) name" once, "(id)" after)
  calls_of() {
    awk -v pat="$2" '
      /^c?fn=\(/ { id = $1; sub(/^c?fn=/, "", id); rest = $0; sub(/^c?fn=\([0-9]+\) ?/, "", rest)
                  if (rest != "") name[id] = rest; if ($0 ~ /^cfn=/) cur = id; next }
      /^calls=/ { split($0, a, /[= ]/); if (name[cur] ~ pat) n += a[2] }
      END { print n + 0 }' "$1"
  }
  top_ir() { # window, extra args... -> "Ir_per_frame frames"
    local name=$1 out=$tmp/$1.cg
    shift
    tmux -S "$sock" new-window -d -n "$name" -t bench \
      "exec valgrind --tool=callgrind --callgrind-out-file=$out $bin top -i 0.5 --no-profile $* 2>/dev/null"
    sleep 15
    callgrind_control -z "$(tmux -S "$sock" display-message -p -t "bench:$name" '#{pane_pid}')" >/dev/null
    sleep "$secs"
    tmux -S "$sock" send-keys -t "bench:$name" q
    sleep 5
    local t n
    t=$(ir_total "$out")
    n=$(calls_of "$out" 'iosat::ui::top::draw::draw$')
    awk -v t="$t" -v n="$n" 'BEGIN { printf "%.0f %d\n", t / n, n }'
  }
  tmux -S "$sock" new-session -d -s bench -x 160 -y 48
  read -r live frames < <(top_ir live)
  echo "iosat top (this machine's devices): $live instructions per refresh ($frames frames)"
  read -r nobpf frames < <(top_ir nobpf --no-bpf)
  echo "iosat top --no-bpf:                 $nobpf instructions per refresh ($frames frames)"
  read -r k1 frames < <(top_ir fixture --all --proc-root "$tmp/proc" --sys-root "$tmp/sys")
  echo "iosat top --all, 1,000 devices:     $k1 instructions per refresh ($frames frames)"
  n=5
  valgrind --tool=callgrind --callgrind-out-file="$tmp/i1.cg" iostat -x 1 "$n" >/dev/null 2>&1
  valgrind --tool=callgrind --callgrind-out-file="$tmp/i2.cg" iostat -x 1 $((2 * n)) >/dev/null 2>&1
  i=$(( ($(ir_total "$tmp/i2.cg") - $(ir_total "$tmp/i1.cg")) / n ))
  echo "iostat -x 1:                        $i instructions per refresh"
  awk -v a="$live" -v b="$i" 'BEGIN { printf "iosat top / iostat: %.2fx (user space only)\n", a / b }'
  awk -v a="$nobpf" -v b="$i" 'BEGIN { printf "iosat top --no-bpf / iostat: %.2fx\n", a / b }'
  exit 0
fi

# CPU time of a running process in ns: the sum over its threads of /proc/PID/task/*/schedstat's
# first field (time on a CPU, nanoseconds). /proc/PID/stat's utime+stime count whole clock
# ticks (10 ms), too coarse for processes that spend a few ms a second.
cpu_ns() {
  cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d", s }'
}

# iosat top in a terminal of its own; the pane's shell execs it, so the pane pid is iosat's.
start_top() { # window name, extra args...
  local name=$1
  shift
  tmux -S "$sock" new-window -d -n "$name" -t bench "exec $bin top -i 1 --no-profile $*"
  sleep 0.5
  tmux -S "$sock" display-message -p -t "bench:$name" '#{pane_pid}'
}
tmux -S "$sock" new-session -d -s bench -x 160 -y 48
top_pid=$(start_top live)
nobpf_pid=$(start_top nobpf --no-bpf)
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

# Start-up (loading profiles, the first frame, iostat's since-boot report) is left out: the
# counts are taken after a 3 s warm-up and again $secs later, all five side by side.
sleep 3
declare -A c0
for p in "$top_pid" "$nobpf_pid" "$iostat_pid" "$atop_pid" "$top1k_pid"; do
  [ -n "$p" ] && c0[$p]=$(cpu_ns "$p")
done
sleep "$secs"
used() { awk -v a="${c0[$1]}" -v b="$(cpu_ns "$1")" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }
per() { awk -v c="$1" -v n="$secs" 'BEGIN { printf "%.2f ms", c / n * 1e3 }'; }
t=$(used "$top_pid")
echo "iosat top -i 1 (this machine's devices): CPU ${t} s in ${secs} s = $(per "$t") per refresh"
t=$(used "$nobpf_pid")
echo "iosat top -i 1 --no-bpf:                 CPU ${t} s in ${secs} s = $(per "$t") per refresh"
t=$(used "$iostat_pid")
echo "iostat -x 1:                             CPU ${t} s in ${secs} s = $(per "$t") per refresh"
if [ -n "$atop_pid" ]; then
  t=$(used "$atop_pid")
  echo "atop 1:                                  CPU ${t} s in ${secs} s = $(per "$t") per refresh"
else
  echo "atop: not installed (skipped)"
fi
t=$(used "$top1k_pid")
echo "iosat top -i 1 --all, 1,000 devices:     CPU ${t} s in ${secs} s = $(per "$t") per refresh"
