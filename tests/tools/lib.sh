# shellcheck shell=bash
# Helpers for the tools suites (tests/tools/*.sh): the shell suites' TAP
# helpers (tap_plan, run_test, skip_test, tap_done, fail, expect_eq,
# expect_in, wait_gone) plus what only the tools suites use.
. "$(dirname "${BASH_SOURCE[0]}")/../shell/lib.sh"

# Host names of all loopfs block devices right now, one per line.
loopfs_disks() {
	local d
	for d in /sys/block/loopfs*; do
		[ -e "$d" ] && echo "${d##*/}"
	done
	true
}
