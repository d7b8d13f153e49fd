#!/bin/bash
# Guest side of deb-install-test.sh (run-guest.sh --run): the module that
# DKMS installed from loopfs-dkms, with nothing loading it but the kernel
# asking modprobe for the filesystem type on `mount -t loop`; then the LWN
# article's recipe on it, the quick start of the installed loopfs-run
# guide as written there, and containerd (2 or later, where the release
# has it) starting the NRI plugin loopfs-nri installed.  Prints TAP.
set -uo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
. "$src/tests/harness/tap.sh"
kver=$(uname -r)
dkms_dir=/lib/modules/$kver/updates/dkms
log=$(mktemp)
trap 'rm -f "$log"' EXIT

loaded() { grep -q "^loopfs " /proc/modules; }

tap_plan 7

if loaded; then
	tap FAIL "loopfs is not loaded at boot"
else
	tap OK "loopfs is not loaded at boot"
fi
# The stock driver stays beside ours, as on any host.
modprobe loop || echo "# modprobe loop failed"

path=$(modinfo -n loopfs 2>&1)
case $path in
"$dkms_dir"/loopfs.ko*) tap OK "modprobe's index finds loopfs in $dkms_dir" ;;
*)
	echo "# modinfo -n loopfs: $path"
	tap FAIL "modprobe's index finds loopfs in $dkms_dir"
	;;
esac

mkdir -p /tmp/instance
if mount -t loop loop /tmp/instance 2>"$log" && loaded &&
	[ -c /tmp/instance/loop-control ]; then
	tap OK "mount -t loop loads loopfs and mounts an instance"
else
	tap FAIL "mount -t loop loads loopfs and mounts an instance" "$log"
fi
umount /tmp/instance 2>/dev/null

# The module in memory is the file DKMS installed, at the package's version.
want="$(modinfo -F version "$path" 2>/dev/null) $(modinfo -F srcversion "$path" 2>/dev/null)"
got="$(cat /sys/module/loopfs/version 2>/dev/null) $(cat /sys/module/loopfs/srcversion 2>/dev/null)"
echo "# installed: $want; loaded: $got"
if [ "$got" = "$want" ] && [ "$want" != " " ]; then
	tap OK "the loaded module is the installed one (version and srcversion)"
else
	tap FAIL "the loaded module is the installed one (version and srcversion)"
fi

if "$src/tests/shell/article.sh" >"$log" 2>&1 && ! grep -q '^not ok' "$log" &&
	grep -q '^ok' "$log"; then
	sed 's/^/# /' "$log"
	tap OK "the article's recipe works on the installed module"
else
	tap FAIL "the article's recipe works on the installed module" "$log"
fi

# The quick start of the installed guide, its first shell block as it
# stands: an unprivileged container makes an ext4 image, mounts it with
# mount -o loop and owns what it made (uid 0 inside), then fuse2fs mounts
# the same image.  The guest runs as root, so sudo is only the command; an
# empty /mnt, as on a fresh machine (the article's recipe left a directory).
quick_start() {
	local doc shim recipe ver out rc
	doc=$(find /usr/share/doc/loopfs-tools -name 'loopfs-run.md*' | head -n 1)
	[ -n "$doc" ] || { echo "# loopfs-run.md is not installed"; return 1; }
	recipe=$(zcat -f "$doc" | awk '/^```/ { if (n++) exit; next } n')
	echo "# the recipe:"
	printf '%s\n' "$recipe" | sed 's/^/#   /'
	# what a booted Debian machine has and this guest's init does not
	# make: the FUSE device, with the mode udev gives it
	modprobe fuse && chmod 666 /dev/fuse || return 1
	shim=$(mktemp -d)
	printf '#!/bin/sh\nexec "$@"\n' >"$shim/sudo"
	chmod 755 "$shim/sudo"
	out=$(cd /tmp && PATH=$shim:$PATH unshare -m --propagation private \
		sh -c 'mount -t tmpfs tmpfs /mnt && exec bash -e -c "$1"' sh "$recipe" 2>&1)
	rc=$?
	rm -rf "$shim" /tmp/disk.img
	printf '%s\n' "$out" | sed 's/^/# /'
	ver=$(modinfo -F version loopfs)
	[ "$rc" -eq 0 ] &&
		[ "$(printf '%s\n' "$out" | grep -cE ' 0 +0 .* made-here$')" -eq 2 ] &&
		printf '%s\n' "$out" | grep -qx "loopfs-run $ver"
}
if quick_start >"$log" 2>&1; then
	sed 's/^/# /' "$log"
	tap OK "loopfs-run's quick start, as installed, works (the container owns what it made)"
else
	tap FAIL "loopfs-run's quick start, as installed, works (the container owns what it made)" "$log"
fi
# containerd with its default NRI settings but for the socket finds the
# plugin where the package put it, starts it and synchronizes with it.
# Its root, state and CNI configuration directory are in a scratch
# directory: the guest's root is read-only (and CRI, which starts the NRI
# plugins, does not start without the CNI directory).
preinstalled_plugin() {
	local w pid rc=1
	w=$(mktemp -d)
	cat >"$w/config.toml" <<-EOF
	version = 3
	root = "$w/root"
	state = "$w/state"
	[grpc]
	  address = "$w/containerd.sock"
	[plugins."io.containerd.cri.v1.runtime".cni]
	  conf_dir = "$w/cni"
	[plugins."io.containerd.nri.v1.nri"]
	  socket_path = "$w/nri.sock"
	EOF
	mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
	containerd --config "$w/config.toml" >"$w/log" 2>&1 &
	pid=$!
	for _ in $(seq 300); do
		if grep -q 'pre-installed NRI plugin \\"[0-9]*-\{0,1\}loopfs\\" synchronization success' "$w/log"; then
			rc=0
			break
		fi
		sleep 0.1
	done
	pgrep -a -f /opt/nri/plugins/50-loopfs | sed 's/^/# running: /'
	kill "$pid" && wait "$pid"
	grep -i 'nri\|level=warn\|level=error' "$w/log" | cut -c 1-300
	rm -rf "$w"
	return "$rc"
}
cv=$(containerd --version 2>/dev/null | awk '{ print $3 }')
case $cv in
"")
	tap OK "containerd starts the pre-installed NRI plugin # SKIP no containerd in the release's userland" ;;
v1.* | 1.*)
	tap OK "containerd starts the pre-installed NRI plugin # SKIP containerd $cv has NRI off by default" ;;
*)
	if preinstalled_plugin >"$log" 2>&1; then
		sed 's/^/# /' "$log"
		tap OK "containerd $cv starts the NRI plugin loopfs-nri installed as /opt/nri/plugins/50-loopfs"
	else
		tap FAIL "containerd $cv starts the NRI plugin loopfs-nri installed as /opt/nri/plugins/50-loopfs" "$log"
	fi
	;;
esac
[ "$tap_failed" -eq 0 ]
