#!/usr/bin/env bash
# The CPU cost of production learning per sample (issue 26; figures go to BENCHMARKS.md,
# "## Learning"): `iosat stat` over the same 1,000-device samples with learning and with
# --no-learn, runs interleaved (learn, no-learn, learn, ...) and repeated, CPU time from
# wait4()'s rusage. Eight inputs:
#  1. a recording of N samples of bench/lib.sh's 1,000 devices with every counter advancing
#     (every device has traffic in every interval: the learner's worst case), replayed;
#  2. the same static 1,000-line diskstats read live (--proc-root, -i 0.01): idle devices.
#  3. input 1 with the clock a real sampler gives (bench/lib.sh's real_clock): rates with
#     fractions, as a host's are. Input 1's whole-number rates send the text view's
#     two-decimal figures down Rust's slow exact path, which --no-learn pays for in more
#     columns than learning: its text ratio flatters learning; this one does less (the
#     awaits stay whole milliseconds, as diskstats' counters make them).
#  4. devices that changed (bench/lib.sh's changed_recording): the 1,000 devices read at one
#     in flight, 1 ms a request for 40 s, then 4 ms for 260 s (1-s samples, whatever N): each
#     device's change reported after 5 s, confirmed after 2 minutes, and reported from then
#     on, in every view.
#  5. steady: input 3's devices and rates sampled every second (N samples, N seconds), so
#     that by the end every device has learned a baseline and a ceiling, which stays a lower
#     bound (its level never changes: no plateau), as most of a host's busy devices have: the
#     state a long-running `stat` spends its time in. Inputs 1 and 3 are a host's first six
#     seconds (10 ms samples): thin estimates, most rows judged by one.
#  6. live and busy: `stat` live (--proc-root, -i 0.05) over the 1,000 devices while a writer
#     (bench/lib.sh's busy_diskstats, on another CPU than PIN's) rewrites their diskstats every
#     few milliseconds with counters that advance with the clock (input 1's rates: 100-700
#     IOPS, 10-70 % busy), learning in memory (with --proc-root there is no state directory).
#     What a host's `stat` does: diskstats parsed once a sample, where a replay also reads and
#     checks the whole recording first (a third of its instructions), which every replayed
#     input's --no-learn carries and learning's ratio is divided by.
#  7. input 6 with a state directory (--state-dir, a new one each run; --hindsight 0, the
#     ring a state directory would turn on being no part of learning): each device's lock
#     taken at its first traffic and its state written at the end (a lock file and a state
#     file per learned device, each state file synced: 500 files for the 250 disks, their
#     partitions learning nothing), what a run pays once at its start and again at every
#     save (every 5 minutes).
#  8. live and busy at the default interval (no -i: 1 s, text and JSON), input 6's devices and
#     writer: a host's `stat` as its users run it. There the burst windows (--burst-window,
#     100 ms by default) read the diskstats ten times a sample, which input 6's 50 ms samples
#     leave no room for: input 6's `--no-learn` does a sixth of a default sample's work, and
#     learning's share of a sample is largest there. Its own count of samples (LIVE_SAMPLES,
#     default 30: half a minute a run), SAMPLES being far too many seconds.
# Usage: bench/learn.sh [SAMPLES] [REPEATS]   (defaults 600 and 3; a release build)
# BEFORE=<an older iosat binary> adds its learning runs to each repeat (before, after,
# --no-learn, interleaved) and a before ÷ --no-learn column: a change measured side by side.
# DEVICES=N keeps the first N of bench/lib.sh's 1,000 devices (the goal is stated at 1,000):
# how much of learning's ratio is its state outgrowing the core's caches, whose misses the
# instruction counts of bench/learn_cachegrind.sh leave out. Fewer devices make shorter runs:
# give more samples (at 100 devices 6,000 samples run about as long as 600 at 1,000; the idle
# input's live runs take SAMPLES x 10 ms whatever the count).
# The 1,000 devices are 250 disks with 3 partitions each, as a host's disks are partitioned:
# learning judges a partition by its disk (learn::Learner::disk_row), so it learns 250 devices
# and hands their judgements to the 750 partitions. WHOLE=1 makes them 1,000 whole disks, each
# learned on its own (a host of many LUNs or volumes): learning's cost per device.
# ONLY=<text> runs only the inputs whose name holds it ("changed, json"), for more repeats of
# one input. PIN=<cpu> runs every process on that CPU (taskset), away from the other CPU's
# kernel threads; on this project's 2-vCPU VM single runs still scatter by ±10 % or more, so a
# change of a few percent wants 20 or so repeats (BENCHMARKS, 2026-12-06 10:14).
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
n=${1:-600}
repeats=${2:-3}
if [ -n "${PIN:-}" ]; then
  case $PIN in
    *[!0-9]*) echo "bench/learn.sh: PIN takes a CPU number, not '$PIN'" >&2; exit 2 ;;
  esac
