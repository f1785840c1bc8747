#!/usr/bin/env bash
# iosat exporter against prometheus-node-exporter (Debian) on one fixture root of DEVICES
# disks: CPU time per scrape (user + system, from /proc/<pid>/stat around SCRAPES scrapes)
# and resident memory (VmRSS, VmHWM) of each, node_exporter restricted to its diskstats
# collector. The issue's target: iosat at most half of node_exporter's CPU per scrape.
#
# Usage: bash bench/exporter.sh   Environment: DEVICES (1000), SCRAPES (200),
# IOSAT_PORT (19019), NODE_PORT (19100). Writes a Markdown table to stdout.
set -euo pipefail

DEVICES=${DEVICES:-1000}
SCRAPES=${SCRAPES:-200}
IOSAT_PORT=${IOSAT_PORT:-19019}
NODE_PORT=${NODE_PORT:-19100}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NODE=$(command -v prometheus-node-exporter || command -v node_exporter || true)
[ -n "$NODE" ] || { echo "needs prometheus-node-exporter (Debian package)" >&2; exit 1; }
command -v curl >/dev/null || { echo "needs curl" >&2; exit 1; }

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# A fixture root: DEVICES NVMe namespaces with 20-field lines, an empty sysfs.
mkdir -p "$WORK/proc" "$WORK/sys/block"
awk -v n="$DEVICES" 'BEGIN { for (i = 0; i < n; i++)
  printf " 259 %d nvme%dn1 %d 3 %d 61640 %d 274612 30297210 620316 0 416528 733167 3061 0 2376520 496 48512 50715\n",
    i, i, 212458 + i, 14532810 + i, 601294 + i }' > "$WORK/proc/diskstats"

cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
"$ROOT/target/release/iosat" exporter --all --no-profile \
  --web.listen-address "127.0.0.1:$IOSAT_PORT" \
  --proc-root "$WORK/proc" --sys-root "$WORK/sys" 2>/dev/null &
PIDS+=($!)
"$NODE" --web.listen-address "127.0.0.1:$NODE_PORT" \
  --path.procfs "$WORK/proc" --path.sysfs "$WORK/sys" \
  --collector.disable-defaults --collector.diskstats 2>/dev/null &
PIDS+=($!)

wait_up() {
  for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$1/metrics" && return 0; sleep 0.1; done
  echo "nothing answers on port $1" >&2; exit 1
}
wait_up "$IOSAT_PORT"
wait_up "$NODE_PORT"

# utime + stime of a process, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
mem_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
TCK=$(getconf CLK_TCK)

measure() { # name pid port
  local before after bytes
  bytes=$(curl -s "http://127.0.0.1:$3/metrics" | wc -c)
  before=$(cpu_ticks "$2")
  for _ in $(seq "$SCRAPES"); do curl -s -o /dev/null "http://127.0.0.1:$3/metrics"; done
  after=$(cpu_ticks "$2")
  awk -v n="$1" -v t=$((after - before)) -v s="$SCRAPES" -v tck="$TCK" -v b="$bytes" \
    -v rss="$(mem_kb "$2" VmRSS)" -v hwm="$(mem_kb "$2" VmHWM)" \
    'BEGIN { printf "| %s | %.2f | %d | %.1f | %.1f |\n", n, t / tck / s * 1000, b, rss / 1024, hwm / 1024 }'
}

echo "$DEVICES devices, $SCRAPES scrapes each ($(uname -r), $(nproc) CPUs)"
echo
echo "| exporter | CPU ms/scrape | bytes/scrape | RSS MiB | peak RSS MiB |"
echo "|---|---|---|---|---|"
measure "iosat exporter" "${PIDS[0]}" "$IOSAT_PORT"
measure "node_exporter $("$NODE" --version 2>&1 | awk 'NR == 1 { print $3 }') (diskstats only)" "${PIDS[1]}" "$NODE_PORT"
