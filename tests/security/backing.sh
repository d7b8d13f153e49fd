#!/bin/bash
# shellcheck disable=SC2016  # tenant scripts expand in the tenant
# What a backing file may be and what I/O through it may do, attacked by a
# tenant: the unprivileged uid as root of its own user namespace
# (`unshare -Urm`), with its own instance. Each tenant run mounts a fresh
# instance, takes a device with LOOP_CTL_GET_FREE and prints what the
# loop(4) calls answered (tests/security/backing-bind.c); the host side
# then checks the files.
set -uo pipefail
. "${LOOPFS_SRC:-$(dirname "$0")/../..}/tests/shell/lib.sh"
in_private_mount_ns "$@"

uid=${LOOPFS_UNPRIV_UID:-1000}
B=${LOOPFS_BUILD:-$(dirname "$0")/../../.build}/tests/security/backing-bind
w=$(mktemp -d /tmp/loopfs-sec-backing.XXXXXX)
chmod 0755 "$w"
export B w

# tenant SCRIPT: run SCRIPT (bash) as the tenant, $D being a free device of
# a fresh instance of its own; prints what SCRIPT printed.
tenant() {
	setpriv --reuid="$uid" --regid="$uid" --clear-groups \
		unshare -Urm bash -c '
			mount -t loop loop "$w/mnt" || exit 1
			n=$("$B" getfree "$w/mnt/loop-control") || exit 1
			D=$w/mnt/loop$n
			'"$1" 2>&1
}

# expect_tenant EXPECTED SCRIPT
expect_tenant() {
	local out
	out=$(tenant "$2")
	echo "tenant printed: $(echo "$out" | tr '\n' '|')"
	expect_eq "$1" "$out" "tenant output"
}

