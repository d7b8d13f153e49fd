#!/bin/bash
# build-module.sh KVER: copy the module sources (Kbuild, compat.mk,
# dkms.conf, *.c, *.h) into .build/KVER/ and build loopfs.ko there against that kernel's
# headers with warnings as errors.  Any compiler, modpost or linker warning
# fails the build.
set -euo pipefail

kver=${1:?usage: build-module.sh KVER}
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$src/.build/$kver

kdir=/lib/modules/$kver/build
[ -d "$kdir" ] || kdir=/usr/src/linux-headers-$kver
if [ ! -d "$kdir" ]; then
	echo "build-module: no headers for $kver (looked in /lib/modules/$kver/build and $kdir)" >&2
	exit 1
fi
if [ ! -f "$src/Kbuild" ]; then
	echo "build-module: $src/Kbuild is missing" >&2
	exit 1
fi

mkdir -p "$out"
# Drop sources that no longer exist in the tree, then copy (mtimes kept so
# kbuild only rebuilds what changed).
for f in "$out"/*.c "$out"/*.h; do
	[ -e "$f" ] || continue
	[ -e "$src/${f##*/}" ] || rm -f "$f"
done
cp -p "$src/Kbuild" "$src/compat.mk" "$src/dkms.conf" "$out/"
for f in "$src"/*.c "$src"/*.h; do
	[ -e "$f" ] && cp -p "$f" "$out/"
done

echo "  BUILD   loopfs.ko for $kver"
log=$out/build.log
rc=0
make -C "$kdir" M="$out" KCFLAGS=-Werror modules >"$log" 2>&1 || rc=$?
if [ "$rc" -ne 0 ] || grep -qi 'warning' "$log"; then
	cat "$log"
	echo "build-module: loopfs.ko for $kver FAILED (log: $log)" >&2
	rm -f "$out/loopfs.ko"
	exit 1
fi
echo "  OK      $out/loopfs.ko"
