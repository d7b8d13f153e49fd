#!/bin/bash
# The LWN article's loopfs recipe, verbatim, with the real util-linux tools,
# in a private mount namespace whose /dev is a fresh tmpfs: a loopfs instance
# on /dev/loopfs takes the place of the global loop devices.
set -uo pipefail
. "$(dirname "$0")/../lib/suite.sh"
in_private_mount_ns "$@"

work=$PWD
img=$work/image.img

make_image() {
	mkdir -p "$work/src"
	head -c 3000000 /dev/urandom >"$work/src/written-before.bin"
	mkfs.ext4 -q -F -d "$work/src" "$img" 32M
}

setup_tmpfs_dev_with_instance() {
	mount -t tmpfs -o mode=0755 tmpfs /dev
	mknod -m 666 /dev/null c 1 3
	mknod -m 666 /dev/zero c 1 5
	mknod -m 666 /dev/urandom c 1 9
	mkdir /dev/loopfs
	# Mount a new loopfs instance in /dev/loopfs/
	mount -t loop loop /dev/loopfs/
	# Replace the standard loop control file with the ones from loopfs
	ln -sf /dev/loopfs/loop-control /dev/loop-control
	[ -c /dev/loopfs/loop-control ] || fail "no loop-control in the instance"
	[ "$(ls /dev/loopfs | paste -sd " ")" = "block dev-block loop-control" ] || fail "instance not just loop-control and the views: $(ls /dev/loopfs | paste -sd " ")"
}

losetup_f_prints_dev_loop0() {
	local out
	# Find the first available loop device
	out=$(losetup -f)              # will be something like /dev/loop0
	# util-linux 2.40 and later add " (lost)" to a name that sysfs knows
	# (here the host's stock loop0, or the instance's own once the view
	# is bound) and /dev does not have: the node the next step links.
	loopdev=${out% (lost)}
	expect_eq /dev/loop0 "$loopdev" "losetup -f"
	deventry=$(basename "$loopdev")  # now just "loop0"
	# Redirect that loop device to loopfs
	ln -sf "/dev/loopfs/$deventry" "/dev/$deventry"
	[ -b /dev/loop0 ] || fail "/dev/loop0 is not a block device"
	[ -b /dev/loopfs/loop0 ] || fail "GET_FREE did not create loop0 in the instance"
}

mount_o_loop_mounts_the_image_and_reads_back_identical() {
	mkdir -p /mnt/disk
	# mount an image
	mount -o loop "$img" /mnt/disk
	cmp "$work/src/written-before.bin" /mnt/disk/written-before.bin
	findmnt -n -o SOURCE /mnt/disk
	expect_eq /dev/loop0 "$(findmnt -n -o SOURCE /mnt/disk)" "mount source"
}

the_mounted_device_is_a_loopfs_device() {
	local maj name
	maj=$(devnum -L /dev/loop0 | cut -d: -f1)
	[ "$maj" != 7 ] || fail "/dev/loop0 is a stock loop device"
	name=$(disk_name /dev/loop0)
	case $name in
	loopfs*) ;;
	*) fail "disk name $name" ;;
	esac
	expect_eq "$img" "$(cat "/sys/block/$name/loop/backing_file")" "backing file"
	expect_eq 1 "$(cat "/sys/block/$name/loop/autoclear")" "autoclear"
}

writes_through_the_mount_reach_the_image() {
	head -c 500000 /dev/urandom >"$work/new.bin"
	cp "$work/new.bin" /mnt/disk/new.bin
	umount /mnt/disk
	# read it back through a second mount of the same image
	mount -o loop,ro "$img" /mnt/disk
	cmp "$work/new.bin" /mnt/disk/new.bin
	cmp "$work/src/written-before.bin" /mnt/disk/written-before.bin
	umount /mnt/disk
}

umount_releases_the_loop_device() {
	# autoclear: the device is unbound again, and reused by losetup -f
	if losetup /dev/loop0 >/dev/null 2>&1; then
		fail "/dev/loop0 still bound after umount: $(losetup /dev/loop0)"
	fi
	expect_eq /dev/loop0 "$(losetup -f)" "losetup -f after umount"
	e2fsck -fn "$img"
}

tap_plan 6
prepare() {
	make_image
	setup_tmpfs_dev_with_instance
}

run_test "ext4 image built and tmpfs /dev holds a fresh instance" prepare
run_test "losetup -f prints /dev/loop0 from the instance" losetup_f_prints_dev_loop0
run_test "mount -o loop image.img /mnt/disk reads back the file written before" \
	mount_o_loop_mounts_the_image_and_reads_back_identical
run_test "the device mount -o loop picked is a loopfs device with autoclear" \
	the_mounted_device_is_a_loopfs_device
run_test "writes through the mount reach the image" \
	writes_through_the_mount_reach_the_image
run_test "umount releases the device and the image checks clean" \
	umount_releases_the_loop_device
tap_done
