#!/bin/bash
# loopfs-timeout: 600
# A Kubernetes node: containerd (2.x, NRI on) driven through its CRI socket
# the way the kubelet drives it (tests/containers/cri: pods, containers,
# exec, stop, remove), with the loopfs NRI plugin (tools/nri) installed in
# containerd's plugin directory, which containerd starts itself, then run
# by hand and last as the DaemonSet of deploy/kubernetes runs it. A pod
# annotated loopfs.io/instance=true gets an instance in each container,
# through the OCI hook the plugin adds. Images are made from the tree (a
# static busybox for the pause container; the guest's /usr and /etc
# mounted read-only for the others, as hostPath volumes would be), host
# networking but for the pods that need their own (a bridge), containerd's
# state on tmpfs. Runs as root in a guest whose release packages
# containerd 2 (the newest); elsewhere it says why not.
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
	[ ! -s "$w/containerd.pid" ] || kill "$(cat "$w/containerd.pid")" 2>/dev/null
	[ ! -s "$w/plugin.pid" ] || kill "$(cat "$w/plugin.pid")" 2>/dev/null
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
[plugins."io.containerd.cri.v1.runtime".cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "$w/cni/conf.d"
[plugins."io.containerd.nri.v1.nri"]
  disable = false
  plugin_path = "$w/nri/plugins"
  plugin_config_path = "$w/nri/conf.d"
EOF
}

start_containerd() {
	# Tests run in subshells of their own: the pid is kept in a file.
	containerd --config "$w/config.toml" >>"$w/containerd.log" 2>&1 &
	echo $! >"$w/containerd.pid"
	for _ in $(seq 300); do
		cri pods >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	tail -n 20 "$w/containerd.log"
	fail "containerd did not answer on $sock in 30 s"
}

