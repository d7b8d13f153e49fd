#!/bin/bash
# loopfs-timeout: 420
# Aborting tenant A's FUSE connection fails its stalled reads:
# loopfs-expect-log: I/O error, dev loopfs[0-9]+-[0-9]+, sector [0-9]+ op 0x0:\(READ\)
# Denial of service across tenants. Tenant A (the unprivileged uid, root of
# its own user namespaces) backs devices with a file on a FUSE mount whose
# daemon stops answering reads, writes and fsyncs. Its stalled I/O and the
# ioctls stuck behind it must not hold up tenant B (another uid, another
# user namespace, another instance): B creates, configures, reads, clears
# and removes a device within 1 s a step. A's tasks waiting on the
# device's locks die on SIGKILL, and aborting the FUSE connection tears
# everything down.
#
# The FUSE mounts belong to the initial user namespace (as fusermount makes
# them for any host user): FUSE refuses requests whose credentials its
# mount's namespace cannot map, so a kernel worker's reads from a mount
# made inside a user namespace fail at once instead of stalling.
set -uo pipefail
. "$(dirname "$0")/../lib/suite.sh"
in_private_mount_ns "$@"

uid=${LOOPFS_UNPRIV_UID:-1000}
buid=$((uid + 1))
bin=${LOOPFS_BUILD:?}/tests/security
# Stalled requests: one per device on each of two hardware queues, twice
# what a host-wide workqueue runs at once by default (256).
NDEV=${LOOPFS_TENANTS_NDEV:-128}
w=$(mktemp -d /tmp/loopfs-tenants.XXXXXX)
chmod 0755 "$w"
mkdir "$w/fa" "$w/fb" "$w/a" "$w/a2" "$w/b"

# as_tenant UID MOUNTPOINT CMD...: CMD as UID, root of a new user namespace
# with its own mount namespace and a loopfs instance on MOUNTPOINT.
as_tenant() {
	local u=$1 d=$2
	shift 2
	setpriv --reuid="$u" --regid="$u" --clear-groups \
		unshare -Urm sh -c 'mount -t loop loop "$0" && exec "$@"' "$d" "$@"
}

# as_tenant_bg UID MOUNTPOINT CMD...: as_tenant, for `&`: $! is CMD's pid.
as_tenant_bg() {
	local u=$1 d=$2
	shift 2
	exec setpriv --reuid="$u" --regid="$u" --clear-groups \
		unshare -Urm sh -c 'mount -t loop loop "$0" && exec "$@"' "$d" "$@"
}

# as_uid_bg UID CMD...: CMD as UID in the initial namespaces, for `&`.
as_uid_bg() {
	local u=$1
	shift
	exec setpriv --reuid="$u" --regid="$u" --clear-groups "$@"
}

# wait_for FILE PATTERN SECONDS
wait_for() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "no '$2' in $1 after $3 s: $(tail -n 3 "$1" 2>/dev/null | tr '\n' ' ')"
}

start_daemon() {
	local name=$1 before conn i
	before=$(ls /sys/fs/fuse/connections)
	"$bin/tenants-fuse" "$w/$name" "${2:-16}" </dev/null >"$w/$name.log" 2>&1 &
	echo $! >"$w/$name.pid"
	for ((i = 0; i < 50; i++)); do
		[ -e "$w/$name/img" ] && break
		sleep 0.1
	done
	[ -e "$w/$name/img" ] || fail "FUSE daemon $name: $(cat "$w/$name.log")"
	for conn in /sys/fs/fuse/connections/*; do
		conn=${conn##*/}
		echo "$before" | grep -qx "$conn" || echo "$conn" >"$w/$name.conn"
	done
	[ -s "$w/$name.conn" ] || fail "no FUSE connection for $name"
}

