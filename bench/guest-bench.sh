#!/bin/bash
# Guest side of the loopfs benchmark. Runs as root inside a guest
# of one kernel; writes raw measurements to OUTDIR:
#   data.csv  backing,workload,target,round,value,unit   (fio, one line per run)
#   ctl.csv   target,state,devices,instances,round,per_s,median_us,p25_us,p75_us
#   ct.csv    data.csv's columns for the unprivileged container case below
#   meta.txt  key=value facts about the run (kernel, sizes, dio state, ...)
#
#   bench/guest-bench.sh [--smoke] OUTDIR
#
# Targets, interleaved inside every round (the order rotates per round):
#   stock   /dev/loopN of the in-tree loop module
#   loopfs  loop<N> of a private loopfs instance (skipped if no module)
#   raw     fio on the backing file itself
# Backings: tmpfs (page cache; loop in buffered mode) and ext4 on the first
# virtio disk (/dev/vda; loop in direct-I/O mode). Without a virtio disk the
# ext4 filesystem lives on a stock loop device over a tmpfs image instead
# (smoke only: it exercises the path, its numbers mean little).
#
# Knobs (env): BENCH_ROUNDS=3 BENCH_RUNTIME=2 (s per fio run) BENCH_RAMP=500ms
# BENCH_FILE_MB=256 BENCH_CTL_CYCLES=50 BENCH_CTL_INSTANCES=100
# BENCH_CTL_DEVICES=1000 BENCH_LOOPCTL (helper binary).
set -euo pipefail

smoke=
if [ "${1:-}" = --smoke ]; then smoke=1; shift; fi
out=${1:?usage: guest-bench.sh [--smoke] OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)

if [ -n "$smoke" ]; then
	rounds=1 runtime=250ms ramp=0 file_mb=16
	cycles=10 instances=3 devices=6
else
	rounds=${BENCH_ROUNDS:-3} runtime=${BENCH_RUNTIME:-2} ramp=${BENCH_RAMP:-500ms}
	file_mb=${BENCH_FILE_MB:-256}
	cycles=${BENCH_CTL_CYCLES:-50}
	instances=${BENCH_CTL_INSTANCES:-100} devices=${BENCH_CTL_DEVICES:-1000}
fi
build=${LOOPFS_BUILD:-$(dirname "$(dirname "$(readlink -f "$0")")")/.build}
loopctl=${BENCH_LOOPCTL:-$build/bench/loopctl}
[ -x "$loopctl" ] || { echo "bench: $loopctl missing (make bench-build)" >&2; exit 1; }

work=/mnt/bench
mkdir -p "$work"
# shellcheck source=SCRIPTDIR/guest-lib.sh
. "$(dirname "$(readlink -f "$0")")/guest-lib.sh"

log() { echo "bench: $*" >&2; }
meta() { echo "$1=$2" >> "$out/meta.txt"; }

: > "$out/meta.txt"
echo "backing,workload,target,round,value,unit" > "$out/data.csv"
echo "target,state,devices,instances,round,per_s,median_us,p25_us,p75_us" > "$out/ctl.csv"
meta kernel "$(uname -r)"
meta cpus "$(nproc)"
meta mode "$([ -n "$smoke" ] && echo smoke || echo full)"
meta rounds "$rounds"
meta runtime "${runtime}$([[ $runtime == *[a-z] ]] || echo s)"
meta ramp "${ramp}$([[ $ramp == *[a-z] ]] || echo s)"
meta file_mb "$file_mb"
meta ctl_cycles "$cycles"

# ---------------------------------------------------------------- modules
modprobe loop
have_loopfs=
if grep -qw loop /proc/filesystems; then
	have_loopfs=1
elif [ -n "${LOOPFS_KO:-}" ] && [ -r "$LOOPFS_KO" ]; then
	insmod "$LOOPFS_KO" && have_loopfs=1
fi
if [ -z "$have_loopfs" ]; then
	log "loopfs module not available (LOOPFS_KO=${LOOPFS_KO:-unset}): loopfs column skipped"
fi
meta loopfs "$([ -n "$have_loopfs" ] && echo yes || echo no)"

