#!/bin/bash
# Guest side of deb-install-test.sh (run-guest.sh --run): the module that
# DKMS installed from loopfs-dkms, with nothing loading it but the kernel
# asking modprobe for the filesystem type on `mount -t loop`; then the LWN
# article's recipe on it.  Prints TAP.
set -uo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
. "$src/tests/harness/tap.sh"
kver=$(uname -r)
dkms_dir=/lib/modules/$kver/updates/dkms
log=$(mktemp)
trap 'rm -f "$log"' EXIT

loaded() { grep -q "^loopfs " /proc/modules; }

tap_plan 5

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
[ "$tap_failed" -eq 0 ]
