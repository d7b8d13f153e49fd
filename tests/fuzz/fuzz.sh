#!/bin/bash
# loopfs-timeout: 900
# Chaos reads and writes race other workers' clears and read-only rebinds of
# the same shared devices: requests then fail with EIO, as in-tree, and the
# block layer logs them (the workers' own devices are judged strictly):
# loopfs-expect-log: I/O error, dev loopfs[0-9]+-[0-9]+, sector [0-9]+ op 0x[01]:\((READ|WRITE)\)
# loopfs-expect-log: Buffer I/O error on dev loopfs[0-9]+-[0-9]+, logical block [0-9]+, (lost async page write|async page read)
# ioctl and mount fuzzer for loopfs: builds tests/fuzz/fuzz.c into a
# temporary directory and runs it for LOOPFS_FUZZ_SECONDS (default 120, or 20
# with LOOPFS_QUICK=1; 300 on the check-debug kernel).  The seed
# is printed; LOOPFS_FUZZ_SEED=<seed> replays it (see fuzz.c for the rest).
set -euo pipefail
src=${LOOPFS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
out=$(mktemp -d "${TMPDIR:-/tmp}/loopfs-fuzz.XXXXXX")
trap 'rm -rf "$out"' EXIT
if ! gcc -O2 -Wall -Werror -o "$out/fuzz" "$src/tests/fuzz/fuzz.c" 2>"$out/cc.log"; then
	echo "TAP version 13"
	echo "1..1"
	echo "not ok 1 - tests/fuzz/fuzz.c compiles"
	sed 's/^/# /' "$out/cc.log"
	exit 1
fi
# The check-debug kernel (tests/debug/) gets the long run even with
# LOOPFS_QUICK.  LOOPFS_FUZZ_EXCLUDE (names as in the table's op column, or
# argument kinds, see fuzz.c) steps around a known bug while it is open;
# none is open, so everything is drawn.
case $(uname -r) in
*-loopfs-debug)
	export LOOPFS_FUZZ_SECONDS=${LOOPFS_FUZZ_SECONDS:-300}
	;;
esac
"$out/fuzz" "$@"
