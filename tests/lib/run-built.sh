# shellcheck shell=bash
# For guest suites whose program `make tests-build` builds on the host (the
# guest sees the host's tree, .build included, read-only):
#   run_built PATH [ARG...]
# execs $LOOPFS_BUILD/PATH (default: .build at the top of this tree) with
# ARGs.  If it was not built, the suite is one failed test, never a skip.
run_built() {
	local build=${LOOPFS_BUILD:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.build}
	local bin=$build/$1

	shift
	if [ ! -x "$bin" ]; then
		echo "TAP version 13"
		echo "1..1"
		echo "not ok 1 - $bin is built (make tests-build on the host)"
		exit 1
	fi
	exec "$bin" "$@"
}
