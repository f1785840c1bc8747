#!/usr/bin/env bash
# What the hindsight ring costs the exporter (issue 41): CPU per scrape and memory with the
# ring off, at 1 s and at 100 ms, on a fixture root of 10 and of 1,000 disks, runs interleaved
# (off, 1 s, 100 ms, off, ...) and repeated. Each run starts `iosat exporter --all` on the
# fixture, waits WARMUP seconds, then scrapes once a second SCRAPES times (Prometheus's
# cadence at its fastest): CPU per scrape is everything the process spent meanwhile (the
# scrape, the one-second learning tick, the burst windows, the ring's own samples) divided by
# the scrapes. Memory: VmRSS at the end, and the ring's own bytes and samples
# (iosat_hindsight_held_bytes, iosat_hindsight_held_samples), from which the bytes a sample
# holds and the 15 minutes' total (or the --hindsight-max-mb cap, 64 MiB) follow.
#
# Usage: bash bench/hindsight_exporter.sh   Environment: DEVICE_COUNTS ("10 1000"),
# REPEATS (3), WARMUP (5), SCRAPES (15), IOSAT (a built binary: skips the release build),
# PORT (19029). Markdown to stdout, one line per run to stderr.
set -euo pipefail

DEVICE_COUNTS=${DEVICE_COUNTS:-"10 1000"}
REPEATS=${REPEATS:-3}
WARMUP=${WARMUP:-5}
SCRAPES=${SCRAPES:-15}
PORT=${PORT:-19029}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
command -v curl >/dev/null || { echo "needs curl" >&2; exit 1; }
if [ -z "${IOSAT:-}" ]; then
  cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
  IOSAT=$ROOT/target/release/iosat
fi

WORK=$(mktemp -d)
PID=""
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

TCK=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
rss_kb() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status"; }
metric() { awk -v m="$1" '$1 == m { print $2 }' "$2"; }

# One run: devices, mode (off, 1s, 100ms) → "cpu_ms_per_scrape rss_mib ring_bytes held".
run() {
  local n=$1 mode=$2 args=()
  mkdir -p "$WORK/$n/proc" "$WORK/$n/sys/block"
  [ -s "$WORK/$n/proc/diskstats" ] || awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++)
    printf " 259 %d nvme%dn1 %d 3 %d 61640 %d 274612 30297210 620316 0 416528 733167 3061 0 2376520 496 48512 50715\n",
      i, i, 212458 + i, 14532810 + i, 601294 + i }' > "$WORK/$n/proc/diskstats"
  rm -rf "$WORK/hs"
  case $mode in
    off) args=(--hindsight 0) ;;
    *) args=(--hindsight 15m --hindsight-interval "$mode" --hindsight-dir "$WORK/hs") ;;
  esac
  "$IOSAT" exporter --all --no-profile --web.listen-address "127.0.0.1:$PORT" \
    --proc-root "$WORK/$n/proc" --sys-root "$WORK/$n/sys" "${args[@]}" 2>/dev/null &
  PID=$!
  for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/metrics" && break; sleep 0.1; done
  sleep "$WARMUP"
  local before after
  before=$(cpu_ticks "$PID")
  for _ in $(seq "$SCRAPES"); do
    curl -s -o "$WORK/last" "http://127.0.0.1:$PORT/metrics"
    sleep 1
  done
  after=$(cpu_ticks "$PID")
  local rss ring held
  rss=$(rss_kb "$PID")
  ring=$(metric iosat_hindsight_held_bytes "$WORK/last")
  held=$(metric iosat_hindsight_held_samples "$WORK/last")
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
  awk -v t=$((after - before)) -v s="$SCRAPES" -v tck="$TCK" -v rss="$rss" \
    -v ring="${ring:-0}" -v held="${held:-0}" \
    'BEGIN { printf "%.2f %.1f %d %d\n", t / tck / s * 1000, rss / 1024, ring, held }'
}

declare -A CPU RSS RING HELD
for n in $DEVICE_COUNTS; do
  for r in $(seq "$REPEATS"); do
    for mode in off 1s 100ms; do
      read -r c m b h < <(run "$n" "$mode")
      echo "$n devices, ring $mode, repeat $r: $c ms/scrape, RSS $m MiB, ring $b bytes in $h samples" >&2
      CPU[$n,$mode]+="$c "; RSS[$n,$mode]+="$m "; RING[$n,$mode]=$b; HELD[$n,$mode]=$h
    done
  done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
echo "$REPEATS interleaved repeats, $SCRAPES scrapes a second apart after ${WARMUP} s ($(uname -r), $(nproc) CPUs)"
echo
echo "| devices | ring | CPU ms/scrape (median; runs) | ÷ ring off | RSS MiB (median) | bytes per sample held | 15 minutes at this interval |"
echo "|---|---|---|---|---|---|---|"
for n in $DEVICE_COUNTS; do
  off=$(echo "${CPU[$n,off]}" | median)
  for mode in off 1s 100ms; do
    c=$(echo "${CPU[$n,$mode]}" | median)
    m=$(echo "${RSS[$n,$mode]}" | median)
    awk -v n="$n" -v mode="$mode" -v c="$c" -v off="$off" -v m="$m" -v runs="${CPU[$n,$mode]}" \
      -v b="${RING[$n,$mode]}" -v h="${HELD[$n,$mode]}" 'BEGIN {
        per = (h > 0) ? b / h : 0
        if (mode == "off") { span = "-" } else {
          k = (mode == "1s") ? 900 : 9000
          tot = per * k; cap = 64 * 1048576
          span = (tot > cap) ? sprintf("%.1f MiB, capped at 64 MiB", tot / 1048576) : sprintf("%.1f MiB", tot / 1048576)
        }
        printf "| %d | %s | %.2f (%s) | %.3f | %.1f | %s | %s |\n", n, mode, c, runs, (off > 0) ? c / off : 0, m,
          (h > 0) ? sprintf("%.0f", per) : "-", span }'
  done
done
