#!/bin/bash
# Partition nodes of an instance follow the device's partition table: made
# by a scan (losetup -P, LOOP_CONFIGURE), by BLKPG (parted, partx) and by
# BLKRRPART (blockdev --rereadpt) before the call returns, gone when the
# partition is (partx -d, losetup -d, the last close of an autoclear
# device), with no listing of the instance in between; watchers of the
# instance hear of them. Then the same in a container-like layout (tmpfs
# /dev linked into the instance, the views bound over /sys/block and
# /sys/dev/block): parted, lsblk, mkfs.vfat on /dev/loop0p1 and a mount;
# and as the unprivileged uid in unshare -Urm (partition scanning allowed
# for containers, the default), where BLKPG is refused and the scan,
# mkfs.vfat and the clear work.
# loopfs-timeout: 300
set -uo pipefail
. "$(dirname "$0")/../lib/suite.sh"
in_private_mount_ns "$@"

uid=${LOOPFS_UNPRIV_UID:-1000}
work=$(mktemp -d /tmp/loopfs-partitions.XXXXXX)
chmod 0755 "$work"
lf=$work/lf
img=$work/parts.img

# Every name in the instance, listed (a listing syncs the nodes itself, so
# the tests look with stat first and list only afterwards).
nodes() { (cd "$lf" && ls -1 | tr '\n' ' '); }

# present NODE...: each is a block node, found by lookup alone.
present() {
	local n
	for n; do
		[ -b "$n" ] || fail "no block node $n"
	done
}

# absent NODE...: none of them is there, by lookup alone.
absent() {
	local n
	for n; do
		if [ -e "$n" ] || [ -L "$n" ]; then fail "$n is still there"; fi
	done
}

# LOOP_CONFIGURE of device $1 with $2 as backing file, autoclear and
# partition scan; checks that node $3 exists while the device is open and
# is gone once close() of the only opener returns.
cat >"$work/autoclear.py" <<'PY'
import fcntl, os, struct, sys
dev, img, node = sys.argv[1:4]
LOOP_CONFIGURE = 0x4C0A
LO_FLAGS_AUTOCLEAR, LO_FLAGS_PARTSCAN = 4, 8
fd = os.open(dev, os.O_RDWR)
bfd = os.open(img, os.O_RDWR)
info = struct.pack("=5Q4I64s64s32s2Q", 0, 0, 0, 0, 0, 0, 0, 0,
                   LO_FLAGS_AUTOCLEAR | LO_FLAGS_PARTSCAN, b"", b"", b"", 0, 0)
assert len(info) == 232
fcntl.ioctl(fd, LOOP_CONFIGURE, struct.pack("=II", bfd, 0) + info + bytes(64))
os.close(bfd)
if not os.path.exists(node):
    sys.exit("no %s while the device is open" % node)
os.close(fd)
if os.path.lexists(node):
    sys.exit("%s still there when the last close returned" % node)
PY

# Watch directory $1 for creations and deletions; touch $2 once watching;
# print the first $3 events ("CREATE name", "DELETE name") on one line, or
# what came within 10 s.
cat >"$work/watch.py" <<'PY'
import ctypes, os, select, struct, sys
IN_CREATE, IN_DELETE = 0x100, 0x200
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
if fd < 0 or libc.inotify_add_watch(fd, sys.argv[1].encode(), IN_CREATE | IN_DELETE) < 0:
    sys.exit("inotify: errno %d" % ctypes.get_errno())
open(sys.argv[2], "w").close()
want, got = int(sys.argv[3]), []
while len(got) < want:
    if not select.select([fd], [], [], 10)[0]:
        break
    buf, off = os.read(fd, 4096), 0
    while off < len(buf):
        _, mask, _, n = struct.unpack_from("iIII", buf, off)
        name = buf[off + 16:off + 16 + n].rstrip(b"\0").decode()
        got.append(("CREATE " if mask & IN_CREATE else "DELETE ") + name)
        off += 16 + n
print(" ".join(got))
PY

