#!/bin/bash
# What a tenant can touch on the host: the per-namespace limits table, the
# sysfs files a container's root owns and those it alone may read,
# partition scanning and what its partitions may cost, the max= cap and the
# opener check of /proc/sys/user/max_loop_devices (also with a cgroup sysctl
# program attached). Attacks that start in a container run as the
# unprivileged uid inside `unshare -Urm`.
set -uo pipefail
. "${LOOPFS_SRC:-$(dirname "$0")/../..}/tests/lib/suite.sh"
in_private_mount_ns "$@"

uid=${LOOPFS_UNPRIV_UID:-1000}
knob=/proc/sys/user/max_loop_devices
param=/sys/module/loopfs/parameters/container_partscan
scan_max=/sys/module/loopfs/parameters/container_partscan_devices
w=$(mktemp -d /tmp/loopfs-sec-host.XXXXXX)
chmod 0755 "$w"
mkdir "$w/u" && chown "$uid:$uid" "$w/u"
cp "$LOOPFS_BUILD/tests/security/host-tool" "$w/host-tool"
chmod 0755 "$w/host-tool"
tool=$w/host-tool

cleanup() {
	release_holder
	[ -w "$param" ] && echo 1 >"$param"
	umount -l "$w/host" 2>/dev/null
	umount -l "$w/cg" 2>/dev/null
	rm -rf "$w"
}
trap cleanup EXIT

# Run a bash script as root of a fresh user namespace of the unprivileged
# uid (its own mount namespace too); $w and $tool are in its environment,
# and $detach, the command that clears a loop device named by path.
detach=$(loop_detach_cmd)
as_tenant() {
	setpriv --reuid="$uid" --regid="$uid" --clear-groups \
		env w="$w" tool="$tool" detach="$detach" \
		unshare -Urm bash -euo pipefail -c "$1"
}

# A tenant script started in the background writes its pid to $w/u/pid
# and then runs $await_go, which waits (30 s at most) for the host to create
# $w/u/go and fails the script if it never comes. clear_handshake removes
# both files before a tenant starts, so that neither side acts on what an
# earlier test left.
await_go='for i in $(seq 300); do
	[ -e "$w/u/go" ] && break
	sleep 0.1
done
[ -e "$w/u/go" ] || { echo "the host never said go"; exit 1; }'

clear_handshake() {
	rm -f "$w/u/pid" "$w/u/go"
}

# Wait (30 s at most) for a tenant script started in the background to
# write its pid to $w/u/pid; else show its output ($1) and fail.
wait_for_tenant() {
	local i
	for i in $(seq 300); do
		[ -s "$w/u/pid" ] && return 0
		sleep 0.1
	done
	cat "$1"
	fail "no container"
}

# Kill the process a container script left holding its namespaces.
release_holder() {
	[ -s "$w/u/holder" ] && kill "$(cat "$w/u/holder")" 2>/dev/null
	rm -f "$w/u/holder"
}

# --- /proc/sys/user/max_loop_devices checks its opener ---

opener_not_writer() {
	local cur out
	cur=$(cat "$knob")
	out=$("$tool" opener-write "$uid" "$cur" || true)
	expect_eq EPERM "$out" "write by root through an fd uid $uid opened"
}

root_opener_writes() {
	local cur
	cur=$(cat "$knob")
	echo "$cur" >"$knob"
	expect_eq "$cur" "$(cat "$knob")" "value read back"
}

