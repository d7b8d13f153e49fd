#!/bin/bash
# The instance's views of /sys/block and /sys/dev/block, bound over them in
# a container-like mount namespace (tmpfs /dev, loop-control and loop<N>
# symlinked into the instance): util-linux's sysfs-driven commands
# (losetup -a/-l/-j/-D, lsblk, mount's reuse of a device already mapping
# the image) see the instance's devices, and their partitions, under the
# instance's names and nothing of the host's; the views follow the devices
# and partitions, cannot be written, and work the same for the root of an
# unprivileged user namespace.
set -uo pipefail
. "$(dirname "$0")/../lib/suite.sh"
in_private_mount_ns "$@"

uid=${LOOPFS_UNPRIV_UID:-1000}
w=$(mktemp -d /tmp/loopfs-sysblock.XXXXXX)
chmod 0755 "$w"
V=/dev/loopfs/block

DV=/dev/loopfs/dev-block

# MAJ:MIN of block node $1.

# Names in /sys/block, on one line.
sysblock() { ls -1 /sys/block | paste -sd ' '; }

# lsblk's device names (all devices, flat list), on one line.
lsblk_names() { lsblk -a -l -n -o NAME | xargs; }

# How mount -o loop treats an image already bound to device $1 at mount
# point $3: "reuse" (mounts from $1), "refuse" (mount fails) or the other
# device it set up.
mount_reuse_mode() {
	local dev=$1 img=$2 mnt=$3 src
	mkdir -p "$mnt"
	if ! mount -o loop "$img" "$mnt" 2>"$w/mount.err"; then
		echo refuse
		return
	fi
	src=$(findmnt -n -o SOURCE "$mnt")
	umount "$mnt"
	if [ "$src" = "$dev" ]; then echo reuse; else echo "$src"; fi
}

# On the host side, before any container: a stock device bound (so that a
# listing leaking host devices would show it), another loopfs instance with
# a bound device, and what util-linux's mount does on the stock driver when
# the image is already bound.
host_side() {
	local sdev mode
	# Only sizes matter, except for the image mount -o loop mounts.
	truncate -s 1M "$w/stock.img" "$w/other.img"
	truncate -s 4M "$w/a.img"
	truncate -s 2M "$w/b.img"
	mkfs.ext4 -q -F "$w/fs.img" 8M
	truncate -s 16M "$w/parts.img"
	printf 'label: dos\nstart=2048, size=8192, type=83\n' | sfdisk -q "$w/parts.img"
	sdev=$(losetup --show -f "$w/stock.img")
	[ "$(stat -c %t "$sdev")" = 7 ] || fail "$sdev is not a stock loop device"
	echo "$sdev" >"$w/stockdev"
	mkdir "$w/other"
	mount -t loop loop "$w/other"
	# losetup -f's GET_FREE through the other instance's loop-control
	# creates its loop0.
	mount --bind "$w/other/loop-control" /dev/loop-control
	losetup -f >/dev/null
	umount /dev/loop-control
	losetup "$w/other/loop0" "$w/other.img"
	disk_name "$w/other/loop0" >"$w/otherdisk"

	sdev=$(losetup --show -f "$w/fs.img")
	mode=$(mount_reuse_mode "$sdev" "$w/fs.img" "$w/smnt")
	losetup -d "$sdev"
	echo "DIAG: stock driver, mount -o loop of a bound image: $mode"
	case $mode in
	reuse | refuse) echo "$mode" >"$w/stockmode" ;;
	*) fail "stock mount -o loop set up $mode" ;;
	esac
}

# The container: private /dev with the instance, no view yet. Without it
# lsblk in the container lists the host's disks, another instance's among
# them, which is what the tests below would catch if the view did not do
# its job.
container_without_view_leaks() {
	local names
	# Only the links the suite uses: every command costs in the guest.
	setup_private_dev_with_instance 4
	expect_eq /dev/loop0 "$(losetup --show -f "$w/a.img")" "losetup --show -f"
	echo "DIAG: losetup -a without the view: $(losetup -a | xargs)"
	names=$(lsblk_names)
	echo "DIAG: lsblk without the view: $names"
	grep -qw "$(cat "$w/otherdisk")" <<<"$names" || fail "lsblk lacks another instance's disk"
	grep -qw "$(basename "$(cat "$w/stockdev")")" <<<"$names" || fail "lsblk lacks the stock device"
}

