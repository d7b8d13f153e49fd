#!/bin/bash
# The Debian packages, built and inspected on the host; nothing is installed.
# `make deb` runs in a copy of the files git tracks (so a file the build
# needs but git does not track fails here, and the build's outputs land in
# a temporary directory, not beside the repository); then `dpkg -c` checks
# that each package holds what it should and nothing from .build/, tests/,
# .git or kbuild output, and lintian --pedantic -I must print nothing.
# Needs dpkg-dev, debhelper, dh-dkms, libseccomp-dev and lintian, and the
# newest release's root for loopfs-nri (make deps). Prints TAP.
set -uo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
. "$src/tests/harness/tap.sh"
. "$src/tests/deb/lib.sh"
ver=$(make -s --no-print-directory -C "$src" version 2>/dev/null)
arch=$(dpkg --print-architecture)

# What loopfs-dkms ships besides the module source: the source is every
# tracked top-level Kbuild, compat.mk, *.c and *.h, plus Makefile and
# dkms.conf.
dkms_extra=(etc/modprobe.d/loopfs.conf usr/lib/udev/rules.d/59-loopfs.rules
	usr/share/doc/loopfs-dkms/copyright)
mapfile -t module_srcs < <(cd "$src" && git ls-files -- Kbuild compat.mk '*.c' '*.h' | grep -v /)
tools_files=(usr/bin/loopfs-run usr/share/man/man1/loopfs-run.1.gz
	usr/share/man/man5/loopfs.5.gz usr/share/doc/loopfs-tools/README.md.gz
	usr/share/doc/loopfs-tools/copyright usr/libexec/loopfs/loopfs-oci-hook
	usr/share/containers/oci/hooks.d/loopfs.json etc/cdi/loopfs.yaml)
mapfile -t doc_mds < <(cd "$src" && git ls-files -- 'docs/*.md')
nri_files=(usr/libexec/loopfs/loopfs-nri opt/nri/plugins/50-loopfs
	usr/share/doc/loopfs-nri/copyright)

