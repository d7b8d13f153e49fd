#!/bin/bash
# build-module.sh KVER: copy the module sources (Kbuild, compat.mk,
# dkms.conf, *.c, *.h) into .build/KVER/ and build loopfs.ko there against that kernel's
# headers with warnings as errors, on this machine or, for a later release's
# kernel, chrooted in that release's root (releases.sh).  Every file
# compiled also goes through sparse (the release's own): any
# compiler, sparse, modpost or linker warning fails the build, and a failed
# build drops its objects so that the next one checks every file again.
set -euo pipefail

kver=${1:?usage: build-module.sh KVER}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
out=$src/.build/$kver
. "$here/releases.sh"

# A later release's kernel is built chrooted in its root, by its compiler.
root=$(kver_root "$kver")
kdir=/lib/modules/$kver/build
[ -d "$root$kdir" ] || kdir=/usr/src/linux-headers-$kver
if [ ! -d "$root$kdir" ]; then
	echo "build-module: no headers for $kver (looked in ${root:-/}lib/modules/$kver/build and $root$kdir)" >&2
	exit 1
fi
run=()
[ -z "$root" ] || run=(in_root "$root")
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

echo "  BUILD   loopfs.ko for $kver${root:+ (chrooted in ${root##*/})}"
log=$out/build.log
rc=0 unchecked=
# KBUILD_CHECKSRC=1 is C=1 that stays on: kbuild from 6.2 on asks
# scripts/checker-valid.sh whether sparse works, which Debian's headers
# packages leave out, and without an answer it turns C=1 off (saying so in
# the log). Whether sparse did check each file compiled is verified below.
"${run[@]}" make -j"$(nproc)" -C "$kdir" M="$out" KBUILD_CHECKSRC=1 KCFLAGS=-Werror modules >"$log" 2>&1 || rc=$?
if [ "$rc" -eq 0 ]; then
	unchecked=$(sed -n 's|^ *CC \[M\] *\(.*/\)\{0,1\}\([^/]*\)\.o$|\2|p' "$log" |
		while read -r o; do
			[ -f "$out/$o.c" ] && [[ $o != *.mod ]] || continue
			grep -qE "^ *CHECK +(.*/)?$o\.c$" "$log" || echo "$o.c"
		done)
	[ -z "$unchecked" ] || echo "build-module: sparse did not check: $unchecked" >>"$log"
fi
if [ "$rc" -ne 0 ] || [ -n "$unchecked" ] || grep -qiE 'warning|error:' "$log"; then
	cat "$log"
	echo "build-module: loopfs.ko for $kver FAILED (log: $log)" >&2
	rm -f "$out"/*.o "$out/loopfs.ko"
	exit 1
fi
echo "  OK      $out/loopfs.ko"
