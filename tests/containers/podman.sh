#!/bin/bash
# loopfs-timeout: 600
# Podman gives a container a loopfs instance of its own through
# tools/oci/loopfs-oci-hook: as a hooks.d hook enabled by the annotation
# io.loopfs.instance=true, and as the CDI device loopfs.io/instance=default.
# Rootful and rootless, on a rootfs made of the host's /usr and /etc, with
# storage on tmpfs and no network.  Runs as root in a guest.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
in_private_mount_ns "$@"

ruid=${LOOPFS_UNPRIV_UID:-1000}
w=$(mktemp -d /tmp/loopfs-podman.XXXXXX)
chmod 755 "$w"

# The shipped hooks.d and CDI files, pointed at this tree's hook.
installed=/usr/libexec/loopfs/loopfs-oci-hook

podman_as_root() {
	podman --root "$w/storage" --runroot "$w/run" \
		--cgroup-manager cgroupfs --events-backend file \
		--hooks-dir "$w/hooks.d" "$@"
}

# The annotation that asks for an instance, and what ends every podman run:
# the rootfs is its first argument, so other options come before.  Rootful
# containers that mount filesystems are privileged: mounting ext4 needs
# CAP_SYS_ADMIN, and the device cgroup of an unprivileged one does not let
# it open loopfs's devices (docs/containers.md).
with_loopfs=(--annotation io.loopfs.instance=true)
opts=(--privileged --network none --rootfs "$w/rootfs")

cleanup() {
	podman_as_root rm -af -t 0 >/dev/null 2>&1
	# Rootless podman keeps a pause process holding its user namespace;
	# the suites after this one share the guest and that uid.
	pkill -KILL -u "$ruid" 2>/dev/null
	[ -n "${hostdev:-}" ] && losetup -d "$hostdev" 2>/dev/null
	rm -f /run/cdi/loopfs.yaml
	true
}
trap cleanup EXIT

setup() {
	cgroup2_with_controllers || fail "cgroup2 with the memory, cpu and pids controllers"
	command -v podman >/dev/null || fail "podman is not installed"
	command -v jq >/dev/null || fail "jq is not installed"
	make_rootfs "$w/rootfs"
	mkdir -p "$w/hooks.d" /run/cdi
	jq --arg p "$hook" '.hook.path = $p' "$src/tools/oci/loopfs.json" \
		>"$w/hooks.d/loopfs.json"
	sed "s|$installed|$hook|" "$src/tools/oci/loopfs.yaml" >/run/cdi/loopfs.yaml
	grep -q "path: $hook\$" /run/cdi/loopfs.yaml || fail "CDI spec names no hook"
	# The host has a bound loop device of its own that no container may see.
	truncate -s 8M "$w/hostimg"
	hostdev=$(losetup --show -f "$w/hostimg")
	podman_as_root run --rm "${opts[@]}" true || fail "podman cannot run a container"
}

# Inside a container: what losetup, mkfs and mount -o loop give.
inside_basics='
set -e
echo "control $(readlink /dev/loop-control)"
echo "free $(losetup -f)"
truncate -s 32M /tmp/$1.img
echo "bound $(losetup --show -f /tmp/$1.img)"
mkfs.ext4 -q /dev/loop0
mkdir -p /mnt/$1
mount /dev/loop0 /mnt/$1
echo data >/mnt/$1/file
umount /mnt/$1
echo "list $(losetup -l -n -O NAME,BACK-FILE | tr -s " " | sort | tr "\n" ";")"
echo "sysblock $(ls /sys/block | tr "\n" " ")"
losetup -D
echo "after-D $(losetup -a | wc -l)"
'

rootful_basics() {
	local out
	out=$(podman_as_root run --rm "${with_loopfs[@]}" "${opts[@]}" \
		bash -c "$inside_basics" - c1 2>&1)
	echo "$out"
	expect_in "control loopfs/loop-control" "$out" "/dev/loop-control"
	expect_in "free /dev/loop0" "$out" "losetup -f"
	expect_in "bound /dev/loop0" "$out" "losetup --show -f"
	expect_in "list /dev/loop0 /tmp/c1.img;" "$out" "losetup -l"
	expect_in "sysblock loop0 
" "$out" "/sys/block"
	case $out in
	*hostimg*) fail "the host's device is listed" ;;
	esac
	expect_in "after-D 0" "$out" "losetup -D"
}

