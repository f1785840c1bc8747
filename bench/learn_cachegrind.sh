#!/usr/bin/env bash
# What learning costs per device and interval, counted rather than timed (issue 37): the
# replays of bench/learn.sh (bench/lib.sh's 1,000 devices: "traffic on all", every counter
# advancing; the same with a real sampler's clock; devices that changed, the step at 40 s)
# run under valgrind's cachegrind, with learning and with --no-learn, as text and as JSON.
# Prints, per device and interval, the instructions, the L1 data misses and the misses of
# the core's own L2 (simulated as the last level: the machine's L3 is shared and large, and
# a miss in the L2 is what stalls learning), and learning's ratio of each.
# Deterministic: a busy machine moves bench/learn.sh's wall-clock ratio by more than one
# change does, not these counts. bench/learn.sh's ratio stays the goal; this says where a
# change moved the work.
# Usage: bench/learn_cachegrind.sh [SAMPLES]   (default 600, as bench/learn.sh; ~12 min in all)
# The devices that changed are replayed at 300 samples whatever SAMPLES, as bench/learn.sh
# does. At 100 samples the steady inputs' ratios read lower (1.137 against 1.159 at 600 for
# the real clock's text, 2026-12-04): estimates come every 10 intervals early on, and the
# rows judged by an estimate, whose notes and JSON cost more, are few until later.
# INPUTS="all real changed idle steady" (the default: all five) chooses the inputs; "steady"
# is bench/learn.sh's fifth (the real clock's devices sampled every second: every device
# learned, its ceiling a lower bound). "idle" is
# bench/learn.sh's fourth: live `stat` over the static diskstats (--proc-root, -i 0.01, SAMPLES
# samples, a fresh state directory each run), whose CPU time is mostly the sampler's sleeps and
# the kernel's accounting of a short run (its ratio ranged 0.84-1.59 in five runs): counted
# here, it is what learning adds to idle devices.
# BEFORE=<an older iosat binary> adds its learning runs (its counts and its ratios to this
# build's --no-learn): a change counted side by side.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 1; }
n=${1:-600}
tmp=$(mktemp -d)
on_exit 'rm -rf "$tmp"'
bin=$(frozen_build "$tmp")
synthetic_diskstats "$tmp/diskstats"
synthetic_recording "$n" "$tmp/diskstats" > "$tmp/rec-all"
real_clock < "$tmp/rec-all" > "$tmp/rec-real"
changed_recording 300 40 "$tmp/diskstats" > "$tmp/rec-changed"
synthetic_recording "$n" "$tmp/diskstats" 1000 | real_clock > "$tmp/rec-steady"
mkdir -p "$tmp/proc" "$tmp/sys"
cp "$tmp/diskstats" "$tmp/proc/diskstats"
inputs=${INPUTS:-all real changed idle steady}
for i in $inputs; do
  case $i in
    all | real | changed | idle | steady) ;;
    *) echo "bench/learn_cachegrind.sh: INPUTS takes all, real, changed, idle and steady, not '$i'" >&2; exit 2 ;;
  esac
done
devices=$(wc -l < "$tmp/diskstats")
# The core's own caches, as sysfs describes cpu0's (size in bytes, ways, line).
cache() {
  local d=/sys/devices/system/cpu/cpu0/cache/index$1 size
  size=$(cat "$d/size")
  case $size in
    *K) size=$((${size%K} * 1024)) ;;
    *M) size=$((${size%M} * 1024 * 1024)) ;;
  esac
  echo "$size,$(cat "$d/ways_of_associativity"),$(cat "$d/coherency_line_size")"
}
d1=$(cache 0)
l2=$(cache 2)
echo "devices: $devices, samples: $n (the devices that changed: 300)," \
  "D1 $d1, L2 (simulated as the last level) $l2"
run() { # run NAME BINARY INPUT ARGS...: per device-interval Ir, D1 misses, L2 misses
  local name=$1 b=$2 input=$3
  shift 3
  local source=(--replay "$tmp/rec-$input")
  if [ "$input" = idle ]; then
    source=(-i 0.01 -c "$n" --proc-root "$tmp/proc" --sys-root "$tmp/sys"
      --state-dir "$tmp/state-$name")
  fi
  valgrind --tool=cachegrind --cache-sim=yes --D1="$d1" --LL="$l2" \
    --cachegrind-out-file="$tmp/$name.out" "$b" stat --all "${source[@]}" "$@" \
    > /dev/null 2> "$tmp/$name.err" || { cat "$tmp/$name.err" >&2; exit 1; }
  local samples=$n
  if [ "$input" = changed ]; then samples=300; fi
  python3 - "$tmp/$name.out" "$((devices * samples))" <<'PY'
import sys
for line in open(sys.argv[1]):
    if line.startswith("events:"):
        events = line.split()[1:]
    if line.startswith("summary:"):
        values = [int(v) for v in line.split()[1:]]
e = dict(zip(events, values))
per = int(sys.argv[2])
print(e["Ir"] / per, (e["D1mr"] + e["D1mw"]) / per, (e["DLmr"] + e["DLmw"] + e["ILmr"]) / per)
PY
}
echo "| input | output | build | instructions | L1d misses | L2 misses | instructions ÷ --no-learn | L1d ÷ | L2 ÷ |"
echo "|---|---|---|---|---|---|---|---|---|"
for input in $inputs; do
  for out in text json; do
    args=()
    [ "$out" = json ] && args=(--json)
    r=$(run "$input-$out-off" "$bin" "$input" "${args[@]}" --no-learn)
    read -r ni nd nl <<< "$r"
    builds=("this build:$bin")
    [ -n "${BEFORE:-}" ] && builds+=("before:$BEFORE")
    printf "| %s | %s | --no-learn | %.0f | %.1f | %.1f | | | |\n" "$input" "$out" "$ni" "$nd" "$nl"
    for b in "${builds[@]}"; do
      r=$(run "$input-$out-${b%%:*}" "${b#*:}" "$input" "${args[@]}")
      read -r i d l <<< "$r"
      awk -v inp="$input" -v o="$out" -v b="${b%%:*}" -v i="$i" -v d="$d" -v l="$l" \
        -v ni="$ni" -v nd="$nd" -v nl="$nl" 'BEGIN { printf "| %s | %s | %s, learning | %.0f | %.1f | %.1f | %.3f | %.2f | %.2f |\n",
          inp, o, b, i, d, l, i / ni, d / nd, l / nl }'
    done
  done
done
