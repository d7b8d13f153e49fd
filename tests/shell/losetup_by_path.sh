#!/bin/bash
# What the release's losetup does with a loopfs device it is given by path.
# util-linux takes a block device of another major than 7 for a loop device
# when sysfs says so (/sys/dev/block/MAJ:MIN is a disk named loop*) from
# 2.37 on: there detach (-d), the one-device listing (-l DEV) and capacity
# (-c) act on the instance's devices as on the stock driver's. Before it
# (Debian 11's 2.36) those refuse every loopfs device, "failed to use
# device: No such device", and must leave it as it was; what names no
# device by path still works there (losetup -f --show, losetup DEV FILE,
# mount -o loop with its autoclear), and LOOP_CLR_FD itself (busybox
# losetup -d) detaches.
. "$(dirname "$0")/../lib/suite.sh"
in_private_mount_ns "$@"

work=$PWD
lf=$work/lf
ul=$(losetup --version | awk '{ print $NF }')

# The container's layout: /dev/loop-control and /dev/loop0 are the
# instance's (a private /dev), its views are bound over /sys/block and
# /sys/dev/block.
setup() {
	truncate -s 32M "$work/a.img"
	mkfs.ext4 -q -F "$work/a.img"
	mkdir -p "$lf" "$work/m"
	mount -t loop loop "$lf"
	python3 -c 'import fcntl, os, sys
fcntl.ioctl(os.open(sys.argv[1], os.O_RDWR), 0x4C80, 0)' "$lf/loop-control"
	mount -t tmpfs -o mode=0755 tmpfs /dev
	mknod -m 666 /dev/null c 1 3
	ln -s "$lf/loop-control" /dev/loop-control
	ln -s "$lf/loop0" /dev/loop0
	mount --bind "$lf/block" /sys/block
	mount --bind "$lf/dev-block" /sys/dev/block
	echo "DIAG: util-linux $ul"
}

setup_by_path_binds() {
	losetup /dev/loop0 "$work/a.img"
	expect_eq "$work/a.img" "$(backing_file /dev/loop0)" "backing file of loop0"
}

listing_by_path() {
	local out rc=0
	out=$(losetup -n -l -O BACK-FILE /dev/loop0 2>&1) || rc=$?
	if ul_takes_loopfs_paths; then
		expect_eq "0 $work/a.img" "$rc $(echo "$out" | xargs)" "losetup -l loop0"
	else
		[ "$rc" -ne 0 ] || fail "util-linux $ul listed a loopfs device by path"
		case $out in
		*"No such device"*) ;;
		*) fail "refusal: $out" ;;
		esac
	fi
}

detach_by_path() {
	local out rc=0
	out=$(losetup -d /dev/loop0 2>&1) || rc=$?
	if ul_takes_loopfs_paths; then
		expect_eq 0 "$rc" "losetup -d status ($out)"
		expect_eq "" "$(backing_file /dev/loop0)" "backing file after losetup -d"
		return
	fi
	[ "$rc" -ne 0 ] || fail "util-linux $ul detached a loopfs device by path"
	case $out in
	*"failed to use device: No such device"*) ;;
	*) fail "refusal: $out" ;;
	esac
	# Refused: the device is as it was, and LOOP_CLR_FD detaches it.
	expect_eq "$work/a.img" "$(backing_file /dev/loop0)" "backing file after the refusal"
	busybox losetup -d /dev/loop0
	expect_eq "" "$(backing_file /dev/loop0)" "backing file after busybox losetup -d"
}

find_show_and_mount_o_loop() {
	local dev
	dev=$(losetup --show -f "$work/a.img")
	expect_eq /dev/loop0 "$dev" "losetup --show -f"
	expect_eq "$work/a.img" "$(backing_file /dev/loop0)" "backing file of the device -f found"
	busybox losetup -d /dev/loop0
	mount -o loop "$work/a.img" "$work/m"
	echo hello >"$work/m/hello"
	expect_eq "$work/a.img" "$(backing_file /dev/loop0)" "the device mount -o loop bound"
	umount "$work/m"
	# autoclear: the last close after umount detached it
	for _ in $(seq 50); do
		[ -n "$(backing_file /dev/loop0)" ] || break
		sleep 0.1
	done
	expect_eq "" "$(backing_file /dev/loop0)" "backing file after umount (autoclear)"
}

tap_plan 5
run_test "an instance and an ext4 image" setup
run_test "losetup DEV FILE binds the instance's device by path" setup_by_path_binds
run_test "losetup -l DEV: listed from util-linux 2.37, refused (No such device) before" listing_by_path
run_test "losetup -d DEV: detaches from util-linux 2.37; before, refused with the device left bound, and LOOP_CLR_FD (busybox) detaches" detach_by_path
run_test "losetup --show -f and mount -o loop (autoclear at umount) through /dev/loop-control and /dev/loop0 of the instance" find_show_and_mount_o_loop
tap_done
