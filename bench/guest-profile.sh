#!/bin/bash
# Guest side of `make bench-profile`: where the CPU time of one fio case goes,
# stock loop driver and loopfs side by side in one boot. For each target,
# fio runs under `perf record -a -g -e cpu-clock` (every CPU, the kernel
# included); printed are the IOPS or MiB/s, the share of samples per CPU
# and task (idle shows as swapper), and the hottest functions. The reports
# are cut with awk, which reads on: head would stop perf with SIGPIPE.
#
#   bench/guest-profile.sh OUTDIR
#
# Knobs (env): BENCH_PROFILE_CASE=randread:4k:32[:JOBS] (rw:bs:depth),
# BENCH_PROFILE_BACKING=tmpfs|ext4 (ext4 needs a virtio disk; loop in
# direct-I/O mode), BENCH_RUNTIME=4 (s), BENCH_FILE_MB=256, BENCH_LOOPCTL.
set -euo pipefail

out=${1:?usage: guest-profile.sh OUTDIR}
mkdir -p "$out"
IFS=: read -r rw bs depth jobs <<<"${BENCH_PROFILE_CASE:-randread:4k:32}"
jobs=${jobs:-1}
backing=${BENCH_PROFILE_BACKING:-tmpfs}
runtime=${BENCH_RUNTIME:-4}
file_mb=${BENCH_FILE_MB:-256}
build=${LOOPFS_BUILD:-$(dirname "$(dirname "$(readlink -f "$0")")")/.build}
loopctl=${BENCH_LOOPCTL:-$build/bench/loopctl}
[ -x "$loopctl" ] || { echo "profile: $loopctl missing (make bench-build)" >&2; exit 1; }
command -v perf >/dev/null || { echo "profile: perf missing (apt-get install linux-perf)" >&2; exit 1; }

work=/mnt/profile
# shellcheck source=SCRIPTDIR/guest-lib.sh
. "$(dirname "$(readlink -f "$0")")/guest-lib.sh"

modprobe loop
grep -qw loop /proc/filesystems || insmod "${LOOPFS_KO:?no loopfs module}"

mkdir -p "$work/fs" "$work/lfs"
losetup_opts=()
case $backing in
tmpfs)
	mount -t tmpfs -o size=$((file_mb + 64))m tmpfs "$work/fs" ;;
ext4)
	[ -b /dev/vda ] || { echo "profile: ext4 needs a virtio disk (GUEST_DISK)" >&2; exit 1; }
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 /dev/vda
	mount -t ext4 /dev/vda "$work/fs"
	losetup_opts=(--direct-io=on) ;;
*)
	echo "profile: unknown backing $backing" >&2; exit 1 ;;
esac
at_exit umount "$work/fs"
dd if=/dev/zero of="$work/fs/backing" bs=1M count="$file_mb" status=none
sync

stock=$(attach_stock "$work/fs/backing" "${losetup_opts[@]}")
at_exit losetup -d "$stock"
mount -t loop loop "$work/lfs"
at_exit umount "$work/lfs"
lfs=$(attach_loopfs "$work/lfs" "$work/fs/backing" "${losetup_opts[@]}")
at_exit losetup -d "$lfs"

# report DATA [OPTION...]: perf report with the running kernel's own
# symbols. A vmlinux that perf finds on the shared host root (a headers tree
# may hold one) need not be this kernel's, and perf then prints bare
# addresses.
report() {
	local data=$1

	shift
	perf report -q -i "$data" --ignore-vmlinux --kallsyms=/proc/kallsyms \
		--no-children "$@"
}

# profile NAME DEVICE: one fio run under perf, then its report.
profile() {
	local name=$1 dev=$2 data=$out/$1.perf.data unit=IOPS col
	perf record -q -a -g -e cpu-clock -o "$data" -- \
		fio --name="$name" --filename="$dev" --rw="$rw" --bs="$bs" \
		--iodepth="$depth" --numjobs="$jobs" --group_reporting \
		--ioengine=libaio --direct=1 --time_based --runtime="$runtime" \
		--size="${file_mb}M" --norandommap --randrepeat=0 --invalidate=0 \
		--output-format=terse --terse-version=3 >"$out/$name.fio" 2>&1
	# terse v3: 7/8 read KiB/s / IOPS, 48/49 write
	case $rw in *write*) col=49 ;; *) col=8 ;; esac
	if [ "$bs" != 4k ]; then
		unit=MiB/s
		col=$((col - 1))
	fi
	echo "## $name ($dev): $(awk -F';' -v c=$col -v u=$unit \
		'{ printf "%d %s", u == "IOPS" ? $c : $c / 1024, u }' "$out/$name.fio")"
	echo
	echo "Samples per CPU and task:"
	echo '```'
	report "$data" --sort cpu,comm -g none --stdio 2>/dev/null |
		awk 'NF && ++n <= 12'
	echo '```'
	echo "Hottest functions (self):"
	echo '```'
	report "$data" --sort sym -g none --stdio 2>/dev/null |
		awk 'NF && ++n <= 30'
	echo '```'
	echo
}

echo "# $(uname -r): fio $rw bs=$bs iodepth=$depth numjobs=$jobs, $backing backing, ${runtime} s"
echo
profile stock "$stock"
profile loopfs "$lfs"
