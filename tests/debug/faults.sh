#!/bin/bash
# loopfs-timeout: 900
# make check-debug only (needs CONFIG_FAULT_INJECTION, FAILSLAB,
# FAIL_PAGE_ALLOC): every allocation of a loopfs call fails in turn, one
# per call (tests/debug/fault-sweep.c, through this task's fail-nth), for
# mount, LOOP_CTL_ADD, LOOP_CONFIGURE with partition scan, LOOP_CTL_REMOVE
# and the umount that takes an instance with devices down. Each failure
# must give ENOMEM (or, for LOOP_CTL_ADD, the EINVAL the kernel gives for a
# disk it failed to name) or be absorbed, leave nothing half made (the call then
# works and is undone), and log no WARNING or other kernel problem; the
# kmemleak scan that ends check-debug finds what the error paths leaked,
# and its rmmod what they left pinned.  A failed allocation made without
# __GFP_NOWARN (a vmalloc, say) reports itself with its caller's stack:
# loopfs-expect-log: injected allocation failure
set -uo pipefail
. "$(dirname "$0")/../shell/lib.sh"
in_private_mount_ns "$@"

sweep=${LOOPFS_BUILD:?}/tests/debug/fault-sweep
dbg=/sys/kernel/debug
w=$(mktemp -d /tmp/loopfs-faults.XXXXXX)
saved=()

# knob FILE VALUE: set a fault-injection knob, to be put back at the end.
knob() {
	saved+=("$1=$(cat "$1")")
	echo "$2" >"$1"
}

cleanup() {
	local s
	for s in "${saved[@]}"; do
		echo "${s#*=}" >"${s%%=*}"
	done
	umount "$w/m" 2>/dev/null
	rm -rf "$w"
}
trap cleanup EXIT

setup() {
	[ -d "$dbg/failslab" ] || fail "no failslab in $dbg"
	[ -d "$dbg/fail_page_alloc" ] || fail "no fail_page_alloc in $dbg"
	[ -e /proc/thread-self/fail-nth ] || fail "no fail-nth"
	mkdir "$w/m"
	truncate -s 16M "$w/backing"
}

# The knobs go back to their values in cleanup, so they are set in the
# suite's own shell, not in a test's subshell.
allow_injection() {
	local f
	for f in failslab fail_page_alloc; do
		# fail-nth still obeys each capability's own filters.
		knob "$dbg/$f/ignore-gfp-wait" N
		knob "$dbg/$f/verbose" 0
	done
	knob "$dbg/fail_page_alloc/ignore-gfp-highmem" N
	knob "$dbg/fail_page_alloc/min-order" 0
}

# sweep OP: every allocation of OP failed in turn; at least one must be.
sweep() {
	local out calls
	out=$("$sweep" "$w/m" "$w/backing" "$1") || {
		echo "$out" | tail -n 20
		fail "fault-sweep $1"
	}
	calls=$(sed -n 's/^calls //p' <<<"$out")
	echo "DIAG: $1: $calls allocations failed in turn:" \
		"$(grep -c ' ENOMEM$' <<<"$out") ENOMEM," \
		"$(grep -c ' EINVAL$' <<<"$out") EINVAL," \
		"$(grep -c ' ok$' <<<"$out") absorbed"
	[ "${calls:-0}" -ge 1 ] || fail "no allocation of $1 could be failed"
}

[ -d "$dbg/failslab" ] || mount -t debugfs debugfs "$dbg" 2>/dev/null
[ -d "$dbg/failslab" ] && [ -d "$dbg/fail_page_alloc" ] && allow_injection
tap_plan 6
run_test "set-up: failslab, fail_page_alloc and fail-nth, a backing file" setup
for op in mount add configure remove umount; do
	run_test "each allocation of $op failed in turn: ENOMEM or absorbed, nothing left half made" \
		sweep "$op"
done
cleanup
tap_done
