#!/bin/bash
# loopfs-timeout: 420
# Aborting tenant A's FUSE connection fails the device's stalled writes:
# loopfs-expect-log: I/O error, dev loopfs[0-9]+-[0-9]+, sector [0-9]+ op 0x1:\(WRITE\)
# loopfs-expect-log: Buffer I/O error on dev loopfs[0-9]+-[0-9]+, logical block [0-9]+, lost async page write
# A tenant's dirty pages and the host's writers. Tenant A (the
# unprivileged uid, root of its own user namespace) backs a device with a
# file on a FUSE mount whose daemon then stops answering, and writes to the
# device through the page cache. Its dirty pages must stay within the
# device's own share of the dirty threshold: another user's writes to a
# healthy device keep their speed. The host's sync(2) waits for A's
# stalled writeback, as it does for any device; the host ends the wait by
# aborting A's FUSE connection, after which the device's writes fail and
# sync returns.
#
# The FUSE mount belongs to the initial user namespace (as fusermount makes
# it for any host user): see tenants.sh.
set -uo pipefail
. "$(dirname "$0")/../lib/suite.sh"
in_private_mount_ns "$@"

uid=${LOOPFS_UNPRIV_UID:-1000}
buid=$((uid + 1))
bin=${LOOPFS_BUILD:?}/tests/security
# Rounds of B's timed write, before and during the stall (medians count),
# and the seconds one round may take during the stall: the stalled worker
# must not wait anywhere near the hung task timeout.
ROUNDS=5
ROUND_MAX=15
w=$(mktemp -d /tmp/loopfs-writeback.XXXXXX)
chmod 0755 "$w"
mkdir "$w/fa" "$w/a" "$w/b"

cleanup() {
	local p
	[ -s "$w/fa.conn" ] &&
		echo 1 2>/dev/null >"/sys/fs/fuse/connections/$(cat "$w/fa.conn")/abort"
	for p in writer fa sync; do
		[ -s "$w/$p.pid" ] && kill -9 "$(cat "$w/$p.pid")" 2>/dev/null
	done
	umount -l "$w/fa" 2>/dev/null
	rm -rf "$w" 2>/dev/null
}
trap cleanup EXIT

# dirty_mib: dirty pages and pages under writeback, machine-wide, in MiB
dirty_mib() {
	awk '$1 == "Dirty:" || $1 == "Writeback:" { n += $2 } END { print int(n / 1024) }' \
		/proc/meminfo
}

# median of the numbers on stdin
median() {
	sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# b_write_ms: tenant B writes 64 MiB to a device of its own backed by a
# tmpfs file and fsyncs it; prints the milliseconds the write took.
b_write_ms() {
	# shellcheck disable=SC2016 # expanded by B's shell
	timeout -k 5 "$ROUND_MAX" setpriv --reuid="$buid" --regid="$buid" --clear-groups \
		unshare -Urm sh -c '
		set -e
		mount -t loop loop "$0"
		"$1" ctl-add "$0/loop-control" >/dev/null
		losetup "$0/loop0" "$2"
		s=$(date +%s%N)
		dd if=/dev/zero of="$0/loop0" bs=1M count=64 conv=fsync status=none
		e=$(date +%s%N)
		losetup -d "$0/loop0"
		echo $(((e - s) / 1000000))' "$w/b" "$bin/host-tool" "$w/b.img" ||
		echo $((ROUND_MAX * 1000))
}

setup() {
	local before conn i
	grep -q '^fuse ' /proc/modules || [ -d /sys/fs/fuse ] || modprobe fuse
	mountpoint -q /sys/fs/fuse/connections ||
		mount -t fusectl fusectl /sys/fs/fuse/connections
	count_disks >"$w/disks_before"
	truncate -s 64M "$w/b.img"
	chown "$buid:$buid" "$w/b.img"
	before=$(ls /sys/fs/fuse/connections)
	"$bin/tenants-fuse" "$w/fa" 1024 </dev/null >"$w/fa.log" 2>&1 &
	echo $! >"$w/fa.pid"
	for ((i = 0; i < 50; i++)); do
		[ -e "$w/fa/img" ] && break
		sleep 0.1
	done
	[ -e "$w/fa/img" ] || fail "FUSE daemon: $(cat "$w/fa.log")"
	for conn in /sys/fs/fuse/connections/*; do
		conn=${conn##*/}
		echo "$before" | grep -qx "$conn" || echo "$conn" >"$w/fa.conn"
	done
	[ -s "$w/fa.conn" ] || fail "no FUSE connection"
	for ((i = 0; i < ROUNDS; i++)); do
		b_write_ms >>"$w/t0"
	done
	echo "DIAG: B's 64 MiB write+fsync unloaded: $(xargs <"$w/t0") ms"
}

