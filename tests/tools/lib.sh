# shellcheck shell=bash
# TAP helpers for the tools suites (tests/tools/*.sh).
#
#   tap_plan N; t "name" func [args...]; t_skip "name" "why"; tap_exit
# Each test function runs in a subshell with `set -euo pipefail`; its output
# is printed as TAP diagnostics when it fails, its "DIAG: " lines always.

T_N=0
T_FAILED=0

tap_plan() {
	echo "TAP version 13"
	echo "1..$1"
}

t() {
	local name=$1 rc=0 log
	shift
	T_N=$((T_N + 1))
	log=$(mktemp)
	( set -euo pipefail; "$@" ) >"$log" 2>&1 </dev/null &
	wait $! || rc=$?
	if [ "$rc" -eq 0 ]; then
		echo "ok $T_N - $name"
		sed -n 's/^DIAG: /# /p' "$log"
	else
		echo "not ok $T_N - $name"
		sed 's/^/# /' "$log"
		echo "# (exit status $rc)"
		T_FAILED=$((T_FAILED + 1))
	fi
	rm -f "$log"
}

t_skip() {
	T_N=$((T_N + 1))
	echo "ok $T_N - $1 # SKIP $2"
}

tap_exit() {
	[ "$T_FAILED" -eq 0 ]
	exit $?
}

fail() {
	echo "FAIL: $*" >&2
	return 1
}

# expect_eq WANT GOT WHAT
expect_eq() {
	[ "$1" = "$2" ] || fail "$3: want '$1', got '$2'"
}

# expect_in NEEDLE HAYSTACK WHAT
expect_in() {
	case $2 in
	*"$1"*) ;;
	*) fail "$3: '$1' not in: $2" ;;
	esac
}

# Host names of all loopfs block devices right now, one per line.
loopfs_disks() {
	local d
	for d in /sys/block/loopfs*; do
		[ -e "$d" ] && echo "${d##*/}"
	done
	true
}

# wait_gone PATH [SECONDS]: true once PATH no longer exists
wait_gone() {
	local i
	for ((i = 0; i < ${2:-10} * 10; i++)); do
		[ -e "$1" ] || return 0
		sleep 0.1
	done
	return 1
}