setup() {
	mkdir "$w/mnt" "$w/ext4" "$w/nx"
	# A file the tenant may write but not read.
	{ printf SECRET; head -c 1048570 /dev/zero; } >"$w/secret"
	chmod 0002 "$w/secret"
	{ printf OWNOWN; head -c 1048570 /dev/zero; } >"$w/own"
	chown "$uid:$uid" "$w/own"
	head -c 65536 /dev/zero >"$w/app"
	chown "$uid:$uid" "$w/app"
	head -c 65536 /dev/zero >"$w/imm"
	chown "$uid:$uid" "$w/imm"
	# ext4 through the stock loop driver, for chattr +a, setuid and swap.
	truncate -s 32M "$w/ext4.img"
	mkfs.ext4 -q -F "$w/ext4.img"
	mount -o loop "$w/ext4.img" "$w/ext4"
	chmod 0755 "$w/ext4"
	head -c 65536 < <(yes LOG) >"$w/ext4/log"
	chmod 0666 "$w/ext4/log"
	chattr +a "$w/ext4/log"
	head -c 65536 /dev/zero >"$w/ext4/suid"
	chown 2000:2000 "$w/ext4/suid"
	chmod 06777 "$w/ext4/suid"
	head -c 1048576 /dev/zero >"$w/ext4/swap"
	chmod 0600 "$w/ext4/swap"
	mkswap -q "$w/ext4/swap" >/dev/null
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

# Item: a device never reads through an fd without read access.
wronly_setfd() {
	expect_tenant EBADF '"$B" setfd "$D" "$w/secret" w; head -c 6 "$D"'
}

wronly_configure() {
	expect_tenant EBADF '"$B" configure "$D" "$w/secret" w; head -c 6 "$D"'
}

wronly_append_configure() {
	expect_tenant EBADF '"$B" configure "$D" "$w/secret" a; head -c 6 "$D"'
}

wronly_change_fd() {
	expect_tenant "$(printf 'ok ro=1\nEBADF\nOWNOWN')" \
		'"$B" setfd "$D" "$w/own" r; "$B" change "$D" "$w/secret" w
		 head -c 6 "$D"'
}

# Item: writes that would not land at their offset give a read-only device.
append_fd() {
	local before
	before=$(md5sum <"$w/app")
	expect_tenant "$(printf 'ok ro=1\nEPERM')" \
		'"$B" configure "$D" "$w/app" ra; "$B" write "$D" 0 XXXX'
	expect_eq "$before" "$(md5sum <"$w/app")" "file after device write"
}

append_only_attr() {
	local before
	before=$(md5sum <"$w/ext4/log")
	expect_tenant "$(printf 'ok ro=1\nEPERM')" \
		'"$B" configure "$D" "$w/ext4/log" ra; "$B" write "$D" 0 XXXX'
	expect_eq "$before" "$(md5sum <"$w/ext4/log")" "file after device write"
}

# The tenant opens its own file read-write; the host makes it immutable
# before the tenant binds it.
immutable_attr() {
	local before out i
	before=$(md5sum <"$w/imm")
	tenant 'BIND_WAIT=$w/imm "$B" configure "$D" "$w/imm" rw
		"$B" write "$D" 0 XXXX' >"$w/imm.out" &
	for ((i = 0; i < 100; i++)); do
		[ -e "$w/imm.opened" ] && break
		sleep 0.1
	done
	chattr +i "$w/imm"
	touch "$w/imm.go"
	wait $!
	chattr -i "$w/imm"
	out=$(cat "$w/imm.out")
	echo "tenant printed: $(echo "$out" | tr '\n' '|')"
	expect_eq "$(printf 'ok ro=1\nEPERM')" "$out" "tenant output"
	expect_eq "$before" "$(md5sum <"$w/imm")" "file after device write"
}

# A read-only fd gives a read-only device whatever LOOP_CONFIGURE asks.
rdonly_fd() {
	local before
	before=$(md5sum <"$w/own")
	expect_tenant "$(printf 'ok ro=1\nEPERM')" \
		'"$B" configure "$D" "$w/own" r; "$B" write "$D" 0 XXXX'
	expect_eq "$before" "$(md5sum <"$w/own")" "file after device write"
}

# Writes through the device strip setuid/setgid as the tenant's own write()
# would: the worker serving them must not lend its capabilities.
setuid_stripped() {
	expect_tenant "$(printf 'ok ro=0\nok')" \
		'"$B" configure "$D" "$w/ext4/suid" rw; "$B" write "$D" 0 XXXX'
	expect_eq XXXX "$(head -c 4 "$w/ext4/suid")" "file start"
	expect_eq 777 "$(stat -c %a "$w/ext4/suid")" "mode after device write"
}

# As in-tree: mount flags of the backing file's filesystem do not matter
# (the device moves data; nosuid/noexec apply to what is mounted from it).
noexec_nosuid_mount() {
	expect_tenant "$(printf 'ok ro=0\nok')" \
		'"$B" configure "$D" "$w/nx/f" rw; "$B" write "$D" 0 XXXX'
	expect_eq XXXX "$(head -c 4 "$w/nx/f")" "file start"
}

# As in-tree: an active swap file binds and reads, but every write through
# the device fails (the filesystem refuses writes to swap files).
swap_file() {
	local before
	before=$(md5sum <"$w/ext4/swap")
	expect_tenant "$(printf 'ok ro=0\nSWAPSPACE2\nEIO')" \
		'"$B" configure "$D" "$w/ext4/swap" rw
		 head -c 4096 "$D" | tail -c 10; echo
		 "$B" write "$D" 0 XXXX'
	expect_eq "$before" "$(md5sum <"$w/ext4/swap")" "file after device write"
}

nr_disks() { find /sys/block -maxdepth 1 -name 'loopfs*' | wc -l; }

# Every tenant's instance went with its mount namespace.
nothing_left() {
	local i
	for ((i = 0; i < 30; i++)); do
		[ "$(nr_disks)" -le "$disks_before" ] && return 0
		sleep 0.1
	done
	fail "$(nr_disks) loopfs disks, $disks_before before the suite"
}

cleanup() {
	swapoff "$w/ext4/swap" 2>/dev/null
	umount "$w/nx" 2>/dev/null
	umount "$w/ext4" 2>/dev/null
	rm -rf "$w"
}

disks_before=$(nr_disks)
tap_plan 13
run_test "host side: files, ext4 via the stock driver, active swap file" setup
run_test "LOOP_SET_FD with an O_WRONLY fd: EBADF, nothing read" wronly_setfd
run_test "LOOP_CONFIGURE with an O_WRONLY fd: EBADF, nothing read" wronly_configure
run_test "LOOP_CONFIGURE with an O_WRONLY|O_APPEND fd: EBADF" wronly_append_configure
run_test "LOOP_CHANGE_FD to an O_WRONLY fd: EBADF, old file still served" wronly_change_fd
run_test "O_RDWR|O_APPEND fd: read-only device, write at 0 refused" append_fd
run_test "append-only file (chattr +a, ext4): read-only device, file unchanged" append_only_attr
run_test "file made immutable after open (chattr +i): read-only device, file unchanged" immutable_attr
run_test "O_RDONLY fd with LO_FLAGS_READ_ONLY clear: read-only device" rdonly_fd
run_test "worker writes strip setuid/setgid like the tenant's own write" setuid_stripped
run_test "file on a noexec,nosuid mount binds read-write (as in-tree)" noexec_nosuid_mount
run_test "active swap file binds (as in-tree), device writes fail with EIO" swap_file
run_test "no loopfs disk left after the tenants exit" nothing_left
cleanup
tap_done