# A binds a device to the FUSE file, the daemon stops answering, A writes
# 1 GiB through the page cache: the writer stops where A's device may hold
# no more dirty pages.
stall() {
	local i prev=-1 cur
	# shellcheck disable=SC2016 # expanded by A's shell
	setpriv --reuid="$uid" --regid="$uid" --clear-groups unshare -Urm sh -c '
		mount -t loop loop "$0" || exit 1
		"$1" ctl-add "$0/loop-control" >/dev/null || exit 1
		losetup "$0/loop0" "$2" || exit 1
		echo bound
		while [ ! -e "$3" ]; do sleep 0.1; done
		exec dd if=/dev/zero of="$0/loop0" bs=1M count=1024 status=none' \
		"$w/a" "$bin/host-tool" "$w/fa/img" "$w/go" </dev/null >"$w/writer.log" 2>&1 &
	echo $! >"$w/writer.pid"
	for ((i = 0; i < 100; i++)); do
		grep -q '^bound' "$w/writer.log" && break
		sleep 0.1
	done
	grep -q '^bound' "$w/writer.log" || fail "A did not bind: $(cat "$w/writer.log")"
	kill -USR1 "$(cat "$w/fa.pid")"
	touch "$w/go"
	# Wait until the dirty pages stop growing (20 s at most).
	for ((i = 0; i < 20; i++)); do
		sleep 1
		cur=$(dirty_mib)
		[ "$cur" -le "$prev" ] && break
		prev=$cur
	done
	alive "$(cat "$w/writer.pid")" || fail "A's writer ended: $(cat "$w/writer.log")"
	echo "DIAG: A's writer held at $(uptime_s) s with $(dirty_mib) MiB dirty or under writeback"
}

# While A's device is stalled, B's writes take at most 1.5 times as long.
b_unaffected() {
	local t0 t1 i
	for ((i = 0; i < ROUNDS; i++)); do
		b_write_ms >>"$w/t1"
		[ "$(tail -n 1 "$w/t1")" -lt $((ROUND_MAX * 1000)) ] || break
	done
	t0=$(median <"$w/t0")
	t1=$(median <"$w/t1")
	[ "$t0" -lt $((ROUND_MAX * 1000)) ] ||
		fail "B's unloaded write took the whole ${ROUND_MAX} s: nothing to compare"
	echo "DIAG: B's 64 MiB write+fsync while A is stalled: $(xargs <"$w/t1") ms" \
		"(median $t1 ms against $t0 ms), $(dirty_mib) MiB dirty or under writeback"
	[ $((t1 * 2)) -le $((t0 * 3)) ] ||
		fail "B's write took $t1 ms with A stalled, $t0 ms before (over 1.5 times)"
}

# sync(2) waits for A's stalled writeback; aborting A's FUSE connection,
# as host root can, fails A's writes and ends the wait within seconds.
sync_recovers() {
	local pid i
	sync &
	pid=$!
	echo "$pid" >"$w/sync.pid"
	sleep 3
	alive "$pid" ||
		fail "sync returned although A's writeback is stalled (docs/security.md says it waits)"
	echo 1 >"/sys/fs/fuse/connections/$(cat "$w/fa.conn")/abort"
	echo "DIAG: aborted A's FUSE connection at $(uptime_s) s"
	for ((i = 0; i < 100; i++)); do
		alive "$pid" || break
		sleep 0.1
	done
	! alive "$pid" || fail "sync still waits 10 s after the abort ($(cat "/proc/$pid/wchan"))"
	echo "DIAG: sync returned at $(uptime_s) s"
}

