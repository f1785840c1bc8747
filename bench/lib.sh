# Shared by the bench scripts (sourced, not run).

# This file's directory (bench/), whatever the caller's working directory.
ROOT_OF_BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# on_exit CMD: run CMD when the script ends, however it ends. Ctrl-C or a TERM ends the script
# (a trap on INT alone would run CMD and carry on with the next run, its files gone).
on_exit() {
  # Without errexit: a cleanup step that fails (a process already gone) must not skip the rest.
  trap "set +e; $1" EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

# synthetic_diskstats FILE [whole]: a 1,000-device /proc/diskstats in the 20-field format of
# current kernels, 250 disks with 3 partitions each (which learning judges by their disks), or
# with `whole` 1,000 whole disks (each learned on its own), counters large enough to have every
# digit.
# A recording of N 10 ms samples of the devices in DISKSTATS, every counter of device i growing by
# i % 7 + 1 per sample (the in-flight gauge stays), so each device has 1 to 7 requests of 1 ms in
# flight. %.0f, not %d: mawk's %d stops at 2^31. Usage: synthetic_recording N DISKSTATS [MS] > OUT
# MS (default 10): the samples' spacing in ms, the counters growing in proportion (the same
# rates): at 1000, N samples are N seconds of traffic, as a host sampled every second has.
synthetic_recording() {
  awk -v n="$1" -v ms="${3:-10}" 'BEGIN { print "#iosat-record 1"; printf "R 0 %.0f\n", ms * 1e6 }
    { line[NR] = $0 }
    END {
      for (s = 0; s <= n; s++) {
        printf "T %.0f %.0f\n", 1000000000 + s * ms * 1e6, 1700000000000000000 + s * ms * 1e6;
        for (i = 1; i <= NR; i++) {
          split(line[i], f, " ");
          printf "%4d %7d %s", f[1], f[2], f[3];
          for (k = 4; k <= 20; k++) printf " %.0f", f[k] + s * (k == 12 ? 0 : (i % 7 + 1) * ms / 10);
          printf "\n";
        }
      }
    }' "$2"
}

# changed_recording N STEP DISKSTATS > OUT: a recording of N 1-s samples of the devices in
# DISKSTATS, every device reading 4 KiB at one request in flight (busy the whole second), 1 ms a
# request until sample STEP and 4 ms after: a step each device's learning must report as a
# change (after 5 s) and confirm (after 2 minutes).
changed_recording() {
  awk -v n="$1" -v step="$2" 'BEGIN { print "#iosat-record 1"; print "R 0 1000000000" }
    { line[NR] = $0 }
    END {
      for (s = 0; s <= n; s++) {
        printf "T %.0f %.0f\n", 1000000000 + s * 1000000000, 1700000000000000000 + s * 1000000000;
        reads = (s < step ? s * 1000 : step * 1000 + (s - step) * 250);
        for (i = 1; i <= NR; i++) {
          split(line[i], f, " ");
          printf "%4d %7d %s", f[1], f[2], f[3];
          for (k = 4; k <= 20; k++) {
            v = f[k];
            if (k == 4) v += reads;
            else if (k == 6) v += reads * 8;
            else if (k == 7 || k == 13 || k == 14) v += s * 1000;
            printf " %.0f", v;
          }
          printf "\n";
        }
      }
    }' "$3"
}

# real_clock < RECORDING > OUT: the same recording with the clock a real sampler gives. A
# synthetic sample every 10,000,000 ns makes every rate a whole number (a count ÷ 0.01 s); a
# real sampler's intervals are never exact, and its rates have fractions (the awaits, time
# over requests, do not depend on the clock). Views differ in cost between the two: Rust
# formats a whole number with two decimals by its exact slow path (Dragon4), most fractions
# by its fast one, so the synthetic clock makes a view's output dearer than a real one's. Sample s is stamped up to
# a millisecond late (s x 7919 mod 1,000,003 ns, both clocks alike), as a sampler woken by a
# timer on a busy host is; intervals stay positive and between 9 and 11 ms.
real_clock() {
  awk '/^T / { s++; d = (s * 7919) % 1000003; printf "T %.0f %.0f\n", $2 + d, $3 + d; next } { print }'
}

# busy_diskstats SRC OUT: rewrite OUT every few milliseconds (a new file renamed over it, so a
# reader never sees half of one) with SRC's devices, every counter but the in-flight one
# advanced by (line % 7 + 1) / 10 a millisecond since the start (synthetic_recording's rates,
# with the clock): a live sampler over `--proc-root` finds every device busy. Runs until
# killed.
busy_diskstats() {
  exec python3 - "$1" "$2" <<'PY'
import os, signal, sys, time
# Ctrl-C reaches the whole foreground group: the writer ends with its bench, without a traceback.
signal.signal(signal.SIGINT, lambda *_: sys.exit(130))
src, out = sys.argv[1], sys.argv[2]
lines = [l.split() for l in open(src)]
t0, tmp = time.monotonic(), out + ".new"
while True:
    ms = (time.monotonic() - t0) * 1000.0
    rows = []
    for i, f in enumerate(lines, 1):
        step = int(ms * (i % 7 + 1) / 10)
        rows.append("%4s %7s %s %s\n" % (f[0], f[1], f[2], " ".join(
            str(int(v) + (0 if k == 12 else step)) for k, v in enumerate(f[3:], 4))))
    with open(tmp, "w") as fh:
        fh.write("".join(rows))
    os.replace(tmp, out)
    time.sleep(0.002)
PY
}

synthetic_diskstats() {
  awk -v whole="${2:-}" 'BEGIN {
    if (whole != "") {
      for (d = 0; d < 1000; d++) {
        name = sprintf("sd%c%c%c", 97 + int(d / 676), 97 + int(d / 26) % 26, 97 + d % 26);
        printf "%4d %7d %s", 8 + int(d / 16), (d % 16) * 16, name;
        for (f = 0; f < 17; f++) printf " %d", (d + 1) * 1000003 + f * 7919;
        printf "\n";
      }
      exit;
    }
    for (d = 0; d < 250; d++) {
      for (p = 0; p < 4; p++) {
        name = sprintf("sd%c%c%s", 97 + int(d / 26), 97 + d % 26, p ? p : "");
        printf "%4d %7d %s", 8 + int(d / 16), (d % 16) * 16 + p, name;
        for (f = 0; f < 17; f++) printf " %d", (d + 1) * 1000003 + f * 7919 + p;
        printf "\n";
      }
    }
  }' > "$1"
}

