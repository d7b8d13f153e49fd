#!/bin/bash
# DKMS cycle on the host (builds and installs, never loads): dkms add, then
# for each guest kernel dkms build + dkms install and a vermagic check of the
# installed module under /lib/modules/KVER/updates/dkms/, then dkms remove
# --all and a check that nothing is left behind.  Prints TAP.
set -uo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
ver=$(make -s --no-print-directory -C "$src" version 2>/dev/null)
mapfile -t kvers < <("$src/tests/harness/kvers.sh" guest)
. "$src/tests/harness/tap.sh"

tap_plan $((3 * ${#kvers[@]} + 3))

if [ -z "$ver" ] || [ "$(id -u)" -ne 0 ] || ! command -v dkms >/dev/null; then
	echo "# need root, dkms and a PACKAGE_VERSION in dkms.conf" >&2
	for ((i = 0; i < 3 * ${#kvers[@]} + 3; i++)); do tap FAIL "dkms prerequisites"; done
	exit 1
fi

present() { dkms status -m loopfs -v "$ver" 2>/dev/null | grep -q .; }
cleanup() {
	present && dkms remove -m loopfs -v "$ver" --all >/dev/null 2>&1
	rm -rf "/usr/src/loopfs-$ver" "${stage:-}"
}
trap cleanup EXIT

if present; then
	echo "# loopfs/$ver was already registered with dkms; removing it first"
	dkms remove -m loopfs -v "$ver" --all >/dev/null 2>&1
fi
rm -rf "/usr/src/loopfs-$ver"

# A clean source tree (no build output, .git or .build) for dkms add to copy.
stage=$(mktemp -d)
mkdir "$stage/loopfs-$ver"
cp -p "$src/Makefile" "$src/dkms.conf" "$src/Kbuild" "$src"/*.c "$src"/*.h \
	"$stage/loopfs-$ver/" 2>/dev/null

log=$(mktemp)
run() {
	# run the command quietly; show its output only when it fails
	if "$@" >"$log" 2>&1; then
		return 0
	fi
	sed 's/^/# /' "$log" | tail -n 40
	return 1
}

if run dkms add "$stage/loopfs-$ver"; then
	tap OK "dkms add loopfs/$ver"
else
	tap FAIL "dkms add loopfs/$ver"
fi

for k in "${kvers[@]}"; do
	if run dkms build -m loopfs -v "$ver" -k "$k"; then
		tap OK "dkms build for $k"
	else
		tap FAIL "dkms build for $k"
	fi
	if run dkms install -m loopfs -v "$ver" -k "$k"; then
		tap OK "dkms install for $k"
	else
		tap FAIL "dkms install for $k"
	fi
	ko=$(ls "/lib/modules/$k/updates/dkms"/loopfs.ko* 2>/dev/null | head -n 1)
	vm=$( [ -n "$ko" ] && modinfo -F vermagic "$ko" 2>/dev/null | awk '{print $1}')
	if [ -n "$ko" ] && [ "$vm" = "$k" ]; then
		tap OK "installed $ko has vermagic $k"
	else
		echo "# module: ${ko:-none}, vermagic: ${vm:-none}"
		tap FAIL "installed loopfs.ko for $k has vermagic $k"
	fi
done

if run dkms remove -m loopfs -v "$ver" --all; then
	tap OK "dkms remove --all"
else
	tap FAIL "dkms remove --all"
fi
left=$(ls /lib/modules/*/updates/dkms/loopfs.ko* 2>/dev/null)
if [ -z "$left" ] && ! present; then
	tap OK "nothing left installed after remove"
else
	echo "# left behind: $left"
	tap FAIL "nothing left installed after remove"
fi
rm -f "$log"
[ "$tap_failed" -eq 0 ]