# ---- an instance as the host uses it ----

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
	present "$lf/loop0p1" "$lf/loop0p2" "$lf/loop0p3"
	expect_eq 600 "$(stat -c %a "$lf/loop0p2")" "partition node mode"
	expect_eq "block dev-block loop-control loop0 loop0p1 loop0p2 loop0p3 " "$(nodes)" "nodes after losetup -P"
}

blkpg_delete_drops_the_node() {
	partx -d --nr 2 "$lf/loop0"
	absent "$lf/loop0p2"
	present "$lf/loop0p1" "$lf/loop0p3"
	expect_eq "block dev-block loop-control loop0 loop0p1 loop0p3 " "$(nodes)" "nodes after partx -d 2"
}

blkpg_add_brings_the_node_back() {
	partx -a --nr 2 "$lf/loop0"
	present "$lf/loop0p2"
	dd if="$lf/loop0p2" of=/dev/null bs=4k count=1 status=none
	expect_eq "block dev-block loop-control loop0 loop0p1 loop0p2 loop0p3 " "$(nodes)" "nodes after partx -a 2"
}

# Through the host's node no node of the instance is involved: the sync
# work follows soon after, still without a listing.
host_node_blkpg_follows() {
	local host i
	host=/dev/$(disk_name "$lf/loop0")
	[ -b "$host" ] || fail "no host node $host"
	partx -d --nr 3 "$host"
	wait_gone "$lf/loop0p3" 3 || fail "loop0p3 outlived its partition by 3 s"
	partx -a --nr 3 "$host"
	for ((i = 0; i < 30; i++)); do
		[ -b "$lf/loop0p3" ] && break
		sleep 0.1
	done
	present "$lf/loop0p3"
}

# A table written without telling the kernel changes nothing until
# BLKRRPART, whose return finds the nodes in step.
blkrrpart_nodes_follow() {
	printf 'label: gpt\n,8M\n,8M\n,8M\n,8M\n' |
		sfdisk -q --no-reread --no-tell-kernel "$lf/loop0"
	absent "$lf/loop0p4"
	blockdev --rereadpt "$lf/loop0"
	present "$lf/loop0p1" "$lf/loop0p2" "$lf/loop0p3" "$lf/loop0p4"
	expect_eq $((8 << 20)) "$(blockdev --getsize64 "$lf/loop0p3")" "size of the rescanned loop0p3"
	printf 'label: gpt\n,24M\n' | sfdisk -q --no-reread --no-tell-kernel "$lf/loop0"
	blockdev --rereadpt "$lf/loop0"
	absent "$lf/loop0p2" "$lf/loop0p3" "$lf/loop0p4"
	present "$lf/loop0p1"
	expect_eq "block dev-block loop-control loop0 loop0p1 " "$(nodes)" "nodes after the second rescan"
}

watchers_see_partition_nodes() {
	local pid
	python3 "$work/watch.py" "$lf" "$work/watching" 2 >"$work/events" &
	pid=$!
	for _ in $(seq 50); do [ -e "$work/watching" ] && break; sleep 0.1; done
	[ -e "$work/watching" ] || fail "the watcher did not start"
	partx -d --nr 1 "$lf/loop0"
	partx -a --nr 1 "$lf/loop0"
	wait "$pid" || fail "the watcher failed"
	expect_eq "DELETE loop0p1 CREATE loop0p1" "$(cat "$work/events")" "inotify events of the instance"
}

clearing_the_device_removes_partition_nodes() {
	loop_detach "$lf/loop0"
	absent "$lf/loop0p1"
	expect_eq "block dev-block loop-control loop0 " "$(nodes)" "nodes after losetup -d"
}

last_close_of_autoclear_device_removes_nodes() {
	printf 'label: gpt\n,16M\n,16M\n' | sfdisk -q "$img"
	python3 "$work/autoclear.py" "$lf/loop0" "$img" "$lf/loop0p2"
	absent "$lf/loop0p1"
	expect_eq "block dev-block loop-control loop0 " "$(nodes)" "nodes after the last close"
	umount "$lf"
}

# ---- the unprivileged uid in unshare -Urm ----

