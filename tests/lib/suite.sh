# shellcheck shell=bash
# The library every shell suite in the guest sources (tests/shell,
# security, tools, containers, debug): TAP, expectations, and what the
# suites ask of devices, the kernel and the log.  A suite's own helpers
# stay in the suite (or, for the container managers, tests/containers/lib.sh).
#
#   . "$(dirname "$0")/../lib/suite.sh"
#   in_private_mount_ns "$@"          # re-exec the suite in its own mount namespace
#   tap_plan 3
#   run_test "name says the behaviour" test_function [args...]
#   skip_test "name" "reason"
#   tap_done                          # exit status: 0 if nothing failed
#
# Each test function runs in a subshell with `set -euo pipefail`; its output
# is shown as TAP diagnostics when it fails (its "DIAG: " lines always).
# State in the mount namespace (mounts, bound devices) carries over from one
# test to the next, so a suite can be a sequence of steps.

TAP_N=0
TAP_FAILED=0

tap_plan() {
	echo "TAP version 13"
	echo "1..$1"
}

run_test() {
	local name=$1 rc=0 log t0=$SECONDS
	shift
	TAP_N=$((TAP_N + 1))
	log=$(mktemp)
	# A background job keeps `set -e` in force inside the test (it is
	# ignored in subshells that are part of `if` or `||`).
	( set -euo pipefail; "$@" ) >"$log" 2>&1 </dev/null &
	wait $! || rc=$?
	if [ "$rc" -eq 0 ]; then
		echo "ok $TAP_N - $name"
		sed -n 's/^DIAG: /# /p' "$log"
	else
		echo "not ok $TAP_N - $name"
		sed 's/^/# /' "$log"
		echo "# (exit status $rc)"
		TAP_FAILED=$((TAP_FAILED + 1))
	fi
	# What each test costs, for the check's time budget.
	echo "# time: $((SECONDS - t0)) s"
	rm -f "$log"
}

skip_test() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N - $1 # SKIP $2"
}

tap_done() {
	[ "$TAP_FAILED" -eq 0 ]
}

# Fail the current test with a message.
fail() {
	echo "FAIL: $*" >&2
	return 1
}

# expect_eq EXPECTED ACTUAL WHAT
expect_eq() {
	[ "$1" = "$2" ] || fail "$3: expected '$1', got '$2'"
}

# expect_in NEEDLE HAYSTACK WHAT
expect_in() {
	case $2 in
	*"$1"*) ;;
	*) fail "$3: '$1' not in: $2" ;;
	esac
}

# expect_not_in NEEDLE HAYSTACK WHAT
expect_not_in() {
	case $2 in
	*"$1"*) fail "$3: '$1' in: $2" ;;
	esac
}

in_private_mount_ns() {
	if [ -z "${LOOPFS_PRIVATE_NS:-}" ]; then
		LOOPFS_PRIVATE_NS=1 exec unshare -m --propagation private "$0" "$@"
	fi
}

# kernel_has_fs NAME: the running kernel has filesystem NAME, built in or
# as a module it can load.  Only a kernel built without it (the check-debug
# kernel has no xfs) makes a test skip; a module that is there but does not
# load fails the test that mounts it.
kernel_has_fs() {
	grep -qw "$1" /proc/filesystems || modinfo "$1" >/dev/null 2>&1
}

# kernel_at_least VERSION: the running kernel is VERSION (x.y) or later
kernel_at_least() {
	local k
	k=$(uname -r | cut -d- -f1)
	[ "$(printf '%s\n%s\n' "$1" "$k" | sort -V | head -n 1)" = "$1" ]
}

# Kernel log lines printed since the given line count.
dmesg_lines() { dmesg | wc -l; }
dmesg_since() { dmesg | tail -n +"$(($1 + 1))"; }

# devnum [-L] NODE: the device number of NODE as MAJ:MIN in decimal, as
# sysfs writes it (stat's %Hr:%Lr is coreutils 9's; 8.32 prints ?r:?r).
devnum() {
	local num
	num=$(stat "$@" -c '%t %T') || return
	set -- $num
	echo "$((0x$1)):$((0x$2))"
}

# util-linux takes a loopfs device named by path for a loop device (from
# 2.37: /sys/dev/block says the disk is a loop*; before, only major 7 is:
# losetup_by_path.sh)
ul_takes_loopfs_paths() {
	local v
	v=$(losetup --version | awk '{ print $NF }')
	[ "$(printf '%s\n2.37\n' "$v" | sort -V | head -n 1)" = 2.37 ]
}

# loop_detach_cmd: the command that clears a loop device named by path, as
# losetup -d does: util-linux's where it takes a loopfs device by path,
# else busybox's losetup -d, which asks nothing first. The suites that use
# it test the kernel's clear, losetup_by_path.sh tests losetup -d itself.
loop_detach_cmd() {
	if ul_takes_loopfs_paths; then
		echo "losetup -d"
	else
		echo "busybox losetup -d"
	fi
}

