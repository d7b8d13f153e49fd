#!/bin/bash
# Uevents of a container's devices, in the container's own network
# namespace. The kernel sends disk uevents only to network namespaces of the
# initial user namespace, under the host's names; an instance mounted from
# a network namespace of another user namespace announces its disks and
# partitions there itself. As the unprivileged uid, container A
# (unshare -Urmn) listens on NETLINK_KOBJECT_UEVENT while it creates a
# device, binds a partitioned image with a partition scan, clears and
# removes it; container B, another such namespace, listens at the same
# time, and so does the host's network namespace.
set -uo pipefail
. "$(dirname "$0")/../lib/suite.sh"
in_private_mount_ns "$@"

uid=${LOOPFS_UNPRIV_UID:-1000}
w=$(mktemp -d /tmp/loopfs-uevents.XXXXXX)
chmod 0755 "$w"
mkdir "$w/u" && chown "$uid:$uid" "$w/u"

# listen.py STOP: print "ACTION DEVPATH DEVNAME MAJ:MIN" for each kernel
# uevent of a block device heard in this network namespace, after a first
# line "ready" once listening, until file STOP exists (at most 300 s).
cat >"$w/listen.py" <<'PY'
import os, socket, sys, time
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 15)
s.bind((0, 1))
s.settimeout(0.2)
print("ready", flush=True)
end = time.time() + 300
while time.time() < end and not os.path.exists(sys.argv[1]):
    try:
        data = s.recv(65536)
    except socket.timeout:
        continue
    kv = dict(f.split(b"=", 1) for f in data.split(b"\0")[1:] if b"=" in f)
    if kv.get(b"SUBSYSTEM") != b"block":
        continue
    print(" ".join(kv.get(k, b"-").decode() for k in
                   (b"ACTION", b"DEVPATH", b"DEVNAME")),
          "%s:%s" % (kv.get(b"MAJOR", b"-").decode(),
                     kv.get(b"MINOR", b"-").decode()), flush=True)
PY

