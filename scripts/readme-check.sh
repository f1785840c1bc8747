#!/usr/bin/env bash
# Walk the documentation top to bottom -- README.md, CONTRIBUTING.md, then docs/*.md -- and run
# every shell example it shows; check that every relative link points at a file (and heading)
# that exists; fail when one example or link fails.
#
# The rule, the same for every section and every page (also ones this script has never seen):
#   - every line of a ```sh, ```bash or ```shell block is an example (blank lines and
#     `# comment` lines skipped, a trailing `  # comment` and a leading `$ ` dropped);
#   - in any other fenced block, a line starting with `$ ` is an example (the lines after it
#     are the output it showed, not checked: numbers differ from machine to machine);
#   - examples run in page order, each with `bash -c`, in one scratch directory per page (so
#     a file an earlier example of the page writes is there for a later one; pages do not see
#     each other's files, learned state or profiles), bounded by a time limit, and must exit 0;
#     README_CHECK_JOBS pages (default 4) run at once, and each page's lines are printed
#     together, in page order;
#   - `iosat` is the built binary behind a wrapper that keeps runs short: sweep and fsync
#     get short per-level/per-case durations (20 ms, no ramp; a sweep's temporary file 16 MiB
#     unless the example sets --size), and a live `stat` without a count stops after 2
#     reports at 0.2 s. Everything else is passed through unchanged.
#   - HTML comments right before a fence adjust that block (several may stand one after
#     another):
#       <!-- readme-check: skip REASON -->          the block is not run (reported as skipped)
#       <!-- readme-check: skip-line TEXT REASON --> lines containing TEXT are not run
#       <!-- readme-check: root -->                 run only as root (else skipped)
#       <!-- readme-check: setup COMMAND -->        run first in the page's scratch directory
#                                                   ($FIXTURES is tests/fixtures, $ROOT the checkout)
#       <!-- readme-check: sub FROM=TO -->          replace FROM by TO in the block's examples
#       <!-- readme-check: exit N -->               the block's examples must exit N
#   - a link `[text](path)` or `[text](path#heading)` that is not a URL must name a file
#     relative to the page, and the heading (GitHub's anchor: lower case, punctuation dropped,
#     spaces as dashes) must be one of that file's headings.
#
# Usage: scripts/readme-check.sh [PAGE.md...]   (default: README.md, CONTRIBUTING.md, docs/*.md;
# IOSAT=path/to/iosat, default target/debug/iosat, built when missing). Prints one line per
# example with the seconds it took; exit 1 when any failed.

