#!/usr/bin/env bash
# Two builds of iosat side by side on learning's cost (issue 37): `stat --all --replay` of
# bench/lib.sh's 1,000 steady devices (1-s samples, every device busy: bench/learn.sh's
# "steady" input), each build learning, and --no-learn of the first, CPU time from wait4()'s
# rusage, every process on one CPU. The two builds take turns going first (A B, then B A:
# whichever runs first in a repeat is not favoured), and each repeat's A ÷ B is kept, so that
# a change of a few percent shows through the VM's run-to-run scatter (a ratio to --no-learn
# moves by ±5 % from one run of bench/learn.sh to the next; a paired A ÷ B much less).
# Usage: bench/learn_ab.sh A B [REPEATS] [SAMPLES]   (defaults 16 and 600)
# FORMAT=json adds --json; DEVICES=N keeps the first N devices; PIN=<cpu> (default 1).
# EACH=1 runs each build's own --no-learn beside its learning (a repeat takes a third longer):
# for a change that moves what --no-learn does as well (the writing of a line, the reading of
# the samples), whose ratio to A's --no-learn would flatter or wrong B; it adds the medians of
# A's --no-learn ÷ B's.
# Prints each build's median ratio to --no-learn, the median of A ÷ B, and in how many
# repeats A took less CPU than B.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
if [ $# -lt 2 ]; then
  echo "usage: bench/learn_ab.sh A B [REPEATS] [SAMPLES]" >&2
  exit 2
fi
a=$1 b=$2 repeats=${3:-16} n=${4:-600} pin=${PIN:-1}
for x in "$a" "$b"; do
  [ -x "$x" ] || { echo "bench/learn_ab.sh: $x is not an executable build of iosat" >&2; exit 2; }
done
case "$repeats$n$pin" in
  *[!0-9]*) echo "bench/learn_ab.sh: REPEATS, SAMPLES and PIN take whole numbers" >&2; exit 2 ;;
esac
case "${EACH:-0}" in
  0 | 1) ;;
  *) echo "bench/learn_ab.sh: EACH takes 0 or 1, not '$EACH'" >&2; exit 2 ;;
esac
tmp=$(mktemp -d)
on_exit 'rm -rf "$tmp"'
synthetic_diskstats "$tmp/diskstats"
if [ -n "${DEVICES:-}" ]; then
  head -n "$DEVICES" "$tmp/diskstats" > "$tmp/d" && mv "$tmp/d" "$tmp/diskstats"
fi
synthetic_recording "$n" "$tmp/diskstats" 1000 | real_clock > "$tmp/rec"
extra=()
[ "${FORMAT:-text}" = json ] && extra=(--json)
echo "devices: $(wc -l < "$tmp/diskstats"), samples: $n, repeats: $repeats, ${FORMAT:-text}"
python3 - "$a" "$b" "$tmp/rec" "$repeats" "$pin" "${EACH:-0}" "${extra[@]}" <<'PY'
import os, subprocess, sys, statistics
a, b, rec, n, pin = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
each = sys.argv[6] == "1"
args = ["stat", "--all", "--replay", rec] + sys.argv[7:]
null = open(os.devnull, "w")
def run(cmd):
    """CPU seconds (user and system) of one run, from wait4()'s rusage; its stderr shown
    only if it fails."""
    with open(os.path.join(os.path.dirname(rec), "stderr"), "w+") as err:
        p = subprocess.Popen(["taskset", "-c", pin] + cmd, stdout=null, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            sys.exit("bench/learn_ab.sh: %s failed:\n%s" % (" ".join(cmd), err.read()))
    return ru.ru_utime + ru.ru_stime
ra, rb, ab, offs = [], [], [], []
for i in range(n):
    t = {}
    for k in ("ab" if i % 2 == 0 else "ba"):
        t[k] = run([a if k == "a" else b] + args)
        if each:
            t[k + "-off"] = run([a if k == "a" else b] + args + ["--no-learn"])
    if not each:
        t["a-off"] = t["b-off"] = run([a] + args + ["--no-learn"])
    ra.append(t["a"] / t["a-off"])
    rb.append(t["b"] / t["b-off"])
    ab.append(t["a"] / t["b"])
    if each:
        offs.append(t["a-off"] / t["b-off"])
head = "| A ÷ --no-learn | B ÷ --no-learn | A ÷ B (median) | A took less CPU |"
row = "| %.3f | %.3f | %.3f | %d of %d |" % (statistics.median(ra), statistics.median(rb),
                                           statistics.median(ab), sum(x < 1 for x in ab), n)
if each:
    # Each build over its own --no-learn; and the two --no-learn runs against each other.
    head += " A's --no-learn ÷ B's (median) |"
    row += " %.3f |" % statistics.median(offs)
print(head)
print("|---" * head.count(" |") + "|")
print(row)
PY
