#!/usr/bin/env bash
# iosat fsync against fio (--fsync=1 / --fdatasync=1) and pg_test_fsync, side by side.
#
# Same filesystem, same write size (8 KiB, pg_test_fsync's fixed size), same pattern (a 2 MiB
# preallocated file rewritten in place, buffered write then fsync/fdatasync, one at a time),
# tools interleaved within each repeat so drift hits them alike.
#
# iosat never writes to a file it did not create, so "the same file" means: iosat's own
# temporary file and fio's bench file in the same directory, of the same size, rewritten the
# same way; pg_test_fsync uses its own 16 MiB file there too (8 kB at offset 0 each time).
#
# What is compared:
#   iosat:  latency of write + fsync (or fdatasync), HdrHistogram percentiles.
#   fio:    write latency (clat) and sync latency are reported apart; a commit is one of each,
#           so commits/s is fio's write IOPS and the commit latency is their sum (per percentile
#           the sum is an upper bound; the means add exactly).
#   pg_test_fsync: ops/sec and usecs/op (mean only) of "one 8kB write".
#
# Usage: bench/fsync_vs_fio.sh [DIR|--loop-tmpfs] [REPEATS] [SECONDS]
#   --loop-tmpfs (root): run on ext4 on a loop device whose backing file is on a tmpfs the
#   script mounts (and removes): flushes cost nothing there, so what is compared is the tools'
#   own measurement of the same kernel path, without a noisy shared disk underneath.
#     (defaults: a temp dir under
#        the current directory, 3 repeats, 5 s per run: about 3 minutes in all;
#        pg_test_fsync gets min(SECONDS, 2) per test, it runs about 14 of them)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/bench/lib.sh"
parent=${1:-.}
repeats=${2:-3}
secs=${3:-5}
bs=8192
pg_secs=$(( secs < 2 ? secs : 2 ))
region=$((256 * bs))

iosat=$here/target/release/iosat
if [[ ! -x $iosat ]]; then
    (cd "$here" && cargo build --release --quiet)
fi
command -v fio >/dev/null || { echo "fio not found" >&2; exit 1; }
pg=$(ls /usr/lib/postgresql/*/bin/pg_test_fsync 2>/dev/null | tail -n1 || true)

cleanup() {
    loop_tmpfs_down
}
trap 'rm -rf "${work:-/nonexistent}"; cleanup' EXIT
if [[ $parent == --loop-tmpfs ]]; then
    loop_tmpfs_up 600 512
    parent=$loop_base/mnt
fi
work=$(mktemp -d "$parent/.iosat-bench.XXXXXX")
results=$work/results.tsv
: >"$results"

iosat_run() { # method repeat
    "$iosat" fsync "$work" --methods "$1" --sizes $bs --mode overwrite --duration "$secs" \
        --committers none --json >"$work/iosat.json"
    python3 - "$work/iosat.json" "$1" "$2" >>"$results" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
c = r["cases"][0]
l = c["latency_ns"]
print("\t".join(map(str, [sys.argv[3], "iosat", sys.argv[2], f'{c["commits_per_s"]:.1f}',
      f'{l["mean"]/1e3:.1f}', f'{l["p50"]/1e3:.1f}', f'{l["p95"]/1e3:.1f}', f'{l["p99"]/1e3:.1f}'])))
EOF
}

fio_run() { # method repeat
    rm -f "$work/fio.file"
    fio --name=commit --filename="$work/fio.file" --size=$region --bs=$bs --rw=write \
        --ioengine=sync --"$1"=1 --time_based --runtime="$secs" --direct=0 \
        --percentile_list=50:95:99 --output-format=json >"$work/fio.json"
    python3 - "$work/fio.json" "$1" "$2" >>"$results" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
w, s = j["write"], j["sync"]
wl, sl = w["clat_ns"], s["lat_ns"]
def pct(d, k):
    return d.get("percentile", {}).get(k, 0)
def both(k):
    return (pct(wl, k) + pct(sl, k)) / 1e3
print("\t".join(map(str, [sys.argv[3], "fio", sys.argv[2], f'{w["iops"]:.1f}',
      f'{(wl["mean"] + sl["mean"])/1e3:.1f}', f'{both("50.000000"):.1f}',
      f'{both("95.000000"):.1f}', f'{both("99.000000"):.1f}'])))
EOF
    rm -f "$work/fio.file"
}

pg_run() { # repeat (pg_test_fsync runs ~14 tests; 2 s each keeps a repeat short)
    "$pg" -f "$work/pg.file" -s "$pg_secs" >"$work/pg.txt" 2>&1
    python3 - "$work/pg.txt" "$1" >>"$results" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
one = text.split("one 8kB write")[1].split("Compare")[0]
for name in ("fdatasync", "fsync"):
    m = re.search(r"^\s+" + name + r"\s+([\d.]+) ops/sec\s+(\d+) usecs/op", one, re.M)
    if m:
        print("\t".join([sys.argv[2], "pg_test_fsync", name, m.group(1), m.group(2), "-", "-", "-"]))
EOF
    rm -f "$work/pg.file"
}

echo "iosat fsync vs fio vs pg_test_fsync: $(findmnt -no SOURCE,FSTYPE -T "$work" | tr -s ' '), ${bs} B writes, ${secs} s per run, $repeats repeats" >&2
for r in $(seq 1 "$repeats"); do
    for m in fsync fdatasync; do
        if (( r % 2 )); then iosat_run $m $r; fio_run $m $r; else fio_run $m $r; iosat_run $m $r; fi
    done
    [[ -n $pg ]] && pg_run $r
done

python3 - "$results" <<'EOF'
import sys, statistics
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
print("| repeat | tool | method | commits/s | mean µs | p50 µs | p95 µs | p99 µs |")
print("|---:|---|---|---:|---:|---:|---:|---:|")
for r in rows:
    print("| " + " | ".join(r) + " |")
print()
print("Medians over repeats, and iosat relative to fio:")
print()
print("| method | tool | commits/s | mean µs | p50 µs | p95 µs | p99 µs |")
print("|---|---|---:|---:|---:|---:|---:|")
med = {}
for m in ("fsync", "fdatasync"):
    for t in ("iosat", "fio", "pg_test_fsync"):
        sel = [r for r in rows if r[1] == t and r[2] == m]
        if not sel:
            continue
        cols = []
        for i in range(3, 8):
            vals = [float(r[i]) for r in sel if r[i] != "-"]
            cols.append(statistics.median(vals) if vals else None)
        med[(m, t)] = cols
        print(f"| {m} | {t} | " + " | ".join("-" if v is None else f"{v:.1f}" for v in cols) + " |")
print()
for m in ("fsync", "fdatasync"):
    a, b = med.get((m, "iosat")), med.get((m, "fio"))
    if a and b:
        diffs = ", ".join(f"{n} {100*(x-y)/y:+.1f}%" for n, x, y in zip(["commits/s", "mean", "p50", "p95", "p99"], a, b) if x and y)
        print(f"- {m}: iosat vs fio: {diffs}")
    p = med.get((m, "pg_test_fsync"))
    if a and p:
        print(f"- {m}: iosat vs pg_test_fsync: commits/s {100*(a[0]-p[0])/p[0]:+.1f}%, mean {100*(a[1]-p[1])/p[1]:+.1f}%")
EOF