# mount -o loop as such: libmount finds a free device and binds it.
rootful_mount_loop() {
	local out
	out=$(podman_as_root run --rm "${with_loopfs[@]}" "${opts[@]}" \
		bash -ec '
			truncate -s 32M /tmp/ml.img
			mkfs.ext4 -q /tmp/ml.img
			mkdir -p /mnt/ml
			mount -o loop /tmp/ml.img /mnt/ml
			echo hello >/mnt/ml/f
			echo "src $(findmnt -n -o SOURCE /mnt/ml)"
			umount /mnt/ml
			echo "left $(losetup -a | wc -l)"
		' 2>&1)
	echo "$out"
	expect_in "src /dev/loop0" "$out" "mount -o loop used the container's loop0"
	expect_in "left 0" "$out" "autoclear after umount"
}

no_annotation_no_instance() {
	local out
	out=$(podman_as_root run --rm "${opts[@]}" bash -c '
		ls -d /dev/loopfs /dev/loop-control 2>&1 | sed "s/^/ls: /"
		findmnt -n -t loop | wc -l' 2>&1)
	echo "$out"
	expect_in "ls: ls: cannot access '/dev/loopfs'" "$out" "/dev/loopfs"
	expect_eq 0 "$(echo "$out" | tail -n 1)" "loopfs mounts"
}

# The hook's reason for refusing a container reaches the kernel log and,
# with crun's annotation run.oci.hooks.stderr, a file: podman itself only
# says that the hook failed.
bad_max_refused() {
	local out mark
	mark=$(dmesg | wc -l)
	if out=$(podman_as_root run --rm "${with_loopfs[@]}" \
		--annotation io.loopfs.max=huge \
		--annotation run.oci.hooks.stderr="$w/hook.err" "${opts[@]}" true 2>&1); then
		fail "the container started: $out"
	fi
	echo "$out"
	# crun 1.28 (podman 5.8) prints its message as JSON, '/' escaped
	expect_in "error executing hook \`$hook\`" "${out//\\\//\/}" "podman's message"
	expect_eq 0 "$(podman_as_root ps -aq | wc -l)" "containers left"
	expect_in "io.loopfs.max=huge is not a number" "$(cat "$w/hook.err")" \
		"the hook's stderr kept by run.oci.hooks.stderr"
	expect_in "loopfs-oci-hook: container " "$(dmesg | tail -n +$((mark + 1)))" "dmesg"
	expect_in ": io.loopfs.max=huge is not a number" "$(dmesg | tail -n +$((mark + 1)))" "dmesg"
}

# io.loopfs.instance takes the usual spellings of true and false; any other
# value stops the container with a reason, never silently gives none.  The
# four containers start at once (each podman run costs seconds).
instance_spellings() {
	local v mark rc
	mark=$(dmesg | wc -l)
	for v in yes 1 OFF maybe; do
		{
			rc=0
			podman_as_root run --rm --annotation io.loopfs.instance="$v" \
				"${opts[@]}" findmnt -n -o FSTYPE /dev/loopfs 2>&1 || rc=$?
			echo "exit $rc"
		} >"$w/spelling.$v" &
	done
	wait
	for v in yes 1; do
		expect_eq "loop
exit 0" "$(<"$w/spelling.$v")" "io.loopfs.instance=$v"
	done
	expect_eq "exit 1" "$(<"$w/spelling.OFF")" "loopfs mounts with io.loopfs.instance=OFF"
	case $(tail -n 1 "$w/spelling.maybe") in
	"exit 0") fail "io.loopfs.instance=maybe: the container started: $(<"$w/spelling.maybe")" ;;
	esac
	expect_in "io.loopfs.instance=maybe: say true or false" \
		"$(dmesg | tail -n +$((mark + 1)))" "dmesg"
	expect_eq 0 "$(podman_as_root ps -aq | wc -l)" "containers left"
}

max_annotation() {
	local out
	out=$(podman_as_root run --rm "${with_loopfs[@]}" \
		--annotation io.loopfs.max=2 "${opts[@]}" bash -c '
			findmnt -n -o OPTIONS /dev/loopfs | tr , "\n" | grep "^max="
			ls /dev | grep -cE "^loop[0-9]+$"
			truncate -s 1M /tmp/max.img
			losetup --show -f /tmp/max.img
			losetup --show -f /tmp/max.img
			losetup --show -f /tmp/max.img 2>&1 | sed "s/^/third: /"
			losetup -D' 2>&1)
	echo "$out"
	# The third fails. util-linux 2.42 no longer says that no device is
	# free: when GET_FREE fails it scans for one, names a node the
	# container lacks and fails to set that up.
	case $out in
	*"third: losetup: /tmp/max.img: failed to set up loop device: No such file or directory")
		out=${out%"/tmp/max.img: failed to set up loop device: No such file or directory"}"cannot find an unused loop device" ;;
	esac
	expect_eq "max=2
2
/dev/loop0
/dev/loop1
third: losetup: cannot find an unused loop device" "$out" "max=2"
}

# start_pair ARGS...: podman run -d ARGS for containers a and b at once;
# their ids in $a and $b.
start_pair() {
	local c
	for c in a b; do
		podman_as_root run -d "$@" >"$w/$c.id" 2>&1 &
	done
	wait
	a=$(<"$w/a.id") b=$(<"$w/b.id")
	[[ $a =~ ^[0-9a-f]{64}$ ]] || fail "container a: $a"
	[[ $b =~ ^[0-9a-f]{64}$ ]] || fail "container b: $b"
}

two_containers() {
	local a b c disks
	disks=$(loopfs_disks | wc -l)
	start_pair "${with_loopfs[@]}" "${opts[@]}" sleep 600
	# Both bind a device at the same time, each in its own instance.
	for c in a b; do
		podman_as_root exec "${!c}" bash -c "truncate -s 4M /tmp/$c.img
			losetup --show -f /tmp/$c.img
			losetup -n -O BACK-FILE /dev/loop0
			losetup -l -n -O NAME" >"$w/$c.out" 2>&1 &
	done
	wait
	for c in a b; do
		expect_eq "/dev/loop0
/tmp/$c.img
/dev/loop0" "$(<"$w/$c.out")" "$c's first device, its file, and all $c lists"
	done
	expect_eq $((disks + 2)) "$(loopfs_disks | wc -l)" "loopfs disks on the host"
	podman_as_root rm -f -t 0 "$a" "$b" >/dev/null || fail "podman rm -f"
	wait_for_disks "$disks" || fail "devices left: $(loopfs_disks | tr '\n' ' ')"
	expect_eq 0 "$(grep -l ' - loop ' /proc/[0-9]*/mountinfo 2>/dev/null | wc -l)" \
		"processes that still see a loopfs mount"
}

# Unprivileged rootful containers: the device cgroup allows only the
# devices the container is given, so the instance's nodes need a rule.
unprivileged_needs_rule() {
	local out
	out=$(podman_as_root run --rm "${with_loopfs[@]}" \
		--network none --rootfs "$w/rootfs" bash -c '
			head -c 1 /dev/loopfs/loop-control 2>&1 | sed "s/^/open: /"' 2>&1)
	echo "$out"
	expect_in "open: head: cannot open '/dev/loopfs/loop-control' for reading: Operation not permitted" \
		"$out" "the device cgroup refuses loop-control"
}

unprivileged_with_rule() {
	local out b c
	read -r b c < <(loopfs_majors)
	[ -n "$b" ] && [ -n "$c" ] || fail "no loopfs majors in /proc/devices"
	out=$(podman_as_root run --rm "${with_loopfs[@]}" \
		--device-cgroup-rule "b $b:* rw" --device-cgroup-rule "c $c:* rw" \
		--security-opt unmask=/sys/dev/block \
		--network none --rootfs "$w/rootfs" bash -c '
			truncate -s 4M /tmp/u.img
			echo "bound $(losetup --show -f /tmp/u.img)"
			printf unprivileged | dd of=/dev/loop0 conv=fsync status=none
			echo "file $(head -c 12 /tmp/u.img)"
			echo "list $(losetup -l -n -O NAME,BACK-FILE | tr -s " ")"
			losetup -D' 2>&1)
	echo "$out"
	expect_in "bound /dev/loop0" "$out" "losetup --show -f"
	expect_in "file unprivileged" "$out" "raw write through the device"
	expect_in "list /dev/loop0 /tmp/u.img" "$out" "losetup -l"
}

# The attack a rootful container has by default: CAP_MKNOD (Docker and
# containerd grant it; podman 4 did too) and the documented rules for
# loopfs's majors, which cover every instance on the host. Container a
# binds a file holding its secret; container b makes a node with a's
# device number and reads through it. The module opens a disk only for
# the cgroup its instance was made for, and for host root.
neighbour_node_refused() {
	local a b out b_maj c_maj maj min rules
	read -r b_maj c_maj < <(loopfs_majors)
	[ -n "$b_maj" ] && [ -n "$c_maj" ] || fail "no loopfs majors in /proc/devices"
	rules=(--device-cgroup-rule "b $b_maj:* rw"
		--device-cgroup-rule "c $c_maj:* rw" --cap-add MKNOD
		--security-opt unmask=/sys/dev/block --network none
		--rootfs "$w/rootfs")
	start_pair "${with_loopfs[@]}" "${rules[@]}" sleep 600
	# a's image: one partition from sector 2048, the secret at its start
	out=$(podman_as_root exec "$a" bash -c '
		truncate -s 2M /tmp/a.img
		echo start=2048 | sfdisk -q /tmp/a.img
		printf SECRET-OF-A |
			dd of=/tmp/a.img bs=512 seek=2048 conv=notrunc status=none
		losetup -P -f /tmp/a.img && stat -L -c "%t %T" /dev/loop0') ||
		fail "a binds its device"
	read -r maj min <<<"$out"
	maj=$((16#$maj)) min=$((16#$min))
	echo "a's disk $maj:$min"
	out=$(podman_as_root exec "$b" bash -c "
		mknod /tmp/a-disk b $maj $min && echo MKNOD-OK
		dd if=/tmp/a-disk bs=512 skip=2048 count=1 status=none 2>&1 |
			head -c 80 | tr -d '\\0'; echo
		mknod /tmp/a-part b $maj $((min + 1)) && echo MKNOD-P1-OK
		head -c 11 /tmp/a-part 2>&1; echo" 2>&1)
	echo "b: $out"
	expect_in MKNOD-P1-OK "$out" "b makes the nodes (CAP_MKNOD and the rule allow it)"
	expect_not_in SECRET-OF-A "$out" "b reads a's disk"
	expect_in "/tmp/a-disk': Operation not permitted" "$out" "b opens a's disk"
	expect_in "'/tmp/a-part' for reading: Operation not permitted" "$out" \
		"b opens a's partition"
	# a reads its partition, then holds it open (a mount would): a second
	# open of it reaches the driver only where the block layer opens the
	# whole disk for every open of a partition (docs/security.md)
	out=$(podman_as_root exec "$a" bash -c 'head -c 11 /dev/loop0p1
		exec 3</dev/loop0p1
		sleep 600 >/dev/null 2>&1 &' 2>&1)
	expect_eq SECRET-OF-A "$out" "a reads its own partition"
	out=$(podman_as_root exec "$b" head -c 11 /tmp/a-part 2>&1 || true)
	if kernel_at_least 6.12; then
		expect_in "'/tmp/a-part' for reading: Operation not permitted" \
			"$out" "b opens a's partition that a holds open"
	else
		echo "DIAG: b's open of a's held-open partition on $(uname -r): ${out:0:11}"
	fi
	mknod "$w/a-disk" b "$maj" "$min" || fail "mknod on the host"
	out=$(dd if="$w/a-disk" bs=512 skip=2048 count=1 status=none | head -c 11)
	rm -f "$w/a-disk"
	expect_eq SECRET-OF-A "$out" "host root reads a's disk"
	podman_as_root rm -f -t 0 "$a" "$b" >/dev/null || fail "podman rm -f"
}

# --- rootless: a user with subordinate ids runs podman itself ---

# podman as user $ruid, with a throwaway /etc/subuid and /etc/subgid (and a
# passwd entry, should the machine have none for $ruid) bound over the
# host's in this mount namespace.  Rootless podman cannot use cgroups here
# (nothing delegates them), so its containers run without.
podman_as_user() {
	cd "$w/rl/home" || return 1
	setpriv --reuid="$ruid" --regid="$ruid" --clear-groups \
		env HOME="$w/rl/home" XDG_RUNTIME_DIR="$w/rl/xdg" \
		podman --root "$w/rl/storage" --runroot "$w/rl/xdg/run" \
		--cgroup-manager cgroupfs --events-backend file \
		--hooks-dir "$w/hooks.d" "$@"
}

# Podman masks /sys/dev/block in rootless containers, and losetup reaches a
# device's sysfs directory through it.
rl_opts=(--cgroups disabled --security-opt unmask=/sys/dev/block
	--network none --rootfs "$w/rootfs")

rootless_setup() {
	local f
	[ -e /etc/subuid ] && [ -e /etc/subgid ] ||
		fail "no /etc/subuid or /etc/subgid to bind over"
	mkdir -p "$w/rl/home" "$w/rl/xdg"
	chown -R "$ruid:$ruid" "$w/rl"
	chmod 700 "$w/rl/xdg"
	echo "$ruid:200000:65536" >"$w/rl/subid"
	for f in /etc/subuid /etc/subgid; do
		mount --bind "$w/rl/subid" "$f"
	done
	if ! getent passwd "$ruid" >/dev/null; then
		cp /etc/passwd "$w/rl/passwd"
		echo "loopfs-rootless:x:$ruid:$ruid::$w/rl/home:/bin/sh" >>"$w/rl/passwd"
		mount --bind "$w/rl/passwd" /etc/passwd
	fi
	podman_as_user run --rm "${rl_opts[@]}" true ||
		fail "rootless podman cannot run a container"
}

rootless_instance() {
	local c pid out disks
	disks=$(loopfs_disks | wc -l)
	c=$(podman_as_user run -d "${with_loopfs[@]}" "${rl_opts[@]}" sleep 600) ||
		fail "rootless container"
	pid=$(podman_as_user inspect -f '{{.State.Pid}}' "$c") || fail "podman inspect"
	out=$(podman_as_user exec "$c" bash -c '
		echo "uid_map $(awk "{ print \$1, \$2 }" /proc/self/uid_map)"
		echo "owner $(stat -c %u:%g /dev/loopfs/loop-control)"
		truncate -s 4M /tmp/rl.img
		echo "bound $(losetup --show -f /tmp/rl.img)"
		printf rootless-data | dd of=/dev/loop0 conv=fsync status=none
		echo "file $(head -c 13 /tmp/rl.img)"
		echo "list $(losetup -l -n -O NAME,BACK-FILE | tr -s " ")"
		mkfs.ext4 -q /dev/loop0
		mkdir -p /tmp/rl-mnt
		if mount -o loop /tmp/rl.img /tmp/rl-mnt 2>/dev/null ||
			mount /dev/loop0 /tmp/rl-mnt 2>/dev/null; then
			echo "ext4 mounted"
		else
			echo "ext4 refused"
		fi' 2>&1) || true
	echo "$out"
	expect_in "uid_map 0 $ruid" "$out" "the container's root is uid $ruid"
	expect_in "owner 0:0" "$out" "loop-control belongs to the container's root"
	expect_eq "$ruid" "$(stat -c %u "/proc/$pid/root/dev/loopfs/loop-control")" \
		"owner seen from the host"
	expect_in "bound /dev/loop0" "$out" "losetup --show -f"
	expect_in "file rootless-data" "$out" "raw write through the device"
	expect_in "list /dev/loop0 /tmp/rl.img" "$out" "losetup -l"
	expect_in "ext4 refused" "$out" "the kernel refuses ext4 to a user namespace"
	expect_eq $((disks + 1)) "$(loopfs_disks | wc -l)" "loopfs disks on the host"
	podman_as_user rm -f -t 0 "$c" >/dev/null || fail "podman rm -f"
	wait_for_disks "$disks" || fail "devices left: $(loopfs_disks | tr '\n' ' ')"
}

# The hook as a runtime would run it, on a bundle whose rootfs has no /dev
# mount: an image's dev that is a symlink to a host directory, and one that
# is a plain directory.  The hook must refuse both and change nothing.
hook_refuses_image_dev() {
	local b=$w/evil out
	mkdir -p "$b/rootfs" "$w/hostdir"
	touch "$w/hostdir/loop0" "$w/hostdir/keep"
	ln -s "$w/hostdir" "$b/rootfs/dev"
	jq -n --arg r "$b/rootfs" '{root: {path: $r}}' >"$b/config.json"
	jq -n --arg b "$b" '{bundle: $b, pid: 0, annotations: {}}' >"$b/state"
	if out=$("$hook" <"$b/state" 2>&1); then
		fail "the hook accepted a symlinked dev: $out"
	fi
	echo "$out"
	expect_in "is not a mount of the container's own" "$out" "symlinked dev"
	rm "$b/rootfs/dev"
	mkdir "$b/rootfs/dev"
	if out=$("$hook" <"$b/state" 2>&1); then
		fail "the hook accepted an unmounted dev: $out"
	fi
	expect_eq "keep loop0" "$(ls "$w/hostdir" | tr '\n' ' ' | sed 's/ $//')" \
		"the directory the symlink named"
	expect_eq "" "$(ls "$b/rootfs/dev")" "the image's dev"
	expect_eq 0 "$(findmnt -n -t loop | wc -l)" "loopfs mounts"
}

# The host's devtmpfs as the container's /dev: its loop names are the
# host's devices, and the hook would change the host's /dev. Refused, and
# nothing there changed.
hook_refuses_devtmpfs_dev() {
	local b=$w/devtmpfs out host
	host=$(losetup -j "$w/hostimg" | cut -d: -f1)
	[ -n "$host" ] || fail "the host's device is gone"
	mkdir -p "$b/rootfs/dev"
	mount -t devtmpfs devtmpfs "$b/rootfs/dev"
	jq -n --arg r "$b/rootfs" '{root: {path: $r}}' >"$b/config.json"
	jq -n --arg b "$b" '{bundle: $b, pid: 0, annotations: {}}' >"$b/state"
	if out=$("$hook" <"$b/state" 2>&1); then
		umount "$b/rootfs/dev"
		fail "the hook accepted a devtmpfs dev: $out"
	fi
	echo "$out"
	[ -b "$b/rootfs/dev/$(basename "$host")" ] ||
		fail "the host's $(basename "$host") went from its devtmpfs"
	[ ! -e "$b/rootfs/dev/loopfs" ] || fail "the hook made $b/rootfs/dev/loopfs"
	umount "$b/rootfs/dev"
	expect_in "is a devtmpfs" "$out" "the reason"
	expect_eq 0 "$(findmnt -n -t loop | wc -l)" "loopfs mounts"
}

# The same devtmpfs stacked on a tmpfs (the findmnt of a mount point lists
# both), and a tmpfs the container would share with the host (mounted
# elsewhere too): the hook acts on the topmost mount only, and refuses
# both, changing nothing.
hook_refuses_stacked_dev() {
	local b=$w/stacked out host
	host=$(losetup -j "$w/hostimg" | cut -d: -f1)
	[ -n "$host" ] || fail "the host's device is gone"
	mkdir -p "$b/rootfs/dev" "$b/shared"
	jq -n --arg r "$b/rootfs" '{root: {path: $r}}' >"$b/config.json"
	jq -n --arg b "$b" '{bundle: $b, pid: 0, annotations: {}}' >"$b/state"
	mount -t tmpfs tmpfs "$b/rootfs/dev"
	mount --bind /dev "$b/rootfs/dev"
	out=$("$hook" <"$b/state" 2>&1) && fail "the hook accepted a devtmpfs on a tmpfs: $out"
	echo "$out"
	expect_in "is a devtmpfs" "$out" "the reason"
	[ -b "$host" ] && [ -c /dev/loop-control ] ||
		fail "the host's $host or /dev/loop-control went"
	[ ! -e /dev/loopfs ] || fail "the hook made /dev/loopfs on the host"
	umount "$b/rootfs/dev"
	umount "$b/rootfs/dev"
	mount -t tmpfs tmpfs "$b/shared"
	touch "$b/shared/host-file"
	mount --bind "$b/shared" "$b/rootfs/dev"
	out=$("$hook" <"$b/state" 2>&1) && fail "the hook accepted a shared tmpfs: $out"
	echo "$out"
	expect_in "mounted elsewhere too" "$out" "the reason"
	expect_eq host-file "$(ls "$b/shared")" "the shared tmpfs's files"
	umount "$b/rootfs/dev"
	umount "$b/shared"
	expect_eq 0 "$(findmnt -n -t loop | wc -l)" "loopfs mounts"
}

# Partitions made in the container by parted have their /dev names (links
# of the hook, io.loopfs.partitions of them per device) when parted
# returns; mkfs.vfat works on one, and lsblk draws loop0's tree by the
# container's names.
rootful_partitions() {
	local out
	out=$(podman_as_root run --rm "${with_loopfs[@]}" \
		--annotation io.loopfs.partitions=2 "${opts[@]}" bash -ec '
			truncate -s 64M /tmp/p.img
			d=$(losetup -P --show -f /tmp/p.img)
			echo "dev $d"
			parted -s "$d" mklabel gpt mkpart a 1MiB 32MiB mkpart b 32MiB 100%
			echo "links $(ls /dev | grep "^loop0p" | xargs)"
			echo "nodes $(stat -L -c %F /dev/loop0p1 /dev/loop0p2 | sort -u)"
			mkfs.vfat /dev/loop0p1 >/dev/null
			echo "type $(blkid -p -o value -s TYPE /dev/loop0p1)"
			echo "lsblk $(lsblk -l -n -o NAME,PKNAME /dev/loop0 | xargs)"
			echo "partition $(cat /sys/block/loop0/loop0p2/partition)"
			losetup -d "$d"
			echo "after $(ls /dev/loopfs | xargs)"' 2>&1)
	echo "$out"
	expect_in "dev /dev/loop0" "$out" "losetup -P --show -f"
	expect_in "links loop0p1 loop0p2
" "$out" "the partition links"
	expect_in "nodes block special file
" "$out" "what the links lead to"
	expect_in "type vfat" "$out" "mkfs.vfat on /dev/loop0p1"
	expect_in "lsblk loop0 loop0p1 loop0 loop0p2 loop0" "$out" "lsblk"
	expect_in "partition 2" "$out" "/sys/block/loop0/loop0p2"
	expect_eq "after block dev-block loop-control loop0" "$(tail -n 1 <<<"$out")" \
		"the instance after losetup -d"
}

cdi_device() {
	local out
	out=$(podman_as_root run --rm \
		--device loopfs.io/instance=default "${opts[@]}" bash -c '
			findmnt -n -o FSTYPE /dev/loopfs
			truncate -s 1M /tmp/cdi.img
			losetup --show -f /tmp/cdi.img
			losetup -D' 2>&1)
	echo "$out"
	expect_eq "loop
/dev/loop0" "$out" "instance and device through CDI"
}

tap_plan 18
run_test "set-up: podman runs a container on a rootfs of the host's binaries" setup
run_test "rootful: losetup -f, --show -f, mkfs, mount; losetup -a and /sys/block show only the container's devices" rootful_basics
run_test "rootful: mount -o loop takes the container's loop0 and autoclears it" rootful_mount_loop
run_test "rootful: parted on loop0 gives /dev/loop0p1, p2 when it returns; mkfs.vfat; lsblk by the container's names" rootful_partitions
run_test "no annotation: no instance, no loop nodes" no_annotation_no_instance
run_test "io.loopfs.max=2 caps the instance at two devices" max_annotation
run_test "io.loopfs.max that is not a number stops the container; the reason is in dmesg and run.oci.hooks.stderr's file" bad_max_refused
run_test "io.loopfs.instance=yes or 1 gives an instance, OFF none, maybe stops the container with a reason" instance_spellings
run_test "two containers have independent loop0; podman rm -f leaves no device or mount" two_containers
run_test "unprivileged rootful: the device cgroup refuses the instance's nodes without a rule" unprivileged_needs_rule
run_test "unprivileged rootful with device-cgroup rules for loopfs's majors: losetup and raw I/O work" unprivileged_with_rule
run_test "a neighbour with CAP_MKNOD and the rules makes a node for a's disk and cannot open it; a and host root can" neighbour_node_refused
run_test "the hook refuses an image's own dev (a symlink or an unmounted directory) and changes nothing" hook_refuses_image_dev
run_test "the hook refuses a devtmpfs dev (the host's nodes) and changes nothing" hook_refuses_devtmpfs_dev
run_test "the hook refuses a devtmpfs stacked on a tmpfs dev, and a tmpfs mounted elsewhere too, and changes nothing" hook_refuses_stacked_dev
run_test "CDI: --device loopfs.io/instance=default gives the container its instance" cdi_device
run_test "rootless: set-up, subordinate ids for uid $ruid" rootless_setup
run_test "rootless: the instance belongs to the container's root; losetup and raw I/O work, ext4 mounts are refused; podman rm -f leaves nothing" rootless_instance
tap_done