setup() {
	local v
	cgroup2_with_controllers || fail "cgroup2 with the memory, cpu and pids controllers"
	command -v containerd >/dev/null || fail "containerd is not installed"
	[ -x "$gobin/cri" ] && [ -x "$gobin/loopfs-nri" ] ||
		fail "no $gobin/cri or loopfs-nri (tests/harness/build-go.sh)"
	v=$(containerd --version | awk '{ print $3 }')
	echo "DIAG: containerd $v"
	mkdir -p "$w/nri/plugins" "$w/nri/conf.d" "$w/img/pause" "$w/img/test" \
		"$w/root" "$w/state" "$w/cni/conf.d"
	mount -t tmpfs tmpfs "$w/root"
	mount -t tmpfs tmpfs "$w/state"
	# CNI keeps its results in /var/lib/cni, which the guest's read-only
	# root lacks: an empty /var/lib in this suite's mount namespace.
	mount -t tmpfs tmpfs /var/lib
	# NRI's socket where containerd puts it by default, which the
	# DaemonSet binds into its pod: a directory of this suite's own.
	mkdir -p /var/run/nri && mount -t tmpfs tmpfs /var/run/nri ||
		fail "a directory for NRI's socket"
	# The node as loopfs-tools leaves it: the OCI hook at
	# /usr/libexec/loopfs/, where the plugin looks for it unless
	# configured (the DaemonSet's plugin is not). The guest's root is
	# read-only: a tmpfs over /usr/libexec that links back to what it held.
	mkdir -p "$w/libexec"
	mount --bind /usr/libexec "$w/libexec"
	mount -t tmpfs tmpfs /usr/libexec
	ln -s "$w/libexec"/* /usr/libexec/
	mkdir /usr/libexec/loopfs
	ln -s "$hook" /usr/libexec/loopfs/loopfs-oci-hook
	# The plugin as the package installs it, pointed at this tree's hook.
	cp "$gobin/loopfs-nri" "$w/nri/plugins/10-loopfs"
	printf '{"hook": "%s"}\n' "$hook" >"$w/nri/conf.d/10-loopfs.conf"
	containerd_config >"$w/config.toml"
	# A pod network for the pod with a user namespace (which may not
	# share the node's network, and must have an address): a bridge of
	# its own in the guest, addresses from a private range.
	modprobe bridge 2>/dev/null
	cat >"$w/cni/conf.d/10-pods.conflist" <<-EOF
	{"cniVersion": "1.0.0", "name": "loopfs-pods",
	 "plugins": [{"type": "bridge", "bridge": "loopfs-cni0",
	  "ipMasq": false, "isGateway": false,
	  "ipam": {"type": "host-local",
	   "ranges": [[{"subnet": "10.213.0.0/24"}]]}}]}
	EOF
	start_containerd
	cp /bin/busybox "$w/img/pause/busybox" || fail "no static busybox"
	"$src/tools/nri/oci-image.sh" "$w/img/pause" "$pause" "$w/pause.tar" /busybox sleep 2147483647
	# /usr and /etc come from the guest, read-only.
	rootfs_skeleton "$w/img/test"
	"$src/tools/nri/oci-image.sh" "$w/img/test" "$image" "$w/test.tar" /bin/sleep 600
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

# instance_in_new_pod NAME WHAT: an annotated pod NAME's container has its
# instance (WHAT says when); the pod is deleted
instance_in_new_pod() {
	local p c
	p=$(pod "$1" -a loopfs.io/instance=true) || fail "RunPodSandbox"
	c=$(container "$p" main) || fail "a container"
	expect_eq loopfs/loop-control "$(cri exec "$c" readlink /dev/loop-control)" "$2"
	remove_pod "$p" || fail "delete the pod"
}

# remove_pod POD: as the kubelet deletes a pod
remove_pod() {
	cri stopp "$1" && cri rmp "$1"
}

no_annotation_no_instance() {
	local p c out
	p=$(pod plain) || fail "RunPodSandbox"
	c=$(container "$p" main) || fail "a container"
	out=$(cri exec "$c" sh -c 'for f in /dev/loopfs /dev/loop-control; do
		[ ! -e $f ] || echo "has $f"; done; echo checked')
	expect_eq checked "$out" "no instance, no loop-control"
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

# A privileged pod's container also mounts: mount -o loop of an image it
# made, written, remounted read-only and read back.
privileged_mount() {
	local p c out disks
	disks=$(loopfs_disks | wc -l)
	p=$(pod priv -privileged -a loopfs.io/instance=true) || fail "RunPodSandbox"
	c=$(container "$p" main -privileged) || fail "a container"
	out=$(cri exec "$c" bash -c '
		truncate -s 32M /tmp/p.img && mkfs.ext4 -q /tmp/p.img || exit 1
		mkdir -p /tmp/m
		mount -o loop /tmp/p.img /tmp/m && echo written >/tmp/m/f &&
			umount /tmp/m && echo "mounted rw"
		mount -o loop,ro /tmp/p.img /tmp/m && echo "read $(cat /tmp/m/f)" &&
			umount /tmp/m
		echo "source $(losetup -j /tmp/p.img | wc -l) bound after umount"
		ls /dev/loopfs | grep -c "^loop[0-9]"' 2>&1)
	echo "$out"
	expect_in "mounted rw" "$out" "mount -o loop, written"
	expect_in "read written" "$out" "remounted read-only, read back"
	expect_in "source 0 bound" "$out" "autoclear after umount"
	remove_pod "$p" || fail "delete the pod"
	wait_for_disks "$disks" || fail "devices left: $(loopfs_disks | tr '\n' ' ')"
}

# Two pods on one node: each its own loop0, each listing only its own.
two_pods() {
	local a b c ca cb out disks
	disks=$(loopfs_disks | wc -l)
	a=$(pod a -a loopfs.io/instance=true) || fail "pod a"
	b=$(pod b -a loopfs.io/instance=true) || fail "pod b"
	ca=$(container "$a" main) || fail "a's container"
	cb=$(container "$b" main) || fail "b's container"
	for c in "a $ca" "b $cb"; do
		set -- $c
		out=$(cri exec "$2" bash -c "truncate -s 4M /tmp/$1.img
			losetup --show -f /tmp/$1.img
			losetup -l -n -O NAME,BACK-FILE | tr -s ' '")
		expect_eq "/dev/loop0
/dev/loop0 /tmp/$1.img" "$out" "pod $1's own loop0"
	done
	expect_eq $((disks + 2)) "$(loopfs_disks | wc -l)" "loopfs disks on the node"
	remove_pod "$a" && remove_pod "$b" || fail "delete the pods"
	wait_for_disks "$disks" || fail "devices left: $(loopfs_disks | tr '\n' ' ')"
}

# Pod b, with containerd's default capabilities (CAP_MKNOD among them)
# and the device rule every instance's container has, makes a node with
# pod a's disk's number: the module opens a disk only for the container
# its instance was made for, and for host root.
neighbour_pod_refused() {
	local a b ca cb out maj min
	a=$(pod a -a loopfs.io/instance=true) || fail "pod a"
	b=$(pod b -a loopfs.io/instance=true) || fail "pod b"
	ca=$(container "$a" main) || fail "a's container"
	cb=$(container "$b" main) || fail "b's container"
	out=$(cri exec "$ca" bash -c '
		truncate -s 1M /tmp/a.img
		printf SECRET-OF-A | dd of=/tmp/a.img conv=notrunc status=none
		losetup -f /tmp/a.img && stat -L -c "%t %T" /dev/loop0') ||
		fail "a binds its device"
	read -r maj min <<<"$out"
	maj=$((16#$maj)) min=$((16#$min))
	echo "a's disk $maj:$min"
	out=$(cri exec "$cb" bash -c "
		mknod /tmp/a-disk b $maj $min && echo MKNOD-OK
		head -c 11 /tmp/a-disk 2>&1; echo" 2>&1)
	echo "b: $out"
	expect_in MKNOD-OK "$out" "b makes the node (CAP_MKNOD and the rule allow it)"
	expect_not_in SECRET-OF-A "$out" "b reads a's disk"
	expect_in "Operation not permitted" "$out" "b's open of a's disk"
	expect_eq SECRET-OF-A "$(cri exec "$ca" head -c 11 /dev/loop0)" "a reads its own disk"
	mknod "$w/a-disk" b "$maj" "$min" || fail "mknod on the host"
	out=$(head -c 11 "$w/a-disk")
	rm -f "$w/a-disk"
	expect_eq SECRET-OF-A "$out" "host root reads a's disk"
	remove_pod "$a" && remove_pod "$b" || fail "delete the pods"
}

# A pod with a user namespace of its own (hostUsers: false): its
# instance's nodes belong to the pod's root, whose host uid is charged.
userns_pod() {
	local p c out disks
	disks=$(loopfs_disks | wc -l)
	p=$(pod users -userns 300000 -a loopfs.io/instance=true) || fail "RunPodSandbox"
	c=$(container "$p" main) || fail "a container"
	out=$(cri exec "$c" bash -c '
		echo "map $(awk "{ print \$1, \$2 }" /proc/self/uid_map)"
		echo "owner $(stat -c %u:%g /dev/loopfs/loop-control)"
		truncate -s 4M /tmp/u.img
		echo "bound $(losetup --show -f /tmp/u.img)"
		printf in-userns | dd of=/dev/loop0 conv=fsync status=none
		echo "file $(head -c 9 /tmp/u.img)"' 2>&1)
	echo "$out"
	expect_in "map 0 300000" "$out" "the pod's user namespace"
	expect_in "owner 0:0" "$out" "the nodes belong to the pod's root"
	expect_in "bound /dev/loop0" "$out" "losetup --show -f"
	expect_in "file in-userns" "$out" "raw write through the device"
	remove_pod "$p" || fail "delete the pod"
	wait_for_disks "$disks" || fail "devices left: $(loopfs_disks | tr '\n' ' ')"
}

# The kubelet kills a pod: its container's init SIGKILLed, then the pod
# stopped and removed. Nothing of the instance outlives the container.
killed_pod() {
	local p c pid disks
	disks=$(loopfs_disks | wc -l)
	p=$(pod killed -a loopfs.io/instance=true) || fail "RunPodSandbox"
	c=$(container "$p" main) || fail "a container"
	cri exec "$c" bash -c 'truncate -s 4M /tmp/k.img; losetup -f /tmp/k.img
		losetup -f /tmp/k.img' || fail "bind two devices"
	expect_eq $((disks + 2)) "$(loopfs_disks | wc -l)" "the pod's devices"
	pid=$(cri pid "$c") || fail "the container's pid"
	kill -KILL "$pid" || fail "SIGKILL $pid"
	wait_for_disks "$disks" || fail "devices left after SIGKILL: $(loopfs_disks | tr '\n' ' ')"
	remove_pod "$p" || fail "delete the pod"
	expect_eq 0 "$(grep -l ' - loop ' /proc/[0-9]*/mountinfo 2>/dev/null | wc -l)" \
		"processes that still see a loopfs mount"
}