# Runs as root of the user namespace; records "step ok" or "step FAIL why".
{
declare -f userns_private_dev present absent fail record_step devnum \
	loop_detach loop_detach_cmd ul_takes_loopfs_paths
cat <<'INNER'
set -uo pipefail
export w=$1 u=$1/u res=$1/u/results
export -f userns_private_dev present absent fail devnum loop_detach loop_detach_cmd \
	ul_takes_loopfs_paths
private_dev() {
	userns_private_dev
	[ -b /dev/loopfs/loop-control ] || [ -c /dev/loopfs/loop-control ]
}
scan() {
	dev=$(losetup -P --show -f "$u/img")
	[ "$dev" = /dev/loop0 ] || { echo "got $dev"; return 1; }
	present /dev/loopfs/loop0p1 /dev/loopfs/loop0p2
	[ "$(stat -c %u:%g:%a /dev/loopfs/loop0p1)" = 0:0:600 ]
}
mkfs_vfat() {
	ln -s /dev/loopfs/loop0p1 /dev/loop0p1
	mkfs.vfat /dev/loop0p1 >"$u/mkfs.log"
	fsck.vfat -n /dev/loop0p1 >"$u/fsck.log"
	[ "$(blkid -p -o value -s TYPE /dev/loop0p1)" = vfat ]
}
# BLKPG wants CAP_SYS_ADMIN in the initial namespace: refused, and the
# partition keeps its node.
blkpg_refused() {
	if partx -d --nr 2 /dev/loop0 >"$u/partx.log" 2>&1; then
		echo "partx -d succeeded"; return 1
	fi
	present /dev/loopfs/loop0p2
	[ -e "/sys/dev/block/$(devnum /dev/loopfs/loop0p2)/partition" ]
}
detach() {
	loop_detach /dev/loop0
	absent /dev/loopfs/loop0p1 /dev/loopfs/loop0p2
}
autoclear() {
	python3 "$w/autoclear.py" /dev/loop0 "$u/img" /dev/loopfs/loop0p2
	absent /dev/loopfs/loop0p1
}
# Each step a shell of its own; the mount namespace is this one's.
record_step private_dev
record_step scan
record_step mkfs_vfat
record_step blkpg_refused
record_step detach
record_step autoclear
INNER
} >"$work/inner.sh"

unprivileged() {
	mkdir "$work/u"
	truncate -s 32M "$work/u/img"
	printf 'label: gpt\n,8M\n,8M\n' | sfdisk -q "$work/u/img"
	chown -R "$uid:$uid" "$work/u"
	setpriv --reuid="$uid" --regid="$uid" --clear-groups \
		unshare -Urm bash "$work/inner.sh" "$work"
	[ -s "$work/u/results" ] || fail "the user-namespace script recorded nothing"
	cat "$work/u/results"
}

STEP_RESULTS=$work/u/results

# ---- a container's layout, as root ----

# A blank image: every partition comes from parted.
container_layout() {
	truncate -s 64M "$work/blank.img"
	setup_private_dev_with_instance 4
	mount --bind /dev/loopfs/block /sys/block
	mount --bind /dev/loopfs/dev-block /sys/dev/block
	expect_eq /dev/loop0 "$(losetup -P --show -f "$work/blank.img")" "losetup -P --show -f"
	absent /dev/loopfs/loop0p1
}

parted_makes_nodes() {
	parted -s /dev/loop0 mklabel gpt mkpart p1 1MiB 24MiB mkpart p2 24MiB 100%
	present /dev/loopfs/loop0p1 /dev/loopfs/loop0p2
	expect_eq "$(cat /sys/block/loop0/loop0p1/dev)" \
		"$(devnum /dev/loopfs/loop0p1)" "device number of loop0p1"
	expect_eq "$(cat /sys/block/loop0/loop0p2/dev)" \
		"$(devnum /dev/loopfs/loop0p2)" "device number of loop0p2"
	expect_eq 2 "$(cat /sys/block/loop0/loop0p2/partition)" "the view's partition 2"
	expect_eq "loop0 loop0p1 loop0p2" "$(lsblk -l -n -o NAME /dev/loop0 | xargs)" "lsblk"
}

