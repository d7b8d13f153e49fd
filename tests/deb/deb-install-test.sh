#!/bin/bash
# The Debian packages as a user of each supported release meets them.
# Packages are installed and removed on this machine (bookworm) and in each
# release's root (tests/harness/releases.sh), with that release's apt and
# dkms; the module is only ever loaded in guests. An older release's root
# gets loopfs-dkms alone (dkms_cycle).
#   1. Build loopfs-dkms, loopfs-tools and loopfs-nri once, from the files git
#      tracks, at the tree's version and at a later one (same sources, a
#      version bumped in dkms.conf and debian/changelog).
# Then, for bookworm and for each release root, two releases at a time
# (KERNELS, as for make check, chooses them by their guest kernels):
#   2. apt-get install all three: DKMS has built and installed loopfs.ko
#      for every kernel whose headers are installed (bookworm: 6.1 and the
#      6.12 backport; a root: its kernel), each with that kernel's
#      vermagic; the tools, man pages, udev rule and NRI plugin are in
#      place. The RT
#      flavours' headers are set aside until step 5.
#   3. A guest of the release's kernel, on the release's userland, loads
#      the installed module through `mount -t loop` alone and runs the
#      article's recipe and loopfs-run's quick start, and containerd 2
#      (sid) starts the installed NRI plugin (installed-guest.sh).
#   4. apt-get install the later version over it: rebuilt for every kernel,
#      nothing of the first version left.
#   5. A kernel whose headers arrive after the package (the first RT
#      flavour's, set aside until now): DKMS's hook for a newly installed
#      headers package (/etc/kernel/header_postinst.d/dkms, which runs
#      dkms autoinstall) must build and install the module for it.
#   6. apt-get purge all three: no file of ours under /lib/modules,
#      /var/lib/dkms, /usr or /etc, no package state left.
# Whatever this installs is purged on exit, also when a test fails.  On a
# machine that already has loopfs installed (package, DKMS or source tree)
# every test of its own cycle is skipped rather than replace what the user
# installed; a root is the harness's own, and what an interrupted run left
# there is purged first.  Must not run beside guests of this machine: it changes
# /lib/modules of the host and of the roots, which they share.  Prints TAP.
set -uo pipefail
# A mount namespace of its own, for the headers it sets aside (below).
if [ -z "${LOOPFS_DEB_NS:-}" ]; then
	LOOPFS_DEB_NS=1 exec unshare -m --propagation private "$0" "$@"
fi

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
. "$src/tests/harness/tap.sh"
. "$src/tests/harness/releases.sh"
. "$src/tests/harness/gate.sh"
. "$here/lib.sh"
ver=$(make -s --no-print-directory -C "$src" version 2>/dev/null)
ver2=$ver.1
arch=$(dpkg --print-architecture)
mapfile -t guest_kvers < <("$src/tests/harness/kvers.sh" guest)
export DEBIAN_FRONTEND=noninteractive

# The releases, each with the root its packages go to ("" for this
# machine) and its guest kernel; KERNELS (as for make check) chooses
# releases by their guest kernels.
# On a release older than this machine's, loopfs-tools built here needs a
# newer C library than it has: there only loopfs-dkms, which is the same
# source on every release, goes through the cycle with the release's dkms
# (dkms_cycle), and the tools are built from source (README).
releases=() rootdirs=() rel_guests=()
host_guest=$(printf '%s\n' "${guest_kvers[@]}" | grep -m1 '^6\.1\.' || true)
if selected "$host_guest"; then
	releases+=(bookworm) rootdirs+=("") rel_guests+=("$host_guest")
fi
for r in "${root_releases[@]}"; do
	release_ready "$r" && selected "$(release_kver "$r")" || continue
	releases+=("$r")
	rootdirs+=("$(release_root "$r")")
	rel_guests+=("$(release_kver "$r")")
done

# headers_of ROOT BUILD: the directory ROOT's link BUILD (its
# lib/modules/KVER/build) names, as seen from here (a build link may be
# absolute: bullseye's are, and name ROOT's /usr/src)
headers_of() {
	local t=$2
	if [ -L "$2" ]; then
		t=$(readlink "$2")
		case $t in
		/*) t=$1$t ;;
		*) t=${2%/build}/$t ;;
		esac
	fi
	echo "$t"
}

# kernels_of ROOT: the kernels whose headers ROOT has, which DKMS builds for
kernels_of() {
	local b
	for b in "$1"/lib/modules/*/build; do
		[ -e "$(headers_of "$1" "$b")/include" ] || continue
		b=${b%/build}
		echo "${b##*/}"
	done
}

