#!/usr/bin/env bash
# Issue 38's acceptance on this machine's own disk: does the open loop keep its schedule on a
# fast disk? One `iosat sweep DIR --levels auto --rate auto` (a closed-loop pass, then 25, 50,
# 80, 100 and 120 % of its maximum), then an explicit `--rate` list at 10, 25 and 50 % of that
# maximum, each repeated. For every open-loop level: offered and achieved IOPS, the pool
# (Little's law), whether it was kept and whose lateness it was (behind.lag), the device's p99
# (from submission) beside the generator's lateness p99, and the generator's CPU wait share.
#
# 4 KiB random direct reads of a file in a temporary directory on the root filesystem (a file,
# never the device node), removed at the end.
# Environment: REPEATS (3), DURATION (2) and RAMP (0.5) seconds per level, SIZE (256m), DIR
# (a temporary directory under /var/tmp), IOSAT (the release build unless set).
# Writes a Markdown table to stdout and the raw JSON of each run to stderr.
set -euo pipefail

REPEATS=${REPEATS:-3}
DURATION=${DURATION:-2}
RAMP=${RAMP:-0.5}
SIZE=${SIZE:-256m}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
IOSAT=${IOSAT:-$ROOT/target/release/iosat}
source "$ROOT/bench/lib.sh"

command -v jq >/dev/null || { echo "needs jq" >&2; exit 2; }
DIR=${DIR:-$(mktemp -d /var/tmp/iosat-bench-open.XXXXXX)}
on_exit "rm -rf '$DIR'"

common=(--size "$SIZE" --duration "$DURATION" --ramp "$RAMP" --no-progress --json)
rows() {
  # One Markdown row per open-loop level of the JSON on stdin, labelled $1.
  jq -r --arg run "$1" '
    (.verdict.peak_iops // 0) as $max |
    .open_levels[] |
    "| \($run) | \(.offered_iops | round) | \(.iops | round) | \(.max_inflight) | " +
    "\(if .behind.kept then "yes" else "no" end) | \(.behind.lag // "-") | " +
    "\(.service_latency_ns.p99 / 1000 | round) | \(.behind.p99_ns / 1000 | round) | " +
    "\(if .behind.cpu_wait_share then (.behind.cpu_wait_share * 100 | round | tostring) + " %" else "-" end) |"'
}

echo "| run | offered | achieved | pool | kept | lag | device p99 µs | lateness p99 µs | CPU wait |"
echo "|---|---|---|---|---|---|---|---|---|"
for rep in $(seq "$REPEATS"); do
  auto=$("$IOSAT" sweep "$DIR" --levels auto --rate auto "${common[@]}")
  echo "$auto" >&2
  max=$(echo "$auto" | jq '.verdict.peak_iops')
  echo "$auto" | rows "auto #$rep (closed max $(printf '%.0f' "$max"))"
  list=$(awk -v m="$max" 'BEGIN { printf "%.0f,%.0f,%.0f", m * 0.1, m * 0.25, m * 0.5 }')
  open=$("$IOSAT" sweep "$DIR" --rate "$list" "${common[@]}")
  echo "$open" >&2
  echo "$open" | rows "list #$rep"
done