bind_view() {
	expect_eq "0 0 555 directory" "$(stat -c '%u %g %a %F' $V)" "the view"
	expect_eq "0 0 555 directory" "$(stat -c '%u %g %a %F' $DV)" "the view of /sys/dev/block"
	mount --bind $V /sys/block
	mount --bind $DV /sys/dev/block
	expect_eq /dev/loop1 "$(losetup --show -f "$w/b.img")" "losetup --show -f"
	expect_eq "loop0 loop1" "$(sysblock)" "/sys/block"
	expect_eq "0 0 555 directory" "$(stat -c '%u %g %a %F' /sys/block/loop0)" "/sys/block/loop0"
	expect_eq "$(devnum -L /dev/loop0) $(devnum -L /dev/loop1)" \
		"$(ls /sys/dev/block | sort -t: -k1,1n -k2,2n | xargs)" "/sys/dev/block"
	expect_eq ../../block/loop1 "$(readlink "/sys/dev/block/$(devnum -L /dev/loop1)")" \
		"/sys/dev/block/MAJ:MIN of loop1"
}

listing_names_only_ours() {
	local out
	out=$(losetup -a)
	echo "DIAG: \$ losetup -a"
	sed 's/^/DIAG: /' <<<"$out"
	expect_eq 2 "$(grep -c . <<<"$out")" "lines of losetup -a"
	grep -q "^/dev/loop0: .*($w/a.img)$" <<<"$out" || fail "-a lacks loop0"
	grep -q "^/dev/loop1: .*($w/b.img)$" <<<"$out" || fail "-a lacks loop1"
	# In directory order, which sysfs does not promise either.
	out=$(losetup -l -n -O NAME,BACK-FILE | sort)
	echo "$out"
	expect_eq "/dev/loop0 $w/a.img /dev/loop1 $w/b.img" "$(xargs <<<"$out")" "losetup -l"
	expect_eq "/dev/loop1: []: ($w/b.img)" \
		"$(losetup -j "$w/b.img" | sed 's/\[[0-9a-f]*\]:[0-9]*/[]:/')" "losetup -j"
	[ -z "$(losetup -j "$w/stock.img")" ] || fail "-j finds the host's device"
	[ -z "$(losetup -j "$w/other.img")" ] || fail "-j finds another instance's device"
}

lsblk_names_only_ours() {
	local out
	out=$(lsblk -o NAME,MAJ:MIN,SIZE,TYPE)
	echo "DIAG: \$ lsblk -o NAME,MAJ:MIN,SIZE,TYPE"
	sed 's/^/DIAG: /' <<<"$out"
	expect_eq "loop0 loop1" "$(lsblk_names)" "lsblk names"
	expect_eq "loop0 4M loop1 2M" "$(lsblk -d -n -o NAME,SIZE | xargs)" "lsblk sizes"
	# Named by device number, a disk is found by its host name.
	echo "DIAG: \$ lsblk -n -o NAME /dev/loop0: $(lsblk -n -o NAME /dev/loop0 2>&1 | xargs)"
}

sysfs_by_container_index() {
	expect_eq "$w/b.img" "$(cat /sys/block/loop1/loop/backing_file)" "loop/backing_file"
	expect_eq 4096 "$(cat /sys/block/loop1/size)" "size (sectors)"
	expect_eq 512 "$(cat /sys/block/loop1/queue/logical_block_size)" "queue/logical_block_size"
	expect_eq "$(devnum -L /dev/loop1)" "$(cat /sys/block/loop1/dev)" "dev"
}

mount_reuse_like_stock() {
	local dev mode
	dev=$(losetup --show -f "$w/fs.img")
	expect_eq /dev/loop2 "$dev" "losetup --show -f"
	mode=$(mount_reuse_mode "$dev" "$w/fs.img" "$w/cmnt")
	echo "DIAG: loopfs in the container, mount -o loop of a bound image: $mode"
	expect_eq "$(cat "$w/stockmode")" "$mode" "mount -o loop as on the stock driver"
	expect_eq "loop0 loop1 loop2" "$(sysblock)" "/sys/block after the mount"
	expect_eq ext4 "$(blkid -o value -s TYPE "$dev")" "blkid"
}