# ------------------------------------------------------------- helpers
devnum() { # block node -> MAJ:MIN
	printf '%d:%d' "0x$(stat -L -c %t "$1")" "0x$(stat -L -c %T "$1")"
}

dio_state() {
	cat "/sys/dev/block/$(devnum "$1")/loop/dio" 2>/dev/null || echo "?"
}

# fio_job BACKING WORKLOAD TARGET PATH DIRECT -> one fio job section. Jobs
# are stonewalled: they run one after the other, in the order written.
fio_job() {
	local rw bs qd jobs=1
	case $2 in
	randread-4k-qd1) rw=randread bs=4k qd=1 ;;
	randread-4k-qd32) rw=randread bs=4k qd=32 ;;
	randwrite-4k-qd32) rw=randwrite bs=4k qd=32 ;;
	read-1m) rw=read bs=1M qd=4 ;;
	write-1m) rw=write bs=1M qd=4 ;;
	randread-4k-4x8) rw=randread bs=4k qd=8 jobs=4 ;;
	randwrite-4k-4x8) rw=randwrite bs=4k qd=8 jobs=4 ;;
	*) return 1 ;;
	esac
	printf '[%s@%s@%s]\nstonewall\nfilename=%s\nrw=%s\nbs=%s\niodepth=%s\ndirect=%s\nnumjobs=%s\ngroup_reporting\n' \
		"$1" "$2" "$3" "$4" "$rw" "$bs" "$qd" "$5" "$jobs"
}

# fio_round ROUND JOBFILE: run one round's jobs in a single fio process (its
# start-up costs about a second in TCG) and append a line per job to
# data.csv: IOPS for 4k jobs, MiB/s for 1M jobs, NA for a job that failed.
fio_round() {
	local r=$1 jobs=$2 res=$work/fio-round.out
	fio --output-format=terse --terse-version=3 "$jobs" > "$res" 2> "$res.err" ||
		log "fio reported errors in round $r: $(head -c 300 "$res.err")"
	fio_lines "$r" "$jobs" "$res" >> "$out/data.csv"
}

# fio_lines ROUND JOBFILE RESULT: the CSV lines of fio_round for the terse
# RESULT of JOBFILE's jobs.
fio_lines() {
	local r=$1 jobs=$2 res=$3
	grep -o '^\[[^]]*@[^]]*\]' "$jobs" | tr -d '[]' | while IFS=@ read -r b w t; do
		# terse v3: 3 job name, 5 error, 7/8 read KiB/s / IOPS, 48/49 write
		awk -F';' -v job="$b@$w@$t" -v r="$r" -v b="$b" -v w="$w" -v t="$t" '
			$3 == job { found = 1
				wr = (w ~ /write/); bw = wr ? $48 : $7; iops = wr ? $49 : $8
				if ($5 != 0 || bw <= 0) printf "%s,%s,%s,%s,NA,NA\n", b, w, t, r
				else if (w ~ /-4k-/) printf "%s,%s,%s,%s,%d,IOPS\n", b, w, t, r, iops
				else printf "%s,%s,%s,%s,%.1f,MiB/s\n", b, w, t, r, bw / 1024 }
			END { if (!found) printf "%s,%s,%s,%s,NA,NA\n", b, w, t, r }' "$res"
	done
}

# -4x8: four jobs of depth 8 each on the same device.
workloads=(randread-4k-qd1 randread-4k-qd32 randwrite-4k-qd32 read-1m write-1m
	randread-4k-4x8 randwrite-4k-4x8)

# ------------------------------------------------------------ backings
# tmpfs: a file in a dedicated tmpfs, loop devices in buffered mode.
mkdir -p "$work/tmpfs"
mount -t tmpfs -o size=$((file_mb + 64))m tmpfs "$work/tmpfs"
at_exit umount "$work/tmpfs"
dd if=/dev/zero of="$work/tmpfs/backing" bs=1M count="$file_mb" status=none

# ext4: on the extra virtio disk if there is one; loop devices with dio on.
modprobe virtio_blk 2>/dev/null || true
modprobe ext4 2>/dev/null || true
disk=
for d in /dev/vda /dev/vdb; do
	[ -b "$d" ] && { disk=$d; break; }