fi
case ${LIVE_SAMPLES:-30} in
  *[!0-9]* | 0) echo "bench/learn.sh: LIVE_SAMPLES takes a count of samples (1 or more), not '$LIVE_SAMPLES'" >&2; exit 2 ;;
esac
case ${WHOLE:-} in
  "" | 1) ;;
  *) echo "bench/learn.sh: WHOLE takes 1 (1,000 whole disks) or nothing, not '$WHOLE'" >&2; exit 2 ;;
esac
tmp=$(mktemp -d)
on_exit 'rm -rf "$tmp"'
bin=$(frozen_build "$tmp")
mkdir -p "$tmp/proc" "$tmp/sys"
synthetic_diskstats "$tmp/proc/diskstats" ${WHOLE:+whole}
if [ -n "${DEVICES:-}" ]; then
  case $DEVICES in
    *[!0-9]* | 0) echo "bench/learn.sh: DEVICES takes a count of devices (1 or more), not '$DEVICES'" >&2; exit 2 ;;
  esac
  head -n "$DEVICES" "$tmp/proc/diskstats" > "$tmp/d" && mv "$tmp/d" "$tmp/proc/diskstats"
fi
synthetic_recording "$n" "$tmp/proc/diskstats" > "$tmp/rec"
real_clock < "$tmp/rec" > "$tmp/rec-real"
changed_recording 300 40 "$tmp/proc/diskstats" > "$tmp/rec-changed"
synthetic_recording "$n" "$tmp/proc/diskstats" 1000 | real_clock > "$tmp/rec-steady"
echo "devices: $(wc -l < "$tmp/proc/diskstats")${WHOLE:+ (whole disks)}, samples: $n, repeats: $repeats"
mkdir -p "$tmp/live/proc"
cp "$tmp/proc/diskstats" "$tmp/live/diskstats"
cp "$tmp/proc/diskstats" "$tmp/live/proc/diskstats"
python3 - "$bin" "$tmp" "$n" "$repeats" "${BEFORE:-}" "${ONLY:-}" "${PIN:-}" \
  "$ROOT_OF_BENCH/lib.sh" "${LIVE_SAMPLES:-30}" <<'PY'
import atexit, os, signal, subprocess, sys, statistics, shutil, time
# Ctrl-C: the run ends as interrupted (130), its writer stopped (atexit), without a traceback.
signal.signal(signal.SIGINT, lambda *_: sys.exit(130))
bin, tmp, n, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
before, only, pin, lib = sys.argv[5], sys.argv[6], sys.argv[7], sys.argv[8]
live_n = int(sys.argv[9])
null = open(os.devnull, "w")
writer = None
def stop_writer():
    global writer
    if writer is not None:
        writer.terminate()
        writer.wait()
        writer = None
atexit.register(stop_writer)
def busy_writer():
    """Inputs 6 and 7's diskstats writer (bench/lib.sh's busy_diskstats), started once, on
    a CPU other than PIN's, and checked each time it is asked for; stop_writer stops it."""
    global writer
    if writer is None:
        other = (["taskset", "-c", "0" if pin != "0" else "1"] if pin else [])
        writer = subprocess.Popen(other + ["bash", "-c", '. "$0" && busy_diskstats "$@"', lib,
                                           tmp + "/live/diskstats",
                                           tmp + "/live/proc/diskstats"])
        time.sleep(0.5)
    # A writer that died (no other CPU to pin it to, no python3) would leave the devices idle,
    # and the busy inputs measuring idle ones.
    if writer.poll() is not None:
        sys.exit("bench/learn.sh: the diskstats writer of the busy inputs exited (%s)"
                 % writer.returncode)
