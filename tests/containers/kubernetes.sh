#!/bin/bash
# loopfs-timeout: 600
# A Kubernetes node: containerd (2.x, NRI on) driven through its CRI socket
# the way the kubelet drives it (tests/containers/cri: pods, containers,
# exec, stop, remove), with the loopfs NRI plugin (tools/nri) installed in
# containerd's plugin directory, which containerd starts itself. A pod
# annotated loopfs.io/instance=true gets an instance in each container,
# through the OCI hook the plugin adds. Images are made from the tree (a
# static busybox for the pause container; the guest's /usr and /etc
# mounted read-only for the others, as hostPath volumes would be), host
# networking, containerd's state on tmpfs. Runs as root in a guest whose
# release packages containerd 2 (the newest); elsewhere it says why not.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
in_private_mount_ns "$@"

gobin=${LOOPFS_GO_BUILD:-$src/.build/go}
w=$(mktemp -d /tmp/loopfs-k8s.XXXXXX)
chmod 755 "$w"
sock=$w/containerd.sock
pause=localhost/loopfs-pause:1
image=localhost/loopfs-test:1

cri() { "$gobin/cri" -socket "$sock" -state "$w/cri" "$@"; }
ctr_k8s() { ctr --address "$sock" -n k8s.io "$@"; }

cleanup() {
	local p
	if [ -S "$sock" ]; then
		for p in $(cri pods 2>/dev/null | cut -d' ' -f1); do
			cri stopp "$p" >/dev/null 2>&1
			cri rmp "$p" >/dev/null 2>&1
		done
	fi
	[ -z "${containerd_pid:-}" ] || kill "$containerd_pid" 2>/dev/null
	wait 2>/dev/null
	umount -R "$w/state" "$w/root" 2>/dev/null
	true
}
trap cleanup EXIT

containerd_config() {
	cat <<EOF
version = 3
root = "$w/root"
state = "$w/state"
[grpc]
  address = "$sock"
[plugins."io.containerd.cri.v1.images".pinned_images]
  sandbox = "$pause"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
  SystemdCgroup = false
[plugins."io.containerd.nri.v1.nri"]
  disable = false
  socket_path = "$w/nri.sock"
  plugin_path = "$w/nri/plugins"
  plugin_config_path = "$w/nri/conf.d"
EOF
}

start_containerd() {
	containerd --config "$w/config.toml" >>"$w/containerd.log" 2>&1 &
	containerd_pid=$!
	for _ in $(seq 300); do
		cri pods >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	tail -n 20 "$w/containerd.log"
	fail "containerd did not answer on $sock in 30 s"
}

setup() {
	local v
	mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
	command -v containerd >/dev/null || fail "containerd is not installed"
	[ -x "$gobin/cri" ] && [ -x "$gobin/loopfs-nri" ] ||
		fail "no $gobin/cri or loopfs-nri (tests/harness/build-go.sh)"
	v=$(containerd --version | awk '{ print $3 }')
	echo "DIAG: containerd $v"
	mkdir -p "$w/nri/plugins" "$w/nri/conf.d" "$w/img/pause" "$w/img/test" \
		"$w/root" "$w/state"
	mount -t tmpfs tmpfs "$w/root"
	mount -t tmpfs tmpfs "$w/state"
	# The plugin as the package installs it, pointed at this tree's hook.
	cp "$gobin/loopfs-nri" "$w/nri/plugins/10-loopfs"
	printf '{"hook": "%s"}\n' "$hook" >"$w/nri/conf.d/10-loopfs.conf"
	containerd_config >"$w/config.toml"
	start_containerd
	cp /bin/busybox "$w/img/pause/busybox" || fail "no static busybox"
	oci_image "$w/img/pause" "$pause" "$w/pause.tar" /busybox sleep 2147483647
	# /usr and /etc come from the guest, read-only.
	rootfs_skeleton "$w/img/test"
	oci_image "$w/img/test" "$image" "$w/test.tar" /bin/sleep 600
	ctr_k8s images import "$w/pause.tar" >/dev/null || fail "import the pause image"
	ctr_k8s images import "$w/test.tar" >/dev/null || fail "import the test image"
}

