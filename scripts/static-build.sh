#!/usr/bin/env bash
# The static release binary of docs/deploy.md ("A static binary"), built and checked: glibc
# linked statically (+crt-static; the musl target needs `rustup target add
# x86_64-unknown-linux-musl`, which this machine cannot fetch), `file` and `ldd` say static, no
# name-service lookups linked in (getaddrinfo, getpwnam: a static glibc would need the same
# glibc's NSS modules at run time for them), and the binary runs: --version, info, and an
# exporter on a loopback port scraped by curl and stopped.
#
# PROFILE (default release) is the cargo profile: scripts/test.sh checks the linkage with the
# cheaper `static-check` profile (dev without debug information: the same link, minutes less
# than a release build from scratch on 2 cores). Prints what it checked; exits non-zero on the
# first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-gnu
profile=${PROFILE:-release}
bin=target/$target/$profile/iosat
start=$(date +%s)
# --target keeps RUSTFLAGS away from build scripts and proc macros, which must stay dynamic.
RUSTFLAGS='-C target-feature=+crt-static' cargo build --profile "$profile" --locked --target "$target"
echo "static-build: built in $(( $(date +%s) - start )) s: $bin"

fail() { echo "static-build: FAILED: $*" >&2; exit 1; }

desc=$(file -b "$bin")
case "$desc" in
  *"statically linked"* | *"static-pie linked"*) echo "static-build: file: $desc" ;;
  *) fail "file says: $desc" ;;
esac
if ldd "$bin" 2>&1 | grep -q '=>'; then
  fail "ldd lists shared libraries: $(ldd "$bin" 2>&1)"
fi
echo "static-build: ldd: $(ldd "$bin" 2>&1 | tr -s ' \t' ' ')"
nss=$(nm "$bin" 2>/dev/null | awk '$3 ~ /^(getaddrinfo|gethostbyname|getpwnam|getpwnam_r|getpwuid|getpwuid_r|getgrnam|getgrgid)$/ {print $3}' || true)
[ -z "$nss" ] || fail "name-service lookups linked in: $nss"
echo "static-build: no getaddrinfo/getpw*/getgr* linked in"

"$bin" --version
"$bin" info >/dev/null || fail "iosat info"

log=$(mktemp)
"$bin" exporter --web.listen-address 127.0.0.1:0 --no-learn --no-profile 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
addr=
for _ in $(seq 1 100); do
  addr=$(sed -n 's#.*listening on http://\([^/]*\)/metrics.*#\1#p' "$log")
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || fail "the exporter did not listen: $(cat "$log")"
n=$(curl -sS --fail --max-time 20 "http://$addr/metrics" | grep -c '^iosat_disk_requests_completed_total{' || true)
[ "$n" -gt 0 ] || fail "no iosat_disk_requests_completed_total in the scrape"
kill -TERM $pid
code=0
wait $pid || code=$?
[ "$code" = 130 ] || fail "the exporter exited $code on SIGTERM, not 130"
echo "static-build: the exporter served $n device series on $addr and stopped with 130"
echo "static-build: ok"