set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if (( $# )); then
    pages=("$@")
else
    pages=("$ROOT/README.md")
    [[ -f $ROOT/CONTRIBUTING.md ]] && pages+=("$ROOT/CONTRIBUTING.md")
    pages+=("$ROOT"/docs/*.md)
fi
# A page named that is not there would walk nothing and pass: one line naming it, exit 2.
for page in "${pages[@]}"; do
    [[ -f $page && -r $page ]] || { echo "readme-check: no such page: $page" >&2; exit 2; }
done
IOSAT=${IOSAT:-$ROOT/target/debug/iosat}
if [[ ! -x $IOSAT ]]; then
    (cd "$ROOT" && cargo build --quiet) || exit 1
fi
FIXTURES=$ROOT/tests/fixtures
export ROOT FIXTURES
LIMIT=${README_CHECK_TIMEOUT:-120}
# Pages at once: the examples mostly wait (a short sweep's I/O, a live `stat`'s interval; the
# whole walk took 86 s of wall time for 25 s of CPU, one page at a time).
AT_ONCE=${README_CHECK_JOBS:-4}
[[ $AT_ONCE =~ ^[1-9][0-9]*$ ]] || { echo "readme-check: README_CHECK_JOBS must be a whole number of 1 or more, not '$AT_ONCE'" >&2; exit 2; }

scratch=$(mktemp -d "${TMPDIR:-/tmp}/readme-check.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/bin"
# Nothing an example does outlives the check: what `stat` learns from the traffic it sees (else
# /var/lib/iosat for root, ~/.local/state/iosat otherwise) and the profiles examples read or
# save stay in the page's scratch directory (IOSAT_STATE_DIR and IOSAT_PROFILE_DIR, set per
# page below), and the machine's own profiles never colour an example.

# The wrapper: short runs, same binary.
cat >"$scratch/bin/iosat" <<WRAP
#!/usr/bin/env bash
args=()
cmd=\${1:-}
skip=0
for a in "\$@"; do
    if (( skip )); then skip=0; continue; fi
    case "\$cmd:\$a" in
        sweep:--duration|sweep:--runtime|sweep:--ramp|fsync:--duration|fsync:--runtime) skip=1; continue ;;
        sweep:--duration=*|sweep:--runtime=*|sweep:--ramp=*|fsync:--duration=*|fsync:--runtime=*) continue ;;
    esac
    args+=("\$a")
done
has() { local a; for a in "\${args[@]}"; do [[ \$a == "\$1" || \$a == "\$1="* ]] && return 0; done; return 1; }
case "\$cmd" in
    sweep)
        args+=(--duration 20ms --ramp 0)
        has --size || has --engine || args+=(--size 16m)
        has --no-progress || args+=(--no-progress) ;;
    fsync)
        args+=(--duration 20ms) ;;
    stat)
        if ! has --replay && ! has -c && ! has --count && ! has --help; then
            n=0; for a in "\${args[@]:1}"; do [[ \$a == [0-9]* ]] && n=\$((n+1)); done
            (( n == 0 )) && ! has -i && ! has --interval && args+=(-i 0.2)
            (( n < 2 )) && args+=(-c 2)
        fi ;;
esac
exec "$IOSAT" "\${args[@]}"
WRAP
chmod +x "$scratch/bin/iosat"

# Extract: one record per example or directive, tab-separated: block, kind, line, text.
extract() {
    awk '
    BEGIN { block = 0; inb = 0 }
    /^```/ {
        if (inb) { inb = 0; next }
        inb = 1; block++; lang = substr($0, 4); gsub(/[ \t]/, "", lang)
        shell = (lang == "sh" || lang == "bash" || lang == "shell")
        for (i = 1; i <= nd; i++) printf "%d\tdirective\t%d\t%s\n", block, dl[i], d[i]
        nd = 0
        next
    }
    !inb && /^<!-- readme-check: .* -->[ \t]*$/ {
        t = $0; sub(/^<!-- readme-check: /, "", t); sub(/ -->[ \t]*$/, "", t)
        nd++; d[nd] = t; dl[nd] = NR; next
    }
    !inb && /[^ \t]/ { nd = 0 }
    inb && shell {
        t = $0
        if (t ~ /^[ \t]*#/ || t ~ /^[ \t]*$/) next
        sub(/[ \t][ \t]+#.*$/, "", t)
        sub(/^\$ /, "", t)
        printf "%d\texample\t%d\t%s\n", block, NR, t
        next
    }
    inb && /^\$ / { t = $0; sub(/^\$ /, "", t); printf "%d\texample\t%d\t%s\n", block, NR, t }
    ' "$1"
}

# GitHub's anchors of a page's headings (outside fences), one a line.
anchors() {
    awk '/^```/ { inb = !inb; next } !inb && /^#+ / { sub(/^#+ /, ""); print }' "$1" |
        tr '[:upper:]' '[:lower:]' | sed 's/[^[:alnum:] _-]//g; s/ /-/g'
}

# Every relative link of a page resolves: the file exists, and the heading when one is named.
check_links() {
    local page=$1 name=$2 link file frag dir
    dir=$(dirname "$page")
    while IFS= read -r link; do
        case $link in http:* | https:* | mailto:*) continue ;; esac
        file=${link%%#*} frag=""
        [[ $link == *"#"* ]] && frag=${link#*#}
        if [[ -z $file ]]; then file=$page; else file=$dir/$file; fi
        if [[ ! -e $file ]]; then
            echo "FAIL  $name: link to a missing file: $link"
            fail=$((fail + 1))
        elif [[ -n $frag && -f $file ]] && ! anchors "$file" | grep -qxF -- "$frag"; then
            echo "FAIL  $name: link to a missing heading: $link"
            fail=$((fail + 1))
        else
            links=$((links + 1))
        fi
    done < <(awk '/^```/ { inb = !inb; next } !inb' "$page" | sed 's/`[^`]*`//g' |
        grep -o '\]([^) ]*)' | sed 's/^](//; s/)$//')
}

pass=0 fail=0 skipped=0 links=0
# One page: its examples in order, in DIR/work, a scratch directory of its own; its counts
# (pass fail skipped links) into DIR/counts.
check_page() {
    local page=$1 dir=$2 name=${1#"$ROOT"/} cur=0 block kind line text
    local -a subs=() skiplines=()
    local block_skip="" want=0 why run rc s pat t0 took
    mkdir -p "$dir/work"
    while IFS=$'\t' read -r block kind line text; do
        if [[ $block != "$cur" ]]; then
            cur=$block subs=() skiplines=() block_skip="" want=0
        fi
        if [[ $kind == directive ]]; then
            case $text in
                "skip "*) block_skip=${text#skip } ;;
                root) [[ $(id -u) == 0 ]] || block_skip="needs root" ;;
                "skip-line "*) skiplines+=("${text#skip-line }") ;;
                "sub "*) subs+=("${text#sub }") ;;
                "exit "*) want=${text#exit } ;;
                "setup "*)
                    if [[ -z $block_skip ]] && ! (cd "$dir/work" && PATH="$scratch/bin:$PATH" \
                        timeout "$LIMIT" bash -c "${text#setup }") >"$dir/out" 2>&1; then
                        echo "FAIL  $name:$line: setup: ${text#setup }"
                        sed 's/^/      /' "$dir/out" | tail -20
                        fail=$((fail + 1))
                    fi ;;
                *) echo "FAIL  $name:$line: unknown readme-check directive: $text"; fail=$((fail + 1)) ;;
            esac
            continue
        fi
        if [[ -n $block_skip ]]; then
            echo "skip  $name:$line: $text ($block_skip)"
            skipped=$((skipped + 1))
            continue
        fi
        why=""
        for s in "${skiplines[@]}"; do
            pat=${s%% *}
            [[ $text == *"$pat"* ]] && why=${s#"$pat"} && why=${why# }
        done
        if [[ -n $why ]]; then
            echo "skip  $name:$line: $text ($why)"
            skipped=$((skipped + 1))
            continue
        fi
        run=$text
        for s in "${subs[@]}"; do
            run=${run//"${s%%=*}"/"${s#*=}"}
        done
        t0=$EPOCHREALTIME
        (cd "$dir/work" && PATH="$scratch/bin:$PATH" timeout "$LIMIT" bash -c "$run") \
            >"$dir/out" 2>&1 </dev/null
        rc=$?
        took=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
        if [[ $rc == "$want" ]]; then
            echo "ok    $name:$line: $run (${took} s)"
            pass=$((pass + 1))
        else
            echo "FAIL  $name:$line: $run (exit $rc, want $want)"
            sed 's/^/      /' "$dir/out" | tail -20
            fail=$((fail + 1))
        fi
    done < <(extract "$page")
    check_links "$page" "$name"
    echo "$pass $fail $skipped $links" >"$dir/counts"
}

# Ctrl-C or a TERM ends the walk: the pages run in the background, where a script's jobs
# ignore SIGINT, so each page's whole tree is sent a TERM (a `timeout` passes it on to its
# example), then the EXIT trap removes the scratch directory.
kill_tree() {
    local child
    for child in $(pgrep -P "$1"); do
        kill_tree "$child"
    done
    kill -TERM "$1" 2>/dev/null
}
page_pids=()
on_signal() {
    trap - INT TERM
    local pid
    for pid in "${page_pids[@]}"; do
        kill_tree "$pid"
    done
    wait
    echo "readme-check: interrupted" >&2
    exit 130
}
trap on_signal INT TERM

n=0
for page in "${pages[@]}"; do
    n=$((n + 1))
    while (($(jobs -rp | wc -l) >= AT_ONCE)); do
        wait -n
    done
    dir=$scratch/page$n
    mkdir -p "$dir"
    (
        export IOSAT_STATE_DIR=$dir/state IOSAT_PROFILE_DIR=$dir/profiles
        check_page "$page" "$dir" >"$dir/log" 2>&1
    ) &
    page_pids+=($!)
done
wait
# The pages' lines in page order, and their counts summed; a page that left no counts (its
# walk died) is a failure, not a silent pass.
for ((i = 1; i <= n; i++)); do
    cat "$scratch/page$i/log"
    if read -r p f s l <"$scratch/page$i/counts" 2>/dev/null; then
        pass=$((pass + p)) fail=$((fail + f)) skipped=$((skipped + s)) links=$((links + l))
    else
        echo "FAIL  ${pages[i - 1]#"$ROOT"/}: the page's walk ended before its counts"
        fail=$((fail + 1))
    fi
done

echo "readme-check: ${#pages[@]} pages, $pass ran, $skipped skipped, $links links resolved, $fail failed"
(( fail == 0 ))