# bpf_bench_setup TOOL...: what the BPF benches share. Root (they load BPF programs), the
# tools, iosat (IOSAT=<binary> skips the release build: a smoke run of the script), and the
# test file $FILE of SIZE_MB MiB of real data in a fresh $WORK under DIR (removed on exit; the
# caller's on_exit must remove it too).
bpf_bench_setup() {
  [ "$(id -u)" = 0 ] || { echo "needs root (loading BPF programs)" >&2; exit 1; }
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
  done
  iosat_binary
  WORK=$(mktemp -d "${DIR:-$PWD}/iosat-bench.XXXXXX")
  # Removed if the layout is interrupted; the caller's on_exit replaces this.
  on_exit 'rm -rf "$WORK"'
  FILE="$WORK/data"
  lay_out "$FILE"
}

# frozen_build DIR: the release build (made now) copied into DIR, its path on stdout. What a
# script measures for minutes stays the build it started with, whatever another shell's
# `cargo build` writes into target/ meanwhile (2026-12-06: a rebuild during
# bench/learn_cachegrind.sh changed the binary between its inputs' runs, and nothing said so).
frozen_build() {
  cargo build --release --quiet --manifest-path "$ROOT_OF_BENCH/../Cargo.toml"
  cp "$ROOT_OF_BENCH/../target/release/iosat" "$1/iosat"
  echo "$1/iosat"
}

# iosat_binary: IOSAT, the release build unless IOSAT already names a binary (a smoke run of
# a script with a debug build).
iosat_binary() {
  if [ -z "${IOSAT:-}" ]; then
    cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
    IOSAT="$ROOT/target/release/iosat"
  fi
}

# lay_out FILE: SIZE_MB MiB of real data (never sparse, never zeros), written once and synced.
lay_out() {
  fio --name=layout --filename="$1" --size="${SIZE_MB}m" --rw=write --bs=1m --direct=1 \
    --refill_buffers --end_fsync=1 --output=/dev/null || stop_if_interrupted $?
}

# wait_for_line PATTERN FILE TRIES PAUSE: until a line of FILE matches PATTERN, at most TRIES
# looks PAUSE seconds apart; status 1 when it never does.
wait_for_line() {
  local _
  for _ in $(seq "$3"); do
    grep -q "$1" "$2" 2>/dev/null && return 0
    sleep "$4"
  done
  return 1
}

# median: the median of the numbers on stdin, one per line.
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# stats: per-run values on stdin -> "median (min–max)", or "-" when there are none.
stats() { sort -g | awk '{a[NR]=$1} END {if (!NR) {print "-"; exit} m = (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.3f (%.3f–%.3f)", m, a[1], a[NR]}'; }