mkfs_vfat() {
	ln -s /dev/loopfs/loop0p1 /dev/loop0p1
	mkfs.vfat /dev/loop0p1 >/dev/null
	fsck.vfat -n /dev/loop0p1 >/dev/null
	expect_eq vfat "$(blkid -p -o value -s TYPE /dev/loop0p1)" "type of loop0p1"
}

# vfat mounts with codepage 437 unless told otherwise; the debug kernel
# has no code pages.
vfat_mounts() { modinfo nls_cp437 >/dev/null 2>&1; }

mount_vfat() {
	mkdir -p "$work/mnt"
	mount /dev/loop0p1 "$work/mnt"
	echo partitioned >"$work/mnt/f"
	umount "$work/mnt"
	mount -o ro /dev/loop0p1 "$work/mnt"
	expect_eq partitioned "$(cat "$work/mnt/f")" "file on loop0p1 after a remount"
	umount "$work/mnt"
	fsck.vfat -n /dev/loop0p1 >/dev/null
}

partx_delete_in_container() {
	partx -d --nr 2 /dev/loop0
	absent /dev/loopfs/loop0p2
	[ ! -e /sys/block/loop0/loop0p2 ] || fail "the view still shows loop0p2"
	partx -a --nr 2 /dev/loop0
	present /dev/loopfs/loop0p2
}

detach_in_container() {
	loop_detach /dev/loop0
	absent /dev/loopfs/loop0p1 /dev/loopfs/loop0p2
}

tap_plan 21
setup
run_test "a partition scan (losetup -P) creates loop0pN block nodes, 0600" scan_makes_partition_nodes
run_test "a partition deleted with BLKPG (partx -d) has no node when partx returns" blkpg_delete_drops_the_node
run_test "a partition added with BLKPG (partx -a) has its node when partx returns" blkpg_add_brings_the_node_back
run_test "BLKPG through the host's node /dev/loopfs<ID>-<N>: the instance's node follows within 3 s, unlisted" host_node_blkpg_follows
run_test "BLKRRPART (blockdev --rereadpt) returns with the nodes of the new table, and only those" blkrrpart_nodes_follow
run_test "inotify watchers of the instance see partition nodes deleted and created" watchers_see_partition_nodes
run_test "clearing the device (losetup -d) removes its partition nodes before it returns" clearing_the_device_removes_partition_nodes
run_test "the last close of an autoclear device removes its partition nodes before close returns" last_close_of_autoclear_device_removes_nodes
run_test "unprivileged uid: unshare -Urm, an own partitioned image" unprivileged
run_test "unprivileged uid: a private /dev holding the instance" step_ok private_dev
run_test "unprivileged uid: losetup -P makes loop0p1/loop0p2 (0600, namespace root) before it returns" step_ok scan
run_test "unprivileged uid: mkfs.vfat on /dev/loop0p1, fsck.vfat clean" step_ok mkfs_vfat
run_test "unprivileged uid: BLKPG (partx -d) is refused and the node stays" step_ok blkpg_refused
run_test "unprivileged uid: losetup -d removes the partition nodes before it returns" step_ok detach
run_test "unprivileged uid: the last close of an autoclear device removes its partition nodes" step_ok autoclear
run_test "container layout: losetup -P --show -f gives /dev/loop0, views bound over /sys/block and /sys/dev/block" container_layout
run_test "container layout: parted mklabel gpt + 2 partitions; loop0p1/loop0p2 exist when parted returns, the view and lsblk name them so" parted_makes_nodes
run_test "container layout: mkfs.vfat on /dev/loop0p1 (a symlink to the node), fsck.vfat clean" mkfs_vfat
if vfat_mounts; then
	run_test "container layout: the vfat on /dev/loop0p1 mounts; a file written reads back after a remount" mount_vfat
else
	skip_test "container layout: the vfat on /dev/loop0p1 mounts; a file written reads back after a remount" "kernel built without nls_cp437"
fi
run_test "container layout: partx -d/-a of partition 2: node and view entry gone, node back, each when partx returns" partx_delete_in_container
run_test "container layout: losetup -d removes the partition nodes before it returns" detach_in_container
umount -l "$lf" 2>/dev/null
rm -rf "$work"
tap_done
