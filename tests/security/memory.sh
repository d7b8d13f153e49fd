#!/bin/bash
# loopfs-timeout: 600
# Whose memory a device's I/O uses. A writer in a memory cgroup limited to
# 64 MiB writes 256 MiB through a loopfs device with O_DIRECT, at queue
# depth 1 and 32, backed by a tmpfs file and by a file on ext4. The pages
# the backing file's filesystem allocates for those writes (tmpfs pages,
# ext4 page cache) belong to the writer's group whether the request is
# served inline or by the device's worker, so the backing file never holds
# more than the group may: at most the limit plus slack resident. A device
# whose I/O escaped its submitter's group would leave all 256 MiB resident,
# charged to nobody's limit. A last case writes through the device's page
# cache and leaves the backing file's writes to writeback.
#
# ext4 page cache is reclaimed within the group once written back: the
# O_DIRECT writers complete with no OOM kill. Buffered writers may not: the
# group fills with the device's dirty pages, and writing them back needs
# backing pages charged to the same group, which reclaim without I/O cannot
# free (see docs/security.md); only the bound on the backing is checked.
# tmpfs pages cannot be reclaimed at all (a device serves I/O without
# __GFP_IO, so not even to swap): the writer is OOM-killed at its limit, as
# it would be writing 256 MiB into a tmpfs of its own with no swap; writes
# it left in flight fail (its group has no memory for them) with an I/O
# error logged, declared below, but a case fails on any such line if its
# group saw no OOM kill. The group has the io controller too, as container
# managers set up groups, so that writeback and dirty throttling are per
# group. ext4 lives on a zram disk, whose memory no group is charged for.
# loopfs-expect-log: memory cgroup OOM kill
# loopfs-expect-log: I/O error, dev loopfs[0-9]+-[0-9]+, sector [0-9]+ op 0x1:\(WRITE\)
set -uo pipefail
. "$(dirname "$0")/../lib/suite.sh"
in_private_mount_ns "$@"

B=${LOOPFS_BUILD:?}/tests/security/backing-bind
LIMIT_MB=64
WRITE_MB=256
SLACK_MB=16
w=$(mktemp -d /tmp/loopfs-memory.XXXXXX)
echo >"$w/zram"

cleanup() {
	local z c
	umount "$w/m" "$w/ext4" 2>/dev/null
	rmdir "$w"/cg/loopfs-memory-* 2>/dev/null
	if [ -f "$w/controllers" ]; then
		for c in memory io; do
			grep -qw "$c" "$w/controllers" ||
				echo "-$c" >"$w/cg/cgroup.subtree_control" 2>/dev/null
		done
	fi
	umount "$w/cg" "$w/tmpfs" 2>/dev/null
	z=$(cat "$w/zram" 2>/dev/null)
	[ -z "$z" ] || echo "$z" >/sys/class/zram-control/hot_remove
	rm -rf "$w"
}
trap cleanup EXIT

setup() {
	local z
	mkdir -p "$w/cg" "$w/m" "$w/tmpfs" "$w/ext4"
	mount -t cgroup2 cgroup2 "$w/cg" || fail "no cgroup2"
	grep -qw memory "$w/cg/cgroup.controllers" || fail "no memory controller"
	grep -qw io "$w/cg/cgroup.controllers" || fail "no io controller"
	# Put back at the end: the hierarchy is the whole guest's.
	cat "$w/cg/cgroup.subtree_control" >"$w/controllers"
	echo "+memory +io" >"$w/cg/cgroup.subtree_control"
	mount -t tmpfs -o size=1G tmpfs "$w/tmpfs" || fail "tmpfs"
	modprobe zram num_devices=0 || fail "no zram module"
	z=$(cat /sys/class/zram-control/hot_add) || fail "no zram device"
	echo "$z" >"$w/zram"
	echo 320M >"/sys/block/zram$z/disksize"
	mkfs.ext4 -q "/dev/zram$z" || fail "mkfs.ext4"
	mount "/dev/zram$z" "$w/ext4" || fail "mount ext4"
	mount -t loop loop "$w/m" || fail "mount loopfs"
}

# resident_mb FILE: MiB of FILE's pages in memory.
resident_mb() {
	fincore -bn -o RES "$1" | awk '{ print int($1 / 1048576) }'
}

# event GROUP NAME: a counter of GROUP's memory.events.
event() {
	awk -v k="$2" '$1 == k { print $2 }' "$1/memory.events"
}

