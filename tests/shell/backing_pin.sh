#!/bin/bash
# Regression for the fuzzer's "instance pinned by its own device": a device
# backed by a node opened through an instance's mount kept that mount, and so
# the instance and itself, alive for ever. Such backing files are refused
# (EINVAL); the host's /dev/loopfs<ID>-<N> node still stacks loop on loop
# without pinning anything, and teardown then removes every device.
. "$(dirname "$0")/../lib/suite.sh"
in_private_mount_ns "$@"

work=$PWD
lf=$work/lf

# ioctl.py DEV REQ ARG-FILE: LOOP_SET_FD-style call, prints 0 or the errno name.
setfd() {
	python3 - "$@" <<'PY'
import errno, fcntl, os, sys
dev = os.open(sys.argv[1], os.O_RDWR)
back = os.open(sys.argv[2], os.O_RDWR)
try:
    fcntl.ioctl(dev, 0x4C00, back)
    print(0)
except OSError as e:
    print(errno.errorcode[e.errno])
PY
}

ctl_add() {
	python3 -c 'import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
for n in sys.argv[2:]:
    fcntl.ioctl(fd, 0x4C80, int(n))' "$lf/loop-control" "$@"
}

setup() {
	truncate -s 4M "$work/file"
	mkdir -p "$lf"
	mount -t loop loop "$lf"
	ctl_add 0 1 2
	expect_eq 0 "$(setfd "$lf/loop1" "$work/file")" "loop1 -> file"
}

instance_node_as_backing_file_is_einval() {
	expect_eq EINVAL "$(setfd "$lf/loop0" "$lf/loop1")" "loop0 -> instance node loop1"
	expect_eq EBADF "$(setfd "$lf/loop0" "$lf/loop0")" "loop0 -> itself"
	[ ! -e "/sys/block/$(disk_name "$lf/loop0")/loop" ] || fail "loop0 got bound"
}

host_node_still_stacks_loop_on_loop() {
	local host=/dev/$(disk_name "$lf/loop1")
	[ -b "$host" ] || fail "no host node $host"
	expect_eq 0 "$(setfd "$lf/loop2" "$host")" "loop2 -> $host"
	dd if="$lf/loop2" of=/dev/null bs=4k count=1 status=none
}

# Regression (check-debug, lockdep "possible recursive locking"): a block
# device node on tmpfs was taken for a tmpfs file and served inline, so the
# lower device's inode lock nested inside the upper one's read.
loop_on_a_node_in_tmpfs_reads_in_the_worker() {
	local node=$work/nodes/lower
	mkdir -p "$work/nodes"
	mount -t tmpfs tmpfs "$work/nodes"
	mknod "$node" b $(stat -L -c '0x%t 0x%T' "$lf/loop1")
	printf 'stacked' | dd of="$lf/loop1" bs=512 seek=100 conv=notrunc status=none
	expect_eq 0 "$(setfd "$lf/loop0" "$node")" "loop0 -> $node"
	# buffered, with readahead: the path that nested the locks
	[ "$(dd if="$lf/loop0" bs=512 skip=100 count=1 status=none | head -c 7)" = stacked ] ||
		fail "loop0 does not read loop1's data"
	dd if="$lf/loop0" of=/dev/null bs=64k status=none
}

lazy_umount_tears_the_instance_down() {
	local disks
	umount -l "$lf"
	for _ in $(seq 50); do
		disks=$(ls /sys/block | grep -c '^loopfs' || true)
		[ "$disks" -eq 0 ] && return 0
		sleep 0.1
	done
	fail "loopfs disks left after umount -l: $(ls /sys/block | grep '^loopfs' | tr '\n' ' ')"
}

tap_plan 4
setup
run_test "a node opened through an instance cannot back a device (EINVAL; itself: EBADF)" instance_node_as_backing_file_is_einval
run_test "the host node /dev/loopfs<ID>-<N> still backs a device (loop on loop)" host_node_still_stacks_loop_on_loop
run_test "a node of a device on tmpfs backs a device through the worker (loop on loop)" loop_on_a_node_in_tmpfs_reads_in_the_worker
run_test "after umount -l every device of the instance is gone" lazy_umount_tears_the_instance_down
tap_done
