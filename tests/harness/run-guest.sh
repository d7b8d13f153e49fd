#!/bin/bash
# run-guest.sh KVER [SUITE...]
# run-guest.sh --run KVER COMMAND [ARG...]
# run-guest.sh --demo KVER
#
# Boot /boot/vmlinuz-KVER in QEMU with the host's root shared read-only over
# 9p (a later release's kernel: its root's /boot/vmlinuz-KVER with that root,
# see releases.sh), load loop + .build/KVER/loopfs.ko in the guest and run
# the suites.
# With --run, run one COMMAND (a path the guest sees, e.g. in the repo) as
# root instead, its output shown live from the console; the exit status is
# COMMAND's (or a failure when the guest panicked, hung or logged a kernel
# problem).  --demo is --run with tests/guest/demo.sh.  GUEST_DISK attaches
# a raw image as the guest's first virtio disk.
#
# Prints one line per suite and the guest's totals; writes "passed failed
# skipped seconds" to .build/results/NAME.totals (NAME is $GUEST_RUN_NAME,
# default KVER), the suites' results (or the command's out.log,
# command.status, dmesg.txt) to .build/results/NAME/ and the console to
# NAME.serial.log.  Exit status 0 only if everything passed and the kernel
# log is clean.
#
# Environment: SUITES (default: every suite, see list_suites), SUITES_EXCEPT
# (SUITES words, patterns too, that the default set leaves out),
# GUEST_RUN_NAME, LOOPFS_QUICK, SUITE_TIMEOUT (per suite, default 300 s; a
# suite may ask for more with a "# loopfs-timeout: N" line),
# SUITE_TIMEOUT_SCALE (multiplies every suite timeout, default 1),
# GUEST_TIMEOUT (whole boot; default: the sum of the suite timeouts plus
# 300 s, at most 2400 s), GUEST_MEM (MiB, default 2048), GUEST_DISK,
# GUEST_ACCEL (tcg|kvm|auto, default auto), GUEST_CMDLINE_EXTRA (appended to
# the kernel command line), GUEST_ROOT (the guest's /, default the root of
# KVER's release, or / for bookworm's kernels), GUEST_KERNEL (kernel image,
# default GUEST_ROOT/boot/vmlinuz-KVER), GUEST_MODDIR (a directory holding
# KVER/modules.dep... to use instead of GUEST_ROOT/lib/modules, for kernels
# built elsewhere; it is mounted on the guest's /lib/modules).  LOOPFS_FUZZ_*,
# LOOPFS_RACE_*, LOOPFS_CHURN_* and BENCH_* variables are passed on.
set -euo pipefail

run=0
case ${1:-} in
--run) run=1; shift ;;
--demo) run=1; shift; set -- "${1:-}" tests/guest/demo.sh ;;
esac
kver=${1:?usage: run-guest.sh [--run|--demo] KVER [SUITE...|COMMAND...]}
shift

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
. "$here/releases.sh"
build=$src/.build
run_name=${GUEST_RUN_NAME:-$kver}
res=$build/results/$run_name
ko=$build/$kver/loopfs.ko
groot=${GUEST_ROOT-$(kver_root "$kver")}
groot=${groot%/}
kernel=${GUEST_KERNEL:-$groot/boot/vmlinuz-$kver}
# The test programs and tools for this kernel's release (releases.sh).
ubuild=$(release_userland_dir "$build" "$(kver_release "$kver")")
initrd=$build/initramfs/$kver.cpio
log=$build/results/$run_name.serial.log

SUITE_TIMEOUT=${SUITE_TIMEOUT:-300}
SUITE_TIMEOUT_SCALE=${SUITE_TIMEOUT_SCALE:-1}
GUEST_MEM=${GUEST_MEM:-2048}

die() { echo "run-guest: $*" >&2; exit 1; }

# One guest per kernel and tree at a time: they share the results directory.
mkdir -p "$build/results"
exec 9>"$build/results/$run_name.lock"
if ! flock -n 9; then
	echo "run-guest: another $run_name guest runs from this tree; waiting for it"
	flock 9
fi
# The totals file is written last, by this run: a run that stops early
# must not leave the previous run's totals to be read as its own.
rm -f "$build/results/$run_name.totals"

[ -r "$kernel" ] || die "no kernel $kernel"
# A --run command loads what it needs itself (the package test's guest
# loads the module DKMS installed).
[ "$run" -eq 1 ] || [ -f "$ko" ] || die "no module $ko (run 'make modules-all')"

