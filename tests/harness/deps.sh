#!/bin/bash
# deps.sh [demo]: install every Debian package that building, packaging and
# testing loopfs needs on this machine (bookworm), then make or check the
# root of every other release (rootfs.sh).  With "demo", only what make
# demo uses (a 6.1 build and one guest on this machine's userland), and no
# root.  Idempotent: asks dpkg first and only runs apt-get (with one
# apt-get update) when something is missing; a root whose stamp is current
# is left alone.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/releases.sh"

demo_pkgs=(
	gcc make libc6-dev libelf-dev linux-headers-amd64 sparse
	linux-image-amd64 qemu-system-x86 busybox-static cpio
	util-linux mount e2fsprogs kmod coreutils
)

pkgs=(
	# build: bookworm's 6.1, its 6.12 backport and the PREEMPT_RT flavours
	gcc make libc6-dev libelf-dev
	linux-headers-amd64 linux-headers-rt-amd64
	linux-headers-6.12-amd64 linux-headers-6.12-rt-amd64
	linux-source-6.1 linux-source-6.12 xz-utils zstd sparse
	# packaging
	dkms dpkg-dev debhelper dh-dkms lintian
	# guests: kernels, QEMU, initramfs; the later releases' roots
	linux-image-amd64 linux-image-6.12-amd64
	qemu-system-x86 busybox-static cpio debootstrap
	# what the suites run in bookworm's guests (the host root is their userland)
	"${userland_pkgs[@]}"
	libseccomp-dev
	# make bench-profile
	linux-perf
)

[ "${1:-}" != demo ] || pkgs=("${demo_pkgs[@]}")

missing=()
for p in "${pkgs[@]}"; do
	st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	case $st in
	ii*) ;;
	*) missing+=("$p") ;;
	esac
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all ${#pkgs[@]} packages installed"
elif [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing packages: ${missing[*]} (run as root to install them)" >&2
	exit 1
else
	echo "deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

[ "${1:-}" = demo ] && exit 0
for r in "${root_releases[@]}"; do
	"$here/rootfs.sh" "$r"
done
