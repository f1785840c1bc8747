# Shared by the bench scripts (sourced, not run).

# synthetic_diskstats FILE: a 1,000-device /proc/diskstats in the 20-field format of current
# kernels, 250 disks with 3 partitions each, counters large enough to have every digit.
synthetic_diskstats() {
  awk 'BEGIN {
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
# test file $FILE of SIZE_MB MiB of real data in a fresh $WORK under DIR (removed by the
# caller's trap).
bpf_bench_setup() {
  [ "$(id -u)" = 0 ] || { echo "needs root (loading BPF programs)" >&2; exit 1; }
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
  done
  if [ -z "${IOSAT:-}" ]; then
    cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
    IOSAT="$ROOT/target/release/iosat"
  fi
  WORK=$(mktemp -d "${DIR:-$PWD}/iosat-bench.XXXXXX")
  FILE="$WORK/data"
  fio --name=layout --filename="$FILE" --size="${SIZE_MB}m" --rw=write --bs=1m --direct=1 \
    --refill_buffers --output=/dev/null
}

# median: the median of the numbers on stdin, one per line.
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
