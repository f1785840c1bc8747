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
