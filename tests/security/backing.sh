#!/bin/bash
# shellcheck disable=SC2016  # tenant scripts expand in the tenant
# loopfs-timeout: 900
# Writes through a device backed by an active swap file fail (the file is
# refused as the kernel refuses any write to a swap file):
# loopfs-expect-log: I/O error, dev loopfs[0-9]+-[0-9]+, sector [0-9]+ op 0x1:\(WRITE\)
# loopfs-expect-log: Buffer I/O error on dev loopfs[0-9]+-[0-9]+, logical block [0-9]+, lost async page write
# What a backing file may be and what I/O through it may do, attacked by a
# tenant: the unprivileged uid as root of its own user namespace
# (`unshare -Urm`), with its own instance. Each tenant run mounts a fresh
# instance, takes a device with LOOP_CTL_GET_FREE and prints what the
# loop(4) calls answered (tests/security/backing-bind.c); the host side
# then checks the files.
set -uo pipefail
. "${LOOPFS_SRC:-$(dirname "$0")/../..}/tests/lib/suite.sh"
in_private_mount_ns "$@"

uid=${LOOPFS_UNPRIV_UID:-1000}
B=${LOOPFS_BUILD:-$(dirname "$0")/../../.build}/tests/security/backing-bind
w=$(mktemp -d /tmp/loopfs-sec-backing.XXXXXX)
chmod 0755 "$w"
export B w

# The tenant's steps, run by one `unshare -Urm` as the unprivileged uid:
# `step NAME SCRIPT` runs SCRIPT with $D a free device of the tenant's own
# instance and records "NAME output" (lines joined by |) in $w/res.
cat >"$w/tenant.sh" <<'TENANT'
mount -t loop loop "$w/mnt" || exit 1
step() {
	local name=$1 out n
	n=$("$B" getfree "$w/mnt/loop-control")
	out=$(D=$w/mnt/loop$n bash -c "$2" 2>&1 | tr '\n' '|')
	echo "$name ${out%|}" >>"$w/t/res"
}
step wronly_setfd '"$B" setfd "$D" "$w/secret" w; head -c 6 "$D"'
step wronly_configure '"$B" configure "$D" "$w/secret" w; head -c 6 "$D"'
step wronly_append '"$B" configure "$D" "$w/secret" a; head -c 6 "$D"'
step wronly_change '"$B" setfd "$D" "$w/own" r; "$B" change "$D" "$w/secret" w
	head -c 6 "$D"'
step append_fd '"$B" configure "$D" "$w/app" ra; "$B" write "$D" 0 XXXX'
step append_only '"$B" configure "$D" "$w/ext4/log" ra; "$B" write "$D" 0 XXXX'
# The host makes this file immutable between open and LOOP_CONFIGURE.
step immutable 'BIND_WAIT=$w/t/imm "$B" configure "$D" "$w/ext4/imm" rw
	"$B" write "$D" 0 XXXX'
step rdonly '"$B" configure "$D" "$w/own" r; "$B" write "$D" 0 XXXX'
step setuid '"$B" configure "$D" "$w/ext4/suid" rw; "$B" write "$D" 0 XXXX'
step noexec '"$B" configure "$D" "$w/nx/f" rw; "$B" write "$D" 0 XXXX'
step swap '"$B" configure "$D" "$w/ext4/swap" rw
	head -c 4096 "$D" | tail -c 10; echo; "$B" write "$D" 0 XXXX'
TENANT

# Run the tenant; make $w/ext4/imm immutable once the tenant has it open.
run_tenant() {
	local pid i
	md5sum "$w/app" "$w/ext4/log" "$w/ext4/imm" "$w/own" "$w/ext4/swap" >"$w/sums"
	setpriv --reuid="$uid" --regid="$uid" --clear-groups \
		unshare -Urm bash "$w/tenant.sh" >"$w/tenant.out" 2>&1 &
	pid=$!
	for ((i = 0; i < 300; i++)); do
		[ -e "$w/t/imm.opened" ] && break
		sleep 0.1
	done
	chattr +i "$w/ext4/imm"
	touch "$w/t/imm.go"
	wait "$pid" || { cat "$w/tenant.out"; fail "tenant run failed"; }
	chattr -i "$w/ext4/imm"
	cat "$w/t/res"
}

