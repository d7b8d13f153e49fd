#!/bin/bash
# loopfs-timeout: 240
# Concurrency stress for loopfs: builds tests/stress/stress.c into
# a temporary directory and runs it (60 s, or 20 s with LOOPFS_QUICK=1).
# The program prints TAP, reports operation counts as "# ops:" lines and ends
# by unloading and reloading the module.
set -euo pipefail
src=${LOOPFS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
out=$(mktemp -d "${TMPDIR:-/tmp}/loopfs-stress.XXXXXX")
trap 'rm -rf "$out"' EXIT
if ! gcc -O2 -Wall -Werror -o "$out/stress" "$src/tests/stress/stress.c" 2>"$out/cc.log"; then
	echo "TAP version 13"
	echo "1..1"
	echo "not ok 1 - tests/stress/stress.c compiles"
	sed 's/^/# /' "$out/cc.log"
	exit 1
fi
"$out/stress" "$@"