# ci: per-run values on stdin -> "median lo hi coverage_pct n": the median and its
# distribution-free confidence interval, the order statistics x(k) and x(n-k+1) with the largest
# k whose coverage 1 - 2 P(Bin(n, 1/2) <= k-1) is still >= 95 % (n = 7: min and max, 98.4 %;
# n = 15: the 4th and 12th, 96.5 %). Below 6 values no interval reaches 95 %: coverage says so.
ci() {
  sort -g | awk '{a[NR]=$1} END {
    n = NR; m = (n%2) ? a[(n+1)/2] : (a[n/2]+a[n/2+1])/2;
    k = 1; cdf = 0; term = 0.5^n;
    for (j = 0; j < n/2; j++) { cdf += term; if (2*cdf <= 0.05) k = j + 1; term = term*(n-j)/(j+1) }
    # coverage of [a[k], a[n-k+1]]: 1 - 2 P(X <= k-1)
    cdf = 0; term = 0.5^n; for (j = 0; j <= k-1; j++) { cdf += term; term = term*(n-j)/(j+1) }
    printf "%.3f %.3f %.3f %.1f %d\n", m, a[k], a[n-k+1], 100*(1-2*cdf), n
  }'
}

# verdict LABEL OP VALUE: per-run values on stdin -> one Markdown line judging them against a
# target on the median's interval (ci): OP ge (>= VALUE), le (<= VALUE) or near (within VALUE of
# 1). "met" or "not met" only when the whole interval lies on one side; "undecided" when it
# straddles the target; with fewer than 6 values no interval reaches 95 %, and it says so.
verdict() {
  ci | awk -v l="$1" -v op="$2" -v v="$3" '{
    m = $1; lo = $2; hi = $3;
    if (op == "ge") { want = "≥ " v; good = lo >= v; bad = hi < v }
    else if (op == "le") { want = "≤ " v; good = hi <= v; bad = lo > v }
    else { want = "within " v " of 1"; good = lo >= 1-v && hi <= 1+v; bad = hi < 1-v || lo > 1+v }
    verdict = good ? "met" : (bad ? "**not met**" : "undecided (the interval straddles the target)");
    if ($4 < 95) verdict = "too few runs to judge (6 at least for a 95 % interval)";
    printf "- %s %s: median %.3f, %.1f %% interval %.3f–%.3f over %d runs: %s\n", l, want, m, $4, lo, hi, $5, verdict
  }'
}

# stat_around OUT CMD...: CMD inside one `iosat stat $DEV` interval (JSON to OUT) that opens
# half a second before it and closes after it, the interval being DURATION + 1 s long: the
# block layer's own timing of CMD's requests. Sets and clears BG (the caller's trap kills it).
stat_around() {
  local out=$1
  shift
  "$IOSAT" stat "$DEV" --json --no-profile -i "$((DURATION + 1))" -c 1 \
    --record "$WORK/rec" >"$out" 2>"$WORK/stat.err" &
  BG=$!
  wait_for_line '^T ' "$WORK/rec" 100 0.05 || true
  sleep 0.5
  "$@"
  wait "$BG"
  BG=""
  rm -f "$WORK/rec"
}

# disk_under DIR: the whole disk holding DIR (its partition's parent; the source itself when
# it has none, e.g. ext4 straight on /dev/vda).
disk_under() {
  local src dev
  src=$(findmnt -no SOURCE -T "$1")
  dev=$(lsblk -no PKNAME "$src" 2>/dev/null | head -n 1)
  echo "${dev:-$(basename "$src")}"
}

# stop_if_interrupted RC: end the script (its on_exit cleans up) when RC says the command was
# stopped by Ctrl-C or a signal (iosat exits 130, fio 128, a killed process 128 + N); else
# return RC. Needed because such a command exits by itself: bash then carries on, even in a
# command substitution, as if nothing had happened.
stop_if_interrupted() {
  [ "$1" -lt 128 ] || exit "$1"
  return "$1"
}

# The loops measured side by side on FILE (SIZE_MB MiB), 4 KiB random reads for DURATION s,
# CPU time from /usr/bin/time (getrusage of the whole process) into $WORK/t.
# cpu_of TIMEFILE -> user+sys seconds; sys_of TIMEFILE -> sys seconds (the kernel's share).
cpu_of() { awk '/^cpu/ {print $2 + $3}' "$1"; }
sys_of() { awk '/^cpu/ {print $3}' "$1"; }

