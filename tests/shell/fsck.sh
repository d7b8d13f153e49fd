#!/bin/bash
# ext4 on a loopfs device with the real e2fsprogs: mkfs over a tmpfs file
# without "operation not supported" errors, files written, fsck clean,
# checksums identical after a remount and straight from the backing file;
# fio-verified writes at depth.
set -uo pipefail
. "$(dirname "$0")/../lib/suite.sh"
in_private_mount_ns "$@"

work=$PWD
img=$work/fs.img
klog0=$(dmesg_lines)

mkfs_on_loopfs_device() {
	setup_private_dev_with_instance
	truncate -s 128M "$img"
	dev=$(losetup --show -f "$img")
	expect_eq /dev/loop0 "$dev" "device"
	mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 /dev/loop0
	klog_clean_since "$klog0"
}

fill_with_files() {
	mkdir -p /mnt/fs
	mount /dev/loop0 /mnt/fs
	mkdir -p /mnt/fs/a/b/c /mnt/fs/d
	for i in $(seq 1 60); do
		head -c $((i * 7919 % 300000 + 1)) /dev/urandom >"/mnt/fs/a/f$i"
		head -c $((i * 104729 % 1000000 + 4096)) /dev/urandom >"/mnt/fs/d/g$i"
	done
	head -c 20M /dev/urandom >/mnt/fs/a/b/c/big
	ln -s ../d/g1 /mnt/fs/a/link
	(cd /mnt/fs && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$work/manifest"
	expect_eq 121 "$(wc -l <"$work/manifest")" "files in manifest"
	umount /mnt/fs
}

fsck_is_clean() {
	fsck.ext4 -fn /dev/loop0
}

remount_checksums_identical() {
	mount -o ro /dev/loop0 /mnt/fs
	(cd /mnt/fs && sha256sum --quiet -c "$work/manifest")
	umount /mnt/fs
}

backing_file_is_clean_and_identical() {
	loop_detach /dev/loop0
	e2fsck -fn "$img"
	# and once more through a fresh device, read-only
	dev=$(losetup --show -f -r "$img")
	mount -o ro "$dev" /mnt/fs
	(cd /mnt/fs && sha256sum --quiet -c "$work/manifest")
	umount /mnt/fs
	loop_detach "$dev"
}

ext4_on_4k_sector_device() {
	truncate -s 64M "$work/fs4k.img"
	dev=$(losetup --show -f -b 4096 "$work/fs4k.img")
	mkfs.ext4 -q "$dev"
	mount "$dev" /mnt/fs
	head -c 5M /dev/urandom >"$work/x"
	cp "$work/x" /mnt/fs/x
	umount /mnt/fs
	fsck.ext4 -fn "$dev"
	mount -o ro "$dev" /mnt/fs
	cmp "$work/x" /mnt/fs/x
	umount /mnt/fs
	loop_detach "$dev"
}

# A tmpfs-backed device copies inline in the submitter or, for large
# requests of a submitter with several in flight, in its worker: both
# interleave here, and every block must read back as written.
depth_writes_verify() {
	local dev
	truncate -s 96M "$work/depth.img"
	dev=$(losetup --show -f "$work/depth.img")
	fio --name=seq1m --filename="$dev" --ioengine=libaio --direct=1 \
		--rw=write --bs=1M --iodepth=4 --size=64M --verify=crc32c \
		--verify_fatal=1 --output="$work/fio.out" ||
		{ cat "$work/fio.out"; fail "1 MiB writes at depth 4"; }
	fio --name=mixed --filename="$dev" --ioengine=libaio --direct=1 \
		--rw=randwrite --bsrange=4k-512k --iodepth=16 --size=96M \
		--verify=crc32c --verify_fatal=1 --output="$work/fio.out" ||
		{ cat "$work/fio.out"; fail "4 KiB-512 KiB random writes at depth 16"; }
	expect_eq "$(sha256sum <"$work/depth.img")" "$(sha256sum <"$dev")" \
		"device and backing file"
	loop_detach "$dev"
}

tap_plan 8
run_test "mkfs.ext4 on a loopfs device over a tmpfs file logs no errors" mkfs_on_loopfs_device
run_test "files written to the mounted filesystem" fill_with_files
run_test "fsck -fn finds the filesystem clean" fsck_is_clean
run_test "remount: every file's checksum is identical" remount_checksums_identical
run_test "the backing file itself checks clean and holds the same files" backing_file_is_clean_and_identical
run_test "ext4 on a 4096-byte-sector loopfs device round-trips and checks clean" ext4_on_4k_sector_device
run_test "1 MiB writes at depth 4 and 4 KiB-512 KiB random writes at depth 16 verify" depth_writes_verify
run_test "no I/O error or unsupported-operation message in the kernel log" \
	klog_clean_since "$klog0"
tap_done
