#!/bin/bash
# soak.sh: what `make soak` runs.  The guest suites of `make check`,
# SOAK_ROUNDS times (default 5) on every guest kernel, each round with fresh
# seeds (the fuzzer draws a new one whenever LOOPFS_FUZZ_SEED is unset).
# Nothing is retried: a test that fails once is reported with the round, the
# kernel, its seed and where its output is kept.  Last line:
# "N passed, N failed" summed over every round and kernel.
#
# Environment: SOAK_ROUNDS, KERNELS and SUITES as for make check,
# LOOPFS_QUICK (default 1, as in make check).
set -uo pipefail
exec 2>&1

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
MAKE=${MAKE:-make}
rounds=${SOAK_ROUNDS:-5}
export LOOPFS_QUICK=${LOOPFS_QUICK-1}
unset LOOPFS_FUZZ_SEED
cd "$src" || exit 1
. "$here/gate.sh"
. "$here/releases.sh"

t0=$(date +%s)
step() { echo; echo "=== $* ($(($(date +%s) - t0))s)"; }

case $rounds in
'' | *[!0-9]* | 0) echo "soak: SOAK_ROUNDS must be a positive number"; echo "0 passed, 1 failed"; exit 1 ;;
esac

step "builds"
guests=()
for k in $("$here/kvers.sh" guest); do
	selected "$k" || continue
	if "$here/build-module.sh" "$k"; then
		guests+=("$k")
	else
		host_result FAIL "build loopfs.ko for $k"
	fi
done
[ ${#guests[@]} -gt 0 ] || host_result FAIL "KERNELS='${KERNELS:-}' selects a guest kernel"
$MAKE --no-print-directory tests-build >/dev/null || host_result FAIL "make tests-build"

pass=$host_pass fail=$host_fail
failures=()
# Each round's output is kept for the summary, the first one's included.
mkdir -p "$src/.build/results"
if [ "$host_fail" -eq 0 ]; then
	for ((r = 1; r <= rounds; r++)); do
		for k in "${guests[@]}"; do
			run=soak-$r-$k
			step "round $r/$rounds: $k"
			# An older release's util-linux: its set (releases.sh).
			suites=${SUITES:-}
			if [ -z "$suites" ] && release_builds_userland "$(kver_release "$k")"; then
				suites=${older_suites[*]}
			fi
			read -r _ gp gf _ < <(guest_row "$run" env GUEST_RUN_NAME="$run" \
				SUITES="$suites" "$here/run-guest.sh" "$k" \
				2> >(tee "$src/.build/results/$run.out" >&2))
			pass=$((pass + gp)) fail=$((fail + gf))
			[ "$gf" -eq 0 ] || failures+=("$run")
		done
	done
fi

step "summary: $rounds rounds on ${guests[*]:-no kernel}"
for run in "${failures[@]}"; do
	res=$src/.build/results/$run
	echo "$run (output kept in $res/, console in $run.serial.log):"
	grep -E '^  FAIL ' "$src/.build/results/$run.out" | sed 's/^  /  /'
	for t in "$res"/*.result; do
		[ -e "$t" ] || continue
		read -r _ f _ _ name notes <"$t"
		[ "$f" -gt 0 ] || continue
		tap=${t%.result}.tap
		echo "    $name:$notes"
		grep -E '^not ok' "$tap" 2>/dev/null | head -n 10 | sed 's/^/      /'
		grep -iE -m 3 'seed' "$tap" 2>/dev/null | sed 's/^/      /'
	done
done
echo "soak took $(($(date +%s) - t0))s"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