# tenant_said STEP EXPECTED: the tenant's step printed EXPECTED.
tenant_said() {
	local line
	line=$(grep "^$1 " "$w/t/res" || true)
	[ -n "$line" ] || fail "step $1 did not run"
	expect_eq "$1 $2" "$line" "tenant step"
}

# unchanged FILE: FILE as before the tenant ran.
unchanged() {
	expect_eq "$(grep " $1\$" "$w/sums")" "$(md5sum "$1")" \
		"checksum after device write"
}

setup() {
	mkdir "$w/mnt" "$w/ext4" "$w/nx" "$w/t"
	chown "$uid:$uid" "$w/t"
	# A file the tenant may write but not read.
	{ printf SECRET; head -c 1048570 /dev/zero; } >"$w/secret"
	chmod 0002 "$w/secret"
	{ printf OWNOWN; head -c 1048570 /dev/zero; } >"$w/own"
	chown "$uid:$uid" "$w/own"
	head -c 65536 /dev/zero >"$w/app"
	chown "$uid:$uid" "$w/app"
	# ext4 through the stock loop driver, for chattr +a and +i (tmpfs has
	# no file attributes before 6.0), setuid and swap.
	truncate -s 32M "$w/ext4.img"
	mkfs.ext4 -q -F "$w/ext4.img"
	mount -o loop "$w/ext4.img" "$w/ext4"
	chmod 0755 "$w/ext4"
	head -c 65536 < <(yes LOG) >"$w/ext4/log"
	chmod 0666 "$w/ext4/log"
	chattr +a "$w/ext4/log"
	head -c 65536 /dev/zero >"$w/ext4/imm"
	chown "$uid:$uid" "$w/ext4/imm"
	head -c 65536 /dev/zero >"$w/ext4/suid"
	chown 2000:2000 "$w/ext4/suid"
	chmod 06777 "$w/ext4/suid"
	head -c 1048576 /dev/zero >"$w/ext4/swap"
	chmod 0600 "$w/ext4/swap"
	mkswap "$w/ext4/swap" >/dev/null
	swapon "$w/ext4/swap"
	chmod 0666 "$w/ext4/swap"
	mount -t tmpfs -o noexec,nosuid,mode=0755 tmpfs "$w/nx"
	head -c 65536 /dev/zero >"$w/nx/f"
	chown "$uid:$uid" "$w/nx/f"
	# The tenant really cannot read the secret.
	if setpriv --reuid="$uid" --regid="$uid" --clear-groups \
		unshare -Urm cat "$w/secret" >/dev/null 2>&1; then
		fail "the tenant can read $w/secret"
	fi
}

# A device never reads through an fd without read access.
wronly_setfd() { tenant_said wronly_setfd EBADF; }
wronly_configure() { tenant_said wronly_configure EBADF; }
wronly_append() { tenant_said wronly_append EBADF; }
wronly_change() { tenant_said wronly_change "ok ro=1|EBADF|OWNOWN"; }

# Writes that would not land at their offset give a read-only device.
append_fd() {
	tenant_said append_fd "ok ro=1|EPERM"
	unchanged "$w/app"
}

append_only() {
	tenant_said append_only "ok ro=1|EPERM"
	unchanged "$w/ext4/log"
}

immutable() {
	tenant_said immutable "ok ro=1|EPERM"
	unchanged "$w/ext4/imm"
}

# A read-only fd gives a read-only device whatever LOOP_CONFIGURE asks.
rdonly() {
	tenant_said rdonly "ok ro=1|EPERM"
	unchanged "$w/own"
}

# Writes through the device strip setuid/setgid as the tenant's own write()
# would: the worker serving them must not lend its capabilities.
setuid() {
	tenant_said setuid "ok ro=0|ok"
	expect_eq XXXX "$(head -c 4 "$w/ext4/suid")" "file start"
	expect_eq 777 "$(stat -c %a "$w/ext4/suid")" "mode after device write"
}