setup() {
	grep -q '^fuse ' /proc/modules || [ -d /sys/fs/fuse ] || modprobe fuse
	mountpoint -q /sys/fs/fuse/connections ||
		mount -t fusectl fusectl /sys/fs/fuse/connections
	count_disks >"$w/disks_before"
	echo "DIAG: start at $(uptime_s)"
	start_daemon fa
	start_daemon fb
	head -c 65536 /dev/urandom | dd of="$w/fb/img" conv=notrunc status=none
	# A binds its devices while its daemon still answers.
	as_tenant_bg "$uid" "$w/a" "$bin/tenants-ops" flood "$w/a" "$w/fa/img" \
		"$NDEV" </dev/null >"$w/flood.log" 2>&1 &
	echo $! >"$w/flood.pid"
	wait_for "$w/flood.log" '^bound' 120
	echo "DIAG: $NDEV devices bound to the FUSE file at $(uptime_s)"
	kill -USR1 "$(cat "$w/fa.pid")"
	kill -USR1 "$(cat "$w/flood.pid")"
	wait_for "$w/flood.log" '^submitted' 10
	sleep 1
	echo "DIAG: $((2 * NDEV)) reads stalled at $(uptime_s)"
}

# B's whole device life cycle, each step within 1 s.
tenant_b_cycle() {
	local rc=0
	as_tenant "$buid" "$w/b" "$bin/tenants-ops" timed "$w/b" "$w/fb/img" \
		</dev/null >"$w/b.log" 2>&1 || rc=$?
	sed 's/^/DIAG: /' "$w/b.log"
	return "$rc"
}

# A: LOOP_CONFIGURE with direct I/O on the stalled file (the switch to
# direct I/O syncs the file first), and LOOP_CHANGE_FD on a device with
# stalled reads (the switch waits for them).
stall_ioctls() {
	local fpid
	fpid=$(cat "$w/flood.pid")
	as_tenant_bg "$uid" "$w/a2" "$bin/tenants-ops" dioconf "$w/a2" "$w/fa/img" \
		</dev/null >"$w/dioconf.log" 2>&1 &
	echo $! >"$w/dioconf.pid"
	as_uid_bg "$uid" "$bin/tenants-ops" changefd "/proc/$fpid/root$w/a" 0 \
		"$w/fa/img" </dev/null >"$w/changefd.log" 2>&1 &
	echo $! >"$w/changefd.pid"
	wait_for "$w/dioconf.log" '^configuring' 5
	wait_for "$w/changefd.log" '^changing' 5
	sleep 1
	! grep -q '^configured' "$w/dioconf.log" ||
		fail "configure did not stall: $(cat "$w/dioconf.log")"
	! grep -q '^changed' "$w/changefd.log" ||
		fail "change-fd did not stall: $(cat "$w/changefd.log")"
	echo "DIAG: ioctls stalled at $(uptime_s)"
	tenant_b_cycle
}

# waiter_dies NAME CMD...: CMD (a tenants-ops command run as A) waits,
# and dies within 3 s of SIGKILL.
waiter_dies() {
	local name=$1 pid i
	shift
	as_uid_bg "$uid" "$bin/tenants-ops" "$@" </dev/null >"$w/$name.log" 2>&1 &
	pid=$!
	sleep 1.5
	alive "$pid" || fail "$name did not wait: $(cat "$w/$name.log")"
	kill -9 "$pid"
	for ((i = 0; i < 30; i++)); do
		alive "$pid" || return 0
		sleep 0.1
	done
	fail "$name waiter alive 3 s after SIGKILL ($(cat "/proc/$pid/wchan" 2>/dev/null))"
}

# A's LOOP_CTL_REMOVE of the device its stuck LOOP_CHANGE_FD holds fails
# with EBUSY (an ioctl of the device is under way) instead of waiting with
# the instance's locks held (a wait would last until the timeout's kill); a task of A queued behind the
# stuck LOOP_CHANGE_FD, and the stuck configure itself, die on SIGKILL.
killable() {
	local fpid pid i out start ms
	fpid=$(cat "$w/flood.pid")
	start=$(date +%s%N)
	out=$(setpriv --reuid="$uid" --regid="$uid" --clear-groups timeout -s KILL 10 \
		"$bin/tenants-ops" remove "/proc/$fpid/root$w/a" 0 </dev/null 2>&1)
	ms=$((($(date +%s%N) - start) / 1000000))
	echo "DIAG: LOOP_CTL_REMOVE answered in $ms ms"
	case $out in
	*"LOOP_CTL_REMOVE: Device or resource busy"*) ;;
	*) fail "the remove: $out" ;;
	esac
	waiter_dies clear clear "/proc/$fpid/root$w/a" 0
	pid=$(cat "$w/dioconf.pid")
	kill -9 "$pid"
	for ((i = 0; i < 30; i++)); do
		alive "$pid" || break
		sleep 0.1
	done
	! alive "$pid" || fail "stalled LOOP_CONFIGURE alive 3 s after SIGKILL"
}