done
if [ -z "$disk" ]; then
	dd if=/dev/zero of="$work/tmpfs/ext4.img" bs=1M count=0 seek=$((file_mb + 48)) status=none
	disk=$(losetup -f --show "$work/tmpfs/ext4.img")
	at_exit losetup -d "$disk"
	meta ext4_disk "stock loop over tmpfs image (no virtio disk attached)"
	# the tmpfs needs room for both files
	mount -o remount,size=$((2 * file_mb + 128))m "$work/tmpfs"
else
	meta ext4_disk "virtio-blk $disk ($(($(blockdev --getsize64 "$disk") >> 20)) MiB)"
fi
# No lazy init on the real disk: no background zeroing during the runs.
lazy=0
[ -b "$disk" ] && [[ $disk == /dev/loop* ]] && lazy=1
mkfs.ext4 -q -F -E lazy_itable_init=$lazy,lazy_journal_init=$lazy "$disk"
mkdir -p "$work/ext4"
mount -t ext4 "$disk" "$work/ext4"
at_exit umount "$work/ext4"
dd if=/dev/zero of="$work/ext4/backing" bs=1M count="$file_mb" oflag=direct status=none
sync

meta setup_s $SECONDS
# ----------------------------------------------------------- data path
declare -A dev
backings=(tmpfs ext4)
if [ -n "$have_loopfs" ]; then
	mkdir -p "$work/lfs"
	mount -t loop loop "$work/lfs"
	at_exit umount "$work/lfs"
fi
for b in "${backings[@]}"; do
	opts=()
	[ "$b" = ext4 ] && opts=(--direct-io=on)
	dev[$b,stock]=$(attach_stock "$work/$b/backing" "${opts[@]}")
	at_exit losetup -d "${dev[$b,stock]}"
	meta "dio_stock_$b" "$(dio_state "${dev[$b,stock]}")"
	if [ -n "$have_loopfs" ]; then
		dev[$b,loopfs]=$(attach_loopfs "$work/lfs" "$work/$b/backing" "${opts[@]}")
		at_exit losetup -d "${dev[$b,loopfs]}"
		meta "dio_loopfs_$b" "$(dio_state "${dev[$b,loopfs]}")"
	fi
	dev[$b,raw]=$work/$b/backing
done

# Every round runs each case on the three targets back to back (the order
# rotating from round to round), so a ratio compares runs seconds apart.
targets=(stock loopfs raw)
t0=$(date +%s)
for ((r = 1; r <= rounds; r++)); do
	{
		printf '[global]\nioengine=libaio\nsize=%sM\ntime_based\nruntime=%s\n' "$file_mb" "$runtime"
		printf 'ramp_time=%s\nnorandommap\nrandrepeat=0\ninvalidate=0\n\n' "$ramp"
		for b in "${backings[@]}"; do
			for w in "${workloads[@]}"; do
				for ((k = 0; k < 3; k++)); do
					t=${targets[(k + r - 1) % 3]}
					[ -n "${dev[$b,$t]:-}" ] || continue
					# tmpfs takes O_DIRECT only from 6.6 on: the raw
					# tmpfs file is read through the page cache on
					# every kernel. Loop devices: always O_DIRECT.
					direct=1
					[ "$b,$t" = tmpfs,raw ] && direct=0
					fio_job "$b" "$w" "$t" "${dev[$b,$t]}" "$direct"
				done
			done
		done
	} > "$work/round-$r.fio"
	fio_round "$r" "$work/round-$r.fio"
	log "round $r/$rounds done ($(($(date +%s) - t0)) s)"
done
meta data_path_s $(($(date +%s) - t0))