# Suites: explicit arguments, else $SUITES (words, globs allowed, relative to
# the repo), else all of them; the word "default" stands for all of them.
# tests/selftests/foo.c means its binary.  A word that names no executable
# suite is reported on fd 3 (a failure of the run, never a silent skip); so
# is a script in the default set with a "#!" line but no executable bit.
default_suites=()
for p in "${default_suite_words[@]}"; do
	case $p in
	tests/selftests/*) p=${ubuild#"$src"/}/$p ;;
	esac
	default_suites+=("$p")
done
list_suites() {
	local pats=("$@") p f n
	set +f
	[ ${#pats[@]} -gt 0 ] || pats=(default)
	for p in "${pats[@]}"; do
		if [ "$p" = default ]; then
			list_default_suites
			continue
		fi
		p=$(suite_pattern "$p")
		n=0
		for f in $p; do
			if [ -f "$f" ] && [ -x "$f" ]; then
				echo "$f"
				n=$((n + 1))
			fi
		done
		[ "$n" -gt 0 ] || echo "'${p#"$src"/}' names no executable suite (built? chmod +x?)" >&3
	done
}

# suite_pattern WORD: the path (a pattern) of the suites a SUITES word names
suite_pattern() {
	local p=$1
	case $p in
	tests/selftests/*) p=$ubuild/tests/selftests/$(basename "$p" .c) ;;
	esac
	[ "${p#/}" = "$p" ] && p=$src/$p
	echo "$p"
}

list_default_suites() {
	local p f e words excepts=() except_words=${SUITES_EXCEPT:-}
	# words on one or more lines
	read -ra words <<<"${except_words//$'\n'/ }"
	for e in "${words[@]}"; do
		excepts+=("$(suite_pattern "$e")")
	done
	for p in "${default_suites[@]}"; do
		for f in $src/$p; do
			[ -f "$f" ] || continue
			for e in "${excepts[@]}"; do
				# shellcheck disable=SC2254
				case $f in $e) continue 2 ;; esac
			done
			if [ -x "$f" ]; then
				echo "$f"
			elif [ "$(head -c 2 "$f")" = "#!" ]; then
				echo "${f#"$src"/} is a script without its executable bit" >&3
			fi
		done
	done
}

suite_problems=()
if [ "$run" -eq 1 ]; then
	[ $# -gt 0 ] || die "--run needs a command"
	suites=""
	cmd=$src/tests/guest/run-command.sh
	# A relative COMMAND is a path in the repository.
	[ "${1#/}" != "$1" ] || [ ! -e "$src/$1" ] || set -- "$src/$1" "${@:2}"
	command=$(printf '%q ' "$@")
	command=${command% }
else
	# SUITES words are globbed relative to the repo by list_suites, not here.
	set -f
	unrunnable=$(mktemp)
	# shellcheck disable=SC2086
	suites=$(list_suites "$@" ${SUITES:-} 3>"$unrunnable")
	set +f
	mapfile -t suite_problems <"$unrunnable"
	rm -f "$unrunnable"
	cmd=$src/tests/guest/run-suites.sh
	if [ -z "$suites" ]; then
		suite_problems+=("no suites selected (SUITES='${SUITES:-}')")
	fi
fi


# Rebuild the initramfs when the kernel, busybox or the harness changed.
if [ ! -s "$initrd" ] || [ "$initrd" -ot "$here/guest-init" ] ||
	[ "$initrd" -ot "$here/mkinitramfs.sh" ] || [ "$initrd" -ot "$kernel" ]; then
	GUEST_MODDIR=${GUEST_MODDIR:-$groot/lib/modules} "$here/mkinitramfs.sh" "$kver" "$initrd"
fi

rm -rf "$res" "$log"
mkdir -p "$res"
# The guest mounts the repository at its own path: a release root that has
# no such directory gets it (an empty mount point).
[ -z "$groot" ] || mkdir -p "$groot$src"
{
	printf 'export LOOPFS_SRC=%q\n' "$src"
	printf 'export LOOPFS_BUILD=%q\n' "$ubuild"
	printf 'export LOOPFS_KO=%q\n' "$ko"
	printf 'export LOOPFS_KVER=%q\n' "$kver"
	printf 'export LOOPFS_QUICK=%q\n' "${LOOPFS_QUICK:-}"
	printf 'export LOOPFS_UNPRIV_UID=1000\n'
	printf 'export LOOPFS_RESULTS=/run/loopfs-results\n'
	printf 'export SUITE_TIMEOUT=%q\n' "$SUITE_TIMEOUT"
	printf 'export SUITE_TIMEOUT_SCALE=%q\n' "$SUITE_TIMEOUT_SCALE"
	printf 'export SUITES=%q\n' "$(echo $suites)"
	[ -z "${GUEST_MODDIR:-}" ] || printf 'GUEST_MODDIR=1\n'
	[ "$run" -eq 0 ] || printf 'export GUEST_RUN=%q\n' "$command"
	for v in ${!LOOPFS_FUZZ_@} ${!LOOPFS_RACE_@} ${!LOOPFS_CHURN_@} ${!BENCH_@}; do
		printf 'export %s=%q\n' "$v" "${!v}"
	done
	printf 'GUEST_CMD=%q\n' "$cmd"
} >"$res/guest.env"

# KVM only if it really boots a kernel here (nested KVM is often broken);
# the answer is cached for this build tree.
accel=${GUEST_ACCEL:-auto}
if [ "$accel" = auto ]; then
	if [ -s "$build/accel" ]; then
		accel=$(cat "$build/accel")
	else
		accel=tcg
		if [ -w /dev/kvm ] && timeout 10 qemu-system-x86_64 -accel kvm -m 256 \
			-nodefaults -no-user-config -display none -serial stdio -no-reboot \
			-kernel "$kernel" -append "console=ttyS0 panic=-1" 2>/dev/null |
			grep -q -m1 'Kernel panic'; then
			accel=kvm
		fi
		echo "$accel" >"$build/accel"
	fi
fi

# The whole boot's hard timeout: every suite may use all of its own.
if [ -z "${GUEST_TIMEOUT:-}" ]; then
	GUEST_TIMEOUT=300
	for s in $suites; do
		t=$(head -n 20 "$s" 2>/dev/null | grep -a -m1 -oE 'loopfs-timeout: *[0-9]+' | grep -oE '[0-9]+' || true)
		GUEST_TIMEOUT=$((GUEST_TIMEOUT + ${t:-$SUITE_TIMEOUT} * SUITE_TIMEOUT_SCALE + 10))
	done
	[ "$GUEST_TIMEOUT" -le 2400 ] || GUEST_TIMEOUT=2400
fi

cmdline="console=ttyS0 panic_on_warn=1 oops=panic panic=-1 softlockup_panic=1"
cmdline+=" hung_task_panic=1 sysctl.kernel.hung_task_timeout_secs=90"
cmdline+=" log_buf_len=4M no_timer_check tsc=reliable 8250.nr_uarts=1"
# The CRNG is seeded from the CPU (and virtio-rng) during boot, so that its
# static key is switched before any suite runs (see run-suites.sh).
cmdline+=" random.trust_cpu=on"
# A kernel that inlines the TSC read into its timekeeping switches that in
# with a static key once the TSC becomes its clocksource, at about 2 s of
# uptime: a text patch of code the other vCPU runs at every timer tick,
# which TCG does not reliably survive (an int3 Oops in ktime_get(), as
# with the CRNG's key). Under TCG such a kernel keeps the HPET, whose
# read it never inlines.
if [ "$accel" = tcg ] && grep -qsx CONFIG_ARCH_WANTS_CLOCKSOURCE_READ_INLINE=y \
	"${kernel%/*}/config-$kver"; then
	cmdline+=" clocksource=hpet"
fi
cmdline+=" ${GUEST_CMDLINE_EXTRA:-}"
cpu=max
[ "$accel" = kvm ] && cpu=host

qemu=(qemu-system-x86_64 -accel "$accel" -cpu "$cpu" -smp 2 -m "$GUEST_MEM"
	-nodefaults -no-user-config -nographic -monitor none -serial "file:$log"
	-no-reboot -kernel "$kernel" -initrd "$initrd" -append "$cmdline"
	-device virtio-rng-pci
	-virtfs "local,path=${groot:-/},mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
	-virtfs "local,path=$src,mount_tag=repo,security_model=none,readonly=on,multidevs=remap"
	-virtfs "local,path=$res,mount_tag=results,security_model=none"
)
if [ -n "${GUEST_DISK:-}" ]; then
	qemu+=(-drive "file=$GUEST_DISK,if=virtio,format=raw,cache=none,aio=threads")
fi
if [ -n "${GUEST_MODDIR:-}" ]; then
	qemu+=(-virtfs "local,path=$GUEST_MODDIR,mount_tag=moddir,security_model=none,readonly=on,multidevs=remap")
fi

echo "run-guest: booting $kver ($accel, timeout ${GUEST_TIMEOUT}s), serial log $log"
start=$(date +%s)
rc=0
if [ "$run" -eq 1 ]; then
	# Show the guest console live (from the command's own output on).
	timeout --foreground -k 5 "$GUEST_TIMEOUT" "${qemu[@]}" </dev/null &
	qpid=$!
	while [ ! -e "$log" ] && kill -0 "$qpid" 2>/dev/null; do sleep 0.2; done
	tail -n +1 -F --pid="$qpid" "$log" 2>/dev/null | sed -u -n '/^run-command: start/,$p' || true
	wait "$qpid" || rc=$?
else
	timeout --foreground -k 5 "$GUEST_TIMEOUT" "${qemu[@]}" </dev/null || rc=$?
fi
secs=$(($(date +%s) - start))

# Per-suite lines (--run writes none).
for r in "$res"/*.result; do
	[ -e "$r" ] || continue
	t=${r##*/}
	t=${t%.result}
	read -r p f s sec name notes <"$r" || true
	status=PASS
	[ "$f" -eq 0 ] || status=FAIL
	printf '  %-4s %-50s %3d passed, %d failed, %d skipped (%ss)%s\n' \
		"$status" "$name" "$p" "$f" "$s" "$sec" "${notes:+ -$notes}"
	if [ "$f" -ne 0 ] && [ -f "$res/$t.tap" ]; then
		{ grep -E '^not ok' "$res/$t.tap" || true; } | head -n 20 | sed 's/^/         /'
	fi
	if [ -f "$res/$t.dmesg" ]; then
		head -n 60 "$res/$t.dmesg" | sed 's/^/         /'
	fi