def cpu(cmd):
    """CPU seconds, user seconds and minor faults of one run. User time apart: the
    kernel's part differs with how the allocator's heap grows and shrinks; the minor faults
    are most of that difference (--no-learn's heap gives its line buffer back each sample and
    faults it in again; learning's long-lived state keeps it).
    The run's stderr (a live run's notes, the same each time) is shown only if it fails."""
    if "--state-dir" in cmd:
        # A new state directory for each run of input 7: its locks and files made anew.
        shutil.rmtree(cmd[cmd.index("--state-dir") + 1], ignore_errors=True)
    with open(tmp + "/stderr", "w+") as err:
        p = subprocess.Popen((["taskset", "-c", pin] if pin else []) + cmd, stdout=null,
                             stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            sys.exit("bench/learn.sh: %s failed:\n%s" % (" ".join(cmd), err.read()))
    return ru.ru_utime + ru.ru_stime, ru.ru_utime, ru.ru_minflt
# Each input's arguments and its number of intervals (what a sample's figures divide by).
inputs = {
    "replay, traffic on all, text": (["stat", "--all", "--replay", tmp + "/rec"], n),
    "replay, traffic on all, json": (["stat", "--all", "--json", "--replay", tmp + "/rec"], n),
    "replay, real clock, text": (["stat", "--all", "--replay", tmp + "/rec-real"], n),
    "replay, real clock, json": (["stat", "--all", "--json", "--replay", tmp + "/rec-real"],
                                 n),
    "replay, devices that changed, text": (["stat", "--all", "--replay",
                                            tmp + "/rec-changed"], 300),
    "replay, devices that changed, json": (["stat", "--all", "--json", "--replay",
                                            tmp + "/rec-changed"], 300),
    "replay, steady (1-s samples), text": (["stat", "--all", "--replay",
                                            tmp + "/rec-steady"], n),
    "replay, steady (1-s samples), json": (["stat", "--all", "--json", "--replay",
                                            tmp + "/rec-steady"], n),
    "live --proc-root, idle, text": (["stat", "--all", "-i", "0.01", "-c", str(n),
                                      "--proc-root", tmp + "/proc", "--sys-root", tmp + "/sys",
                                      "--state-dir", tmp + "/state"], n),
}
def live_stat(count, *interval):
    """`stat` live over the busy inputs' --proc-root, `count` samples."""
    return (["stat", "--all", *interval, "-c", str(count), "--proc-root", tmp + "/live/proc",
             "--sys-root", tmp + "/sys"])
live = live_stat(n, "-i", "0.05")
inputs["live --proc-root, busy, text"] = (live, n)
inputs["live --proc-root, busy, json"] = (live + ["--json"], n)
# --hindsight 0: a state directory also turns on the hindsight ring (where dumps can go),
# which --no-learn, without one, never keeps: its cost is not learning's.
inputs["live --proc-root, busy, state dir, text"] = (live + ["--state-dir", tmp + "/state-busy",
                                                             "--hindsight", "0"], n)
# Input 8: the default interval (1 s), its burst windows on, as a host's `stat` runs.
default = live_stat(live_n)
inputs["live --proc-root, busy, default interval, text"] = (default, live_n)
inputs["live --proc-root, busy, default interval, json"] = (default + ["--json"], live_n)
print("| input | us/sample learning | us/sample --no-learn | ratio (median of runs) |"
      + " user time only: ratio | minor faults/sample: learning, --no-learn |"
      + (" before: us/sample | before ratio |" if before else ""))
print("|---|---|---|---|---|---|" + ("---|---|" if before else ""))
chosen = {k: v for k, v in inputs.items() if only in k}
if not chosen:
    sys.exit("bench/learn.sh: ONLY='%s' names no input (%s)" % (only, "; ".join(inputs)))
for name, (args, k) in chosen.items():
    if "busy" in name:
        busy_writer()
    else:
        stop_writer()
    on, off, ratios, user_ratios, old, old_ratios = [], [], [], [], [], []
    on_faults, off_faults = [], []
    for _ in range(repeats):
        if before:
            old.append(cpu([before] + args)[0] / (k + 1) * 1e6)
        (a, a_user, a_faults) = cpu([bin] + args)
        (b, b_user, b_faults) = cpu([bin] + args + ["--no-learn"])
        a, b = a / (k + 1) * 1e6, b / (k + 1) * 1e6
        on.append(a); off.append(b); ratios.append(a / b)
        # The VM's tick accounting can give a short run's CPU all to the system: no user
        # time to divide by, that run left out of the user-time column.
        if b_user > 0:
            user_ratios.append(a_user / b_user)
        on_faults.append(a_faults / (k + 1))
        off_faults.append(b_faults / (k + 1))
        if before:
            old_ratios.append(old[-1] / b)
        if "busy" in name:
            busy_writer()
    user = ("%.3f (%.3f-%.3f)" % (statistics.median(user_ratios), min(user_ratios),
                                  max(user_ratios))) if user_ratios else "no user time"
    line = "| %s | %.0f | %.0f | %.3f (%.3f-%.3f) | %s | %.0f, %.0f |" % (
        name, statistics.median(on), statistics.median(off), statistics.median(ratios),
        min(ratios), max(ratios), user, statistics.median(on_faults),
        statistics.median(off_faults))
    if before:
        line += " %.0f | %.3f |" % (statistics.median(old), statistics.median(old_ratios))
    print(line)
PY
