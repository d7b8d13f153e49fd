#!/bin/bash
# loopfs-timeout: 600
# LXC gives a container a loopfs instance of its own through
# tools/oci/loopfs-oci-hook run as lxc.hook.autodev: privileged and
# unprivileged (root-started, with an id map) containers on a rootfs made
# of the host's /usr and /etc, no network.  Runs as root in a guest.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
in_private_mount_ns "$@"

w=$(mktemp -d /tmp/loopfs-lxc.XXXXXX)
chmod 755 "$w"
# The id range an unprivileged container's root and users map to.
idbase=300000

cleanup() {
	local c
	for c in priv unpriv badmax; do
		lxc-stop -n "$c" -k >/dev/null 2>&1
	done
	[ -n "${hostdev:-}" ] && losetup -d "$hostdev" 2>/dev/null
	true
}
trap cleanup EXIT

# write_config NAME [CONFIG LINE...]: a container on the shared rootfs
# whose autodev hook gives it an instance of max=4 and whose device cgroup
# lets it open the instance's nodes.
write_config() {
	local name=$1 b c
	shift
	read -r b c < <(loopfs_majors)
	mkdir -p "/var/lib/lxc/$name"
	{
		echo "lxc.include = /usr/share/lxc/config/common.conf"
		echo "lxc.uts.name = $name"
		echo "lxc.rootfs.path = dir:$w/rootfs-$name"
		echo "lxc.net.0.type = empty"
		echo "lxc.apparmor.profile = unconfined"
		echo "lxc.autodev = 1"
		echo "lxc.hook.autodev = $hook max=4"
		echo "lxc.cgroup2.devices.allow = b $b:* rw"
		echo "lxc.cgroup2.devices.allow = c $c:* rw"
		echo "lxc.init.cmd = /bin/sleep 600"
		printf '%s\n' "$@"
	} >"/var/lib/lxc/$name/config"
}

setup() {
	mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
	command -v lxc-start >/dev/null || fail "lxc is not installed"
	mount -t tmpfs -o mode=0755 tmpfs /var/lib/lxc
	modprobe overlay
	# LXC maps ids with newuidmap, which needs root's subordinate ids:
	# docs/containers.md's command, on a writable /etc of this mount
	# namespace only (the guest's root is read-only).
	mkdir "$w/etc-up" "$w/etc-work"
	mount -t overlay overlay \
		-o "lowerdir=/etc,upperdir=$w/etc-up,workdir=$w/etc-work" /etc ||
		fail "no writable /etc"
	usermod --add-subuids 300000-365535 --add-subgids 300000-365535 root
	grep -qx "root:$idbase:65536" /etc/subuid || fail "/etc/subuid: $(cat /etc/subuid)"
	make_rootfs "$w/rootfs-priv"
	make_rootfs "$w/rootfs-unpriv"
	chown "$idbase:$idbase" "$w/rootfs-unpriv"/{tmp,root,mnt,run,var}
	write_config priv
	write_config unpriv "lxc.idmap = u 0 $idbase 65536" \
		"lxc.idmap = g 0 $idbase 65536"
	truncate -s 8M "$w/hostimg"
	hostdev=$(losetup --show -f "$w/hostimg")
}

# Inside a container: losetup, mkfs, mount -o loop (if it may), listing.
inside='
truncate -s 32M /tmp/img
echo "control $(readlink /dev/loop-control)"
echo "partition links $(readlink /dev/loop0p1) $(ls /dev | grep -c "^loop[0-9]*p")"
echo "bound $(losetup --show -f /tmp/img)"
printf lxc-data | dd of=/dev/loop0 conv=fsync status=none
echo "file $(head -c 8 /tmp/img)"
echo "list $(losetup -l -n -O NAME,BACK-FILE | tr -s " " | tr "\n" ";")"
echo "sysblock $(ls /sys/block | tr "\n" " ")"
mkfs.ext4 -q -F /tmp/img
mkdir -p /tmp/m
if mount -o loop /tmp/img /tmp/m 2>/dev/null; then
	echo hello >/tmp/m/f
	echo "mounted $(findmnt -n -o SOURCE /tmp/m)"
	umount /tmp/m