# build, 2 file names, dkms: source files + Makefile + dkms.conf + extras,
# source identical, conffile, modprobe.d commented out, Depends on dkms;
# tools: files + docs, hardening; nri: files, the link, Depends, static;
# leaks in each package; lintian
tap_plan $((1 + 3 + ${#module_srcs[@]} + 2 + ${#dkms_extra[@]} + 4 + \
	${#tools_files[@]} + ${#doc_mds[@]} + 1 + ${#nri_files[@]} + 3 + 3 + 1))

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log=$work/log
tree=$work/loopfs-$ver
out=$tree/.build/deb
dkms_deb=$out/loopfs-dkms_${ver}_all.deb
tools_deb=$out/loopfs-tools_${ver}_$arch.deb
nri_deb=$out/loopfs-nri_${ver}_$arch.deb

copy_tracked_tree "$src" "$tree"
if make -C "$tree" deb >"$log" 2>&1; then
	tap OK "make deb"
else
	tap FAIL "make deb" "$log"
fi

for deb in "$dkms_deb" "$tools_deb" "$nri_deb"; do
	if [ -f "$deb" ]; then
		tap OK "${deb#"$out"/} in .build/deb/"
	else
		printf '# found: %s\n' "$out"/*
		tap FAIL "${deb#"$out"/} in .build/deb/"
	fi
done

# has LISTING PATH: the dpkg -c listing holds ./PATH
has() { awk '{ print $6 }' "$1" | grep -qxF "./$2"; }

dpkg -c "$dkms_deb" >"$work/dkms.list" 2>/dev/null
dpkg -c "$tools_deb" >"$work/tools.list" 2>/dev/null
dpkg -c "$nri_deb" >"$work/nri.list" 2>/dev/null
for f in "${module_srcs[@]}" Makefile dkms.conf; do
	p=usr/src/loopfs-$ver/$f
	if has "$work/dkms.list" "$p"; then tap OK "loopfs-dkms has /$p"; else tap FAIL "loopfs-dkms has /$p"; fi
done
for p in "${dkms_extra[@]}"; do
	if has "$work/dkms.list" "$p"; then tap OK "loopfs-dkms has /$p"; else tap FAIL "loopfs-dkms has /$p"; fi
done

mkdir "$work/dkms"
dpkg-deb -x "$dkms_deb" "$work/dkms" 2>/dev/null
differ=
for f in "${module_srcs[@]}" Makefile dkms.conf; do
	cmp -s "$src/$f" "$work/dkms/usr/src/loopfs-$ver/$f" || differ+=" $f"
done
extra=$(cd "$work/dkms/usr/src/loopfs-$ver" 2>/dev/null && printf '%s\n' * .[!.]* |
	grep -vxF -e '.[!.]*' -f <(printf '%s\n' "${module_srcs[@]}" Makefile dkms.conf))
if [ -z "$differ" ] && [ -z "$extra" ] && [ -d "$work/dkms/usr/src/loopfs-$ver" ]; then
	tap OK "the DKMS source tree is the repository's files, no more"
else
	echo "# differ:${differ:- none}; extra: ${extra:-none}"
	tap FAIL "the DKMS source tree is the repository's files, no more"
fi

if dpkg-deb -I "$dkms_deb" conffiles 2>/dev/null | grep -qxF /etc/modprobe.d/loopfs.conf; then
	tap OK "/etc/modprobe.d/loopfs.conf is a conffile"
else
	tap FAIL "/etc/modprobe.d/loopfs.conf is a conffile"
fi
set_lines=$(grep -nv '^[[:space:]]*\(#.*\)\{0,1\}$' "$work/dkms/etc/modprobe.d/loopfs.conf" 2>/dev/null)
if [ -f "$work/dkms/etc/modprobe.d/loopfs.conf" ] && [ -z "$set_lines" ]; then
	tap OK "loopfs.conf sets nothing (every option commented out)"
else
	echo "$set_lines" | sed 's/^/# /'
	tap FAIL "loopfs.conf sets nothing (every option commented out)"
fi
dep=$(dpkg-deb -f "$dkms_deb" Depends 2>/dev/null)
post=$(dpkg-deb -I "$dkms_deb" postinst 2>/dev/null)
if grep -qw dkms <<<"$dep" && grep -qx 'DKMS_NAME=loopfs' <<<"$post" &&
	grep -qxF "DKMS_VERSION=$ver" <<<"$post"; then
	tap OK "loopfs-dkms depends on dkms and registers loopfs/$ver in postinst"
else
	echo "# Depends: $dep"
	tap FAIL "loopfs-dkms depends on dkms and registers loopfs/$ver in postinst"
fi

for p in "${tools_files[@]}"; do
	if has "$work/tools.list" "$p"; then tap OK "loopfs-tools has /$p"; else tap FAIL "loopfs-tools has /$p"; fi
done
for d in "${doc_mds[@]}"; do
	p=usr/share/doc/loopfs-tools/$d
	if has "$work/tools.list" "$p" || has "$work/tools.list" "$p.gz"; then
		tap OK "loopfs-tools has /$p"
	else
		tap FAIL "loopfs-tools has /$p"
	fi
done

mkdir "$work/tools"
dpkg-deb -x "$tools_deb" "$work/tools" 2>/dev/null
dyn=$(readelf -d "$work/tools/usr/bin/loopfs-run" 2>/dev/null)
hdr=$(readelf -h "$work/tools/usr/bin/loopfs-run" 2>/dev/null)
if grep -q 'BIND_NOW' <<<"$dyn" && grep -q 'Type:.*DYN' <<<"$hdr" &&
	readelf -lW "$work/tools/usr/bin/loopfs-run" 2>/dev/null | grep -q GNU_RELRO; then
	tap OK "loopfs-run is PIE with full RELRO (the build flags reached it)"
else
	tap FAIL "loopfs-run is PIE with full RELRO (the build flags reached it)"
fi

for p in "${nri_files[@]}"; do
	if has "$work/nri.list" "$p"; then tap OK "loopfs-nri has /$p"; else tap FAIL "loopfs-nri has /$p"; fi
done
link=$(awk '$6 == "./opt/nri/plugins/50-loopfs" { print $8 }' "$work/nri.list")
if [ "$link" = /usr/libexec/loopfs/loopfs-nri ]; then
	tap OK "containerd's pre-installed plugin /opt/nri/plugins/50-loopfs is the plugin"
else
	tap FAIL "containerd's pre-installed plugin /opt/nri/plugins/50-loopfs is the plugin (links to '$link')"
fi
dep=$(dpkg-deb -f "$nri_deb" Depends 2>/dev/null)
if grep -qxF "loopfs-tools (= $ver)" <<<"$dep"; then
	tap OK "loopfs-nri depends on the loopfs-tools of its version (the OCI hook)"
else
	tap FAIL "loopfs-nri depends on the loopfs-tools of its version (the OCI hook; Depends: $dep)"
fi
mkdir "$work/nri"
dpkg-deb -x "$nri_deb" "$work/nri" 2>/dev/null
plugin=$work/nri/usr/libexec/loopfs/loopfs-nri
if [ -f "$plugin" ] && ! readelf -lW "$plugin" 2>/dev/null | grep -q INTERP &&
	"$plugin" -h 2>&1 | grep -q -- -hook; then
	tap OK "the plugin is static (it runs on every release) and runs here"
else
	tap FAIL "the plugin is static (it runs on every release) and runs here"
fi

# Anything from the build or test trees, git, or kbuild output.
leak_re='/\.build/|/tests/|/\.git|\.o$|\.ko$|\.mod\.c$|\.cmd$|\.symvers$|modules\.order$'
for name in dkms tools nri; do
	leaks=$(awk '{ print $6 }' "$work/$name.list" | grep -E "$leak_re")
	if [ -s "$work/$name.list" ] && [ -z "$leaks" ]; then
		tap OK "loopfs-$name holds nothing from .build/, tests/, .git or kbuild output"
	else
		echo "$leaks" | sed 's/^/# leaked: /'
		tap FAIL "loopfs-$name holds nothing from .build/, tests/, .git or kbuild output"
	fi
done

changes=$out/loopfs_${ver}_$arch.changes
if ! command -v lintian >/dev/null; then
	tap FAIL "lintian --pedantic -I is silent (lintian is not installed)"
else
	# Its exit status says only whether errors were found: read its output.
	if [ -f "$changes" ]; then
		lintian --pedantic -I "$changes" "$nri_deb" >"$log" 2>&1
	else
		echo "no ${changes#"$out"/}" >"$log"
	fi
	if grep -v '^running with root privileges' "$log" | grep -q .; then
		tap FAIL "lintian --pedantic -I is silent" "$log"
	else
		tap OK "lintian --pedantic -I is silent"
	fi
fi

[ "$tap_failed" -eq 0 ] && [ "$tap_n" -gt 0 ]
