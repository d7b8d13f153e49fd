#!/bin/bash
# The Debian packages as a user meets them.  Packages are installed and
# removed on this machine; the module is only ever loaded in guests.
#   1. Build loopfs-dkms and loopfs-tools from the files git tracks, at the
#      tree's version and at a later one (same sources, a version bumped in
#      dkms.conf and debian/changelog).
#   2. apt-get install both: DKMS has built and installed loopfs.ko for
#      every kernel whose headers are installed (6.1, 6.12 and the 6.12 RT
#      flavour here), each with that kernel's vermagic; the tools, man pages
#      and udev rule are in place.
#   3. A guest of each supported kernel loads the installed module through
#      `mount -t loop` alone and runs the article's recipe and loopfs-run's
#      quick start (installed-guest.sh).
#   4. apt-get install the later version over it: rebuilt for every kernel,
#      nothing of the first version left.
#   5. A kernel whose headers arrive after the package: its build is
#      removed, then DKMS's hook for a newly installed headers package
#      (/etc/kernel/header_postinst.d/dkms, which runs dkms autoinstall)
#      must build and install it again.
#   6. apt-get purge both: no file of ours under /lib/modules,
#      /var/lib/dkms, /usr or /etc, no package state left.
# Whatever this installs is purged on exit, also when a test fails.  On a
# machine that already has loopfs installed (package, DKMS or source tree)
# every test is skipped rather than replace what the user installed.
# Must not run beside guests of this machine: it changes /lib/modules,
# which they share.  Prints TAP.
set -uo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
. "$src/tests/harness/tap.sh"
. "$src/tests/deb/lib.sh"
ver=$(make -s --no-print-directory -C "$src" version 2>/dev/null)
ver2=$ver.1
arch=$(dpkg --print-architecture)
mapfile -t guest_kvers < <("$src/tests/harness/kvers.sh" guest)
export DEBIAN_FRONTEND=noninteractive

# Kernels DKMS is expected to build for: every one with headers.
kernels=()
for b in /lib/modules/*/build; do
	[ -e "$b/include" ] || continue
	b=${b%/build}
	kernels+=("${b##*/}")
done