# The RT flavours' headers are set aside, an empty tmpfs over each in this
# test's own mount namespace (gone with it, whatever ends the test): they
# arrive after the package (step 5), which is how DKMS meets a flavour's
# new kernel. The -Werror build step compiles every flavour already.
declare -A set_aside=() # by root ("/" for this machine's): "KVER HEADERS" lines
for r in "${rootdirs[@]}"; do
	for b in "$r"/lib/modules/*-rt-*/build; do
		h=$(headers_of "$r" "$b")
		[ -d "$h/include" ] || continue
		mount -t tmpfs -o ro,size=4k tmpfs "$h" || continue
		b=${b%/build}
		set_aside[${r:-/}]+="${b##*/} $h
"
	done
done

# cycle_tests INDEX: how many test lines release INDEX's cycle prints
cycle_tests() {
	local nk
	nk=$(kernels_of "${rootdirs[$1]}" | wc -l)
	if release_builds_userland "${releases[$1]}"; then
		echo $((1 + nk + 1 + 1 + 4))
	else
		echo $((1 + nk + 5 + 8 + 2 + nk + 2 + 1 + 4))
	fi
}

planned=2
for i in "${!releases[@]}"; do
	planned=$((planned + $(cycle_tests "$i")))
done
tap_plan "$planned"

# Under the repository: in_root shows it to the roots at the same path.
mkdir -p "$src/.build"
work=$(mktemp -d "$src/.build/deb-install.XXXXXX")
log=$work/log

# Already installed here: say so on every line of this machine's cycle
# and leave it out; the roots are the harness's own.
installed_before=$( (dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' \
	loopfs-dkms loopfs-tools loopfs-nri 2>/dev/null | awk '$2 != "un"'
	dkms status -m loopfs 2>/dev/null
	ls -d /usr/src/loopfs-* /var/lib/dkms/loopfs 2>/dev/null) | head -n 3)
if [ -n "$installed_before" ] && [ "${releases[0]:-}" = bookworm ]; then
	echo "# this machine already has loopfs installed:"
	echo "$installed_before" | sed 's/^/#   /'
	for ((i = $(cycle_tests 0); i > 0; i--)); do
		tap_n=$((tap_n + 1))
		echo "ok $tap_n - bookworm: package install cycle # SKIP loopfs already installed here"
	done
	releases=("${releases[@]:1}") rootdirs=("${rootdirs[@]:1}") rel_guests=("${rel_guests[@]:1}")
