#!/bin/bash
# loopfs-timeout: 300
# tools/detached-example: a detached loopfs instance (fsopen/
# fsconfig/fsmount, never attached), a device bound to an ext4 image and
# mounted detached through /proc/self/fd/N; whether the program exits,
# crashes or is killed, nothing is left behind.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/suite.sh"

EX=${LOOPFS_BUILD:-$here/../../.build}/tools/detached-example

mkdir content
echo "hello from a detached instance" >content/hello
mkfs.ext4 -q -F -d content img 16M

disks_before=$(loopfs_disks)
loop_mounts() { grep -c ' - loop ' /proc/self/mountinfo || true; }
mounts_before=$(loop_mounts)

# check_gone ERRFILE: the device named in ERRFILE and every trace of it went away
check_gone() {
	local dev
	dev=$(sed -n 's/^device: \(loopfs[0-9]*-[0-9]*\) .*/\1/p' "$1")
	[ -n "$dev" ] || fail "no device line in: $(cat "$1")"
	wait_gone "/sys/block/$dev" 10 || fail "/sys/block/$dev still there"
	expect_eq "$disks_before" "$(loopfs_disks)" "loopfs disks"
	expect_eq "$mounts_before" "$(loop_mounts)" "loop instances mounted"
	! grep -q "$PWD/img" /proc/self/mountinfo || fail "image still mounted"
}

test_exit() {
	local out
	out=$("$EX" img hello 2>err)
	cat err
	expect_eq "hello from a detached instance" "$out" "file content"
	check_gone err
}

test_crash() {
	local out rc=0
	out=$("$EX" --crash img hello 2>err) || rc=$?
	cat err
	expect_eq 137 "$rc" "exit status (SIGKILL)"
	expect_eq "hello from a detached instance" "$out" "file content"
	check_gone err
}

test_killed() {
	local pid dev i
	# in its own mount namespace, killed from outside while holding everything
	unshare -m --propagation private "$EX" --hold img hello >out 2>err &
	pid=$!
	for ((i = 0; i < 100; i++)); do grep -q holding err && break; sleep 0.1; done
	cat err
	dev=$(sed -n 's/^device: \(loopfs[0-9]*-[0-9]*\) .*/\1/p' err)
	[ -e "/sys/block/$dev" ] || fail "device $dev not there while held"
	grep -q . "/sys/block/$dev/loop/backing_file" || fail "device not bound while held"
	kill -9 "$pid"
	wait "$pid" || true
	expect_eq "hello from a detached instance" "$(cat out)" "file content"
	check_gone err
}

tap_plan 3
run_test "detached instance: bind, mount via /proc/self/fd/N, print a file; nothing left after exit" test_exit
run_test "the same program crashing (SIGKILL itself) leaves no device, mount or instance behind" test_crash
run_test "killed by SIGKILL from outside (own mount namespace) while holding: nothing left" test_killed
tap_done
