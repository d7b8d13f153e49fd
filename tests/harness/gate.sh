# shellcheck shell=bash
# gate.sh: how `make check` and `make soak` turn what they ran into counts.
# Sourced by check.sh, soak.sh and the harness self-test; expects $src (the
# repository) and keeps its counts in host_pass / host_fail.
#
# The rule everywhere: a run counts as passed only if it says so in full. A
# script that exits non-zero, a TAP stream without a plan or with fewer
# tests than planned, a guest without a totals file: each is a failure, never
# "nothing to count".

host_pass=${host_pass:-0}
host_fail=${host_fail:-0}

# host_result OK|FAIL DESCRIPTION
host_result() {
	if [ "$1" = OK ]; then
		host_pass=$((host_pass + 1))
		echo "ok - $2"
	else
		host_fail=$((host_fail + 1))
		echo "not ok - $2"
	fi
}

# host_suite NAME COMMAND...: run a host-side TAP suite and add up its results.
host_suite() {
	local name=$1 out p f s plan rc
	shift
	out=$(mktemp)
	"$@" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	# A skipped test is neither a pass nor a failure.
	s=$(grep -cE '^ok .*# SKIP' "$out")
	p=$(($(grep -cE '^ok( |$)' "$out") - s))
	f=$(grep -cE '^not ok( |$)' "$out")
	plan=$(grep -m1 -oE '^1\.\.[0-9]+' "$out" | cut -d. -f3)
	rm -f "$out"
	if [ -z "$plan" ] || [ $((p + f + s)) -eq 0 ]; then
		f=$((f + 1))
		echo "not ok - $name produced no results"
	elif [ "$plan" -ne $((p + f + s)) ]; then
		echo "not ok - $name planned $plan tests and ran $((p + f + s))"
		f=$((f + 1))
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "not ok - $name exited with status $rc"
	fi
	host_pass=$((host_pass + p)) host_fail=$((host_fail + f)) host_skip=$((${host_skip:-0} + s))
}

# guest_row NAME COMMAND...: run a guest (COMMAND writes the totals file of
# kernel NAME, .build/results/NAME.totals) and print "NAME passed failed
# skipped".  A guest run that exits non-zero has failed whatever its totals
# say; a missing totals file is a failure too.  COMMAND's output goes to
# stderr.
guest_row() {
	local name=$1 totals=$src/.build/results/$1.totals rc=0 gp=0 gf=0 gs=0
	shift
	rm -f "$totals"
	"$@" >&2 || rc=$?
	[ ! -s "$totals" ] || read -r gp gf gs _ <"$totals"
	if [ ! -s "$totals" ] && [ "$gf" -eq 0 ]; then
		echo "not ok - guest $name wrote no totals (exit status $rc)" >&2
		gf=1
	elif [ "$rc" -ne 0 ] && [ "$gf" -eq 0 ]; then
		echo "not ok - guest $name exited with status $rc and reported no failure" >&2
		gf=1
	fi
	echo "$name $gp $gf $gs"
}

# selected KVER: is KVER chosen by $KERNELS?  A word matches a version or
# its prefix up to a dot or dash (KERNELS=6.1 means 6.1.*, 6.12 means 6.12.*
# including -rt); no KERNELS chooses every kernel.
selected() {
	local k=$1 w
	[ -n "${KERNELS:-}" ] || return 0
	for w in $KERNELS; do
		case $k in "$w" | "$w".* | "$w"-*) return 0 ;; esac
	done
	return 1
}