detach_all_leaves_nothing() {
	local d
	losetup -D
	[ -z "$(losetup -a)" ] || fail "still listed: $(losetup -a)"
	for d in /dev/loopfs/loop[0-9]*; do
		if losetup "$d" >/dev/null 2>&1; then
			fail "$d still bound after -D"
		fi
	done
	[ -e "/sys/devices/virtual/block/$(basename "$(cat "$w/stockdev")")/loop/backing_file" ] ||
		fail "losetup -D detached the host's stock device"
	[ -e "/sys/devices/virtual/block/$(cat "$w/otherdisk")/loop/backing_file" ] ||
		fail "losetup -D detached another instance's device"
}

view_follows_devices() {
	# One interpreter start (slow in the guest) for ADD, look, REMOVE, look.
	python3 -c 'import fcntl, os
fd = os.open("/dev/loop-control", os.O_RDWR)
assert fcntl.ioctl(fd, 0x4C80, 5) == 5
rdev = os.stat("/dev/loopfs/loop5").st_rdev
dev = open("/sys/block/loop5/dev").read().strip()
assert dev == "%d:%d" % (os.major(rdev), os.minor(rdev)), "loop5/dev says " + dev
fcntl.ioctl(fd, 0x4C81, 5)
assert not os.path.lexists("/sys/block/loop5"), "loop5 left after REMOVE"'
	rm /dev/loopfs/loop0 /dev/loopfs/loop1 /dev/loopfs/loop2
	expect_eq "" "$(sysblock)" "/sys/block after unlinking every node"
	expect_eq /dev/loop0 "$(losetup -f)" "losetup -f (GET_FREE creates loop0)"
	expect_eq "loop0" "$(sysblock)" "/sys/block after GET_FREE"
}

# The view's loop0 lists the disk's partitions under their nodes' names,
# never the host's, and /sys/dev/block leads to them: lsblk draws the tree
# with the container's names.
partitions_under_container_names() {
	local disk p1
	losetup -P /dev/loop0 "$w/parts.img"
	disk=$(basename "$(dirname "$(readlink /sys/block/loop0/dev)")")
	case $disk in
	loopfs*) ;;
	*) fail "/sys/block/loop0/dev leads to '$disk'" ;;
	esac
	p1=$(devnum -L /dev/loopfs/loop0p1)
	expect_eq "$p1" "$(cat /sys/block/loop0/loop0p1/dev)" "loop0p1/dev"
	expect_eq 1 "$(cat /sys/block/loop0/loop0p1/partition)" "loop0p1/partition"
	expect_eq loop0p1 "$(ls /sys/block/loop0 | grep -E '^loop.*p[0-9]+$' | xargs)" \
		"partitions listed under loop0"
	[ ! -e "/sys/block/loop0/${disk}p1" ] || fail "the host name ${disk}p1 resolves in the view"
	expect_eq ../../block/loop0/loop0p1 "$(readlink "/sys/dev/block/$p1")" \
		"/sys/dev/block/$p1"
	echo "DIAG: lsblk: $(lsblk -n -o NAME,MAJ:MIN,TYPE /dev/loop0 | xargs)"
	expect_eq "loop0 loop0p1" "$(lsblk -l -n -o NAME | xargs)" "lsblk"
	expect_eq "loop0p1 loop0" "$(lsblk -l -n -o NAME,PKNAME /dev/loop0 | awk '$2' | xargs)" \
		"lsblk's parent of loop0p1"
	partx -d --nr 1 /dev/loop0
	[ ! -e /sys/block/loop0/loop0p1 ] || fail "loop0p1 still under loop0 after partx -d"
	[ ! -e "/sys/dev/block/$p1" ] || fail "/sys/dev/block/$p1 still there after partx -d"
	losetup -d /dev/loop0
}

view_cannot_be_written() {
	local t
	for t in "touch /sys/block/new" "mkdir /sys/block/dir" "ln -s loop0 /sys/block/loop9" \
		"rm -rf /sys/block/loop0" "mv /sys/block/loop0 /sys/block/loop9" \
		"rmdir $V" "rm -rf $V" "mv $V /dev/loopfs/view" \
		"touch /sys/block/loop0/new" "rm -f /sys/block/loop0/size" \
		"ln -s size /sys/block/loop0/size2" "rmdir /sys/block/loop0" \
		"touch /sys/dev/block/1:1" "rm -f /sys/dev/block/$(devnum -L /dev/loop0)" \
		"rmdir $DV" "mv $DV /dev/loopfs/view"; do
		if $t 2>"$w/err"; then
			fail "$t succeeded"
		fi
		[[ $(<"$w/err") == *"Operation not permitted"* ]] || fail "$t: $(<"$w/err")"
	done
	expect_eq "loop0" "$(sysblock)" "/sys/block"
}

