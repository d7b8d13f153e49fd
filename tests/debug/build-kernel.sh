#!/bin/bash
# build-kernel.sh [--check] [RELEASE]: build (or reuse) the debug guest kernel
# of RELEASE for `make check-debug`: bookworm (default, this machine's 6.1)
# or sid (the newest line).
#
# Source: the release's Debian linux-source tarball: this machine's
# /usr/src/linux-source-6.1.tar.xz for bookworm; for sid, the one its
# linux-source package installs in sid's root, where the kernel is also
# compiled, chrooted, by sid's compiler (the one its modules need).
# Config: x86_64 tinyconfig + tests/debug/debug.config (+ debug-<line>.config
# when that file exists, for what one line names differently).
# Output, in the release's cache (~/.cache/loopfs for bookworm, the root's
# /var/cache/loopfs for sid): linux-source-<line>/ (the extracted tree),
# build-<line>/ (O= tree, usable as KDIR for out-of-tree modules),
# mods-<line>/<kver>/ (modules_install output; the guest's /lib/modules)
# and a stamp.  A stamp matching the tarball and the fragments means nothing
# is rebuilt.  The build runs under nice -n 19 with -j${DEBUG_JOBS:-2}: the
# machine is shared with other guests.  Prints, last, KVER=<release>,
# KDIR=, MODS= (host paths) and ROOT= (the root to build modules in, empty
# for this machine).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
. "$here/../harness/releases.sh"
jobs=${DEBUG_JOBS:-2}

log() { echo "build-kernel: $*" >&2; }
die() { log "$*"; exit 1; }

check_only=
[ "${1:-}" = --check ] && { check_only=1; shift; }
release=${1:-bookworm}
build_pkgs=(flex bison bc libelf-dev libssl-dev cpio xz-utils make gcc)
case $release in
bookworm)
	root=
	cache=${LOOPFS_DEBUG_CACHE:-$HOME/.cache/loopfs}
	tarball=${LOOPFS_DEBUG_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
	build_pkgs+=(linux-source-6.1)
	;;
sid)
	root=$(release_root sid)
	release_ready sid || { [ -n "$check_only" ] && exit 1; die "no sid root: run make deps"; }
	cache=$root/var/cache/loopfs
	build_pkgs+=(linux-source)
	tarball=$(ls "$root"/usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n 1 || true)
	;;
*) die "usage: build-kernel.sh [--check] [bookworm|sid]" ;;
esac
run=()
[ -z "$root" ] || run=(in_root "$root")

# paths TARBALL: set line, tree, obj, mods, stampf for that source.
paths() {
	line=${1##*/linux-source-}
	line=${line%.tar.xz}
	tree=$cache/linux-source-$line
	obj=$cache/build-$line
	mods=$cache/mods-$line
	stampf=$cache/stamp-$line
	fragments=("$here/debug.config")
	[ ! -f "$here/debug-$line.config" ] || fragments+=("$here/debug-$line.config")
}
stamp() { echo "$(stat -c %s.%Y "$tarball") $(cat "${fragments[@]}" | sha1sum | cut -d' ' -f1)"; }
current() {
	[ -r "$tarball" ] && [ -f "$stampf" ] && [ "$(cat "$stampf")" = "$(stamp)" ] &&
		[ -f "$obj/arch/x86/boot/bzImage" ]
}
# The path a host path under the root has inside it.
inside() { echo "${1#"$root"}"; }
say_result() {
	echo "KVER=$("${run[@]}" make -s -C "$(inside "$tree")" O="$(inside "$obj")" kernelrelease)"
	echo "KDIR=$obj"
	echo "MODS=$mods"
	echo "ROOT=$root"
}

if [ -n "$check_only" ]; then
	[ -n "$tarball" ] || exit 1
	paths "$tarball"
	current
	exit
fi

# Build dependencies, installed idempotently (as make check does).
need=()
for p in "${build_pkgs[@]}"; do
	"${run[@]}" dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	log "apt-get install ${need[*]}${root:+ (in the root $root)}"
	"${run[@]}" apt-get install -y -q --no-install-recommends "${need[@]}" >&2
fi
[ -n "$root" ] && tarball=$(ls "$root"/usr/src/linux-source-*.tar.xz | sort -V | tail -n 1)
[ -r "$tarball" ] || die "no linux-source tarball for $release"
paths "$tarball"
want=$(stamp)
if current; then
	log "cached kernel is current ($obj)"
	say_result
	exit 0
fi

mkdir -p "$cache"
if [ ! -f "$tree/.extracted" ]; then
	log "extracting $tarball into $cache"
	rm -rf "$tree"
	nice -n 19 tar -xJf "$tarball" -C "$cache"
	touch "$tree/.extracted"
fi

kmake() { "${run[@]}" nice -n 19 make -s -C "$(inside "$tree")" O="$(inside "$obj")" ARCH=x86_64 "$@"; }
mkdir -p "$obj"
if [ ! -f "$obj/.config" ] || [ "$obj/.config" -ot "$here/debug.config" ] ||
	[ "$obj/.config" -ot "${fragments[-1]}" ]; then
	log "configuring"
	kmake tinyconfig
	cat "${fragments[@]}" >"$obj/debug.config"
	"${run[@]}" sh -c 'cd "$1" && "$2/scripts/kconfig/merge_config.sh" -m -O "$1" .config debug.config' \
		sh "$(inside "$obj")" "$(inside "$tree")" >"$obj/merge.log"
	kmake olddefconfig
	# Kconfig drops what it cannot satisfy without a word: check. A
	# symbol this line's Kconfig no longer defines (UBSAN_SANITIZE_ALL,
	# now what UBSAN always does) is said, not failed.
	grep -rhoE --include='Kconfig*' '^(menu)?config [A-Z0-9_]+' "$tree" |
		sed 's/.* /CONFIG_/' | sort -u >"$obj/symbols"
	bad=0
	while IFS= read -r line; do
		sym=${line#\# }
		sym=${sym%%[= ]*}
		if [ "${sym#CONFIG_}" != "$sym" ] && ! grep -qx "$sym" "$obj/symbols"; then
			log "not in this source: $sym"
			continue
		fi
		case $line in
		CONFIG_*=y | CONFIG_*=m)
			grep -qx "$line" "$obj/.config" || { log "config lost: $line"; bad=1; } ;;
		"# CONFIG_"*" is not set")
			opt=${line#\# }
			opt=${opt%% *}
			grep -qE "^$opt=[ym]" "$obj/.config" && { log "config kept: $opt"; bad=1; } ;;
		esac
	done <"$obj/debug.config"
	[ "$bad" -eq 0 ] || { rm -f "$obj/.config"; die "the merged .config does not match ${fragments[*]}"; }
fi

log "building bzImage and modules (nice -n 19, -j$jobs)"
kmake -j"$jobs" bzImage modules
kver=$("${run[@]}" make -s -C "$(inside "$tree")" O="$(inside "$obj")" kernelrelease)
rm -rf "$mods" "$mods.tmp"
kmake INSTALL_MOD_PATH="$(inside "$mods.tmp")" INSTALL_MOD_STRIP=1 modules_install
mkdir -p "$mods"
mv "$mods.tmp/lib/modules/$kver" "$mods/$kver"
rm -rf "$mods.tmp"
# The guest sees this as /lib/modules: no links back into the cache.
rm -f "$mods/$kver/build" "$mods/$kver/source"
echo "$want" >"$stampf"
say_result
