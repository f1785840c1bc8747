#!/usr/bin/env python3
"""pg_test_fsync's text output -> "repeat\ttool\tmethod\twrites_per_commit\tops_per_s" lines.

Reads the two "Compare file sync methods using one/two 8kB write(s)" tables and the
"Non-sync'ed 8kB writes" line; "n/a" rows are left out. Used by bench/fsync_vs_pg.sh and the
suite's comparison test (tests/it/fsync_like.rs).
Usage: pg_test_fsync_parse.py OUTPUT REPEAT TOOL
"""
import re
import sys

text = open(sys.argv[1]).read()
rep, tool = sys.argv[2], sys.argv[3]
wpc = None
for line in text.splitlines():
    if "using one 8kB write" in line:
        wpc = 1
    elif "using two 8kB writes" in line:
        wpc = 2
    elif line.startswith("Non-sync"):
        wpc = 1
    elif line and not line.startswith((" ", "\t", "(")):
        wpc = None
    m = re.match(r"\s+(open_datasync|fdatasync|fsync|open_sync|write)\s+([0-9.]+) ops/sec", line)
    if wpc and m:
        print(f"{rep}\t{tool}\t{m.group(1)}\t{wpc}\t{m.group(2)}")