done

pass=0 fail=0 skip=0 klog=0
problems=("${suite_problems[@]}")
panic=$(grep -a -m1 -E 'Kernel panic - not syncing' "$log" 2>/dev/null || true)
if [ -s "$res/summary" ]; then
	read -r pass fail skip klog <"$res/summary"
else
	# Crashed, hung or killed: count what the finished suites reported.
	for r in "$res"/*.result; do
		[ -e "$r" ] || continue
		read -r p f s _ <"$r" || true
		pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	done
	where="while booting or loading the modules"
	if [ -s "$res/progress" ]; then
		cur=$(cat "$res/progress")
		where="during $cur"
		partial=$(ls "$res"/*"-$(echo "$cur" | tr / _).tap" 2>/dev/null | tail -n 1 || true)
		if [ -n "$partial" ]; then
			echo "---- output of $cur so far ----"
			tail -n 20 "$partial"
			echo "----"
		fi
	fi
	[ "$run" -eq 1 ] && where="during $command"
	if [ -n "$panic" ]; then
		problems+=("guest kernel panicked $where: ${panic#*\] }")
	elif [ "$run" -eq 1 ] && [ -s "$res/command.status" ] && [ "$rc" -eq 0 ]; then
		read -r command_rc <"$res/command.status"
		[ "$command_rc" -eq 0 ] || problems+=("$command exited with status $command_rc")
	elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		problems+=("guest hung: killed after the ${GUEST_TIMEOUT}s timeout $where")
	else
		problems+=("guest crashed or stopped (qemu status $rc) $where")
	fi
fi

# Every selected suite must have reported, whatever happened to the guest.
if [ "$run" -eq 0 ]; then
	reported=$(cat "$res"/*.result 2>/dev/null | cut -d' ' -f5 || true)
	missing=0
	for f in $suites; do
		grep -qxF -- "${f#"$src"/}" <<<"$reported" || missing=$((missing + 1))
	done
	nsuites=$(echo $suites | wc -w)
	[ "$missing" -eq 0 ] || problems+=("$missing of $nsuites suites did not report a result")
fi

# The whole serial log, whatever the guest reported.  A splat the guest
# already counted (klog) is not counted twice.
bad_log=0
# shellcheck disable=SC2086
if excerpt=$(LOGSCAN_ALLOW=$("$here/logscan.sh" --expected $suites) "$here/logscan.sh" "$log"); then
	bad_log=1
	echo "$excerpt"
	[ "$klog" -gt 0 ] || problems+=("kernel log shows a WARNING/BUG/Oops/lockdep/hung task/panic")
fi

if [ ${#problems[@]} -gt 0 ]; then
	for p in "${problems[@]}"; do
		echo "  FAIL $p"
	done
	fail=$((fail + ${#problems[@]}))
	if [ "$bad_log" -eq 0 ] || [ -n "$panic" ]; then
		echo "---- last 40 lines of the guest console $log ----"
		tail -n 40 "$log" 2>/dev/null || true
		echo "----"
	fi
fi

if [ "$run" -eq 1 ]; then
	[ "$fail" -eq 0 ] && echo "run-guest: $command passed (${secs}s)" || echo "run-guest: $command FAILED"
	[ "$fail" -eq 0 ]
	exit
fi

echo "$pass $fail $skip $secs" >"$build/results/$run_name.totals"
boot=$(grep -m1 -oE 'loopfs-runner: start at [0-9.]+s' "$log" 2>/dev/null | grep -oE '[0-9.]+s$' || true)
printf '%s: %d passed, %d failed, %d skipped (%ds wall, guest userland up at %s)\n' \
	"$kver" "$pass" "$fail" "$skip" "$secs" "${boot:-?}"
[ "$fail" -eq 0 ]
