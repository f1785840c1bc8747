#!/usr/bin/env bash
# Where learning's CPU goes, by the goal's own measure (issue 37; BENCHMARKS.md, section
# 2026-12-06 16:03): bench/learn.sh run with BEFORE= a throwaway build of this working tree
# that leaves one part of learning out, so that each part's share is read side by side with
# the whole of learning and with --no-learn, in one interleaved run:
#   core       Device::learn returns once the interval's points are made, watched and added
#              to the model and the curves estimated when due: no judgement by the learner,
#              every row given the "nothing learned" judgement (the view then judges
#              nothing, and the text's state cell says "learning"). Its ratio is learning's
#              core; the whole's ratio less it, the judgements and what they write.
#   no-object  --json without each row's `learned` object (the judgement kept): the object's
#              share of the JSON's cost (JSON inputs only).
#   unjudged   learning in full (points, change watch, model, estimates, prefetching) but for
#              the judgement: once a device has learned from 100 intervals, its rows are
#              handed its last judgement as it is. The whole's ratio less it is the judging
#              of each interval, alone.
#   weightless unjudged, and the judgements' lines not asked for ahead either: learning whose
#              judgement cost nothing, in instructions or in lines (what a compact judgement
#              could at best save).
#   delivery   learning's floor: once a device has learned from 100 intervals, each row with
#              traffic is handed the device's last judgement as it is, and nothing else is
#              done for it (no points, no model, no judgement, no prefetching). What giving a
#              thousand busy rows a real judgement costs, the view's reading of it included.
#   model      delivery, and the interval's points made and added to the model (no change
#              watch, no estimate, no judgement, no prefetching): the floor of learning that
#              still learns. The whole's ratio less it is the judging, the watch, the
#              estimates and the prefetching.
#              unjudged, weightless, delivery and model learn in full for the first 100
#              samples: give SAMPLES of 1,800 or so for their steady state (BENCHMARKS,
#              2026-12-07 09:16).
# The throwaway builds are made from a copy of the working tree (tracked and untracked files,
# as they are now, uncommitted changes included) in a temporary directory, with their own
# target directory (the first build compiles the dependencies: ~5 min on 2 cores), and removed
# at the end. A part whose place in the source is no longer found stops the script, naming it.
# Usage: bench/learn_parts.sh [SAMPLES] [REPEATS]   (defaults 600 and 11)
# PARTS="core no-object" (the default; also unjudged, weightless, delivery and model) chooses
# the parts; PIN=<cpu> (default 1; empty for none) and ONLY=<text> are passed to bench/learn.sh
# (ONLY defaults to "replay, ": the idle live input says nothing of these parts).
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
n=${1:-600}
repeats=${2:-11}
parts=${PARTS:-core no-object}
for p in $parts; do
  case $p in
    core | no-object | unjudged | weightless | delivery | model) ;;
    *) echo "bench/learn_parts.sh: PARTS takes core, no-object, unjudged, weightless, delivery" \
      "and model, not '$p'" >&2; exit 2 ;;
  esac
done
case " $parts " in
  *" unjudged "* | *" weightless "* | *" delivery "* | *" model "*)
    if [ "$n" -le 1000 ] 2>/dev/null; then
      echo "bench/learn_parts.sh: note: the floors judge in full for their" \
        "first 100 samples, $(( n > 100 ? 10000 / n : 100 ))% of $n; give 1800 or so for their" \
        "steady state" >&2
    fi ;;
esac
tmp=$(mktemp -d)
on_exit 'rm -rf "$tmp"'
# The working tree as it is, without build output (ignored files are left out).
mkdir "$tmp/tree"
git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$tmp/tree"
# patch_part DIR FILE PART: leave PART out of DIR/FILE, by a unique anchor.
patch_part() {
  python3 - "$1/$2" "$3" <<'PY'
import sys
path, part = sys.argv[1], sys.argv[2]
s = open(path).read()
def once(s, old, new):
    """`old` replaced by `new`, where `old` is found exactly once."""
    if s.count(old) != 1:
        sys.exit("bench/learn_parts.sh: the place of part '%s' is not found once in %s: "
                 "update this script's anchor" % (part, path))
    return s.replace(old, new)
# Device::learn, once the interval is learned and the curves estimated when due.
estimated = """                if rose || due(self) {
                    self.estimate(target);
                }
            }
        }
"""
if part == "core":
    s = once(s, estimated, estimated + """        // bench/learn_parts.sh: learning's core alone, no judgement.
        return Arc::clone(nothing_learned());
        #[allow(unreachable_code)]
""")
elif part in ("unjudged", "weightless"):
    if part == "weightless":
        # Nor the judgements' lines asked for ahead (the curves', series' and buckets' still).
        s = once(s, "prefetch(&**l, 3);", "let _ = l;")
        s = once(s, "prefetch(x, 3);", "let _ = x;")
    s = once(s, estimated, estimated + """        // bench/learn_parts.sh: learning in full but for its judgement.
        if let Some(l) = self.last.as_ref().filter(|_| self.model.intervals_seen >= 100) {
            return Arc::clone(l);
        }
""")
elif part == "no-object":
    anchor = """    if let Some(l) = &d.learned {
        out.extend_from_slice(b",\\"learned\\":");"""
    s = once(s, anchor, anchor.replace("&d.learned", "d.learned.as_ref().filter(|_| false)"))
else:
    # delivery, model: the prefetching left out, and the row given its device's last
    # judgement before it is learned.
    s = once(s, "            self.prefetch_ahead(&r.devices, pos, backward);\n",
             "            let _ = (Self::prefetch_ahead, AHEAD); // not asked: no prefetching\n")
    learn = """                points::points_into(&mut points, r.end_wall_ns, rates, lat, cpu.as_ref(), busy_max);
                let pts = points.as_slice();
                d.model.add_interval_watching(r.end_wall_ns, rates.interval_s, pts, estimate::standing);
""" if part == "model" else ""
    anchor = """            let l = d.learn(
                &mut points,"""
    s = once(s, anchor, """            // bench/learn_parts.sh: learning's floor.
            if let Some(last) = d.last.as_ref().filter(|_| d.model.intervals_seen >= 100) {
""" + learn + """                row.learned = Some(Arc::clone(last));
                continue;
            }
""" + anchor)
open(path, "w").write(s)
PY
}
for p in $parts; do
  case $p in
    core | unjudged | weightless | delivery | model) file=src/learn/mod.rs ;;
    no-object) file=src/report/stat_view.rs ;;
  esac
  cp -a "$tmp/tree" "$tmp/tree-$p"
  patch_part "$tmp/tree-$p" "$file" "$p"
  echo "building the throwaway build without '$p'..."
  (cd "$tmp/tree-$p" && CARGO_TARGET_DIR="$tmp/target" cargo build --release --locked --quiet)
  cp "$tmp/target/release/iosat" "$tmp/iosat-$p"
  rm -rf "$tmp/tree-$p"
done
for p in $parts; do
  only=${ONLY:-replay, }
  [ "$p" = no-object ] && only=${ONLY:-json}
  echo
  echo "## without '$p' (the 'before' columns), $n samples, $repeats repeats"
  PIN=${PIN-1} ONLY="$only" BEFORE="$tmp/iosat-$p" bash bench/learn.sh "$n" "$repeats"
done