# held FILE HOW END: bind a device to a fresh sparse FILE, run HOW (a
# command writing $WRITE_MB MiB to the device $D) in a new group limited to
# $LIMIT_MB MiB, and check that the group held the backing's pages. END is
# how the writer ends: "completes" (no OOM kill), "oom-killed", or "either".
held() {
	local file=$1 how=$2 end=$3 g n dev rc=0 res max oom i log errs
	truncate -s "${WRITE_MB}M" "$file"
	n=$("$B" getfree "$w/m/loop-control")
	dev=$w/m/loop$n
	expect_eq "ok ro=0" "$("$B" setfd "$dev" "$file" rw)" "bind $file"
	g=$(mktemp -d "$w/cg/loopfs-memory-XXXXXX")
	echo "${LIMIT_MB}M" >"$g/memory.max"
	echo 1 >"$g/memory.oom.group"
	log=$(dmesg_lines)
	(echo "$BASHPID" >"$g/cgroup.procs" && D=$dev exec bash -c "$how") ||
		rc=$?
	for ((i = 0; i < 100; i++)); do
		grep -qx "populated 0" "$g/cgroup.events" && break
		sleep 0.1
	done
	# What the group's writer left dirty is written back before the count.
	sync
	res=$(resident_mb "$file")
	max=$(event "$g" max)
	oom=$(event "$g" oom_kill)
	errs=$(dmesg_since "$log" | grep -c 'I/O error, dev loopfs' || true)
	echo "DIAG: $WRITE_MB MiB written: backing resident $res MiB," \
		"group peak $(($(cat "$g/memory.peak" 2>/dev/null || echo 0) >> 20)) MiB," \
		"max events $max, oom kills $oom, failed writes $errs"
	"$B" clr "$dev" >/dev/null
	rm -f "$file"
	rmdir "$g"
	case $end in
	completes)
		[ "$rc" = 0 ] || fail "the writer failed ($rc)"
		[ "$oom" = 0 ] || fail "$oom OOM kills in the group"
		;;
	oom-killed)
		[ "$oom" -gt 0 ] || fail "the writer ended ($rc) with no OOM kill"
		;;
	esac
	[ "$oom" -gt 0 ] || [ "$errs" = 0 ] ||
		fail "$errs writes to the device failed with no OOM kill in the group"
	[ "$max" -gt 0 ] || fail "the group never reached memory.max: the backing's pages were charged elsewhere"
	[ "$res" -le $((LIMIT_MB + SLACK_MB)) ] ||
		fail "$res MiB of the backing file resident, the group may hold $LIMIT_MB MiB"
}

# fio_write QD DIRECT: 64 KiB writes at depth QD over the device, with
# O_DIRECT (DIRECT=1) or through its page cache and an fsync at the end.
fio_write() {
	echo "fio --name=w --filename=\"\$D\" --rw=write --bs=64k \
--size=${WRITE_MB}M --ioengine=libaio --iodepth=$1 --direct=$2 \
--end_fsync=1 --output=/dev/null"
}

tap_plan 6
run_test "set-up: cgroup2 with memory and io, tmpfs, ext4 on zram, an instance" setup
run_test "tmpfs backing, O_DIRECT QD1: 256 MiB of writes stop at the writer's 64 MiB limit (OOM kill)" \
	held "$w/tmpfs/f" "$(fio_write 1 1)" oom-killed
# Where the worker's page cache is charged to the root group (lib.sh's
# kernel_charges_worker_memcg), a group holds only what is served inline,
# in its writer's own context: tmpfs at depth 1 alone.
worker_cases=(
	"tmpfs backing, O_DIRECT QD32: 256 MiB of writes stop at the writer's 64 MiB limit (OOM kill)"
	"ext4 backing, O_DIRECT QD1: the writer's 64 MiB group holds 256 MiB of writes"
	"ext4 backing, O_DIRECT QD32: the writer's 64 MiB group holds 256 MiB of writes"
	"ext4 backing, buffered writes left to writeback: the group holds 256 MiB"
)
if kernel_charges_worker_memcg; then
	run_test "${worker_cases[0]}" held "$w/tmpfs/f" "$(fio_write 32 1)" oom-killed
	run_test "${worker_cases[1]}" held "$w/ext4/f" "$(fio_write 1 1)" completes
	run_test "${worker_cases[2]}" held "$w/ext4/f" "$(fio_write 32 1)" completes
	run_test "${worker_cases[3]}" held "$w/ext4/f" "$(fio_write 1 0)" either
else
	for c in "${worker_cases[@]}"; do
		skip_test "$c" "$no_worker_memcg"
	done
fi
cleanup
tap_done
