#!/bin/bash
# lint.sh: checkpatch.pl --strict (from Debian's linux-source-6.1) and sparse
# (make C=2) on the module's sources, for every supported kernel. Prints TAP.
# Zero findings pass. The one justified exception is ENOSYS: loop-control
# answers unknown ioctls with -ENOSYS because the in-tree driver does (see
# loopfs_ctl_ioctl()).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
out=$src/.build/lint
tarball=/usr/src/linux-source-6.1.tar.xz
sources=(loopfs.c loopfs.h loop_shim.c loop_shim.h compat.h)
mkdir -p "$out"

kvers=$("$src/tests/harness/kvers.sh" all)
echo "TAP version 13"
echo "1..$((1 + $(echo "$kvers" | wc -w)))"
n=0 failed=0

n=$((n + 1))
checkpatch=$out/linux-source-6.1/scripts/checkpatch.pl
report=$out/checkpatch.txt
if [ ! -x "$checkpatch" ] && ! tar -C "$out" -xf "$tarball" linux-source-6.1/scripts/checkpatch.pl \
	linux-source-6.1/scripts/spelling.txt \
	linux-source-6.1/scripts/const_structs.checkpatch >"$report" 2>&1; then
	sed 's/^/# /' "$report"
	failed=$((failed + 1))
	echo "not ok $n - checkpatch --strict finds nothing in the module sources (no checkpatch.pl from $tarball)"
else
	(cd "$src" && "$checkpatch" --strict --no-tree --terse --ignore ENOSYS \
		-f "${sources[@]}") >"$report" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ] || grep -qE '(WARNING|ERROR|CHECK):' "$report"; then
		sed 's/^/# /' "$report"
		echo "# (checkpatch exit status $rc)"
		failed=$((failed + 1))
		echo "not ok $n - checkpatch --strict finds nothing in the module sources"
	else
		echo "ok $n - checkpatch --strict finds nothing in the module sources"
	fi
fi

for k in $kvers; do
	n=$((n + 1))
	dir=$out/sparse-$k
	rm -rf "$dir" && mkdir -p "$dir"
	cp "$src/Kbuild" "${sources[@]/#/$src/}" "$dir/"
	log=$dir/sparse.log
	make -C "/lib/modules/$k/build" M="$dir" C=2 modules >"$log" 2>&1
	rc=$?
	if [ $rc -ne 0 ] || grep -qE '(warning|error):' "$log"; then
		grep -E '(warning|error):' "$log" | sed 's/^/# /'
		failed=$((failed + 1))
		echo "not ok $n - sparse (C=2) is clean for $k"
	else
		echo "ok $n - sparse (C=2) is clean for $k"
	fi
done
[ "$failed" -eq 0 ]