fi
if [ ${#releases[@]} -eq 0 ]; then
	for ((i = tap_n; i < planned; i++)); do
		tap_n=$((tap_n + 1))
		echo "ok $tap_n - package install cycle # SKIP no release to install on"
	done
	rm -rf "$work"
	exit 0
fi

# The release being tested: its name, root ("" here), the prefix that
# runs a command there and its own scratch directory (releases are tested
# two at a time).
rel=bookworm root="" at=() rwork=$work

# purge_ours: remove every trace of both versions from the current release
purge_ours() {
	local v
	"${at[@]}" apt-get purge -y loopfs-dkms loopfs-tools loopfs-nri >/dev/null 2>&1
	for v in "$ver" "$ver2"; do
		"${at[@]}" dkms status -m loopfs -v "$v" 2>/dev/null | grep -q . &&
			"${at[@]}" dkms remove -m loopfs -v "$v" --all >/dev/null 2>&1
		rm -rf "$root/usr/src/loopfs-$v"
	done
	rm -rf "$root/var/lib/dkms/loopfs"
}

cleanup() {
	local i
	for i in "${!releases[@]}"; do
		use_release "$i"
		purge_ours
	done
	rm -rf "$work"
}
trap cleanup EXIT

# use_release INDEX: the commands below act on that release
use_release() {
	rel=${releases[$1]} root=${rootdirs[$1]} at=() rwork=$work/$rel
	[ -z "$root" ] || at=(in_root "$root")
	mkdir -p "$rwork/bin"
	log=$rwork/log
}

# The packages' scripts see the machine booted into the release's guest
# kernel, as a user's machine is; a build machine that runs some other
# kernel (no /lib/modules of its own) makes DKMS build for every kernel by
# itself, which would hide a package that relies on that.
fake_uname() {
	printf '#!/bin/sh\n[ "$1" = -r ] && { echo %s; exit 0; }\nexec /usr/bin/uname "$@"\n' \
		"$1" >"$rwork/bin/uname"
	chmod +x "$rwork/bin/uname"
}
apt_get() { "${at[@]}" apt-get -o DPkg::Path="$rwork/bin:/usr/sbin:/usr/bin:/sbin:/bin" "$@"; }

# run CMD...: quietly; its output goes to $log for a failure to show.
run() { "$@" >"$log" 2>&1; }

# check DESCRIPTION CMD...: one test line from a command's status.
check() {
	local d=$1
	shift
	if run "$@"; then tap OK "$rel: $d"; else tap FAIL "$rel: $d" "$log"; fi
}

# build_debs VERSION DIR: the packages at VERSION from the tracked files.
build_debs() {
	local tree=$2/loopfs-$1 top
	copy_tracked_tree "$src" "$tree"
	if [ "$1" != "$ver" ]; then
		sed -i "s/^PACKAGE_VERSION=.*/PACKAGE_VERSION=\"$1\"/" "$tree/dkms.conf"
		top=$(cat "$tree/debian/changelog")
		{
			echo "loopfs ($1) bookworm; urgency=medium"
			echo
			echo "  * A later version, for the upgrade test."
			echo
			echo " -- loopfs developers <loopfs@example.invalid>  $(date -R)"
			echo
			echo "$top"
		} >"$tree/debian/changelog"
	fi
	make -C "$tree" deb
}

# module_of KVER: the module DKMS installed for KVER, as the release names
# it (none: empty)
module_of() {
	local ko
	ko=$(ls "$root/lib/modules/$1/updates/dkms"/loopfs.ko* 2>/dev/null | head -n 1)
	[ -z "$ko" ] || echo "${ko#"$root"}"
}

# module_ok KVER VERSION: DKMS installed loopfs.ko at VERSION for KVER,
# with KVER's vermagic
module_ok() {
	local ko vm mv
	ko=$(module_of "$1")
	vm=$([ -n "$ko" ] && "${at[@]}" modinfo -F vermagic "$ko" | awk '{ print $1 }')
	mv=$([ -n "$ko" ] && "${at[@]}" modinfo -F version "$ko")
	[ -n "$ko" ] && [ "$vm" = "$1" ] && [ "$mv" = "$2" ] && return 0
	echo "# $1: ${ko:-no module}, vermagic ${vm:-none}, version ${mv:-none}"
	return 1
}

# dkms_state: "VERSION KERNEL STATE" per line, as dkms status says it
# ("loopfs/VERSION, KERNEL, ARCH: STATE"; before dkms 3, "loopfs, VERSION,")
dkms_state() {
	"${at[@]}" dkms status -m loopfs 2>/dev/null |
		sed -n 's|^loopfs[/,] *\([^,]*\), \([^,]*\), [^:]*: \(.*\)$|\1 \2 \3|p' | sort
}

# dkms_installed_everywhere VERSION: dkms lists VERSION installed for every
# kernel and nothing else
dkms_installed_everywhere() {
	local k
	dkms_state
	diff <(dkms_state) <(for k in "${kernels[@]}"; do
		echo "$1 $k installed"
	done | sort)
}

# packages_at VERSION: the three packages are installed at VERSION
packages_at() {
	[ "$("${at[@]}" dpkg-query -W -f='${Version} ' loopfs-dkms loopfs-tools loopfs-nri)" = "$1 $1 $1 " ]
}

no_package_state() {
	! "${at[@]}" dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' \
		loopfs-dkms loopfs-tools loopfs-nri 2>/dev/null | grep -v ' un'
}

# ours_under: files and directories named after loopfs in the places a
# purge must leave clean
ours_under() {
	find "$root"/lib/modules "$root"/var/lib/dkms "$root"/usr "$root"/etc \
		-xdev -name '*loopfs*' 2>/dev/null | sort
}

# 1. build, once, here: both versions at a time, each with its own log
build_debs "$ver" "$work/v1" >"$work/v1.log" 2>&1 &
b1=$!
build_debs "$ver2" "$work/v2" >"$work/v2.log" 2>&1 &
b2=$!
if wait "$b1"; then tap OK "make deb at $ver"; else tap FAIL "make deb at $ver" "$work/v1.log"; fi
if wait "$b2"; then tap OK "make deb at $ver2"; else tap FAIL "make deb at $ver2" "$work/v2.log"; fi
debs1=("$work/v1/loopfs-$ver/.build/deb/loopfs-dkms_${ver}_all.deb"
	"$work/v1/loopfs-$ver/.build/deb/loopfs-tools_${ver}_$arch.deb"
	"$work/v1/loopfs-$ver/.build/deb/loopfs-nri_${ver}_$arch.deb")
debs2=("$work/v2/loopfs-$ver2/.build/deb/loopfs-dkms_${ver2}_all.deb"
	"$work/v2/loopfs-$ver2/.build/deb/loopfs-tools_${ver2}_$arch.deb"
	"$work/v2/loopfs-$ver2/.build/deb/loopfs-nri_${ver2}_$arch.deb")

# shipped_files PACKAGE...: every file the PACKAGEs installed and the
# modules DKMS built, for the purge to account for
shipped_files() {
	local k f
	{
		"${at[@]}" dpkg-query -L "$@" 2>/dev/null
		for k in "${kernels[@]}"; do module_of "$k"; done
	} | while read -r f; do [ -f "$root$f" ] && echo "$root$f"; done | sort -u
}

# headers_hook_check VERSION: the headers of a kernel set aside at the
# start arrive; DKMS's hook for newly installed headers builds and installs
# VERSION for it
headers_hook_check() {
	local k h d
	read -r k h <<<"${set_aside[${root:-/}]:-}"
	d="a kernel whose headers arrive after the package (${k:-none set aside}) gets loopfs.ko $1 from DKMS's new-headers hook"
	if [ -n "$k" ] && umount "$h" && [ -z "$(module_of "$k")" ] &&
		run "${at[@]}" /etc/kernel/header_postinst.d/dkms "$k" &&
		module_ok "$k" "$1"; then
		tap OK "$rel: $d"
	else
		tap FAIL "$rel: $d" "$log"
	fi
}

# cycle INDEX: steps 2 to 6 on release INDEX
cycle() {
	local k g rc out n shipped before
	use_release "$1"
	shipped=$rwork/shipped before=$rwork/before
	g=${rel_guests[$1]}
	mapfile -t kernels < <(kernels_of "$root")
	fake_uname "$g"
	[ -z "$root" ] || purge_ours
	ours_under >"$before"

	# 2. install
	check "apt-get install ./loopfs-dkms_${ver}_all.deb ./loopfs-tools_${ver}_$arch.deb ./loopfs-nri_${ver}_$arch.deb" \
		apt_get install -y "${debs1[@]}"
	for k in "${kernels[@]}"; do
		check "DKMS installed loopfs.ko $ver for $k, vermagic $k" module_ok "$k" "$ver"
	done
	check "dkms status: loopfs $ver installed for every kernel with headers, nothing else" \
		dkms_installed_everywhere "$ver"
	check "loopfs-run is on the PATH and runs" \
		"${at[@]}" sh -c 'loopfs-run --help 2>&1 | grep -q loopfs-run'
	check "the manual pages loopfs(5) and loopfs-run(1) are installed" \
		test -f "$root/usr/share/man/man5/loopfs.5.gz" -a -f "$root/usr/share/man/man1/loopfs-run.1.gz"
	check "the udev rule and the modprobe.d file are in place" \
		test -f "$root/usr/lib/udev/rules.d/59-loopfs.rules" -a -f "$root/etc/modprobe.d/loopfs.conf"

	check "the NRI plugin is where containerd starts pre-installed plugins and runs" \
		"${at[@]}" sh -c '/opt/nri/plugins/50-loopfs -h 2>&1 | grep -q -- -hook'

	shipped_files loopfs-dkms loopfs-tools loopfs-nri >"$shipped"

	# 3. a guest of the release's kernel on the installed module
	GUEST_RUN_NAME=deb-$g "$src/tests/harness/run-guest.sh" --run "$g" \
		tests/deb/installed-guest.sh >"$log" 2>&1
	rc=$?
	out=$src/.build/results/deb-$g/out.log
	n=0
	while read -r line; do
		n=$((n + 1))
		case $line in
		"ok "*) tap OK "$rel: $g guest: ${line#*- }" ;;
		*) tap FAIL "$rel: $g guest: ${line#*- }" "$out" ;;
		esac
	done < <(grep -E '^(not )?ok ' "$out" 2>/dev/null | head -n 7)
	for ((; n < 7; n++)); do
		tap FAIL "$rel: $g guest: a result for each of its 7 tests" "$log"
	done
	if [ "$rc" -eq 0 ]; then
		tap OK "$rel: $g guest: exit status 0 and a clean kernel log"
	else
		tap FAIL "$rel: $g guest: exit status 0 and a clean kernel log (status $rc)" "$log"
	fi

	# 4. upgrade
	check "apt-get install the $ver2 packages over $ver" apt_get install -y "${debs2[@]}"
	check "the three packages are at $ver2" packages_at "$ver2"
	for k in "${kernels[@]}"; do
		check "rebuilt for $k: loopfs.ko $ver2, vermagic $k" module_ok "$k" "$ver2"
	done
	check "dkms status: only $ver2, installed for every kernel" dkms_installed_everywhere "$ver2"
	check "the $ver source and DKMS tree are gone" \
		sh -c "! ls -d $root/usr/src/loopfs-$ver $root/var/lib/dkms/loopfs/$ver 2>&1"

	# 5. a kernel's headers installed after the package
	headers_hook_check "$ver2"

	# 6. purge
	purge_checks "$shipped" "$before" loopfs-dkms loopfs-tools loopfs-nri
}