# containerd restarted (an upgrade, a crash): it starts the plugin again
# from its directory, and new containers get their instance.
containerd_restart() {
	local pid
	pid=$(cat "$w/containerd.pid")
	kill "$pid" || fail "kill containerd"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	start_containerd
	instance_in_new_pod again "an instance after the restart"
}

# wait_log PATTERN N: until containerd's log has more than N lines
# matching PATTERN, for at most 10 s
wait_log() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(grep -c "$1" "$w/containerd.log")" -gt "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# The plugin gone (a DaemonSet's pod restarting): NRI has no required
# plugins, so an annotated pod's container starts without an instance
# (and sees no loop device at all); the plugin connected again from
# outside containerd, as a DaemonSet's pod connects, gives the next
# container its instance.
plugin_reconnects() {
	local p c n out
	n=$(grep -c 'connection to plugin .* closed' "$w/containerd.log" || true)
	pkill -f "^$w/nri/plugins/10-loopfs" || fail "no pre-installed plugin runs"
	wait_log 'connection to plugin .* closed' "$n" ||
		fail "containerd did not see the plugin go"
	p=$(pod gap -a loopfs.io/instance=true) || fail "RunPodSandbox"
	c=$(container "$p" main) || fail "a container while the plugin is gone"
	out=$(cri exec "$c" sh -c 'ls /dev | grep -c "^loop"; losetup -f 2>&1')
	echo "without the plugin: $out"
	expect_eq 0 "$(head -n 1 <<<"$out")" "loop nodes in the container"
	remove_pod "$p" || fail "delete the pod"
	n=$(grep -c 'connected and synchronized' "$w/containerd.log" || true)
	"$gobin/loopfs-nri" -idx 10 -hook "$hook" \
		>>"$w/plugin.log" 2>&1 &
	echo $! >"$w/plugin.pid"
	wait_log 'connected and synchronized' "$n" || {
		tail -n 5 "$w/plugin.log"
		fail "the plugin did not connect"
	}
	instance_in_new_pod back "an instance once the plugin is back"
}

