#!/bin/bash
# Boot a QEMU guest of one Debian kernel with the host's root shared read-only
# over 9p and run one command inside it (a minimal guest boot of its own for
# the benchmark).
#
#   bench/guest-boot.sh -k KVER -o OUTDIR [-d DISK.img] [-t SECONDS] -- CMD...
#
# CMD runs as root in the guest with cwd /tmp; OUTDIR is the guest's
# /run/results (read-write). Its output lands in OUTDIR/out.log, its exit
# code in OUTDIR/rc, the kernel log in OUTDIR/dmesg.txt. The script exits
# with CMD's exit code, 124 on timeout, 125 if the guest died before CMD ended.
# Env: BENCH_SMP (2), BENCH_MEM (2048 MiB), BENCH_ACCEL (tcg), BENCH_QUIET.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
kver= out= disk= tmo=1800
while getopts k:o:d:t: opt; do
	case $opt in
	k) kver=$OPTARG ;;
	o) out=$OPTARG ;;
	d) disk=$OPTARG ;;
	t) tmo=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ "${1:-}" = -- ] && shift
[ -n "$kver" ] && [ -n "$out" ] && [ $# -gt 0 ] || {
	sed -n '5,13s/^# \{0,1\}//p' "$0" >&2; exit 2; }
[ -r "/boot/vmlinuz-$kver" ] || { echo "no /boot/vmlinuz-$kver" >&2; exit 2; }

build=${LOOPFS_BUILD:-$repo/.build}
initrd=$build/bench/initramfs-$kver.cpio.gz

# Modules the initramfs needs (with their dependencies, in load order) to
# reach the host root over virtio-9p. Built-in ones are simply not found.
mod_closure() {
	local dep=/lib/modules/$kver/modules.dep m line
	for m in "$@"; do
		line=$(grep -E "/$m\.ko(\.xz|\.zst)?:" "$dep") || continue
		# shellcheck disable=SC2086
		mod_closure $(echo "${line#*:}" | tr ' ' '\n' | sed -n 's|.*/\([^/]*\)\.ko.*|\1|p')
		echo "${line%%:*}"
	done
}

make_initrd() {
	local stage rel name
	stage=$(mktemp -d)
	mkdir -p "$stage"/{bin,dev,proc,sys,modules}
	cp /bin/busybox "$stage/bin/busybox"
	cp "$here/initramfs-init" "$stage/init"
	mknod "$stage/dev/console" c 5 1
	for rel in $(mod_closure virtio_pci 9pnet_virtio 9p | awk '!seen[$0]++'); do
		name=$(basename "$rel"); name=${name%.xz}; name=${name%.zst}
		case $rel in
		*.xz) xz -dc "/lib/modules/$kver/$rel" > "$stage/modules/$name" ;;
		*.zst) zstd -qdc "/lib/modules/$kver/$rel" > "$stage/modules/$name" ;;
		*) cp "/lib/modules/$kver/$rel" "$stage/modules/$name" ;;
		esac
		echo "$name" >> "$stage/modules.order"
	done
	touch "$stage/modules.order"
	mkdir -p "$(dirname "$initrd")"
	(cd "$stage" && find . | cpio -o -H newc --quiet | gzip -1) > "$initrd.tmp"
	mv "$initrd.tmp" "$initrd"
	rm -rf "$stage"
}
if [ ! -s "$initrd" ] || [ "$here/initramfs-init" -nt "$initrd" ] || [ "$0" -nt "$initrd" ]; then
	make_initrd
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/rc" "$out/out.log" "$out/dmesg.txt"
{
	echo "export LOOPFS_SRC=$(printf %q "$repo") LOOPFS_BUILD=$(printf %q "$build")"
	echo "export LOOPFS_KVER=$(printf %q "$kver")"
	echo "export LOOPFS_KO=$(printf %q "$build/$kver/loopfs.ko")"
	echo "export BENCH_RESULTS=/run/results"
	env | grep -E '^(BENCH_|LOOPFS_QUICK=)' | sed 's/^/export /; s/=\(.*\)/="\1"/' || true
	printf '%q ' "$@"; echo
} > "$out/cmd.sh"

drive=()
[ -n "$disk" ] && drive=(-drive "file=$disk,if=virtio,format=raw,cache=none,aio=threads")
accel=${BENCH_ACCEL:-tcg}
# A kernel warning, oops or hang ends the guest at once (the harness does the same).
cmdline="console=ttyS0 loglevel=4 panic=-1 panic_on_warn=1 oops=panic softlockup_panic=1"
cmdline+=" hung_task_panic=1 sysctl.kernel.hung_task_timeout_secs=90"
cmdline+=" bench.init=$here/guest-init.sh bench.repo=$repo"
[ "$accel" = tcg ] && cmdline+=" tsc=reliable"

set +e
timeout -k 10 "$tmo" qemu-system-x86_64 \
	-accel "$accel" -cpu max -smp "${BENCH_SMP:-2}" -m "${BENCH_MEM:-2048}" \
	-nographic -no-reboot -nodefaults -serial stdio \
	-kernel "/boot/vmlinuz-$kver" -initrd "$initrd" -append "$cmdline" \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	-virtfs "local,path=$repo,mount_tag=repo,security_model=none,readonly=on,multidevs=remap" \
	-virtfs "local,path=$out,mount_tag=results,security_model=none" \
	"${drive[@]}" < /dev/null > "$out/console.log" 2>&1 &
qpid=$!
if [ -z "${BENCH_QUIET:-}" ]; then
	tail -n +1 -F --pid=$qpid "$out/console.log" 2>/dev/null &
fi
wait $qpid
qrc=$?
set -e
sleep 0.2
if [ $qrc -eq 124 ]; then
	echo "guest-boot: guest timed out after ${tmo}s" >&2
	exit 124
fi
if [ ! -s "$out/rc" ]; then
	echo "guest-boot: guest ended before the command finished (see $out/console.log)" >&2
	exit 125
fi
exit "$(cat "$out/rc")"