else
	echo "mount refused"
fi
losetup -D
echo "after-D $(losetup -l -n | wc -l)"
'

# run_container NAME: start it, run $inside, stop it; nothing may be left.
run_container() {
	local name=$1 disks out pid
	disks=$(loopfs_disks | wc -l)
	if ! lxc-start -n "$name" -l INFO -o "$w/$name.log"; then
		grep ERROR "$w/$name.log"
		fail "lxc-start $name"
		return 1
	fi
	lxc-wait -n "$name" -s RUNNING -t 30 || { fail "$name is not running"; return 1; }
	pid=$(lxc-info -n "$name" -p -H)
	echo "owner $(stat -c %u "/proc/$pid/root/dev/loopfs/loop-control")"
	lxc-attach -n "$name" -- bash -c "$inside" 2>&1
	lxc-stop -n "$name" -k || { fail "lxc-stop $name"; return 1; }
	wait_for_disks "$disks" ||
		{ fail "devices left: $(loopfs_disks | tr '\n' ' ')"; return 1; }
}

privileged() {
	local out
	out=$(run_container priv) || { echo "$out"; return 1; }
	echo "$out"
	expect_in "owner 0" "$out" "loop-control's owner on the host"
	expect_in "control loopfs/loop-control" "$out" "/dev/loop-control"
	# max=4 devices, 15 partitions each (the default).
	expect_in "partition links loopfs/loop0p1 60" "$out" "/dev/loop<N>p<M>"
	expect_in "bound /dev/loop0" "$out" "losetup --show -f"
	expect_in "file lxc-data" "$out" "raw write through the device"
	expect_in "list /dev/loop0 /tmp/img;" "$out" "losetup -l"
	expect_in "sysblock loop0 
" "$out" "/sys/block"
	expect_in "mounted /dev/loop0" "$out" "mount -o loop"
	expect_in "after-D 0" "$out" "losetup -D"
}

unprivileged() {
	local out
	out=$(run_container unpriv) || { echo "$out"; return 1; }
	echo "$out"
	expect_in "owner $idbase" "$out" "loop-control's owner on the host"
	expect_in "bound /dev/loop0" "$out" "losetup --show -f"
	expect_in "file lxc-data" "$out" "raw write through the device"
	expect_in "list /dev/loop0 /tmp/img;" "$out" "losetup -l"
	expect_in "mount refused" "$out" "ext4 in a user namespace"
	expect_in "after-D 0" "$out" "losetup -D"
}

# A bad max= stops the container; LXC logs the hook's output only at DEBUG,
# so the hook's reason, naming the max= the user wrote, is in dmesg.
bad_max() {
	local mark log
	write_config badmax
	sed -i -e "s|^lxc.hook.autodev = .*|lxc.hook.autodev = $hook max=abc|" \
		-e "s|^lxc.rootfs.path = .*|lxc.rootfs.path = dir:$w/rootfs-priv|" \
		/var/lib/lxc/badmax/config
	mark=$(dmesg | wc -l)
	if lxc-start -n badmax -l INFO -o "$w/badmax.log"; then
		lxc-stop -n badmax -k
		fail "the container started with max=abc"
	fi
	grep -i "error\|hook" "$w/badmax.log" | tail -n 5
	log=$(dmesg | tail -n +$((mark + 1)))
	echo "$log"
	expect_in "loopfs-oci-hook: container badmax: max=abc is not a number" "$log" "dmesg"
	expect_eq 0 "$(findmnt -n -t loop | wc -l)" "loopfs mounts"
}

tap_plan 4
run_test "set-up: LXC configuration for a privileged and an unprivileged container" setup
run_test "privileged: instance owned by host root; losetup, raw I/O, mount -o loop; only its devices listed; nothing left after lxc-stop" privileged
run_test "unprivileged: instance owned by the container's root (uid $idbase); losetup and raw I/O; ext4 refused; nothing left after lxc-stop" unprivileged
run_test "max=abc in lxc.hook.autodev stops the container; dmesg says why, naming max=" bad_max
tap_done