# As in-tree: mount flags of the backing file's filesystem do not matter
# (the device moves data; nosuid/noexec apply to what is mounted from it).
noexec() {
	tenant_said noexec "ok ro=0|ok"
	expect_eq XXXX "$(head -c 4 "$w/nx/f")" "file start"
}

# As in-tree: an active swap file binds and reads, but every write through
# the device fails (the filesystem refuses writes to swap files).
swap() {
	tenant_said swap "ok ro=0|SWAPSPACE2|EIO"
	unchanged "$w/ext4/swap"
}

# Buffered writes with IOCB_NOWAIT on filesystems that do not support them
# (f2fs: -EINVAL) go to the worker instead of failing; xfs and btrfs do
# support them. Host root, own instance; each filesystem on an image
# through the stock driver, a sparse backing file in it.
fs_fio() {
	local fs=$1 size n d log
	log=$(dmesg_lines)
	mkdir -p "$w/fs-$fs" "$w/hmnt"
	mountpoint -q "$w/hmnt" || mount -t loop loop "$w/hmnt"
	case $fs in
	f2fs) size=128M ;;
	xfs) size=320M ;;
	btrfs) size=256M ;;
	esac
	truncate -s "$size" "$w/$fs.img"
	"mkfs.$fs" -q "$w/$fs.img" >/dev/null
	mount -o loop "$w/$fs.img" "$w/fs-$fs"
	truncate -s 16M "$w/fs-$fs/back"
	n=$("$B" getfree "$w/hmnt/loop-control")
	d=$w/hmnt/loop$n
	ln -s "$d" "$w/dev-$fs"
	expect_eq "ok ro=0" "$("$B" configure "$d" "$w/fs-$fs/back" rw)" bind
	fio --name=qd1 --filename="$d" --rw=randwrite --bs=4k --size=1M \
		--iodepth=1 --ioengine=psync --direct=1 --verify=crc32c \
		--verify_fatal=1 --output="$w/fio.out" ||
		{ cat "$w/fio.out"; fail "fio at depth 1"; }
	fio --name=qd32 --filename="$d" --rw=randwrite --bs=4k --size=1M \
		--offset=8M --iodepth=32 --ioengine=libaio --direct=1 \
		--verify=crc32c --verify_fatal=1 --output="$w/fio.out" ||
		{ cat "$w/fio.out"; fail "fio at depth 32"; }
	klog_clean_since "$log"
}

fs_ext4() {
	local fs=$1 d log
	log=$(dmesg_lines)
	d=$(readlink "$w/dev-$fs")
	[ -s "$w/data" ] || head -c 1M /dev/urandom >"$w/data"
	mkfs.ext4 -q -F "$d"
	mkdir -p "$w/e-$fs"
	mount "$d" "$w/e-$fs"
	cp "$w/data" "$w/e-$fs/data"
	umount "$w/e-$fs"
	fsck.ext4 -fn "$d"
	mount -o ro "$d" "$w/e-$fs"
	cmp "$w/data" "$w/e-$fs/data"
	umount "$w/e-$fs"
	"$B" clr "$d" >/dev/null
	umount "$w/fs-$fs"
	klog_clean_since "$log"
}

# A device must not end up serving its I/O through a file on a filesystem
# mounted from itself, directly or through a second device: its worker
# would wait on itself. Only the host can mount such a filesystem, so host
# root attacks here. Should LOOP_CHANGE_FD wrongly succeed, the old file is
# put back before anything reads through the cycle.
cycle_setup() {
	local n d1
	mkdir -p "$w/hmnt" "$w/c1"
	mountpoint -q "$w/hmnt" || mount -t loop loop "$w/hmnt"
	# ext4 in the first 16 MiB of 32; a sparse 32 MiB file in it, the
	# size LOOP_CHANGE_FD demands.
	truncate -s 32M "$w/outer.img"
	mkfs.ext4 -q -F "$w/outer.img" 16M
	mount -o loop "$w/outer.img" "$w/c1"
	truncate -s 32M "$w/c1/inner"
	umount "$w/c1"
	n=$("$B" getfree "$w/hmnt/loop-control")
	d1=$w/hmnt/loop$n
	expect_eq "ok ro=1" "$("$B" setfd "$d1" "$w/outer.img" r)" "bind outer"
	mount -o ro,noload "$d1" "$w/c1"
	ln -s "$d1" "$w/cyc-d1"
}

