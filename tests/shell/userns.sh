#!/bin/bash
# The real losetup inside an unprivileged user namespace: the
# unprivileged uid runs `unshare -Urm`, mounts a loopfs instance on a private
# /dev, and uses losetup on a file it owns; the host root's instance stays
# out of its reach.
set -uo pipefail
. "$(dirname "$0")/../lib/suite.sh"
in_private_mount_ns "$@"

uid=${LOOPFS_UNPRIV_UID:-1000}
w=$(mktemp -d /tmp/loopfs-sh-userns.XXXXXX)
chmod 0755 "$w"
mkdir "$w/u" && chown "$uid:$uid" "$w/u"
res=$w/u/results

# Runs as root of the user namespace; records "step ok" or "step FAIL why".
{
declare -f userns_private_dev record_step
cat <<'INNER'
set -uo pipefail
export w=$1 u=$1/u res=$1/u/results
export -f userns_private_dev
private_dev() {
	userns_private_dev
	[ "$(stat -c %u:%g:%a /dev/loopfs/loop-control)" = 0:0:600 ]
}
losetup_f() {
	dev=$(losetup --show -f "$u/img")
	[ "$dev" = /dev/loop0 ] || { echo "got $dev"; return 1; }
	[ "$(stat -L -c %u:%g /dev/loop0)" = 0:0 ]
	cmp "$u/img" /dev/loop0
}
write_through() {
	dd if="$u/chunk" of=/dev/loop0 bs=4096 seek=16 conv=notrunc,fsync status=none
	cmp -n 65536 -i 65536:0 "$u/img" "$u/chunk"
}
offset_device() {
	dev=$(losetup --show -f -o 8192 --sizelimit 1048576 "$u/img")
	[ "$(blockdev --getsize64 "$dev")" = 1048576 ]
	cmp -n 1048576 -i 8192:0 "$u/img" "$dev"
	losetup -b 4096 "$dev"
	[ "$(blockdev --getss "$dev")" = 4096 ]
	losetup -d "$dev"
}
detach() {
	losetup -d /dev/loop0
	# no /dev/null: the bound host node cannot be opened in here, and a
	# failed redirection would pass for a failed losetup
	if out=$(losetup /dev/loop0 2>&1); then return 1; fi
}
# Opening a node of the host root's instance must fail with EACCES: the
# nodes exist and are visible (so ENOENT, from a wrong path, is a failure
# too), but they are 0600 root and the namespace root has no capability
# over the host's uid 0.
open_fails_eacces() {
	local node=$1 mode=$2 out
	if out=$( { eval "exec 3$mode\"\$node\""; } 2>&1); then
		echo "opened $node ($mode)"; return 1
	fi
	case $out in
	*"$node: Permission denied") return 0 ;;
	esac
	echo "open $node ($mode) failed otherwise: $out"; return 1
}
export -f open_fails_eacces
host_instance_denied() {
	[ -b "$w/host/loop0" ] || { echo "no block node $w/host/loop0"; return 1; }
	[ -c "$w/host/loop-control" ] || { echo "no char node $w/host/loop-control"; return 1; }
	open_fails_eacces "$w/host/loop0" "<"
	open_fails_eacces "$w/host/loop0" "<>"
	open_fails_eacces "$w/host/loop-control" "<>"
	open_fails_eacces "$w/host/loop-control" "<"
}
record_step private_dev
record_step losetup_f
record_step write_through
record_step offset_device
record_step detach
record_step host_instance_denied
INNER
} >"$w/inner.sh"

prepare() {
	head -c 4M /dev/urandom >"$w/u/img"
	head -c 65536 /dev/urandom >"$w/u/chunk"
	chown "$uid:$uid" "$w/u/img" "$w/u/chunk"
	mkdir "$w/host"
	mount -t loop loop "$w/host"
	# loop0 in the host-owned instance: losetup -f's GET_FREE through a
	# bind of its loop-control (this namespace only) creates it.
	mount --bind "$w/host/loop-control" /dev/loop-control
	losetup -f >/dev/null
	umount /dev/loop-control
	[ -b "$w/host/loop0" ] || fail "could not create loop0 in the host instance"
	setpriv --reuid="$uid" --regid="$uid" --clear-groups \
		unshare -Urm bash "$w/inner.sh" "$w"
	[ -s "$res" ] || fail "the user-namespace script recorded nothing"
	cat "$res"
}

STEP_RESULTS=$res

tap_plan 7
run_test "unprivileged uid runs unshare -Urm with a loopfs-backed /dev" prepare
run_test "instance nodes are owned by the namespace root, 0600" step_ok private_dev
run_test "losetup --show -f on an own file gives /dev/loop0 with the file's data" step_ok losetup_f
run_test "writes through the device reach the file" step_ok write_through
run_test "losetup -o/--sizelimit and -b 4096 work for the namespace root" step_ok offset_device
run_test "losetup -d detaches" step_ok detach
run_test "the host root's instance is out of reach" step_ok host_instance_denied
umount -l "$w/host" 2>/dev/null
rm -rf "$w"
tap_done
