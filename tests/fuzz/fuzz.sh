#!/bin/bash
# loopfs-timeout: 900
# Chaos reads, writes, discards and zero-outs race other workers' clears and
# read-only rebinds of the same shared devices: requests then fail with EIO,
# as in-tree, and the block layer logs them; a device stacked on another
# that shrank under it gets ENOSPC for writes past the lower one's end (the
# workers' own devices are judged strictly):
# loopfs-expect-log: critical space allocation error, dev loopfs[0-9]+-[0-9]+, sector [0-9]+ op 0x[19]:\((WRITE|WRITE_ZEROES)\)
# loopfs-expect-log: I/O error, dev loopfs[0-9]+-[0-9]+, sector [0-9]+ op 0x[0139]:\((READ|WRITE|DISCARD|WRITE_ZEROES)\)
# loopfs-expect-log: Buffer I/O error on dev loopfs[0-9]+-[0-9]+, logical block [0-9]+, (lost async page write|async page read)
# ioctl and mount fuzzer for loopfs: runs the fuzzer `make tests-build` built
# from tests/fuzz/fuzz.c for LOOPFS_FUZZ_SECONDS (default 120, or 20 with
# LOOPFS_QUICK=1; 300 on the check-debug kernel).  The seed is printed;
# LOOPFS_FUZZ_SEED=<seed> replays it (see fuzz.c for the rest).
set -euo pipefail
. "$(dirname "$0")/../lib/run-built.sh"
# The check-debug kernel (tests/debug/) gets the long run even with
# LOOPFS_QUICK.  LOOPFS_FUZZ_EXCLUDE (names as in the table's op column, or
# argument kinds, see fuzz.c) steps around a known bug while it is open;
# none is open, so everything is drawn.
case $(uname -r) in
*-loopfs-debug)
	export LOOPFS_FUZZ_SECONDS=${LOOPFS_FUZZ_SECONDS:-300}
	;;
esac
run_built tests/fuzz/fuzz "$@"
