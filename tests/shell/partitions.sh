#!/bin/bash
# Partition nodes of an instance follow the device's partition table:
# created by a scan (losetup -P), kept in step with BLKPG changes made
# behind the driver's back (partx), and gone when the device is cleared.
. "$(dirname "$0")/lib.sh"
in_private_mount_ns "$@"

work=$PWD
lf=$work/lf
img=$work/parts.img

nodes() { (cd "$lf" && ls -1 | tr '\n' ' '); }

setup() {
	truncate -s 64M "$img"
	printf 'label: gpt\n,16M\n,16M\n,16M\n' | sfdisk -q "$img"
	mkdir -p "$lf"
	mount -t loop loop "$lf"
	# LOOP_CTL_ADD(0): create loop0 in the instance.
	python3 -c 'import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.ioctl(fd, 0x4C80, 0)' "$lf/loop-control"
	losetup -P "$lf/loop0" "$img"
}

scan_makes_partition_nodes() {
	expect_eq "block loop-control loop0 loop0p1 loop0p2 loop0p3 " "$(nodes)" "nodes after losetup -P"
	[ -b "$lf/loop0p2" ] || fail "loop0p2 is not a block node"
	expect_eq 600 "$(stat -c %a "$lf/loop0p2")" "partition node mode"
}

blkpg_delete_drops_the_node_on_listing() {
	partx -d --nr 2 "$lf/loop0"
	expect_eq "block loop-control loop0 loop0p1 loop0p3 " "$(nodes)" "nodes after partx -d 2"
}

blkpg_add_brings_the_node_back_on_listing() {
	partx -a --nr 2 "$lf/loop0"
	expect_eq "block loop-control loop0 loop0p1 loop0p2 loop0p3 " "$(nodes)" "nodes after partx -a 2"
	dd if="$lf/loop0p2" of=/dev/null bs=4k count=1 status=none
}

clearing_the_device_removes_partition_nodes() {
	losetup -d "$lf/loop0"
	expect_eq "block loop-control loop0 " "$(nodes)" "nodes after losetup -d"
	umount "$lf"
}

tap_plan 4
setup
run_test "a partition scan (losetup -P) creates loop0pN block nodes, 0600" scan_makes_partition_nodes
run_test "a partition deleted with BLKPG (partx -d) loses its node when the instance is listed" blkpg_delete_drops_the_node_on_listing
run_test "a partition added with BLKPG (partx -a) gets its node when the instance is listed" blkpg_add_brings_the_node_back_on_listing
run_test "clearing the device (losetup -d) removes its partition nodes" clearing_the_device_removes_partition_nodes
tap_done
