#!/bin/bash
# check-debug.sh [RELEASE]: what `make check-debug` runs.  Builds (or reuses,
# see build-kernel.sh) a kernel of RELEASE's line with KASAN, lockdep,
# kmemleak, UBSAN and the debug-object checks: bookworm's 6.1 (default) or
# sid's newest, builds loopfs.ko against it (-Werror, by that release's
# compiler), boots it through the normal harness (panic_on_warn=1 on its
# command line) on that release's userland and runs every suite, the
# stress and fuzz suites at full length, the fault-injection sweep
# (tests/debug/faults.sh) and a final kmemleak scan
# (tests/debug/kmemleak.sh).  Last line: "N passed, N failed".
#
# Environment: LOOPFS_DEBUG_CACHE (bookworm's kernel cache, default
# ~/.cache/loopfs), SUITES (subset, as for make check; faults.sh and
# kmemleak.sh are always added last), SUITES_EXCEPT (left out of the
# default set; default bench/smoke.sh),
# LOOPFS_PREPARED (1: deps and tests-build already done, as make check
# does), LOOPFS_QUICK (default empty: full-length stress and fuzz),
# LOOPFS_CHURN_CYCLES (selftests/userns's create/remove churn, default 100),
# GUEST_TIMEOUT (default 5400 s), SUITE_TIMEOUT_SCALE (default 4).
set -uo pipefail
exec 2>&1

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
MAKE=${MAKE:-make}
release=${1:-bookworm}
cd "$src" || exit 1
. "$here/../harness/releases.sh"

t0=$(date +%s)
step() { echo; echo "=== $* ($(($(date +%s) - t0))s)"; }
fail() { echo "not ok - $*"; echo "0 passed, 1 failed"; exit 1; }

# make check has installed the dependencies and built the userspace tests
# (LOOPFS_PREPARED=1) before its rows: a row beside another guest must not
# rebuild what that guest runs.
if [ -z "${LOOPFS_PREPARED:-}" ]; then
	step "dependencies"
	$MAKE --no-print-directory deps || fail "make deps"
fi

step "debug kernel of $release"
kt0=$(date +%s)
out=$("$here/build-kernel.sh" "$release" | tee /dev/stderr) || fail "debug kernel build"
kver=$(sed -n 's/^KVER=//p' <<<"$out" | tail -n 1)
obj=$(sed -n 's/^KDIR=//p' <<<"$out" | tail -n 1)
mods=$(sed -n 's/^MODS=//p' <<<"$out" | tail -n 1)
root=$(sed -n 's/^ROOT=//p' <<<"$out" | tail -n 1)
[ -n "$kver" ] && [ -n "$obj" ] || fail "debug kernel build printed no KVER or KDIR"
echo "debug kernel $kver ready in $(($(date +%s) - kt0))s"

step "loopfs.ko for $kver (-Werror)"
mdir=$src/.build/$kver
mkdir -p "$mdir"
cp -p Kbuild compat.mk dkms.conf ./*.c ./*.h "$mdir/"
run=()
[ -z "$root" ] || run=(in_root "$root")
if ! "${run[@]}" make -C "${obj#"$root"}" M="$mdir" KCFLAGS=-Werror modules >"$mdir/build.log" 2>&1 ||
	grep -qi warning "$mdir/build.log"; then
	cat "$mdir/build.log"
	rm -f "$mdir/loopfs.ko"
	fail "build loopfs.ko for $kver"
fi

if [ -z "${LOOPFS_PREPARED:-}" ]; then
	step "userspace tests"
	$MAKE --no-print-directory tests-build || fail "make tests-build"
fi

step "guest $kver"
# Under KASAN + lockdep in TCG everything is several times slower.
export GUEST_KERNEL=$obj/arch/x86/boot/bzImage
export GUEST_MODDIR=$mods
export GUEST_ROOT=$root
export GUEST_TIMEOUT=${GUEST_TIMEOUT:-5400}
export GUEST_MEM=${GUEST_MEM:-3072}
export SUITE_TIMEOUT_SCALE=${SUITE_TIMEOUT_SCALE:-4}
# KASAN and kmemleak save a stack trace per allocation: on a loaded TCG host
# the boot alone spends over 20 s in one initcall.  Keep the lockup, stall
# and hung-task detectors, with their longest thresholds (still panics).
slow="watchdog_thresh=60 rcupdate.rcu_cpu_stall_timeout=300 sysctl.kernel.hung_task_timeout_secs=300"
# ACPI's interpreter runs each PCI slot's interrupt routing method into its
# 30 s loop timeout under KASAN in TCG: over two minutes of boot. The MP
# table QEMU provides routes them as well.
slow+=" acpi=noirq"
export GUEST_CMDLINE_EXTRA="$slow ${GUEST_CMDLINE_EXTRA:-}"
export LOOPFS_QUICK=${LOOPFS_QUICK-}
# The create/remove churn (selftests/userns) is here for lockdep, KASAN and
# kmemleak on each of its four flavours, which 100 cycles pass 25 times
# each; the stock rows run 400 (1000 without LOOPFS_QUICK) for the
# charges' counts.
export LOOPFS_CHURN_CYCLES=${LOOPFS_CHURN_CYCLES-100}
# The bench smoke only shows that the benchmarks run (the stock kernels do
# that); its timings mean nothing under KASAN, where it takes two minutes.
export SUITES_EXCEPT=${SUITES_EXCEPT-bench/smoke.sh}
# Patterns go to run-guest.sh unexpanded (it globs them itself; "default"
# is its whole default set).
set -f
suites=(${SUITES:-default})
set +f
# (the patterns are arguments: run-guest.sh would add $SUITES once more)
SUITES= "$here/../harness/run-guest.sh" "$kver" "${suites[@]}" \
	tests/debug/faults.sh tests/debug/kmemleak.sh
rc=$?
if [ -s "$src/.build/results/${GUEST_RUN_NAME:-$kver}.totals" ]; then
	read -r p f s secs <"$src/.build/results/${GUEST_RUN_NAME:-$kver}.totals"
else
	p=0 f=1 s=0 secs=?
fi
[ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || f=1
step "summary"
echo "$kver: guest ${secs}s"
if [ "$s" -gt 0 ]; then
	echo "$p passed, $f failed, $s skipped"
else
	echo "$p passed, $f failed"
fi
[ "$f" -eq 0 ]
