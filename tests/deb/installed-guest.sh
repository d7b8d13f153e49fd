#!/bin/bash
# Guest side of deb-install-test.sh (run-guest.sh --run): the module that
# DKMS installed from loopfs-dkms, with nothing loading it but the kernel
# asking modprobe for the filesystem type on `mount -t loop`; then the LWN
# article's recipe on it, and the quick start of the installed loopfs-run
# guide as written there.  Prints TAP.
set -uo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
. "$src/tests/harness/tap.sh"
kver=$(uname -r)
dkms_dir=/lib/modules/$kver/updates/dkms
log=$(mktemp)
trap 'rm -f "$log"' EXIT

loaded() { grep -q "^loopfs " /proc/modules; }

tap_plan 6

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
[ "$tap_failed" -eq 0 ]