# ------------------------------------------------- unprivileged container
# What an unprivileged user chooses between for an ext4 image: the container
# (root = host uid $LOOPFS_UNPRIV_UID) makes the image itself and mounts it
# with mount -o loop through loopfs-run, which has the kernel's ext4 mount it
# from a loopfs device (ID-mapped), or with --fuse ext4=fuse2fs, which runs
# fuse2fs in the container on the same device. fio runs in the container on
# a file in the mounted image; the two targets run back to back in every
# round (order rotating). Rows go to ct.csv, in data.csv's columns.
ct_case() {
	local run_bin=$build/tools/loopfs-run cuid=${LOOPFS_UNPRIV_UID:-1000}
	local ct=$work/ext4/ct ct_mb=$((file_mb / 2)) r k t w direct fuse
	local ct_work=(randread-4k-qd32 randwrite-4k-qd32 read-1m write-1m)
	echo "backing,workload,target,round,value,unit" > "$out/ct.csv"
	if [ -z "$have_loopfs" ] || [ ! -x "$run_bin" ] || ! command -v fuse2fs > /dev/null; then
		log "container case skipped: needs loopfs, $run_bin and fuse2fs"
		meta ct skipped
		return 0
	fi
	modprobe fuse
	chmod 666 /dev/fuse
	mkdir -p "$ct"
	chown "$cuid:$cuid" "$ct"
	at_exit rm -rf "$ct"
	# in the container: make the image, a file on it, and find out whether
	# each target takes O_DIRECT on that file
	"$run_bin" --uid "$cuid" --fuse ext4fuse=fuse2fs -- sh -c "
		set -e
		truncate -s $((ct_mb + 64))M $ct/img
		mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 $ct/img
		mkdir -p $ct/m
		mount -o loop $ct/img $ct/m
		dd if=/dev/zero of=$ct/m/file bs=1M count=$ct_mb oflag=direct status=none
		umount $ct/m
		for t in ext4 ext4fuse; do
			mount -t \$t -o loop $ct/img $ct/m
			if dd if=$ct/m/file of=/dev/null bs=4k count=1 iflag=direct status=none 2>/dev/null
			then echo \$t=1; else echo \$t=0; fi
			umount $ct/m
		done" > "$ct/direct" 2> "$ct/setup.err" || {
		log "container case: setup failed: $(head -c 300 "$ct/setup.err")"
		meta ct failed
		return 0
	}
	meta ct_file_mb "$ct_mb"
	meta ct_direct_kernel "$(sed -n 's/^ext4=//p' "$ct/direct")"
	meta ct_direct_fuse "$(sed -n 's/^ext4fuse=//p' "$ct/direct")"
	for ((r = 1; r <= rounds; r++)); do
		for ((k = 0; k < 2; k++)); do
			t=kernel
			[ $(((k + r) % 2)) -eq 0 ] || t=fuse
			direct=$(sed -n "s/^ct_direct_$t=//p" "$out/meta.txt")
			fuse=()
			[ "$t" = fuse ] && fuse=(--fuse ext4=fuse2fs)
			{
				printf '[global]\nioengine=libaio\nsize=%sM\ntime_based\nruntime=%s\n' "$ct_mb" "$runtime"
				printf 'ramp_time=%s\nnorandommap\nrandrepeat=0\ninvalidate=0\n\n' "$ramp"
				for w in "${ct_work[@]}"; do
					fio_job ext4-image "$w" "$t" "$ct/m/file" "${direct:-0}"
				done
			} > "$ct/round.fio"
			"$run_bin" --uid "$cuid" "${fuse[@]}" -- sh -c "mount -o loop $ct/img $ct/m &&
				fio --output-format=terse --terse-version=3 $ct/round.fio; umount $ct/m" \
				> "$ct/round.out" 2> "$ct/round.err" ||
				log "container case, $t, round $r: $(head -c 300 "$ct/round.err")"
			fio_lines "$r" "$ct/round.fio" "$ct/round.out" >> "$out/ct.csv"
		done
		log "container round $r/$rounds done"
	done
}
t0=$(date +%s)
ct_case
meta container_s $(($(date +%s) - t0))

# --------------------------------------------------------- control path
# create + configure + clear + remove cycles, first with (almost) nothing
# else existing, then with DEVICES more devices spread over INSTANCES
# loopfs instances (and DEVICES more stock devices).
t0=$(date +%s)
ctlfile=$work/tmpfs/ctl-backing
dd if=/dev/zero of="$ctlfile" bs=1M count=1 status=none
lfsctl=
if [ -n "$have_loopfs" ]; then
	mkdir -p "$work/ctl0"
	mount -t loop loop "$work/ctl0"
	at_exit umount "$work/ctl0"
	lfsctl=$work/ctl0
	"$loopctl" add "$lfsctl/loop-control" > /dev/null	# the "1 existing device"
