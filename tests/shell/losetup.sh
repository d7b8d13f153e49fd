#!/bin/bash
# util-linux losetup, unchanged, driving a loopfs instance: /dev is a private
# tmpfs whose loop-control and loop<N> are symlinks into the instance (as a
# container manager sets it up), and /dev/loopfs<ID>-<N> point at the host devtmpfs nodes that
# losetup's listing code derives from sysfs names.
set -uo pipefail
. "$(dirname "$0")/../lib/suite.sh"
in_private_mount_ns "$@"

work=$PWD
I=/dev/loopfs
klog0=$(dmesg_lines)

setup() {
	setup_private_dev_with_instance
	head -c 4M /dev/urandom >"$work/a.img"
	head -c 4M /dev/urandom >"$work/b.img"
	head -c 1M /dev/urandom >"$work/c.img"
}

# /dev/loopfs<ID>-<N> -> host devtmpfs node, for every loopfs disk in sysfs.
link_host_nodes() {
	local d n
	for d in /sys/block/loopfs*; do
		[ -e "$d" ] || continue
		n=$(basename "$d")
		ln -sfn "/run/realdev/$n" "/dev/$n"
	done
}

show_f_binds_loop0() {
	local dev
	dev=$(losetup --show -f "$work/a.img")
	expect_eq /dev/loop0 "$dev" "losetup --show -f"
	[ -b $I/loop0 ] || fail "no loop0 in the instance"
	expect_eq "$work/a.img" "$(backing_file "$dev")" "sysfs backing_file"
	expect_eq "$work/a.img" "$(losetup -n -O BACK-FILE -l "$dev" | tr -d ' ')" "losetup -O BACK-FILE"
	cmp "$work/a.img" "$dev"
}

show_f_again_gives_loop1() {
	local dev
	dev=$(losetup --show -f "$work/a.img")
	expect_eq /dev/loop1 "$dev" "second losetup --show -f"
	losetup -d "$dev"
}

offset_and_sizelimit_window() {
	local dev
	dev=$(losetup --show -f -o 4096 --sizelimit 1048576 "$work/b.img")
	expect_eq 1048576 "$(blockdev --getsize64 "$dev")" "size"
	cmp -n 1048576 -i 4096:0 "$work/b.img" "$dev"
	expect_eq "4096 1048576" "$(losetup -n -l -O OFFSET,SIZELIMIT "$dev" | xargs)" "offset/sizelimit"
	expect_eq 4096 "$(cat "/sys/block/$(disk_name "$dev")/loop/offset")" "sysfs offset"
	losetup -d "$dev"
}

read_only_flag() {
	local dev
	dev=$(losetup --show -f -r "$work/a.img")
	expect_eq 1 "$(blockdev --getro "$dev")" "getro"
	expect_eq 1 "$(losetup -n -l -O RO "$dev" | xargs)" "losetup RO column"
	if dd if=/dev/zero of="$dev" bs=4096 count=1 oflag=direct 2>/dev/null; then
		fail "write to a read-only device succeeded"
	fi
	cmp "$work/a.img" "$dev"
	losetup -d "$dev"
}

partscan_creates_partition_nodes() {
	local dev n
	truncate -s 16M "$work/p.img"
	printf 'label: dos\nstart=2048, size=8192, type=83\nstart=10240, size=8192, type=83\n' |
		sfdisk -q "$work/p.img"
	dev=$(losetup --show -f -P "$work/p.img")
	n=$(basename "$dev")
	for p in 1 2; do
		[ -b "$I/${n}p$p" ] || fail "no $I/${n}p$p (instance has: $(ls $I | xargs))"
		expect_eq $((8192 * 512)) "$(blockdev --getsize64 "$I/${n}p$p")" "size of p$p"
	done
	[ -e "/sys/block/$(disk_name "$dev")/$(disk_name "$dev")p1" ] || fail "no p1 in sysfs"
	# partitions 1..15 take the minors right after the disk's, on our major
	expect_eq "$(devnum -L "$dev" | cut -d: -f1)" "$(devnum "$I/${n}p1" | cut -d: -f1)" "major of p1"
	expect_eq $(($(devnum -L "$dev" | cut -d: -f2) + 2)) "$(devnum "$I/${n}p2" | cut -d: -f2)" "minor of p2"
	expect_eq 1 "$(losetup -n -l -O PARTSCAN "$dev" | xargs)" "PARTSCAN column"
	losetup -d "$dev"
	wait_gone "$I/${n}p1" || fail "$I/${n}p1 still there after -d"
	wait_gone "$I/${n}p2" || fail "$I/${n}p2 still there after -d"
}

sector_size_4096_via_configure() {
	local dev
	dev=$(losetup --show -f -b 4096 "$work/b.img")
	expect_eq 4096 "$(blockdev --getss "$dev")" "logical sector size"
	expect_eq 4096 "$(losetup -n -l -O LOG-SEC "$dev" | xargs)" "LOG-SEC column"
	cmp "$work/b.img" "$dev"
	echo "$dev" >"$work/bsdev"
}