# An instance's whole life in a namespace of its own: its view goes with
# it, and so do its devices.
teardown_takes_everything() {
	local disk
	mkdir "$w/t"
	disk=$(unshare -m --propagation private bash -c '
		set -e
		mount -t loop loop "$1"
		mount --bind "$1/block" /sys/block
		python3 -c "import fcntl, os, sys; fcntl.ioctl(os.open(sys.argv[1], os.O_RDWR), 0x4C80, 3)" "$1/loop-control"
		basename "$(dirname "$(readlink /sys/block/loop3/dev)")"' sh "$w/t")
	case $disk in
	loopfs*) ;;
	*) fail "no loop3 in the view: '$disk'" ;;
	esac
	wait_gone "/sys/devices/virtual/block/$disk" || fail "$disk outlived its instance"
}

# Runs as root of an unprivileged user namespace; prints "ok" last.
{
declare -f userns_private_dev
cat <<'INNER'
set -euo pipefail
w=$1 u=$1/u
userns_private_dev
echo "view $(stat -c '%u %g %a' /dev/loopfs/block)"
mount --bind /dev/loopfs/block /sys/block
mount --bind /dev/loopfs/dev-block /sys/dev/block
echo "dev $(losetup --show -f "$u/img")"
echo "list $(losetup -l -n -O NAME,BACK-FILE | xargs)"
echo "lsblk $(lsblk -a -l -n -o NAME | xargs)"
losetup -D
echo "after-D $(losetup -a | wc -l)"
echo ok
INNER
} >"$w/inner.sh"

unprivileged_view() {
	local out
	mkdir "$w/u" && chown "$uid:$uid" "$w/u"
	truncate -s 1M "$w/u/img"
	chown "$uid:$uid" "$w/u/img"
	out=$(setpriv --reuid="$uid" --regid="$uid" --clear-groups \
		unshare -Urm bash "$w/inner.sh" "$w" 2>&1)
	echo "$out"
	expect_eq ok "$(tail -n 1 <<<"$out")" "the namespace's script"
	grep -qx "view 0 0 555" <<<"$out" || fail "view not owned by the namespace root"
	grep -qx "dev /dev/loop0" <<<"$out" || fail "losetup --show -f"
	grep -qx "list /dev/loop0 $w/u/img" <<<"$out" || fail "losetup -l"
	grep -qx "lsblk loop0" <<<"$out" || fail "lsblk"
	grep -qx "after-D 0" <<<"$out" || fail "losetup -D"
}

tap_plan 13
run_test "host side: a stock device and another instance's device bound; stock mount -o loop of a bound image" host_side
run_test "without the view lsblk in the container lists the host's and other instances' disks (control)" container_without_view_leaks
run_test "the views are 0555 directories of the instance root; bound over /sys/block and /sys/dev/block they list loop0 loop1" bind_view
run_test "losetup -a/-l/-j name only the instance's devices, by container names" listing_names_only_ours
run_test "lsblk names only the instance's devices" lsblk_names_only_ours
run_test "/sys/block/loop<N>/loop, size, queue, dev are the device's by container index" sysfs_by_container_index
run_test "mount -o loop of a bound image does what it does on the stock driver; blkid" mount_reuse_like_stock
run_test "losetup -D leaves nothing of the instance bound and nothing else touched" detach_all_leaves_nothing
run_test "the view follows LOOP_CTL_ADD/REMOVE, unlink of nodes and GET_FREE creation" view_follows_devices
run_test "partitions appear under loop0 as loop0p<M>, in /sys/dev/block and in lsblk's tree, and go" partitions_under_container_names
run_test "nothing can be created, removed or renamed in the view, nor the view itself (EPERM)" view_cannot_be_written
run_test "an instance's teardown removes its view and its devices" teardown_takes_everything
run_test "root of an unprivileged user namespace: the view is its own, losetup/lsblk see only its device" unprivileged_view
umount /sys/block 2>/dev/null
losetup -d "/run/realdev/$(basename "$(cat "$w/stockdev" 2>/dev/null)")" 2>/dev/null
umount -l "$w/other" 2>/dev/null
rm -rf "$w"
tap_done
