#!/bin/bash
# The harness's own test: feeds `make check`'s machinery runs that must count
# as failures (a failing, short, plan-less or crashing suite, a kernel log
# splat, a stale totals file, a guest that panics) and checks that each one
# does, and that a passing suite still passes.  Boots two short guests of the
# 6.1 kernel with the fake suites in suites/.  Prints TAP.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
harness=$(cd "$here/.." && pwd)
src=$(cd "$harness/../.." && pwd)
. "$harness/gate.sh"
. "$harness/tap.sh"
fake=tests/harness/harness-test/suites

expect() {
	# expect DESCRIPTION COMMAND...: one test, passed when COMMAND succeeds
	local what=$1
	shift
	if "$@"; then tap OK "$what"; else tap FAIL "$what" "$log"; fi
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log=$work/log

tap_plan 28

# --- counting host-side TAP suites -------------------------------------------
fake_tap() {
	# fake_tap EXIT_STATUS LINE...: a TAP "suite" printing LINEs
	local rc=$1
	shift
	printf '%s\n' "$@"
	return "$rc"
}
counts() {
	# counts EXPECTED_PASS EXPECTED_FAIL COMMAND...
	local want_p=$1 want_f=$2
	shift 2
	host_pass=0 host_fail=0 host_skip=0
	host_suite fake "$@" >"$log" 2>&1
	echo "counted $host_pass passed, $host_fail failed" >>"$log"
	[ "$host_pass" -eq "$want_p" ] && [ "$host_fail" -eq "$want_f" ]
}
expect "a host suite that passes in full counts its tests as passed" \
	counts 2 0 fake_tap 0 1..2 "ok 1" "ok 2"
expect "a host suite that exits non-zero without a failed test counts as failed" \
	counts 1 1 fake_tap 1 1..1 "ok 1"
expect "a host suite that runs fewer tests than planned counts as failed" \
	counts 1 1 fake_tap 0 1..2 "ok 1"
expect "a host suite without a plan counts as failed" \
	counts 1 1 fake_tap 0 "ok 1"
skip_counted() {
	host_pass=0 host_fail=0 host_skip=0
	host_suite fake fake_tap 0 1..2 "ok 1" "ok 2 - x # SKIP not here" >"$log" 2>&1
	echo "counted $host_pass passed, $host_fail failed, $host_skip skipped" >>"$log"
	[ "$host_pass" -eq 1 ] && [ "$host_fail" -eq 0 ] && [ "$host_skip" -eq 1 ]
}
expect "a host suite's skipped test counts as skipped, not as passed" skip_counted

# run-guest.sh reads SUITES_EXCEPT as one line of words: a second line
# would be run, not left out.
except_one_line() {
	local r
	. "$harness/releases.sh"
	for r in bookworm "${root_releases[@]}"; do
		[ "$(release_suites_except "$r" | wc -l)" -eq 1 ] || return 1
	done
}
expect "each release's suites left out of its row are one line of words" except_one_line

# --- kernel log lines a suite declares --------------------------------------
# clean_with ALLOW LINE...: logscan finds nothing in LINEs given ALLOW
clean_with() {
	local allow=$1
	shift
	printf '%s\n' "$@" >"$work/dmesg"
	! LOGSCAN_ALLOW=$allow "$harness/logscan.sh" "$work/dmesg" >"$log" 2>&1
}
alloc_report=("[ 1.0] x: vmalloc error: size 32768, vm_struct allocation failed"
	"[ 1.1] CPU: 0 PID: 258 Comm: x" "[ 1.2] Call Trace:" "[ 1.3]  <TASK>")
memcg_report=("[ 2.0] x invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL)"
	"[ 2.1] Call Trace:"
	"[ 2.2] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null)")
memcg_nokill_report=("[ 3.0] kworker/u8:3 invoked oom-killer: gfp_mask=0xc00(GFP_NOIO)"
	"[ 3.1] Call Trace:" "[ 3.2] Memory cgroup stats for /g:"
	"[ 3.3] Out of memory and no killable processes...")
both_declared() {
	clean_with "injected allocation failure" "${alloc_report[@]}" &&
		! clean_with "" "${alloc_report[@]}" &&
		! clean_with "injected allocation failure" "${alloc_report[@]}" \
			"[ 1.4] WARNING: CPU: 0 PID: 258 at x" &&
		! clean_with "injected allocation failure" "[ 1.4] Call Trace:" &&
		clean_with "memory cgroup OOM kill" "${memcg_report[@]}" &&
		! clean_with "memory cgroup OOM kill" \
			"${memcg_report[@]/CONSTRAINT_MEMCG/CONSTRAINT_NONE}" &&
		clean_with "memory cgroup OOM kill" "${memcg_nokill_report[@]}" &&
		! clean_with "memory cgroup OOM kill" \
			"${memcg_nokill_report[@]/Memory cgroup stats/Mem-Info}"
}
expect "a declared allocation failure or memory cgroup OOM report (with a victim or none) passes; its WARNING, a stray trace or a system-wide OOM fails" \
	both_declared
expect "only the block layer's errors and the two report kinds can be declared" \
	[ "$(printf '%s\n' '# loopfs-expect-log: WARNING' \
		'# loopfs-expect-log: injected allocation failure' >"$work/s.sh";
		"$harness/logscan.sh" --expected "$work/s.sh")" = "injected allocation failure" ]

# --- reading a guest's totals -------------------------------------------------
mkdir -p "$src/.build/results"
fake_guest() {
	# fake_guest NAME EXIT_STATUS [TOTALS]: a "guest run" writing TOTALS
	[ -z "${3:-}" ] || echo "$3" >"$src/.build/results/$1.totals"
	return "$2"
}
row_is() {
	# row_is EXPECTED_ROW NAME EXIT_STATUS [TOTALS]
	local want=$1 got
	shift
	got=$(guest_row "$1" fake_guest "$@" 2>"$log")
	echo "row: $got (want $want)" >>"$log"
	rm -f "$src/.build/results/$1.totals"
	[ "$got" = "$want" ]
}
g=harness-selftest-fake
expect "a guest that writes passing totals and exits 0 passes" \
	row_is "$g 5 0 1" "$g" 0 "5 0 1 9"
expect "a guest that exits non-zero fails even with passing totals" \
	row_is "$g 5 1 0" "$g" 1 "5 0 0 9"
expect "a guest that writes no totals fails" \
	row_is "$g 0 1 0" "$g" 0

stale_totals_removed() {
	local name=harness-selftest-stale totals=$src/.build/results/harness-selftest-stale.totals
	echo "99 0 0 1" >"$totals"
	if GUEST_RUN_NAME=$name GUEST_KERNEL=$work/no-such-kernel \
		"$harness/run-guest.sh" "$kver" "$fake/pass.sh" >"$log" 2>&1; then
		echo "run-guest.sh succeeded without a kernel" >>"$log"
		return 1
	fi
	[ ! -e "$totals" ] || { echo "the old totals file is still there" >>"$log"; return 1; }
}

kernels_nothing() {
	KERNELS="9.9 6.1x" selected "$kver" && return 1
	KERNELS=6.1 selected "$kver"
}

# --- guests running the fake suites ----------------------------------------
kver=$("$harness/kvers.sh" guest | grep -m1 -E '^6\.1\.')
if [ -z "$kver" ] || { [ ! -f "$src/.build/$kver/loopfs.ko" ] &&
	! "$harness/build-module.sh" "$kver" >"$log" 2>&1; }; then
	echo "no 6.1 guest kernel with a loopfs.ko built for it (${kver:-none})" >"$log"
	for ((i = tap_n; i < 26; i++)); do tap FAIL "a 6.1 guest for the harness self-test" "$log"; done
	exit 1
fi

expect "run-guest.sh removes the last run's totals before it can fail" stale_totals_removed
expect "KERNELS naming no kernel selects nothing, KERNELS=6.1 selects $kver" kernels_nothing

# result_of RUN SUITE: "passed failed skipped" the guest recorded for SUITE
result_of() {
	cat "$src/.build/results/$1"/*.result 2>/dev/null |
		awk -v s="$fake/$2" '$5 == s { print $1, $2, $3 }'
}
suite_failed() {
	local r
	r=$(result_of "$1" "$2")
	echo "$2: ${r:-no result}" >>"$log"
	[ -n "$r" ] && [ "$(echo "$r" | cut -d' ' -f2)" -gt 0 ]
}

run1=harness-selftest-suites
rc=0
GUEST_RUN_NAME=$run1 GUEST_TIMEOUT=300 SUITES= "$harness/run-guest.sh" "$kver" \
	$fake/pass.sh $fake/fail.sh $fake/short-plan.sh $fake/no-plan.sh \
	$fake/skip-bad-exit.sh $fake/bad-exit.sh $fake/warn-log.sh \
	$fake/io-error-log.sh $fake/timeout.sh $fake/unload.sh $fake/noexec.sh \
	$fake/expected-io-error.sh $fake/warn-declared.sh \
	>"$work/run1" 2>&1 || rc=$?
cp "$work/run1" "$log"
expect "a guest run with failing suites exits non-zero" [ "$rc" -ne 0 ]
expect "a passing suite beside them still passes" \
	[ "$(result_of $run1 pass.sh)" = "1 0 0" ]
expect "an I/O error a suite declares with loopfs-expect-log does not fail it" \
	[ "$(result_of $run1 expected-io-error.sh)" = "1 0 0" ]
for s in fail short-plan no-plan skip-bad-exit bad-exit warn-log io-error-log timeout unload \
	warn-declared; do
	case $s in
	fail) what="a failed test" ;;
	short-plan) what="fewer tests than planned" ;;
	no-plan) what="no TAP plan" ;;
	skip-bad-exit) what="a skip with a non-zero exit status" ;;
	bad-exit) what="a non-zero exit status" ;;
	warn-log) what="a kernel WARNING" ;;
	io-error-log) what="a loop device's I/O error in the kernel log" ;;
	timeout) what="a suite past its timeout" ;;
	unload) what="a suite unloading loopfs" ;;
	warn-declared) what="a kernel WARNING declared as expected" ;;
	esac
	cp "$work/run1" "$log"
	expect "$what fails its suite ($s.sh)" suite_failed $run1 $s.sh
done
cp "$work/run1" "$log"
expect "a suite without its executable bit fails the run" \
	grep -q "noexec.sh' names no executable suite" "$work/run1"

run2=harness-selftest-panic
rc=0
GUEST_RUN_NAME=$run2 GUEST_TIMEOUT=240 SUITES= "$harness/run-guest.sh" "$kver" \
	$fake/panic.sh $fake/pass.sh >"$log" 2>&1 || rc=$?
panic_named() {
	[ "$rc" -ne 0 ] &&
		grep -q "FAIL guest kernel panicked during $fake/panic.sh" "$log" &&
		grep -q -- "---- last 40 lines of the guest console" "$log" &&
		grep -q "FAIL 2 of 2 suites did not report a result" "$log"
}
expect "a guest panic fails the run by name, with the console's tail and the suites it lost" \
	panic_named

rm -rf "$src/.build/results/harness-selftest-"*
[ "$tap_failed" -eq 0 ]