# A's writer dies, its instance goes, and with it the device.
teardown() {
	local i n
	kill -9 "$(cat "$w/writer.pid")" "$(cat "$w/fa.pid")" 2>/dev/null || true
	umount -l "$w/fa" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		n=$(count_disks)
		[ "$n" = "$(cat "$w/disks_before")" ] && return 0
		sleep 0.1
	done
	fail "$n loopfs disks left, $(cat "$w/disks_before") before the suite"
}

# A tenant's devices hold dirty shares within its host user's quota
# (container_dirty_devices, 2 here), across its instances; a device past it
# binds with none (max_ratio 0). A share comes back when its device is
# unbound. Another user has a quota of its own, and host root's instances
# have no quota.
dirty_quota() {
	local before out host i
	before=$(cat /sys/module/loopfs/parameters/container_dirty_devices)
	echo 2 >/sys/module/loopfs/parameters/container_dirty_devices
	mkdir -p "$w/q" "$w/qa1" "$w/qa2" "$w/qb" "$w/qh1" "$w/qh2"
	chown "$uid:$uid" "$w/q"
	# shellcheck disable=SC2016 # expanded by the tenants' shells
	local tenant
	tenant='
		r() { set -- $(stat -c "%t %T" "$1"); cat /sys/class/bdi/$((0x$1)):$((0x$2))/max_ratio; }
		mount -t loop loop "$1" && mount -t loop loop "$2" || exit 1
		for n in 0 1 2; do
			"$0" ctl-add "$1/loop-control" >/dev/null
			truncate -s 1M "$3/$4$n" && losetup "$1/loop$n" "$3/$4$n" || exit 1
		done
		"$0" ctl-add "$2/loop-control" >/dev/null
		truncate -s 1M "$3/$4x" && losetup "$2/loop0" "$3/$4x" || exit 1
		echo "shares $(r "$1/loop0") $(r "$1/loop1") $(r "$1/loop2") $(r "$2/loop0")"
		losetup -d "$1/loop1" "$2/loop0" && losetup "$2/loop0" "$3/$4x" || exit 1
		echo "after unbinding loop1: $(r "$2/loop0")"'
	out=$(setpriv --reuid="$uid" --regid="$uid" --clear-groups unshare -Urm sh -c "$tenant" \
		"$bin/host-tool" "$w/qa1" "$w/qa2" "$w/q" a 2>&1)
	out+=$'\n'B:$(setpriv --reuid="$buid" --regid="$buid" --clear-groups unshare -Urm sh -c \
		"mount -t loop loop $w/qb && $bin/host-tool ctl-add $w/qb/loop-control >/dev/null &&
		truncate -s 1M /tmp/qb.$$ && losetup $w/qb/loop0 /tmp/qb.$$ &&
		set -- \$(stat -c '%t %T' $w/qb/loop0) &&
		cat /sys/class/bdi/\$((0x\$1)):\$((0x\$2))/max_ratio; rm -f /tmp/qb.$$" 2>&1)
	host=$(unshare -m sh -c "$tenant" "$bin/host-tool" "$w/qh1" "$w/qh2" /tmp h 2>&1)
	echo "$before" >/sys/module/loopfs/parameters/container_dirty_devices
	rm -f /tmp/h?
	echo "$out"
	echo "host: $host"
	expect_in "shares 1 1 0 0" "$out" "A's four bound devices, two instances, quota 2"
	expect_in "after unbinding loop1: 1" "$out" "A's device bound again after one of its shares was freed"
	expect_in "B:1" "$out" "B's device, A's quota full"
	expect_in "shares 1 1 1 1" "$host" "host root's devices"
}

tap_plan 6
run_test "tenant A's bound devices hold dirty shares within its host user's quota (container_dirty_devices), across instances; B and host root have their own" dirty_quota
run_test "set-up: a stalling FUSE file, B's 64 MiB write+fsync timed unloaded" setup
run_test "tenant A's 1 GiB of writes to a device on the stalled file stop at its device's dirty share" stall
run_test "meanwhile tenant B's writes to a healthy device take at most 1.5 times as long" b_unaffected
run_test "the host's sync waits for A's stalled writes until host root aborts A's FUSE connection" sync_recovers
run_test "A's writer and device go once its connection is aborted" teardown
tap_done