# change_back_if_ok OUT DEV: undo a LOOP_CHANGE_FD that answered ok.
change_back_if_ok() {
	[ "$1" = ok ] && "$B" change "$2" "$w/outer.img" r
	return 0
}

cycle_chain() {
	local n d1 d2 out
	d1=$(readlink "$w/cyc-d1")
	n=$("$B" getfree "$w/hmnt/loop-control")
	d2=$w/hmnt/loop$n
	expect_eq "ok ro=1" "$("$B" setfd "$d2" "$w/c1/inner" r)" "bind inner"
	# Through the host's node: a node opened through loopfs cannot back.
	out=$("$B" change "$d1" "/dev/$(disk_name "$d2")" r)
	change_back_if_ok "$out" "$d1"
	"$B" clr "$d2" >/dev/null
	expect_eq EINVAL "$out" "LOOP_CHANGE_FD to a device on its own filesystem"
}

cycle_direct() {
	local d1 out
	d1=$(readlink "$w/cyc-d1")
	out=$("$B" change "$d1" "$w/c1/inner" r)
	change_back_if_ok "$out" "$d1"
	umount "$w/c1"
	"$B" clr "$d1" >/dev/null
	expect_eq EINVAL "$out" "LOOP_CHANGE_FD to a file on its own filesystem"
}

# wait_node PATH: up to 3 s for the block node PATH (devtmpfs makes it)
wait_node() {
	local i
	for ((i = 0; i < 30; i++)); do
		[ -b "$1" ] && return 0
		sleep 0.1
	done
	fail "no $1"
}

# The same through a node of one of the device's own partitions, on the
# disk's major (1) or, past the disk's minors, on the extended one (17).
# LOOP_CHANGE_FD wants a file of the device's size: the device is cut to
# 1 MiB, the size of a partition, after its partitions were scanned.
cycle_partition() {
	local n d name p out res=
	truncate -s 24M "$w/parts.img"
	{ echo 'label: gpt'; for p in $(seq 18); do echo ',1M'; done; } |
		sfdisk -q "$w/parts.img"
	n=$("$B" getfree "$w/hmnt/loop-control")
	d=$w/hmnt/loop$n
	losetup -r -P "$d" "$w/parts.img"
	expect_eq ok "$("$B" sizelimit "$d" 1048576)" "sizelimit 1 MiB"
	name=$(disk_name "$d")
	for p in 1 17; do
		# A change that went through rescans: the node comes back.
		wait_node "/dev/${name}p$p"
		out=$("$B" change "$d" "/dev/${name}p$p" r)
		[ "$out" = ok ] && "$B" change "$d" "$w/parts.img" r
		res="$res $p:$out"
	done
	loop_detach "$d"
	expect_eq " 1:EINVAL 17:EINVAL" "$res" "LOOP_CHANGE_FD to its own partitions"
}

nr_disks() { find /sys/block -maxdepth 1 -name 'loopfs*' | wc -l; }