fi

count_stock() { find /sys/block -maxdepth 1 -name 'loop[0-9]*' | wc -l; }
count_loopfs() { find /sys/block -maxdepth 1 -name 'loopfs*' | wc -l; }

ctl_measure() { # STATE ROUND
	local t line ndev ninst
	for t in stock loopfs; do
		case $t in
		stock) line=$("$loopctl" cycles /dev/loop-control /dev/loop%d "$ctlfile" "$cycles")
			ndev=$(count_stock) ninst=1 ;;
		loopfs) [ -n "$lfsctl" ] || continue
			line=$("$loopctl" cycles "$lfsctl/loop-control" "$lfsctl/loop%d" "$ctlfile" "$cycles")
			ndev=$(count_loopfs) ninst=$(grep -c ' - loop ' /proc/self/mountinfo) ;;
		esac
		echo "$line" | awk -v t=$t -v s="$1" -v d="$ndev" -v i="$ninst" -v r="$2" '{
			for (f = 1; f <= NF; f++) { split($f, kv, "="); v[kv[1]] = kv[2] }
			printf "%s,%s,%d,%d,%d,%s,%s,%s,%s\n", t, s, d, i, r,
				v["per_s"], v["median_us"], v["p25_us"], v["p75_us"] }' >> "$out/ctl.csv"
	done
}

ctl_rounds=$rounds
for ((r = 1; r <= ctl_rounds; r++)); do ctl_measure few "$r"; done
few_loopfs=$(count_loopfs)

# populate: DEVICES more stock devices, and DEVICES loopfs devices over
# INSTANCES instances (the measuring instance included).
tp=$(date +%s)
"$loopctl" populate /dev/loop-control "$devices" > "$work/stock-added"
mapfile -t stock_added < "$work/stock-added"
at_exit '"$loopctl" remove /dev/loop-control "${stock_added[@]}" 2>/dev/null'
if [ -n "$lfsctl" ]; then
	per=$((devices / instances))
	"$loopctl" populate "$lfsctl/loop-control" $((per - 1)) > "$work/loopfs-added"
	if [ -w /proc/sys/user/max_loop_devices ]; then
		old_max=$(cat /proc/sys/user/max_loop_devices)
		[ "$old_max" -ge $((devices + 64)) ] || echo $((devices + 64)) > /proc/sys/user/max_loop_devices
		at_exit "echo $old_max > /proc/sys/user/max_loop_devices"
	fi
	for ((i = 1; i < instances; i++)); do
		mkdir -p "$work/inst/$i"
		mount -t loop loop "$work/inst/$i"
		at_exit "mountpoint -q $work/inst/$i && umount $work/inst/$i"
		"$loopctl" populate "$work/inst/$i/loop-control" "$per" > /dev/null
	done
fi
meta populate_s $(($(date +%s) - tp))
for ((r = 1; r <= ctl_rounds; r++)); do ctl_measure many "$r"; done

# Take the extra devices away again and time the few state once more: "few"
# is measured before and after "many", so a drift of the host's load during
# this phase does not pass for a cost of the existing devices.
"$loopctl" remove /dev/loop-control "${stock_added[@]}"
stock_added=()
if [ -n "$lfsctl" ]; then
	mapfile -t lfs_added < "$work/loopfs-added"
	[ ${#lfs_added[@]} -eq 0 ] || "$loopctl" remove "$lfsctl/loop-control" "${lfs_added[@]}"
	for ((i = 1; i < instances; i++)); do
		umount "$work/inst/$i"
	done
	# an unmounted instance's devices may go away just after umount returns
	i=0
	while [ "$(count_loopfs)" -gt "$few_loopfs" ] && [ $((i++)) -lt 300 ]; do
		sleep 0.1
	done
fi
for ((r = 1; r <= ctl_rounds; r++)); do ctl_measure few $((ctl_rounds + r)); done
meta control_path_s $(($(date +%s) - t0))
log "done: $out"
