#!/bin/bash
# lint.sh: checkpatch.pl --strict (from Debian's linux-source-6.1) on the
# module's sources and kernel-doc -Wall (from linux-source-6.12: 6.1's does
# not check return values) on its headers. Sparse is not here: every module
# build runs it on what it compiles (tests/harness/build-module.sh), for
# every supported kernel with that release's sparse. Then docs/tests.md's
# table of which row runs which suite against tests/harness/rows.sh,
# which reads the rows from releases.sh. Prints TAP.
# Zero findings pass. Justified exceptions: ENOSYS (loop-control answers
# unknown ioctls with -ENOSYS because the in-tree driver does, see
# loopfs_ctl_ioctl()) and the source lines in $justified below.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
out=$src/.build/lint
tarball=/usr/src/linux-source-6.1.tar.xz
tarball_612=/usr/src/linux-source-6.12.tar.xz
sources=(loopfs.c loopfs_fs.c loopfs_views.c loopfs_uevent.c limits.c loopfs_limits.h loopfs.h loopfs_abi.h loop_shim.c loop_shim_io.c loop_shim_internal.h loop_shim.h compat.h)
mkdir -p "$out"

echo "TAP version 13"
echo "1..3"
n=0 failed=0

# Findings that are right as they are, named by the source line they are
# about.  loopfs_blk_fops is the block layer's file operations (not
# exported) copied at load time with another open(), so it cannot be const.
# compat.h's QSTR() is the later kernels' own definition, which names its
# argument twice (pointer and length) to make an addressable struct qstr;
# its callers pass a plain name. kobject_uevent_env() takes its extra
# variables as a char *[], which a const array cannot be passed as.
justified=(
	'static struct file_operations loopfs_blk_fops;'
	'#define QSTR(n)			((struct qstr)QSTR_INIT(n, strlen(n)))'
	'	char *envp[] = { "DISK_MEDIA_CHANGE=1", NULL };'
)
# unjustified: the "file:line: TYPE: message" lines on stdin whose source
# line is not in $justified.
unjustified() {
	local f l rest j line
	while IFS=: read -r f l rest; do
		[ -n "$f" ] || continue
		line=$(sed -n "${l}p" "$src/$f")
		for j in "${justified[@]}"; do
			[ "$line" != "$j" ] || continue 2
		done
		echo "$f:$l:$rest"
	done
}

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
	all=$(grep -E '(WARNING|ERROR|CHECK):' "$report")
	findings=$(unjustified <<<"$all")
	if [ -n "$findings" ] || { [ "$rc" -ne 0 ] && [ -z "$all" ]; }; then
		sed 's/^/# /' "$report"
		echo "# (checkpatch exit status $rc)"
		failed=$((failed + 1))
		echo "not ok $n - checkpatch --strict finds nothing in the module sources"
	else
		echo "ok $n - checkpatch --strict finds nothing in the module sources"
	fi
fi

# The headers document what the other files call: kernel-doc must find
# every parameter, member and return value described.
n=$((n + 1))
kerneldoc=$out/linux-source-6.12/scripts/kernel-doc
report=$out/kernel-doc.txt
if [ ! -f "$kerneldoc" ] && ! tar -C "$out" -xf "$tarball_612" \
	linux-source-6.12/scripts/kernel-doc >"$report" 2>&1; then
	sed 's/^/# /' "$report"
	failed=$((failed + 1))
	echo "not ok $n - kernel-doc -Wall finds nothing in the headers (no kernel-doc from $tarball_612)"
else
	(cd "$src" && perl "$kerneldoc" -none -Wall loop_shim.h loopfs_limits.h loopfs.h) >"$report" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ] || [ -s "$report" ]; then
		sed 's/^/# /' "$report"
		echo "# (kernel-doc exit status $rc)"
		failed=$((failed + 1))
		echo "not ok $n - kernel-doc -Wall finds nothing in the headers"
	else
		echo "ok $n - kernel-doc -Wall finds nothing in the headers"
	fi
fi

# The table of suites per row in docs/tests.md, between its markers, is
# what rows.sh makes of releases.sh now.
n=$((n + 1))
doc_table=$(sed -n '/^<!-- rows.sh: begin -->$/,/^<!-- rows.sh: end -->$/p' \
	"$src/docs/tests.md" | sed '1d;$d')
if [ -n "$doc_table" ] && [ "$doc_table" = "$("$src/tests/harness/rows.sh")" ]; then
	echo "ok $n - docs/tests.md's table of suites per row is tests/harness/rows.sh's"
else
	diff <(echo "$doc_table") <("$src/tests/harness/rows.sh") | sed 's/^/# /'
	failed=$((failed + 1))
	echo "not ok $n - docs/tests.md's table of suites per row is tests/harness/rows.sh's"
fi

[ "$failed" -eq 0 ]
