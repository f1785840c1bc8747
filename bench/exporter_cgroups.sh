#!/usr/bin/env bash
# The cost of `iosat exporter --cgroups` (issue 40) at the largest real configuration this
# machine's BPF map holds: LOOPS loop devices (of the 64 device slots) x CGROUPS cgroup v1
# blkio cgroups of its own, each cgroup reading each device, so the kernel's per-cgroup map
# has LOOPS x CGROUPS read entries (its capacity is 1,024 entries on a 2-CPU machine, fewer
# with more CPUs: `docs/cgroups.md`). Real devices, real cgroups, the real BPF program: no
# fixture can feed the cgroup families, which come only from the BPF source.
#
# Two exporters over the same devices, both with the BPF source, one with --cgroups and one
# without, scraped ROUNDS x SCRAPES times each, interleaved; CPU time (user + system, from
# /proc/<pid>/stat) per scrape. The difference is what the cgroup families cost a scrape:
# their rendering plus the once-a-second reading of the kernel's map and the cgroups' files
# that falls within the scrapes' time (both count, as a scraped host pays both).
#
# Root, BTF, a v1 blkio hierarchy, losetup and dd. Usage: bash bench/exporter_cgroups.sh
# Environment: LOOPS (64), CGROUPS (15), SCRAPES (200), ROUNDS (2), IOSAT
# (target/release/iosat, built if absent), PORT_A (19029), PORT_B (19039).
# Writes a Markdown table to stdout. Leaves nothing behind (trap): exporters stopped, cgroups
# removed, loop devices detached, files deleted.
set -euo pipefail

LOOPS=${LOOPS:-64}
CGROUPS=${CGROUPS:-15}
SCRAPES=${SCRAPES:-200}
ROUNDS=${ROUNDS:-2}
PORT_A=${PORT_A:-19029}
PORT_B=${PORT_B:-19039}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
IOSAT=${IOSAT:-$ROOT/target/release/iosat}
BLKIO=/sys/fs/cgroup/blkio
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
[ -d "$BLKIO" ] || { echo "needs a cgroup v1 blkio hierarchy at $BLKIO" >&2; exit 1; }
command -v curl >/dev/null || { echo "needs curl" >&2; exit 1; }
[ -x "$IOSAT" ] || cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"

WORK=$(mktemp -d)
PIDS=()
DEVS=()
CGS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  for c in "${CGS[@]}"; do rmdir "$c" 2>/dev/null || true; done
  for d in "${DEVS[@]}"; do losetup -d "$d" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

for i in $(seq "$LOOPS"); do
  truncate -s 16M "$WORK/d$i"
  DEVS+=("$(losetup -f --show "$WORK/d$i")")
done
INCLUDE=()
for d in "${DEVS[@]}"; do INCLUDE+=(--device-include "${d#/dev/}"); done

start() { # port, extra flags...
  local port=$1
  shift
  mkdir -p "$WORK/state$port"
  "$IOSAT" exporter "${INCLUDE[@]}" --no-profile --no-learn --hindsight 0 \
    --state-dir "$WORK/state$port" --web.listen-address "127.0.0.1:$port" "$@" \
    >"$WORK/log$port" 2>&1 &
  PIDS+=($!)
}
start "$PORT_A" --cgroups
start "$PORT_B"
wait_up() {
  for _ in $(seq 200); do curl -sf -o /dev/null "http://127.0.0.1:$1/metrics" && return 0; sleep 0.1; done
  echo "nothing answers on port $1: $(cat "$WORK/log$1")" >&2; exit 1
}
wait_up "$PORT_A"
wait_up "$PORT_B"

# Each cgroup reads 8 blocks of each device (direct, so each read reaches the device).
for i in $(seq "$CGROUPS"); do
  c="$BLKIO/iosatbench$$-$i"
  mkdir "$c"
  CGS+=("$c")
  sh -c 'echo $$ > "$1/cgroup.procs"; shift; for d; do
           dd if="$d" of=/dev/null bs=4k count=8 iflag=direct status=none; done' \
    sh "$c" "${DEVS[@]}"
done
sleep 3 # two of the exporter's one-second ticks

body=$(curl -s "http://127.0.0.1:$PORT_A/metrics")
series=$(grep -c '^iosat_cgroup_' <<<"$body" || true)
requests=$(grep -c "^iosat_cgroup_disk_requests_total{.*cgroup=\"/iosatbench$$-" <<<"$body" || true)
unattributed=$(awk '/^iosat_cgroup_disk_unattributed_completions_total/ { print $2 }' <<<"$body")

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
TCK=$(getconf CLK_TCK)
declare -A TICKS=([a]=0 [b]=0)
measure() { # key pid port
  local before after
  before=$(cpu_ticks "$2")
  for _ in $(seq "$SCRAPES"); do curl -s -o /dev/null "http://127.0.0.1:$3/metrics"; done
  after=$(cpu_ticks "$2")
  TICKS[$1]=$((TICKS[$1] + after - before))
}
for _ in $(seq "$ROUNDS"); do
  measure a "${PIDS[0]}" "$PORT_A"
  measure b "${PIDS[1]}" "$PORT_B"
done
n=$((SCRAPES * ROUNDS))
bytes_a=$(curl -s "http://127.0.0.1:$PORT_A/metrics" | wc -c)
bytes_b=$(curl -s "http://127.0.0.1:$PORT_B/metrics" | wc -c)

echo "$LOOPS loop devices x $CGROUPS cgroups (v1 blkio): $requests cgroup read series of the bench's"
echo "cgroups, $series iosat_cgroup_* samples, $unattributed completions unattributed (map full);"
echo "$ROUNDS x $SCRAPES scrapes each, interleaved ($(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg))"
echo
echo "| exporter | CPU ms/scrape | bytes/scrape |"
echo "|---|---|---|"
awk -v t="${TICKS[a]}" -v n="$n" -v tck="$TCK" -v b="$bytes_a" \
  'BEGIN { printf "| --cgroups | %.2f | %d |\n", t / tck / n * 1000, b }'
awk -v t="${TICKS[b]}" -v n="$n" -v tck="$TCK" -v b="$bytes_b" \
  'BEGIN { printf "| without | %.2f | %d |\n", t / tck / n * 1000, b }'
awk -v a="${TICKS[a]}" -v b="${TICKS[b]}" -v n="$n" -v tck="$TCK" \
  'BEGIN { printf "| difference: the cgroup families | %.2f | |\n", (a - b) / tck / n * 1000 }'
