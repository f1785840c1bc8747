#!/usr/bin/env bash
# iosat fsync --like postgres against pg_test_fsync, side by side (issue 31).
#
# Same directory, same write size (8 kB, XLOG_BLCKSZ), the same four wal_sync_method settings
# opened the same way (pg_test_fsync opens open_datasync and open_sync with O_DIRECT where the
# platform has it; so does iosat), one and two 8 kB writes per commit, and the non-synced
# ceiling ("write"). Each repeat runs both tools, the order alternating between repeats, so
# drift hits them alike; the figure per tool is the median of the repeats; the check is each
# setting's operations per second within 15 %.
#
# What differs by design: pg_test_fsync rewrites offsets 0 (and 8192) of its 16 MB file;
# iosat writes in order through a zero-filled 16 MiB segment (as the WAL is written) and
# stamps every block so it can read them back afterwards. Both rewrite allocated blocks, so
# the filesystem does the same work.
#
# Usage: bench/fsync_vs_pg.sh [DIR|--loop-tmpfs|--knowndev] [REPEATS] [SECONDS]
#   --loop-tmpfs (root): ext4 on a loop device whose backing file is on a tmpfs the script
#   mounts (and removes): flushes cost almost nothing, so both tools measure microseconds of
#   CPU, and on a shared machine the scheduler's noise is as large as the figures.
#   --knowndev (root, /dev/fuse): ext4 on the known test device (tests/it/support/knowndev.rs) with
#   writes of KNOWNDEV_WRITE_MS (1) and flushes of KNOWNDEV_FLUSH_MS (20), held by the ignored
#   test fsync_like::hold and torn down by it when the script ends: a device whose commits
#   take what a real disk's do, the same for both tools.
#   Defaults: a temp dir under the current directory, 5 repeats, 2 s per test (pg_test_fsync
#   runs 16 tests, iosat 10 settings: about 5 minutes in all).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/bench/lib.sh"
parent=${1:-.}
repeats=${2:-5}
secs=${3:-2}

iosat=$here/target/release/iosat
if [[ ! -x $iosat ]]; then
    (cd "$here" && cargo build --release --quiet)
fi
pg=$(ls /usr/lib/postgresql/*/bin/pg_test_fsync 2>/dev/null | tail -n1 || true)
[[ -n $pg ]] || { echo "pg_test_fsync not found (apt-get install postgresql)" >&2; exit 1; }

hold_dir=""
cleanup() {
    if [[ -n $hold_dir ]]; then
        touch "$hold_dir/stop"
        wait 2>/dev/null || true
        rm -rf "$hold_dir"
    fi
    loop_tmpfs_down
}
trap 'rm -rf "${work:-/nonexistent}"; cleanup' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [[ $parent == --loop-tmpfs ]]; then
    loop_tmpfs_up 300 256
    parent=$loop_base/mnt
fi
if [[ $parent == --knowndev ]]; then
    hold_dir=$(mktemp -d)
    (cd "$here" && cargo test --quiet --test it --no-run >/dev/null 2>&1)
    (cd "$here" && KNOWNDEV_STOP_FILE=$hold_dir/stop cargo test --quiet --test it \
        fsync_like::hold -- --ignored --nocapture >"$hold_dir/log" 2>&1) &
    for _ in $(seq 600); do grep -q '^held: ' "$hold_dir/log" && break; sleep 0.5; done
    grep -q '^held: ' "$hold_dir/log" || { cat "$hold_dir/log" >&2; exit 1; }
    parent=$(sed -n 's/^held: \(.*\) (.*/\1/p' "$hold_dir/log")
    sed -n 's/^held: //p' "$hold_dir/log" >&2
fi
work=$(mktemp -d "$parent/.iosat-bench.XXXXXX")
results=$work/results.tsv
: >"$results"

pg_run() { # repeat
    "$pg" -s "$secs" -f "$work/pg_test_fsync.out" >"$work/pg.txt"
    python3 "$here/bench/pg_test_fsync_parse.py" "$work/pg.txt" "$1" pg_test_fsync >>"$results"
}
iosat_run() { # repeat
    "$iosat" fsync "$work" --like postgres --duration "$secs" --committers none --json \
        >"$work/iosat.json"
    python3 - "$work/iosat.json" "$1" >>"$results" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for e in r["like"]["entries"]:
    print("\t".join([sys.argv[2], "iosat", e["method"], str(e["writes_per_commit"]),
                     f'{e["commits_per_s"]:.1f}']))
PY
}

for ((i = 1; i <= repeats; i++)); do
    if ((i % 2)); then pg_run "$i"; iosat_run "$i"; else iosat_run "$i"; pg_run "$i"; fi
    echo "repeat $i of $repeats done" >&2
done

echo "# $(date -u +%F) $(uname -r), $(findmnt -no FSTYPE,SOURCE -T "$work" | tr -s ' ')${hold_dir:+ (known device: $(sed -n 's/^held: .*: //p' "$hold_dir/log" | tr -d ')'))}, $repeats repeats of $secs s, PostgreSQL $(basename "$(dirname "$(dirname "$pg")")") pg_test_fsync"
python3 - "$results" <<'PY'
import sys, statistics
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines() if l]
by = {}
for rep, tool, method, wpc, ops in rows:
    by.setdefault((method, wpc), {}).setdefault(tool, []).append(float(ops))
print("| wal_sync_method | writes/commit | pg_test_fsync ops/s (median) | iosat commits/s (median) | iosat / pg | within 15 % |")
print("|---|---|---|---|---|---|")
bad = 0
for (method, wpc), t in by.items():
    if "pg_test_fsync" not in t or "iosat" not in t:
        continue
    p, i = statistics.median(t["pg_test_fsync"]), statistics.median(t["iosat"])
    ratio = i / p if p else float("nan")
    ok = abs(ratio - 1) <= 0.15
    if method != "write":
        bad += not ok
    print(f"| {method} | {wpc} | {p:.0f} | {i:.0f} | {ratio:.2f} | {'yes' if ok else 'NO'} |")
print(f"\n{bad} synced setting(s) outside 15 % (the non-synced 'write' ceiling is shown, not judged: "
      "it measures the tools' own loop overhead, not the disk)")
PY