# Security agents attach BPF_CGROUP_SYSCTL programs; the kernel then calls
# the knob's handler for the program with a file position of its own. The
# knob still answers every reader and writer as its opener.
sysctl_under_bpf() {
	local g cur out i
	mkdir -p "$w/cg"
	mount -t cgroup2 cgroup2 "$w/cg" || fail "no cgroup2"
	g=$w/cg/loopfs-sysctl-$$
	mkdir "$g"
	expect_eq ok "$("$tool" sysctl-bpf "$g")" "program attached"
	cur=$(cat "$knob")
	cat >"$w/in-cgroup.sh" <<'EOF'
echo "read $(cat "$knob")"
echo 9 >"$knob"
echo "wrote $(cat "$knob")"
echo "$cur" >"$knob"
echo "opener $("$tool" opener-write "$uid" 9)"
echo "tenant $(setpriv --reuid="$uid" --regid="$uid" --clear-groups \
	unshare -Ur sh -c 'echo 5 >"$0" && cat "$0"' "$knob")"
echo "host $(cat "$knob")"
EOF
	# shellcheck disable=SC2016 # expanded by the inner shell
	out=$(sh -c 'echo $$ >"$0/cgroup.procs" &&
		exec env knob="$1" cur="$2" tool="$3" uid="$4" bash "$5"' \
		"$g" "$knob" "$cur" "$tool" "$uid" "$w/in-cgroup.sh" 2>&1) || true
	for ((i = 0; i < 50; i++)); do
		rmdir "$g" 2>/dev/null && break
		sleep 0.1
	done
	umount "$w/cg"
	expect_eq "read $cur
wrote 9
opener EPERM
tenant 5
host $cur" "$out" "the knob under a BPF_CGROUP_SYSCTL program"
}

# --- max= is a cap the tenant cannot lift ---

tenant_cannot_raise_max() {
	local out
	out=$(as_tenant '
		mkdir -p "$w/u/m"
		mount -t loop -o max=2 loop "$w/u/m"
		echo "lower $("$tool" remount "$w/u/m" max=1)"
		echo "back $("$tool" remount "$w/u/m" max=2)"
		echo "raise $("$tool" remount "$w/u/m" max=3 || true)"
		grep -c " $w/u/m .*max=2" /proc/self/mountinfo || true
		"$tool" ctl-add "$w/u/m/loop-control"
		"$tool" ctl-add "$w/u/m/loop-control"
		"$tool" ctl-add "$w/u/m/loop-control" || true
	')
	expect_eq "lower ok
back ok
raise EPERM
1
0
1
ENOSPC" "$out" "tenant remounts"
}

host_raises_max() {
	local pid out
	clear_handshake
	as_tenant '
		mkdir -p "$w/u/m2"
		mount -t loop -o max=1 loop "$w/u/m2"
		echo $$ >"$w/u/pid"
		'"$await_go"'
		"$tool" ctl-add "$w/u/m2/loop-control"
		"$tool" ctl-add "$w/u/m2/loop-control"
		"$tool" ctl-add "$w/u/m2/loop-control"
		"$tool" ctl-add "$w/u/m2/loop-control" || true
	' >"$w/raise.out" 2>&1 &
	wait_for_tenant "$w/raise.out"
	pid=$(cat "$w/u/pid")
	out=$(nsenter -t "$pid" -m "$tool" remount "$w/u/m2" max=3 || true)
	touch "$w/u/go"
	wait || { cat "$w/raise.out"; fail "container script failed"; }
	expect_eq ok "$out" "host root's remount,max=3"
	expect_eq "0
1
2
ENOSPC" "$(cat "$w/raise.out")" "devices after the raise"
}

# --- sysfs: the tenant owns its disk's directory, not uevent or power/ ---

tenant_sysfs_writes() {
	local out
	out=$(as_tenant '
		mkdir -p "$w/u/m3"
		mount -t loop loop "$w/u/m3"
		"$tool" ctl-add "$w/u/m3/loop-control" >/dev/null
		d=/sys/dev/block/$(stat -c "%t:%T" "$w/u/m3/loop0" |
			{ IFS=: read -r ma mi; echo $((16#$ma)):$((16#$mi)); })
		echo "dir $(stat -L -c %u "$d")"
		for f in uevent power/control power/autosuspend_delay_ms \
			 power/runtime_status events_poll_msecs; do
			[ ! -e "$d/$f" ] || [ ! -w "$d/$f" ] || echo "writable $f"
		done
		if (echo change >"$d/uevent") 2>/dev/null; then
			echo "wrote uevent"
		fi
		echo "$d" >"$w/u/sysdir"
		# Keep the instance, and so the disk, for the next test.
		sleep 120 >/dev/null 2>&1 &
		echo $! >"$w/u/holder"
	')
	expect_eq "dir 0" "$out" "tenant's view and writes"
}

host_uid_sysfs_writes() {
	local d f out=
	d=$(cat "$w/u/sysdir")
	[ -e "$d/uevent" ] || fail "the container's disk is gone"
	for f in uevent power/control; do
		if setpriv --reuid="$uid" --regid="$uid" --clear-groups \
			sh -c "echo change >'$d/$f'" 2>/dev/null; then
			out="$out wrote $f"
		fi
	done
	release_holder
	expect_eq "" "$out" "uid $uid writes"
}

# --- where a device's data lives is its owner's business ---

backing_private() {
	local d out other show want
	mkdir -m 0700 "$w/u/private"
	chown "$uid:$uid" "$w/u/private"
	# util-linux before 2.37 lists no loopfs device by path: busybox's
	# losetup shows the backing file and offset from LOOP_GET_STATUS64.
	show="losetup -l -n -O BACK-FILE,OFFSET,SIZELIMIT"
	want="$w/u/private/customer-db.img 4096 1048576"
	if ! ul_takes_loopfs_paths; then
		show="busybox losetup"
		want="/dev/loop0: 4096 $w/u/private/customer-db.img"
	fi
	out=$(as_tenant '
		mkdir -p "$w/u/m9"
		mount -t loop loop "$w/u/m9"
		"$tool" ctl-add "$w/u/m9/loop-control" >/dev/null
		truncate -s 4M "$w/u/private/customer-db.img"
		losetup -o 4096 --sizelimit 1048576 "$w/u/m9/loop0" \
			"$w/u/private/customer-db.img"
		echo "/sys/dev/block/$(stat -c "%t:%T" "$w/u/m9/loop0" |
			{ IFS=: read -r ma mi; echo $((16#$ma)):$((16#$mi)); })" \
			>"$w/u/sysdir9"
		# The container names its device as a container manager links it.
		unshare -m sh -c "mount -t tmpfs tmpfs /dev &&
			ln -s $w/u/m9/loop0 /dev/loop0 &&
			'"$show"' /dev/loop0" | xargs
		sleep 120 >/dev/null 2>&1 &
		echo $! >"$w/u/holder"
	')
	expect_eq "$want" "$out" "$show in the container"
	d=$(cat "$w/u/sysdir9")/loop
	# shellcheck disable=SC2016 # expanded by the other user's shell
	other=$(setpriv --reuid=$((uid + 1)) --regid=$((uid + 1)) --clear-groups \
		sh -c 'for f in backing_file offset sizelimit autoclear; do
			cat "$0/$f" 2>/dev/null || echo "$f refused"; done' "$d")
	out="$(cat "$d/backing_file") $(cat "$d/offset") $(cat "$d/sizelimit")"
	release_holder
	expect_eq "backing_file refused
offset refused
sizelimit refused
0" "$other" "another host user reads loop/"
	expect_eq "$w/u/private/customer-db.img 4096 1048576" "$out" "host root reads loop/"
}

# --- partition scanning can be refused to containers ---

make_image() {
	truncate -s 8M "$w/u/img"
	printf 'label: gpt\n,2M\n,2M\n' | sfdisk -q "$w/u/img"
	chown "$uid:$uid" "$w/u/img"
}

partscan_on_by_default() {
	local out
	make_image
	expect_eq Y "$(cat "$param")" "default of container_partscan"
	out=$(as_tenant '
		mkdir -p "$w/u/m4"
		mount -t loop loop "$w/u/m4"
		"$tool" ctl-add "$w/u/m4/loop-control" >/dev/null
		losetup -P "$w/u/m4/loop0" "$w/u/img"
		ls "$w/u/m4" | grep -c "^loop0p[12]$"
		$detach "$w/u/m4/loop0"
	')
	expect_eq 2 "$out" "partition nodes"
}

partscan_refused_configure() {
	local out
	echo 0 >"$param"
	out=$(as_tenant '
		mkdir -p "$w/u/m5"
		mount -t loop loop "$w/u/m5"
		"$tool" ctl-add "$w/u/m5/loop-control" >/dev/null
		if losetup -P "$w/u/m5/loop0" "$w/u/img" 2>"$w/u/err"; then
			echo configured
		fi
		grep -c "Operation not permitted" "$w/u/err" || true
		"$tool" flags "$w/u/m5/loop0" || true
		ls "$w/u/m5" | grep -c "^loop0p" || true
	')
	expect_eq "1
ENXIO
0" "$out" "losetup -P with container_partscan=0"
}

partscan_refused_set_status() {
	local out
	echo 0 >"$param"
	out=$(as_tenant '
		mkdir -p "$w/u/m6"
		mount -t loop loop "$w/u/m6"
		"$tool" ctl-add "$w/u/m6/loop-control" >/dev/null
		losetup "$w/u/m6/loop0" "$w/u/img"
		"$tool" set-partscan "$w/u/m6/loop0" || true
		"$tool" flags "$w/u/m6/loop0"
		ls "$w/u/m6" | grep -c "^loop0p" || true
		cmp -n 4096 "$w/u/img" "$w/u/m6/loop0" && echo data
		$detach "$w/u/m6/loop0"
	')
	expect_eq "EPERM
0
0
data" "$out" "LOOP_SET_STATUS64 adding PARTSCAN with container_partscan=0"
}

partscan_host_instance() {
	echo 0 >"$param"
	mkdir "$w/host"
	mount -t loop loop "$w/host"
	"$tool" ctl-add "$w/host/loop-control" >/dev/null
	losetup -P "$w/host/loop0" "$w/u/img"
	expect_eq 2 "$(ls "$w/host" | grep -c '^loop0p[12]$')" "host partition nodes"
	loop_detach "$w/host/loop0"
	echo 1 >"$param"
	expect_eq Y "$(cat "$param")" "container_partscan back on"
}

# --- what a host user's containers' partitions may cost ---

# mem_kib: the kernel's slab and per-CPU memory, in KiB
mem_kib() {
	awk '$1 == "Slab:" || $1 == "Percpu:" { n += $2 } END { print n }' /proc/meminfo
}

# ext_minors: block devices on the extended major (host-wide minors)
ext_minors() {
	cat /sys/class/block/*/dev | awk -F: '$1 == 259 { n++ } END { print n + 0 }'
}

partscan_devices_bounded() {
	local i out max m0 m1 e0 e1
	truncate -s 40M "$w/u/img254"
	{ echo 'label: gpt'; echo 'table-length: 254'; echo 'grain: 512'
	  for i in $(seq 254); do echo ',64'; done; } | sfdisk -q "$w/u/img254"
	chown "$uid:$uid" "$w/u/img254"
	m0=$(mem_kib) e0=$(ext_minors)
	clear_handshake
	# Eight devices scan (the default limit), the ninth asks too.
	as_tenant '
		mkdir -p "$w/u/m8"
		mount -t loop loop "$w/u/m8"
		for i in $(seq 0 8); do
			"$tool" ctl-add "$w/u/m8/loop-control" >/dev/null
		done
		for i in $(seq 0 7); do
			losetup -r -P "$w/u/m8/loop$i" "$w/u/img254"
		done
		echo "nodes $(ls "$w/u/m8" | grep -c "^loop[0-9]*p")"
		echo $$ >"$w/u/pid"
		'"$await_go"'
		if losetup -r -P "$w/u/m8/loop8" "$w/u/img254" 2>"$w/u/err"; then
			echo "a ninth scans"
			$detach "$w/u/m8/loop8"
		else
			echo "refused: $(grep -o "No space left on device" "$w/u/err")"
		fi
		losetup -r "$w/u/m8/loop8" "$w/u/img254" && echo "binds without -P"
		$detach "$w/u/m8/loop8"
		$detach "$w/u/m8/loop0"
		losetup -r -P "$w/u/m8/loop8" "$w/u/img254" && echo "scans after a clear"
		for i in $(seq 1 8); do $detach "$w/u/m8/loop$i"; done
	' >"$w/scan.out" 2>&1 &
	wait_for_tenant "$w/scan.out"
	m1=$(mem_kib) e1=$(ext_minors)
	touch "$w/u/go"
	wait || true
	out=$(cat "$w/scan.out")
	echo "DIAG: 8 devices x 254 partitions: +$((m1 - m0)) KiB slab and per-CPU" \
		"($(((m1 - m0) * 1024 / (8 * 254))) bytes a partition, $(nproc) CPUs)," \
		"+$((e1 - e0)) extended minors"
	expect_eq "nodes $((8 * 254))
refused: No space left on device
binds without -P
scans after a clear" "$out" "scanning devices of one host user"
	max=$(cat "$scan_max" 2>/dev/null) || true
	expect_eq 8 "$max" "default of container_partscan_devices"
}

# --- a kept partition node opens nothing once its partition is gone ---

stale_partition_node() {
	local i pid old new
	truncate -s 24M "$w/u/img18"
	{ echo 'label: gpt'; for i in $(seq 18); do echo ',1M'; done; } |
		sfdisk -q "$w/u/img18"
	chown "$uid:$uid" "$w/u/img18"
	cp "$w/u/img18" "$w/hostimg"
	clear_handshake
	as_tenant '
		mkdir -p "$w/u/m7"
		mount -t loop loop "$w/u/m7"
		"$tool" ctl-add "$w/u/m7/loop-control" >/dev/null
		losetup -P "$w/u/m7/loop0" "$w/u/img18"
		echo "nodes $(ls "$w/u/m7" | grep -c "^loop0p")"
		touch "$w/u/keep"
		mount --bind "$w/u/m7/loop0p17" "$w/u/keep"
		stat -c %t:%T "$w/u/keep" >"$w/u/olddev"
		$detach "$w/u/m7/loop0"
		echo $$ >"$w/u/pid"
		'"$await_go"'
		if head -c 64 "$w/u/keep" >"$w/u/stolen" 2>"$w/u/err"; then
			echo "opened: $(tr -d "\0" <"$w/u/stolen")"
		else
			echo refused
			cat "$w/u/err"
		fi
	' >"$w/stale.out" 2>&1 &
	wait_for_tenant "$w/stale.out"
	mkdir -p "$w/host2"
	mount -t loop loop "$w/host2"
	"$tool" ctl-add "$w/host2/loop-control" >/dev/null
	losetup -P "$w/host2/loop0" "$w/hostimg"
	ls "$w/host2" >/dev/null
	printf 'HOSTSECRET' | dd of="$w/host2/loop0p17" conv=fsync status=none
	old=$(cat "$w/u/olddev")
	new=$(stat -c %t:%T "$w/host2/loop0p17")
	touch "$w/u/go"
	wait || true
	cat "$w/stale.out"
	loop_detach "$w/host2/loop0"
	umount "$w/host2"
	grep -qx "nodes 18" "$w/stale.out" || fail "partition nodes missing"
	# Only a reused dev_t shows the attack; the allocator gives the lowest.
	expect_eq "$old" "$new" "dev_t of the host's partition 17"
	grep -qx refused "$w/stale.out" || fail "the kept node opened"
	grep -q "No such device or address" "$w/stale.out" || fail "errno"
}

# --- the per-namespace limits table ---

ns_fill() {
	"$tool" ns-fill "$uid" 1100 7 $((uid + 1)) >"$w/fill.out" 2>&1 || true
	cat "$w/fill.out"
	grep -qx "filled 1100 of 1100" "$w/fill.out"
}

ns_fill_other_user() {
	cat "$w/fill.out"
	# Reading the knob drops the entries of the namespaces now gone.
	cat "$knob" >/dev/null
	grep -qx "other ok" "$w/fill.out"
}

ns_entries_die() {
	local out
	out=$(as_tenant '
		echo 5 >/proc/sys/user/max_user_namespaces
		for i in $(seq 20); do
			if ! unshare -Ur sh -c \
				"echo 9 >/proc/sys/user/max_loop_devices"; then
				echo "namespace $i failed"
				exit 0
			fi
		done
		echo 20
	')
	expect_eq 20 "$out" "namespaces that set a limit in turn"
}

tap_plan 17
run_test "max_loop_devices opened by uid $uid and written by root is refused (EPERM)" opener_not_writer
run_test "max_loop_devices opened and written by root still sets the value" root_opener_writes
run_test "with a BPF_CGROUP_SYSCTL program attached, max_loop_devices reads, writes and refuses as without" sysctl_under_bpf
run_test "container root lowers max= but cannot raise it above the mount's value (EPERM)" tenant_cannot_raise_max
run_test "host root (CAP_SYS_ADMIN over the parent namespace) raises a container's max=" host_raises_max
run_test "container root cannot write its disk's uevent, power/ or events_poll_msecs" tenant_sysfs_writes
run_test "the host uid a container maps to cannot write the disk's uevent or power/" host_uid_sysfs_writes
run_test "another host user cannot read a container's backing file path, offset or sizelimit; owner and root can" backing_private
run_test "container_partscan=1 (default): losetup -P in a container makes partition nodes" partscan_on_by_default
run_test "container_partscan=0: losetup -P in a container fails with EPERM, device stays unbound" partscan_refused_configure
run_test "container_partscan=0: LOOP_SET_STATUS64 adding PARTSCAN fails with EPERM, nothing changes" partscan_refused_set_status
run_test "container_partscan=0: the host's own instance still scans partitions" partscan_host_instance
run_test "one host user's containers scan partitions on at most container_partscan_devices devices (ENOSPC)" partscan_devices_bounded
run_test "a partition 17 node kept by a bind mount cannot open the host's partition that reuses its dev_t (ENXIO)" stale_partition_node
run_test "a dead namespace's limit entry goes: 20 namespaces set one in turn under max_user_namespaces=5" ns_entries_die
run_test "one uid holds 1100 user namespaces that each set max_loop_devices" ns_fill
run_test "meanwhile another uid's namespace sets and reads back its own max_loop_devices" ns_fill_other_user
tap_done
