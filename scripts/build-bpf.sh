#!/bin/sh
# Rebuild the committed BPF object bpf/iolat.bpf.o from bpf/iolat.bpf.c (CO-RE: the loader
# relocates it against the running kernel's BTF, so one object serves every kernel >= 5.5).
# `cargo build` never runs this: the object is committed and embedded in the binary.
#
#   scripts/build-bpf.sh [OUT]     OUT defaults to bpf/iolat.bpf.o
#
# Deterministic: relative file names (-fdebug-prefix-map) and no DWARF (llvm-strip -g keeps
# .BTF and .BTF.ext, which CO-RE needs), so the same clang gives the same bytes anywhere.
# bpf/clang-version records the clang that built the committed object; the test suite
# (tests/it/bpf.rs) rebuilds with this script and compares bytes when its clang is that one.
set -eu
cd "$(dirname "$0")/.."
out=${1:-bpf/iolat.bpf.o}
CLANG=${CLANG:-clang}
STRIP=${STRIP:-llvm-strip}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$CLANG" -target bpf -mcpu=v3 -O2 -g -fdebug-prefix-map="$PWD"=. -fno-ident \
    -Wall -Werror -c bpf/iolat.bpf.c -o "$tmp/iolat.bpf.o"
"$STRIP" -g "$tmp/iolat.bpf.o"
cp "$tmp/iolat.bpf.o" "$out"
if [ "$out" = bpf/iolat.bpf.o ]; then
    "$CLANG" --version | head -n 1 >bpf/clang-version
fi
