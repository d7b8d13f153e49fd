# shellcheck shell=bash
# What only the container manager suites (tests/containers/*.sh) use, on
# top of the suites' library.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/suite.sh"

# The tree under test and its OCI hook.
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
hook=$src/tools/oci/loopfs-oci-hook

# rootfs_skeleton DIR: the directories a root needs, empty, and the
# links into /usr (a merged-/usr system's).
rootfs_skeleton() {
	local r=$1 l
	mkdir -p "$r"/{usr,etc,dev,proc,sys,tmp,run,root,var,mnt}
	for l in bin sbin lib lib64; do
		ln -s "usr/$l" "$r/$l"
	done
	chmod 1777 "$r/tmp"
}

# make_rootfs DIR: a root directory made of the host's binaries: /usr and
# /etc bound read-only, the rest empty and writable.
make_rootfs() {
	rootfs_skeleton "$1"
	mount --rbind /usr "$1/usr"
	mount -o remount,bind,ro "$1/usr"
	mount --rbind /etc "$1/etc"
	mount -o remount,bind,ro "$1/etc"
}

# cgroup2_with_controllers: cgroup2 at /sys/fs/cgroup, with a first child
# that has the controllers container runtimes enable. The first memory and
# cpu cgroups switch static keys of the page allocator and the scheduler,
# which the kernel patches with int3 text poking; QEMU's TCG does not
# reliably handle that while another vCPU runs the patched code, and a
# runtime's first cgroup, made while its daemon ran, killed a guest that
# way (Oops: int3 in the page allocator). Made here, with nothing else
# running, the switch is over before the runtime starts; the child stays
# for the guest's life, so that no key switches back.
cgroup2_with_controllers() {
	local cg=/sys/fs/cgroup
	mountpoint -q $cg || mount -t cgroup2 none $cg || return 1
	[ -d $cg/loopfs-keys ] && return 0
	echo "+memory +cpu +pids" >$cg/cgroup.subtree_control || return 1
	mkdir $cg/loopfs-keys || return 1
	sleep 1
}

# The majors of loopfs's block devices and of its loop-control nodes, which
# a container's device cgroup must allow.
loopfs_majors() {
	awk '$2 == "loopfs" && blk { b = $1 }
		$2 == "loopfs-control" { c = $1 }
		/^Block devices:/ { blk = 1 }
		END { print b, c }' /proc/devices
}

# wait_for_disks N: wait (10 s at most) until N loopfs disks are left.
wait_for_disks() {
	local _
	for _ in $(seq 100); do
		[ "$(loopfs_disks | wc -l)" -eq "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