# purge_checks SHIPPED BEFORE PACKAGE...: apt-get purge PACKAGEs; nothing
# of them is left: no package state, none of the files listed in SHIPPED,
# nothing named loopfs that was not in BEFORE
purge_checks() {
	local shipped=$1 before=$2 left new
	shift 2
	check "apt-get purge $*" apt_get purge -y "$@"
	check "dpkg keeps no state of either package" no_package_state
	left=$(while read -r f; do [ -e "$f" ] && echo "$f"; done <"$shipped")
	if [ -s "$shipped" ] && [ -z "$left" ]; then
		tap OK "$rel: none of the $(wc -l <"$shipped") files the packages and DKMS installed is left"
	else
		echo "$left" | sed 's/^/# left: /'
		tap FAIL "$rel: none of the files the packages and DKMS installed is left"
	fi
	new=$(ours_under | comm -13 "$before" -)
	if [ -z "$new" ]; then
		tap OK "$rel: nothing named loopfs is new under /lib/modules, /var/lib/dkms, /usr, /etc"
	else
		echo "$new" | sed 's/^/# new: /'
		tap FAIL "$rel: nothing named loopfs is new under /lib/modules, /var/lib/dkms, /usr, /etc"
	fi
}

# dkms_cycle INDEX: on an older release, loopfs-dkms alone: installed
# with the release's apt and dkms (its package scripts run the release's
# DKMS), built for every kernel with headers, built again by the
# new-headers hook, purged without a trace.
dkms_cycle() {
	local k shipped before
	use_release "$1"
	shipped=$rwork/shipped before=$rwork/before
	mapfile -t kernels < <(kernels_of "$root")
	fake_uname "${rel_guests[$1]}"
	purge_ours
	ours_under >"$before"
	check "apt-get install ./loopfs-dkms_${ver}_all.deb (dkms $("${at[@]}" dpkg-query -W -f='${Version}' dkms))" \
		apt_get install -y "${debs1[0]}"
	for k in "${kernels[@]}"; do
		check "DKMS installed loopfs.ko $ver for $k, vermagic $k" module_ok "$k" "$ver"
	done
	check "dkms status: loopfs $ver installed for every kernel with headers, nothing else" \
		dkms_installed_everywhere "$ver"
	shipped_files loopfs-dkms >"$shipped"
	headers_hook_check "$ver"
	purge_checks "$shipped" "$before" loopfs-dkms
}

