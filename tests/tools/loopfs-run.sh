#!/bin/bash
# loopfs-timeout: 900
# tools/loopfs-run: unprivileged `mount -o loop` in a user-namespace container
# through the seccomp mount supervisor.  Runs as root in a guest;
# the container's root is the unprivileged host uid $LOOPFS_UNPRIV_UID.
# I/O stalled on the container's FUSE daemon (a write, a read) fails when
# teardown kills it:
# loopfs-expect-log: I/O error, dev loopfs[0-9]+-1, sector [0-9]+ op 0x[01]:\((READ|WRITE)\)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/suite.sh"

BUILD=${LOOPFS_BUILD:-$here/../../.build}
BIN=$BUILD/tools
RUN=$BIN/loopfs-run
PROBE=$BUILD/tests/tools/mnt-probe
CUID=${LOOPFS_UNPRIV_UID:-1000}
# Attempts of each racing-thread test: LOOPFS_RACE_N, else 1000 with
# LOOPFS_QUICK and 10000 without.
if [ -n "${LOOPFS_RACE_N:-}" ]; then
	RACE_N=$LOOPFS_RACE_N
elif [ "${LOOPFS_QUICK:-0}" = 1 ]; then
	RACE_N=1000
else
	RACE_N=10000
fi
RACE_SECS=240
# Fewer attempts than this and a run says little: all of them when few are
# asked for, else 1000 (a slow kernel may reach RACE_SECS first).
RACE_MIN=$((RACE_N < 1000 ? RACE_N : 1000))

# The scratch dir must be reachable by the container's root (host uid CUID).
chmod 755 .
S=$PWD/lr
mkdir -m 755 "$S"
mkdir "$S/content" "$S/other" "$S/mnt"
echo "hello from loopfs" >"$S/content/hello"
mkfs.ext4 -q -F -d "$S/content" "$S/img" 16M
cp "$S/img" "$S/hostimg"
cp "$S/img" "$S/otherimg"
chown -R "$CUID:$CUID" "$S/img" "$S/content"
chown "$CUID:$CUID" "$S"

cleanup() {
	[ -n "${hostdev:-}" ] && losetup -d "$hostdev" 2>/dev/null
	[ -s "$S/jdev" ] && losetup -d "$(cat "$S/jdev")" 2>/dev/null
	umount "$S/other" 2>/dev/null
	[ -n "${old_max:-}" ] && echo "$old_max" >/proc/sys/user/max_loop_devices
	true
}
trap cleanup EXIT

run() {
	"$RUN" --uid "$CUID" "$@"
}

