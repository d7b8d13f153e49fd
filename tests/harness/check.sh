#!/bin/bash
# check.sh: what `make check` runs.  Installs dependencies, builds loopfs.ko
# for every supported kernel (warnings are errors), builds the userspace
# tests, runs the harness self-test, the Debian package build and install
# cycle and the lint, then a guest row per release (releases.sh), each
# booting that release's kernel on its own userland: every suite on this
# machine's release (bookworm's 6.1) and the newest, the older set on an
# older release (bullseye's 5.10), the core set on those between, and,
# for each debug kernel already built (bookworm's 6.1, sid's newest), its
# row: make check-debug with suites that drive the module's own code
# (named below), which its line's stock row then leaves out.
# Prints per-row totals and, as the very last line,
# "N passed, N failed" (after "N skipped" if any).  Exit status 1 on any
# failure.
#
# Environment: SUITES (subset of suites, see run-guest.sh), KERNELS (only
# these kernels: a word matches a version or its prefix up to a dot or dash,
# so KERNELS=6.1 means 6.1.* and KERNELS=6.12 means 6.12.* including -rt
# and both releases' 6.12),
# DKMS_TEST (1 runs the harness self-test, the package tests and the lint;
# default 1, or 0 when SUITES is set),
# CHECK_DEBUG (auto: the debug rows whose kernels are built; 0, 1),
# CHECK_LANES (rows at a time, default 1),
# LOOPFS_QUICK (default 1), plus run-guest.sh's GUEST_TIMEOUT, SUITE_TIMEOUT...
set -uo pipefail
exec 2>&1

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
MAKE=${MAKE:-make}
export LOOPFS_QUICK=${LOOPFS_QUICK-1}
DKMS_TEST=${DKMS_TEST:-$([ -n "${SUITES:-}" ] && echo 0 || echo 1)}
cd "$src" || exit 1

t0=$(date +%s)
host_pass=0 host_fail=0 host_skip=0
rows=()
. "$here/gate.sh"
. "$here/releases.sh"

step() { echo; echo "=== $* ($(($(date +%s) - t0))s)"; }

summary() {
	local p=$host_pass f=$host_fail s=$host_skip r kp kf ks
	echo
	echo "=== summary ($(($(date +%s) - t0))s)"
	printf '  %-28s %d passed, %d failed\n' "host (build, packages, lint)" "$host_pass" "$host_fail"
	for r in "${rows[@]}"; do
		read -r k kp kf ks kr <<<"$r"
		printf '  %-28s %d passed, %d failed, %d skipped\n' "${kr:+$kr }$k" "$kp" "$kf" "$ks"
		p=$((p + kp)) f=$((f + kf)) s=$((s + ks))
	done
	# Skips are neither passes nor failures: said, then left out of the
	# last line, whose form CI reads.
	[ "$s" -eq 0 ] || echo "$s skipped"
	echo "$p passed, $f failed"
	[ "$f" -eq 0 ]
	exit
}

step "dependencies"
if ! $MAKE --no-print-directory deps; then
	host_result FAIL "make deps"
	summary
fi