# In a container: mount an instance, listen into $u/$1.events until
# $u/$1.stop exists; container "a" also makes, binds and removes a device,
# noting the nodes' device numbers in $u/a.nodes, and stops listening once
# it heard the device go (at most 60 s later).
{
declare -f loop_detach loop_detach_cmd ul_takes_loopfs_paths
cat <<'INNER'
set -euo pipefail
u=$1 name=$2
m=$u/m-$name
mkdir -p "$m"
mount -t loop loop "$m"
python3 "$u/../listen.py" "$u/$name.stop" >"$u/$name.events" &
for _ in $(seq 600); do
	grep -q ready "$u/$name.events" && break
	sleep 0.1
done
if [ "$name" = a ]; then
	ctl() { python3 -c 'import fcntl, os, sys
fcntl.ioctl(os.open(sys.argv[1], os.O_RDWR), int(sys.argv[2], 16), 0)' "$m/loop-control" "$1"; }
	ctl 0x4C80
	losetup -P "$m/loop0" "$u/img"
	# MAJ:MIN in decimal from stat's hexadecimal %t %T (coreutils 8.32
	# has no %Hr:%Lr).
	for n in loop0 loop0p1 loop0p2; do
		read -r maj min < <(stat -c '%t %T' "$m/$n")
		echo "$n $((0x$maj)):$((0x$min))"
	done >"$u/a.nodes"
	loop_detach "$m/loop0"
	ctl 0x4C81
	for _ in $(seq 600); do
		grep -q "^remove /block/loop0 " "$u/a.events" && break
		sleep 0.1
	done
	touch "$u/a.stop"
fi
wait
INNER
} >"$w/inner.sh"

# churn.py CONTROL N: add and remove device 0 N times through CONTROL; print
# the seconds it took.
cat >"$w/churn.py" <<'PY'
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
start = time.time()
for _ in range(int(sys.argv[2])):
    fcntl.ioctl(fd, 0x4C80, 0)  # LOOP_CTL_ADD 0
    fcntl.ioctl(fd, 0x4C81, 0)  # LOOP_CTL_REMOVE 0
print("%.2f" % (time.time() - start))
PY

# in_listening_ns C SCRIPT: as the unprivileged uid, in a user and network
# namespace of its own, listen into C.events until 1.5 s after SCRIPT (run
# with $c and $w set, C.m made) has ended; SCRIPT's status.
in_listening_ns() {
	setpriv --reuid="$uid" --regid="$uid" --clear-groups \
		unshare -Urmn bash -c '
		c=$1 w=$2 rc=0
		python3 "$w/listen.py" "$c.stop" >"$c.events" &
		for _ in $(seq 600); do
			grep -q ready "$c.events" && break
			sleep 0.1
		done
		mkdir -p "$c.m"
		eval "$3" || rc=$?
		sleep 1.5
		touch "$c.stop"
		wait
		exit "$rc"' - "$1" "$w" "$2"
}

setup() {
	truncate -s 16M "$w/u/img"
	printf 'label: dos\nstart=2048, size=8192, type=83\nstart=10240, size=8192, type=83\n' |
		sfdisk -q "$w/u/img" || fail "sfdisk"
	chown "$uid:$uid" "$w/u/img"
}

as_container() {
	setpriv --reuid="$uid" --regid="$uid" --clear-groups \
		unshare -Urmn bash "$w/inner.sh" "$w/u" "$@"
}

# A acts while B and the host listen; they stop a second after A is done.
run_containers() {
	local host b
	python3 "$w/listen.py" "$w/host.stop" >"$w/host.events" &
	host=$!
	as_container b >"$w/b.out" 2>&1 &
	b=$!
	for _ in $(seq 600); do
		grep -qs ready "$w/u/b.events" && grep -q ready "$w/host.events" && break
		sleep 0.1
	done
	as_container a >"$w/a.out" 2>&1 || { cat "$w/a.out"; fail "container a"; }
	sleep 1
	touch "$w/u/b.stop" "$w/host.stop"
	wait "$b"
	wait "$host"
	cat "$w/u/a.nodes" "$w/u/a.events"
}

# What A heard: its own disk and partitions by its names, DEVPATH under the
# view, the nodes' device numbers, in order; nothing else.
a_hears_its_names() {
	local d0 p1 p2
	d0=$(awk '$1 == "loop0" { print $2 }' "$w/u/a.nodes")
	p1=$(awk '$1 == "loop0p1" { print $2 }' "$w/u/a.nodes")
	p2=$(awk '$1 == "loop0p2" { print $2 }' "$w/u/a.nodes")
	if [ -z "$d0" ] || [ -z "$p1" ] || [ -z "$p2" ]; then
		fail "nodes: $(cat "$w/u/a.nodes")"
		return
	fi
	expect_eq "ready
add /block/loop0 loop0 $d0
add /block/loop0/loop0p1 loop0p1 $p1
add /block/loop0/loop0p2 loop0p2 $p2
remove /block/loop0/loop0p1 loop0p1 $p1
remove /block/loop0/loop0p2 loop0p2 $p2
remove /block/loop0 loop0 $d0" "$(cat "$w/u/a.events")" "A's uevents"
}

b_hears_nothing() {
	expect_eq ready "$(cat "$w/u/b.events")" "B's uevents"
}

# Container C listens in its network namespace while a user namespace
# made inside it, with no capability over C's, mounts an instance from C's
# network namespace and makes and removes a device: C hears nothing.
nested_hears_nothing() {
	local c=$w/u/c
	# shellcheck disable=SC2016
	in_listening_ns "$c" 'unshare -Urm sh -c "mount -t loop loop $c.m &&
		python3 $w/churn.py $c.m/loop-control 1 >/dev/null"' || fail "container c"
	expect_eq ready "$(cat "$c.events")" "C's uevents"
}

# The host's namespace hears the kernel's events, by the host's names,
# and none of A's.
host_hears_host_names() {
	echo "DIAG: $(grep -c . "$w/host.events") lines"
	grep -q ' loopfs[0-9]*-0p1 ' "$w/host.events" ||
		fail "no host-named event for A's partition: $(cat "$w/host.events")"
	! grep -q ' /block/' "$w/host.events" ||
		fail "a container's event in the host's namespace: $(grep ' /block/' "$w/host.events")"
}

# A tenant that adds and removes its devices as fast as it can: its
# namespace's listeners hear at most container_uevent_rate of its events a
# second (here 4, which a guest outruns; 256 by default), whatever it
# makes; the rest are dropped.
rate_bounded() {
	local c=$w/u/r param=/sys/module/loopfs/parameters/container_uevent_rate
	local old heard made secs bound rc=0
	old=$(cat "$param") || fail "no $param"
	echo 4 >"$param"
	# shellcheck disable=SC2016
	in_listening_ns "$c" 'mount -t loop loop "$c.m" &&
		python3 "$w/churn.py" "$c.m/loop-control" 40 >"$c.secs"' || rc=$?
	echo "$old" >"$param"
	[ "$rc" -eq 0 ] || fail "container r"
	made=80
	heard=$(grep -c '^\(add\|remove\) ' "$c.events")
	secs=$(cat "$c.secs")
	# The churn and the 1.5 s after it meet at most this many windows
	# of a second, each of at most 4 events.
	bound=$((4 * (${secs%.*} + 4)))
	echo "DIAG: $made events made in $secs s, $heard heard (at most $bound)"
	[ "$heard" -ge 1 ] || fail "no event heard"
	[ "$heard" -le "$bound" ] || fail "$heard events heard in $secs s at 4 a second"
	[ "$heard" -lt "$made" ] || fail "every event heard"
}

tap_plan 7
run_test "set-up: a partitioned image of the unprivileged uid" setup
run_test "container A binds it with a partition scan and removes it while B and the host listen" run_containers
run_test "A hears add and remove of loop0, loop0p1, loop0p2 by its names, DEVPATH under /block, the nodes' numbers" a_hears_its_names
run_test "B, another user and network namespace, hears none of A's events" b_hears_nothing
run_test "a user namespace made inside C, without rights over C's network namespace, sends C none of its events" nested_hears_nothing
run_test "the host's network namespace hears them by host names only" host_hears_host_names
run_test "a tenant's add/remove churn reaches its namespace at container_uevent_rate a second at most, the rest dropped" rate_bounded
rm -rf "$w"
tap_done
