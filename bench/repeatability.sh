#!/usr/bin/env bash
# Is the verdict the same twice? Five (RUNS) back-to-back default `iosat sweep` runs on the
# same directory, and how far their knees and overload points move: in levels of the sweep's
# own series (1, 2, 4, ...), and whether each run's stated range covers the others' points.
# A verdict that moves by more than one level between runs on a quiet machine must say so in
# its range (issue 10).
#
# Usage: bash bench/repeatability.sh [DIR]   (DIR: where the test files go, default: a
# temporary directory under the current one). Environment: RUNS (5), EXTRA (more sweep flags).
# Writes a Markdown summary to stdout, each run's verdict lines to stderr.
set -euo pipefail

RUNS=${RUNS:-5}
EXTRA=${EXTRA:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
command -v jq >/dev/null || { echo "needs jq" >&2; exit 1; }
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
IOSAT="$ROOT/target/release/iosat"
WORK=$(mktemp -d "${1:-$PWD}/iosat-repeat.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM

# log2 of a power-of-two level: its position in the default series.
pos() { awk -v n="$1" 'BEGIN { if (n == "" || n == "null") print "-"; else printf "%d\n", log(n)/log(2) + 0.5 }'; }

echo "| run | seconds | knee | knee range | overload from | overload range | unstable levels |"
echo "|---:|---:|---:|---|---:|---|---|"
: >"$WORK/points"
for r in $(seq 1 "$RUNS"); do
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$IOSAT" sweep "$WORK" --no-progress --json $EXTRA >"$WORK/r$r.json" 2>/dev/null || true
  t1=$(date +%s.%N)
  jq -r '.verdict.summary[]' "$WORK/r$r.json" | sed "s/^/run $r: /" >&2
  jq -r --arg r "$r" --arg s "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')" '.verdict as $v |
    "| \($r) | \($s) | \($v.knee_concurrency) | \(($v.knee_range // []) | map(tostring) | join("–")) | \($v.overload_concurrency // "-") | \(($v.overload_range // []) | map(tostring) | join("–")) | \(($v.unstable_levels // []) | map(tostring) | join(", ")) |"' \
    "$WORK/r$r.json"
  jq -r '.verdict | "\(.knee_concurrency) \((.knee_range // [.knee_concurrency, .knee_concurrency]) | join(" ")) \(.overload_concurrency // "null") \((.overload_range // [.overload_concurrency, .overload_concurrency]) | map(tostring) | join(" "))"' \
    "$WORK/r$r.json" >>"$WORK/points"
done

# Movement in levels, and whether every run's range covers every other run's point.
read -r kmin kmax <<<"$(awk '{print $1}' "$WORK/points" | sort -n | awk 'NR==1 {a=$1} {b=$1} END {print a, b}')"
read -r omin omax <<<"$(awk '$4 != "null" {print $4}' "$WORK/points" | sort -n | awk 'NR==1 {a=$1} {b=$1} END {print a, b}')"
cover() { # column of the point, columns of the range
  awk -v p="$1" -v lo="$2" -v hi="$3" '{pts[NR] = $p; los[NR] = $lo; his[NR] = $hi}
    END { ok = 0; n = 0; for (i in pts) for (j in pts) if (i != j && pts[j] != "null" && los[i] != "null") { n++; if (pts[j] + 0 >= los[i] + 0 && pts[j] + 0 <= his[i] + 0) ok++ } printf "%d of %d", ok, n }' "$WORK/points"
}
echo
echo "Knee: from $kmin to $kmax ($(( $(pos "$kmax") - $(pos "$kmin") )) levels apart); a run's knee range covers another run's knee in $(cover 1 2 3) pairs."
if [ -n "${omin:-}" ]; then
  echo "Overload: from $omin to $omax ($(( $(pos "$omax") - $(pos "$omin") )) levels apart); a run's overload range covers another run's point in $(cover 4 5 6) pairs."
fi
