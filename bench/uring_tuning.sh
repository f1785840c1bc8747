#!/usr/bin/env bash
# What in iosat's io_uring loop decides its IOPS against fio's at depths 16-64 (issue 17):
# the loop's variants and fio on the same file, interleaved and repeated in one run.
#
# Arms (ARMS, space-separated): `fio` (fio 3.33 --ioengine=io_uring, one job: one request per
# submit, wait for one), `iosat` (the defaults), `iosat-nobpf` (the defaults with --no-bpf:
# the engine without the sweep's block-layer timing), `iosat:KEY=V,...` (the loop tuned through
# $IOSAT_URING_TUNING: submit_batch=N requests per submitting enter, wait=N completions per
# wait, mode=defer|coop ring set-up, fixed_bufs=0|1 registered buffers, fixed_file=0|1 the file
# by its registered index; submit_batch=64 is the loop before issue 17's change: every
# prepared request in one enter) and `tiou` (fio's t/io_uring, when T_IO_URING names it).
# With IDLE=both every arm also runs with the guest's idle states above polling disabled
# (cpuidle state1+ `disable`=1 on every CPU, restored on exit, also on failure): a vCPU that
# halts when idle is woken by the host for the next completion; one that polls is not. Arms
# of that half are prefixed `poll/`.
#
# Each repeat runs every arm once, the order rotating from repeat to repeat; an arm's ratio is
# its IOPS (and CPU per I/O) ÷ fio's in the same repeat and the same idle setting. A cell
# gives the median (min–max) over the repeats.
#
# Environment: REPEATS (7), DURATION seconds per run (3), DEPTHS ("16 64"), SIZE_MB (1024),
# SETTLE (10), DIR (a temporary directory under the current one), ARMS, IDLE (halt|both),
# T_IO_URING. Needs root for IDLE=both. Writes Markdown to stdout, raw runs to stderr.
set -euo pipefail

REPEATS=${REPEATS:-7}
DURATION=${DURATION:-3}
DEPTHS=${DEPTHS:-"16 64"}
SIZE_MB=${SIZE_MB:-1024}
SETTLE=${SETTLE:-10}
ARMS=${ARMS:-"fio iosat iosat:submit_batch=1 iosat:submit_batch=64 iosat:mode=coop"}
IDLE=${IDLE:-halt}
T_IO_URING=${T_IO_URING:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

for tool in fio jq /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
case "$IDLE" in halt | both) ;; *) echo "IDLE is halt or both, not '$IDLE'" >&2; exit 2 ;; esac
if [ "$IDLE" = both ] && [ "$(id -u)" != 0 ]; then echo "IDLE=both needs root" >&2; exit 1; fi
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
iosat_binary

WORK=$(mktemp -d "${DIR:-$PWD}/iosat-bench.XXXXXX")
IDLE_SAVED="$WORK/idle.saved"
restore_idle() {
  [ -s "$IDLE_SAVED" ] || return 0
  while read -r f v; do echo "$v" >"$f"; done <"$IDLE_SAVED"
  : >"$IDLE_SAVED"
}
on_exit 'restore_idle; rm -rf "$WORK"'
idle() {
  if [ "$1" = poll ]; then
    # Already polling: the saved values are the machine's own; keep them.
    [ -s "$IDLE_SAVED" ] && return 0
    for f in /sys/devices/system/cpu/cpu*/cpuidle/state[1-9]*/disable; do
      [ -e "$f" ] || continue
      echo "$f $(cat "$f")" >>"$IDLE_SAVED"
      echo 1 >"$f"
    done
  else
    restore_idle
  fi
}

FILE="$WORK/data"
lay_out "$FILE"
sleep "$SETTLE"

# run ARM DEPTH -> "iops ios cpu_s" (bench/lib.sh's loops, direct reads)
run() {
  local arm=$1 depth=$2
  case "$arm" in
    fio) run_fio "$depth" 1 ;;
    tiou) run_tiou "$depth" 1 ;;
    iosat-nobpf) IOSAT_ARGS=--no-bpf run_iosat uring "$depth" true 2>/dev/null ;;
    iosat*)
      local tuning=""
      [ "$arm" != iosat ] && tuning=${arm#iosat:}
      IOSAT_URING_TUNING=$tuning run_iosat uring "$depth" true 2>/dev/null
      ;;
    *) echo "unknown arm '$arm'" >&2; exit 2 ;;
  esac | awk '{print $1, $2, $3}'
}

read -r -a arms <<<"$ARMS"
modes=(halt)
[ "$IDLE" = both ] && modes=(halt poll)
echo "## iosat's uring loop variants against fio ($(date -u '+%F %H:%M') UTC, $(uname -r), $(nproc) CPUs, ${SIZE_MB} MiB file, ${DURATION} s per run, $REPEATS interleaved repeats)"
echo
for depth in $DEPTHS; do
  : >"$WORK/runs.$depth"
  # Every (idle mode, arm) pair, rotated per repeat; the idle mode is switched only when it
  # changes.
  pairs=()
  for m in "${modes[@]}"; do for a in "${arms[@]}"; do pairs+=("$m $a"); done; done
  n=${#pairs[@]}
  for r in $(seq 1 "$REPEATS"); do
    for k in $(seq 0 $((n - 1))); do
      j=$(( (k + r - 1) % n ))
      read -r m a <<<"${pairs[j]}"
      idle "$m"
      out=$(run "$a" "$depth")
      echo "depth $depth repeat $r $m $a: $out" >&2
      echo "$r $m $a $out" >>"$WORK/runs.$depth"
    done
    idle halt
  done
  echo "### Depth $depth"
  echo
  echo "| arm | IOPS (median) | IOPS ÷ fio's | CPU per I/O ÷ fio's |"
  echo "|---|---:|---:|---:|"
  for m in "${modes[@]}"; do
    for a in "${arms[@]}"; do
      label=$a
      [ "$m" = poll ] && label="poll/$a"
      iops=$(awk -v m="$m" -v a="$a" '$2 == m && $3 == a {print $4}' "$WORK/runs.$depth" | median)
      # Per repeat: this arm against fio in the same repeat and idle mode.
      ratios=$(awk -v m="$m" -v a="$a" '
        $2 == m && $3 == "fio" {fi[$1] = $4; fc[$1] = $6 / $5}
        $2 == m && $3 == a {ai[$1] = $4; ac[$1] = $6 / $5}
        END {for (r in ai) if (r in fi) print ai[r] / fi[r], ac[r] / fc[r]}' "$WORK/runs.$depth")
      echo "| $label | $(printf '%.0f' "$iops") | $(awk '{print $1}' <<<"$ratios" | stats) | $(awk '{print $2}' <<<"$ratios" | stats) |"
    done
  done
  if [ "$IDLE" = both ]; then
    fio_ratio=$(awk '$3 == "fio" {i[$1 " " $2] = $4} END {for (k in i) {split(k, p, " "); if (p[2] == "poll" && (p[1] " halt") in i) print i[k] / i[p[1] " halt"]}}' "$WORK/runs.$depth" | stats)
    echo
    echo "fio's own IOPS with polling idle ÷ with halting idle, per repeat: $fio_ratio."
  fi
  echo
done