# Abort A's FUSE connection, kill every helper: all of A's devices go.
teardown() {
	local p i n
	echo 1 >"/sys/fs/fuse/connections/$(cat "$w/fa.conn")/abort"
	echo 1 >"/sys/fs/fuse/connections/$(cat "$w/fb.conn")/abort"
	echo "DIAG: aborted at $(uptime_s)"
	for p in flood changefd dioconf fa fb; do
		if [ -s "$w/$p.pid" ]; then
			kill -9 "$(cat "$w/$p.pid")" 2>/dev/null || true
		fi
	done
	for ((i = 0; i < 100; i++)); do
		pgrep -x tenants-ops >/dev/null || break
		sleep 0.1
	done
	! pgrep -x tenants-ops >/dev/null ||
		fail "helpers still alive 10 s after the abort: $(pgrep -x -a tenants-ops)"
	umount -l "$w/fa" "$w/fb" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		n=$(count_disks)
		[ "$n" = "$(cat "$w/disks_before")" ] && return 0
		sleep 0.1
	done
	fail "$n loopfs disks left, $(cat "$w/disks_before") before the suite"
}

# A memory cgroup limited to 8 MiB writes 24 MiB through a device backed
# by a FUSE file, which the worker serves (FUSE cannot do IOCB_NOWAIT): the
# page cache the worker fills is the group's, so the group hits its limit
# and reclaims its own pages; the writes complete, nobody is OOM-killed.
memcg() {
	local g file max oom rc=0
	mkdir -p "$w/cg" "$w/fc" "$w/m"
	mount -t cgroup2 cgroup2 "$w/cg" || fail "no cgroup2"
	grep -qw memory "$w/cg/cgroup.controllers" || fail "no memory controller"
	echo +memory >"$w/cg/cgroup.subtree_control"
	g=$w/cg/loopfs-tenants-$$
	mkdir "$g"
	echo 8M >"$g/memory.max"
	start_daemon fc 32
	mount -t loop loop "$w/m"
	(echo "$BASHPID" >"$g/cgroup.procs" &&
		exec "$bin/tenants-ops" write "$w/m" "$w/fc/img" 24) || rc=$?
	file=$(awk '$1 == "file" { print $2 }' "$g/memory.stat")
	max=$(awk '$1 == "max" { print $2 }' "$g/memory.events")
	oom=$(awk '$1 == "oom_kill" { print $2 }' "$g/memory.events")
	echo "DIAG: group: file $((file >> 20)) MiB, peak $(cat "$g/memory.peak" 2>/dev/null || echo n/a), max events $max, oom kills $oom"
	umount "$w/m"
	echo 1 >"/sys/fs/fuse/connections/$(cat "$w/fc.conn")/abort"
	kill -9 "$(cat "$w/fc.pid")" 2>/dev/null || true
	umount -l "$w/fc"
	rmdir "$g"
	umount "$w/cg"
	[ "$rc" = 0 ] || fail "the writer failed ($rc)"
	[ "$oom" = 0 ] || fail "$oom OOM kills in the group"
	[ "$max" -gt 0 ] || fail "the group never reached memory.max: the worker's page cache was not charged to it"
	[ "$file" -ge $((4 << 20)) ] || fail "only $((file >> 20)) MiB of page cache charged to the group"
}

tap_plan 6
run_test "tenant A binds $NDEV devices to a FUSE file and stalls $((2 * NDEV)) reads" setup
run_test "tenant B's create/configure/O_DIRECT read/clear/remove take < 1 s each while A's reads stall" tenant_b_cycle
run_test "A's configure (direct I/O sync) and change-fd stuck on the stalled file do not hold up B (< 1 s a step)" stall_ioctls
run_test "A's remove of the device its stuck change-fd holds fails with EBUSY instead of waiting; its clear waiting behind it, and the stuck configure, die on SIGKILL within 3 s" killable
run_test "aborting A's FUSE connection ends every stuck task and removes every device of A" teardown
memcg_name="the worker's page cache for a group's 24 MiB of writes counts against its 8 MiB memory.max"
if kernel_charges_worker_memcg; then
	run_test "$memcg_name" memcg
else
	skip_test "$memcg_name" "$no_worker_memcg"
fi
rm -rf "$w" 2>/dev/null
tap_done
