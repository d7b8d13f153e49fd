#!/bin/bash
# build-kernel.sh: build (or reuse) the debug guest kernel for `make check-debug`.
#
# Source: Debian's /usr/src/linux-source-6.1.tar.xz, extracted once under
# $LOOPFS_DEBUG_CACHE (default ~/.cache/loopfs, outside the repository).
# Config: x86_64 tinyconfig + tests/debug/debug.config.  Output, all in the
# cache: build-6.1/ (O= tree, usable as KDIR for out-of-tree modules),
# mods-6.1/<kver>/ (modules_install output; becomes the guest's /lib/modules)
# and a stamp.  A stamp matching the tarball and the fragment means nothing is
# rebuilt.  The build runs under nice -n 19 with -j${DEBUG_JOBS:-2}: the
# machine is shared with other guests.  Prints "KVER=<release>" last.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tarball=${LOOPFS_DEBUG_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
cache=${LOOPFS_DEBUG_CACHE:-$HOME/.cache/loopfs}
src=$cache/linux-source-6.1
obj=$cache/build-6.1
mods=$cache/mods-6.1
fragment=$here/debug.config
jobs=${DEBUG_JOBS:-2}

log() { echo "build-kernel: $*" >&2; }
die() { log "$*"; exit 1; }

# --check: only say (exit status) whether the cached kernel is current.
check_only=
[ "${1:-}" = --check ] && check_only=1
current() {
	[ -r "$tarball" ] && [ -f "$cache/stamp-6.1" ] &&
		[ "$(cat "$cache/stamp-6.1")" = "$(stamp)" ] &&
		[ -f "$obj/arch/x86/boot/bzImage" ]
}
stamp() { echo "$(stat -c %s.%Y "$tarball") $(sha1sum "$fragment" | cut -d' ' -f1)"; }
if [ -n "$check_only" ]; then
	current
	exit
fi

# Build dependencies, installed idempotently (as make check does).
need=()
for p in linux-source-6.1 flex bison bc libelf-dev libssl-dev cpio xz-utils; do
	dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	log "apt-get install ${need[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >&2
fi
[ -r "$tarball" ] || die "no $tarball"
want=$(stamp)
if current; then
	log "cached kernel is current ($obj)"
	echo "KVER=$(make -s -C "$src" O="$obj" kernelrelease)"
	exit 0
fi

mkdir -p "$cache"
if [ ! -f "$src/.extracted" ]; then
	log "extracting $tarball into $cache"
	rm -rf "$src"
	nice -n 19 tar -xJf "$tarball" -C "$cache"
	touch "$src/.extracted"
fi

mkdir -p "$obj"
if [ ! -f "$obj/.config" ] || [ "$obj/.config" -ot "$fragment" ]; then
	log "configuring"
	make -s -C "$src" O="$obj" ARCH=x86_64 tinyconfig
	(cd "$obj" && "$src/scripts/kconfig/merge_config.sh" -m -O "$obj" .config "$fragment") >"$obj/merge.log"
	make -s -C "$src" O="$obj" ARCH=x86_64 olddefconfig
	# Kconfig drops what it cannot satisfy without a word: check.
	bad=0
	while IFS= read -r line; do
		case $line in
		CONFIG_*=y | CONFIG_*=m)
			grep -qx "$line" "$obj/.config" || { log "config lost: $line"; bad=1; } ;;
		"# CONFIG_"*" is not set")
			opt=${line#\# }
			opt=${opt%% *}
			grep -qE "^$opt=[ym]" "$obj/.config" && { log "config kept: $opt"; bad=1; } ;;
		esac
	done <"$fragment"
	[ "$bad" -eq 0 ] || { rm -f "$obj/.config"; die "the merged .config does not match $fragment"; }
fi

log "building bzImage and modules (nice -n 19, -j$jobs)"
nice -n 19 make -s -C "$src" O="$obj" ARCH=x86_64 -j"$jobs" bzImage modules
kver=$(make -s -C "$src" O="$obj" kernelrelease)
rm -rf "$mods"
nice -n 19 make -s -C "$src" O="$obj" ARCH=x86_64 INSTALL_MOD_PATH="$mods.tmp" \
	INSTALL_MOD_STRIP=1 modules_install
mkdir -p "$mods"
mv "$mods.tmp/lib/modules/$kver" "$mods/$kver"
rm -rf "$mods.tmp"
# The guest sees this as /lib/modules: no links back into the cache.
rm -f "$mods/$kver/build" "$mods/$kver/source"
echo "$want" >"$cache/stamp-6.1"
echo "KVER=$kver"
