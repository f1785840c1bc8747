#!/usr/bin/env bash
# Benchmarks for `iosat stat` (figures go to BENCHMARKS.md, "## iosat stat"):
#  1. CPU time per sample with a synthetic /proc/diskstats of 1,000 devices (--proc-root),
#     live (-i 0.01) and from a recording (--replay: parse + formulas + output, no sleeping);
#  2. iosat's CPU use at -i 1 against `iostat -x 1`, both running over the same minute.
# Usage: bench/stat.sh [SECONDS]   (default 60 for part 2; needs a release build)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
secs=${1:-60}
tmp=$(mktemp -d)
on_exit 'rm -rf "$tmp"'
bin=$(frozen_build "$tmp")

# A 1,000-device diskstats (bench/lib.sh).
mkdir -p "$tmp/proc" "$tmp/sys"
synthetic_diskstats "$tmp/proc/diskstats"
echo "devices in synthetic diskstats: $(wc -l < "$tmp/proc/diskstats")"

cpu_s() { # user+sys seconds of a command, from GNU time
  /usr/bin/time -f "%U %S" -o "$tmp/time" "$@" > /dev/null
  awk '{ printf "%.3f", $1 + $2 }' "$tmp/time"
}

n=500
t=$(cpu_s "$bin" stat --all -i 0.01 -c "$n" --proc-root "$tmp/proc" --sys-root "$tmp/sys")
echo "live, 1000 devices, --all, text: $n reports, CPU ${t} s = $(awk -v t="$t" -v n="$n" 'BEGIN { printf "%.0f", t / (n + 1) * 1e6 }') us per sample"
t=$(cpu_s "$bin" stat --all -i 0.01 -c "$n" --json --proc-root "$tmp/proc" --sys-root "$tmp/sys")
echo "live, 1000 devices, --all, json: $n reports, CPU ${t} s = $(awk -v t="$t" -v n="$n" 'BEGIN { printf "%.0f", t / (n + 1) * 1e6 }') us per sample"
t=$(cpu_s "$bin" stat -i 0.01 -c "$n" --proc-root "$tmp/proc" --sys-root "$tmp/sys" sdaa)
echo "live, 1000 devices, one shown:    $n reports, CPU ${t} s = $(awk -v t="$t" -v n="$n" 'BEGIN { printf "%.0f", t / (n + 1) * 1e6 }') us per sample"

# A recording of n samples of the same 1,000 devices with advancing counters.
synthetic_recording "$n" "$tmp/proc/diskstats" > "$tmp/rec"
t=$(cpu_s "$bin" stat --all --replay "$tmp/rec")
echo "replay, 1000 devices, --all, text: $n intervals, CPU ${t} s = $(awk -v t="$t" -v n="$n" 'BEGIN { printf "%.0f", t / (n + 1) * 1e6 }') us per sample"

# Same minute, same machine: iosat -i 1 against iostat -x 1 (both all devices, to /dev/null).
# CPU time from wait4()'s rusage (microsecond resolution; GNU time prints only 10 ms steps).
echo "running iosat stat --all -i 1 and iostat -x 1 side by side for $secs s ..."
python3 - "$bin" "$secs" <<'PY'
import os, subprocess, sys
bin, secs = sys.argv[1], int(sys.argv[2])
null = open(os.devnull, "w")
cmds = {
    "iosat stat --all -i 1 -c %d" % secs: [bin, "stat", "--all", "-i", "1", "-c", str(secs)],
    "iostat -x 1 %d" % (secs + 1): ["iostat", "-x", "1", str(secs + 1)],
}
procs = {subprocess.Popen(c, stdout=null).pid: name for name, c in cmds.items()}
while procs:
    pid, status, ru = os.wait4(-1, 0)
    name = procs.pop(pid, None)
    if name:
        cpu = ru.ru_utime + ru.ru_stime
        print("%-30s CPU %.4f s (user %.4f, sys %.4f), exit %d"
              % (name + ":", cpu, ru.ru_utime, ru.ru_stime, os.waitstatus_to_exitcode(status)))
PY