sector_size_change_on_bound_device() {
	local dev
	dev=$(cat "$work/bsdev")
	losetup -b 1024 "$dev"
	expect_eq 1024 "$(blockdev --getss "$dev")" "logical sector size after -b 1024"
	cmp "$work/b.img" "$dev"
	losetup -d "$dev"
}

direct_io_on_ext4_backing() {
	local e dev
	truncate -s 64M "$work/ext.img"
	e=$(losetup --show -f "$work/ext.img")
	mkfs.ext4 -q "$e"
	mkdir -p /mnt/dio
	mount "$e" /mnt/dio
	head -c 8M /dev/urandom >/mnt/dio/f
	sync
	dev=$(losetup --show -f --direct-io=on /mnt/dio/f)
	expect_eq 1 "$(cat "/sys/block/$(disk_name "$dev")/loop/dio")" "sysfs dio"
	expect_eq 1 "$(losetup -n -l -O DIO "$dev" | xargs)" "DIO column"
	cmp /mnt/dio/f "$dev"
	losetup --direct-io=off "$dev"
	expect_eq 0 "$(cat "/sys/block/$(disk_name "$dev")/loop/dio")" "dio after off"
	losetup -d "$dev"
	umount /mnt/dio
	losetup -d "$e"
}

capacity_after_growing_file() {
	local dev
	dev=$(losetup --show -f "$work/c.img")
	expect_eq 1048576 "$(blockdev --getsize64 "$dev")" "size before"
	truncate -s 3M "$work/c.img"
	expect_eq 1048576 "$(blockdev --getsize64 "$dev")" "size before -c"
	losetup -c "$dev"
	expect_eq 3145728 "$(blockdev --getsize64 "$dev")" "size after -c"
	echo "$dev" >"$work/cdev"
}

listing_shows_our_devices() {
	local out adev cdev
	link_host_nodes
	adev=$(disk_name /dev/loop0)
	cdev=$(disk_name "$(cat "$work/cdev")")
	out=$(losetup -a)
	echo "$out"
	grep -q "^/dev/$adev: .*($work/a.img)" <<<"$out" || fail "-a lacks $adev / a.img"
	grep -q "^/dev/$cdev: .*($work/c.img)" <<<"$out" || fail "-a lacks $cdev / c.img"
	out=$(losetup -j "$work/c.img")
	echo "$out"
	expect_eq 1 "$(grep -c . <<<"$out")" "lines of -j c.img"
	grep -q "^/dev/$cdev: " <<<"$out" || fail "-j names the wrong device"
	out=$(losetup -l -n -O NAME,BACK-FILE)
	echo "$out"
	grep -qE "^/dev/$adev +$work/a.img$" <<<"$out" || fail "-l lacks a.img"
	grep -qE "^/dev/$cdev +$work/c.img$" <<<"$out" || fail "-l lacks c.img"
}

detach_one() {
	local dev
	dev=$(cat "$work/cdev")
	losetup -d "$dev"
	if losetup "$dev" >/dev/null 2>&1; then
		fail "$dev still bound after -d"
	fi
	[ -z "$(losetup -j "$work/c.img")" ] || fail "-j still finds c.img"
}

detach_all() {
	losetup -D
	[ -z "$(losetup -a | grep -F "$work" || true)" ] || fail "still bound: $(losetup -a)"
	for d in $I/loop[0-9]*; do
		if losetup "$d" >/dev/null 2>&1; then
			fail "$d still bound after -D"
		fi
	done
}

tap_plan 14
run_test "private /dev with loop-control of a loopfs instance" setup
run_test "losetup --show -f binds /dev/loop0 of the instance" show_f_binds_loop0
run_test "losetup --show -f gives /dev/loop1 while loop0 is bound" show_f_again_gives_loop1
run_test "losetup -o/--sizelimit exposes exactly that window" offset_and_sizelimit_window
run_test "losetup -r gives a read-only device" read_only_flag
run_test "losetup -P creates loopNp1/p2 in the instance, -d removes them" partscan_creates_partition_nodes
run_test "losetup -b 4096 sets a 4096-byte logical sector size" sector_size_4096_via_configure
run_test "losetup -b 1024 DEV changes the sector size of a bound device" sector_size_change_on_bound_device
run_test "losetup --direct-io=on uses direct I/O over a file on ext4" direct_io_on_ext4_backing
run_test "losetup -c picks up a grown backing file" capacity_after_growing_file
run_test "losetup -a/-j/-l list our devices with their backing files" listing_shows_our_devices
run_test "losetup -d detaches a device" detach_one
run_test "losetup -D detaches every device" detach_all
run_test "no I/O error or unsupported-operation message in the kernel log" \
	klog_clean_since "$klog0"
tap_done
