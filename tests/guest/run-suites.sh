#!/bin/bash
# Guest side of the test harness: runs as PID 1 after switch_root (see
# tests/harness/guest-init).  Loads the stock loop driver and loopfs.ko, runs
# every suite in $SUITES with its own timeout and a fresh scratch dir, checks
# dmesg after each, writes TAP and a summary to $LOOPFS_RESULTS, powers off.
#
# Per suite, $LOOPFS_RESULTS/NN-name.tap (its output), NN-name.result
# ("passed failed skipped seconds name notes...") and on trouble NN-name.dmesg;
# at the end $LOOPFS_RESULTS/summary: "passed failed skipped kernel_log_failures".
set -uo pipefail

R=${LOOPFS_RESULTS:?}
HARNESS=$LOOPFS_SRC/tests/harness
. "$LOOPFS_SRC/tests/guest/common.sh"
SUITE_TIMEOUT=${SUITE_TIMEOUT:-300}
SUITE_TIMEOUT_SCALE=${SUITE_TIMEOUT_SCALE:-1}
export LOOPFS_UNPRIV_UID=${LOOPFS_UNPRIV_UID:-1000}
export LOOPFS_SRC LOOPFS_BUILD LOOPFS_KO LOOPFS_KVER LOOPFS_QUICK

total_pass=0 total_fail=0 total_skip=0 klog_fail=0

say() { echo "loopfs-runner: $*"; }

finish() {
	echo "$total_pass $total_fail $total_skip $klog_fail" >"$R/summary"
	say "done: $total_pass passed, $total_fail failed, $total_skip skipped"
	power_off
}

# The kernel log since the last call, which clears it: the serial console
# keeps all of it for the host's own scan.
dmesg_take() { dmesg -c; }

# A fatal set-up problem: one failure, nothing else runs.
setup_fail() {
	say "SETUP FAILED: $*"
	echo "not ok - setup: $*" >"$R/00-setup.tap"
	echo "0 1 0 0 setup $*" >"$R/00-setup.result"
	total_fail=$((total_fail + 1))
	finish
}

module_loaded() {
	local name _
	while read -r name _; do
		[ "$name" != "$1" ] || return 0
	done </proc/modules
	return 1
}

load_modules() {
	module_loaded loop || modprobe loop || return 1
	module_loaded loopfs || insmod "$LOOPFS_KO" || return 1
}

# timeout for one suite: "# loopfs-timeout: N" in the first 20 lines of a
# script, else the default
suite_timeout() {
	local line n=0 t=$SUITE_TIMEOUT
	while [ "$n" -lt 20 ] && IFS= read -r line; do
		n=$((n + 1))
		if [[ $line =~ loopfs-timeout:\ *([0-9]+) ]]; then
			t=${BASH_REMATCH[1]}
			break
		fi
	done <"$1" 2>/dev/null
	echo $((t * SUITE_TIMEOUT_SCALE))
}

# count_tap FILE: sets the caller's plan ("" for none), pass, fail and
# skip from a suite's TAP with shell builtins: every process started costs,
# on a debug kernel most.
count_tap() {
	local line skip_re='^ok( .*)?#[[:space:]]*[sS][kK][iI][pP]'
	while IFS= read -r line; do
		case $line in
		"ok" | "ok "*)
			pass=$((pass + 1))
			[[ ! $line =~ $skip_re ]] || skip=$((skip + 1))
			;;
		"not ok" | "not ok "*) fail=$((fail + 1)) ;;
		1..*)
			[ -z "$plan" ] || continue
			[[ ! $line =~ ^1\.\.([0-9]+) ]] || plan=${BASH_REMATCH[1]}
			;;
		esac
	done <"$1"
}

run_suite() {
	local idx=$1 suite=$2 name tag t scratch rc secs
	local plan="" pass=0 fail=0 skip=0 ran notes="" sfail=0
	name=${suite#"$LOOPFS_SRC"/}
	printf -v tag '%02d-%s' "$idx" "${name//\//_}"
	t=$(suite_timeout "$suite")
	echo "$name" >"$R/progress"
	sync
	say "RUN $name (timeout ${t}s)"

	# Every suite starts with an empty /mnt, whatever the previous one left.
	umount -R -l /mnt 2>/dev/null
	mount -t tmpfs -o mode=0755 tmpfs /mnt

	scratch=$(mktemp -d /tmp/suite.XXXXXX)
	SECONDS=0
	(cd "$scratch" && exec timeout -k 10 "$t" "$suite") >"$R/$tag.tap" 2>&1 </dev/null
	rc=$?
	secs=$SECONDS
	cd /
	rm -rf --one-file-system "$scratch" 2>/dev/null

	count_tap "$R/$tag.tap"
	pass=$((pass - skip))
	ran=$((pass + fail + skip))

	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		notes+=" timed out after ${t}s;"; sfail=1
	elif [ -z "$plan" ]; then
		notes+=" no TAP plan (exit $rc);"; sfail=1
	elif [ "$plan" -eq 0 ] && [ "$ran" -eq 0 ] && [ "$rc" -ne 0 ]; then
		notes+=" skipped itself but exited with status $rc;"; sfail=1
	elif [ "$plan" -eq 0 ] && [ "$ran" -eq 0 ]; then
		# "1..0 # SKIP reason": the whole suite is skipped
		skip=1
		notes+=" skipped: $(grep -m1 -E '^1\.\.0' "$R/$tag.tap");"
	elif [ "$plan" -ne "$ran" ]; then
		notes+=" planned $plan, ran $ran;"; sfail=1
	elif [ "$rc" -ne 0 ] && [ "$rc" -ne 4 ] && [ "$fail" -eq 0 ]; then
		notes+=" exit status $rc with no failed test;"; sfail=1
	fi

	if dmesg_take >"$R/$tag.dmesg" && [ -s "$R/$tag.dmesg" ] &&
		"$HARNESS/logscan.sh" --suite "$suite" "$R/$tag.dmesg"; then
		notes+=" kernel log problem (see $tag.dmesg);"; sfail=$((sfail + 1))
		klog_fail=$((klog_fail + 1))
	else
		rm -f "$R/$tag.dmesg"
	fi

	if ! module_loaded loopfs || ! module_loaded loop; then
		notes+=" left loop/loopfs unloaded;"; sfail=$((sfail + 1))
		load_modules || setup_fail "cannot reload modules after $name"
	fi

	fail=$((fail + sfail))
	echo "$pass $fail $skip $secs $name$notes" >"$R/$tag.result"
	total_pass=$((total_pass + pass))
	total_fail=$((total_fail + fail))
	total_skip=$((total_skip + skip))
	say "END $name: $pass passed, $fail failed, $skip skipped (${secs}s)$notes"
}

main() {
	say "start at $(cut -d' ' -f1 /proc/uptime)s on $(uname -r)"
	dmesg_take >/dev/null
	load_modules || setup_fail "cannot load loop and $LOOPFS_KO"
	wait_for_crng || setup_fail "the CRNG was not ready within 60 s"
	unshare -Ur true || setup_fail "user namespaces cannot be created"
	if dmesg_take >"$R/00-setup.dmesg" && "$HARNESS/logscan.sh" "$R/00-setup.dmesg"; then
		klog_fail=$((klog_fail + 1))
		setup_fail "kernel log problem while loading modules"
	fi
	rm -f "$R/00-setup.dmesg"

	local i=0 s
	for s in $SUITES; do
		i=$((i + 1))
		run_suite "$i" "$s"
	done
	rm -f "$R/progress"
	finish
}

main