# pod NAME [runp options]: a pod's id
pod() {
	local name=$1
	shift
	cri runp -name "$name" "$@"
}

# container POD NAME [create options]: a started container's id, its
# command sleep, /usr and /etc the guest's
container() {
	local p=$1 name=$2 c
	shift 2
	c=$(cri create -pod "$p" -name "$name" -image "$image" \
		-mount /usr:/usr:ro -mount /etc:/etc:ro "$@" -- sleep 600) || return 1
	cri start "$c" || return 1
	echo "$c"
}

# remove_pod POD: as the kubelet deletes a pod
remove_pod() {
	cri stopp "$1" && cri rmp "$1"
}

no_annotation_no_instance() {
	local p c out
	p=$(pod plain) || fail "RunPodSandbox"
	c=$(container "$p" main) || fail "a container"
	out=$(cri exec "$c" sh -c 'ls -d /dev/loopfs /dev/loop-control 2>&1; true')
	echo "$out"
	expect_not_in "/dev/loopfs" "${out//No such file or directory/}" "an instance"
	remove_pod "$p" || fail "delete the pod"
}

unprivileged_pod() {
	local p c out disks
	disks=$(loopfs_disks | wc -l)
	p=$(pod worker -a loopfs.io/instance=true) || fail "RunPodSandbox"
	c=$(container "$p" main) || fail "a container"
	out=$(cri exec "$c" bash -c '
		echo "control $(readlink /dev/loop-control)"
		truncate -s 32M /tmp/u.img
		echo "bound $(losetup --show -f /tmp/u.img)"
		printf unprivileged | dd of=/dev/loop0 conv=fsync status=none
		echo "file $(head -c 12 /tmp/u.img)"
		mkfs.ext4 -q /dev/loop0 && echo mkfs-ok
		echo "list $(losetup -l -n -O NAME,BACK-FILE | tr -s " ")"
		losetup -D
		echo "after-D $(losetup -a | wc -l)"' 2>&1)
	echo "$out"
	expect_in "control loopfs/loop-control" "$out" "/dev/loop-control leads into the instance"
	expect_in "bound /dev/loop0" "$out" "losetup --show -f"
	expect_in "file unprivileged" "$out" "raw write through the device"
	expect_in mkfs-ok "$out" "mkfs.ext4 on the device"
	expect_in "list /dev/loop0 /tmp/u.img" "$out" "losetup -l lists its own device"
	expect_in "after-D 0" "$out" "losetup -D"
	remove_pod "$p" || fail "delete the pod"
	wait_for_disks "$disks" || fail "devices left: $(loopfs_disks | tr '\n' ' ')"
}

bad_annotations() {
	local p out a
	for a in loopfs.io/max=abc loopfs.io/max=0 loopfs.io/partitions=16 \
		loopfs.io/instance=maybe; do
		p=$(pod bad -a loopfs.io/instance=true -a "$a") || fail "RunPodSandbox"
		out=$(container "$p" main 2>&1) && fail "$a: the container was created"
		echo "$out"
		expect_in "loopfs: pod annotation ${a%%=*}=" "$out" "$a: the reason"
		remove_pod "$p" || fail "delete the pod"
	done
}

tap_plan 4
run_test "set-up: containerd with NRI starts the loopfs plugin; images imported" setup
run_test "a pod without the annotation: no instance" no_annotation_no_instance
run_test "an unprivileged pod's container: its instance, losetup -f, raw I/O, mkfs, losetup -D; deleting the pod leaves no device" unprivileged_pod
run_test "bad annotations fail the container's creation with the reason" bad_annotations
tap_done