nk=${#kernels[@]} ng=${#guest_kvers[@]}
planned=$((2 + 1 + nk + 4 + 7 * ng + 2 + nk + 2 + 1 + 4))
tap_plan "$planned"

work=$(mktemp -d)
log=$work/log

# Already installed: say so on every planned line and stop.
installed_before=$( (dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' \
	loopfs-dkms loopfs-tools 2>/dev/null | awk '$2 != "un"'
	dkms status -m loopfs 2>/dev/null
	ls -d /usr/src/loopfs-* /var/lib/dkms/loopfs 2>/dev/null) | head -n 3)
if [ -n "$installed_before" ]; then
	echo "# this machine already has loopfs installed:"
	echo "$installed_before" | sed 's/^/#   /'
	for ((i = 1; i <= planned; i++)); do
		echo "ok $i - package install cycle # SKIP loopfs already installed here"
	done
	rm -rf "$work"
	exit 0
fi

cleanup() {
	local v
	apt-get purge -y loopfs-dkms loopfs-tools >/dev/null 2>&1
	for v in "$ver" "$ver2"; do
		dkms status -m loopfs -v "$v" 2>/dev/null | grep -q . &&
			dkms remove -m loopfs -v "$v" --all >/dev/null 2>&1
		rm -rf "/usr/src/loopfs-$v"
	done
	rm -rf /var/lib/dkms/loopfs "$work"
}
trap cleanup EXIT

# The packages' scripts see the machine booted into the first guest kernel,
# as a user's machine is; a build machine that runs some other kernel (no
# /lib/modules of its own) makes DKMS build for every kernel by itself,
# which would hide a package that relies on that.
mkdir "$work/bin"
printf '#!/bin/sh\n[ "$1" = -r ] && { echo %s; exit 0; }\nexec /usr/bin/uname "$@"\n' \
	"${guest_kvers[0]:-}" >"$work/bin/uname"
chmod +x "$work/bin/uname"
apt_get() { apt-get -o DPkg::Path="$work/bin:/usr/sbin:/usr/bin:/sbin:/bin" "$@"; }

# run CMD...: quietly; its output goes to $log for a failure to show.
run() { "$@" >"$log" 2>&1; }

# check DESCRIPTION CMD...: one test line from a command's status.
check() {
	local d=$1
	shift
	if run "$@"; then tap OK "$d"; else tap FAIL "$d" "$log"; fi
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

# module_of KVER: the module DKMS installed for KVER (none: empty)
module_of() { ls "/lib/modules/$1/updates/dkms"/loopfs.ko* 2>/dev/null | head -n 1; }

# module_ok KVER VERSION: DKMS installed loopfs.ko at VERSION for KVER,
# with KVER's vermagic
module_ok() {
	local ko vm mv
	ko=$(module_of "$1")
	vm=$([ -n "$ko" ] && modinfo -F vermagic "$ko" | awk '{ print $1 }')
	mv=$([ -n "$ko" ] && modinfo -F version "$ko")
	[ -n "$ko" ] && [ "$vm" = "$1" ] && [ "$mv" = "$2" ] && return 0
	echo "# $1: ${ko:-no module}, vermagic ${vm:-none}, version ${mv:-none}"
	return 1
}

# dkms_state: "VERSION KERNEL STATE" per line, as dkms status says it
dkms_state() {
	dkms status -m loopfs 2>/dev/null |
		sed -n 's|^loopfs/\([^,]*\), \([^,]*\), [^:]*: \(.*\)$|\1 \2 \3|p' | sort
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

# ours_under: files and directories named after loopfs in the places a
# purge must leave clean
ours_under() {
	find /lib/modules /var/lib/dkms /usr /etc -xdev -name '*loopfs*' 2>/dev/null | sort
}

before=$work/before
ours_under >"$before"

# 1. build
if run build_debs "$ver" "$work/v1"; then tap OK "make deb at $ver"; else tap FAIL "make deb at $ver" "$log"; fi
if run build_debs "$ver2" "$work/v2"; then tap OK "make deb at $ver2"; else tap FAIL "make deb at $ver2" "$log"; fi
debs1=("$work/v1/loopfs-$ver/.build/deb/loopfs-dkms_${ver}_all.deb"
	"$work/v1/loopfs-$ver/.build/deb/loopfs-tools_${ver}_$arch.deb")
debs2=("$work/v2/loopfs-$ver2/.build/deb/loopfs-dkms_${ver2}_all.deb"
	"$work/v2/loopfs-$ver2/.build/deb/loopfs-tools_${ver2}_$arch.deb")

# 2. install
check "apt-get install ./loopfs-dkms_${ver}_all.deb ./loopfs-tools_${ver}_$arch.deb" \
	apt_get install -y "${debs1[@]}"
for k in "${kernels[@]}"; do
	if module_ok "$k" "$ver"; then
		tap OK "DKMS installed loopfs.ko $ver for $k, vermagic $k"
	else
		tap FAIL "DKMS installed loopfs.ko $ver for $k, vermagic $k"
	fi
done
check "dkms status: loopfs $ver installed for every kernel with headers, nothing else" \
	dkms_installed_everywhere "$ver"
check "loopfs-run is on the PATH and runs" sh -c 'loopfs-run --help 2>&1 | grep -q loopfs-run'
check "the manual pages loopfs(5) and loopfs-run(1) are installed" \
	test -f /usr/share/man/man5/loopfs.5.gz -a -f /usr/share/man/man1/loopfs-run.1.gz
check "the udev rule and the modprobe.d file are in place" \
	test -f /usr/lib/udev/rules.d/59-loopfs.rules -a -f /etc/modprobe.d/loopfs.conf

# Every file the packages installed, for the purge to account for.
shipped=$work/shipped
{
	dpkg-query -L loopfs-dkms loopfs-tools 2>/dev/null
	for k in "${kernels[@]}"; do module_of "$k"; done
} | while read -r f; do [ -f "$f" ] && echo "$f"; done | sort -u >"$shipped"

# 3. guests with the installed module
for k in "${guest_kvers[@]}"; do
	GUEST_RUN_NAME=deb-$k "$src/tests/harness/run-guest.sh" --run "$k" \
		tests/deb/installed-guest.sh >"$log" 2>&1
	rc=$?
	out=$src/.build/results/deb-$k/out.log
	n=0
	while read -r line; do
		n=$((n + 1))
		case $line in
		"ok "*) tap OK "$k guest: ${line#*- }" ;;
		*) tap FAIL "$k guest: ${line#*- }" "$out" ;;
		esac
	done < <(grep -E '^(not )?ok ' "$out" 2>/dev/null)
	for ((; n < 6; n++)); do
		tap FAIL "$k guest: a result for each of its 6 tests" "$log"
	done
	if [ "$rc" -eq 0 ]; then
		tap OK "$k guest: exit status 0 and a clean kernel log"
	else
		tap FAIL "$k guest: exit status 0 and a clean kernel log (status $rc)" "$log"
	fi
done

# 4. upgrade
check "apt-get install the $ver2 packages over $ver" apt_get install -y "${debs2[@]}"
check "both packages are at $ver2" sh -c "[ \"\$(dpkg-query -W -f='\${Version} ' loopfs-dkms loopfs-tools)\" = '$ver2 $ver2 ' ]"
for k in "${kernels[@]}"; do
	if module_ok "$k" "$ver2"; then
		tap OK "rebuilt for $k: loopfs.ko $ver2, vermagic $k"
	else
		tap FAIL "rebuilt for $k: loopfs.ko $ver2, vermagic $k"
	fi
done
check "dkms status: only $ver2, installed for every kernel" dkms_installed_everywhere "$ver2"
check "the $ver source and DKMS tree are gone" \
	sh -c "! ls -d /usr/src/loopfs-$ver /var/lib/dkms/loopfs/$ver 2>&1"

# 5. a kernel's headers installed after the package
k=${kernels[0]:-none}
dkms remove -m loopfs -v "$ver2" -k "$k" >"$log" 2>&1
if [ -z "$(module_of "$k")" ] && run /etc/kernel/header_postinst.d/dkms "$k" &&
	module_ok "$k" "$ver2"; then
	tap OK "a build removed for $k comes back from DKMS's new-headers hook"
else
	tap FAIL "a build removed for $k comes back from DKMS's new-headers hook" "$log"
fi

# 6. purge
check "apt-get purge loopfs-dkms loopfs-tools" apt_get purge -y loopfs-dkms loopfs-tools
check "dpkg keeps no state of either package" \
	sh -c "! dpkg-query -W -f='\${Package} \${db:Status-Abbrev}\n' loopfs-dkms loopfs-tools 2>/dev/null | grep -v ' un'"
left=$(while read -r f; do [ -e "$f" ] && echo "$f"; done <"$shipped")
if [ -s "$shipped" ] && [ -z "$left" ]; then
	tap OK "none of the $(wc -l <"$shipped") files the packages and DKMS installed is left"
else
	echo "$left" | sed 's/^/# left: /'
	tap FAIL "none of the files the packages and DKMS installed is left"
fi
new=$(ours_under | comm -13 "$before" -)
if [ -z "$new" ]; then
	tap OK "nothing named loopfs is new under /lib/modules, /var/lib/dkms, /usr, /etc"
else
	echo "$new" | sed 's/^/# new: /'
	tap FAIL "nothing named loopfs is new under /lib/modules, /var/lib/dkms, /usr, /etc"
fi
[ "$tap_failed" -eq 0 ]
