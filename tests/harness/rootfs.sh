#!/bin/bash
# rootfs.sh RELEASE: make RELEASE's root directory (releases.sh), or say
# that it is ready.  debootstrap (minbase) from the archive, then, with the
# release's own apt chrooted in it: the kernel its linux-image-amd64 names
# (image, modules, headers) and the headers of that kernel's PREEMPT_RT
# flavour, with the compiler they were built with, dkms, and the userland
# the suites run (releases.sh).  No initramfs is made: guests boot the
# harness's own.  A stamp records the package list and the kernel; a root
# whose stamp matches is left as it is, so the release's kernel stays the
# one it was made with until LOOPFS_ROOT_REFRESH=1 upgrades the root and
# installs the kernel linux-image-amd64 names by then.  One run per root at
# a time (a lock beside it).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
. "$here/releases.sh"

rel=${1:?usage: rootfs.sh RELEASE}
root=$(release_root "$rel")
stamp=$root/.loopfs-stamp
log() { echo "rootfs $rel: $*" >&2; }
die() { log "$*"; exit 1; }

case " ${root_releases[*]} " in
*" $rel "*) ;;
*) die "not a release with a root (${root_releases[*]})" ;;
esac
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot)"
command -v debootstrap >/dev/null || die "debootstrap is not installed (make deps)"

mkdir -p "${root%/*}"
exec 8>"$root.lock"
flock 8

mapfile -t pkgs < <(release_pkgs "$rel")
want="packages $(printf '%s\n' "${pkgs[@]}" | sha1sum | cut -c1-12)"
if [ "${LOOPFS_ROOT_REFRESH:-0}" != 1 ] && release_ready "$rel" &&
	grep -qxF "$want" "$stamp"; then
	log "ready ($(release_kver "$rel"))"
	exit 0
fi

t0=$(date +%s)
if [ ! -e "$root/.debootstrapped" ]; then
	log "debootstrap from $LOOPFS_MIRROR"
	rm -rf "$root.new" "$root"
	debootstrap --variant=minbase --keyring="$LOOPFS_KEYRING" \
		"$rel" "$root.new" "$LOOPFS_MIRROR" >"$root.debootstrap.log" 2>&1 ||
		{ tail -n 20 "$root.debootstrap.log" >&2; die "debootstrap failed"; }
	touch "$root.new/.debootstrapped"
	mv "$root.new" "$root"
fi
rm -f "$stamp"

# apt in the root reaches the archive through the host's resolver; no
# service starts in a chroot.
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
# Installed systems have them (the installer's first user); the rootless
# container suites bind their own over them.
touch "$root/etc/subuid" "$root/etc/subgid"

apt=(apt-get -q -y -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
# The root's apt judges the archive's Release files as the host's does (a
# mirror frozen in time serves expired ones).
for o in Acquire::Check-Valid-Until Acquire::Check-Date; do
	v=$(apt-config dump | sed -n "s/^$o \"\(.*\)\";\$/\1/p")
	[ -z "$v" ] || apt+=(-o "$o=$v")
done
log "apt-get update"
in_root "$root" "${apt[@]}" update >"$root.apt.log" 2>&1 ||
	{ tail -n 20 "$root.apt.log" >&2; die "apt-get update failed"; }
if [ "${LOOPFS_ROOT_REFRESH:-0}" = 1 ]; then
	in_root "$root" env INITRD=No "${apt[@]}" dist-upgrade >>"$root.apt.log" 2>&1 ||
		{ tail -n 20 "$root.apt.log" >&2; die "apt-get dist-upgrade failed"; }
fi

kver=$(in_root "$root" apt-cache "${apt[@]:3}" depends linux-image-amd64 |
	sed -n 's/^ *Depends: linux-image-\([0-9].*\)$/\1/p' | head -n 1)
[ -n "$kver" ] || die "linux-image-amd64 names no kernel"
rt=${kver%-amd64}-rt-amd64
log "kernel $kver (and headers of $rt), ${#pkgs[@]} packages"
# initramfs-tools rather than dracut satisfies the image's dependency;
# INITRD=No keeps its hook from making an initramfs nobody boots.
in_root "$root" env INITRD=No "${apt[@]}" install --no-install-recommends \
	initramfs-tools "linux-image-$kver" "linux-headers-$kver" "linux-headers-$rt" \
	"${pkgs[@]}" >>"$root.apt.log" 2>&1 ||
	{ tail -n 30 "$root.apt.log" >&2; die "apt-get install failed"; }
in_root "$root" "${apt[@]}" clean
in_root "$root" depmod -a "$kver"
for f in "boot/vmlinuz-$kver" "lib/modules/$kver/modules.dep" \
	"lib/modules/$kver/modules.builtin" "usr/src/linux-headers-$rt"; do
	[ -e "$root/$f" ] || die "no /$f in the root"
done

printf '%s\nkernel %s\n' "$want" "$kver" >"$stamp"
log "ready ($kver) in $(($(date +%s) - t0))s"