# run_fio DEPTH DIRECT -> "iops ios cpu_s lat_p50_ns sys_s": fio --ioengine=io_uring, one job.
run_fio() {
  local depth=$1 direct=$2
  /usr/bin/time -f "cpu %U %S" -o "$WORK/t" \
    fio --name=r --filename="$FILE" --size="${SIZE_MB}m" --rw=randread --bs=4k \
      --direct="$direct" --ioengine=io_uring --iodepth="$depth" --runtime="$DURATION" \
      --time_based --invalidate=0 --lat_percentiles=1 --output-format=json --output="$WORK/fio.json" \
    || stop_if_interrupted $?
  jq -r --arg cpu "$(cpu_of "$WORK/t")" --arg sys "$(sys_of "$WORK/t")" \
    '.jobs[0].read | "\(.iops) \(.total_ios) \($cpu) \(.lat_ns.percentile["50.000000"]) \($sys)"' \
    "$WORK/fio.json"
}

# run_iosat ENGINE DEPTH DIRECT -> "iops ios cpu_s p50_ns sys_s": one level of `iosat sweep`
# (no adaptive re-measure: --budget 0; $IOSAT_URING_TUNING passes through, and so do the
# extra flags in $IOSAT_ARGS, e.g. --no-bpf). The process's CPU
# time also covers the sweep's re-measure of its first level at the end (baseline_remeasured,
# as long as the level): its I/Os count too.
run_iosat() {
  local engine=$1 depth=$2 direct=$3
  /usr/bin/time -f "cpu %U %S" -o "$WORK/t" \
    "$IOSAT" sweep "$FILE" --engine "$engine" --levels "$depth" --duration "$DURATION" \
      --ramp 0 --budget 0 --direct "$direct" --no-progress --json ${IOSAT_ARGS:-} >"$WORK/iosat.json" \
    || stop_if_interrupted $?
  jq -r --arg cpu "$(cpu_of "$WORK/t")" --arg sys "$(sys_of "$WORK/t")" \
    '"\(.levels[0].iops) \(.levels[0].ios + (.baseline_remeasured.ios // 0)) \($cpu) \(.levels[0].latency_ns.p50) \($sys)"' \
    "$WORK/iosat.json"
}

# run_tiou DEPTH DIRECT -> "iops ios cpu_s - sys_s": fio's t/io_uring ($T_IO_URING) for
# DURATION + 1 s, no polling, one thread (it prints one IOPS line per second after the
# first); its IOPS is the median of those lines, its I/Os that times the whole run.
run_tiou() {
  local depth=$1 direct=$2
  /usr/bin/time -f "cpu %U %S" -o "$WORK/t" \
    "$T_IO_URING" -d "$depth" -b 4096 -p 0 -O "$direct" -n 1 -r "$((DURATION + 1))" "$FILE" \
    >"$WORK/tiou.out" || stop_if_interrupted $?
  local iops
  iops=$(awk -F'[=,]' '/^IOPS=/ { v = $2; m = 1; if (v ~ /K$/) m = 1e3; if (v ~ /M$/) m = 1e6; sub(/[KM]$/, "", v); print v * m }' \
    "$WORK/tiou.out" | median)
  awk -v i="${iops:-0}" -v d="$((DURATION + 1))" -v c="$(cpu_of "$WORK/t")" -v s="$(sys_of "$WORK/t")" \
    'BEGIN { printf "%.0f %.0f %s - %s\n", i, i * d, c, s }'
}

# ext4 on a loop device over a file on a tmpfs: flushes that cost nothing (the fsync benches'
# --loop-tmpfs). loop_tmpfs_up TMPFS_MB BACKING_MB sets loop_base (mounted at
# $loop_base/mnt) and loop_dev; loop_tmpfs_down undoes it (call it from the script's exit
# trap; harmless when nothing was set up).
loop_base=""
loop_dev=""
loop_tmpfs_up() {
    loop_base=$(mktemp -d)
    mkdir "$loop_base/tmpfs" "$loop_base/mnt"
    mount -t tmpfs -o "size=${1}m" tmpfs "$loop_base/tmpfs"
    truncate -s "${2}M" "$loop_base/tmpfs/backing"
    loop_dev=$(losetup -f --show "$loop_base/tmpfs/backing")
    mkfs.ext4 -q -F "$loop_dev"
    mount "$loop_dev" "$loop_base/mnt"
}
loop_tmpfs_down() {
    if [[ -n $loop_base ]]; then
        umount "$loop_base/mnt" 2>/dev/null || true
        [[ -n $loop_dev ]] && losetup -d "$loop_dev" 2>/dev/null || true
        umount "$loop_base/tmpfs" 2>/dev/null || true
        rm -rf "$loop_base"
    fi
}