# Ten pods made side by side, each binding a device, then deleted side by
# side, leave nothing behind: no device, pod, or process that still sees
# an instance.
many_pods() {
	local i disks pids=()
	disks=$(loopfs_disks | wc -l)
	for ((i = 0; i < 10; i++)); do
		(
			p=$(pod "many-$i" -a loopfs.io/instance=true) || fail "pod $i"
			c=$(container "$p" main) || fail "pod $i's container"
			cri exec "$c" bash -c 'truncate -s 1M /tmp/i.img; losetup -f /tmp/i.img' ||
				fail "pod $i binds a device"
			echo "$p" >"$w/many-$i"
		) &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}" || fail "pod $i"
	done
	expect_eq $((disks + 10)) "$(loopfs_disks | wc -l)" "disks while the ten pods run"
	pids=()
	for ((i = 0; i < 10; i++)); do
		remove_pod "$(cat "$w/many-$i")" &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}" || fail "delete pod $i"
	done
	wait_for_disks "$disks" || fail "devices left: $(loopfs_disks | tr '\n' ' ')"
	expect_eq "" "$(cri pods)" "pods left"
	expect_eq 0 "$(grep -l ' - loop ' /proc/[0-9]*/mountinfo 2>/dev/null | wc -l)" \
		"processes that still see a loopfs mount"
}

