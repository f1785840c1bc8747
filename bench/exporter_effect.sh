#!/usr/bin/env bash
# Does scraping the exporter disturb the disk it watches? `iosat sweep` at one level on a file
# of this machine's own disk, REPEATS times with and REPEATS times without `iosat exporter`
# (the real /proc and /sys, every device) being scraped every INTERVAL seconds, interleaved;
# the median IOPS and mean latency of each and their ratio (issue 13: no measurable effect).
#
# Usage: bash bench/exporter_effect.sh [DIR]   Environment: REPEATS (5), LEVEL (16),
# DURATION (3 s per sweep), INTERVAL (0.1 s between scrapes: 150x Prometheus's usual 15 s),
# PORT (19029). Writes a Markdown table to stdout, per-run lines to stderr.
set -euo pipefail

REPEATS=${REPEATS:-5}
LEVEL=${LEVEL:-16}
DURATION=${DURATION:-3}
INTERVAL=${INTERVAL:-0.1}
PORT=${PORT:-19029}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
for tool in curl jq; do command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }; done
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
IOSAT="$ROOT/target/release/iosat"
WORK=$(mktemp -d "${1:-$PWD}/iosat-effect.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

"$IOSAT" exporter --all --no-profile --web.listen-address "127.0.0.1:$PORT" 2>/dev/null &
PIDS+=($!)
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/metrics" >/dev/null && break; sleep 0.1; done

sweep() { # -> "iops mean_ns"
  "$IOSAT" sweep "$WORK" --size 512m --levels "$LEVEL" --duration "$DURATION" --ramp 0.5 \
    --no-progress --json 2>/dev/null | jq -r '.levels[0] | "\(.iops) \(.latency_ns.mean)"'
}
scraped() {
  ( while :; do curl -sf "http://127.0.0.1:$PORT/metrics" >/dev/null; sleep "$INTERVAL"; done ) &
  local s=$!
  sweep
  kill "$s"; wait "$s" 2>/dev/null || true
}
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

: >"$WORK/on"; : >"$WORK/off"
for r in $(seq 1 "$REPEATS"); do
  if (( r % 2 )); then on=$(scraped); off=$(sweep); else off=$(sweep); on=$(scraped); fi
  echo "run $r: scraped [$on] quiet [$off]" >&2
  echo "$on" >>"$WORK/on"; echo "$off" >>"$WORK/off"
done
io=$(awk '{print $1}' "$WORK/on" | median); iq=$(awk '{print $1}' "$WORK/off" | median)
lo=$(awk '{print $2}' "$WORK/on" | median); lq=$(awk '{print $2}' "$WORK/off" | median)
echo "| sweep at concurrency $LEVEL | IOPS | mean latency µs |"
echo "|---|---:|---:|"
awk -v a="$io" -v b="$lo" 'BEGIN {printf "| exporter scraped every '"$INTERVAL"' s | %.0f | %.1f |\n", a, b/1e3}'
awk -v a="$iq" -v b="$lq" 'BEGIN {printf "| no scrapes | %.0f | %.1f |\n", a, b/1e3}'
awk -v a="$io" -v b="$iq" -v c="$lo" -v d="$lq" 'BEGIN {printf "| ratio | %.3f | %.3f |\n", a/b, c/d}'
echo
echo "Per-run IOPS ratios: $(paste -d' ' "$WORK/on" "$WORK/off" | awk '{printf "%.3f ", $1/$3}')"