step "kernel module builds (-Werror, sparse)"
guests=()
mapfile -t all_kvers < <("$here/kvers.sh" all)
mapfile -t guest_kvers < <("$here/kvers.sh" guest)
if [ ${#guest_kvers[@]} -lt $((1 + ${#root_releases[@]})) ]; then
	host_result FAIL "found a guest kernel of each release: bookworm's 6.1 in /boot, ${root_releases[*]} in their roots (have: ${guest_kvers[*]:-none})"
fi
built=" "
for k in "${all_kvers[@]}"; do
	selected "$k" || continue
	if "$here/build-module.sh" "$k"; then
		host_result OK "build loopfs.ko for $k"
		built+="$k "
	else
		host_result FAIL "build loopfs.ko for $k"
	fi
done
# The guest rows in release order, oldest first.
for g in "${guest_kvers[@]}"; do
	[ "${built#* "$g" }" = "$built" ] || guests+=("$g")
done

step "userspace tests"
tests_ok=1
if $MAKE --no-print-directory tests-build; then
	host_result OK "make tests-build"
else
	host_result FAIL "make tests-build"
	tests_ok=0
fi

if [ "$DKMS_TEST" = 1 ]; then
	step "harness self-test (runs that must fail do)"
	host_suite "harness self-test" "$here/harness-test/run.sh"
	step "Debian packages (build, contents, lintian)"
	host_suite "deb build test" "$here/../deb/deb-build-test.sh"
	# The lint runs beside the package install test, which leaves a core
	# idle much of the time (dkms polls its builds, depmod and apt run on
	# one); it reads the kernels' headers, which the packages leave alone.
	lint_out=$(mktemp)
	"$here/../lint/lint.sh" >"$lint_out" 2>&1 &
	lint_pid=$!
	# Before any guest row: it changes /lib/modules, which guests share.
	step "Debian packages (install, DKMS, guests on the installed module, upgrade, purge)"
	host_suite "deb install test" "$here/../deb/deb-install-test.sh"
	step "lint (checkpatch --strict, kernel-doc, the table of suites per row; ran beside the package install test)"
	wait "$lint_pid"
	host_suite "lint" sh -c 'cat "$1"; exit "$2"' sh "$lint_out" "$?"
	rm -f "$lint_out"
fi

if [ -n "${KERNELS:-}" ] && [ ${#guests[@]} -eq 0 ]; then
	host_result FAIL "KERNELS='$KERNELS' selects a guest kernel (have: ${guest_kvers[*]:-none})"
fi

if [ "$tests_ok" -eq 0 ]; then
	echo "userspace tests did not build: guests not booted"
	summary
fi

# The rows: one per release, and one per debug kernel already built.
# This machine's release and the newest run every suite; an older release
# runs the older set, one between them the core set (releases.sh): every
# suite on every release does not fit the check's time budget. SUITES, when
# set, is what every row runs (and no debug row runs).
#
# They run one at a time, or CHECK_LANES at a time, each row's output kept
# and printed whole when it ends; the summary lists them in this order. On
# two cores two rows side by side took longer than one after the other
# (their shell and security suites 1.8 to 3 times as long each: a guest
# alone keeps both cores busy there), so one is the default.
row_names=()
row_cmds=()

# add_row NAME COMMAND...: queue a row (COMMAND prints its step line and
# then "NAME passed failed skipped RELEASE" last, on stdout).
add_row() {
	row_names+=("$1")
	shift
	row_cmds+=("$(printf '%q ' "$@")")
}

# stock_row KVER: the row of KVER's release, on its stock kernel.
stock_row() {
	local k=$1 rel suites except
	rel=$(kver_release "$k")
	suites=${SUITES:-$(release_suites "$rel")}
	if [ -n "${SUITES:-}" ] || [ -z "$suites" ]; then
		step "guest $k ($rel)" >&2
	elif release_builds_userland "$rel"; then
		step "guest $k ($rel, the older set)" >&2
	else
		step "guest $k ($rel, the core set)" >&2
	fi
	except=""
	if [ -z "${SUITES:-}" ]; then
		except=$(release_suites_except "$rel")
		# What the release's debug row runs, it runs on the same line
		# with lockdep and KASAN watching: not twice.
		case " ${debug_releases[*]} " in
		*" $rel "*) except+=" $(debug_suites "$rel")" ;;
		esac
	fi
	echo "$(SUITES=$suites SUITES_EXCEPT=$except guest_row "$k" "$here/run-guest.sh" "$k") $rel"
}

# debug_row RELEASE: make check-debug's run on RELEASE's debug kernel.
debug_row() {
	local rel=$1 out rc kver last dp df ds
	step "debug kernel of $rel (KASAN, lockdep, kmemleak)" >&2
	out=$(mktemp)
	LOOPFS_FUZZ_SECONDS=${LOOPFS_FUZZ_SECONDS:-60} MAKE="$MAKE" SUITES=$(debug_suites "$rel") \
		LOOPFS_PREPARED=1 GUEST_RUN_NAME=debug-$rel \
		"$here/../debug/check-debug.sh" "$rel" >"$out" 2>&1
	rc=$?
	cat "$out" >&2
	kver=$(sed -n 's/^debug kernel \(.*\) ready in .*/\1/p' "$out")
	last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1 | tr -d ,)
	dp=0 df=1 ds=0
	[ -z "$last" ] || read -r dp _ df _ ds _ <<<"$last"
	ds=${ds:-0}
	[ "$rc" -eq 0 ] || [ "$df" -gt 0 ] || df=1
	rm -f "$out"
	echo "${kver:-debug} $dp $df $ds $rel"
}

# A debug row joins when its kernel is already built: building one cold
# takes longer than this whole check. CHECK_DEBUG=0 leaves them out,
# CHECK_DEBUG=1 builds them if needed.
debug_releases=()
if [ -z "${SUITES:-}" ] && [ "${CHECK_DEBUG:-auto}" != 0 ]; then
	for rel in bookworm sid; do
		if [ "${CHECK_DEBUG:-auto}" = 1 ] ||
			"$here/../debug/build-kernel.sh" --check "$rel" >/dev/null 2>&1; then
			debug_releases+=("$rel")
		fi
	done
fi
for k in "${guests[@]}"; do
	add_row "$k" stock_row "$k"
done
for rel in "${debug_releases[@]}"; do
	add_row "debug-$rel" debug_row "$rel"
done

# Longest first, so that lanes end together: the stock rows of every
# suite, the debug rows (with two lanes each beside a stock row, not beside
# the other), then the others.
order=()
for pass in every debug other; do
	for i in "${!row_names[@]}"; do
		case ${row_names[$i]} in
		debug-*) kind=debug ;;
		*)	kind=other
			[ -n "$(release_suites "$(kver_release "${row_names[$i]}")")" ] || kind=every ;;
		esac
		[ "$kind" != "$pass" ] || order+=("$i")
	done
done

rowdir=$(mktemp -d)
lanes=${CHECK_LANES:-1}
declare -A running=()
# wait_rows N: until fewer than N rows run, printing each ended row whole
wait_rows() {
	local ended
	while [ ${#running[@]} -ge "$1" ]; do
		wait -n -p ended "${!running[@]}" || true
		cat "$rowdir/${running[$ended]}.log"
		unset "running[$ended]"
	done
}
for i in "${order[@]}"; do
	wait_rows "$lanes"
	eval "${row_cmds[$i]}" >"$rowdir/$i.row" 2>"$rowdir/$i.log" &
	running[$!]=$i
done
wait_rows 1
for i in "${!row_names[@]}"; do
	r=$(tail -n 1 "$rowdir/$i.row" 2>/dev/null)
	[ -n "$r" ] || r="${row_names[$i]} 0 1 0 ?"
	rows+=("$r")
done
rm -rf "$rowdir"

summary