# A block device of the host (the stock loop driver, with a valid ext4 on
# it, so that only the policy can stop the mount) and the guest's own disk
# if it has one, as nodes the container can name.
hostdev=$(losetup -f --show "$S/hostimg")
read -r hmaj hmin < <(stat -c '%t %T' "$hostdev")
mknod -m 666 "$S/hostdisk" b $((16#$hmaj)) $((16#$hmin))
guestdisk=
for d in /sys/block/vd? /sys/block/sd?; do
	[ -e "$d/dev" ] || continue
	IFS=: read -r ma mi <"$d/dev"
	mknod -m 666 "$S/guestdisk" b "$ma" "$mi"
	guestdisk=$S/guestdisk
	break
done

# A loopfs instance of the host with the image bound to its loop0.
mount -t loop loop "$S/other"
"$PROBE" loop-add "$S/other/loop-control" 0 >/dev/null
losetup "$S/other/loop0" "$S/otherimg"

disks_before=$(loopfs_disks)

# wait_disks WANT: up to 10 s for the set of loopfs disks to be WANT
wait_disks() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(loopfs_disks)" = "$1" ] && return 0
		sleep 0.1
	done
	echo "loopfs disks: $(loopfs_disks | tr '\n' ' ') (want: $1)"
	return 1
}

test_mount_o_loop() {
	local out
	out=$(run -- sh -c "losetup -f; mount -o loop $S/img /mnt && cat /mnt/hello")
	echo "$out"
	expect_in "/dev/loop0" "$out" "losetup -f"
	expect_in "hello from loopfs" "$out" "file from the image"
}

test_dev_layout() {
	# shellcheck disable=SC2016 # expanded by the container's shell
	run -- sh -c '
		set -e
		for i in 0 1 2 3 4 5 6 7; do test -b /dev/loop$i; done
		test ! -e /dev/loop8
		test -c /dev/loop-control
		test "$(readlink /dev/loop3)" = loopfs/loop3
		test "$(stat -c %u:%g /dev/loopfs/loop0)" = 0:0
		grep -q " /dev/loopfs .*max=8" /proc/self/mountinfo
		for n in null zero full random urandom tty; do test -c /dev/$n; done
		test "$(id -u)" = 0
		echo ok > /dev/null'
	run --devices 3 -- sh -c 'test -b /dev/loop2 && test ! -e /dev/loop3 &&
		grep -q " /dev/loopfs .*max=3" /proc/self/mountinfo'
}

# /sys/block in the container is its instance's view: loop0..N-1 and
# nothing of the host's (the stock device bound above, the guest's disk,
# the host instance's device); losetup and lsblk list the container's own.
# util-linux before 2.37 lists and detaches only major 7 by path: there
# losetup -a lists nothing (nothing of the host's either) and busybox's
# losetup -d detaches (lib.sh's ul_takes_loopfs_paths).
test_sysblock_view() {
	local out listed=/dev/loop0 detach="losetup -D" list="losetup -a"
	if ! ul_takes_loopfs_paths; then
		listed="" detach="busybox losetup -d /dev/loop0"
		list="busybox losetup /dev/loop0"
	fi
	# shellcheck disable=SC2016 # expanded by the container's shell
	out=$(run --devices 3 -- sh -c '
		set -e
		echo "sys $(ls /sys/block | xargs)"
		img=$(mktemp)
		head -c 1048576 /dev/zero >"$img"
		echo "dev $(losetup --show -f "$img")"
		echo "a $(losetup -a | cut -d: -f1 | xargs)"
		echo "lsblk $(lsblk -a -l -n -o NAME | xargs)"
		'"$detach"'
		echo "after-D $('"$list"' 2>/dev/null | wc -l)"
		rm -f "$img"' 2>&1)
	echo "$out"
	grep -qx "sys loop0 loop1 loop2" <<<"$out" || fail "/sys/block in the container"
	grep -qx "dev /dev/loop0" <<<"$out" || fail "losetup --show -f"
	grep -qx "a $listed" <<<"$out" || fail "losetup -a"
	grep -qx "lsblk loop0 loop1 loop2" <<<"$out" || fail "lsblk"
	grep -qx "after-D 0" <<<"$out" || fail "$detach"
}

# in_container WANT SETUP CMD: the output of CMD (run after SETUP) is WANT;
# the supervisor's stderr is left in $S/err
in_container() {
	local out
	out=$(run -- sh -c "$2; $3" 2>"$S/err") || true
	cat "$S/err"
	expect_eq "$1" "$out" "result of: $3"
}

test_host_disk_refused() {
	in_container EPERM "losetup /dev/loop0 $S/img" "$PROBE mount $S/hostdisk /mnt ext4"
	grep -q "denied mount(\"$S/hostdisk\".*not a device of this container's loopfs instance" "$S/err" ||
		fail "no denial log line"
	if [ -n "$guestdisk" ]; then
		in_container EPERM true "$PROBE mount $guestdisk /mnt ext4"
	fi
}

test_other_instance_refused() {
	in_container EPERM true "$PROBE mount $S/other/loop0 /mnt ext4"
	grep -q "not a device of this container's loopfs instance" "$S/err" || fail "no log line"
	# a second instance the container mounts itself is not "its" instance either
	in_container EPERM "mkdir /dev/inst2 && mount -t loop loop /dev/inst2 &&
		$PROBE loop-add /dev/inst2/loop-control 0 >/dev/null &&
		losetup /dev/inst2/loop0 $S/img" "$PROBE mount /dev/inst2/loop0 /mnt ext4"
}

test_fs_type_refused() {
	in_container EPERM "losetup /dev/loop0 $S/img" "$PROBE mount /dev/loop0 /mnt ext3"
	grep -q "filesystem type not allowed" "$S/err" || fail "no log line"
	local out
	out=$(run --allow-fs ext2,vfat -- sh -c "losetup /dev/loop0 $S/img; $PROBE mount /dev/loop0 /mnt ext4" 2>/dev/null) || true
	expect_eq EPERM "$out" "ext4 with --allow-fs ext2,vfat"
}

test_bad_options_refused() {
	in_container EPERM "losetup /dev/loop0 $S/img" "$PROBE mount /dev/loop0 /mnt ext4 rw journal_dev=2049"
	grep -q "option journal_dev not allowed" "$S/err" || fail "no log line"
}

test_no_cap_refused() {
	in_container EPERM "losetup /dev/loop0 $S/img" \
		"setpriv --securebits=+noroot,+noroot_locked --inh-caps=-all --bounding-set=-all $PROBE mount /dev/loop0 /mnt ext4"
	grep -q "caller lacks CAP_SYS_ADMIN" "$S/err" || fail "no log line"
}

test_tmpfs_continue() {
	local out
	out=$(run -v -- sh -c 'mount -t tmpfs none /mnt && echo x > /mnt/f &&
		grep " /mnt " /proc/self/mountinfo' 2>"$S/err")
	cat "$S/err"
	expect_in " - tmpfs none " "$out" "tmpfs in mountinfo"
	grep -q "continue in the kernel" "$S/err" || fail "tmpfs was not CONTINUEd"
}

test_new_api_enosys() {
	local name out
	for name in tmpfs loop; do
		out=$(run -- "$PROBE" fsopen "$name") || true
		expect_eq ENOSYS "$out" "fsopen($name)"
	done
}

test_flags_locked() {
	local out
	out=$(run -- sh -c "
		losetup /dev/loop0 $S/img && mount /dev/loop0 /mnt || exit 1
		grep ' /mnt ' /proc/self/mountinfo
		if mount -o remount,bind,dev,suid /mnt; then echo CLEARED; fi
		grep ' /mnt ' /proc/self/mountinfo
		cat /mnt/hello
		umount /dev/loop0 && echo UMOUNTED")
	echo "$out"
	[ "$(echo "$out" | grep -c ' /mnt .*nosuid,nodev')" = 2 ] || fail "not nosuid,nodev"
	case $out in *CLEARED*) fail "container cleared nosuid/nodev" ;; esac
	expect_in "hello from loopfs" "$out" "file"
	# mount(8) names the canonical path, /dev/loop0 being a symlink
	expect_in " - ext4 /dev/loopfs/loop0 " "$out" "source as the caller named it"
	expect_in "UMOUNTED" "$out" "umount by device"
}

# mount(2) of a link the container named /dev/sda, to its loop0: the mount
# is made, and its source reads as the container's device, not the name.
test_source_names_its_device() {
	local out
	out=$(run -- sh -c "
		losetup /dev/loop0 $S/img && ln -s loop0 /dev/sda || exit 1
		$PROBE mount /dev/sda /mnt ext4 && echo \"sda: \$(grep ' /mnt ' /proc/self/mountinfo | tail -n 1)\"
		umount /mnt
		$PROBE mount /dev/loop0 /mnt ext4 && echo \"loop0: \$(grep ' /mnt ' /proc/self/mountinfo | tail -n 1)\"")
	echo "$out"
	expect_in " - ext4 /dev/loopfs/loop0 " "$(echo "$out" | grep '^sda: ')" "the source of the mount of /dev/sda"
	expect_in " - ext4 /dev/loop0 " "$(echo "$out" | grep '^loop0: ')" "the source of the mount of /dev/loop0"
}

test_race_block() {
	local out start=$SECONDS
	out=$(run -- sh -c "losetup /dev/loop0 $S/img &&
		$PROBE race /dev/loop0 $S/hostdisk /mnt ext4 $RACE_N $RACE_SECS" 2>"$S/err")
	echo "DIAG: $out ($((SECONDS - start)) s)"
	grep -c denied "$S/err" || true
	expect_in "wrong=0" "$out" "wrong mounts"
	[[ $out =~ attempts=([0-9]+)\ mounted=([0-9]+)\ denied=([0-9]+) ]] || fail "no counts"
	[ "${BASH_REMATCH[1]}" -ge "$RACE_MIN" ] || fail "only ${BASH_REMATCH[1]} attempts"
	[ "${BASH_REMATCH[2]}" -gt 0 ] || fail "never mounted the good device"
	[ "${BASH_REMATCH[3]}" -gt 0 ] || fail "never saw the bad device"
}

test_race_continue() {
	local out start=$SECONDS
	# a directory (not a block device: CONTINUE) against the host disk
	out=$(run -- "$PROBE" race "$S/content" "$S/hostdisk" /mnt ext4 "$RACE_N" "$RACE_SECS" 2>"$S/err")
	echo "DIAG: $out ($((SECONDS - start)) s)"
	expect_in "mounted=0 " "$out" "mounts through CONTINUE"
	expect_in "wrong=0" "$out" "wrong mounts"
	[[ $out =~ attempts=([0-9]+) ]] || fail "no counts"
	[ "${BASH_REMATCH[1]}" -ge "$RACE_MIN" ] || fail "only ${BASH_REMATCH[1]} attempts"
}

# FUSE: the module, and the node mode udev would give it
fuse_ready() {
	modprobe fuse 2>/dev/null || true
	chmod 666 /dev/fuse
}

test_fuse2fs() {
	local out
	fuse_ready
	out=$(run --fuse ext4=fuse2fs -- sh -c "
		losetup -f; mount -o loop $S/img /mnt && cat /mnt/hello &&
		grep ' /mnt ' /proc/self/mountinfo && umount /mnt")
	echo "$out"
	expect_in "hello from loopfs" "$out" "file through fuse2fs"
	expect_in " - fuse" "$out" "a FUSE mount"
}

# A helper that exits 0 having mounted nothing (fuse2fs does on a target
# that is not empty): mount(2) fails, and stderr says why.
test_fuse_helper_mounted_nothing() {
	local out rc
	fuse_ready
	out=$(run --fuse ext4=true -- sh -c "
		n=\$(grep -c ' /mnt ' /proc/self/mountinfo)
		mount -o loop $S/img /mnt
		echo mount=\$? mounts=\$((\$(grep -c ' /mnt ' /proc/self/mountinfo) - n))" 2>"$S/err")
	rc=$?
	cat "$S/err"
	echo "$out"
	expect_eq 0 "$rc" "loopfs-run's exit status"
	case $out in *mount=0*) fail "mount(2) succeeded with nothing mounted" ;; esac
	expect_in "mounts=0" "$out" "mounts added on /mnt"
	expect_in "/mnt: true exited without mounting it" "$(cat "$S/err")" "stderr"
}

test_nothing_left() {
	local out
	old_max=$(cat /proc/sys/user/max_loop_devices)
	echo 8 >/proc/sys/user/max_loop_devices
	fuse_ready
	# leave everything in place: bound devices, kernel and FUSE mounts, a
	# background process holding a device open
	out=$(run --fuse ext2=fuse2fs -- sh -c "
		set -e
		cp $S/img $S/f.img
		losetup /dev/loop1 $S/img
		mount -o loop $S/img /mnt
		losetup /dev/loop2 $S/f.img
		mount -t ext2 /dev/loop2 $S/mnt
		echo fuse mounts: \$(grep -c ' - fuse' /proc/self/mountinfo)
		sleep 1000 </dev/loop1 >/dev/null 2>&1 &
		cat /mnt/hello")
	echo "$out"
	expect_in "fuse mounts: 1" "$out" "the run's FUSE mount"
	expect_in "hello from loopfs" "$out" "the run's kernel mount"
	expect_eq "$disks_before" "$(loopfs_disks)" "loopfs disks after the run"
	if grep ' - loop ' /proc/self/mountinfo | grep -v " $S/other "; then
		fail "a loop instance is still mounted"
	fi
	if pgrep -u "$CUID" >/dev/null; then
		pgrep -a -u "$CUID"
		fail "processes of the container survived"
	fi
	# charges: with a limit of 8 per user, two runs in a row that each create
	# 8 devices only work if the first one gave its charges back
	run --devices 8 -- true
	run --devices 8 -- sh -c 'losetup -a >/dev/null; test -b /dev/loop7'
	expect_eq "$disks_before" "$(loopfs_disks)" "loopfs disks after the charge runs"
	echo "$old_max" >/proc/sys/user/max_loop_devices
}

test_supervisor_death() {
	local sup i
	rm -f "$S/ready" "$S/go" "$S/res"
	"$RUN" --uid "$CUID" -- sh -c "echo \$\$ > $S/ready; while [ ! -e $S/go ]; do sleep 0.1; done
		timeout 20 $PROBE mount none /mnt tmpfs > $S/res" &
	sup=$!
	for ((i = 0; i < 100; i++)); do [ -s "$S/ready" ] && break; sleep 0.1; done
	kill -9 "$sup"
	wait "$sup" || true
	touch "$S/go"
	for ((i = 0; i < 250; i++)); do [ -s "$S/res" ] && break; sleep 0.1; done
	kill -9 "$(cat "$S/ready")" 2>/dev/null || true
	expect_eq ENOSYS "$(cat "$S/res" 2>/dev/null)" "mount(2) after the supervisor died"
	# the orphaned container is gone now: so are its devices
	wait_disks "$disks_before" || fail "devices left after the orphan died"
}

test_pid_ns() {
	local out
	out=$(run --pid -- sh -c "echo pid=\$\$; losetup -f; mount -o loop $S/img /mnt && cat /mnt/hello")
	echo "$out"
	expect_in "pid=1" "$out" "COMMAND is PID 1"
	expect_in "hello from loopfs" "$out" "mount -o loop in a PID namespace"
}

test_caller_cwd() {
	local out
	out=$(run -- sh -c "losetup /dev/loop0 $S/img && cd $S &&
		$PROBE mount /dev/loop0 mnt ext4 ro &&
		cat mnt/hello && grep ' $S/mnt ' /proc/self/mountinfo")
	echo "$out"
	expect_in "hello from loopfs" "$out" "file via a relative target"
	expect_in " $S/mnt ro,nosuid,nodev" "$out" "mounted at the caller's cwd-relative target"
}

test_nested_ns() {
	local out
	out=$(run -- sh -c "losetup /dev/loop1 $S/img &&
		unshare -m sh -c '$PROBE mount /dev/loop1 /mnt ext4 ro && cat /mnt/hello' &&
		echo outer: \$(grep -c ' /mnt .* - ext4 ' /proc/self/mountinfo)")
	echo "$out"
	expect_in "hello from loopfs" "$out" "mount from a nested mount namespace"
	expect_in "outer: 0" "$out" "the mount stays in the caller's namespace"
}

# A user namespace the caller made gives it CAP_SYS_ADMIN there, not over
# the container's: container root in one is refused as anybody would be.
test_nested_userns_refused() {
	in_container EPERM "losetup /dev/loop1 $S/img" \
		"unshare -U -m --map-root-user $PROBE mount /dev/loop1 /mnt ext4 ro"
	grep -q "caller lacks CAP_SYS_ADMIN over the container's user namespace" "$S/err" ||
		fail "no log line"
}

# An unprivileged user of the container (uid 1000 there) and the container
# root's device: loop0's node is the root's, 0600, its image the root's,
# 0600. Through a user namespace of its own, or holding CAP_SYS_ADMIN in
# the container's and nothing else, the user mounts nothing: it could not
# have opened the device itself.
test_user_cannot_mount_roots_device() {
	local out
	out=$(run --map 1000:$((CUID + 1)):1 -- sh -c "
		img=\$(mktemp /tmp/root.XXXXXX)
		cat $S/img >\$img
		chmod 600 \$img /dev/loopfs/loop0
		losetup /dev/loop0 \$img
		setpriv --reuid 1000 --regid 1000 --clear-groups -- \
			unshare -U -m --map-root-user $PROBE mount /dev/loop0 /mnt ext4
		setpriv --reuid 1000 --regid 1000 --clear-groups \
			--inh-caps +sys_admin --ambient-caps +sys_admin -- \
			$PROBE mount /dev/loop0 /mnt ext4
		setpriv --reuid 1000 --regid 1000 --clear-groups \
			--inh-caps +sys_admin --ambient-caps +sys_admin -- \
			$PROBE mount /dev/loop0 /mnt ext4 ro
		$PROBE mount /dev/loop0 /mnt ext4 && cat /mnt/hello
		umount /mnt; losetup -d /dev/loop0; rm -f \$img" 2>"$S/err")
	cat "$S/err"
	expect_eq "EPERM
EPERM
EPERM
ok
hello from loopfs" "$out" "uid 1000 in a namespace of its own, uid 1000 with CAP_SYS_ADMIN (rw, ro), then root"
	grep -q "caller may not open the device for reading and writing" "$S/err" ||
		fail "no log line for the read-write mount"
	grep -q "caller may not open the device for reading\$" "$S/err" ||
		fail "no log line for the read-only mount"
}

test_compat_abi() {
	local out
	# an i386 mount(2) (int 0x80) is supervised like a native one
	out=$(run -- sh -c "losetup /dev/loop0 $S/img &&
		$PROBE mount32 $S/hostdisk /mnt ext4; $PROBE mount32 /dev/loop0 /mnt ext4 &&
		cat /mnt/hello" 2>"$S/err")
	cat "$S/err"
	echo "$out"
	expect_eq "EPERM
ok
hello from loopfs" "$out" "i386 mount(2) of the host disk, then of the instance device"
}

# An image whose superblock asks for a panic on error (its error behaviour
# and its default mount options), with one corrupt inode (a bad extent
# header), mounted through the supervisor: reading the file fails, the
# filesystem turns read-only, the host survives.  (ext4 stops writes
# without setting SB_RDONLY on these kernels: mountinfo keeps saying rw,
# writes fail with EROFS or EIO.)
test_fs_error_no_panic() {
	local out lines
	lines=$(dmesg_lines)
	out=$(run -- sh -c "
		mkfs.ext4 -q -F -E root_owner=$CUID:$CUID -d $S/content $S/panic.img 16M &&
		tune2fs -e panic -E mount_opts=errors=panic $S/panic.img >/dev/null &&
		debugfs -w -R 'sif /hello block[0] 0' $S/panic.img 2>/dev/null &&
		mount -o loop $S/panic.img /mnt || exit 1
		grep ' /mnt .* - ext4 ' /proc/self/mountinfo
		if cat /mnt/hello; then echo READ; fi
		if touch /mnt/new; then echo WRITTEN; fi" 2>&1) || true
	echo "$out"
	dmesg_since "$lines" | grep EXT4-fs
	case $out in *READ*) fail "the corrupt file was read" ;; esac
	expect_in "cat: /mnt/hello: Structure needs cleaning" "$out" "read of the corrupt inode"
	grep -q " - ext4 /dev/loop0 rw,.*errors=remount-ro" <<<"$out" ||
		fail "the supervisor's mount is not errors=remount-ro"
	case $out in *WRITTEN*) fail "written after the error" ;; esac
	grep -Eq "touch: cannot touch '/mnt/new': (Read-only file system|Input/output error)" <<<"$out" ||
		fail "no write error after the filesystem error"
	dmesg_since "$lines" | grep -q "EXT4-fs (loopfs.*): Remounting filesystem read-only" ||
		fail "ext4 did not turn the filesystem read-only"
}

# An image whose default mount options say warn_on_error (ext4 then makes
# every filesystem error a kernel WARNING, a panic where panic_on_warn is
# set, as in these guests), with the corrupt inode: reading it fails with
# no WARNING; warn_on_error given to mount is refused.
test_fs_error_no_warning() {
	local out lines
	lines=$(dmesg_lines)
	out=$(run -- sh -c "
		mkfs.ext4 -q -F -E root_owner=$CUID:$CUID -d $S/content $S/warn.img 16M &&
		tune2fs -E mount_opts=warn_on_error $S/warn.img >/dev/null &&
		debugfs -w -R 'sif /hello block[0] 0' $S/warn.img 2>/dev/null &&
		mount -o loop $S/warn.img /mnt || exit 1
		if cat /mnt/hello; then echo READ; fi
		umount /mnt
		mount -o loop,warn_on_error $S/img /mnt; echo mount=\$?" 2>&1) || true
	echo "$out"
	dmesg_since "$lines" | grep EXT4-fs
	case $out in *READ*) fail "the corrupt file was read" ;; esac
	expect_in "cat: /mnt/hello: Structure needs cleaning" "$out" "read of the corrupt inode"
	dmesg_since "$lines" | grep -q "EXT4-fs error (device loopfs" ||
		fail "ext4 saw no error"
	! dmesg_since "$lines" | grep -q "WARNING" || fail "a kernel WARNING"
	expect_in "mount=32" "$out" "mount -o loop,warn_on_error (mount(8) exit status)"
	expect_in "option warn_on_error not allowed" "$out" "the refusal's reason"
}

test_errors_panic_refused() {
	local out
	out=$(run -- sh -c "mount -o loop,errors=panic $S/img /mnt; echo mount=\$?
		losetup /dev/loop1 $S/img
		$PROBE mount /dev/loop1 /mnt ext4 rw errors=panic
		$PROBE mount /dev/loop1 /mnt vfat ro errors=panic" 2>"$S/err") || true
	cat "$S/err"
	expect_eq "mount=32
EPERM
EPERM" "$out" "mount -o loop,errors=panic (ext4), then errors=panic for ext4 and vfat"
	grep -q "denied mount(\"/dev/loop1\", \"/mnt\", \"vfat\".*option errors=panic not allowed: a filesystem error would halt the host" "$S/err" ||
		fail "no denial log line"
}

# MS_REMOUNT goes to the kernel, which refuses the superblock of host root's
# mount to the container's root.
test_remount_errors_panic_refused() {
	local out
	out=$(run -- sh -c "losetup /dev/loop0 $S/img && mount /dev/loop0 /mnt || exit 1
		$PROBE remount /mnt errors=panic
		mount -o remount,errors=panic /mnt 2>/dev/null; echo mount=\$?
		grep ' /mnt ' /proc/self/mountinfo")
	echo "$out"
	expect_in "EPERM
mount=32" "$out" "remount,errors=panic"
	case $out in *errors=panic*) fail "errors=panic reached the superblock" ;; esac
}

# A host device holding an external ext4 journal with one user (as for a
# host filesystem using it).  The container writes its number and UUID into
# its own image's superblock (no option names it); host root's mount for
# the container must not open it.  The same image mounted by host root
# directly does open it: the image is a working attack, and the test shows
# the confinement.
test_external_journal_confined() {
	local jdev jname maj min devnum juuid sum out lines left
	truncate -s 8M "$S/jdev.img"
	jdev=$(losetup -f --show "$S/jdev.img")
	echo "$jdev" >"$S/jdev"
	jname=${jdev##*/}
	mke2fs -q -F -O journal_dev -b 4096 -E lazy_journal_init=1 "$jdev"
	mkfs.ext4 -q -F -b 4096 -J device="$jdev" "$S/jowner.img" 16M
	juuid=$(blkid -p -o value -s UUID "$jdev")
	read -r maj min < <(stat -c '%t %T' "$jdev")
	maj=$((16#$maj)) min=$((16#$min))
	# the superblock's s_journal_dev: new_encode_dev()
	devnum=$(((min & 0xff) | (maj << 8) | ((min & ~0xff) << 12)))
	sum=$(sha256sum <"$jdev")
	lines=$(dmesg_lines)
	out=$(run -- sh -c "
		mkfs.ext4 -q -F -b 4096 -O ^has_journal $S/ej.img 16M &&
		printf '%s\n' 'feature has_journal' 'ssv journal_inum 0' \
			'ssv journal_dev $devnum' 'ssv journal_uuid $juuid' |
			debugfs -w -f - $S/ej.img >/dev/null 2>&1 || exit 1
		if mount -o loop $S/ej.img /mnt; then
			echo MOUNTED
			ls /proc/fs/jbd2
			umount /mnt
		fi" 2>&1)
	echo "$out"
	dmesg_since "$lines" | grep -i journal || true
	case $out in *MOUNTED*) fail "the container's mount with the host's journal succeeded" ;; esac
	expect_eq "$sum" "$(sha256sum <"$jdev")" "the host journal device's content"
	# the helper's cgroup is gone with it
	mkdir "$S/cg"
	mount -t cgroup2 cgroup2 "$S/cg"
	left=$(find "$S/cg" -name 'loopfs-run.*')
	umount "$S/cg"
	[ -z "$left" ] || fail "cgroups left: $left"
	# control: host root mounting the same image opens the host device
	mount -o loop "$S/ej.img" "$S/mnt" || fail "control: host root's mount of the crafted image failed"
	test -e "/proc/fs/jbd2/$jname" || fail "control: no journal on $jname"
	umount "$S/mnt"
	losetup -d "$jdev"
	rm -f "$S/jdev"
}

# A FUSE filesystem of the container's own (fuse2fs on a copy of the image,
# mounted through CONTINUE) whose daemon is stopped.  Shell code for the
# container; $fpid is the daemon.
STALL_FUSE="fuse2fs -f $S/fuse.img $S/fmnt >/dev/null 2>&1 & fpid=\$!
	for i in \$(seq 100); do grep -q ' $S/fmnt ' /proc/self/mountinfo && break; sleep 0.1; done
	ls $S/fmnt >/dev/null || exit 1
	losetup /dev/loop0 $S/img"

stall_prepare() {
	fuse_ready
	rm -f "$S/res" "$S/t-exit" "$S/go"
	[ -e "$S/fuse.img" ] || { cp "$S/img" "$S/fuse.img" && chown "$CUID:$CUID" "$S/fuse.img"; }
	mkdir -p "$S/fmnt" && chown "$CUID:$CUID" "$S/fmnt"
}

# After a run that may have hung: its processes and devices go, or fail.
stall_cleanup() {
	pkill -KILL -u "$CUID" 2>/dev/null || true
	wait_disks "$disks_before" || fail "devices left after killing the container"
}

# run_stalled CODE: runs CODE in the container (timed out after 30 s), then
# checks that loopfs-run returned within 10 s of COMMAND's exit (CODE
# writes $S/t-exit last) and left no device and no process
run_stalled() {
	local rc=0 end secs
	timeout -s KILL 30 "$RUN" --uid "$CUID" -- sh -c "$1" 2>"$S/err" || rc=$?
	end=$(date +%s.%N)
	cat "$S/err"
	if [ "$rc" -eq 137 ]; then
		stall_cleanup
		fail "loopfs-run had not returned 30 s after it started"
	fi
	[ -s "$S/t-exit" ] || fail "COMMAND did not run to its end (status $rc)"
	secs=$(awk -v a="$(cat "$S/t-exit")" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
	echo "DIAG: returned ${secs} s after COMMAND's exit"
	awk -v s="$secs" 'BEGIN { exit !(s < 10) }' || fail "returned ${secs} s after COMMAND's exit"
	expect_eq "$disks_before" "$(loopfs_disks)" "loopfs disks after the run"
	if pgrep -u "$CUID" >/dev/null; then
		pgrep -a -u "$CUID"
		stall_cleanup
		fail "processes of the container survived"
	fi
}

test_stalled_fuse_target() {
	stall_prepare
	run_stalled "$STALL_FUSE
		kill -STOP \$fpid
		$PROBE mount /dev/loop0 $S/fmnt/x ext4 >$S/res 2>&1 &
		sleep 1
		date +%s.%N >$S/t-exit"
}

test_stalled_fuse_mapped_source() {
	stall_prepare
	run_stalled "$STALL_FUSE
		printf /dev/loop0 >$S/fmnt/src
		$PROBE mount-mapped $S/fmnt/src /mnt ext4 $S/go >$S/res 2>&1 &
		for i in \$(seq 100); do grep -q resident $S/res && break; sleep 0.1; done
		kill -STOP \$fpid
		touch $S/go
		sleep 1
		cat $S/res
		date +%s.%N >$S/t-exit"
	expect_in "resident=0" "$(cat "$S/res")" "the source string was not in memory"
}

test_stalled_resolver_times_out() {
	local out
	stall_prepare
	out=$(timeout -s KILL 60 "$RUN" --uid "$CUID" --helper-timeout 3 -- sh -c "$STALL_FUSE
		kill -STOP \$fpid
		s=\$(date +%s)
		$PROBE mount /dev/loop0 $S/fmnt/x ext4
		echo elapsed=\$((\$(date +%s) - s))
		kill -CONT \$fpid" 2>"$S/err") || true
	cat "$S/err"
	echo "$out"
	expect_in "ETIMEDOUT" "$out" "mount(2) under the stalled FUSE mount"
	[[ $out =~ elapsed=([0-9]+) ]] || fail "no elapsed time"
	if [ "${BASH_REMATCH[1]}" -lt 2 ] || [ "${BASH_REMATCH[1]}" -gt 8 ]; then
		fail "answered after ${BASH_REMATCH[1]} s (bound: 3 s)"
	fi
	grep -q "mount(\"/dev/loop0\", \"$S/fmnt/x\", \"ext4\", 0x0) by pid [0-9]*: .*timed out after 3 s" "$S/err" ||
		fail "no log line"
	pgrep -u "$CUID" >/dev/null && stall_cleanup
	true
}

# The container holds its own device's lock across a wait on its own FUSE
# daemon, stopped: a write to loop1 (backed by a file on that mount, served
# with the file's opener's rights) stalls, LOOP_SET_BLOCK_SIZE of loop1
# waits for it holding the device, LOOP_CTL_REMOVE of loop1 comes behind
# it. Neither the supervisor (host root, listing the instance for the mount
# of loop0 that follows, and at teardown) nor host root opening loop1's
# host node may wait for any of it, and the container's end still ends
# everything.
test_stalled_ioctl_remove() {
	local watcher
	stall_prepare
	rm -f "$S/stuck" "$S/host-open" "$S/res-bs" "$S/res-rm" "$S/bs-state"
	(
		for _ in $(seq 300); do [ -s "$S/stuck" ] && break; sleep 0.1; done
		[ -s "$S/stuck" ] || exit 0
		if timeout -s KILL 5 sh -c "exec 3</dev/$(cat "$S/stuck")"; then
			echo open-ok >"$S/host-open"
		else
			echo "open-failed $?" >"$S/host-open"
		fi
	) &
	watcher=$!
	run_stalled "$STALL_FUSE
		truncate -s 16M $S/fmnt/back
		losetup /dev/loop1 $S/fmnt/back
		kill -STOP \$fpid
		dd if=/dev/zero of=/dev/loop1 bs=4k count=1 oflag=direct 2>/dev/null &
		sleep 1
		$PROBE block-size /dev/loop1 4096 >$S/res-bs 2>&1 &
		sleep 1
		$PROBE loop-remove /dev/loop-control 1 >$S/res-rm 2>&1 &
		sleep 1
		$PROBE mount /dev/loop0 /mnt ext4 >$S/res 2>&1
		[ -s $S/res-bs ] || echo pending >$S/bs-state
		basename \$(readlink -f /sys/block/loop1) >$S/stuck
		for i in \$(seq 80); do [ -s $S/host-open ] && break; sleep 0.1; done
		date +%s.%N >$S/t-exit"
	# the watcher's open may be stuck for good: look, never wait for it
	for _ in $(seq 50); do [ -s "$S/host-open" ] && break; sleep 0.1; done
	kill "$watcher" 2>/dev/null || true
	expect_eq pending "$(cat "$S/bs-state" 2>/dev/null)" \
		"LOOP_SET_BLOCK_SIZE still waiting for the stalled write when loop0 was mounted"
	expect_eq EBUSY "$(cat "$S/res-rm" 2>/dev/null)" \
		"LOOP_CTL_REMOVE of the device whose ioctl holds it"
	expect_eq ok "$(cat "$S/res" 2>/dev/null)" "the supervised mount of loop0 meanwhile"
	expect_eq open-ok "$(cat "$S/host-open" 2>/dev/null)" \
		"host root opens loop1's host node within 5 s"
}

# A device backed by a file on the container's own FUSE mount (as a rootless
# container's storage is): the worker reads it with the opener's rights,
# which the daemon, in the container's user namespace, knows; host root's
# are no id there.  Both the container's read and host root's mount for it
# see the file's data.  The device reads the file with direct I/O, so that
# every read is the daemon's to answer, none the page cache's.
test_fuse_backed_device_reads() {
	local out
	stall_prepare
	out=$(run -- sh -c "$STALL_FUSE
		truncate -s 8M $S/fmnt/small
		mkfs.ext4 -q -F -d /usr/share/doc/fuse3 $S/fmnt/small
		sha256sum <$S/fmnt/small
		losetup --direct-io=on /dev/loop1 $S/fmnt/small
		echo dio=\$(cat /sys/block/loop1/loop/dio)
		sha256sum </dev/loop1
		mount /dev/loop1 /mnt && ls /mnt && umount /mnt
		losetup -d /dev/loop1
		kill \$fpid" 2>&1) || true
	echo "$out"
	expect_in "dio=1" "$out" "the device reads the file with direct I/O"
	[ "$(echo "$out" | grep -c -- '  -$' | tr -d ' ')" = 2 ] || fail "two checksums expected"
	expect_eq "$(echo "$out" | grep -m1 -- '  -$')" "$(echo "$out" | grep -- '  -$' | tail -n 1)" \
		"the device's data, read by the container, against the file's"
	expect_in "copyright" "$out" "a file of the filesystem mounted by host root for the container"
}

# A kernel-mount helper stuck in its device cgroup (reading the container's
# loop1, backed by a file on the container's FUSE mount, daemon stopped),
# then SIGKILL to the supervisor's whole process group, as timeout(1) and
# service managers send it: supervisor and helper die at once, and the
# helper's cgroup must still go.
test_supervisor_killed_cgroup_removed() {
	local sup cg left
	stall_prepare
	mkdir -p "$S/cg"
	mountpoint -q "$S/cg" || mount -t cgroup2 cgroup2 "$S/cg"
	setsid "$RUN" --uid "$CUID" -- sh -c "$STALL_FUSE
		truncate -s 8M $S/fmnt/small
		mkfs.ext4 -q -F $S/fmnt/small
		losetup /dev/loop1 $S/fmnt/small
		kill -STOP \$fpid
		$PROBE mount /dev/loop1 /mnt ext4 >$S/res 2>&1
		sleep 60" 2>"$S/err" &
	sup=$!
	for _ in $(seq 200); do
		cg=$(find "$S/cg" -name "loopfs-run.$sup.*" | head -n 1)
		[ -z "$cg" ] || break
		sleep 0.1
	done
	if [ -z "$cg" ]; then
		kill -KILL -- -"$sup" 2>/dev/null || true
		cat "$S/err" "$S/res"
		stall_cleanup
		umount "$S/cg"
		fail "no helper cgroup appeared"
		return
	fi
	sleep 0.5
	kill -KILL -- -"$sup"
	wait "$sup" 2>/dev/null || true
	for _ in $(seq 100); do
		left=$(find "$S/cg" -name "loopfs-run.$sup.*")
		[ -n "$left" ] || break
		sleep 0.1
	done
	cat "$S/err"
	stall_cleanup
	umount "$S/cg"
	[ -z "$left" ] || fail "10 s after the kill, cgroups left: $left"
}

# owners PATH...: "uid:gid" of each PATH, on one line
owners() {
	stat -c %u:%g "$@" | xargs
}

# The headline use: the container makes an ext4 filesystem itself, mounts it
# with mount -o loop, and writes to it as its root and as another of its
# users (container uid 1000, host uid CUID + 1); after a remount all is
# there, fsck finds nothing, and on disk the owners are the container's ids.
test_own_ext4_round_trip() {
	local out img=$S/own.img
	out=$(run --map 1000:$((CUID + 1)):1 -- sh -c "
		set -e
		truncate -s 64M $img
		mkfs.ext4 -q -F $img
		mount -o loop $img /mnt
		touch /mnt/x
		mkdir /mnt/u
		chown 1000:1000 /mnt/u
		setpriv --reuid 1000 --regid 1000 --clear-groups sh -c 'echo by-user >/mnt/u/f'
		echo first \$(stat -c %u:%g /mnt /mnt/x /mnt/u /mnt/u/f)
		grep ' /mnt ' /proc/self/mountinfo
		umount /mnt
		mount -o loop $img /mnt
		echo again \$(stat -c %u:%g /mnt /mnt/x /mnt/u/f) \$(cat /mnt/u/f)
		umount /mnt
		fsck.ext4 -fn $img >/dev/null && echo fsck clean" 2>&1) || true
	echo "$out"
	expect_in "first 0:0 0:0 1000:1000 1000:1000" "$out" "owners in the container"
	expect_in "again 0:0 0:0 1000:1000 by-user" "$out" "after a remount"
	expect_in "fsck clean" "$out" "fsck.ext4 -fn"
	grep -q " /mnt .*,idmapped - ext4 " <<<"$out" || fail "not an ID-mapped mount"
	# on disk: the ids the container wrote, read by the host without mapping
	mount -o loop,ro "$img" "$S/mnt"
	out=$(owners "$S/mnt" "$S/mnt/x" "$S/mnt/u/f")
	umount "$S/mnt"
	expect_eq "0:0 0:0 1000:1000" "$out" "owners on disk"
	rm -f "$img"
}

# The same use where the kernel has no ID-mapped mounts (before 5.12), as
# README says it is there: mount -o loop of the container's own ext4 works,
# with its on-disk ids taken as host ids, so the root directory mkfs made
# shows as nobody and the container's root may not write to it; loopfs-run
# says so once and names --fuse. With --fuse ext4=fuse2fs its root writes
# there, and the container's ids are on disk after a remount.
test_own_ext4_unmapped() {
	local out img=$S/own.img
	fuse_ready
	out=$(run --map 1000:$((CUID + 1)):1 -- sh -c "
		set -e
		truncate -s 64M $img
		mkfs.ext4 -q -F $img
		mount -o loop $img /mnt
		echo kernel \$(stat -c %u:%g /mnt)
		touch /mnt/x 2>/dev/null || echo write refused
		grep ' /mnt ' /proc/self/mountinfo
		umount /mnt" 2>"$S/err") || true
	cat "$S/err"
	echo "$out"
	expect_in "kernel 65534:65534" "$out" "owner of the root directory in the container"
	expect_in "write refused" "$out" "the container's root writing to nobody's directory"
	case $out in *idmapped*) fail "an ID-mapped mount on a kernel without mount_setattr" ;; esac
	expect_eq 1 "$(grep -c 'ext4 cannot be ID-mapped.*--fuse' "$S/err")" "notes on stderr"
	out=$(run --fuse ext4=fuse2fs --map 1000:$((CUID + 1)):1 -- sh -c "
		set -e
		mount -o loop $img /mnt
		echo by-root >/mnt/x
		mkdir /mnt/u
		chown 1000:1000 /mnt/u
		echo first \$(stat -c %u:%g /mnt /mnt/x /mnt/u)
		umount /mnt
		mount -o loop $img /mnt
		echo again \$(stat -c %u:%g /mnt/x /mnt/u) \$(cat /mnt/x)
		umount /mnt
		fsck.ext4 -fn $img >/dev/null && echo fsck clean" 2>&1) || true
	echo "$out"
	expect_in "first 0:0 0:0 1000:1000" "$out" "owners through fuse2fs"
	expect_in "again 0:0 1000:1000 by-root" "$out" "after a remount"
	expect_in "fsck clean" "$out" "fsck.ext4 -fn"
	mount -o loop,ro "$img" "$S/mnt"
	out=$(owners "$S/mnt/x" "$S/mnt/u")
	umount "$S/mnt"
	expect_eq "0:0 1000:1000" "$out" "owners on disk"
	rm -f "$img"
}

# The kernel has ID-mapped mounts (mount_setattr(2), 5.12)
kernel_idmaps() {
	grep -q 'sys_mount_setattr$' /proc/kallsyms
}

# An image the host prepared for the container (its root directory owned by
# the container's root, host uid CUID) is mounted as before: no ID mapping,
# and the container's root owns it.
test_host_prepared_image() {
	local out img=$S/prep.img
	mkfs.ext4 -q -F -E root_owner="$CUID:$CUID" -d "$S/content" "$img" 16M
	chown "$CUID:$CUID" "$img"
	out=$(run -- sh -c "mount -o loop $img /mnt && touch /mnt/y &&
		echo owners \$(stat -c %u:%g /mnt /mnt/hello /mnt/y) &&
		grep ' /mnt ' /proc/self/mountinfo && cat /mnt/hello" 2>&1) || true
	echo "$out"
	expect_in "owners 0:0 0:0 0:0" "$out" "owners in the container"
	expect_in "hello from loopfs" "$out" "file"
	rm -f "$img"
}

# The image's root directory owner picks the mapping, and the container
# writes its images: it makes one look host-prepared (root directory owned
# by its own host uid, read from /proc/self/uid_map), holding a setuid file
# of on-disk uid 0 and one of another host user.  Mounted for it, neither
# shows as host root's or the other user's: not in the container, not to
# host root looking in through /proc/PID/root.
test_forged_host_image_no_foreign_ids() {
	local out cpid other=$((CUID + 7))
	rm -f "$S/cpid" "$S/looked"
	(
		for _ in $(seq 300); do [ -s "$S/cpid" ] && break; sleep 0.1; done
		cpid=$(cat "$S/cpid" 2>/dev/null) || exit 0
		stat -c '%n %u' "/proc/$cpid/root/mnt/rootfile" "/proc/$cpid/root/mnt/otherfile" \
			>"$S/host-view" 2>&1
		touch "$S/looked"
	) &
	out=$(run -- sh -c "hu=\$(awk 'NR == 1 { print \$2 }' /proc/self/uid_map)
		truncate -s 16M $S/forged.img
		mkfs.ext4 -q -F -E root_owner=\$hu:\$hu $S/forged.img
		printf '%s\n' 'write /etc/hostname rootfile' 'sif rootfile uid 0' \
			'sif rootfile mode 0104755' 'write /etc/hostname otherfile' \
			'sif otherfile uid $other' | debugfs -w -f - $S/forged.img >/dev/null 2>&1
		mount -o loop $S/forged.img /mnt || exit 1
		stat -c '%n %u' /mnt /mnt/rootfile /mnt/otherfile
		echo \$\$ >$S/cpid
		for i in \$(seq 100); do [ -e $S/looked ] && break; sleep 0.1; done
		umount /mnt" 2>&1) || true
	echo "$out"
	cat "$S/host-view"
	expect_in "/mnt 0" "$out" "the forged image's root directory, its host uid, shows as the container's root"
	expect_in "/mnt/rootfile 65534" "$out" "on-disk uid 0 in the container"
	expect_in "/mnt/otherfile 65534" "$out" "another host user's uid in the container"
	expect_in "rootfile 65534" "$(cat "$S/host-view")" "on-disk uid 0 to host root"
	expect_in "otherfile 65534" "$(cat "$S/host-view")" "another host user's uid to host root"
	rm -f "$S/forged.img"
}

# ext2 (ext4's driver under the name ext2 on these kernels) cannot be
# ID-mapped: the mount is made as before and loopfs-run says so once.
test_no_idmap_type_said_once() {
	local out
	out=$(run -- sh -c "truncate -s 16M $S/e2.img && mkfs.ext2 -q -F $S/e2.img &&
		mount -t ext2 -o loop $S/e2.img /mnt && umount /mnt &&
		mount -t ext2 -o loop $S/e2.img /mnt && echo owner \$(stat -c %u /mnt) &&
		grep ' /mnt ' /proc/self/mountinfo" 2>"$S/err") || true
	cat "$S/err"
	echo "$out"
	expect_in "owner 65534" "$out" "owner of ext2's root directory in the container"
	case $out in *idmapped*) fail "ext2 ID-mapped" ;; esac
	expect_eq 1 "$(grep -c 'ext2 cannot be ID-mapped.*--fuse' "$S/err")" "notes on stderr"
	rm -f "$S/e2.img"
}

# A root-owned 0644 image: losetup in the container falls back to a
# read-only device; the mount is read-only and loopfs-run says so, as
# mount(8) does when it falls back.
test_write_protected_said() {
	local out
	cp "$S/hostimg" "$S/ro.img"
	chown 0:0 "$S/ro.img"
	chmod 644 "$S/ro.img"
	out=$(run -- sh -c "mount -o loop $S/ro.img /mnt && cat /mnt/hello &&
		grep ' /mnt ' /proc/self/mountinfo && umount /mnt &&
		mount -o loop $S/img /mnt && echo writable" 2>"$S/err") || true
	cat "$S/err"
	echo "$out"
	expect_in "hello from loopfs" "$out" "file"
	grep -q " /mnt ro,.* - ext4 " <<<"$out" || fail "not mounted read-only"
	expect_eq 1 "$(grep -c "/mnt: WARNING: source write-protected, mounted read-only" "$S/err")" \
		"warnings on stderr"
	rm -f "$S/ro.img"
}

# loopfs-run started in a directory that the container's root may not
# search (as /root): mounts naming absolute paths work, kernel and FUSE.
test_unsearchable_cwd() {
	local out
	fuse_ready
	mkdir -m 700 "$S/private"
	out=$(cd "$S/private" && run --fuse ext2=fuse2fs -- sh -c "
		mount -o loop $S/img /mnt && cat /mnt/hello && umount /mnt &&
		mount -t ext2 -o loop $S/img /mnt && cat /mnt/hello" 2>&1) || true
	echo "$out"
	expect_eq 2 "$(grep -c "hello from loopfs" <<<"$out")" "files read through both mounts"
}

test_not_root_said() {
	local out rc=0
	out=$(setpriv --reuid 65534 --regid 65534 --clear-groups "$RUN" --uid "$CUID" -- true 2>&1) || rc=$?
	echo "$out"
	expect_eq 125 "$rc" "exit status"
	expect_eq "loopfs-run: must run as root (it mounts for the container)" "$out" "message"
}

test_usage_version() {
	local out ver
	out=$("$RUN" --help)
	expect_in "usage: loopfs-run [options] [--] [COMMAND [ARG...]]" "$out" "usage line"
	expect_in "--version" "$out" "--version listed"
	ver=$(sed -n 's/^PACKAGE_VERSION="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$here/../../dkms.conf")
	expect_eq "loopfs-run $ver" "$("$RUN" --version)" "--version"
}

tap_plan 43
run_test "mount -o loop in the container (losetup -f; mount -o loop IMG /mnt; cat) prints the file" test_mount_o_loop
run_test "/dev holds a fresh instance: loop-control and loop0..N-1 links, container-root nodes, max=N" test_dev_layout
run_test "mounting a host block device (stock loop, guest disk) is refused with EPERM and logged" test_host_disk_refused
run_test "mounting a device of another loopfs instance is refused with EPERM" test_other_instance_refused
run_test "the container's /sys/block is its instance's view: losetup -a/-D and lsblk see only its devices" test_sysblock_view
run_test "a filesystem type outside --allow-fs is refused with EPERM" test_fs_type_refused
run_test "an option naming another device (journal_dev) is refused with EPERM" test_bad_options_refused
run_test "a caller without CAP_SYS_ADMIN in its namespace is refused with EPERM" test_no_cap_refused
run_test "a tmpfs mount in the container succeeds through CONTINUE" test_tmpfs_continue
run_test "the new mount API (fsopen) fails with ENOSYS in the container" test_new_api_enosys
run_test "supervised mounts are nosuid,nodev (locked), show the caller's source, umount by device" test_flags_locked
run_test "mount(2) of a link /dev/sda to the container's loop0: its mountinfo source is /dev/loopfs/loop0, not /dev/sda" test_source_names_its_device
run_test "racing thread rewriting the source (instance dev vs host disk): never a wrong mount" test_race_block
run_test "racing thread rewriting the source (non-block vs host disk, CONTINUE path): nothing mounted" test_race_continue
run_test "--fuse ext4=fuse2fs mounts and reads the same image" test_fuse2fs
run_test "a FUSE helper that exits 0 without mounting: mount(2) fails and says so" test_fuse_helper_mounted_nothing
run_test "after COMMAND exits: no loop devices, mounts, processes or charges left" test_nothing_left
run_test "when the supervisor dies, the container's mount(2) fails with ENOSYS instead of hanging" test_supervisor_death
run_test "--pid: COMMAND is PID 1 and mount -o loop works there" test_pid_ns
run_test "paths are resolved against the caller's cwd (relative target)" test_caller_cwd
run_test "a mount from a nested mount namespace lands in that namespace" test_nested_ns
run_test "container root in a user namespace of its own is refused with EPERM" test_nested_userns_refused
run_test "a container user mounts none of root's 0600 device: not through its own user namespace, not with CAP_SYS_ADMIN alone (EPERM)" test_user_cannot_mount_roots_device
run_test "mount(2) through the i386 ABI (int 0x80) is supervised the same way" test_compat_abi
run_test "an ext4 error on an image that asks for panic remounts it read-only, never panics the host" test_fs_error_no_panic
run_test "an image whose default options say warn_on_error: its error is no kernel WARNING; -o warn_on_error is refused" test_fs_error_no_warning
run_test "errors=panic is refused with EPERM and logged (mount -o loop,errors=panic; ext4, vfat)" test_errors_panic_refused
run_test "remount,errors=panic of a supervised mount is refused by the kernel" test_remount_errors_panic_refused
run_test "an image naming a host device as external journal: the mount fails, the device is untouched" test_external_journal_confined
run_test "COMMAND exits while mount(2) resolves a path on a stalled FUSE mount: all gone within 10 s" test_stalled_fuse_target
run_test "COMMAND exits while mount(2)'s source string lies in a stalled FUSE mapping: all gone within 10 s" test_stalled_fuse_mapped_source
run_test "a stalled write, LOOP_SET_BLOCK_SIZE and remove of loop1 hold up neither the supervisor's next mount nor host root's open; all gone within 10 s" test_stalled_ioctl_remove
run_test "a resolver stalled by the container's FUSE mount is bounded: mount(2) fails with ETIMEDOUT" test_stalled_resolver_times_out
run_test "a device backed by a file on the container's FUSE mount: read by the container and mounted for it, same data" test_fuse_backed_device_reads
run_test "SIGKILL to the supervisor's process group while a kernel-mount helper is confined: its cgroup is removed within 10 s" test_supervisor_killed_cgroup_removed
if kernel_idmaps; then
	run_test "ext4 made in the container: mount -o loop, written as its root and a mapped user, remounted, fsck clean, its ids on disk" test_own_ext4_round_trip
else
	run_test "no ID-mapped mounts: ext4 made in the container mounts as nobody's, said once; --fuse ext4=fuse2fs writes its ids" test_own_ext4_unmapped
fi
run_test "an image the host prepared for the container (root_owner=host uid) shows the ids it had, and the container's files get them" test_host_prepared_image
if kernel_at_least 5.12; then
	run_test "a forged 'host-prepared' image (root owned by the container's host uid): its host root and other-user files show as nobody, also to host root" test_forged_host_image_no_foreign_ids
else
	skip_test "a forged 'host-prepared' image: its foreign ids show as nobody" \
		"no ID-mapped mounts before 5.12: every image keeps its on-disk ids as host ids"
fi
run_test "a type that cannot be ID-mapped (ext2) is mounted as before, with one note on stderr" test_no_idmap_type_said_once
run_test "a write-protected image is mounted read-only with a warning on stderr" test_write_protected_said
run_test "started in a directory the container cannot search: mounts of absolute paths work" test_unsearchable_cwd
run_test "started by a non-root user: a message saying root is needed, exit 125" test_not_root_said
run_test "--help shows COMMAND as optional, --version prints the package version" test_usage_version
tap_done