# The DaemonSet as deploy/kubernetes writes it: its pod run on this node
# as the kubelet runs it (cri daemonset reads the manifest strictly), on
# the image the tree builds (build-go.sh), connected to the node's NRI
# socket through its hostPath volume, in place of the plugin run by hand.
daemonset_plugin() {
	local ds=$src/deploy/kubernetes/loopfs-nri.yaml ver n ids dp dc pid
	ver=$(make -s --no-print-directory -C "$src" version)
	grep -qxF "          image: localhost/loopfs-nri:$ver" "$ds" ||
		fail "the manifest's image is not localhost/loopfs-nri:$ver, which the tree builds"
	ctr_k8s images import "$gobin/loopfs-nri.oci.tar" >/dev/null ||
		fail "import the plugin's image"
	n=$(grep -c 'connection to plugin .* closed' "$w/containerd.log" || true)
	kill "$(cat "$w/plugin.pid")" || fail "no plugin run by hand"
	: >"$w/plugin.pid"
	wait_log 'connection to plugin .* closed' "$n" ||
		fail "containerd did not see the plugin run by hand go"
	n=$(grep -c 'connected and synchronized' "$w/containerd.log" || true)
	ids=$(cri daemonset "$ds") || fail "the DaemonSet's pod"
	read -r dp dc <<<"$ids"
	wait_log 'connected and synchronized' "$n" ||
		fail "the DaemonSet's plugin did not connect"
	pid=$(cri pid "$dc") || fail "the plugin's pid"
	expect_eq "0 0000000000000000" \
		"$(awk '/^Uid:/ { u = $2 } /^CapEff:/ { c = $2 } END { print u, c }' "/proc/$pid/status")" \
		"the plugin's uid and effective capabilities"
	expect_eq ro "$(awk '$5 == "/" { split($6, o, ","); print o[1] }' "/proc/$pid/mountinfo")" \
		"the plugin's root"
	instance_in_new_pod ds-user "an instance from the DaemonSet's plugin"
	remove_pod "$dp" || fail "delete the DaemonSet's pod"
	expect_eq "" "$(cri pods)" "pods left"
}

tap_plan 13
run_test "set-up: containerd with NRI starts the loopfs plugin; images imported" setup
run_test "a pod without the annotation: no instance" no_annotation_no_instance
run_test "an unprivileged pod's container: its instance, losetup -f, raw I/O, mkfs, losetup -D; deleting the pod leaves no device" unprivileged_pod
run_test "bad annotations fail the container's creation with the reason" bad_annotations
run_test "a privileged pod: mount -o loop of an image it made, remounted, read back" privileged_mount
run_test "two pods on one node: each its own loop0, each lists only its own" two_pods
run_test "a pod with CAP_MKNOD and the device rule makes a node for another pod's disk and cannot open it; the owner and host root can" neighbour_pod_refused
run_test "a pod with its own user namespace: the instance belongs to its root, losetup and raw I/O work" userns_pod
run_test "a pod whose container's init is SIGKILLed, then deleted: no device or mount left" killed_pod
run_test "containerd restarted: the plugin runs again, new containers get their instance" containerd_restart
run_test "the plugin gone: an annotated pod starts without an instance; connected again, the next container gets one" plugin_reconnects
run_test "ten pods made side by side, each binding a device, and deleted side by side: no device, pod or mount left" many_pods
run_test "the DaemonSet as deploy/kubernetes writes it, on the tree's image: the plugin runs as root with no capability and a read-only root, and gives a pod its instance" daemonset_plugin
tap_done