# The releases' cycles, two at a time: each has its own root (bookworm
# this machine's /), apt, DKMS tree and guest, and a DKMS build or a guest
# boot alone leaves a core idle much of the time (dkms polls its build,
# depmod runs on one core). Each prints its numbered lines, from the
# number its release's place gives it, to a file of its own, shown in
# release order when all have ended. The full cycles start first, the
# short loopfs-dkms-only ones last, to fill the slot a full one leaves.
declare -A cycling=() first=() count=()
full=() short=()
for i in "${!releases[@]}"; do
	# Counted now: the set-aside headers that arrive in step 5 add a
	# kernel to what kernels_of lists afterwards.
	count[$i]=$(cycle_tests "$i")
	first[$i]=$tap_n
	tap_n=$((tap_n + count[$i]))
	if release_builds_userland "${releases[$i]}"; then
		short+=("$i")
	else
		full+=("$i")
	fi
done
for i in "${full[@]}" "${short[@]}"; do
	while [ ${#cycling[@]} -ge 2 ]; do
		wait -n -p ended "${!cycling[@]}" || true
		unset "cycling[$ended]"
	done
	(
		tap_failed=0 tap_n=${first[$i]}
		if release_builds_userland "${releases[$i]}"; then
			dkms_cycle "$i"
		else
			cycle "$i"
		fi
		echo "$tap_failed" >"$work/failed.$i"
	) >"$work/tap.$i" 2>&1 &
	cycling[$!]=$i
done
wait
for i in "${!releases[@]}"; do
	cat "$work/tap.$i"
	n=$(grep -cE '^(not )?ok ' "$work/tap.$i")
	if [ "$n" -ne "${count[$i]}" ] || [ "$(cat "$work/failed.$i" 2>/dev/null)" != 0 ]; then
		tap_failed=$((tap_failed + 1))
	fi
done
[ "$tap_failed" -eq 0 ]