# overlayfs holds a private clone of each layer's mount while the overlay
# lives. A tenant's overlay with its instance as a layer, and a device of
# that instance backed by a file on the overlay, would keep the instance
# alive once the container is gone. The tenant tries exactly that; an
# overlay of plain directories shows that overlays work there at all.
overlay_layer() {
	local before out i plain
	before=$(nr_disks)
	mkdir -p "$w/ov" && chown "$uid:$uid" "$w/ov"
	modprobe overlay
	out=$(setpriv --reuid="$uid" --regid="$uid" --clear-groups \
		unshare -Urm bash -c '
		cd "$w/ov"
		mkdir -p inst tmp
		mount -t tmpfs tmpfs tmp
		mount -t loop loop inst
		mkdir tmp/lower tmp/upper tmp/work tmp/merged
		layer() {
			if mount -t overlay overlay -o "userxattr,lowerdir=$2,upperdir=tmp/upper,workdir=tmp/work" \
				tmp/merged 2>/dev/null; then
				echo "$1 mounted"
				return 0
			fi
			echo "$1 refused"
			return 1
		}
		layer plain tmp/lower && umount tmp/merged
		layer view inst/block && umount tmp/merged
		layer instance inst || exit 0
		truncate -s 1M tmp/merged/img
		n=$("$B" getfree inst/loop-control)
		"$B" setfd "inst/loop$n" tmp/merged/img rw
	' 2>&1)
	for ((i = 0; i < 30; i++)); do
		[ "$(nr_disks)" -le "$before" ] && break
		sleep 0.1
	done
	# Before 5.11 no user namespace mounts overlayfs at all.
	plain=mounted
	kernel_at_least 5.11 || plain=refused
	expect_eq "plain $plain
view refused
instance refused" "$out" "overlays the tenant mounted"
	expect_eq "$before" "$(nr_disks)" "loopfs disks once the tenant is gone"
}

# Every tenant's instance went with its mount namespace.
nothing_left() {
	local i
	umount "$w/hmnt"
	for ((i = 0; i < 30; i++)); do
		[ "$(nr_disks)" -le "$disks_before" ] && return 0
		sleep 0.1
	done
	fail "$(nr_disks) loopfs disks, $disks_before before the suite"
}

cleanup() {
	swapoff "$w/ext4/swap" 2>/dev/null
	umount "$w/nx" 2>/dev/null
	for fs in f2fs xfs btrfs; do
		umount "$w/e-$fs" 2>/dev/null
		umount "$w/fs-$fs" 2>/dev/null
	done
	umount "$w/c1" 2>/dev/null
	umount "$w/hmnt" 2>/dev/null
	umount "$w/ext4" 2>/dev/null
	rm -rf "$w"
}

disks_before=$(nr_disks)
tap_plan 25
run_test "host side: files, ext4 via the stock driver, active swap file" setup
run_test "tenant: one run of every step in its own user namespace" run_tenant
run_test "LOOP_SET_FD with an O_WRONLY fd: EBADF, nothing read" wronly_setfd
run_test "LOOP_CONFIGURE with an O_WRONLY fd: EBADF, nothing read" wronly_configure
run_test "LOOP_CONFIGURE with an O_WRONLY|O_APPEND fd: EBADF" wronly_append
run_test "LOOP_CHANGE_FD to an O_WRONLY fd: EBADF, old file still served" wronly_change
run_test "O_RDWR|O_APPEND fd: read-only device, write at 0 refused" append_fd
run_test "append-only file (chattr +a, ext4): read-only device, file unchanged" append_only
run_test "file made immutable after open (chattr +i): read-only device, file unchanged" immutable
run_test "O_RDONLY fd with LO_FLAGS_READ_ONLY clear: read-only device" rdonly
run_test "worker writes strip setuid/setgid like the tenant's own write" setuid
run_test "file on a noexec,nosuid mount binds read-write (as in-tree)" noexec
run_test "active swap file binds (as in-tree), device writes fail with EIO" swap
for fs in f2fs xfs btrfs; do
	t1="$fs backing: 4 KiB writes at depth 1 and 32 verify, no I/O error"
	t2="$fs backing: mkfs.ext4, a file, fsck -fn clean, same data after remount"
	if ! kernel_has_fs "$fs"; then
		skip_test "$t1" "kernel built without $fs"
		skip_test "$t2" "kernel built without $fs"
		continue
	fi
	run_test "$t1" fs_fio "$fs"
	run_test "$t2" fs_ext4 "$fs"
done
run_test "cycle: host mounts ext4 from a device, read-only" cycle_setup
run_test "cycle: LOOP_CHANGE_FD to a device backed by a file on it: EINVAL" cycle_chain
run_test "cycle: LOOP_CHANGE_FD to a file on the device's own filesystem: EINVAL, nothing hangs" cycle_direct
run_test "cycle: LOOP_CHANGE_FD to a node of its own partition 1 or 17: EINVAL" cycle_partition
run_test "a tenant's instance cannot be an overlay layer: no device outlives the container" overlay_layer
run_test "no loopfs disk left once the tenant and the host instance are gone" nothing_left
cleanup
tap_done
