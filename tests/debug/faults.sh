#!/bin/bash
# loopfs-timeout: 900
# make check-debug only (needs CONFIG_FAULT_INJECTION, FAILSLAB,
# FAIL_PAGE_ALLOC, FAIL_FUNCTION with kprobes on ftrace): every allocation
# of a loopfs call fails in turn, one per call (tests/debug/fault-sweep.c,
# through this task's fail-nth), for mount, LOOP_CTL_ADD, LOOP_CONFIGURE
# with partition scan, LOOP_CTL_REMOVE and the umount that takes an
# instance with devices down. Each failure must give ENOMEM (or, for
# LOOP_CTL_ADD, the EINVAL the kernel gives for a disk it failed to name)
# or be absorbed. Then the same for loopfs's own steps that can fail
# (marked ALLOW_ERROR_INJECTION, failed through fail_function with EIO):
# each must fail its call with EIO. Either way the failure must leave
# nothing half made (the next call gets further, the last one, with
# nothing injected, works and is undone) and log no WARNING
# or other kernel problem; the kmemleak scan that ends check-debug finds
# what the error paths leaked, and its rmmod what they left pinned.  A
# failed allocation made without __GFP_NOWARN (a vmalloc, say) reports
# itself with its caller's stack:
# loopfs-expect-log: injected allocation failure
set -uo pipefail
. "$(dirname "$0")/../lib/suite.sh"
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
	[ -w "$dbg/fail_function/inject" ] && echo >"$dbg/fail_function/inject"
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
		"$(grep -c ' ENOMEM' <<<"$out") ENOMEM," \
		"$(grep -c ' EINVAL' <<<"$out") EINVAL," \
		"$(grep -c ' ok' <<<"$out") absorbed;" \
		"$(grep -c ' E.* held$' <<<"$out") failed with the disk held by udev"
	[ "${calls:-0}" -ge 1 ] || fail "no allocation of $1 could be failed"
}

# The steps of each call that can fail on their own, in the order the
# call passes them. Every one is marked ALLOW_ERROR_INJECTION in loopfs.
steps_mount="loopfs_add_node loopfs_add_view"
steps_add="loopfs_charge loop_dev_create loopfs_add_node loopfs_add_view_dir"
steps_configure="loop_dev_may_back loop_dev_apply_limits"
steps_remove="loop_dev_claim_for_removal"

# Allocations no longer count for fail-nth, only the marked steps, each
# failing with EIO: an errno none of them gives on its own.
inject_steps() {
	local ff=$dbg/fail_function f
	[ -w "$ff/inject" ] || fail "no fail_function in $dbg"
	knob "$dbg/failslab/cache-filter" Y
	knob "$dbg/fail_page_alloc/min-order" 11
	knob "$ff/verbose" 0
	for f in $steps_mount $steps_add $steps_configure $steps_remove; do
		[ -d "$ff/$f" ] && continue
		echo "$f" >"$ff/inject" || fail "fail_function refuses $f"
		printf '%#x' -5 >"$ff/$f/retval"
	done
}

# A LOOP_CTL_ADD whose names cannot be made, while udev holds the new
# disk open: the disk must go all the same, its name and index free again
# at once. Only the last step, the view's directory, is failed (the node is
# made and removed first, which gives udev time to open the disk), over
# and over until udev held the disk during the failure three times.
held_add() {
	local ff=$dbg/fail_function out
	echo >"$ff/inject"
	echo loopfs_add_view_dir >"$ff/inject"
	printf '%#x' -5 >"$ff/loopfs_add_view_dir/retval"
	out=$("$sweep" "$w/m" "$w/backing" held-add EIO) || {
		echo "$out" | tail -n 5
		fail "fault-sweep held-add EIO"
	}
	echo "DIAG: $(tail -n 1 <<<"$out") failed calls"
}

# step_sweep OP: each marked step of OP fails in turn, with EIO.
step_sweep() {
	local out calls steps want f
	steps=steps_$1
	want=$(wc -w <<<"${!steps}")
	for f in ${!steps}; do
		[ -d "$dbg/fail_function/$f" ] || fail "fail_function has no $f"
	done
	out=$("$sweep" "$w/m" "$w/backing" "$1" EIO) || {
		echo "$out" | tail -n 20
		fail "fault-sweep $1 EIO"
	}
	calls=$(sed -n 's/^calls //p' <<<"$out")
	echo "DIAG: $1: ${!steps}: $(grep -c ' EIO' <<<"$out") gave EIO;" \
		"$(grep -c ' EIO held$' <<<"$out") with the disk held by udev"
	[ "${calls:-0}" = "$want" ] ||
		fail "$1 passed ${calls:-0} marked steps, not the $want of: ${!steps}"
}

[ -d "$dbg/failslab" ] || mount -t debugfs debugfs "$dbg" 2>/dev/null
[ -d "$dbg/failslab" ] && [ -d "$dbg/fail_page_alloc" ] && allow_injection
tap_plan 11
run_test "set-up: failslab, fail_page_alloc and fail-nth, a backing file" setup
for op in mount add configure remove umount; do
	run_test "each allocation of $op failed in turn: ENOMEM or absorbed, nothing left half made" \
		sweep "$op"
done
[ -d "$dbg/failslab" ] && [ -d "$dbg/fail_page_alloc" ] && inject_steps
for op in mount add configure remove; do
	run_test "each step of $op that can fail failed in turn (fail_function): EIO, nothing left half made" \
		step_sweep "$op"
done
run_test "LOOP_CTL_ADD whose names fail while udev holds the new disk: EIO, the disk gone at once, the index free again" \
	held_add
cleanup
tap_done
