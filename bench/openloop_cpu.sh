#!/usr/bin/env bash
# The CPU cost of the open loop's two generators (iosat sweep --rate): one thread on io_uring
# (--engine uring) against the pool of threads with one pread each (--engine sync), on the same
# file at the same offered rates, interleaved and repeated.
#
# 4 KiB random direct reads of a file of this machine's own filesystem (O_DIRECT: no page
# cache). Each (rate, generator, repeat) runs twice, a LONG and a SHORT level; the CPU time of
# the whole process (user + system, from GNU time) of the short run is taken from the long
# one's, so the start-up, the layout check and the report cancel and what remains is the
# generator's CPU over LONG-SHORT seconds of offered load: printed as CPU per second (% of one
# core) and µs of CPU per completed request, with the achieved rate, the latency from the
# intended start (p50, p99) and the lateness of submissions (p99) of the long run.
#
# Environment: REPEATS (3), RATES ("2000 20000"), LONG (6) and SHORT (2) seconds per level,
# MAX_INFLIGHT (64), DIR (a temporary directory under the current one), SIZE_MB of the test
# file (1024), IOSAT (the release build unless set), CHRT ("" or e.g. "chrt -f 1" to run
# iosat at real-time priority).
# Writes a Markdown summary to stdout and raw per-run lines to stderr.
set -euo pipefail

REPEATS=${REPEATS:-3}
RATES=${RATES:-"2000 20000"}
LONG=${LONG:-6}
SHORT=${SHORT:-2}
MAX_INFLIGHT=${MAX_INFLIGHT:-64}
SIZE_MB=${SIZE_MB:-1024}
CHRT=${CHRT:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

for tool in fio jq /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
iosat_binary

WORK=$(mktemp -d "${DIR:-$PWD}/.iosat-bench-openloop-cpu.XXXXXX")
on_exit "rm -rf '$WORK'"
FILE="$WORK/data"
lay_out "$FILE"

# run ENGINE RATE SECONDS -> "cpu_s iops lat_p50 lat_p99 late_p99 generator" (ns)
run() {
  # shellcheck disable=SC2086
  /usr/bin/time -f "%U %S" -o "$WORK/time" $CHRT "$IOSAT" sweep "$FILE" --engine "$1" \
    --rate "$2" --max-inflight "$MAX_INFLIGHT" --duration "$3" --ramp 0.3 --no-progress \
    --json >"$WORK/iosat.json" || stop_if_interrupted $?
  local cpu
  cpu=$(awk '{ print $1 + $2 }' "$WORK/time")
  echo "$cpu $(jq -r '.open_levels[0] as $l | "\($l.iops) \($l.latency_ns.p50) \($l.latency_ns.p99) \($l.behind.p99_ns) \(.open_loop.generator)"' "$WORK/iosat.json")"
}

echo "## iosat sweep --rate: CPU of the io_uring and the threads' generators, $(date -u +%Y-%m-%d), $REPEATS repeats, ${LONG} s - ${SHORT} s levels${CHRT:+, under $CHRT}"
echo
echo "| rate | generator | CPU (% of a core) | CPU µs per request | achieved IOPS | lat p50 (µs) | lat p99 (µs) | late p99 (µs) |"
echo "|---|---|---|---|---|---|---|---|"
for rate in $RATES; do
  : >"$WORK/uring"
  : >"$WORK/sync"
  for rep in $(seq "$REPEATS"); do
    order="uring sync"
    [ $((rep % 2)) -eq 0 ] && order="sync uring"
    for engine in $order; do
      l=$(run "$engine" "$rate" "$LONG")
      s=$(run "$engine" "$rate" "$SHORT")
      echo "rate $rate $engine rep $rep long: $l | short: $s" >&2
      # shellcheck disable=SC2086
      set -- $l $s
      awk -v cl="$1" -v iops="$2" -v p50="$3" -v p99="$4" -v late="$5" -v cs="$7" \
        -v d="$((LONG - SHORT))" \
        'BEGIN { c = (cl - cs) / d; printf "%.2f %.2f %.0f %.0f %.0f %.0f\n", 100 * c, 1e6 * c / iops, iops, p50 / 1e3, p99 / 1e3, late / 1e3 }' \
        >>"$WORK/$engine"
    done
  done
  for engine in uring sync; do
    name=$([ "$engine" = uring ] && echo io_uring || echo threads)
    # Medians over the repeats, and the range of the CPU figures.
    sort -n -k1 "$WORK/$engine" | awk -v rate="$rate" -v name="$name" '
      { cpu[NR] = $1; per[NR] = $2; iops[NR] = $3; p50[NR] = $4; p99[NR] = $5; late[NR] = $6 }
      function med(a,   n, i, j, t, b) {
        n = 0; for (i in a) b[++n] = a[i]
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
        return n % 2 ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2
      }
      END {
        printf "| %s | %s | %.1f (%.1f-%.1f) | %.1f | %.0f | %.0f | %.0f | %.0f |\n", rate, name,
          med(cpu), cpu[1], cpu[NR], med(per), med(iops), med(p50), med(p99), med(late)
      }'
  done
done