# loop_detach DEV...: LOOP_CLR_FD on each DEV with loop_detach_cmd's
# command (a suite handing it to another shell hands both, and
# ul_takes_loopfs_paths)
loop_detach() {
	local d cmd
	cmd=$(loop_detach_cmd)
	for d; do
		$cmd "$d" || return
	done
}

# kernel_charges_worker_memcg: the page cache a device's worker allocates
# is charged to the memory cgroup it makes active (5.12); before, to the
# root group, and a group's limit holds only what its writer's own context
# is served (README: Linux 5.10)
kernel_charges_worker_memcg() { kernel_at_least 5.12; }
no_worker_memcg="the worker's page cache is charged to the root group before 5.12"

# Sysfs disk name of a block device node (loopfs3-0).
disk_name() {
	basename "$(readlink -f "/sys/dev/block/$(devnum -L "$1")")"
}

# backing_file NODE: the backing file of the device NODE is, as its sysfs
# directory says it; empty when it is not bound.
backing_file() {
	cat "/sys/block/$(disk_name "$1")/loop/backing_file" 2>/dev/null || true
}

# Seconds since boot, with hundredths.
uptime_s() { cut -d' ' -f1 /proc/uptime; }

# alive PID: the process exists and is not a zombie
alive() {
	[ -e "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null
}

# How many loopfs disks the host has, of every instance.
count_disks() {
	local d n=0
	for d in /sys/block/loopfs*; do
		[ -e "$d" ] && n=$((n + 1))
	done
	echo "$n"
}

# record_step NAME: in a script run in another namespace, runs the function
# NAME in a bash -e of its own (errexit is ignored inside an `if`, so the
# first failing command fails the step there) and appends "NAME ok" or
# "NAME FAIL <why>" to $res, for step_ok.
record_step() {
	local out
	export -f "$1"
	if out=$(bash -euo pipefail -c "$1" 2>&1); then
		echo "$1 ok" >>"$res"
	else
		echo "$1 FAIL $(echo "$out" | tail -n 3 | tr '\n' ' ')" >>"$res"
	fi
}

# step_ok STEP: the line "STEP ok" is in $STEP_RESULTS, where a script run
# in another namespace wrote one line per step.
step_ok() {
	local line
	line=$(grep "^$1 " "$STEP_RESULTS" || true)
	[ -n "$line" ] || fail "step $1 did not run"
	[ "$line" = "$1 ok" ] || fail "$line"
}

# Wait up to $2 seconds (default 3) for path $1 to disappear.
wait_gone() {
	local i
	for ((i = 0; i < ${2:-3} * 10; i++)); do
		[ -e "$1" ] || return 0
		sleep 0.1
	done
	return 1
}

# Replace /dev (in this private mount namespace) by a tmpfs holding null,
# zero, urandom, a loopfs instance on /dev/loopfs and a container's symlinks:
# /dev/loop-control and /dev/loop0..N-1 (N: $1, default 16) point into the
# instance. The host devtmpfs stays reachable at /run/realdev.
setup_private_dev_with_instance() {
	local i links=${1:-16}
	mkdir -p /run/realdev
	mount -t devtmpfs devtmpfs /run/realdev
	mount -t tmpfs -o mode=0755 tmpfs /dev
	mknod -m 666 /dev/null c 1 3
	mknod -m 666 /dev/zero c 1 5
	mknod -m 666 /dev/urandom c 1 9
	mkdir /dev/loopfs
	mount -t loop loop /dev/loopfs
	ln -s /dev/loopfs/loop-control /dev/loop-control
	for ((i = 0; i < links; i++)); do
		ln -s "/dev/loopfs/loop$i" "/dev/loop$i"
	done
}

# The same as root of an unprivileged user namespace, which can neither
# mount devtmpfs nor mknod: the host's /dev, kept at $u/realdev (/dev has
# locked submounts there, so recursively), lends null, zero and urandom;
# /dev/loop0..3 point into the instance. Suites copy it into the script
# they run in the namespace with `declare -f`.
userns_private_dev() {
	local n i
	mkdir -p "$u/realdev"
	mount --rbind /dev "$u/realdev"
	mount -t tmpfs tmpfs /dev
	for n in null zero urandom; do
		touch "/dev/$n"
		mount --bind "$u/realdev/$n" "/dev/$n"
	done
	mkdir /dev/loopfs
	mount -t loop loop /dev/loopfs
	ln -s /dev/loopfs/loop-control /dev/loop-control
	for i in 0 1 2 3; do ln -s "/dev/loopfs/loop$i" "/dev/loop$i"; done
}

# No loop I/O errors or "operation not supported" since kernel log line $1.
klog_clean_since() {
	local bad
	bad=$(dmesg_since "$1" | grep -iE "I/O error|operation not supported|blk_update_request|critical (medium|target)" || true)
	[ -z "$bad" ] || fail "kernel log: $bad"
}

# Host names of all loopfs block devices right now, one per line.
loopfs_disks() {
	local d
	for d in /sys/block/loopfs*; do
		[ -e "$d" ] && echo "${d##*/}"
	done
	true
}
